#!/usr/bin/env python3
"""Record a Connect IQ link exchange between two Bumble devices, for the Wireshark dissector.

Two Bumble hosts, each on its own virtual controller, share one in-process radio
(bumble.link.LocalLink), so no kernel Bluetooth and no radio are needed. The
"watch" is a GATT server with the Connect IQ service and its two characteristics
(write: write and write without response; notify: notify). The "phone" connects,
raises the ATT MTU to 247, discovers the service, its characteristics and the
notify characteristic's descriptors, subscribes, reads the notify characteristic
once (a Read Response the dissector must leave alone), and then plays the fixed
scenario of `scenario()`: every phone packet is an ATT write to the write
characteristic (a Write Command, or a Write Request where the step says so), every
watch packet a Handle Value Notification from the notify characteristic. Each
step waits until the other side has received exactly the bytes sent, so the
order in the capture is the order of the scenario.

The packet layouts follow docs/connectiq-link.md (integers of the
link little-endian, UUIDs most significant byte first). The scenario covers every
command (requests and answers), every transfer control packet, an encrypted
outbound transfer of 16 data packets with 191-byte payloads (XXTEA over a
serialized Monkey C string, fresh fixed key), a plain inbound transfer of
"Hello, world!" in 19-byte packets, acks of every type, and a few malformed or
unknown packets. Every step carries the dissector fields it must produce
(`Step.expect`), which is what test_connectiq_lua.py checks tshark against.

Output, chosen by the file name's extension:
  *.btsnoop  the phone's HCI traffic as Bumble's BtSnooper writes it (H4, datalink 1002)
  *.pcapng   the same packets on interface 0 (LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR, 201)
             plus the app's API calls on interface 1 (LINKTYPE_USER0, 147), one UTF-8
             JSON object per frame, interleaved by time, as a Tether capture set holds them

Usage:
    python3 make_ciq_capture.py OUT.btsnoop|OUT.pcapng [--legacy]

--legacy uses the legacy Connect IQ service and characteristic UUIDs.
Exits 0 when every step of the exchange succeeded, 1 otherwise (with the reason
on stderr). Takes about a second.
"""

import argparse
import asyncio
import datetime
import json
import os
import struct
import sys
import tempfile
import uuid as uuidlib
from dataclasses import dataclass, field

# --------------------------------------------------------------------------------------------
# Wire constants (docs/connectiq-link.md, "GATT" and "Packets")
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GattProfile:
    """The three UUIDs of one variant of the Connect IQ GATT service."""

    service: str
    write: str
    notify: str


CURRENT_GATT = GattProfile(
    service="6a4e8022-667b-11e3-949a-0800200c9a66",
    write="6a4e4c80-667b-11e3-949a-0800200c9a66",
    notify="6a4ecd28-667b-11e3-949a-0800200c9a66",
)
LEGACY_GATT = GattProfile(
    service="16aa8022-3769-4c74-a755-877dde3a2930",
    write="df334c80-e6a7-d082-274d-78fc66f85e16",
    notify="4acbcd28-7425-868e-f447-915c8f00d0cb",
)

PHONE = "phone"
WATCH = "watch"
DIRECTION = {PHONE: "phone→watch", WATCH: "watch→phone"}

CMD_CONNECT, CMD_DISCONNECT, CMD_WATCH_OPENS, CMD_WATCH_CLOSES, CMD_APP_INFO, CMD_OPEN_APP = range(1, 7)
CTL_FIRST, CTL_LAST, CTL_ACK, CTL_ACK_REQUEST, CTL_CAPABILITIES, CTL_KEY, CTL_KEY_REQUEST = range(0, 7)
ACK_FIRST, ACK_DATA, ACK_LAST, ACK_ACK_REQUEST, ACK_CAPABILITIES, ACK_KEY = range(0, 6)
ST_SUCCESS, ST_RESEND, ST_CRC_FAILURE, ST_NOT_STARTED, ST_INVALID_CONN, ST_OUT_OF_MEMORY, ST_NO_KEY = range(0, 7)
FLAG_ENCRYPTED = 0x02
FLAG_TRANSIENT = 0x04
SMALL_PAYLOAD = 19
LARGE_PAYLOAD = 191
WINDOW = 15

LOOPBACK_APP = uuidlib.UUID("0180e520-5f7e-11e4-9803-0800200c9a66")
WATCH_APP = uuidlib.UUID("7c6e3a4b-1f2d-4e5a-9b8c-0d1e2f3a4b5c")
MISSING_APP = uuidlib.UUID("e3b0c442-98fc-4c14-9afb-f4c8996fb924")
OUTBOUND_KEY = bytes.fromhex("00112233445566778899aabbccddeeff")
WATCH_KEY = bytes.fromhex("f0e1d2c3b4a5968778695a4b3c2d1e0f")

#: The notify characteristic is also readable here, with a value shaped like a command, so the
#: capture holds one ATT Read Response on it that the dissector must leave alone (not a Connect
#: IQ packet: only writes and notifications are).
NOTIFY_READ_VALUE = bytes.fromhex("0005")

WATCH_ADDRESS = "F0:F0:F0:F0:F0:F0"
PHONE_ADDRESS = "F1:F1:F1:F1:F1:F1"
ATT_MTU = 247
TIMEOUT_S = 20.0

LINKTYPE_H4_WITH_PHDR = 201
LINKTYPE_USER0 = 147

# --------------------------------------------------------------------------------------------
# Payload helpers: CRC-16/ARC, XXTEA, Monkey C serialization of a string
# --------------------------------------------------------------------------------------------


# The rigs' codec (Harness/rigs/ciq_link.py) does the arithmetic; these wrappers keep the names
# and the padding this script's scenario and tests use.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rigs"))
import ciq_link  # noqa: E402  (found through the path set just above)

crc16_arc = ciq_link.crc16_arc


def xxtea_encrypt(plain: bytes, key: bytes) -> bytes:
    """XXTEA over little-endian words, after padding with zeros to a multiple of 4 bytes and at
    least 8 (Tether's choice, docs/connectiq-link.md "XXTEA")."""
    if len(key) != 16:
        raise ValueError(f"an XXTEA key is 16 bytes, got {len(key)}")
    return ciq_link.xxtea_encrypt(ciq_link.pad_for_xxtea(plain), key)


def serialize_monkeyc_string(text: str) -> bytes:
    """A Monkey C string value: string block plus object block (big-endian)."""
    return ciq_link.encode_value(text)


# --------------------------------------------------------------------------------------------
# Packet builders: bytes plus the dissector fields they must produce
# --------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One ATT value of the scenario.

    sender: PHONE (ATT write to the write characteristic) or WATCH (notification).
    value: the ATT value, one Connect IQ packet.
    expect: dissector field name -> value (int, str, or bytes) tshark must show.
    experts: the expert infos (by field name) the dissector must raise, and no others.
    with_response: a phone write goes as a Write Request instead of a Write Command.
    api_call: a JSON object the app's API recorded just before this step (pcapng output).
    """

    sender: str
    value: bytes
    expect: dict
    experts: tuple = ()
    with_response: bool = False
    api_call: dict = field(default=None)

    def __post_init__(self):
        self.expect = {"ciq.direction": DIRECTION[self.sender], **self.expect}


def _uuid_text(app: uuidlib.UUID) -> str:
    return str(app)


def command(sender, cmd, body, **expect):
    """A command packet `00 cmd body`; `expect` holds the fields beyond kind and command id."""
    fields = {"ciq.kind": "command", "ciq.command": cmd}
    fields.update(expect)
    return Step(sender, bytes([0x00, cmd]) + body, fields)


def connect_request(app, flags=0x01):
    return command(PHONE, CMD_CONNECT, app.bytes + bytes([flags]),
                   **{"ciq.app_uuid": _uuid_text(app), "ciq.flags": flags})


def connect_answer(status, app, conn, flags=None):
    """`flags=None` cuts the answer to 20 bytes (no flags byte: flags 0)."""
    body = bytes([status]) + app.bytes + bytes([conn]) + (b"" if flags is None else bytes([flags]))
    expect = {"ciq.status": status, "ciq.app_uuid": _uuid_text(app), "ciq.conn": conn,
              "ciq.flags": 0 if flags is None else flags}
    return command(WATCH, CMD_CONNECT, body, **expect)


def disconnect_request(conn):
    return command(PHONE, CMD_DISCONNECT, bytes([conn]), **{"ciq.conn": conn})


def disconnect_answer(status, conn):
    return command(WATCH, CMD_DISCONNECT, bytes([status, conn]), **{"ciq.status": status, "ciq.conn": conn})


def watch_opens(app, conn):
    return command(WATCH, CMD_WATCH_OPENS, app.bytes + bytes([conn]),
                   **{"ciq.app_uuid": _uuid_text(app), "ciq.conn": conn})


def watch_opens_answer(conn):
    return command(PHONE, CMD_WATCH_OPENS, bytes([0x00, conn]), **{"ciq.status": 0, "ciq.conn": conn})


def watch_closes(conn):
    return command(WATCH, CMD_WATCH_CLOSES, bytes([conn]), **{"ciq.conn": conn})


def watch_closes_answer(status, conn):
    return command(PHONE, CMD_WATCH_CLOSES, bytes([status, conn]), **{"ciq.status": status, "ciq.conn": conn})


def app_info_request(app):
    return command(PHONE, CMD_APP_INFO, app.bytes, **{"ciq.app_uuid": _uuid_text(app)})


def app_info_answer(app, version):
    step = command(WATCH, CMD_APP_INFO, app.bytes + struct.pack("<H", version),
                   **{"ciq.app_uuid": _uuid_text(app), "ciq.version": version})
    if version == 0xFFFF:
        step.experts = ("ciq.not_installed",)
    return step


def open_app_request(app):
    return command(PHONE, CMD_OPEN_APP, app.bytes, **{"ciq.app_uuid": _uuid_text(app)})


def open_app_answer(app, code):
    return command(WATCH, CMD_OPEN_APP, app.bytes + bytes([code]),
                   **{"ciq.app_uuid": _uuid_text(app), "ciq.open_app_code": code})


def control(sender, conn, ctl, body, **expect):
    """A transfer control packet `F·conn ctl body`."""
    fields = {"ciq.kind": "control", "ciq.control": ctl, "ciq.conn": conn}
    fields.update(expect)
    return Step(sender, bytes([0xF0 | conn, ctl]) + body, fields)


def first(sender, conn, flags, length):
    return control(sender, conn, CTL_FIRST, bytes([flags]) + struct.pack("<I", length),
                   **{"ciq.transfer_flags": flags, "ciq.length": length})


def last(sender, conn, seq, crc):
    return control(sender, conn, CTL_LAST, bytes([seq]) + struct.pack("<H", crc),
                   **{"ciq.seq": seq, "ciq.crc": crc})


def ack(sender, conn, ack_type, status, seq):
    return control(sender, conn, CTL_ACK, bytes([ack_type, status, seq]),
                   **{"ciq.ack_type": ack_type, "ciq.ack_status": status, "ciq.seq": seq})


def ack_request(sender, conn, seq):
    return control(sender, conn, CTL_ACK_REQUEST, bytes([seq]), **{"ciq.seq": seq})


def capabilities(sender, conn, body):
    return control(sender, conn, CTL_CAPABILITIES, body, **{"ciq.control_data": body})


def key_packet(sender, conn, key, is_response):
    return control(sender, conn, CTL_KEY, key + bytes([is_response]),
                   **{"ciq.key": key, "ciq.is_response": is_response})


def key_request(sender, conn):
    return control(sender, conn, CTL_KEY_REQUEST, b"")


def data(sender, seq, conn, payload):
    if not 0 <= seq <= 14 or not 1 <= conn <= 15:
        raise ValueError(f"data packets need seq 0-14 and conn 1-15, got seq {seq} conn {conn}")
    return Step(sender, bytes([seq << 4 | conn]) + payload,
                {"ciq.kind": "data", "ciq.seq": seq, "ciq.conn": conn, "ciq.payload": payload})


def data_packets(sender, conn, buffer, size):
    """Split `buffer` into data packets of `size` bytes, seq k mod 15; returns (steps, last seq)."""
    chunks = [buffer[i:i + size] for i in range(0, len(buffer), size)]
    return [data(sender, k % WINDOW, conn, chunk) for k, chunk in enumerate(chunks)], (len(chunks) - 1) % WINDOW


def flagged(step, *experts):
    """Mark a step as one the dissector must flag with `experts` (expert info field names)."""
    step.experts = experts
    return step


def malformed(step):
    """Mark a step as one the dissector must flag as malformed."""
    return flagged(step, "ciq.malformed")


# --------------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------------

#: The plain message the watch sends (the "Hello, world!" test vector of docs/connectiq-link.md).
INBOUND_MESSAGE = serialize_monkeyc_string("Hello, world!")
#: The phone's message: a 2900-character string, 2924 serialized bytes, 16 large data packets.
OUTBOUND_TEXT = ("Tether records Connect IQ traffic and replays it on a virtual clock. " * 50)[:2900]


def scenario() -> list:
    """The fixed list of Connect IQ packets, in the order they go over the air."""
    outbound = xxtea_encrypt(serialize_monkeyc_string(OUTBOUND_TEXT), OUTBOUND_KEY)
    outbound_data, outbound_last_seq = data_packets(PHONE, 1, outbound, LARGE_PAYLOAD)
    inbound_data, inbound_last_seq = data_packets(WATCH, 2, INBOUND_MESSAGE, SMALL_PAYLOAD)

    steps = [
        connect_request(LOOPBACK_APP),
        connect_answer(ST_SUCCESS, LOOPBACK_APP, 1, flags=0x01),
        app_info_request(LOOPBACK_APP),
        app_info_answer(LOOPBACK_APP, 0x0102),
        app_info_request(MISSING_APP),
        app_info_answer(MISSING_APP, 0xFFFF),
        open_app_request(LOOPBACK_APP),
        open_app_answer(LOOPBACK_APP, 3),
        # An encrypted transfer from the phone: key, first, 15 + 1 data packets, last.
        key_packet(PHONE, 1, OUTBOUND_KEY, 0),
        ack(WATCH, 1, ACK_KEY, ST_SUCCESS, 0),
        first(PHONE, 1, FLAG_ENCRYPTED, len(outbound)),
        ack(WATCH, 1, ACK_FIRST, ST_SUCCESS, 0),
        *outbound_data[:WINDOW],
        ack(WATCH, 1, ACK_DATA, ST_SUCCESS, 14),
        *outbound_data[WINDOW:],
        last(PHONE, 1, outbound_last_seq, crc16_arc(outbound)),
        ack(WATCH, 1, ACK_LAST, ST_SUCCESS, outbound_last_seq),
        ack_request(PHONE, 1, outbound_last_seq),
        ack(WATCH, 1, ACK_ACK_REQUEST, ST_SUCCESS, outbound_last_seq),
        capabilities(PHONE, 1, bytes.fromhex("01000000")),
        ack(WATCH, 1, ACK_CAPABILITIES, ST_SUCCESS, 0),
        # A transient encrypted transfer started without a key, then a key asked for.
        first(PHONE, 1, FLAG_ENCRYPTED | FLAG_TRANSIENT, 8),
        ack(WATCH, 1, ACK_FIRST, ST_NO_KEY, 0),
        key_request(PHONE, 1),
        key_packet(WATCH, 1, WATCH_KEY, 1),
        # A transfer on a connection that was never opened.
        first(PHONE, 7, FLAG_ENCRYPTED, 8),
        ack(WATCH, 7, ACK_FIRST, ST_INVALID_CONN, 0),
        # The watch opens a connection and sends a plain message on it.
        watch_opens(WATCH_APP, 2),
        watch_opens_answer(2),
        first(WATCH, 2, 0x00, len(INBOUND_MESSAGE)),
        ack(PHONE, 2, ACK_FIRST, ST_SUCCESS, 0),
        *inbound_data,
        last(WATCH, 2, inbound_last_seq, crc16_arc(INBOUND_MESSAGE)),
        ack(PHONE, 2, ACK_LAST, ST_SUCCESS, inbound_last_seq),
        watch_closes(2),
        watch_closes_answer(0, 2),
        disconnect_request(1),
        disconnect_answer(ST_SUCCESS, 1),
        # Connecting to an app the watch does not have: answer cut to 20 bytes (flags 0).
        connect_request(MISSING_APP),
        connect_answer(1, MISSING_APP, 0),
        # Packets the dissector must flag.
        flagged(Step(WATCH, bytes.fromhex("0009aabb"),
                     {"ciq.kind": "command", "ciq.command": 9, "ciq.command_data": bytes.fromhex("aabb")}),
                "ciq.unknown"),
        flagged(Step(WATCH, bytes.fromhex("f10901020304"),
                     {"ciq.kind": "control", "ciq.control": 9, "ciq.conn": 1,
                      "ciq.control_data": bytes.fromhex("01020304")}),
                "ciq.unknown"),
        flagged(ack(WATCH, 1, ACK_DATA, 9, 0), "ciq.unknown_status"),
        flagged(disconnect_answer(5, 1), "ciq.unknown_status"),
        flagged(Step(WATCH, ack(WATCH, 1, ACK_DATA, ST_SUCCESS, 14).value + b"\xff",
                     ack(WATCH, 1, ACK_DATA, ST_SUCCESS, 14).expect), "ciq.trailing_bytes"),
        flagged(Step(PHONE, bytes.fromhex("10aa"),
                     {"ciq.kind": "data", "ciq.seq": 1, "ciq.conn": 0, "ciq.payload": b"\xaa"}),
                "ciq.conn_zero"),
        flagged(Step(PHONE, bytes.fromhex("21"), {"ciq.kind": "data", "ciq.seq": 2, "ciq.conn": 1}),
                "ciq.empty_data"),
        malformed(Step(PHONE, bytes.fromhex("00010180e5"), {"ciq.kind": "command", "ciq.command": CMD_CONNECT})),
        malformed(Step(WATCH, bytes.fromhex("f10100"), {"ciq.kind": "control", "ciq.control": CTL_LAST,
                                                        "ciq.conn": 1, "ciq.seq": 0})),
        malformed(Step(PHONE, bytes.fromhex("00"), {"ciq.kind": "command"})),
        malformed(Step(WATCH, bytes.fromhex("f3"), {"ciq.kind": "control", "ciq.conn": 3})),
    ]
    # The key packet goes as a Write Request, everything else the phone writes as a Write Command.
    steps[8].with_response = True
    # API calls the app made, recorded next to the packets they caused.
    steps[2].api_call = {"call": "getAppStatus", "app": str(LOOPBACK_APP), "id": 1}
    steps[4].api_call = {"call": "getAppStatus", "app": str(MISSING_APP), "id": 2}
    steps[6].api_call = {"call": "openApp", "app": str(LOOPBACK_APP), "id": 3}
    steps[8].api_call = {"call": "send", "app": str(LOOPBACK_APP), "id": 4, "note": "caf\u00e9 \"2900 chars\""}
    return steps


# --------------------------------------------------------------------------------------------
# Recording with Bumble
# --------------------------------------------------------------------------------------------


def _now_us() -> int:
    """Microseconds since the Unix epoch (the clock BtSnooper stamps its records with)."""
    return int(datetime.datetime.now(tz=datetime.timezone.utc).timestamp() * 1_000_000)


async def _exchange(steps, gatt, snoop_file):
    """Play `steps` between a Bumble phone and watch; returns [(time_us, api_call)]."""
    # Imported here so that the builders above can be used without Bumble installed.
    from bumble.core import UUID
    from bumble.gatt import Characteristic, CharacteristicValue, Service
    from bumble.link import LocalLink

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "rigs"))
    from bumble_local import connect_with_mtu, make_device

    link = LocalLink()
    watch = make_device(link, "watch", WATCH_ADDRESS, None)
    phone = make_device(link, "phone", PHONE_ADDRESS, snoop_file)

    writes = asyncio.Queue()
    notifications = asyncio.Queue()
    write_characteristic = Characteristic(
        UUID(gatt.write),
        Characteristic.Properties.WRITE | Characteristic.Properties.WRITE_WITHOUT_RESPONSE,
        Characteristic.WRITEABLE,
        CharacteristicValue(write=lambda _connection, value: writes.put_nowait(bytes(value))),
    )
    notify_characteristic = Characteristic(
        UUID(gatt.notify),
        Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
        Characteristic.READABLE,
        NOTIFY_READ_VALUE,
    )
    watch.add_service(Service(UUID(gatt.service), [write_characteristic, notify_characteristic]))

    # The Connect IQ link needs an ATT MTU of at least 195 (docs/connectiq-link.md).
    connection, watch_connection, peer, mtu = await connect_with_mtu(watch, phone, ATT_MTU, 195)
    await peer.discover_services()
    services = [s for s in peer.services if s.uuid == UUID(gatt.service)]
    if not services:
        raise RuntimeError(f"service {gatt.service} not discovered")
    await services[0].discover_characteristics()
    by_uuid = {c.uuid: c for c in services[0].characteristics}
    if UUID(gatt.write) not in by_uuid or UUID(gatt.notify) not in by_uuid:
        raise RuntimeError(f"characteristics {gatt.write} / {gatt.notify} not both discovered")
    write_proxy = by_uuid[UUID(gatt.write)]
    notify_proxy = by_uuid[UUID(gatt.notify)]
    await notify_proxy.discover_descriptors()
    await notify_proxy.subscribe(lambda value: notifications.put_nowait(bytes(value)))
    read = bytes(await notify_proxy.read_value())
    if read != NOTIFY_READ_VALUE:
        raise RuntimeError(f"read of the notify characteristic gave {read.hex()}, expected {NOTIFY_READ_VALUE.hex()}")

    api_records = []
    for index, step in enumerate(steps):
        if step.api_call is not None:
            api_records.append((_now_us(), step.api_call))
        if step.sender == PHONE:
            await write_proxy.write_value(step.value, with_response=step.with_response)
            got = await asyncio.wait_for(writes.get(), TIMEOUT_S)
        else:
            await watch.notify_subscriber(watch_connection, notify_characteristic, step.value)
            got = await asyncio.wait_for(notifications.get(), TIMEOUT_S)
        if got != step.value:
            raise RuntimeError(f"step {index}: sent {step.value.hex()}, the other side got {got.hex()}")

    await connection.disconnect()
    return api_records


def record_btsnoop(path, steps, gatt):
    """Run the exchange, writing the phone's HCI traffic to `path` (btsnoop); returns API records."""
    with open(path, "wb") as snoop_file:
        return asyncio.run(asyncio.wait_for(_exchange(steps, gatt, snoop_file), TIMEOUT_S))


# --------------------------------------------------------------------------------------------
# btsnoop reading and pcapng writing
# --------------------------------------------------------------------------------------------

#: Microseconds from 0000-01-01 (the btsnoop epoch) to 1970-01-01.
BTSNOOP_UNIX_OFFSET_US = 0x00DCDDB30F2F8000


def read_btsnoop(path):
    """Records of an H4 btsnoop file as (unix time in µs, received: bool, H4 packet bytes)."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != b"btsnoop\x00" or len(blob) < 16:
        raise ValueError(f"{path}: not a btsnoop file")
    version, datalink = struct.unpack(">II", blob[8:16])
    if version != 1 or datalink != 1002:
        raise ValueError(f"{path}: expected btsnoop version 1 with datalink 1002 (H4), got {version}/{datalink}")
    records = []
    offset = 16
    while offset + 24 <= len(blob):
        _orig, incl, flags, _drops, ts = struct.unpack(">IIIIq", blob[offset:offset + 24])
        packet = blob[offset + 24:offset + 24 + incl]
        if len(packet) != incl:
            raise ValueError(f"{path}: record at offset {offset} is cut short")
        records.append((ts - BTSNOOP_UNIX_OFFSET_US, bool(flags & 1), packet))
        offset += 24 + incl
    return records


def _block(block_type, body):
    body += bytes(-len(body) % 4)
    length = 12 + len(body)
    return struct.pack("<II", block_type, length) + body + struct.pack("<I", length)


def write_pcapng(path, linktypes, packets):
    """Write a pcapng file: one interface per entry of `linktypes` (µs timestamps),
    `packets` as (interface index, unix time µs, bytes), written in time order."""
    out = [_block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))]
    for linktype in linktypes:
        out.append(_block(0x00000001, struct.pack("<HHI", linktype, 0, 0)))
    for interface, time_us, payload in sorted(packets, key=lambda p: p[1]):
        header = struct.pack("<IIIII", interface, time_us >> 32, time_us & 0xFFFFFFFF, len(payload), len(payload))
        out.append(_block(0x00000006, header + payload))
    with open(path, "wb") as f:
        f.write(b"".join(out))


def api_frame(call: dict) -> bytes:
    """One USER0 frame: the API call as compact UTF-8 JSON."""
    return json.dumps(call, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def btsnoop_to_pcapng(btsnoop_path, pcapng_path, api_records):
    """HCI records on interface 0 (H4 with 4-byte big-endian direction header, 0 sent, 1
    received) and API calls on interface 1 (USER0)."""
    packets = [(0, t, struct.pack(">I", 1 if received else 0) + h4)
               for t, received, h4 in read_btsnoop(btsnoop_path)]
    packets += [(1, t, api_frame(call)) for t, call in api_records]
    write_pcapng(pcapng_path, [LINKTYPE_H4_WITH_PHDR, LINKTYPE_USER0], packets)


def make_capture(path, legacy=False, steps=None):
    """Record the scenario (or `steps`) into `path`, btsnoop or pcapng by extension.
    Returns the steps that were played."""
    steps = scenario() if steps is None else steps
    gatt = LEGACY_GATT if legacy else CURRENT_GATT
    if path.endswith(".btsnoop"):
        record_btsnoop(path, steps, gatt)
    elif path.endswith(".pcapng"):
        with tempfile.TemporaryDirectory() as tmp:
            snoop = os.path.join(tmp, "phone.btsnoop")
            api_records = record_btsnoop(snoop, steps, gatt)
            btsnoop_to_pcapng(snoop, path, api_records)
    else:
        raise ValueError(f"{path}: the output name must end in .btsnoop or .pcapng")
    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="capture to write: NAME.btsnoop or NAME.pcapng")
    parser.add_argument("--legacy", action="store_true", help="use the legacy Connect IQ GATT UUIDs")
    args = parser.parse_args()
    try:
        make_capture(args.output, legacy=args.legacy)
    except Exception as error:  # every failure ends the script with its reason
        print(f"make_ciq_capture: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
