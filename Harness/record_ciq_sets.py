#!/usr/bin/env python3
"""Records the committed Connect IQ capture sets, for real, on this machine.

For each scenario in Harness/scenarios/ciq/ (NAME.yaml: the app's script; NAME.expect.yaml: the
expectations replay checks), it starts two Bumble virtual controllers on one virtual radio
(ciq_controllers.py), a Connect IQ watch on the first (ciq_watch.py, with the scenario's apps),
and `tether live messaging --record` on the second: the live host runs MessagingCore through the
Bumble bridge while Tether's H4 tap records every HCI packet and every API call. Then it writes
the scenario's expectations into the set's manifest, keeps the live trace as
`live/messaging.jsonl`, and accepts the replayed trace as the baseline
(`tether replay --update-baseline`), after checking that replay passes.

Last, `ciq-imported-btsnoop` is made the way a user brings in a phone's btsnoop log: the clean set
is exported to btsnoop (which cannot hold the API calls), imported with `tether import`, and its
manifest is given the devices and the app's calls by hand (`messaging.api_calls`).

Usage:
    python3 Harness/record_ciq_sets.py [--tether .build/debug/tether] [--out Captures] [NAME ...]
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RIGS = os.path.join(ROOT, "Harness", "rigs")
sys.path.insert(0, RIGS)
from rig_processes import start, stop  # noqa: E402  (found through the path set just above)

SCENARIOS = os.path.join(ROOT, "Harness", "scenarios", "ciq")
ECHO = "0180E520-5F7E-11E4-9803-0800200C9A66"
OTHER = "A3421FEE-D289-4B8C-9D56-5D3C1A2B3C4D"
WATCH = "F0:F0:F0:F0:F0:F0"

# name → (title, watch arguments, key seed)
SCENARIO_SETUP = {
    "clean": ("Clean Connect IQ session: app status, a one-packet and a 2 KB multi-window send, echoes, open app",
              ["--app", f"{ECHO}:echo", "--no-large-packets"], 1),
    "app-not-installed": ("App not installed: app status, send and open app on a watch without the app",
                          ["--app", f"{ECHO}:echo", "--app", f"{OTHER}:not-installed"], 2),
    "silent-timeout": ("A watch app that stops acknowledging mid-transfer: Failure_Timeout after 5 s",
                       ["--app", f"{ECHO}:silent", "--no-large-packets"], 3),
    "disconnect-mid": ("The watch disconnects in the middle of a 2 KB transfer: Failure_DeviceNotAvailable",
                       ["--app", f"{ECHO}:disconnect-mid", "--no-large-packets", "--disconnect-after", "20"], 4),
    "max-retries": ("Transfer not started, three times: Failure_MaxRetries",
                    ["--app", f"{ECHO}:not-started"], 5),
    "watch-initiated": ("The watch app opens a connection, sends three messages and closes it",
                        ["--app", f"{ECHO}:chatty", "--chatty-count", "3", "--chatty-interval-ms", "500",
                         "--chatty-delay-ms", "1000"], 6),
    "concurrent-send": ("A second 2 KB send issued the moment the first completes, while the watch echoes the first back",
                        ["--app", f"{ECHO}:echo", "--no-large-packets"], 7),
}


def run(command, check=True, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, check=check, **kwargs)


def record(name, tether, out, logs):
    title, watch_args, seed = SCENARIO_SETUP[name]
    set_path = os.path.join(out, f"ciq-{name}")
    if os.path.exists(set_path):
        shutil.rmtree(set_path)
    controllers, ports = start([os.path.join(RIGS, "ciq_controllers.py"), "tcp-server:127.0.0.1:0", "tcp-server:127.0.0.1:0"],
                               os.path.join(logs, f"{name}-controllers.log"))
    watch = None
    try:
        watch_log = open(os.path.join(logs, f"{name}-watch.log"), "w")
        watch = subprocess.Popen([sys.executable, os.path.join(RIGS, "ciq_watch.py"), "--hci", f"tcp-client:127.0.0.1:{ports[0]}",
                                  "--address", WATCH] + watch_args, stdout=watch_log, stderr=watch_log)
        time.sleep(1.5)
        live_trace = os.path.join(logs, f"{name}-live.jsonl")
        run([tether, "live", "messaging", "--hci", f"tcp-client:127.0.0.1:{ports[1]}", "--peer", WATCH,
             "--script", os.path.join(SCENARIOS, f"{name}.yaml"), "--record", set_path, "--trace", live_trace,
             "--seed", str(seed), "--title", title, "--bridge-log", os.path.join(logs, f"{name}-bridge.log")])
    finally:
        if watch is not None:
            stop(watch, timeout=5)
        stop(controllers, timeout=5)
    os.makedirs(os.path.join(set_path, "live"), exist_ok=True)
    shutil.copy(live_trace, os.path.join(set_path, "live", "messaging.jsonl"))
    run([tether, "seal", set_path])  # the seal covers live/ too (live_traces_sha256)
    add_expectations(set_path, os.path.join(SCENARIOS, f"{name}.expect.yaml"),
                     f"Recorded by Harness/record_ciq_sets.py: {title}. Watch: ciq_watch.py {' '.join(watch_args)}; "
                     f"script Harness/scenarios/ciq/{name}.yaml. live/messaging.jsonl is the live host's own trace.")
    run([tether, "replay", set_path])
    run([tether, "replay", set_path, "--update-baseline"])
    return set_path


def add_expectations(set_path, expect_file, description):
    manifest_path = os.path.join(set_path, "manifest.yaml")
    with open(manifest_path) as f:
        manifest = yaml.safe_load(f)
    with open(expect_file) as f:
        manifest["expectations"] = yaml.safe_load(f)
    manifest["description"] = description
    with open(manifest_path, "w") as f:
        yaml.safe_dump(manifest, f, sort_keys=False, allow_unicode=True, width=100)


def imported(tether, out, logs):
    """ciq-imported-btsnoop: the clean set's HCI as a btsnoop file, imported, calls written by hand."""
    clean = os.path.join(out, "ciq-clean")
    set_path = os.path.join(out, "ciq-imported-btsnoop")
    if os.path.exists(set_path):
        shutil.rmtree(set_path)
    btsnoop = os.path.join(logs, "ciq-clean.btsnoop")
    run([tether, "export", clean, "--format", "btsnoop", "--out", btsnoop])
    run([tether, "import", btsnoop, "--out", set_path])
    # The calls the app made, as a person would write them from the app's own log: here taken
    # from the clean set's accepted trace (its `api_call` events carry the recorded instants).
    calls = []
    with open(os.path.join(clean, "baseline", "messaging.jsonl")) as f:
        for line in f:
            event = json.loads(line)
            if event["event"] != "api_call" or event["call"] == "bluetooth_state":
                continue
            call = {"t_ms": round(event["t_ns"] / 1e6, 3)}
            call.update({k: v for k, v in event.items() if k not in ("t_ns", "core", "event", "send", "request")})
            calls.append(call)
    with open(os.path.join(clean, "manifest.yaml")) as f:
        clean_manifest = yaml.safe_load(f)
    manifest_path = os.path.join(set_path, "manifest.yaml")
    with open(manifest_path) as f:
        manifest = yaml.safe_load(f)
    manifest["title"] = "A phone's btsnoop log imported, with the app's calls written in the manifest"
    manifest["description"] = ("ciq-clean's HCI exported as btsnoop (tether export --format btsnoop), imported with "
                               "tether import; the API calls are written by hand in messaging.api_calls, as for any "
                               "btsnoop or PacketLogger file from a phone.")
    for interface in manifest["interfaces"]:
        interface["role"] = "ble-hci"
    manifest["messaging"] = {"devices": clean_manifest["messaging"]["devices"], "api_calls": calls}
    manifest["expectations"] = clean_manifest["expectations"]
    with open(manifest_path, "w") as f:
        yaml.safe_dump(manifest, f, sort_keys=False, allow_unicode=True, width=100)
    run([tether, "replay", set_path])
    run([tether, "replay", set_path, "--update-baseline"])


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tether", default=os.path.join(ROOT, ".build", "debug", "tether"))
    parser.add_argument("--out", default=os.path.join(ROOT, "Captures"))
    parser.add_argument("--logs", default="/tmp/tether-ciq-logs")
    parser.add_argument("names", nargs="*", help="scenarios to record (default: all, then the imported set)")
    args = parser.parse_args()
    os.makedirs(args.logs, exist_ok=True)
    names = args.names or list(SCENARIO_SETUP) + ["imported-btsnoop"]
    for name in names:
        if name == "imported-btsnoop":
            imported(args.tether, args.out, args.logs)
        else:
            record(name, args.tether, args.out, args.logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
