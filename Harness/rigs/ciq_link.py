#!/usr/bin/env python3
"""The Connect IQ companion link, in Python: packets, CRC-16/ARC, XXTEA and Monkey C values.

Written from Tether's design note `docs/connectiq-link.md`, independently of the Swift
MessagingCore, so that the two are a cross-check of each other. The Bumble rigs (`ciq_watch.py`,
the test phone in `test_ciq_rigs.py`) use it; it opens no socket and reads no clock.

What is here:
- the GATT UUIDs (current and legacy service, write and notify characteristics);
- every link packet as a frozen dataclass with `encode()`, and `decode_packet(data, direction)`
  which gives a packet or raises `PacketError` (never anything else, whatever the bytes);
- `crc16_arc` (poly 0x8005 reflected, init 0; `123456789` -> 0xBB3D);
- XXTEA over little-endian words (`xxtea_encrypt`, `xxtea_decrypt`, `pad_for_xxtea`);
- Monkey C value serialization (`encode_value`, `decode_value`, `decode_value_prefix`), with
  `Float32` and `Char` for the two types Python has no own value for;
- `data_packets` (split a buffer into sequenced data packets) and `TransferReceiver` (the
  receiving side of one transfer: sequence checks, window acks, length/CRC check, decryption).

Byte order: the link's own integers are little-endian; the Monkey C payload is big-endian; UUIDs
go most significant byte first.
"""

from __future__ import annotations

import enum
import math
import struct
import uuid as uuidlib
from dataclasses import dataclass
from typing import Union

# ---------------------------------------------------------------------------------------------
# GATT (docs/connectiq-link.md, "GATT")
# ---------------------------------------------------------------------------------------------

CURRENT_SERVICE_UUID = "6A4E8022-667B-11E3-949A-0800200C9A66"
CURRENT_WRITE_UUID = "6A4E4C80-667B-11E3-949A-0800200C9A66"
CURRENT_NOTIFY_UUID = "6A4ECD28-667B-11E3-949A-0800200C9A66"
LEGACY_SERVICE_UUID = "16AA8022-3769-4C74-A755-877DDE3A2930"
LEGACY_WRITE_UUID = "DF334C80-E6A7-D082-274D-78FC66F85E16"
LEGACY_NOTIFY_UUID = "4ACBCD28-7425-868E-F447-915C8F00D0CB"

#: The loopback test app UUID that appears in the iOS SDK.
LOOPBACK_APP_UUID = "0180E520-5F7E-11E4-9803-0800200C9A66"

# ---------------------------------------------------------------------------------------------
# Link constants (docs/connectiq-link.md, "Packets")
# ---------------------------------------------------------------------------------------------

#: Data payload per packet without, and with, the large-packet flag.
SMALL_PAYLOAD = 19
LARGE_PAYLOAD = 191
#: Data packets per window (seq 0-14); the receiver acknowledges after seq 14.
WINDOW = 15
#: The ATT MTU a phone asks for before command 1.
MIN_MTU = 195
#: Connection ids a watch hands out.
CONNECTION_IDS = range(1, 16)

FLAG_ENCRYPTED = 0x02
FLAG_TRANSIENT = 0x04
CONNECT_FLAG_FORCE_OPEN = 0x01
CONNECT_FLAG_LARGE_PACKETS = 0x01
APP_NOT_INSTALLED = 0xFFFF


class Direction(enum.Enum):
    """Who sent a packet: commands 1-6 have a different layout each way."""

    PHONE_TO_WATCH = "phone->watch"
    WATCH_TO_PHONE = "watch->phone"


class Command(enum.IntEnum):
    """Command ids (byte 1 of a packet whose byte 0 is 0x00)."""

    CONNECT = 1
    DISCONNECT = 2
    WATCH_OPEN = 3
    WATCH_CLOSE = 4
    APP_INFO = 5
    OPEN_APP = 6


class Control(enum.IntEnum):
    """Transfer control ids (byte 1 of a packet whose byte 0 is 0xF0 | conn)."""

    FIRST = 0
    LAST = 1
    ACK = 2
    ACK_REQUEST = 3
    CAPABILITIES = 4
    ENCRYPTION_KEY = 5
    KEY_REQUEST = 6


class AckType(enum.IntEnum):
    """What an ack acknowledges (byte 2 of an ack)."""

    FIRST = 0
    DATA = 1
    LAST = 2
    ACK_REQUEST = 3
    CAPABILITIES = 4
    ENCRYPTION_KEY = 5


class AckStatus(enum.IntEnum):
    """Status of an ack (byte 3 of an ack)."""

    SUCCESS = 0
    RESEND = 1
    CRC_FAILURE = 2
    TRANSFER_NOT_STARTED = 3
    INVALID_CONNECTION_ID = 4
    OUT_OF_MEMORY = 5
    NO_ENCRYPTION_KEY = 6


class ConnectStatus(enum.IntEnum):
    """Status of a connect answer (command 1)."""

    SUCCESS = 0
    APP_NOT_FOUND = 1
    NO_FREE_CONNECTION_IDS = 2
    CONNECTION_ALREADY_OPEN = 3


class DisconnectStatus(enum.IntEnum):
    """Status of a disconnect answer (command 2)."""

    SUCCESS = 0
    INVALID_CONNECTION_ID = 1


class OpenAppResult(enum.IntEnum):
    """Code of an open-app answer (command 6)."""

    PROMPT_SHOWN = 0
    PROMPT_NOT_SHOWN = 1
    APP_NOT_INSTALLED = 2
    APP_ALREADY_RUNNING = 3


def _name(enum_type, value: int) -> str:
    """`NAME` for a known value of `enum_type`, else the number."""
    try:
        return enum_type(value).name
    except ValueError:
        return str(value)


# ---------------------------------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------------------------------


class LinkError(ValueError):
    """Base of every error this module raises (a `ValueError`, so callers may catch either)."""


class PacketError(LinkError):
    """Bytes that are not a link packet: says where, what was expected and what was found."""

    def __init__(self, message: str, offset: int, data: bytes):
        self.offset = offset
        self.data = bytes(data)
        super().__init__(f"{message} (at byte {offset} of packet {self.data.hex() or '<empty>'})")


class MonkeyCError(LinkError):
    """A Monkey C value that cannot be encoded, or bytes that are not a serialized value."""


class CryptoError(LinkError):
    """XXTEA input of the wrong size (key not 16 bytes, data not a multiple of 4 or under 8)."""


# ---------------------------------------------------------------------------------------------
# CRC-16/ARC
# ---------------------------------------------------------------------------------------------


def crc16_arc(data: bytes, crc: int = 0) -> int:
    """CRC-16/ARC of `data` (poly 0x8005 reflected = 0xA001, init 0, no final xor).

    `crc` continues a previous computation. `crc16_arc(b"123456789") == 0xBB3D`.
    """
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


# ---------------------------------------------------------------------------------------------
# XXTEA (corrected block TEA), little-endian words, no length word
# ---------------------------------------------------------------------------------------------

_DELTA = 0x9E3779B9
_MASK = 0xFFFFFFFF


def pad_for_xxtea(data: bytes) -> bytes:
    """`data` followed by zeros up to a multiple of 4 bytes and at least 8 bytes (Tether's choice)."""
    length = max(8, (len(data) + 3) // 4 * 4)
    return bytes(data) + bytes(length - len(data))


def _words(data: bytes, key: bytes) -> tuple[list[int], list[int]]:
    if len(key) != 16:
        raise CryptoError(f"XXTEA key is {len(key)} bytes; expected exactly 16")
    if len(data) % 4 != 0 or len(data) < 8:
        raise CryptoError(
            f"XXTEA data is {len(data)} bytes; expected a multiple of 4 and at least 8 "
            "(pad with pad_for_xxtea first)"
        )
    count = len(data) // 4
    return list(struct.unpack(f"<{count}I", data)), list(struct.unpack("<4I", key))


def _mx(total: int, y: int, z: int, p: int, e: int, k: list[int]) -> int:
    return (
        (((z >> 5) ^ (y << 2) & _MASK) + ((y >> 3) ^ (z << 4) & _MASK))
        ^ ((total ^ y) + (k[(p & 3) ^ e] ^ z))
    ) & _MASK


def xxtea_encrypt(data: bytes, key: bytes) -> bytes:
    """XXTEA-encrypt word-aligned `data` (≥ 8 bytes) with a 16-byte `key`; same length out."""
    v, k = _words(data, key)
    n = len(v)
    rounds = 6 + 52 // n
    total = 0
    z = v[n - 1]
    for _ in range(rounds):
        total = (total + _DELTA) & _MASK
        e = (total >> 2) & 3
        for p in range(n):
            y = v[(p + 1) % n]
            v[p] = (v[p] + _mx(total, y, z, p, e, k)) & _MASK
            z = v[p]
    return struct.pack(f"<{n}I", *v)


def xxtea_decrypt(data: bytes, key: bytes) -> bytes:
    """Inverse of `xxtea_encrypt`."""
    v, k = _words(data, key)
    n = len(v)
    rounds = 6 + 52 // n
    total = (rounds * _DELTA) & _MASK
    y = v[0]
    for _ in range(rounds):
        e = (total >> 2) & 3
        for p in range(n - 1, -1, -1):
            z = v[p - 1]  # p - 1 == -1 wraps to the last word, as the algorithm asks
            v[p] = (v[p] - _mx(total, y, z, p, e, k)) & _MASK
            y = v[p]
        total = (total - _DELTA) & _MASK
    return struct.pack(f"<{n}I", *v)


# ---------------------------------------------------------------------------------------------
# Packets
# ---------------------------------------------------------------------------------------------


def _uuid_bytes(app: uuidlib.UUID) -> bytes:
    return app.bytes  # most significant byte first, as written


def _check_conn(conn: int, allow_zero: bool = False) -> None:
    low = 0 if allow_zero else 1
    if not low <= conn <= 15:
        raise LinkError(f"connection id {conn} is out of range; expected {low}-15")


def _u8(name: str, value: int) -> int:
    if not 0 <= value <= 0xFF:
        raise LinkError(f"{name} {value} does not fit in one byte")
    return value


@dataclass(frozen=True)
class ConnectRequest:
    """Phone → watch `00 01 uuid flags`: open a connection to an app (flags bit 0: force open)."""

    app: uuidlib.UUID
    flags: int = CONNECT_FLAG_FORCE_OPEN

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.CONNECT]) + _uuid_bytes(self.app) + bytes([_u8("flags", self.flags)])

    def __str__(self) -> str:
        return f"connect app={self.app} flags=0x{self.flags:02x}"


@dataclass(frozen=True)
class ConnectResponse:
    """Watch → phone `00 01 status uuid conn flags` (flags bit 0: large packets).

    `flags` is None for a 20-byte answer cut before the flags byte, which means flags 0.
    """

    status: int
    app: uuidlib.UUID
    conn: int
    flags: int | None = 0

    @property
    def large_packets(self) -> bool:
        """Whether the watch allows large data packets on this connection."""
        return bool((self.flags or 0) & CONNECT_FLAG_LARGE_PACKETS)

    def encode(self) -> bytes:
        """The packet's bytes."""
        tail = b"" if self.flags is None else bytes([_u8("flags", self.flags)])
        return (
            bytes([0, Command.CONNECT, _u8("status", self.status)])
            + _uuid_bytes(self.app)
            + bytes([_u8("conn", self.conn)])
            + tail
        )

    def __str__(self) -> str:
        flags = "cut" if self.flags is None else f"0x{self.flags:02x}"
        return (
            f"connect-answer status={_name(ConnectStatus, self.status)} app={self.app} "
            f"conn={self.conn} flags={flags}"
        )


@dataclass(frozen=True)
class DisconnectRequest:
    """Phone → watch `00 02 conn`: close a connection."""

    conn: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.DISCONNECT, _u8("conn", self.conn)])

    def __str__(self) -> str:
        return f"disconnect conn={self.conn}"


@dataclass(frozen=True)
class DisconnectResponse:
    """Watch → phone `00 02 status conn` (0 success, 1 invalid connection id)."""

    status: int
    conn: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.DISCONNECT, _u8("status", self.status), _u8("conn", self.conn)])

    def __str__(self) -> str:
        return f"disconnect-answer status={_name(DisconnectStatus, self.status)} conn={self.conn}"


@dataclass(frozen=True)
class WatchOpen:
    """Watch → phone `00 03 uuid conn`: an app on the watch opened a connection itself."""

    app: uuidlib.UUID
    conn: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.WATCH_OPEN]) + _uuid_bytes(self.app) + bytes([_u8("conn", self.conn)])

    def __str__(self) -> str:
        return f"watch-open app={self.app} conn={self.conn}"


@dataclass(frozen=True)
class WatchOpenResponse:
    """Phone → watch `00 03 status conn`: the phone's answer to `WatchOpen`."""

    status: int
    conn: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.WATCH_OPEN, _u8("status", self.status), _u8("conn", self.conn)])

    def __str__(self) -> str:
        return f"watch-open-answer status={self.status} conn={self.conn}"


@dataclass(frozen=True)
class WatchClose:
    """Watch → phone `00 04 conn`: the watch closes a connection."""

    conn: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.WATCH_CLOSE, _u8("conn", self.conn)])

    def __str__(self) -> str:
        return f"watch-close conn={self.conn}"


@dataclass(frozen=True)
class WatchCloseResponse:
    """Phone → watch `00 04 status conn`: the phone's answer to `WatchClose`."""

    status: int
    conn: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.WATCH_CLOSE, _u8("status", self.status), _u8("conn", self.conn)])

    def __str__(self) -> str:
        return f"watch-close-answer status={self.status} conn={self.conn}"


@dataclass(frozen=True)
class AppInfoRequest:
    """Phone → watch `00 05 uuid`: is this app installed, and which version?"""

    app: uuidlib.UUID

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.APP_INFO]) + _uuid_bytes(self.app)

    def __str__(self) -> str:
        return f"app-info app={self.app}"


@dataclass(frozen=True)
class AppInfoResponse:
    """Watch → phone `00 05 uuid version(u16 LE)`; version 0xFFFF means not installed."""

    app: uuidlib.UUID
    version: int

    @property
    def installed(self) -> bool:
        """Whether the app is installed (version is not 0xFFFF)."""
        return self.version != APP_NOT_INSTALLED

    def encode(self) -> bytes:
        """The packet's bytes."""
        if not 0 <= self.version <= 0xFFFF:
            raise LinkError(f"app version {self.version} does not fit in u16")
        return bytes([0, Command.APP_INFO]) + _uuid_bytes(self.app) + struct.pack("<H", self.version)

    def __str__(self) -> str:
        version = "not-installed" if not self.installed else str(self.version)
        return f"app-info-answer app={self.app} version={version}"


@dataclass(frozen=True)
class OpenAppRequest:
    """Phone → watch `00 06 uuid`: open this app on the watch."""

    app: uuidlib.UUID

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.OPEN_APP]) + _uuid_bytes(self.app)

    def __str__(self) -> str:
        return f"open-app app={self.app}"


@dataclass(frozen=True)
class OpenAppResponse:
    """Watch → phone `00 06 uuid code` (0 prompt shown, 1 not shown, 2 not installed, 3 running)."""

    app: uuidlib.UUID
    code: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        return bytes([0, Command.OPEN_APP]) + _uuid_bytes(self.app) + bytes([_u8("code", self.code)])

    def __str__(self) -> str:
        return f"open-app-answer app={self.app} code={_name(OpenAppResult, self.code)}"


@dataclass(frozen=True)
class UnknownCommand:
    """A command packet (`00 id …`) whose id is not 1-6, or a bare `00`; kept whole."""

    command: int | None
    body: bytes

    def encode(self) -> bytes:
        """The packet's bytes."""
        head = bytes([0]) if self.command is None else bytes([0, self.command])
        return head + self.body

    def __str__(self) -> str:
        return f"unknown-command id={self.command} body={self.body.hex()}"


@dataclass(frozen=True)
class First:
    """`F·c 00 flags len(u32 LE)`: a transfer of `length` bytes starts (0x02 encrypted, 0x04 transient)."""

    conn: int
    flags: int
    length: int

    @property
    def encrypted(self) -> bool:
        """Whether flag 0x02 (encrypted) is set."""
        return bool(self.flags & FLAG_ENCRYPTED)

    def encode(self) -> bytes:
        """The packet's bytes."""
        _check_conn(self.conn, allow_zero=True)
        return bytes([0xF0 | self.conn, Control.FIRST, _u8("flags", self.flags)]) + struct.pack(
            "<I", self.length
        )

    def __str__(self) -> str:
        return f"first conn={self.conn} flags=0x{self.flags:02x} len={self.length}"


@dataclass(frozen=True)
class Last:
    """`F·c 01 seq crc16(u16 LE)`: all data sent; CRC-16/ARC over the whole transferred buffer."""

    conn: int
    seq: int
    crc: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        _check_conn(self.conn, allow_zero=True)
        return bytes([0xF0 | self.conn, Control.LAST, _u8("seq", self.seq)]) + struct.pack("<H", self.crc)

    def __str__(self) -> str:
        return f"last conn={self.conn} seq={self.seq} crc=0x{self.crc:04x}"


@dataclass(frozen=True)
class Ack:
    """`F·c 02 type status seq`: acknowledges a first, a window, a last, an ack request or a key."""

    conn: int
    kind: int
    status: int
    seq: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        _check_conn(self.conn, allow_zero=True)
        return bytes(
            [0xF0 | self.conn, Control.ACK, _u8("type", self.kind), _u8("status", self.status), _u8("seq", self.seq)]
        )

    def __str__(self) -> str:
        return (
            f"ack conn={self.conn} type={_name(AckType, self.kind)} "
            f"status={_name(AckStatus, self.status)} seq={self.seq}"
        )


@dataclass(frozen=True)
class AckRequest:
    """`F·c 03 seq`: asks the receiver to acknowledge up to `seq` (answered with ack type 3)."""

    conn: int
    seq: int

    def encode(self) -> bytes:
        """The packet's bytes."""
        _check_conn(self.conn, allow_zero=True)
        return bytes([0xF0 | self.conn, Control.ACK_REQUEST, _u8("seq", self.seq)])

    def __str__(self) -> str:
        return f"ack-request conn={self.conn} seq={self.seq}"


@dataclass(frozen=True)
class EncryptionKey:
    """`F·c 05 key(16) isResponse`: the XXTEA key for the following transfer."""

    conn: int
    key: bytes
    is_response: int = 0

    def encode(self) -> bytes:
        """The packet's bytes."""
        _check_conn(self.conn, allow_zero=True)
        if len(self.key) != 16:
            raise LinkError(f"encryption key is {len(self.key)} bytes; expected 16")
        return (
            bytes([0xF0 | self.conn, Control.ENCRYPTION_KEY])
            + bytes(self.key)
            + bytes([_u8("isResponse", self.is_response)])
        )

    def __str__(self) -> str:
        return f"key conn={self.conn} key={self.key.hex()} isResponse={self.is_response}"


@dataclass(frozen=True)
class OtherControl:
    """A transfer control packet not decoded here (capabilities 4, key request 6, unknown ids)."""

    conn: int
    control: int | None
    body: bytes

    def encode(self) -> bytes:
        """The packet's bytes."""
        head = bytes([0xF0 | self.conn]) if self.control is None else bytes([0xF0 | self.conn, self.control])
        return head + self.body

    def __str__(self) -> str:
        return f"control conn={self.conn} id={_name(Control, self.control) if self.control is not None else None} body={self.body.hex()}"


@dataclass(frozen=True)
class Data:
    """`seq << 4 | conn` then payload bytes: data packet `seq` (0-14) of a transfer."""

    conn: int
    seq: int
    payload: bytes

    def encode(self) -> bytes:
        """The packet's bytes."""
        _check_conn(self.conn, allow_zero=True)
        if self.conn == 0 and self.seq == 0:
            raise LinkError("data seq 0 on connection 0 would be the command byte 00; connection 0 is never used")
        if not 0 <= self.seq < WINDOW:
            raise LinkError(f"data seq {self.seq} is out of range; expected 0-14")
        return bytes([self.seq << 4 | self.conn]) + bytes(self.payload)

    def __str__(self) -> str:
        return f"data conn={self.conn} seq={self.seq} len={len(self.payload)}"


Packet = Union[
    ConnectRequest, ConnectResponse, DisconnectRequest, DisconnectResponse, WatchOpen,
    WatchOpenResponse, WatchClose, WatchCloseResponse, AppInfoRequest, AppInfoResponse,
    OpenAppRequest, OpenAppResponse, UnknownCommand, First, Last, Ack, AckRequest,
    EncryptionKey, OtherControl, Data,
]


def _expect_length(data: bytes, lengths: tuple[int, ...], what: str) -> None:
    if len(data) not in lengths:
        expected = " or ".join(str(n) for n in lengths)
        raise PacketError(
            f"{what} is {len(data)} bytes long; expected {expected}",
            min(len(data), min(lengths)),
            data,
        )


def _uuid_at(data: bytes, offset: int) -> uuidlib.UUID:
    return uuidlib.UUID(bytes=bytes(data[offset : offset + 16]))


def _decode_command(data: bytes, direction: Direction) -> Packet:
    if len(data) < 2:
        return UnknownCommand(None, b"")
    command = data[1]
    from_phone = direction is Direction.PHONE_TO_WATCH
    if command == Command.CONNECT:
        if from_phone:
            _expect_length(data, (19,), "connect request (00 01 uuid flags)")
            return ConnectRequest(_uuid_at(data, 2), data[18])
        _expect_length(data, (20, 21), "connect answer (00 01 status uuid conn flags)")
        return ConnectResponse(data[2], _uuid_at(data, 3), data[19], data[20] if len(data) == 21 else None)
    if command == Command.DISCONNECT:
        if from_phone:
            _expect_length(data, (3,), "disconnect request (00 02 conn)")
            return DisconnectRequest(data[2])
        _expect_length(data, (4,), "disconnect answer (00 02 status conn)")
        return DisconnectResponse(data[2], data[3])
    if command == Command.WATCH_OPEN:
        if from_phone:
            _expect_length(data, (4,), "watch-open answer (00 03 status conn)")
            return WatchOpenResponse(data[2], data[3])
        _expect_length(data, (19,), "watch open (00 03 uuid conn)")
        return WatchOpen(_uuid_at(data, 2), data[18])
    if command == Command.WATCH_CLOSE:
        if from_phone:
            _expect_length(data, (4,), "watch-close answer (00 04 status conn)")
            return WatchCloseResponse(data[2], data[3])
        _expect_length(data, (3,), "watch close (00 04 conn)")
        return WatchClose(data[2])
    if command == Command.APP_INFO:
        if from_phone:
            _expect_length(data, (18,), "app info request (00 05 uuid)")
            return AppInfoRequest(_uuid_at(data, 2))
        _expect_length(data, (20,), "app info answer (00 05 uuid version)")
        return AppInfoResponse(_uuid_at(data, 2), struct.unpack_from("<H", data, 18)[0])
    if command == Command.OPEN_APP:
        if from_phone:
            _expect_length(data, (18,), "open app request (00 06 uuid)")
            return OpenAppRequest(_uuid_at(data, 2))
        _expect_length(data, (19,), "open app answer (00 06 uuid code)")
        return OpenAppResponse(_uuid_at(data, 2), data[18])
    return UnknownCommand(command, bytes(data[2:]))


def _decode_control(data: bytes) -> Packet:
    conn = data[0] & 0x0F
    if len(data) < 2:
        return OtherControl(conn, None, b"")
    control = data[1]
    if control == Control.FIRST:
        _expect_length(data, (7,), "first (F·c 00 flags len)")
        return First(conn, data[2], struct.unpack_from("<I", data, 3)[0])
    if control == Control.LAST:
        _expect_length(data, (5,), "last (F·c 01 seq crc16)")
        return Last(conn, data[2], struct.unpack_from("<H", data, 3)[0])
    if control == Control.ACK:
        _expect_length(data, (5,), "ack (F·c 02 type status seq)")
        return Ack(conn, data[2], data[3], data[4])
    if control == Control.ACK_REQUEST:
        _expect_length(data, (3,), "ack request (F·c 03 seq)")
        return AckRequest(conn, data[2])
    if control == Control.ENCRYPTION_KEY:
        _expect_length(data, (19,), "encryption key (F·c 05 key(16) isResponse)")
        return EncryptionKey(conn, bytes(data[2:18]), data[18])
    return OtherControl(conn, control, bytes(data[2:]))


def decode_packet(data: bytes, direction: Direction) -> Packet:
    """Decode one ATT value of the link.

    `direction` picks the command layouts (they differ each way). Unknown command or control ids
    give `UnknownCommand` / `OtherControl` values; a known packet of the wrong length or an empty
    value raises `PacketError`. Any bytes give one of the two.
    """
    data = bytes(data)
    if not data:
        raise PacketError("empty value; expected at least one byte (00 command, F·c control or data)", 0, data)
    head = data[0]
    if head == 0x00:
        return _decode_command(data, direction)
    if head & 0xF0 == 0xF0:
        return _decode_control(data)
    return Data(head & 0x0F, head >> 4, data[1:])


def describe(data: bytes, direction: Direction) -> str:
    """One line for a log: the decoded packet, or the decode error and the raw bytes."""
    try:
        return str(decode_packet(data, direction))
    except PacketError as error:
        return f"undecodable: {error}"


# ---------------------------------------------------------------------------------------------
# Transfers
# ---------------------------------------------------------------------------------------------


def data_packets(conn: int, buffer: bytes, payload_size: int) -> list[Data]:
    """`buffer` cut into data packets of at most `payload_size` bytes, packet k with seq k mod 15."""
    if payload_size < 1:
        raise LinkError(f"payload size {payload_size}; expected at least 1")
    return [
        Data(conn, index % WINDOW, bytes(buffer[offset : offset + payload_size]))
        for index, offset in enumerate(range(0, len(buffer), payload_size))
    ]


def last_for(conn: int, buffer: bytes, packet_count: int) -> Last:
    """The `last` packet after `packet_count` data packets carrying `buffer`."""
    seq = (packet_count - 1) % WINDOW if packet_count else 0
    return Last(conn, seq, crc16_arc(buffer))


class TransferReceiver:
    """The receiving side of one transfer on one connection (sans-I/O; the rigs do the I/O).

    Create it from the `first`; feed `data()` each data packet and send the ack it returns, if
    any; feed `last()` the `last` and send the ack it returns. `key` is the key that came before
    the `first` (needed when the transfer is encrypted). After `last()` succeeds, `plaintext`
    holds the transferred bytes (decrypted when encrypted, padding included).
    """

    def __init__(self, first: First, key: bytes | None):
        self.first = first
        self.key = key
        self.buffer = bytearray()
        self.count = 0  # data packets accepted
        self.plaintext: bytes | None = None

    def data(self, packet: Data) -> Ack | None:
        """Accept one data packet: an ack after seq 14, a resend ack on a sequence gap, else None."""
        expected = self.count % WINDOW
        if packet.seq != expected:
            return Ack(self.first.conn, AckType.DATA, AckStatus.RESEND, (expected - 1) % WINDOW)
        self.buffer += packet.payload
        self.count += 1
        if packet.seq == WINDOW - 1:
            return Ack(self.first.conn, AckType.DATA, AckStatus.SUCCESS, WINDOW - 1)
        return None

    def last(self, packet: Last) -> Ack:
        """Check length, sequence and CRC, decrypt when asked; the ack to send for `last`."""
        conn = self.first.conn
        expected_seq = (self.count - 1) % WINDOW if self.count else 0
        buffer = bytes(self.buffer)
        if len(buffer) != self.first.length or packet.seq != expected_seq or crc16_arc(buffer) != packet.crc:
            return Ack(conn, AckType.LAST, AckStatus.CRC_FAILURE, packet.seq)
        if self.first.encrypted:
            if self.key is None:
                return Ack(conn, AckType.LAST, AckStatus.NO_ENCRYPTION_KEY, packet.seq)
            try:
                self.plaintext = xxtea_decrypt(buffer, self.key)
            except CryptoError:
                return Ack(conn, AckType.LAST, AckStatus.CRC_FAILURE, packet.seq)
        else:
            self.plaintext = buffer
        return Ack(conn, AckType.LAST, AckStatus.SUCCESS, packet.seq)


# ---------------------------------------------------------------------------------------------
# Monkey C values (docs/connectiq-link.md, "Monkey C value serialization"); big-endian
# ---------------------------------------------------------------------------------------------

STRING_BLOCK_MAGIC = b"\xab\xcd\xab\xcd"
OBJECT_BLOCK_MAGIC = b"\xda\x7a\xda\x7a"


class Tag(enum.IntEnum):
    """Monkey C type tags."""

    NULL = 0x00
    INT = 0x01
    FLOAT = 0x02
    STRING = 0x03
    ARRAY = 0x05
    BOOL = 0x09
    DICTIONARY = 0x0B
    LONG = 0x0E
    DOUBLE = 0x0F
    CHAR = 0x13
    BYTE_ARRAY = 0x14


@dataclass(frozen=True)
class Float32:
    """A number to encode as a 32-bit float (`02`); plain Python floats become doubles (`0F`)."""

    value: float


@dataclass(frozen=True)
class Char:
    """A Monkey C character (`13`, a u32 code point)."""

    code: int


INT32 = range(-(2**31), 2**31)
INT64 = range(-(2**63), 2**63)


def _sort_key(key) -> tuple:
    """Stable order of dictionary keys: by type tag, then by value (strings by code point)."""
    if key is None:
        return (Tag.NULL, 0)
    if isinstance(key, bool):
        return (Tag.BOOL, int(key))
    if isinstance(key, int):
        return (Tag.INT if key in INT32 else Tag.LONG, key)
    if isinstance(key, Float32):
        return (Tag.FLOAT, key.value)
    if isinstance(key, float):
        return (Tag.DOUBLE, key)
    if isinstance(key, str):
        return (Tag.STRING, key)
    if isinstance(key, Char):
        return (Tag.CHAR, key.code)
    if isinstance(key, (bytes, bytearray)):
        return (Tag.BYTE_ARRAY, bytes(key))
    raise MonkeyCError(f"dictionary key {key!r} of type {type(key).__name__} cannot be serialized")


def encode_value(value) -> bytes:
    """Serialize a Python value as a Monkey C message (string block if any, then object block).

    None, bool, int (int32 → `01`, int64 → `0E`), float (`0F`), `Float32` (`02`), str, list/tuple
    (`05`), dict (`0B`, keys in a stable sorted order), bytes (`14`), `Char` (`13`). Anything else,
    an int beyond int64 or a string over 65,534 UTF-8 bytes raises `MonkeyCError`.
    """
    strings = bytearray()
    offsets: dict[str, int] = {}
    objects = bytearray()
    queue = [value]
    index = 0
    while index < len(queue):
        item = queue[index]
        index += 1
        if item is None:
            objects.append(Tag.NULL)
        elif isinstance(item, bool):
            objects += bytes([Tag.BOOL, 1 if item else 0])
        elif isinstance(item, int):
            if item in INT32:
                objects += struct.pack(">Bi", Tag.INT, item)
            elif item in INT64:
                objects += struct.pack(">Bq", Tag.LONG, item)
            else:
                raise MonkeyCError(f"integer {item} does not fit in 64 bits; Monkey C has no larger integer")
        elif isinstance(item, Float32):
            objects += struct.pack(">Bf", Tag.FLOAT, item.value)
        elif isinstance(item, float):
            objects += struct.pack(">Bd", Tag.DOUBLE, item)
        elif isinstance(item, str):
            if item not in offsets:
                encoded = item.encode("utf-8")
                if len(encoded) + 1 > 0xFFFF:
                    raise MonkeyCError(
                        f"string of {len(encoded)} UTF-8 bytes is too long; at most 65,534 fit a u16 length"
                    )
                offsets[item] = len(strings)
                strings += struct.pack(">H", len(encoded) + 1) + encoded + b"\x00"
            objects += struct.pack(">BI", Tag.STRING, offsets[item])
        elif isinstance(item, Char):
            if not 0 <= item.code <= 0xFFFFFFFF:
                raise MonkeyCError(f"character code {item.code} does not fit in u32")
            objects += struct.pack(">BI", Tag.CHAR, item.code)
        elif isinstance(item, (bytes, bytearray)):
            objects += struct.pack(">BI", Tag.BYTE_ARRAY, len(item)) + bytes(item)
        elif isinstance(item, (list, tuple)):
            objects += struct.pack(">BI", Tag.ARRAY, len(item))
            queue.extend(item)
        elif isinstance(item, dict):
            objects += struct.pack(">BI", Tag.DICTIONARY, len(item))
            for key in sorted(item, key=_sort_key):
                queue.append(key)
                queue.append(item[key])
        else:
            raise MonkeyCError(f"value {item!r} of type {type(item).__name__} has no Monkey C form")
    out = bytearray()
    if strings:
        out += STRING_BLOCK_MAGIC + struct.pack(">I", len(strings)) + strings
    out += OBJECT_BLOCK_MAGIC + struct.pack(">I", len(objects)) + objects
    return bytes(out)


class _Reader:
    def __init__(self, data: bytes, start: int, end: int, block: str):
        self.data = data
        self.pos = start
        self.end = end
        self.block = block

    def take(self, count: int, what: str) -> bytes:
        if self.end - self.pos < count:
            raise MonkeyCError(
                f"{what} needs {count} bytes at offset {self.pos} but the {self.block} ends at {self.end}"
            )
        chunk = self.data[self.pos : self.pos + count]
        self.pos += count
        return chunk

    def remaining(self) -> int:
        return self.end - self.pos


def _read_strings(data: bytes, start: int, end: int) -> dict[int, str]:
    reader = _Reader(data, start, end, "string block")
    table: dict[int, str] = {}
    while reader.remaining():
        offset = reader.pos - start
        (size,) = struct.unpack(">H", reader.take(2, "string length"))
        if size == 0:
            raise MonkeyCError(f"string at block offset {offset} has length 0; expected UTF-8 length + 1 (≥ 1)")
        body = reader.take(size, f"string at block offset {offset}")
        if body[-1] != 0:
            raise MonkeyCError(f"string at block offset {offset} does not end with 00")
        try:
            table[offset] = body[:-1].decode("utf-8")
        except UnicodeDecodeError as error:
            raise MonkeyCError(f"string at block offset {offset} is not UTF-8: {error}") from None
    return table


class _Pending:
    """A container whose children come later in breadth-first order."""

    __slots__ = ("target", "count")

    def __init__(self, target, count: int):
        self.target = target
        self.count = count


def _read_block_header(data: bytes, pos: int, magic: bytes, name: str) -> tuple[int, int]:
    if data[pos : pos + 4] != magic:
        raise MonkeyCError(
            f"expected the {name} magic {magic.hex()} at offset {pos}, found {data[pos:pos + 4].hex() or 'end of data'}"
        )
    if len(data) - pos < 8:
        raise MonkeyCError(f"the {name} header at offset {pos} is cut off; expected magic and u32 length")
    (length,) = struct.unpack_from(">I", data, pos + 4)
    start = pos + 8
    if len(data) - start < length:
        raise MonkeyCError(
            f"the {name} at offset {pos} says {length} bytes but only {len(data) - start} follow"
        )
    return start, start + length


def decode_value_prefix(data: bytes):
    """Decode one Monkey C message at the start of `data`; returns `(value, bytes consumed)`.

    Raises `MonkeyCError` for anything that is not a well-formed message (bad magic, lengths
    past the end, unknown tag, string offset not in the string block, a container as a
    dictionary key, a repeated key, bytes left inside the object block).
    """
    data = bytes(data)
    pos = 0
    strings: dict[int, str] = {}
    if data[:4] == STRING_BLOCK_MAGIC:
        start, end = _read_block_header(data, 0, STRING_BLOCK_MAGIC, "string block")
        strings = _read_strings(data, start, end)
        pos = end
    start, end = _read_block_header(data, pos, OBJECT_BLOCK_MAGIC, "object block")
    reader = _Reader(data, start, end, "object block")

    def read_one():
        at = reader.pos
        tag = reader.take(1, "type tag")[0]
        if tag == Tag.NULL:
            return None, None
        if tag == Tag.INT:
            return struct.unpack(">i", reader.take(4, "int32"))[0], None
        if tag == Tag.FLOAT:
            return struct.unpack(">f", reader.take(4, "float32"))[0], None
        if tag == Tag.DOUBLE:
            return struct.unpack(">d", reader.take(8, "double"))[0], None
        if tag == Tag.LONG:
            return struct.unpack(">q", reader.take(8, "int64"))[0], None
        if tag == Tag.BOOL:
            flag = reader.take(1, "bool")[0]
            if flag > 1:
                raise MonkeyCError(f"bool at offset {at} is {flag}; expected 0 or 1")
            return flag == 1, None
        if tag == Tag.STRING:
            (offset,) = struct.unpack(">I", reader.take(4, "string offset"))
            if offset not in strings:
                raise MonkeyCError(
                    f"string at offset {at} refers to string block offset {offset}, where no string starts"
                )
            return strings[offset], None
        if tag == Tag.CHAR:
            return Char(struct.unpack(">I", reader.take(4, "char"))[0]), None
        if tag == Tag.BYTE_ARRAY:
            (length,) = struct.unpack(">I", reader.take(4, "byte array length"))
            return reader.take(length, f"byte array of {length} bytes"), None
        if tag == Tag.ARRAY:
            (count,) = struct.unpack(">I", reader.take(4, "array count"))
            if count > reader.remaining():
                raise MonkeyCError(
                    f"array at offset {at} has {count} elements but only {reader.remaining()} bytes remain"
                )
            target: list = []
            return target, _Pending(target, count)
        if tag == Tag.DICTIONARY:
            (count,) = struct.unpack(">I", reader.take(4, "dictionary count"))
            if 2 * count > reader.remaining():
                raise MonkeyCError(
                    f"dictionary at offset {at} has {count} pairs but only {reader.remaining()} bytes remain"
                )
            target_dict: dict = {}
            return target_dict, _Pending(target_dict, count)
        raise MonkeyCError(f"unknown type tag 0x{tag:02x} at offset {at}")

    top, pending = read_one()
    queue = [pending] if pending else []
    index = 0
    while index < len(queue):
        container = queue[index]
        index += 1
        if isinstance(container.target, list):
            for _ in range(container.count):
                child, child_pending = read_one()
                container.target.append(child)
                if child_pending:
                    queue.append(child_pending)
        else:
            for _ in range(container.count):
                key_at = reader.pos
                key, key_pending = read_one()
                if key_pending:
                    raise MonkeyCError(f"dictionary key at offset {key_at} is a container; Python keys must be hashable")
                if key in container.target:
                    raise MonkeyCError(f"dictionary key {key!r} at offset {key_at} appears twice")
                child, child_pending = read_one()
                container.target[key] = child
                if child_pending:
                    queue.append(child_pending)
    if reader.remaining():
        raise MonkeyCError(
            f"object block has {reader.remaining()} bytes after its last object (offset {reader.pos})"
        )
    return top, end


def decode_value(data: bytes):
    """Decode a whole Monkey C message; trailing zero bytes (XXTEA padding) are allowed."""
    value, consumed = decode_value_prefix(data)
    rest = bytes(data[consumed:])
    if rest.strip(b"\x00"):
        raise MonkeyCError(f"{len(rest)} bytes follow the message at offset {consumed} and are not zero padding")
    return value


def values_equal(a, b) -> bool:
    """Equality that treats NaN as equal to NaN and tuples like lists (for round-trip checks)."""
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(values_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(values_equal(a[k], b[k]) for k in a)
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b  # True is not 1 in Monkey C
    return a == b
