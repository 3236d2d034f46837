#!/usr/bin/env python3
"""Record a Tether session link exchange between two Bumble devices, for sessionlink.lua.

Two Bumble hosts, each on its own virtual controller, share one in-process radio
(bumble.link.LocalLink): no kernel Bluetooth and no radio are needed. The "watch" is a GATT
server with the session link service of docs/session-link.md (write characteristic: write
without response, and write so that one step can go as a Write Request; notify characteristic:
notify). The "phone" connects, raises the ATT MTU to 247 (maxPayload 244), discovers the
service, its characteristics and the notify characteristic's descriptors, subscribes, and plays
the fixed scenario of `scenario()`: every phone frame is an ATT write to the write characteristic
(a Write Command, or a Write Request where the step says so), every watch frame a Handle Value
Notification. Each step waits until the other side has received exactly the bytes sent, so the
order in the capture is the order of the scenario. The GATT service is Harness/rigs/session_gatt.py's;
the devices and the connection come from Harness/rigs/bumble_local.py.

The frames are built with Harness/rigs/session_link.py. The scenario carries every test vector
of docs/session-link.md in its direction (HELLO, WELCOME, the context, the four frames of the
fragmented message, its ACK and ERROR 7011, the file metadata and its three chunks), then ACKs
(complete and partial), STATUS and STATUS-ACK, user info and complication items, a message with
a reply, a message-data item given up with CANCEL, a zero-length item, a resumed and a
retransmitted file chunk, a control item fragmented over two frames, and frames the dissector
must flag (short, reserved or misplaced flags, unknown channel, control items of the wrong
length or op, inconsistent lengths, too large, undecodable or non-property-list dictionaries,
unknown error code, another version, wrong direction, a reply or file metadata cut before its u32).

Every step states the dissector fields it must produce (`Step.expect`), the expert infos it
must raise (`Step.experts`, and no others) and its Info column line (`Step.info`); the script
writes them as JSON next to the capture, and test_sessionlink_lua.py checks tshark against them.

Output, chosen by the capture name's extension:
  *.btsnoop  the phone's HCI traffic as Bumble's BtSnooper writes it (H4, datalink 1002)
  *.pcapng   the same packets (LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR, 201)
and EXPECTED (default: the capture name + ".expected.json"): a JSON list, one object per frame
in capture order: index, sender, direction, att_opcode, value (hex), fields (name -> value;
integers, strings, booleans, byte fields as hex), experts, info, vector (the name of the test
vector of docs/session-link.md the frame is, or null).

Usage:
    python3 make_session_capture.py OUT.btsnoop|OUT.pcapng [--expected EXPECTED.json] [--fuzz SEED]

--fuzz SEED records random and mutated frames instead (no field expectations: the test only
checks that each is dissected without a Lua error). Exits 0 when every step of the exchange
succeeded, 1 otherwise (with the reason on stderr).
"""

import argparse
import asyncio
import json
import os
import random
import struct
import sys
import tempfile
import uuid as uuidlib
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
RIGS = os.path.join(os.path.dirname(HERE), "rigs")
sys.path.insert(0, RIGS)
sys.path.insert(0, HERE)

import ciq_link  # noqa: E402  (Harness/rigs, on the path set just above)
import session_link as sl  # noqa: E402
from make_ciq_capture import read_btsnoop, write_pcapng  # noqa: E402

# --------------------------------------------------------------------------------------------
# Constants
# --------------------------------------------------------------------------------------------

PHONE = "phone"
WATCH = "watch"
DIRECTION = {PHONE: "phone→watch", WATCH: "watch→phone"}

ATT_WRITE_REQUEST, ATT_WRITE_COMMAND, ATT_NOTIFICATION = 0x12, 0x52, 0x1B

#: The identities of the test vectors (session-link.md, "Test vectors").
PHONE_ID = uuidlib.UUID("0ff1ce00-0000-4000-8000-000000000001")
WATCH_ID = uuidlib.UUID("0ff1ce00-0000-4000-8000-0000000000a1")

WATCH_ADDRESS = "F0:F0:F0:F0:F0:F0"
PHONE_ADDRESS = "F1:F1:F1:F1:F1:F1"
ATT_MTU = 247
MAX_PAYLOAD = ATT_MTU - 3
#: The smallest link (BLE's minimum MTU 23): the fragmented vectors use it.
SMALL = 20
TIMEOUT_S = 30.0
LINKTYPE_H4_WITH_PHDR = 201

# --------------------------------------------------------------------------------------------
# Steps and the fields they must produce
# --------------------------------------------------------------------------------------------


@dataclass
class Step:
    """One ATT value of the scenario.

    sender: PHONE (ATT write to the write characteristic) or WATCH (notification).
    value: the ATT value, one frame.
    expect: dissector field name -> value (int, str, bool or bytes) tshark must show; the frame
        must show no other `tsl.` field (None: not checked, for fuzz frames).
    experts: the expert infos (by field name) the dissector must raise, and no others.
    info: the Info column line.
    with_response: a phone write goes as a Write Request instead of a Write Command.
    vector: the name of the docs/session-link.md test vector this frame is.
    """

    sender: str
    value: bytes
    expect: dict = None
    experts: tuple = ()
    info: str = None
    with_response: bool = False
    vector: str = None

    @property
    def att_opcode(self):
        if self.sender == WATCH:
            return ATT_NOTIFICATION
        return ATT_WRITE_REQUEST if self.with_response else ATT_WRITE_COMMAND

    def to_json(self, index):
        def plain(value):
            return value.hex() if isinstance(value, (bytes, bytearray)) else value

        return {
            "index": index, "sender": self.sender, "direction": DIRECTION[self.sender],
            "att_opcode": self.att_opcode, "value": self.value.hex(),
            "fields": None if self.expect is None else {k: plain(v) for k, v in self.expect.items()},
            "experts": list(self.experts), "info": self.info, "vector": self.vector,
            "with_response": self.with_response,
        }


FLAG_FIELDS = (
    ("tsl.flags.first", sl.FIRST), ("tsl.flags.last", sl.LAST), ("tsl.flags.needs_ack", sl.NEEDS_ACK),
    ("tsl.flags.retransmission", sl.RETRANSMISSION), ("tsl.flags.expects_reply", sl.EXPECTS_REPLY),
    ("tsl.flags.current_complication", sl.CURRENT_COMPLICATION), ("tsl.flags.reserved", sl.RESERVED),
)
STATUS_FIELDS = (
    ("tsl.control.status.paired", sl.PAIRED), ("tsl.control.status.installed", sl.INSTALLED),
    ("tsl.control.status.complication", sl.COMPLICATION), ("tsl.control.status.reachable", sl.REACHABLE),
    ("tsl.control.status.activated", sl.ACTIVATED),
)


def header_fields(sender, value):
    """The frame-level fields of a frame of at least 10 bytes, read from the builder's bytes."""
    channel, flags, item_id, total_or_offset = struct.unpack_from("<BBII", value)
    fields = {"tsl.direction": DIRECTION[sender], "tsl.channel": channel, "tsl.flags": flags, "tsl.id": item_id,
              "tsl.total" if flags & sl.FIRST else "tsl.offset": total_or_offset}
    fields.update({name: bool(flags & bit) for name, bit in FLAG_FIELDS})
    if len(value) > sl.HEADER_LENGTH:
        fields["tsl.data"] = bytes(value[sl.HEADER_LENGTH:])
    return fields


def step(sender, value, info, experts=(), vector=None, with_response=False, **extra):
    """A step whose fields are the header's plus `extra` (`tsl_x_y=` for `tsl.x.y`)."""
    fields = header_fields(sender, value)
    fields.update({name.replace("__", ".").replace("tsl_", "tsl.", 1): v for name, v in extra.items()})
    return Step(sender, value, fields, tuple(experts), info, with_response, vector)


def one_frame(frames):
    if len(frames) != 1:
        raise ValueError(f"expected the item in one frame, it took {len(frames)}")
    return frames[0]


def status_fields(status):
    fields = {"tsl.control.status": status}
    fields.update({name: bool(status & bit) for name, bit in STATUS_FIELDS})
    return fields


def handshake_step(sender, control_id, op, hs, info, vector=None, experts=()):
    value = one_frame(sl.control_frames(control_id, hs.encode(op), MAX_PAYLOAD))
    s = step(sender, value, info, experts, vector)
    s.expect.update({
        "tsl.control.op": op, "tsl.control.version": hs.version, "tsl.control.identity": str(hs.identity),
        "tsl.control.incarnation": hs.incarnation, "tsl.control.epoch": hs.epoch, "tsl.control.nonce": hs.nonce,
        "tsl.control.watermark.context": hs.watermark_context,
        "tsl.control.watermark.user_info": hs.watermark_user_info,
        "tsl.control.watermark.complication": hs.watermark_complication,
        "tsl.control.watermark.file": hs.watermark_file,
        "tsl.control.resume_id": hs.resume_id, "tsl.control.resume_offset": hs.resume_offset,
        **status_fields(hs.status),
    })
    return s


def ack_step(sender, control_id, channel, item_id, received, vector=None, max_payload=MAX_PAYLOAD):
    value = one_frame(sl.control_frames(control_id, sl.ack(channel, item_id, received), max_payload))
    state = "complete" if received == sl.COMPLETE else f"received={received}"
    s = step(sender, value, f"ACK {sl.channel_text(channel)} {item_id} {state}", vector=vector)
    s.expect.update({"tsl.control.op": sl.Op.ACK, "tsl.control.channel": channel, "tsl.control.id": item_id,
                     "tsl.control.received": received})
    return s


def error_step(sender, control_id, channel, item_id, code, vector=None, max_payload=MAX_PAYLOAD):
    value = one_frame(sl.control_frames(control_id, sl.error(channel, item_id, code), max_payload))
    name = sl.ERROR_NAMES.get(code, "unknown")
    s = step(sender, value, f"ERROR {sl.channel_text(channel)} {item_id} {code} {name}", vector=vector,
             experts=() if code in sl.ERROR_NAMES else ("tsl.unknown_error_code",))
    s.expect.update({"tsl.control.op": sl.Op.ERROR, "tsl.control.channel": channel, "tsl.control.id": item_id,
                     "tsl.control.code": code})
    return s


def data_steps(sender, channel, item_id, payload, max_payload, extra_flags=0, infos=(), vector=None, **extra):
    """The frames of one data item; `infos` are their Info lines; `extra` goes on the first frame."""
    frames = sl.fragment(channel, item_id, payload, max_payload, extra_flags)
    if len(frames) != len(infos):
        raise ValueError(f"{len(frames)} frames but {len(infos)} Info lines")
    steps = [step(sender, value, info, vector=vector) for value, info in zip(frames, infos)]
    steps[0].expect.update({name.replace("__", ".").replace("tsl_", "tsl.", 1): v for name, v in extra.items()})
    return steps


def dict_step(sender, channel, item_id, value, text, flags_text, extra_flags=0, vector=None):
    """A whole dictionary item in one frame, FIRST|LAST|NEEDS-ACK plus `extra_flags`."""
    payload = sl.dictionary(value)
    frame = one_frame(sl.fragment(channel, item_id, payload, MAX_PAYLOAD, extra_flags))
    info = f"{sl.channel_text(channel)} {item_id} [{flags_text}] total={len(payload)} {clip(text)}"
    s = step(sender, frame, info, vector=vector)
    s.expect["tsl.value"] = text
    return s


def clip(text, limit=80):
    """The dissector's Info form of a long value: the first `limit` bytes and "…"."""
    raw = text.encode("utf-8")
    if len(raw) <= limit:
        return text
    cut = limit
    while cut > 0 and 0x80 <= raw[cut] < 0xC0:
        cut -= 1
    return raw[:cut].decode("utf-8") + "…"


def flagged(s, *experts, info=None):
    """Mark a step as one the dissector must flag with `experts` (expert info field names)."""
    s.experts = experts
    if info is not None:
        s.info = info
    return s


def raw_step(sender, value, info, experts, **extra):
    """A frame built by hand (malformed ones): header fields when 10 bytes are there."""
    if len(value) >= sl.HEADER_LENGTH:
        fields = header_fields(sender, value)
    else:
        fields = {"tsl.direction": DIRECTION[sender]}
        if len(value) >= 1:
            fields["tsl.channel"] = value[0]
        if len(value) >= 2:
            fields["tsl.flags"] = value[1]
    fields.update({name.replace("__", ".").replace("tsl_", "tsl.", 1): v for name, v in extra.items()})
    return Step(sender, value, fields, tuple(experts), info)


# --------------------------------------------------------------------------------------------
# The scenario
# --------------------------------------------------------------------------------------------

HELLO = sl.Handshake(PHONE_ID, 0x11223344, 0x55667788, 0x0BADCAFE,
                     sl.PAIRED | sl.INSTALLED | sl.REACHABLE | sl.ACTIVATED)
WELCOME = sl.Handshake(WATCH_ID, 0x99AABBCC, 0x01020304, 0x0BADCAFE,
                       sl.PAIRED | sl.INSTALLED | sl.REACHABLE | sl.ACTIVATED,
                       watermark_user_info=3, watermark_file=1, resume_id=2, resume_offset=40)
#: The re-handshake: a new nonce and epoch (the phone's session activated again), watermarks.
HELLO_AGAIN = sl.Handshake(PHONE_ID, 0x11223344, 0x0C0FFEE0, 0x12345678,
                           sl.PAIRED | sl.INSTALLED | sl.REACHABLE | sl.ACTIVATED,
                           watermark_context=0, watermark_user_info=0, watermark_complication=0, watermark_file=0)
WELCOME_AGAIN = sl.Handshake(WATCH_ID, 0x99AABBCC, 0x01020304, 0x12345678,
                             sl.PAIRED | sl.INSTALLED | sl.ACTIVATED,
                             watermark_context=0, watermark_user_info=4, watermark_complication=5, watermark_file=2)
FLAGS_FLNA = "FIRST|LAST|NEEDS-ACK"
FILE_TEXT = b"abcdefghijklmnopqrstuvwxyz"
#: File 2, which the WELCOME says the watch holds 40 bytes of.
FILE2 = bytes(range(0x30, 0x30 + 48))

USER_INFO = {"big": 5000000000, "blob": b"\x01\xff", "count": 3, "f": ciq_link.Float32(1.5),
             "list": [1, "two", [3.5]], "name": "Zo\u00eb \"q\"\n", "nested": {"k": False}, "ok": True}
USER_INFO_TEXT = ('{"big": 5000000000l, "blob": [0x01, 0xff]b, "count": 3, "f": 1.5f, '
                  '"list": [1, "two", [3.5]], "name": "Zo\u00eb \\"q\\"\\n", "nested": {"k": false}, "ok": true}')
COMPLICATION_INFO = {"huge": 1e16, "neg": -2.0, "ratio": 0.25, "temp": 21, "tiny": 1e-05, "whole": 100.0}
COMPLICATION_TEXT = '{"huge": 1e+16, "neg": -2.0, "ratio": 0.25, "temp": 21, "tiny": 1e-05, "whole": 100.0}'


def scenario() -> list:
    """The fixed list of frames, in the order they go over the air."""
    hello = handshake_step(PHONE, 1, sl.Op.HELLO, HELLO,
                           "HELLO epoch=0x55667788 nonce=0x0badcafe identity=0ff1ce00-0000-4000-8000-000000000001",
                           vector="HELLO")
    welcome = handshake_step(WATCH, 1, sl.Op.WELCOME, WELCOME,
                             "WELCOME epoch=0x01020304 nonce=0x0badcafe identity=0ff1ce00-0000-4000-8000-0000000000a1",
                             vector="WELCOME")
    message = data_steps(PHONE, sl.Channel.MESSAGE, 1, sl.dictionary({"hr": 72}), SMALL, sl.EXPECTS_REPLY, infos=[
        "message 1 [FIRST|EXPECTS-REPLY] total=36",
        "message 1 [EXPECTS-REPLY] offset=10",
        "message 1 [EXPECTS-REPLY] offset=20",
        "message 1 [LAST|NEEDS-ACK|EXPECTS-REPLY] offset=30",
    ], vector="fragmented message")
    context = dict_step(PHONE, sl.Channel.CONTEXT, 1, {"a": "b", "b": [1, 2]}, '{"a": "b", "b": [1, 2]}',
                        FLAGS_FLNA, vector="context")
    metadata = data_steps(PHONE, sl.Channel.FILE_METADATA, 1, sl.file_metadata_payload(len(FILE_TEXT)), SMALL,
                          infos=["file-metadata 1 [FIRST|LAST|NEEDS-ACK] total=4 size=26"], vector="file",
                          tsl_file_size=26)
    chunks = data_steps(PHONE, sl.Channel.FILE_CHUNK, 1, FILE_TEXT, SMALL, infos=[
        "file-chunk 1 [FIRST] total=26", "file-chunk 1 offset=10", "file-chunk 1 [LAST|NEEDS-ACK] offset=20",
    ], vector="file")

    user_info = dict_step(PHONE, sl.Channel.USER_INFO, 4, USER_INFO, USER_INFO_TEXT, FLAGS_FLNA)
    complication = dict_step(PHONE, sl.Channel.COMPLICATION, 5, COMPLICATION_INFO, COMPLICATION_TEXT,
                             "FIRST|LAST|NEEDS-ACK|CURRENT-COMPLICATION", sl.CURRENT_COMPLICATION)
    question = dict_step(PHONE, sl.Channel.MESSAGE, 2, {"q": "time?"}, '{"q": "time?"}',
                         "FIRST|LAST|NEEDS-ACK|EXPECTS-REPLY", sl.EXPECTS_REPLY)
    answer_payload = sl.reply_payload(2, sl.dictionary({"time": "12:00"}))
    answer = data_steps(WATCH, sl.Channel.REPLY, 1, answer_payload, MAX_PAYLOAD, infos=[
        f'reply 1 [FIRST|LAST|NEEDS-ACK] total={len(answer_payload)} in-reply-to=2 {{"time": "12:00"}}',
    ], tsl_in_reply_to=2, tsl_value='{"time": "12:00"}')
    data_reply_payload = sl.reply_payload(7, b"\x00\x01raw")
    data_reply = data_steps(WATCH, sl.Channel.REPLY, 2, data_reply_payload, MAX_PAYLOAD, infos=[
        f"reply 2 [FIRST|LAST|NEEDS-ACK] total={len(data_reply_payload)} in-reply-to=7",
    ], tsl_in_reply_to=7)
    given_up = data_steps(PHONE, sl.Channel.MESSAGE_DATA, 3, bytes(range(256)) + bytes(44), MAX_PAYLOAD,
                          infos=["message-data 3 [FIRST] total=300", "message-data 3 [LAST|NEEDS-ACK] offset=234"])
    empty = data_steps(PHONE, sl.Channel.MESSAGE_DATA, 4, b"", MAX_PAYLOAD,
                       infos=["message-data 4 [FIRST|LAST|NEEDS-ACK] total=0"])
    named_payload = sl.file_metadata_payload(5, {"name": "log.txt"})
    named_file = data_steps(PHONE, sl.Channel.FILE_METADATA, 3, named_payload, MAX_PAYLOAD, infos=[
        f'file-metadata 3 [FIRST|LAST|NEEDS-ACK] total={len(named_payload)} size=5 {{"name": "log.txt"}}',
    ], tsl_file_size=5, tsl_value='{"name": "log.txt"}')
    resumed_value = sl.fragment(sl.Channel.FILE_CHUNK, 2, FILE2, MAX_PAYLOAD, start=40)[0]
    resumed = [step(PHONE, resumed_value, "file-chunk 2 [LAST|NEEDS-ACK] offset=40")]
    retransmitted_value = sl.fragment(sl.Channel.FILE_CHUNK, 2, FILE2, MAX_PAYLOAD, sl.RETRANSMISSION, start=40)[0]
    hello_frames = sl.control_frames(5, sl.hello(HELLO_AGAIN), 40)
    if len(hello_frames) != 2:
        raise ValueError("the re-handshake HELLO is meant to take two frames")

    steps = [
        hello,
        welcome,
        *message,
        ack_step(WATCH, 2, sl.Channel.MESSAGE, 1, sl.COMPLETE, vector="ACK", max_payload=SMALL),
        error_step(WATCH, 3, sl.Channel.MESSAGE, 1, 7011, vector="ERROR", max_payload=SMALL),
        context,
        ack_step(WATCH, 4, sl.Channel.CONTEXT, 1, sl.COMPLETE),
        *metadata,
        ack_step(WATCH, 5, sl.Channel.FILE_METADATA, 1, sl.COMPLETE),
        *chunks,
        ack_step(WATCH, 6, sl.Channel.FILE_CHUNK, 1, sl.COMPLETE),
        # The watch's flags change: STATUS until a STATUS-ACK (sent as a Write Request here).
        step(WATCH, one_frame(sl.control_frames(7, sl.status(1, 0x1F))),
             "STATUS 1 paired|installed|complication|reachable|activated",
             tsl_control__op=sl.Op.STATUS, tsl_control__sequence=1, **_status_kwargs(0x1F)),
        step(PHONE, one_frame(sl.control_frames(2, sl.status_ack(1))), "STATUS-ACK 1", with_response=True,
             tsl_control__op=sl.Op.STATUS_ACK, tsl_control__sequence=1),
        user_info,
        ack_step(WATCH, 8, sl.Channel.USER_INFO, 4, sl.COMPLETE),
        complication,
        ack_step(WATCH, 9, sl.Channel.COMPLICATION, 5, sl.COMPLETE),
        question,
        ack_step(WATCH, 10, sl.Channel.MESSAGE, 2, sl.COMPLETE),
        *answer,
        ack_step(PHONE, 3, sl.Channel.REPLY, 1, sl.COMPLETE),
        *data_reply,
        # A message-data item given up after its first frame.
        given_up[0],
        step(PHONE, one_frame(sl.control_frames(4, sl.cancel(sl.Channel.MESSAGE_DATA, 3))), "CANCEL message-data 3",
             tsl_control__op=sl.Op.CANCEL, tsl_control__channel=sl.Channel.MESSAGE_DATA, tsl_control__id=3),
        *empty,
        ack_step(WATCH, 11, sl.Channel.MESSAGE_DATA, 4, sl.COMPLETE),
        *named_file,
        # File 2 resumed at the offset the WELCOME named; the ACK is lost, the frame goes again.
        ack_step(WATCH, 12, sl.Channel.FILE_CHUNK, 2, 40),
        *resumed,
        step(PHONE, retransmitted_value, "file-chunk 2 [LAST|NEEDS-ACK|RETRANSMISSION] offset=40"),
        ack_step(WATCH, 13, sl.Channel.FILE_CHUNK, 2, sl.COMPLETE),
        # A re-handshake whose HELLO is fragmented over two frames (not decoded: no whole item).
        step(PHONE, hello_frames[0], "control 5 [FIRST] total=55"),
        step(PHONE, hello_frames[1], "control 5 [LAST] offset=30"),
        handshake_step(WATCH, 14, sl.Op.WELCOME, WELCOME_AGAIN,
                       "WELCOME epoch=0x01020304 nonce=0x12345678 identity=0ff1ce00-0000-4000-8000-0000000000a1"),
        *flagged_steps(),
    ]
    return steps


def _status_kwargs(status):
    return {name.replace(".", "__"): value for name, value in status_fields(status).items()}


def flagged_steps() -> list:
    """Frames the dissector must flag, each with its expert infos."""
    ctl = sl.Channel.CONTROL
    small_dict = sl.dictionary({"x": 1})
    steps = [
        # Shorter than the 10-byte header.
        raw_step(PHONE, bytes.fromhex("0103010000"), "malformed frame (5 of the header's 10 bytes)",
                 ["tsl.malformed_frame"]),
        raw_step(WATCH, bytes.fromhex("00"), "malformed frame (1 of the header's 10 bytes)", ["tsl.malformed_frame"]),
        # A reserved flag bit: refused, but what it carries is still shown.
        raw_step(WATCH, sl.frame(sl.Channel.CONTEXT, 0x47, 2, len(small_dict), small_dict),
                 f'context 2 [FIRST|LAST|NEEDS-ACK|0x40] total={len(small_dict)} {{"x": 1}} [invalid flags]',
                 ["tsl.invalid_flags"], tsl_value='{"x": 1}'),
        # EXPECTS-REPLY off the message channels.
        raw_step(PHONE, sl.frame(sl.Channel.USER_INFO, 0x17, 6, len(small_dict), small_dict),
                 f'user-info 6 [FIRST|LAST|NEEDS-ACK|EXPECTS-REPLY] total={len(small_dict)} {{"x": 1}} [invalid flags]',
                 ["tsl.invalid_flags"], tsl_value='{"x": 1}'),
        # CURRENT-COMPLICATION off the user info channels.
        raw_step(PHONE, sl.frame(sl.Channel.MESSAGE_DATA, 0x27, 5, 1, b"\x00"),
                 "message-data 5 [FIRST|LAST|NEEDS-ACK|CURRENT-COMPLICATION] total=1 [invalid flags]",
                 ["tsl.invalid_flags"]),
        # A control frame with NEEDS-ACK.
        raw_step(PHONE, sl.frame(ctl, 0x07, 6, 6, sl.cancel(sl.Channel.USER_INFO, 4)),
                 "CANCEL user-info 4 [invalid flags]", ["tsl.invalid_flags"],
                 tsl_control__op=sl.Op.CANCEL, tsl_control__channel=sl.Channel.USER_INFO, tsl_control__id=4),
        # An unknown channel.
        raw_step(WATCH, sl.frame(0x09, 0x03, 1, 2, b"\xaa\xbb"), "channel 0x09 1 [FIRST|LAST] total=2 [unknown channel]",
                 ["tsl.unknown_channel"]),
        # Control items of the wrong length, an empty one, an unknown op.
        raw_step(WATCH, sl.frame(ctl, 0x03, 15, 9, sl.ack(sl.Channel.MESSAGE, 2, 0)[:9]),
                 "ACK [malformed control: 9 of 10 bytes]", ["tsl.malformed_control"], tsl_control__op=sl.Op.ACK),
        raw_step(PHONE, sl.frame(ctl, 0x03, 7, 6, sl.status_ack(1) + b"\x00"),
                 "STATUS-ACK [malformed control: 6 of 5 bytes]", ["tsl.malformed_control"],
                 tsl_control__op=sl.Op.STATUS_ACK),
        raw_step(PHONE, sl.frame(ctl, 0x03, 8, 0), "control 8 [FIRST|LAST] total=0 [malformed control: empty]",
                 ["tsl.malformed_control"]),
        raw_step(WATCH, sl.frame(ctl, 0x03, 16, 3, b"\x08\x01\x02"), "control op 0x08 (unknown)",
                 ["tsl.unknown_control"], tsl_control__op=0x08),
        # Frames whose lengths disagree with their header.
        raw_step(PHONE, sl.frame(sl.Channel.MESSAGE_DATA, 0x03, 9, 20, b"12345"),
                 "message-data 9 [FIRST|LAST] total=20 [malformed]", ["tsl.malformed_frame"]),
        raw_step(PHONE, sl.frame(sl.Channel.MESSAGE_DATA, 0x01, 10, 5, b"12345"),
                 "message-data 10 [FIRST] total=5 [malformed]", ["tsl.malformed_frame"]),
        raw_step(PHONE, sl.frame(sl.Channel.MESSAGE_DATA, 0x01, 11, 2, b"12345"),
                 "message-data 11 [FIRST] total=2 [malformed]", ["tsl.malformed_frame"]),
        raw_step(PHONE, sl.frame(sl.Channel.FILE_CHUNK, 0x00, 3, 100), "file-chunk 3 offset=100 [malformed]",
                 ["tsl.malformed_frame"]),
        raw_step(PHONE, sl.frame(sl.Channel.FILE_CHUNK, 0x02, 3, 0xFFFFFFFE, b"abcd"),
                 "file-chunk 3 [LAST] offset=4294967294 [malformed]", ["tsl.malformed_frame"]),
        # An item larger than its channel allows.
        raw_step(PHONE, sl.frame(sl.Channel.CONTEXT, 0x01, 2, 300_000, b"\xab\xcd\xab\xcd"),
                 "context 2 [FIRST] total=300000 [too large]", ["tsl.item_too_large"]),
        # Dictionaries that do not decode, or are not property lists.
        raw_step(WATCH, sl.frame(sl.Channel.MESSAGE, 0x07, 3, 5, b"\x01\x02\x03\x04\x05"),
                 "message 3 [FIRST|LAST|NEEDS-ACK] total=5 [undecodable]", ["tsl.undecodable_payload"]),
        _dict_frame(WATCH, sl.Channel.MESSAGE, 4, ciq_link.encode_value({"a": None}), '{"a": null}'),
        _dict_frame(PHONE, sl.Channel.USER_INFO, 7, ciq_link.encode_value([1]), "[1]"),
        _dict_frame(PHONE, sl.Channel.CONTEXT, 3, ciq_link.encode_value({1: "one"}), '{1: "one"}'),
        _dict_frame(WATCH, sl.Channel.COMPLICATION, 8, ciq_link.encode_value({"c": ciq_link.Char(0x1F600)}),
                    "{\"c\": '\\u{1F600}'}"),
        raw_step(WATCH, sl.frame(sl.Channel.MESSAGE, 0x07, 5, len(small_dict) + 1, small_dict + b"\x01"),
                 f"message 5 [FIRST|LAST|NEEDS-ACK] total={len(small_dict) + 1} [undecodable]",
                 ["tsl.undecodable_payload"]),
        raw_step(WATCH, sl.frame(sl.Channel.FILE_METADATA, 0x07, 4, 7, struct.pack("<I", 9) + b"\xda\x7a\xda"),
                 "file-metadata 4 [FIRST|LAST|NEEDS-ACK] total=7 size=9 [undecodable]", ["tsl.undecodable_payload"],
                 tsl_file_size=9),
        raw_step(PHONE, sl.frame(sl.Channel.MESSAGE, 0x07, 6, 0), "message 6 [FIRST|LAST|NEEDS-ACK] total=0 [undecodable]",
                 ["tsl.undecodable_payload"]),
        # A reply too short for its inReplyTo.
        raw_step(WATCH, sl.frame(sl.Channel.REPLY, 0x07, 3, 2, b"\x01\x00"), "reply 3 [FIRST|LAST|NEEDS-ACK] total=2 [undecodable]",
                 ["tsl.undecodable_payload"]),
        raw_step(PHONE, sl.frame(sl.Channel.FILE_METADATA, 0x07, 5, 3, b"\x01\x00\x00"),
                 "file-metadata 5 [FIRST|LAST|NEEDS-ACK] total=3 [undecodable]", ["tsl.undecodable_payload"]),
        # An ERROR with a code outside 7001-7019.
        error_step(WATCH, 17, sl.Channel.USER_INFO, 4, 9000),
        # A HELLO of another version; a WELCOME the phone sent.
        handshake_step(PHONE, 9, sl.Op.HELLO, sl.Handshake(PHONE_ID, 1, 2, 3, sl.INSTALLED, version=2),
                       "HELLO epoch=0x00000002 nonce=0x00000003 identity=0ff1ce00-0000-4000-8000-000000000001 [version 2]",
                       experts=["tsl.version_mismatch"]),
        handshake_step(PHONE, 10, sl.Op.WELCOME, sl.Handshake(PHONE_ID, 1, 2, 3, 0),
                       "WELCOME epoch=0x00000002 nonce=0x00000003 identity=0ff1ce00-0000-4000-8000-000000000001",
                       experts=["tsl.wrong_direction"]),
    ]
    return steps


def _dict_frame(sender, channel, item_id, payload, text):
    """A whole FIRST|LAST|NEEDS-ACK item whose payload decodes but is not a property list."""
    value = sl.frame(channel, 0x07, item_id, len(payload), payload)
    return raw_step(sender, value,
                    f"{sl.channel_text(channel)} {item_id} [FIRST|LAST|NEEDS-ACK] total={len(payload)} {clip(text)} "
                    "[undecodable]", ["tsl.undecodable_payload"], tsl_value=text)


def fuzz_scenario(seed: int, count: int = 400) -> list:
    """Frames for the "no Lua error on any input" check: every truncation of every test vector
    frame; every truncation of every dictionary of the scenario, each in a whole FIRST|LAST frame
    of a dictionary channel (so that the Monkey C decoder meets every cut); then `count` random
    frames and mutations (random bytes, changed bytes, random channel and flags, dictionaries with
    changed bytes, bytes appended). Values are 1..MAX_PAYLOAD bytes."""
    rng = random.Random(seed)
    base = scenario()
    values = []
    for s in base:
        if s.vector:
            values += [(s.sender, s.value[:cut]) for cut in range(1, len(s.value))]
    dictionaries = [s.value[sl.HEADER_LENGTH:] for s in base if "tsl.value" in s.expect
                    and s.value[0] in (sl.Channel.CONTEXT, sl.Channel.MESSAGE, sl.Channel.USER_INFO,
                                       sl.Channel.COMPLICATION)]
    for payload in dictionaries:
        for cut in range(len(payload)):
            channel = rng.choice([sl.Channel.CONTEXT, sl.Channel.MESSAGE, sl.Channel.USER_INFO, sl.Channel.COMPLICATION])
            values.append((rng.choice([PHONE, WATCH]), sl.frame(channel, 0x07, 1, cut, payload[:cut])))
    randoms = 0
    while randoms < count:
        randoms += 1
        s = rng.choice(base)
        value = bytearray(s.value)
        choice = rng.randrange(5)
        if choice == 0:
            value = bytearray(rng.randbytes(rng.randrange(1, 60)))
        elif choice == 1 and len(value) > 1:
            for _ in range(rng.randrange(1, 4)):
                value[rng.randrange(len(value))] = rng.randrange(256)
        elif choice == 2 and len(value) >= 2:
            value[0] = rng.randrange(0, 10)
            value[1] = rng.randrange(256)
        elif choice == 3:
            # A dictionary with one to three bytes changed, in a whole frame of a channel that
            # carries one (the reply and file metadata channels after their u32).
            payload = bytearray(rng.choice(dictionaries))
            for _ in range(rng.randrange(1, 4)):
                payload[rng.randrange(len(payload))] = rng.choice(
                    [0x00, 0x01, 0x05, 0x0B, 0x13, 0x14, 0xFF, rng.randrange(256)])
            channel = rng.choice([1, 2, 4, 5, 6, 7])
            if channel in (sl.Channel.REPLY, sl.Channel.FILE_METADATA):
                payload = struct.pack("<I", rng.randrange(2**32)) + payload
            value = bytearray(sl.frame(channel, 0x07, 1, len(payload), payload))
        else:
            value = value + rng.randbytes(rng.randrange(1, 8))
        values.append((s.sender, bytes(value[:MAX_PAYLOAD]) or b"\x00"))
    return [Step(sender, value) for sender, value in values]


# --------------------------------------------------------------------------------------------
# Recording with Bumble
# --------------------------------------------------------------------------------------------


async def _exchange(steps, snoop_file):
    """Play `steps` between a Bumble phone and watch, the phone's HCI traffic to `snoop_file`."""
    # Imported here so that the builders above can be used without Bumble installed.
    from bumble.core import UUID
    from bumble.link import LocalLink
    from bumble_local import connect_with_mtu, discover_characteristic, make_device
    from session_gatt import make_service

    link = LocalLink()
    watch = make_device(link, "watch", WATCH_ADDRESS, None)
    phone = make_device(link, "phone", PHONE_ADDRESS, snoop_file)

    writes = asyncio.Queue()
    notifications = asyncio.Queue()
    # The watch's GATT server: the session link service of Harness/rigs/session_gatt.py (write
    # characteristic: write without response and write; notify characteristic: notify).
    service, notify_characteristic = make_service(lambda _connection, value: writes.put_nowait(bytes(value)))
    watch.add_service(service)

    connection, watch_connection, peer, _mtu = await connect_with_mtu(watch, phone, ATT_MTU, ATT_MTU)
    notify_proxy = await discover_characteristic(peer, UUID(sl.SERVICE_UUID), UUID(sl.NOTIFY_UUID))
    write_proxies = [c for s in peer.services if s.uuid == UUID(sl.SERVICE_UUID)
                     for c in s.characteristics if c.uuid == UUID(sl.WRITE_UUID)]
    if not write_proxies:
        raise RuntimeError(f"characteristic {sl.WRITE_UUID} not discovered")
    await notify_proxy.subscribe(lambda value: notifications.put_nowait(bytes(value)))

    for index, s in enumerate(steps):
        if s.sender == PHONE:
            await write_proxies[0].write_value(s.value, with_response=s.with_response)
            got = await asyncio.wait_for(writes.get(), TIMEOUT_S)
        else:
            await watch.notify_subscriber(watch_connection, notify_characteristic, s.value)
            got = await asyncio.wait_for(notifications.get(), TIMEOUT_S)
        if got != s.value:
            raise RuntimeError(f"step {index}: sent {s.value.hex()}, the other side got {got.hex()}")
    await connection.disconnect()


def record_btsnoop(path, steps):
    with open(path, "wb") as snoop_file:
        asyncio.run(asyncio.wait_for(_exchange(steps, snoop_file), TIMEOUT_S + len(steps)))


def expected_path_for(capture_path):
    return capture_path + ".expected.json"


def write_expected(path, steps):
    with open(path, "w", encoding="utf-8") as f:
        json.dump([s.to_json(i) for i, s in enumerate(steps)], f, ensure_ascii=False, indent=1)
        f.write("\n")


def make_capture(path, steps=None, expected_path=None):
    """Record the scenario (or `steps`) into `path` (btsnoop or pcapng by extension) and write
    the expectations to `expected_path` (default: `path` + ".expected.json"). Returns the steps."""
    steps = scenario() if steps is None else steps
    if path.endswith(".btsnoop"):
        record_btsnoop(path, steps)
    elif path.endswith(".pcapng"):
        with tempfile.TemporaryDirectory() as tmp:
            snoop = os.path.join(tmp, "phone.btsnoop")
            record_btsnoop(snoop, steps)
            packets = [(0, t, struct.pack(">I", 1 if received else 0) + h4) for t, received, h4 in read_btsnoop(snoop)]
            write_pcapng(path, [LINKTYPE_H4_WITH_PHDR], packets)
    else:
        raise ValueError(f"{path}: the output name must end in .btsnoop or .pcapng")
    write_expected(expected_path or expected_path_for(path), steps)
    return steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", help="capture to write: NAME.btsnoop or NAME.pcapng")
    parser.add_argument("--expected", help="JSON expectations to write (default: OUTPUT.expected.json)")
    parser.add_argument("--fuzz", type=int, metavar="SEED", help="record random and mutated frames instead")
    args = parser.parse_args()
    try:
        steps = fuzz_scenario(args.fuzz) if args.fuzz is not None else None
        make_capture(args.output, steps, args.expected)
    except Exception as error:  # every failure ends the script with its reason
        print(f"make_session_capture: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
