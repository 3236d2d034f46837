#!/usr/bin/env python3
"""Gap error of replayed traffic against the recording it came from.

usage: pacing.py RECORDED PORT LABEL=CAPTURED [LABEL=CAPTURED ...]
       pacing.py --runs RECORDED PORT MAX_US LABEL=CAPTURED[,CAPTURED...] REFLABEL=CAPTURED[,CAPTURED...]

RECORDED is the capture that was replayed; each CAPTURED is what a sender put on the wire, captured
on lo. Only UDP datagrams to PORT are used, in capture order. For each consecutive pair, the sent
gap is compared with the recorded gap: error = |sent gap - recorded gap|. Prints p50, p99 and max
of the error and the total drift (sent span - recorded span), in microseconds, one column a sender.
Timestamps are read with tshark as decimal text and kept as integer nanoseconds (a float would
lose the nanoseconds of an epoch time).

With --runs, the first sender is compared with the reference run by run (the comma-separated
captures pair up in order): one row a run with both senders' p50, p99, max and drift, then a
verdict line counting the runs in which the first sender's p99 is no worse than the reference's
and its max is at most MAX_US, and every datagram was captured. The exit status is 0 either way.
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


def measure(recorded, path, port):
    """p50, p99, max (ns) of the gap error, drift (ns, None when frames were lost), frames captured."""
    sent = timestamps(path, port)
    rec_gaps = [b - a for a, b in zip(recorded, recorded[1:])]
    sent_gaps = [b - a for a, b in zip(sent, sent[1:])]
    n = min(len(sent_gaps), len(rec_gaps))
    errors = sorted(abs(s - r) for s, r in zip(sent_gaps[:n], rec_gaps[:n]))
    drift = (sent[-1] - sent[0]) - (recorded[-1] - recorded[0]) if len(sent) == len(recorded) else None
    nan = float("nan")
    return {
        "p50": percentile(errors, 50) if errors else nan,
        "p99": percentile(errors, 99) if errors else nan,
        "max": errors[-1] if errors else nan,
        "drift": drift,
        "frames": len(sent),
    }


def table(recorded, port, args):
    rows = {"frames (captured / recorded)": [], "gap error p50 (µs)": [], "gap error p99 (µs)": [],
            "gap error max (µs)": [], "total drift (µs)": []}
    labels = []
    for arg in args:
        label, _, path = arg.partition("=")
        labels.append(label)
        m = measure(recorded, path, port)
        rows["frames (captured / recorded)"].append(f"{m['frames']} / {len(recorded)}")
        rows["gap error p50 (µs)"].append(f"{m['p50'] / 1000:.1f}")
        rows["gap error p99 (µs)"].append(f"{m['p99'] / 1000:.1f}")
        rows["gap error max (µs)"].append(f"{m['max'] / 1000:.1f}")
        rows["total drift (µs)"].append(f"{m['drift'] / 1000:+.1f}" if m["drift"] is not None else "n/a (frames lost)")
    width = max(len(k) for k in rows)
    colw = max(14, *(len(label) for label in labels), *(len(v) for vs in rows.values() for v in vs))
    print(f"{'':{width}}  " + "  ".join(f"{label:>{colw}}" for label in labels))
    for key, values in rows.items():
        print(f"{key:{width}}  " + "  ".join(f"{v:>{colw}}" for v in values))


def runs(recorded, port, max_us, subject_arg, reference_arg):
    subject, _, subject_paths = subject_arg.partition("=")
    reference, _, reference_paths = reference_arg.partition("=")
    pairs = list(zip(subject_paths.split(","), reference_paths.split(",")))

    def cells(m):
        drift = f"{m['drift'] / 1000:+.0f}" if m["drift"] is not None else "lost"
        return [f"{m['p50'] / 1000:.1f}", f"{m['p99'] / 1000:.1f}", f"{m['max'] / 1000:.1f}", drift]

    header = ["run", "p50", "p99", "max", "drift", "p50", "p99", "max", "drift", "frames", "pass"]
    body = []
    passed = 0
    for number, (subject_path, reference_path) in enumerate(pairs, 1):
        s = measure(recorded, subject_path, port)
        r = measure(recorded, reference_path, port)
        complete = s["frames"] == len(recorded) and r["frames"] == len(recorded)
        ok = complete and s["p99"] <= r["p99"] and s["max"] <= max_us * 1000
        passed += ok
        frames = f"{s['frames']}/{r['frames']}/{len(recorded)}"
        body.append([str(number), *cells(s), *cells(r), frames, "yes" if ok else "NO"])
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    left = f"{subject} (µs)"
    right = f"{reference} (µs)"
    span_left = sum(widths[1:5]) + 3 * 2
    span_right = sum(widths[5:9]) + 3 * 2
    print(f"{'':{widths[0]}}  {left:^{span_left}}  {right:^{span_right}}")
    for row in [header, *body]:
        print("  ".join(f"{cell:>{widths[i]}}" for i, cell in enumerate(row)))
    print(f"verdict: {passed} of {len(pairs)} runs had {subject} p99 ≤ {reference} p99 and "
          f"{subject} max ≤ {max_us / 1000:g} ms (every datagram captured)"
          + (" — goal met" if passed == len(pairs) else " — goal not met"))


def main():
    if len(sys.argv) >= 2 and sys.argv[1] == "--runs":
        if len(sys.argv) != 7:
            print(__doc__, file=sys.stderr)
            sys.exit(2)
        recorded = timestamps(sys.argv[2], sys.argv[3])
        runs(recorded, sys.argv[3], float(sys.argv[4]), sys.argv[5], sys.argv[6])
        return
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    table(timestamps(sys.argv[1], sys.argv[2]), sys.argv[2], sys.argv[3:])


if __name__ == "__main__":
    main()
