#!/usr/bin/env python3
"""Gap error of replayed traffic against the recording it came from.

usage: pacing.py RECORDED PORT LABEL=CAPTURED [LABEL=CAPTURED ...]

RECORDED is the capture that was replayed; each CAPTURED is what a sender put on the wire, captured
on lo. Only UDP datagrams to PORT are used, in capture order. For each consecutive pair, the sent
gap is compared with the recorded gap: error = |sent gap - recorded gap|. Prints p50, p99 and max
of the error and the total drift (sent span - recorded span), in microseconds, one column a sender.
Timestamps are read with tshark as decimal text and kept as integer nanoseconds (a float would
lose the nanoseconds of an epoch time).
"""
import subprocess
import sys


def timestamps(path, port):
    out = subprocess.run(
        ["tshark", "-n", "-r", path, "-Y", f"udp.dstport == {port}", "-T", "fields", "-e", "frame.time_epoch"],
        check=True, capture_output=True, text=True,
    ).stdout
    ns = []
    for line in out.split():
        sec, _, frac = line.partition(".")
        ns.append(int(sec) * 1_000_000_000 + int((frac + "000000000")[:9]))
    return ns


def percentile(sorted_values, p):
    """Nearest-rank percentile of an ascending list."""
    if not sorted_values:
        return float("nan")
    rank = max(1, -(-len(sorted_values) * p // 100))
    return sorted_values[int(rank) - 1]


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    recorded = timestamps(sys.argv[1], sys.argv[2])
    rec_gaps = [b - a for a, b in zip(recorded, recorded[1:])]
    rows = {"frames (captured / recorded)": [], "gap error p50 (µs)": [], "gap error p99 (µs)": [],
            "gap error max (µs)": [], "total drift (µs)": []}
    labels = []
    for arg in sys.argv[3:]:
        label, _, path = arg.partition("=")
        labels.append(label)
        sent = timestamps(path, sys.argv[2])
        sent_gaps = [b - a for a, b in zip(sent, sent[1:])]
        n = min(len(sent_gaps), len(rec_gaps))
        errors = sorted(abs(s - r) for s, r in zip(sent_gaps[:n], rec_gaps[:n]))
        drift = (sent[-1] - sent[0]) - (recorded[-1] - recorded[0]) if len(sent) == len(recorded) else None
        rows["frames (captured / recorded)"].append(f"{len(sent)} / {len(recorded)}")
        rows["gap error p50 (µs)"].append(f"{percentile(errors, 50) / 1000:.1f}")
        rows["gap error p99 (µs)"].append(f"{percentile(errors, 99) / 1000:.1f}")
        rows["gap error max (µs)"].append(f"{errors[-1] / 1000:.1f}" if errors else "n/a")
        rows["total drift (µs)"].append(f"{drift / 1000:+.1f}" if drift is not None else "n/a (frames lost)")
    width = max(len(k) for k in rows)
    colw = max(14, *(len(label) for label in labels), *(len(v) for vs in rows.values() for v in vs))
    print(f"{'':{width}}  " + "  ".join(f"{label:>{colw}}" for label in labels))
    for key, values in rows.items():
        print(f"{key:{width}}  " + "  ".join(f"{v:>{colw}}" for v in values))


if __name__ == "__main__":
    main()
