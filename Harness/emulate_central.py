#!/usr/bin/env python3
"""A Bumble central that checks `tether emulate` of a capture set: it connects to the emulated
peripheral, discovers its database, performs the central's recorded requests in order (the CCCD
writes that subscribe, the other writes, the reads) and checks that every notification and read
value it gets equals the recorded one, byte for byte and in order.

What was recorded comes from `tether inspect SET --frames --json` (the ATT PDUs of every frame), so
this script shares no code with the emulator it checks. For each write of the central, the
notifications and indications that followed it in the capture (until the central's next write)
are expected after it; the central waits for them before its next request, as the recorded
central's timing did. Discovery is checked too: every handle the recorded traffic uses must be in
the discovered database, at the same handle with the same characteristic UUID where the capture
names one.

    python3 Harness/emulate_central.py --hci tcp-client:127.0.0.1:9002 --set Captures/gatt-sensor \\
        --peer F0:5E:00:00:00:01

Security and the peripheral as GATT client (a device that asks to be paired and discovers the
phone): `--pair-on-security-request` pairs when the peripheral's Security Request arrives (asking
for LE Secure Connections, Just Works, bonding) instead of up front, and reports which pairing was
made; `--linger S` stays connected S seconds after the last step. The discovery requests the
emulated peripheral makes of this central's own database are counted either way.

Exits 0 when everything matched, 1 with a list of the differences otherwise. `--json` prints the
counts as one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Harness" / "rigs"))

from bumble import hci  # noqa: E402
from bumble.device import Device, Peer  # noqa: E402
from bumble.pairing import PairingConfig, PairingDelegate  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

CLIENT_REQUESTS = {0x04, 0x06, 0x08, 0x0A, 0x0C, 0x0E, 0x10, 0x12, 0x16, 0x18, 0x20, 0x52}
NOTIFICATION, INDICATION = 0x1B, 0x1D
WRITE_REQUEST, WRITE_COMMAND, READ_REQUEST, READ_RESPONSE = 0x12, 0x52, 0x0A, 0x0B
CENTRAL_ADDRESS = "F0:CE:00:00:00:01"
# The server's handlers of the ATT requests that discover a database (Core v6.0 Vol 3 Part G §4.4-4.7).
DISCOVERY_HANDLERS = ("on_att_read_by_group_type_request", "on_att_find_by_type_value_request",
                      "on_att_read_by_type_request", "on_att_find_information_request")


def count_discovery_requests(device: Device) -> dict:
    """Counts, by handler, the discovery requests this central's GATT server answers."""
    served = {name: 0 for name in DISCOVERY_HANDLERS}
    server = device.gatt_server
    for name in DISCOVERY_HANDLERS:
        original = getattr(server, name)

        def counting(bearer, request, name=name, original=original):
            served[name] += 1
            return original(bearer, request)

        setattr(server, name, counting)
    return served


def recorded_steps(set_path: str, tether: str):
    """The central's recorded writes and reads, in order, each with what the peripheral answered:
    [{"op": "write"|"read", "handle", "value", "with_response", "expect": [(handle, value)...]}],
    and {handle: characteristic UUID} for the handles the capture names."""
    output = subprocess.run([tether, "inspect", set_path, "--frames", "--json"], check=True, capture_output=True, text=True).stdout
    frames = json.loads(output)["frame_list"]
    pdus = [att for frame in frames for att in frame.get("att_all", [])]
    # The central's direction: that of its reads and writes, else of any client request (a
    # peripheral that discovers the phone's database sends client requests the other way).
    client = next((p["direction"] for p in pdus if p["opcode"] in (WRITE_REQUEST, WRITE_COMMAND, READ_REQUEST)), None)
    client = client or next((p["direction"] for p in pdus if p["opcode"] in CLIENT_REQUESTS), None)
    if client is None:
        raise SystemExit(f"{set_path}: no ATT request of a central in the capture")
    steps, names, pending_read = [], {}, None
    for pdu in pdus:
        handle, value, opcode = pdu["handle"], bytes.fromhex(pdu["value"] or ""), pdu["opcode"]
        # A value handle's characteristic (a CCCD write names its characteristic too, so only
        # notified, indicated and read handles are taken).
        if handle is not None and pdu.get("characteristic_uuid") and opcode in (NOTIFICATION, INDICATION, READ_REQUEST):
            names.setdefault(handle, pdu["characteristic_uuid"])
        if pdu["direction"] == client:
            if opcode in (WRITE_REQUEST, WRITE_COMMAND):
                steps.append({"op": "write", "handle": handle, "value": value, "with_response": opcode == WRITE_REQUEST, "expect": []})
            elif opcode == READ_REQUEST:
                pending_read = {"op": "read", "handle": handle, "value": None, "expect": []}
                steps.append(pending_read)
        elif opcode in (NOTIFICATION, INDICATION):
            writes = [s for s in steps if s["op"] == "write"]
            if writes:
                writes[-1]["expect"].append((handle, value))
        elif opcode == READ_RESPONSE and pending_read is not None:
            pending_read["value"] = value
            pending_read = None
    return steps, names


class Checker:
    """Runs the steps against the emulated peripheral and collects differences."""

    def __init__(self, connection, peer: Peer, answer_timeout: float):
        self.connection = connection
        self.peer = peer
        self.answer_timeout = answer_timeout
        self.received: list[tuple[int, bytes]] = []
        self.arrived = asyncio.Event()
        self.problems: list[str] = []
        client = connection.gatt_client
        original_notification = client.on_att_handle_value_notification
        original_indication = client.on_att_handle_value_indication

        def on_notification(notification):
            self.received.append((notification.attribute_handle, bytes(notification.attribute_value)))
            self.arrived.set()
            return original_notification(notification)

        def on_indication(indication):
            self.received.append((indication.attribute_handle, bytes(indication.attribute_value)))
            self.arrived.set()
            return original_indication(indication)

        client.on_att_handle_value_notification = on_notification
        client.on_att_handle_value_indication = on_indication

    async def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + self.answer_timeout
        while len(self.received) < count and time.monotonic() < deadline:
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), max(0.01, deadline - time.monotonic()))
            except asyncio.TimeoutError:
                break

    async def run(self, steps) -> dict:
        expected_total, reads_checked = 0, 0
        client = self.connection.gatt_client
        for index, step in enumerate(steps):
            if step["op"] == "write":
                await client.write_value(step["handle"], step["value"], with_response=step["with_response"])
                expected_total += len(step["expect"])
                await self.wait_for(expected_total)
            else:
                value = await client.read_value(step["handle"])
                reads_checked += 1
                if step["value"] is not None and bytes(value) != step["value"]:
                    self.problems.append(f"step {index + 1}: read of 0x{step['handle']:04x} gave {bytes(value).hex()}, recorded {step['value'].hex()}")
        await asyncio.sleep(0.2)  # anything extra would show up now
        expected = [pair for step in steps if step["op"] == "write" for pair in step["expect"]]
        for position, (want, got) in enumerate(zip(expected, self.received)):
            if want != got:
                self.problems.append(f"notification {position + 1}: got 0x{got[0]:04x} {got[1].hex()}, recorded 0x{want[0]:04x} {want[1].hex()}")
                if len(self.problems) > 20:
                    break
        if len(self.received) != len(expected):
            self.problems.append(f"{len(self.received)} notifications/indications received, {len(expected)} recorded")
        return {"steps": len(steps), "writes": sum(1 for s in steps if s["op"] == "write"), "reads": reads_checked,
                "notifications_expected": len(expected), "notifications_received": len(self.received)}


async def check_discovery(peer: Peer, steps, names) -> list[str]:
    await peer.discover_all()
    handles = {}
    for service in peer.services:
        for characteristic in service.characteristics:
            handles[characteristic.handle] = str(characteristic.uuid).lower()
            for descriptor in characteristic.descriptors:
                handles[descriptor.handle] = str(descriptor.type).lower()
    problems = []
    for handle in sorted({s["handle"] for s in steps} | {h for s in steps for h, _ in s["expect"]}):
        if handle not in handles:
            problems.append(f"handle 0x{handle:04x} used in the capture is not in the discovered database")
    for handle, uuid in names.items():
        found = handles.get(handle)
        if found is not None and normalise(found) != normalise(uuid):
            problems.append(f"handle 0x{handle:04x}: discovered {found}, the capture names {uuid}")
    return problems


def normalise(uuid: str) -> str:
    """`0x2a19`, `2A19`, `UUID-16:2A19 (Battery Level)` and the full base form all become `2a19`."""
    text = uuid.lower().split(" ")[0].replace("uuid-16:", "").replace("0x", "")
    if text.endswith("-0000-1000-8000-00805f9b34fb") and text.startswith("0000"):
        text = text[4:8]
    return text


async def run(args) -> int:
    # Bumble warns of every notification no subscriber asked for: this central takes them all raw.
    logging.getLogger("bumble").setLevel(logging.ERROR)
    steps, names = recorded_steps(args.set, args.tether)
    async with await open_transport(args.hci) as transport:
        device = Device.with_hci("emulate-central", hci.Address(CENTRAL_ADDRESS), transport.source, transport.sink)
        served = count_discovery_requests(device)
        # Bonding as many wearables' apps do: LE Secure Connections asked for, Just Works.
        device.pairing_config_factory = lambda _connection: PairingConfig(
            sc=True, mitm=False, bonding=True, delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
        await device.power_on()
        security_request = asyncio.get_running_loop().create_future()
        connected_at = time.monotonic()
        connection = await asyncio.wait_for(device.connect(hci.Address(args.peer)), 15.0)
        connected_at = time.monotonic()

        def on_security_request(auth_req):
            if not security_request.done():
                security_request.set_result((time.monotonic() - connected_at, int(auth_req)))

        connection.on("security_request", on_security_request)
        peer = Peer(connection)
        pairing = {}
        if args.pair:
            await asyncio.wait_for(connection.pair(), 15.0)
        if args.pair_on_security_request:
            try:
                after_s, auth_req = await asyncio.wait_for(asyncio.shield(security_request), 10.0)
            except asyncio.TimeoutError:
                raise SystemExit("no Security Request from the peripheral within 10 s")
            await asyncio.wait_for(connection.pair(), 15.0)
            pairing = {"security_request_after_s": round(after_s, 3), "security_request_auth_req": auth_req}
        if args.pair or args.pair_on_security_request:
            pairing["pairing"] = "LE Secure Connections" if connection.sc else "legacy pairing"
        if args.mtu:
            await peer.request_mtu(args.mtu)
        checker = Checker(connection, peer, args.answer_timeout)
        problems = await check_discovery(peer, steps, names)
        counts = await checker.run(steps)
        problems += checker.problems
        if args.linger:
            await asyncio.sleep(args.linger)
        await connection.disconnect()
    counts.update(pairing)
    counts["security_request_seen"] = security_request.done()
    counts["discovery_requests_served"] = {name[len("on_att_"):-len("_request")]: n for name, n in served.items()}
    counts["problems"] = problems
    if args.json:
        print(json.dumps(counts))
    else:
        print(f"{counts['writes']} writes and {counts['reads']} reads replayed; {counts['notifications_received']} of "
              f"{counts['notifications_expected']} recorded notifications received")
    for problem in problems:
        print(f"DIFFERENCE: {problem}", file=sys.stderr)
    return 1 if problems else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hci", required=True, help="Bumble transport of the central's controller")
    parser.add_argument("--set", required=True, help="the capture set tether emulate serves")
    parser.add_argument("--peer", required=True, help="the emulated peripheral's address")
    parser.add_argument("--tether", default=os.environ.get("TETHER_BINARY", str(ROOT / ".build" / "debug" / "tether")))
    parser.add_argument("--mtu", type=int, default=247, help="ATT MTU to ask for (0: none)")
    parser.add_argument("--answer-timeout", type=float, default=10.0, help="seconds to wait for a write's notifications")
    parser.add_argument("--pair", action="store_true", help="pair first (LE Secure Connections, Just Works) and encrypt the link")
    parser.add_argument("--pair-on-security-request", action="store_true",
                        help="wait for the peripheral's Security Request, then pair (asking for LE Secure Connections, Just Works)")
    parser.add_argument("--linger", type=float, default=0.0, help="seconds to stay connected after the last step")
    parser.add_argument("--json", action="store_true", help="print the counts and differences as JSON")
    args = parser.parse_args()
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
