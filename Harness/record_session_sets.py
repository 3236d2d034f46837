#!/usr/bin/env python3
"""Records the committed session-link capture sets, for real, on this machine.

Each scenario in Harness/scenarios/session/ runs both sides of SessionCore as live hosts
(`tether live session --role watch|phone`), each on its own Bumble virtual controller of one
virtual radio (ciq_controllers.py), each with its own durable store. The side named by the
scenario records: its H4 tap writes every HCI packet and API call into a new capture set
(`--record`). Then the scenario's expectations go into the manifest, the live host's own trace
is kept as `live/session.jsonl`, replay must pass, and the replayed trace becomes the baseline.

Scripts: NAME.phone.yaml (or NAME.phone-1.yaml, NAME.phone-2.yaml: the phone host run twice on
one store, the first run ending in a real SIGKILL), NAME.watch.yaml (and NAME.watch-b.yaml for a
second watch). Expectations: NAME.expect.yaml for the recorded side (NAME.watch.expect.yaml when
the watch side of a phone-recorded scenario is recorded too).

Usage:
    python3 Harness/record_session_sets.py [--tether .build/debug/tether] [--out Captures] [NAME ...]
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "rigs"))
from record_ciq_sets import add_expectations, run  # noqa: E402  (the Connect IQ recorder beside this file)
from rig_processes import start, stop  # noqa: E402  (Harness/rigs)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIGS = os.path.join(ROOT, "Harness", "rigs")
SCENARIOS = os.path.join(ROOT, "Harness", "scenarios", "session")
PHONE = "0ff1ce00-0000-4000-8000-000000000001"
WATCH_A = ("F0:F0:F0:F0:F0:A1", "0ff1ce00-0000-4000-8000-0000000000a1")
WATCH_B = ("F0:F0:F0:F0:F0:A2", "0ff1ce00-0000-4000-8000-0000000000a2")

# name → title, who records ("phone", "watch", or both), phone runs, watches, extra phone options
SCENARIO_SETUP = {
    "clean": dict(title="Activation, application context both ways, a message and message data with replies, a user info",
                  record=["phone", "watch"], phone=["clean.phone.yaml"], watches=[(WATCH_A, "clean.watch.yaml")], seed=11),
    "unreachable": dict(title="Watch app in the background: sendMessage fails with notReachable (7007); the context still arrives",
                        record=["phone"], phone=["unreachable.phone.yaml"], watches=[(WATCH_A, "unreachable.watch.yaml")], seed=12),
    "reply-timeout": dict(title="The watch never answers: messageReplyTimedOut (7012) after the phone's 3 s limit",
                          record=["phone"], phone=["reply-timeout.phone.yaml"], watches=[(WATCH_A, "reply-timeout.watch.yaml")],
                          seed=13, phone_args=["--message-reply-timeout", "3s"]),
    "user-info-kill9": dict(title="The phone host is killed with SIGKILL with user infos queued; restarted on its store, every one arrives once, in order",
                            record=["watch"], phone=["user-info-kill9.phone-1.yaml", "user-info-kill9.phone-2.yaml"],
                            watches=[(WATCH_A, "user-info-kill9.watch.yaml")], seed=14),
    "file-resume": dict(title="A 120 KB file with progress; the link drops part-way and the transfer resumes at the watch's offset",
                        record=["phone"], phone=["file-resume.phone.yaml"], watches=[(WATCH_A, "file-resume.watch.yaml")], seed=15),
    "complication-budget": dict(title="52 complication transfers: 50 high-priority, then the budget is spent and two go as plain user info",
                                record=["phone"], phone=["complication-budget.phone.yaml"],
                                watches=[(WATCH_A, "complication-budget.watch.yaml")], seed=16),
    "watch-switch": dict(title="The phone switches from watch A to watch B: inactive, deactivated, activated again on B",
                         record=["phone"], phone=["watch-switch.phone.yaml"],
                         watches=[(WATCH_A, "watch-switch.watch.yaml"), (WATCH_B, "watch-switch.watch-b.yaml")], seed=17),
    "compact-mtu23": dict(title="ATT MTU 23, a window of 64 and compact frames stated by both sides: a file resumed after a drop, a user info, a message with a reply",
                          record=["phone"], phone=["compact-mtu23.phone.yaml"], watches=[(WATCH_A, "compact-mtu23.watch.yaml")], seed=19,
                          phone_args=["--mtu", "23", "--window", "64", "--compact-frames"],
                          watch_args=["--mtu", "23", "--window", "64", "--compact-frames"]),
    "concurrent": dict(title="While the watch sends a 60 KB file, the phone sends messages with replies, user infos and a context",
                       record=["phone"], phone=["concurrent.phone.yaml"], watches=[(WATCH_A, "concurrent.watch.yaml")], seed=18),
}


def set_name(name, side, setup):
    suffix = "-watch" if side == "watch" and "phone" in setup["record"] else ""
    return f"session-{name}{suffix}"


def record(name, tether, out, logs):
    setup = SCENARIO_SETUP[name]
    work = os.path.join(logs, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    sets = {side: os.path.join(out, set_name(name, side, setup)) for side in setup["record"]}
    for path in sets.values():
        shutil.rmtree(path, ignore_errors=True)
    traces = {}
    controllers, ports = start([os.path.join(RIGS, "ciq_controllers.py")] + ["tcp-server:127.0.0.1:0"] * (len(setup["watches"]) + 1),
                               os.path.join(work, "controllers.log"))
    watches = []
    try:
        for index, ((address, identity), script) in enumerate(setup["watches"]):
            trace = os.path.join(work, f"watch-{index}.jsonl")
            command = [tether, "live", "session", "--role", "watch", "--hci", f"tcp-client:127.0.0.1:{ports[index]}",
                       "--address", address, "--identity", identity, "--paired", PHONE,
                       "--script", os.path.join(SCENARIOS, script), "--store", os.path.join(work, f"watch-{index}.sqlite"),
                       "--trace", trace, "--seed", str(setup["seed"] * 10 + index + 1),
                       "--bridge-log", os.path.join(work, f"watch-{index}-bridge.log")] + setup.get("watch_args", [])
            if index == 0 and "watch" in setup["record"]:
                command += ["--record", sets["watch"], "--title", setup["title"] + " (watch side)"]
                traces["watch"] = trace
            print("+ " + " ".join(command), flush=True)
            watches.append(subprocess.Popen(command, stdout=open(os.path.join(work, f"watch-{index}.out"), "w"), stderr=subprocess.STDOUT))
        time.sleep(2.0)
        for run_index, script in enumerate(setup["phone"]):
            trace = os.path.join(work, f"phone-{run_index}.jsonl")
            command = [tether, "live", "session", "--role", "phone", "--hci", f"tcp-client:127.0.0.1:{ports[-1]}",
                       "--peer", setup["watches"][0][0][0], "--identity", PHONE, "--paired", setup["watches"][0][0][1],
                       "--script", os.path.join(SCENARIOS, script), "--store", os.path.join(work, "phone.sqlite"),
                       "--trace", trace, "--seed", str(setup["seed"] * 10 + 9 + run_index),
                       "--bridge-log", os.path.join(work, f"phone-{run_index}-bridge.log")] + setup.get("phone_args", [])
            if run_index == 0 and "phone" in setup["record"]:
                command += ["--record", sets["phone"], "--title", setup["title"]]
                traces["phone"] = trace
            crashes = run_index + 1 < len(setup["phone"])
            result = run(command, check=False)
            if crashes:
                if result.returncode != -signal.SIGKILL:
                    raise SystemExit(f"{script} should end in SIGKILL; it exited with {result.returncode}")
                time.sleep(1.0)
            elif result.returncode != 0:
                raise SystemExit(f"the phone host failed ({result.returncode}); see {work}")
        for watch in watches:
            try:
                watch.wait(timeout=90)
            except subprocess.TimeoutExpired:
                raise SystemExit(f"a watch host did not finish; see {work}")
            if watch.returncode != 0:
                raise SystemExit(f"a watch host failed ({watch.returncode}); see {work}")
    finally:
        for watch in watches:
            stop(watch, timeout=5)
        stop(controllers, timeout=5)
    for side, path in sets.items():
        os.makedirs(os.path.join(path, "live"), exist_ok=True)
        shutil.copy(traces[side], os.path.join(path, "live", "session.jsonl"))
        run([tether, "seal", path])  # the seal covers live/ too (live_traces_sha256)
        expect = f"{name}.expect.yaml" if side == setup["record"][0] else f"{name}.{side}.expect.yaml"
        scripts = ", ".join(setup["phone"] + [w[1] for w in setup["watches"]])
        add_expectations(path, os.path.join(SCENARIOS, expect),
                         f"Recorded on the {side} side by Harness/record_session_sets.py: {setup['title']}. "
                         f"Scripts (Harness/scenarios/session): {scripts}. live/session.jsonl is the live host's own trace.")
        run([tether, "replay", path])
        run([tether, "replay", path, "--update-baseline"])
    return list(sets.values())


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tether", default=os.path.join(ROOT, ".build", "debug", "tether"))
    parser.add_argument("--out", default=os.path.join(ROOT, "Captures"))
    parser.add_argument("--logs", default="/tmp/tether-session-logs")
    parser.add_argument("names", nargs="*", help="scenarios to record (default: all)")
    args = parser.parse_args()
    os.makedirs(args.logs, exist_ok=True)
    failed = []
    for name in args.names or list(SCENARIO_SETUP):
        try:
            record(name, args.tether, args.out, args.logs)
        except (SystemExit, subprocess.CalledProcessError) as error:
            print(f"FAILED {name}: {error}", flush=True)
            failed.append(name)
    if failed:
        print("failed: " + ", ".join(failed), flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
