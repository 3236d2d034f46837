"""The Lua dissector and `tether inspect --json` read a real recorded capture the same way.

Both decode Captures/ciq-clean (recorded for real: Tether's live host, a Bumble watch, the H4
tap): for every frame that carries a Connect IQ packet, Wireshark with connectiq.lua and Tether's
own dissection must agree on the kind, connection, sequence, command, control id, ack type and
status, transfer length, CRC, key and payload bytes, packet for packet.

Needs tshark and the tether binary (`swift build`; TETHER_BINARY names another one).
"""

import json
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LUA = os.path.join(ROOT, "Harness", "wireshark", "connectiq.lua")
CAPTURE_SET = os.path.join(ROOT, "Captures", "ciq-clean")
FIELDS = ["frame.number", "ciq.kind", "ciq.conn", "ciq.seq", "ciq.command", "ciq.app_uuid", "ciq.status", "ciq.version", "ciq.open_app_code",
          "ciq.control", "ciq.ack_type", "ciq.ack_status", "ciq.length", "ciq.crc", "ciq.key", "ciq.payload"]


def tether_binary():
    path = os.environ.get("TETHER_BINARY", os.path.join(ROOT, ".build", "debug", "tether"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"no tether binary at {path}: run `swift build` (or set TETHER_BINARY)")
    return path


def tshark_packets():
    if shutil.which("tshark") is None:
        pytest.fail("tshark is not installed: apt-get install -y tshark")
    command = ["tshark", "-X", f"lua_script:{LUA}", "-r", os.path.join(CAPTURE_SET, "capture.pcapng"), "-Y", "ciq",
               "-T", "fields", "-E", "separator=\t", "-E", "occurrence=a", "-E", "aggregator=|"]
    for field in FIELDS:
        command += ["-e", field]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
    packets = {}
    for line in result.stdout.splitlines():
        values = line.split("\t")
        row = dict(zip(FIELDS, values))
        number = int(row.pop("frame.number"))
        packets[number] = {k: v for k, v in row.items() if v != ""}
    return packets


def tether_packets():
    result = subprocess.run([tether_binary(), "inspect", CAPTURE_SET, "--frames", "--json"],
                            capture_output=True, text=True, timeout=120, check=True)
    frames = json.loads(result.stdout)["frame_list"]
    packets = {}
    for frame in frames:
        ciq = frame.get("connect_iq_all")
        if not ciq:
            continue
        assert len(ciq) == 1, f"frame {frame['number']}: one ATT value carries one Connect IQ packet"
        p = ciq[0]
        row = {"ciq.kind": p["kind"]}
        if "connection" in p:
            row["ciq.conn"] = str(p["connection"])
        if "sequence" in p:
            row["ciq.seq"] = str(p["sequence"])
        if "command" in p:
            row["ciq.command"] = str(p["command"])
        if "app" in p:
            row["ciq.app_uuid"] = p["app"]
        if "status" in p:
            row["ciq.status"] = str(p["status"])
        if "version" in p:
            row["ciq.version"] = str(p["version"])
        if "code" in p:
            row["ciq.open_app_code"] = str(p["code"])
        if "control" in p:
            row["ciq.control"] = str(p["control"])
        if "ack_type" in p:
            row["ciq.ack_type"] = str(p["ack_type"])
            row["ciq.ack_status"] = str(p["ack_status"])
        if "length" in p:
            row["ciq.length"] = str(p["length"])
        if "crc" in p:
            row["ciq.crc"] = str(p["crc"])
        if "key" in p:
            row["ciq.key"] = p["key"]
        if "payload" in p:
            row["ciq.payload"] = p["payload"]
        packets[frame["number"]] = row
    return packets


def normalise(row):
    """tshark prints integers in decimal (or hex for some fields) and bytes as hex with no separator."""
    out = {}
    for key, value in row.items():
        if key in ("ciq.key", "ciq.payload"):
            out[key] = value.replace(":", "").lower()
        elif key == "ciq.app_uuid":
            out[key] = value.replace("-", "").replace(":", "").lower()
        elif key == "ciq.kind":
            out[key] = value
        else:
            out[key] = str(int(value, 0))
    return out


def test_lua_and_inspect_agree_on_every_connect_iq_packet_of_a_recorded_session():
    wireshark = tshark_packets()
    tether = tether_packets()
    assert len(tether) > 100, "the clean session has over a hundred Connect IQ packets"
    assert sorted(wireshark) == sorted(tether), "both must find Connect IQ packets in the same frames"
    for number in sorted(tether):
        expected = normalise(tether[number])
        shown = normalise({k: v for k, v in wireshark[number].items() if k in expected})
        assert shown == expected, f"frame {number}"
        # and Wireshark shows no field Tether does not have
        assert set(normalise(wireshark[number])) <= set(expected), f"frame {number}: {wireshark[number]}"
