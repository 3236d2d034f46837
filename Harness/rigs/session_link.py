#!/usr/bin/env python3
"""Tether's session link, in Python: frames, control items and item payloads.

Written from docs/session-link.md, independently of the Swift SessionCore, so that the two are a
cross-check of each other (the Wireshark capture script and its tests use it; a Bumble rig can).
It opens no socket, reads no clock and draws no random numbers: every value is passed in.

What is here:
- the GATT UUIDs (service, write characteristic phone → watch, notify characteristic watch → phone);
- channels, frame flags, control ops, status flags, the WCError codes and names, the largest item
  of each channel;
- `frame(...)`: one frame `channel u8 · flags u8 · id u32 · total/offset u32 · bytes`;
- `fragment(...)`: the frames of one item (FIRST on the first, LAST on the final one, NEEDS-ACK on
  the final one and on each frame that fills the 8-frame window, extra flags on all);
- `FrameContext`: compact frames (page version 3), the 4-byte continuation header a link uses when
  both handshake items state option 0x02: `encode` and `decode` for one direction of one binding;
- the control items (`hello`, `welcome`, `ack`, `error`, `cancel`, `status`, `status_ack`) and
  `control_frames` to frame one;
- the payloads of the reply and file-metadata channels, and `dictionary` (the Monkey C
  serialization of Harness/rigs/ciq_link.py).

Every multi-byte integer of the link is little-endian; identities go most significant byte first;
dictionaries are Monkey C (big-endian inside).
"""

from __future__ import annotations

import enum
import struct
import uuid as uuidlib
from dataclasses import dataclass

import ciq_link

# ---------------------------------------------------------------------------------------------
# GATT (session-link.md, "GATT")
# ---------------------------------------------------------------------------------------------

SERVICE_UUID = "54450001-5345-5353-494f-4e4c494e4b01"
WRITE_UUID = "54450002-5345-5353-494f-4e4c494e4b01"
NOTIFY_UUID = "54450003-5345-5353-494f-4e4c494e4b01"

#: `maxPayload` (ATT MTU − 3) is clamped to this range at link-up.
MIN_FRAME_LENGTH = 20
MAX_FRAME_LENGTH = 512

# ---------------------------------------------------------------------------------------------
# Frames (session-link.md, "Frames")
# ---------------------------------------------------------------------------------------------

HEADER_LENGTH = 10
#: Frames a sender may have beyond the acknowledged offset of one lane.
WINDOW_FRAMES = 8
#: `received` of an ACK meaning the item is complete.
COMPLETE = 0xFFFFFFFF

FIRST = 0x01
LAST = 0x02
NEEDS_ACK = 0x04
RETRANSMISSION = 0x08
EXPECTS_REPLY = 0x10
CURRENT_COMPLICATION = 0x20
RESERVED = 0xC0

#: Flag names in the document's spelling, lowest bit first.
FLAG_NAMES = (
    (FIRST, "FIRST"), (LAST, "LAST"), (NEEDS_ACK, "NEEDS-ACK"), (RETRANSMISSION, "RETRANSMISSION"),
    (EXPECTS_REPLY, "EXPECTS-REPLY"), (CURRENT_COMPLICATION, "CURRENT-COMPLICATION"),
)


def flag_text(flags: int) -> str:
    """`FIRST|LAST|NEEDS-ACK`; reserved bits as `0x40`; empty for no flags."""
    parts = [name for bit, name in FLAG_NAMES if flags & bit]
    if flags & RESERVED:
        parts.append(f"0x{flags & RESERVED:02x}")
    return "|".join(parts)


class Channel(enum.IntEnum):
    """Byte 0 of a frame."""

    CONTROL = 0x00
    CONTEXT = 0x01
    MESSAGE = 0x02
    MESSAGE_DATA = 0x03
    REPLY = 0x04
    USER_INFO = 0x05
    COMPLICATION = 0x06
    FILE_METADATA = 0x07
    FILE_CHUNK = 0x08


#: The document's names of the channels.
CHANNEL_NAMES = {
    Channel.CONTROL: "control", Channel.CONTEXT: "context", Channel.MESSAGE: "message",
    Channel.MESSAGE_DATA: "message-data", Channel.REPLY: "reply", Channel.USER_INFO: "user-info",
    Channel.COMPLICATION: "complication", Channel.FILE_METADATA: "file-metadata",
    Channel.FILE_CHUNK: "file-chunk",
}


def channel_text(channel: int) -> str:
    """`message`, or `channel 0x09` for a channel the link does not define."""
    return CHANNEL_NAMES.get(channel, f"channel 0x{channel:02x}")


#: The largest item of each channel (session-link.md, "Channels").
LARGEST_ITEM = {
    Channel.CONTROL: 256, Channel.CONTEXT: 262_144, Channel.MESSAGE: 65_536,
    Channel.MESSAGE_DATA: 65_536, Channel.REPLY: 65_540, Channel.USER_INFO: 65_536,
    Channel.COMPLICATION: 65_536, Channel.FILE_METADATA: 65_540, Channel.FILE_CHUNK: 4_294_967_294,
}


def frame(channel: int, flags: int, item_id: int, total_or_offset: int, data: bytes = b"") -> bytes:
    """One frame, exactly as given (no check: malformed frames are built with it too)."""
    return struct.pack("<BBII", channel, flags, item_id, total_or_offset) + bytes(data)


def fragment(channel: int, item_id: int, payload: bytes, max_payload: int, extra_flags: int = 0,
             needs_ack: bool = True, start: int = 0) -> list[bytes]:
    """The frames of one item of `len(payload)` bytes, each at most `max_payload` bytes long.

    FIRST on the frame at offset 0 (its u32 is the total), LAST on the frame that ends the item,
    `extra_flags` on every frame. With `needs_ack` (data channels), NEEDS-ACK goes on the frame that
    ends the item and on every 8th frame (the one that reaches the end of the window, assuming each
    window's ACK comes before the next). `start` > 0 resumes at that offset with continuations.
    A zero-length item is one FIRST|LAST frame without bytes.
    """
    room = min(max(max_payload, MIN_FRAME_LENGTH), MAX_FRAME_LENGTH) - HEADER_LENGTH
    frames = []
    offset = start
    count = 0
    while True:
        end = min(len(payload), offset + room)
        flags = extra_flags
        if offset == 0:
            flags |= FIRST
        if end == len(payload):
            flags |= LAST
        count += 1
        if needs_ack and (end == len(payload) or count % WINDOW_FRAMES == 0):
            flags |= NEEDS_ACK
        frames.append(frame(channel, flags, item_id, len(payload) if offset == 0 else offset, payload[offset:end]))
        offset = end
        if offset >= len(payload):
            return frames


# ---------------------------------------------------------------------------------------------
# Compact frames (session-link.md page version 3, "Compact frames")
# ---------------------------------------------------------------------------------------------

COMPACT_HEADER_LENGTH = 4
COMPACT = 0x80


class CompactFrameError(ValueError):
    """Bytes that are no frame of a link with compact frames; `offset` is where, in the frame."""

    def __init__(self, offset: int, reason: str):
        super().__init__(f"byte {offset}: {reason}")
        self.offset = offset
        self.reason = reason


@dataclass(frozen=True)
class Frame:
    """A frame with every field known, however it went on the wire."""
    channel: int
    flags: int
    item_id: int
    #: The total with FIRST, else the offset of `data` in the item.
    total_or_offset: int
    data: bytes
    compact: bool = False


class FrameContext:
    """One direction of one binding of a link with compact frames: per data channel (1-8) the id
    and the end (offset + bytes) of the last data frame that went that way. Sender and receiver
    each keep one, empty when the link is bound, and record every data frame in order."""

    def __init__(self):
        self.last: dict[int, tuple[int, int]] = {}

    def compact_allowed(self, channel: int, item_id: int, offset: int) -> bool:
        """A continuation of `item_id` on `channel` at `offset` may go compact: the channel's last
        frame had that id and `offset` is within -32768..+32767 of its end."""
        last = self.last.get(channel)
        return 1 <= channel <= 8 and last is not None and last[0] == item_id and -32768 <= offset - last[1] < 32768

    def record(self, channel: int, item_id: int, offset: int, count: int) -> None:
        if 1 <= channel <= 8:
            self.last[channel] = (item_id, offset + count)

    def encode(self, channel: int, flags: int, item_id: int, total_or_offset: int, data: bytes) -> bytes:
        """The frame as it goes on the wire: compact when a continuation the context allows,
        else the 10-byte frame; recorded either way."""
        offset = 0 if flags & FIRST else total_or_offset
        if not flags & FIRST and self.compact_allowed(channel, item_id, offset):
            wire = bytes([COMPACT | (item_id & 7) << 4 | channel, flags]) + struct.pack("<H", offset & 0xFFFF) + bytes(data)
        else:
            wire = frame(channel, flags, item_id, total_or_offset, data)
        self.record(channel, item_id, offset, len(data))
        return wire

    def decode(self, wire: bytes) -> Frame:
        """One frame of the direction: a compact one completed from the context, any other read
        as the 10-byte frame. Raises CompactFrameError; the context then stays as it was."""
        if not wire or not wire[0] & COMPACT:
            if len(wire) < HEADER_LENGTH:
                raise CompactFrameError(len(wire), f"a frame is at least {HEADER_LENGTH} bytes")
            channel, flags, item_id, field = struct.unpack_from("<BBII", wire)
            data = bytes(wire[HEADER_LENGTH:])
            self.record(channel, item_id, 0 if flags & FIRST else field, len(data))
            return Frame(channel, flags, item_id, field, data)
        if len(wire) < COMPACT_HEADER_LENGTH:
            raise CompactFrameError(len(wire), "the compact header is 4 bytes")
        channel, tag, flags = wire[0] & 0x0F, (wire[0] >> 4) & 7, wire[1]
        if not 1 <= channel <= 8:
            raise CompactFrameError(0, f"compact frames carry channels 0x01-0x08, not 0x{channel:02x}")
        if flags & FIRST:
            raise CompactFrameError(1, "a compact frame never has FIRST")
        if len(wire) == COMPACT_HEADER_LENGTH:
            raise CompactFrameError(COMPACT_HEADER_LENGTH, "a continuation carries at least one byte")
        last = self.last.get(channel)
        if last is None:
            raise CompactFrameError(0, f"no frame of {channel_text(channel)} before this compact one")
        item_id, end = last
        if item_id & 7 != tag:
            raise CompactFrameError(0, f"id tag {tag}, but the channel's last frame was #{item_id}")
        bits = struct.unpack_from("<H", wire, 2)[0]
        delta = (bits - end) & 0xFFFF
        offset = end + (delta - 0x10000 if delta >= 0x8000 else delta)
        data = bytes(wire[COMPACT_HEADER_LENGTH:])
        if offset < 0:
            raise CompactFrameError(2, f"offset bits 0x{bits:04x} after a frame ending at {end} give an offset below 0")
        if offset + len(data) > 0xFFFFFFFF:
            raise CompactFrameError(2, "the offset plus the bytes pass 2^32 - 1")
        self.record(channel, item_id, offset, len(data))
        return Frame(channel, flags, item_id, offset, data, compact=True)


# ---------------------------------------------------------------------------------------------
# Control items (session-link.md, "Control items")
# ---------------------------------------------------------------------------------------------


class Op(enum.IntEnum):
    """Byte 0 of a control item."""

    HELLO = 0x01
    WELCOME = 0x02
    ACK = 0x03
    ERROR = 0x04
    CANCEL = 0x05
    STATUS = 0x06
    STATUS_ACK = 0x07


OP_NAMES = {Op.HELLO: "HELLO", Op.WELCOME: "WELCOME", Op.ACK: "ACK", Op.ERROR: "ERROR",
            Op.CANCEL: "CANCEL", Op.STATUS: "STATUS", Op.STATUS_ACK: "STATUS-ACK"}
#: The length of each control item, op included (HELLO and WELCOME: at least, options follow).
CONTROL_LENGTHS = {Op.HELLO: 55, Op.WELCOME: 55, Op.ACK: 10, Op.ERROR: 8, Op.CANCEL: 6,
                   Op.STATUS: 6, Op.STATUS_ACK: 5}
VERSION = 1
#: The handshake option stating a window (session-link.md page version 2, "Options").
WINDOW_OPTION = 0x01
#: The handshake option stating compact frames (page version 3, "Compact frames"): no value.
COMPACT_FRAMES_OPTION = 0x02

# Status flags (HELLO, WELCOME, STATUS).
PAIRED = 0x01
INSTALLED = 0x02
COMPLICATION = 0x04
REACHABLE = 0x08
ACTIVATED = 0x10
STATUS_NAMES = ((PAIRED, "paired"), (INSTALLED, "installed"), (COMPLICATION, "complication"),
                (REACHABLE, "reachable"), (ACTIVATED, "activated"))


def status_text(status: int) -> str:
    """`paired|installed`; unknown bits as `0xe0`; `none` for 0."""
    parts = [name for bit, name in STATUS_NAMES if status & bit]
    if status & 0xE0:
        parts.append(f"0x{status & 0xE0:02x}")
    return "|".join(parts) or "none"


#: WCError codes (docs/session-semantics.md, "Errors").
ERROR_NAMES = {
    7001: "genericError", 7002: "sessionNotSupported", 7003: "sessionMissingDelegate",
    7004: "sessionNotActivated", 7005: "deviceNotPaired", 7006: "watchAppNotInstalled",
    7007: "notReachable", 7008: "invalidParameter", 7009: "payloadTooLarge",
    7010: "payloadUnsupportedTypes", 7011: "messageReplyFailed", 7012: "messageReplyTimedOut",
    7013: "fileAccessDenied", 7014: "deliveryFailed", 7015: "insufficientSpace",
    7016: "sessionInactive", 7017: "transferTimedOut", 7018: "companionAppNotInstalled",
    7019: "watchOnlyApp",
}


@dataclass(frozen=True)
class Handshake:
    """The fields of HELLO and WELCOME after the op."""

    identity: uuidlib.UUID
    incarnation: int
    epoch: int
    nonce: int
    status: int
    watermark_context: int = 0
    watermark_user_info: int = 0
    watermark_complication: int = 0
    watermark_file: int = 0
    resume_id: int = 0
    resume_offset: int = 0
    version: int = VERSION
    #: The window option (page version 2), frames the sender accepts ahead; None: no option.
    window: int | None = None
    #: The compact frames option (page version 3): the sender accepts compact frames.
    compact_frames: bool = False

    def encode(self, op: int) -> bytes:
        """The control item with `op` (HELLO or WELCOME): 55 bytes, then the window option
        (`01 02` and the window as u16) when one is stated, then `02 00` when compact frames are."""
        item = (bytes([op, self.version]) + self.identity.bytes
                + struct.pack("<IIIB", self.incarnation, self.epoch, self.nonce, self.status)
                + struct.pack("<6I", self.watermark_context, self.watermark_user_info,
                              self.watermark_complication, self.watermark_file,
                              self.resume_id, self.resume_offset))
        if self.window is not None:
            item += bytes([WINDOW_OPTION, 2]) + struct.pack("<H", self.window)
        if self.compact_frames:
            item += bytes([COMPACT_FRAMES_OPTION, 0])
        return item


def hello(handshake: Handshake) -> bytes:
    return handshake.encode(Op.HELLO)


def welcome(handshake: Handshake) -> bytes:
    return handshake.encode(Op.WELCOME)


def ack(channel: int, item_id: int, received: int) -> bytes:
    return struct.pack("<BBII", Op.ACK, channel, item_id, received)


def error(channel: int, item_id: int, code: int) -> bytes:
    return struct.pack("<BBIH", Op.ERROR, channel, item_id, code)


def cancel(channel: int, item_id: int) -> bytes:
    return struct.pack("<BBI", Op.CANCEL, channel, item_id)


def status(sequence: int, flags: int) -> bytes:
    return struct.pack("<BIB", Op.STATUS, sequence, flags)


def status_ack(sequence: int) -> bytes:
    return struct.pack("<BI", Op.STATUS_ACK, sequence)


def control_frames(control_id: int, item: bytes, max_payload: int = MAX_FRAME_LENGTH) -> list[bytes]:
    """A control item framed on channel 0 under the sender's control id: FIRST/LAST only."""
    return fragment(Channel.CONTROL, control_id, item, max_payload, needs_ack=False)


# ---------------------------------------------------------------------------------------------
# Item payloads (session-link.md, "Channels")
# ---------------------------------------------------------------------------------------------


def dictionary(value: dict) -> bytes:
    """A property-list dictionary in the Monkey C serialization (keys sorted by the encoder)."""
    if not isinstance(value, dict):
        raise TypeError(f"a session item carries a dictionary, not {type(value).__name__}")
    return ciq_link.encode_value(value)


def reply_payload(in_reply_to: int, body: bytes) -> bytes:
    """Channel 0x04: `inReplyTo u32`, then the reply (a serialized dictionary, or bytes)."""
    return struct.pack("<I", in_reply_to) + bytes(body)


def file_metadata_payload(size: int, metadata: dict | None = None) -> bytes:
    """Channel 0x07: `size u32`, then the serialized metadata dictionary or nothing."""
    return struct.pack("<I", size) + (b"" if metadata is None else dictionary(metadata))
