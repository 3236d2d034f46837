#!/usr/bin/env python3
"""Records the Heart Rate example's capture sets, for real, through Tether's H4 tap.

For each set it starts two Bumble virtual controllers on one virtual radio
(Harness/rigs/ciq_controllers.py), the heart-rate strap on the first
(Harness/rigs/heart_rate_peripheral.py), `tether record --ble` with its H4 tap in front of the
second, and the phone (Harness/rigs/heart_rate_central.py) on the tap. The central runs exactly the
ATT requests HeartRateCore asks for (CCCD write 01 00, Body Sensor Location read, and in hr-clean a
Control Point write 0x01), so replaying a set against the core sees the same traffic. When the
central has disconnected, the recorder is stopped (SIGINT: it seals the set).

Then the script reads the capture itself (pcapng, H4 with phdr, ACL, L2CAP channel 4, ATT) to find
the frames that matter, checks them against `tether inspect --frames --json`, and writes into the
set's manifest:
  - `gatt_handles`: the heart rate handles, named;
  - `annotations`: the CCCD write, the Body Sensor Location read, the Control Point write, the first
    and last notification, the disconnection (frame number and virtual time);
  - `devices`: the strap and the phone;
  - `heart_rate`: the scenario, the seed, the handles, and the app's calls (`api_calls`: `start`
    and `reset_energy_expended`, each with `t_ns` since the first frame, placed at the time the
    central issued the request; the central prints those times on CLOCK_REALTIME, the clock of the
    tap's timestamps).
The central's stdout and both rigs' stderr are kept in the set's `rig/` folder.

Usage (from the repository root, with the CLI built as .build/debug/tether):
    python3 Examples/HeartRate/record_sets.py [--tether .build/debug/tether] \\
        [--out Examples/HeartRate/Captures] [hr-clean hr-contact-lost hr-silent]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import struct
import subprocess
import sys
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
RIGS = os.path.join(ROOT, "Harness", "rigs")
sys.path.insert(0, RIGS)
from rig_processes import start, stop, wait_for_line  # noqa: E402  (found through the path set just above)

STRAP = "F0:48:52:00:00:01"
PHONE = "F1:48:52:00:00:02"

# name -> (title, strap scenario, seed, central arguments)
SETS = {
    "hr-clean": (
        "Heart rate strap, clean: 1 Hz measurements with RR intervals, Energy Expended, one Control Point reset",
        "clean", 1, ["--duration", "15", "--reset-after", "5.5"],
    ),
    "hr-contact-lost": (
        "Heart rate strap loses skin contact for 3 s, then regains it",
        "contact-lost", 2, ["--duration", "12"],
    ),
    "hr-silent": (
        "Heart rate strap sends 3 measurements, then stays connected and silent for 10 s",
        "silent", 3, ["--duration", "13"],
    ),
}

ATT_CID = 0x0004
WRITE_REQUEST, WRITE_RESPONSE, READ_REQUEST, READ_RESPONSE, NOTIFICATION = 0x12, 0x13, 0x0A, 0x0B, 0x1B
SENT, RECEIVED = 0, 1  # H4 phdr direction: host -> controller, controller -> host


def start_recorder(tether, controller_port, set_path, title, description, log_path):
    """`tether record --ble` in front of the controller; returns (process, the tap's port)."""
    log = open(log_path, "w")
    command = [tether, "record", "--ble", f"tcp:127.0.0.1:{controller_port}", "--ble-listen", "127.0.0.1:0",
               "--out", set_path, "--duration", "120", "--title", title, "--description", description]
    print("+ " + " ".join(command), flush=True)
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    line = wait_for_line(process, "Point the host stack at ")
    if line is None:
        process.kill()
        raise SystemExit(f"tether record did not start; see {log_path}")
    address = line[len("Point the host stack at "):].split()[0]
    return process, int(address.rsplit(":", 1)[1])


# --- reading the capture ------------------------------------------------------------------


def read_frames(path):
    """[(number, time_ns since the epoch, interface, bytes)] of a pcapng file's packets, numbered
    from 1 as Wireshark does. Handles one section of either byte order and if_tsresol."""
    data = open(path, "rb").read()
    frames, resolutions, offset, endian = [], [], 0, "<"
    while offset + 12 <= len(data):
        block_type = struct.unpack_from(endian + "I", data, offset)[0]
        if block_type == 0x0A0D0D0A:
            endian = "<" if data[offset + 8 : offset + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            resolutions = []
        length = struct.unpack_from(endian + "I", data, offset + 4)[0]
        if length < 12 or offset + length > len(data):
            break  # a cut-off tail: keep what came before
        body = data[offset + 8 : offset + length - 4]
        if block_type == 1:  # Interface Description Block
            ticks_per_second = 10**6  # the default resolution, microseconds
            position = 8
            while position + 4 <= len(body):
                code, size = struct.unpack_from(endian + "HH", body, position)
                if code == 0:
                    break
                if code == 9:
                    raw = body[position + 4]
                    ticks_per_second = 2 ** (raw & 0x7F) if raw & 0x80 else 10**raw
                position += 4 + (size + 3) // 4 * 4
            resolutions.append(ticks_per_second)
        elif block_type == 6:  # Enhanced Packet Block
            interface, high, low, captured = struct.unpack_from(endian + "IIII", body, 0)
            ticks = (high << 32) | low
            # Integer arithmetic: epoch nanoseconds need 61 bits, more than a float keeps.
            frames.append((len(frames) + 1, ticks * 10**9 // resolutions[interface], interface, body[20 : 20 + captured]))
        offset += length
    return frames


def att_of(frame_bytes):
    """(direction, ATT opcode, handle, value) of an H4-with-phdr frame holding a whole ATT PDU on
    L2CAP channel 4 in a first ACL fragment, else None. The central asks no MTU, so every ATT PDU
    here fits one fragment."""
    if len(frame_bytes) < 4 + 1 + 4 + 4 + 1:
        return None
    direction = struct.unpack_from(">I", frame_bytes, 0)[0]
    if frame_bytes[4] != 0x02:  # not ACL
        return None
    handle_flags, _ = struct.unpack_from("<HH", frame_bytes, 5)
    if (handle_flags >> 12) & 0x3 == 0x1:  # a continuing fragment
        return None
    _, cid = struct.unpack_from("<HH", frame_bytes, 9)
    if cid != ATT_CID:
        return None
    pdu = frame_bytes[13:]
    opcode = pdu[0]
    handle = struct.unpack_from("<H", pdu, 1)[0] if opcode in (WRITE_REQUEST, READ_REQUEST, NOTIFICATION) and len(pdu) >= 3 else None
    value = pdu[3:] if handle is not None else pdu[1:]
    return direction, opcode, handle, value


def hci_disconnect_frames(frames):
    """Frame numbers of HCI Disconnect commands (sent) and Disconnection Complete events."""
    found = []
    for number, _, _, raw in frames:
        if len(raw) >= 8 and raw[4] == 0x01 and raw[5:7] == b"\x06\x04":
            found.append(("disconnect_command", number))
        elif len(raw) >= 7 and raw[4] == 0x04 and raw[5] == 0x05:
            found.append(("disconnection_complete", number))
    return found


def central_lines(text):
    """The central's stdout as {KIND: [words after it, ...]}."""
    lines = {}
    for line in text.splitlines():
        words = line.split()
        if words:
            lines.setdefault(words[0], []).append(words[1:])
    return lines


def key_frames(frames, handles):
    """The frames of the session's ATT requests and notifications, by name: number, virtual time."""
    first_ns = frames[0][1]
    found, notifications = {}, []

    def put(name, number, time_ns):
        found.setdefault(name, {"frame": number, "time_ns": time_ns - first_ns})

    for number, time_ns, _, raw in frames:
        att = att_of(raw)
        if att is None:
            continue
        direction, opcode, handle, value = att
        if direction == SENT and opcode == WRITE_REQUEST and handle == handles["measurement_cccd"] and value == b"\x01\x00":
            put("cccd_write", number, time_ns)
        elif direction == SENT and opcode == READ_REQUEST and handle == handles.get("body_sensor_location"):
            put("bsl_read", number, time_ns)
        elif direction == SENT and opcode == WRITE_REQUEST and handle == handles.get("control_point") and value == b"\x01":
            put("cp_write", number, time_ns)
        elif direction == RECEIVED and opcode == NOTIFICATION and handle == handles["measurement"]:
            notifications.append({"frame": number, "time_ns": time_ns - first_ns, "value": value.hex()})
    if notifications:
        found["first_notification"] = notifications[0]
        found["last_notification"] = notifications[-1]
    for name, number in hci_disconnect_frames(frames):
        put(name, number, frames[number - 1][1])
    return found, notifications, first_ns


def check_with_inspect(tether, set_path, found, handles):
    """`tether inspect --frames --json` must show each key frame as the ATT PDU this script saw."""
    result = subprocess.run([tether, "inspect", set_path, "--frames", "--json"], capture_output=True, text=True, check=True)
    report = json.loads(result.stdout)
    listing = {frame["number"]: frame for frame in report["frame_list"]}
    first_ns = report["first_time_ns"]  # inspect gives epoch times; the script's are since the first frame
    expected = {
        "cccd_write": (WRITE_REQUEST, handles["measurement_cccd"]),
        "bsl_read": (READ_REQUEST, handles.get("body_sensor_location")),
        "cp_write": (WRITE_REQUEST, handles.get("control_point")),
        "first_notification": (NOTIFICATION, handles["measurement"]),
        "last_notification": (NOTIFICATION, handles["measurement"]),
    }
    for name, (opcode, handle) in expected.items():
        if name not in found:
            continue
        frame = listing[found[name]["frame"]]
        att = frame.get("att") or {}
        if att.get("opcode") != opcode or att.get("handle") != handle:
            raise SystemExit(f"{set_path}: inspect shows frame {found[name]['frame']} as {att}, expected {name} "
                             f"(opcode 0x{opcode:02x}, handle 0x{handle:04x})")
        if frame["time_ns"] - first_ns != found[name]["time_ns"]:
            raise SystemExit(f"{set_path}: inspect puts frame {found[name]['frame']} at {frame['time_ns'] - first_ns} ns, "
                             f"this script at {found[name]['time_ns']} ns")


def update_manifest(set_path, name, scenario, seed, central_args, handles, found, notifications, calls):
    """Adds the handles, annotations, devices and the `heart_rate` section to the set's manifest,
    atomically (a temporary file renamed over it), as Tether writes manifests."""
    manifest_path = os.path.join(set_path, "manifest.yaml")
    with open(manifest_path) as f:
        manifest = yaml.safe_load(f)
    manifest["devices"] = [
        {"name": "strap", "model": "HR-Strap 1 (Harness/rigs/heart_rate_peripheral.py)"},
        {"name": "phone", "model": "Bumble central (Harness/rigs/heart_rate_central.py)"},
    ]
    manifest["gatt_handles"] = [
        {"handle": handles["measurement"], "service_uuid": "0x180d", "characteristic_uuid": "0x2a37"},
        {"handle": handles["body_sensor_location"], "service_uuid": "0x180d", "characteristic_uuid": "0x2a38"},
        {"handle": handles["control_point"], "service_uuid": "0x180d", "characteristic_uuid": "0x2a39"},
    ]
    texts = {
        "cccd_write": "Write Request 01 00 to the Heart Rate Measurement CCCD (HeartRateClient.start)",
        "bsl_read": "Read Request of Body Sensor Location",
        "cp_write": "Write Request 01 to the Heart Rate Control Point (resetEnergyExpended)",
        "first_notification": "first Heart Rate Measurement notification",
        "last_notification": "last Heart Rate Measurement notification",
        "disconnect_command": "the central disconnects (HCI Disconnect, reason 0x13)",
    }
    manifest["annotations"] = [
        {"frame": found[key]["frame"], "time_ns": found[key]["time_ns"], "text": text, "author": "record_sets.py"}
        for key, text in texts.items() if key in found
    ]
    manifest["heart_rate"] = {
        "scenario": scenario,
        "seed": seed,
        "strap": STRAP,
        "phone": PHONE,
        "handles": handles,
        "notifications": len(notifications),
        "api_calls": calls,
        "recorded_with": "python3 Examples/HeartRate/record_sets.py " + name,
        "central_args": central_args,
    }
    temporary = manifest_path + ".tmp"
    with open(temporary, "w") as f:
        yaml.safe_dump(manifest, f, sort_keys=False, allow_unicode=True, width=120)
        f.flush()
        os.fsync(f.fileno())
    os.replace(temporary, manifest_path)


def record(name, tether, out, logs):
    title, scenario, seed, central_args = SETS[name]
    set_path = os.path.join(out, name)
    if os.path.exists(set_path):
        shutil.rmtree(set_path)
    description = (f"Recorded by Examples/HeartRate/record_sets.py: heart_rate_peripheral.py --scenario {scenario} --seed {seed} on "
                   f"one Bumble controller, heart_rate_central.py {' '.join(central_args)} on the other through the H4 tap.")
    controllers, ports = start([os.path.join(RIGS, "ciq_controllers.py"), "--ports", "0,0"], os.path.join(logs, f"{name}-controllers.log"))
    strap = recorder = None
    try:
        strap, _ = start([os.path.join(RIGS, "heart_rate_peripheral.py"), "--hci", f"tcp-client:127.0.0.1:{ports[0]}",
                          "--address", STRAP, "--scenario", scenario, "--seed", str(seed)],
                         os.path.join(logs, f"{name}-peripheral.log"))
        recorder, tap_port = start_recorder(tether, ports[1], set_path, title, description, os.path.join(logs, f"{name}-record.log"))
        command = [sys.executable, os.path.join(RIGS, "heart_rate_central.py"), "--hci", f"tcp-client:127.0.0.1:{tap_port}",
                   "--peer", STRAP, "--address", PHONE] + central_args
        print("+ " + " ".join(command[1:]), flush=True)
        central = subprocess.run(command, capture_output=True, text=True, timeout=120)
        with open(os.path.join(logs, f"{name}-central.log"), "w") as f:
            f.write(central.stderr)
        if central.returncode != 0:
            raise SystemExit(f"{name}: the central failed: {central.stderr.strip().splitlines()[-1:]}")
        time.sleep(1.0)  # the tap writes what it has read; a second covers the flush interval
        if stop(recorder, signal.SIGINT, timeout=30) != 0:
            raise SystemExit(f"{name}: tether record exited {recorder.returncode}; see {logs}/{name}-record.log")
    finally:
        if recorder is not None:
            stop(recorder, signal.SIGINT, timeout=30)
        if strap is not None:
            stop(strap)
        stop(controllers)

    os.makedirs(os.path.join(set_path, "rig"), exist_ok=True)
    with open(os.path.join(set_path, "rig", "central.txt"), "w") as f:
        f.write(central.stdout)
    for suffix in ("peripheral", "central"):
        shutil.copy(os.path.join(logs, f"{name}-{suffix}.log"), os.path.join(set_path, "rig", f"{suffix}.log"))

    lines = central_lines(central.stdout)
    handle_words = dict(word.split("=") for word in lines["HANDLES"][0])
    handles = {
        "measurement": int(handle_words["measurement"], 16),
        "measurement_cccd": int(handle_words["cccd"], 16),
        "body_sensor_location": int(handle_words["body_sensor_location"], 16),
        "control_point": int(handle_words["control_point"], 16),
    }
    frames = read_frames(os.path.join(set_path, "capture.pcapng"))
    found, notifications, first_ns = key_frames(frames, handles)
    for required in ("cccd_write", "bsl_read", "first_notification"):
        if required not in found:
            raise SystemExit(f"{name}: no {required} frame in the capture")
    if "--reset-after" in central_args and "cp_write" not in found:
        raise SystemExit(f"{name}: no Control Point write in the capture")
    check_with_inspect(tether, set_path, found, handles)

    calls = [{"t_ns": int(lines["WRITE_CCCD"][0][0]) - first_ns, "call": "start"}]
    if "WRITE_CP" in lines:
        calls.append({"t_ns": int(lines["WRITE_CP"][0][0]) - first_ns, "call": "reset_energy_expended"})
    update_manifest(set_path, name, scenario, seed, central_args, handles, found, notifications, calls)

    summary = {"set": set_path, "frames": len(frames), "notifications": len(notifications), "handles": handles,
               **{key: value for key, value in found.items()}, "api_calls": calls}
    if "WRITE_CP" in lines:
        summary["cp_write_epoch_ns"] = int(lines["WRITE_CP"][0][0])
    return summary


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n\n".join(__doc__.split("\n\n")[1:]))
    parser.add_argument("names", nargs="*", default=list(SETS), metavar="NAME", help=f"sets to record (default all: {', '.join(SETS)})")
    parser.add_argument("--tether", default=os.path.join(ROOT, ".build", "debug", "tether"), help="the tether binary")
    parser.add_argument("--out", default=os.path.join(HERE, "Captures"), help="folder of the capture sets")
    parser.add_argument("--logs", default="/tmp/heart-rate-record-logs", help="where the rigs' logs go while recording")
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in SETS]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; expected {', '.join(SETS)}")
    if not os.access(args.tether, os.X_OK):
        parser.error(f"--tether {args.tether}: not an executable; build the CLI first")
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.logs, exist_ok=True)
    summaries = [record(name, args.tether, args.out, args.logs) for name in args.names]
    print(json.dumps(summaries, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
