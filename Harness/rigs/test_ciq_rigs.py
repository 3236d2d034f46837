"""Tests of the Connect IQ rigs: the link codecs, then the watch and the bridge end to end.

Run with `python3 -m pytest Harness/rigs -q`. The end-to-end tests start real processes
(ciq_controllers.py on free TCP ports, ciq_watch.py, ciq_phone_bridge.py) on loopback and play a
minimal phone over the bridge's JSON lines, with ciq_link.py as the phone's codec. Every test is
bounded by an alarm, and every process it starts is stopped at its end.
"""

import json
import os
import random
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import shutil

import pytest
import xxtea  # the reference XXTEA (requirements.txt)

RIGS = Path(__file__).resolve().parent
sys.path.insert(0, str(RIGS))

import ciq_link as link  # noqa: E402

TEST_LIMIT_S = 60  # no test may run longer
STARTUP_S = 20.0  # a rig process must say READY within this

ECHO = uuid.UUID(link.LOOPBACK_APP_UUID)
NOT_INSTALLED = uuid.UUID("11111111-2222-3333-4444-555555555501")
SILENT = uuid.UUID("11111111-2222-3333-4444-555555555502")
SLOW = uuid.UUID("11111111-2222-3333-4444-555555555503")
OOM = uuid.UUID("11111111-2222-3333-4444-555555555504")
BUSY = uuid.UUID("11111111-2222-3333-4444-555555555505")
NOT_STARTED = uuid.UUID("11111111-2222-3333-4444-555555555506")
DISCONNECT_MID = uuid.UUID("11111111-2222-3333-4444-555555555507")
CHATTY = uuid.UUID("11111111-2222-3333-4444-555555555508")
UNKNOWN = uuid.UUID("11111111-2222-3333-4444-5555555555ff")
WATCH_ADDRESS = "F0:F1:F2:F3:F4:F5"
SECOND_WATCH_ADDRESS = "E0:E1:E2:E3:E4:E5"
ABSENT_ADDRESS = "D0:D1:D2:D3:D4:D5"
ECHO_VERSION = 7


@pytest.fixture(autouse=True)
def time_limit():
    """Fail any test that runs past TEST_LIMIT_S (SIGALRM; the runner is single-threaded)."""

    def expired(_signum, _frame):
        raise TimeoutError(f"test ran past its {TEST_LIMIT_S} s limit")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.alarm(TEST_LIMIT_S)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


# =============================================================================================
# ciq_link: vectors from docs/connectiq-link.md
# =============================================================================================

MONKEY_C_VECTORS = [
    ("Hello, world!", "abcdabcd00000010000e48656c6c6f2c20776f726c642100da7ada7a000000050300000000"),
    (3, "da7ada7a000000050100000003"),
    (None, "da7ada7a0000000100"),
    (5000000000, "da7ada7a000000090e000000012a05f200"),
    ([[1], [2]], "da7ada7a0000001905000000020500000001050000000101000000010100000002"),
    (
        ["hello pi", 3.14159],
        "abcdabcd0000000b000968656c6c6f20706900da7ada7a00000013050000000203000000000f400921f9f01b866e",
    ),
    (
        {"a": "b", "b": [1, 2]},
        "abcdabcd000000080002610000026200da7ada7a000000230b0000000203000000000300000004030000000405"
        "0000000201000000010100000002",
    ),
]


@pytest.mark.parametrize("value,expected", MONKEY_C_VECTORS, ids=[repr(v) for v, _ in MONKEY_C_VECTORS])
def test_monkey_c_encoding_matches_published_vector(value, expected):
    assert link.encode_value(value).hex() == expected


@pytest.mark.parametrize("value,encoded", MONKEY_C_VECTORS, ids=[repr(v) for v, _ in MONKEY_C_VECTORS])
def test_monkey_c_decoding_of_published_vector_gives_value(value, encoded):
    assert link.values_equal(link.decode_value(bytes.fromhex(encoded)), value)


def test_crc16_arc_check_value_is_bb3d():
    assert link.crc16_arc(b"123456789") == 0xBB3D


def test_crc16_arc_of_nothing_is_zero():
    assert link.crc16_arc(b"") == 0


def test_monkey_c_dictionary_decodes_with_keys_in_any_order():
    # {"b": [1, 2], "a": "b"} written with key "b" first: strings "b" at 0, "a" at 4.
    data = (
        link.STRING_BLOCK_MAGIC + struct.pack(">I", 8) + b"\x00\x02b\x00" + b"\x00\x02a\x00"
        + link.OBJECT_BLOCK_MAGIC + struct.pack(">I", 0x23)
        + b"\x0b\x00\x00\x00\x02"
        + b"\x03\x00\x00\x00\x00" + b"\x05\x00\x00\x00\x02"
        + b"\x03\x00\x00\x00\x04" + b"\x03\x00\x00\x00\x00"
        + b"\x01\x00\x00\x00\x01" + b"\x01\x00\x00\x00\x02"
    )
    assert link.decode_value(data) == {"a": "b", "b": [1, 2]}


def test_monkey_c_strings_are_interned_once():
    encoded = link.encode_value(["x", "x", {"x": "x"}])
    assert encoded.count(b"\x00\x02x\x00") == 1


def test_monkey_c_integer_width_follows_int32_range():
    assert link.encode_value(2**31 - 1)[8] == link.Tag.INT
    assert link.encode_value(2**31)[8] == link.Tag.LONG
    assert link.encode_value(-(2**31))[8] == link.Tag.INT
    assert link.encode_value(-(2**31) - 1)[8] == link.Tag.LONG


def test_monkey_c_refuses_integer_beyond_int64():
    with pytest.raises(link.MonkeyCError, match="64 bits"):
        link.encode_value(2**63)


def test_monkey_c_refuses_value_without_monkey_c_form():
    with pytest.raises(link.MonkeyCError, match="no Monkey C form"):
        link.encode_value({"when": object()})


def test_monkey_c_round_trips_every_type():
    value = {
        "null": None,
        "yes": True,
        "no": False,
        "int": -5,
        "long": -(2**40),
        "double": 2.5,
        "float": link.Float32(0.5),
        "char": link.Char(0x1F600),
        "bytes": b"\x00\x01\xff",
        "text": "héllo ✓",
        "nested": [[], {}, [[{"deep": [1, "two", None]}]]],
        7: "int key",
    }
    decoded = link.decode_value(link.encode_value(value))
    expected = dict(value, float=0.5)
    assert link.values_equal(decoded, expected)


def test_monkey_c_bool_is_not_taken_for_int():
    assert link.decode_value(link.encode_value([True, 1])) == [True, 1]
    assert isinstance(link.decode_value(link.encode_value(True)), bool)


def test_monkey_c_decoding_accepts_zero_padding_after_message():
    assert link.decode_value(link.encode_value("pad") + bytes(3)) == "pad"


def test_monkey_c_decoding_rejects_other_bytes_after_message():
    with pytest.raises(link.MonkeyCError, match="not zero padding"):
        link.decode_value(link.encode_value(1) + b"\x01")


def test_monkey_c_decoding_rejects_string_offset_outside_string_block():
    data = link.OBJECT_BLOCK_MAGIC + struct.pack(">I", 5) + b"\x03\x00\x00\x00\x09"
    with pytest.raises(link.MonkeyCError, match="no string starts"):
        link.decode_value(data)


def test_monkey_c_decoding_rejects_count_larger_than_block():
    data = link.OBJECT_BLOCK_MAGIC + struct.pack(">I", 5) + b"\x05\xff\xff\xff\xff"
    with pytest.raises(link.MonkeyCError, match="elements"):
        link.decode_value(data)


def test_monkey_c_decoding_rejects_unknown_tag():
    data = link.OBJECT_BLOCK_MAGIC + struct.pack(">I", 1) + b"\x42"
    with pytest.raises(link.MonkeyCError, match="unknown type tag 0x42"):
        link.decode_value(data)


def test_monkey_c_decoder_gives_value_or_typed_error_for_any_bytes():
    rng = random.Random(0xC1C)
    seeds = [link.encode_value(v) for v, _ in MONKEY_C_VECTORS] + [link.encode_value({"k": [1, "x", 2.0]})]
    for _ in range(3000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 4)):
            action = rng.randrange(3)
            if action == 0 and data:
                data[rng.randrange(len(data))] = rng.randrange(256)
            elif action == 1 and data:
                del data[rng.randrange(len(data)) :]
            else:
                data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 6)))
        try:
            link.decode_value(bytes(data))
        except link.MonkeyCError:
            pass


# =============================================================================================
# ciq_link: XXTEA against the `xxtea` package
# =============================================================================================


@pytest.mark.parametrize("length", [8, 12, 16, 20, 52, 100, 2048])
def test_xxtea_encryption_matches_xxtea_package_without_padding(length):
    rng = random.Random(length)
    data = bytes(rng.randrange(256) for _ in range(length))
    key = bytes(rng.randrange(256) for _ in range(16))
    assert link.xxtea_encrypt(data, key) == xxtea.encrypt(data, key, padding=False)


@pytest.mark.parametrize("length", [8, 12, 100, 2048])
def test_xxtea_decryption_inverts_encryption(length):
    rng = random.Random(1000 + length)
    data = bytes(rng.randrange(256) for _ in range(length))
    key = bytes(rng.randrange(256) for _ in range(16))
    assert link.xxtea_decrypt(link.xxtea_encrypt(data, key), key) == data


def test_xxtea_refuses_data_not_word_aligned():
    with pytest.raises(link.CryptoError, match="multiple of 4"):
        link.xxtea_encrypt(bytes(10), bytes(16))


def test_xxtea_refuses_key_not_16_bytes():
    with pytest.raises(link.CryptoError, match="exactly 16"):
        link.xxtea_encrypt(bytes(8), bytes(15))


@pytest.mark.parametrize("length,padded", [(0, 8), (1, 8), (8, 8), (9, 12), (12, 12), (13, 16)])
def test_padding_reaches_multiple_of_four_and_at_least_eight(length, padded):
    assert link.pad_for_xxtea(b"\x01" * length) == b"\x01" * length + bytes(padded - length)


# =============================================================================================
# ciq_link: packets
# =============================================================================================

APP = uuid.UUID("0180E520-5F7E-11E4-9803-0800200C9A66")
PACKETS = [
    (link.Direction.PHONE_TO_WATCH, link.ConnectRequest(APP, 1), "0001" + APP.hex + "01"),
    (link.Direction.WATCH_TO_PHONE, link.ConnectResponse(0, APP, 3, 1), "000100" + APP.hex + "0301"),
    (link.Direction.WATCH_TO_PHONE, link.ConnectResponse(0, APP, 3, None), "000100" + APP.hex + "03"),
    (link.Direction.PHONE_TO_WATCH, link.DisconnectRequest(3), "000203"),
    (link.Direction.WATCH_TO_PHONE, link.DisconnectResponse(1, 3), "00020103"),
    (link.Direction.WATCH_TO_PHONE, link.WatchOpen(APP, 4), "0003" + APP.hex + "04"),
    (link.Direction.PHONE_TO_WATCH, link.WatchOpenResponse(0, 4), "00030004"),
    (link.Direction.WATCH_TO_PHONE, link.WatchClose(4), "000404"),
    (link.Direction.PHONE_TO_WATCH, link.WatchCloseResponse(0, 4), "00040004"),
    (link.Direction.PHONE_TO_WATCH, link.AppInfoRequest(APP), "0005" + APP.hex),
    (link.Direction.WATCH_TO_PHONE, link.AppInfoResponse(APP, 0x1234), "0005" + APP.hex + "3412"),
    (link.Direction.PHONE_TO_WATCH, link.OpenAppRequest(APP), "0006" + APP.hex),
    (link.Direction.WATCH_TO_PHONE, link.OpenAppResponse(APP, 2), "0006" + APP.hex + "02"),
    (link.Direction.PHONE_TO_WATCH, link.UnknownCommand(9, b"\xaa"), "0009aa"),
    (link.Direction.PHONE_TO_WATCH, link.First(3, 0x02, 0x01020304), "f3000204030201"),
    (link.Direction.PHONE_TO_WATCH, link.Last(3, 14, 0xBB3D), "f3010e3dbb"),
    (link.Direction.WATCH_TO_PHONE, link.Ack(3, 1, 0, 14), "f30201000e"),
    (link.Direction.PHONE_TO_WATCH, link.AckRequest(3, 5), "f30305"),
    (link.Direction.PHONE_TO_WATCH, link.EncryptionKey(3, bytes(range(16)), 0), "f305" + bytes(range(16)).hex() + "00"),
    (link.Direction.WATCH_TO_PHONE, link.OtherControl(3, 4, b"\x01\x02"), "f3040102"),
    (link.Direction.PHONE_TO_WATCH, link.Data(3, 14, b"abc"), "e3616263"),
    (link.Direction.PHONE_TO_WATCH, link.Data(1, 0, b""), "01"),
]


@pytest.mark.parametrize("direction,packet,encoded", PACKETS, ids=[str(p) for _, p, _ in PACKETS])
def test_packet_encodes_to_documented_layout(direction, packet, encoded):
    assert packet.encode().hex() == encoded.lower()


@pytest.mark.parametrize("direction,packet,encoded", PACKETS, ids=[str(p) for _, p, _ in PACKETS])
def test_packet_decodes_back_to_same_value(direction, packet, encoded):
    assert link.decode_packet(bytes.fromhex(encoded), direction) == packet


def test_uuid_goes_most_significant_byte_first():
    assert link.AppInfoRequest(APP).encode()[2:6] == bytes([0x01, 0x80, 0xE5, 0x20])


def test_known_packet_with_wrong_length_is_packet_error():
    with pytest.raises(link.PacketError, match="first"):
        link.decode_packet(bytes.fromhex("f30002040302"), link.Direction.PHONE_TO_WATCH)


def test_empty_value_is_packet_error():
    with pytest.raises(link.PacketError, match="empty"):
        link.decode_packet(b"", link.Direction.WATCH_TO_PHONE)


def test_packet_decoder_gives_value_or_typed_error_for_any_bytes():
    rng = random.Random(0xF00D)
    for _ in range(5000):
        data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 25)))
        for direction in link.Direction:
            try:
                packet = link.decode_packet(data, direction)
            except link.PacketError:
                continue
            assert packet.encode() == data


def test_data_packets_number_seq_modulo_fifteen():
    packets = link.data_packets(2, bytes(19 * 31 + 5), 19)
    assert [p.seq for p in packets] == [k % 15 for k in range(32)]
    assert len(packets[-1].payload) == 5
    assert link.last_for(2, bytes(19 * 31 + 5), len(packets)).seq == 1


def test_receiver_acks_each_full_window_only():
    payload = bytes(range(200)) * 2
    first = link.First(1, 0, len(payload))
    receiver = link.TransferReceiver(first, None)
    acks = [receiver.data(p) for p in link.data_packets(1, payload, 19)]
    assert [a for a in acks if a is not None] == [link.Ack(1, link.AckType.DATA, 0, 14)]
    assert acks[14] is not None


def test_receiver_decrypts_encrypted_transfer_with_key():
    key = bytes(range(16))
    plain = link.pad_for_xxtea(link.encode_value({"k": "v"}))
    cipher = link.xxtea_encrypt(plain, key)
    receiver = link.TransferReceiver(link.First(1, link.FLAG_ENCRYPTED, len(cipher)), key)
    packets = link.data_packets(1, cipher, 19)
    for packet in packets:
        receiver.data(packet)
    ack = receiver.last(link.last_for(1, cipher, len(packets)))
    assert ack == link.Ack(1, link.AckType.LAST, 0, len(packets) - 1)
    assert link.decode_value(receiver.plaintext) == {"k": "v"}


def test_receiver_reports_crc_failure_for_wrong_crc():
    receiver = link.TransferReceiver(link.First(1, 0, 3), None)
    receiver.data(link.Data(1, 0, b"abc"))
    ack = receiver.last(link.Last(1, 0, link.crc16_arc(b"abc") ^ 1))
    assert ack.status == link.AckStatus.CRC_FAILURE


def test_receiver_asks_resend_on_sequence_gap():
    receiver = link.TransferReceiver(link.First(1, 0, 40), None)
    receiver.data(link.Data(1, 0, bytes(19)))
    assert receiver.data(link.Data(1, 2, bytes(19))) == link.Ack(1, link.AckType.DATA, link.AckStatus.RESEND, 0)


# =============================================================================================
# End to end: processes on loopback
# =============================================================================================


class Process:
    """A rig process: READY line read from stdout, stderr kept in a file for failure reports."""

    def __init__(self, name, argv):
        self.name = name
        self.log = tempfile.NamedTemporaryFile(prefix=f"{name}-", suffix=".log", delete=False)
        self.popen = subprocess.Popen(
            [sys.executable, *argv],
            cwd=RIGS,
            stdout=subprocess.PIPE,
            stderr=self.log,
            stdin=subprocess.DEVNULL,
        )
        self.ready = None

    def wait_ready(self):
        """Wait for `READY word...`; keeps and returns the words after READY."""
        self.ready = self._read_ready()
        return self.ready

    def _read_ready(self):
        deadline = time.monotonic() + STARTUP_S
        line = b""
        while not line.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.popen.poll() is not None:
                raise RuntimeError(f"{self.name} did not say READY: {self.stderr()}")
            ready, _, _ = select.select([self.popen.stdout], [], [], remaining)
            if ready:
                chunk = os.read(self.popen.stdout.fileno(), 1)
                if not chunk:
                    raise RuntimeError(f"{self.name} closed stdout before READY: {self.stderr()}")
                line += chunk
        words = line.decode().split()
        assert words[0] == "READY", f"{self.name} printed {line!r}"
        return words[1:]

    def stderr(self):
        try:
            return Path(self.log.name).read_text(errors="replace")[-6000:]
        except FileNotFoundError:
            return "(log already removed)"

    def stop(self, timeout=10.0):
        """SIGTERM, wait; SIGKILL if it does not end. Returns the exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.popen.stdout.close()
        self.log.close()
        return self.popen.returncode

    def cleanup(self):
        """Stop the process and remove its log; safe to call twice."""
        code = self.stop()
        if os.path.exists(self.log.name):
            os.unlink(self.log.name)
        return code


def private_listen(name):
    """A bridge's `--listen` as tether live gives it: `unix:PATH` in a fresh folder only this user
    can enter (mkdtemp: mode 0700). Returns (folder, the argument); remove the folder at the end."""
    folder = tempfile.mkdtemp(prefix="tether-test-")
    return folder, f"unix:{folder}/{name}.sock"


def connect_to(address, timeout=5):
    """A socket connected to a bridge's READY address: `unix:PATH`, or a TCP port on 127.0.0.1."""
    address = str(address)
    if address.startswith("unix:"):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        sock.connect(address[len("unix:"):])
        return sock
    return socket.create_connection(("127.0.0.1", int(address)), timeout=timeout)


class Phone:
    """The test's minimal phone: the bridge's JSON lines plus ciq_link as the link codec."""

    def __init__(self, address):
        """`address`: the word after the bridge's READY (`unix:PATH`, or a TCP port)."""
        self.sock = connect_to(address)
        self.buffer = b""
        self.events = []  # read but not yet consumed
        self.key_rng = random.Random(42)

    # --- JSON lines ---
    def send(self, **op):
        self.sock.sendall((json.dumps(op) + "\n").encode())

    def _read_event(self, deadline):
        while b"\n" not in self.buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(65536)
            except socket.timeout:
                return None
            if not chunk:
                raise ConnectionError("bridge closed the socket")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def event(self, ev, timeout=10.0, **match):
        """The next event of kind `ev` matching `match` (others are kept for later)."""
        for index, event in enumerate(self.events):
            if event["ev"] == ev and all(event.get(k) == v for k, v in match.items()):
                return self.events.pop(index)
        deadline = time.monotonic() + timeout
        while True:
            event = self._read_event(deadline)
            if event is None:
                raise AssertionError(f"no {ev} event {match} within {timeout} s; pending {self.events}")
            if event["ev"] == ev and all(event.get(k) == v for k, v in match.items()):
                return event
            self.events.append(event)

    def connect(self, peer=WATCH_ADDRESS):
        self.send(op="connect", peer=peer)
        return self.event("connected", peer=peer)

    # --- link packets ---
    def write(self, packet, peer=WATCH_ADDRESS):
        self.send(op="write", peer=peer, hex=packet.encode().hex())

    def packet(self, timeout=6.0, peer=WATCH_ADDRESS):
        """The next packet the watch notified, decoded, or None when none came in time."""
        try:
            event = self.event("notify", timeout=timeout, peer=peer)
        except AssertionError:
            return None
        return link.decode_packet(bytes.fromhex(event["hex"]), link.Direction.WATCH_TO_PHONE)

    def request(self, packet, timeout=6.0, peer=WATCH_ADDRESS):
        self.write(packet, peer)
        answer = self.packet(timeout, peer)
        assert answer is not None, f"no answer to {packet}"
        return answer

    def app_info(self, app, peer=WATCH_ADDRESS):
        answer = self.request(link.AppInfoRequest(app), peer=peer)
        assert isinstance(answer, link.AppInfoResponse) and answer.app == app
        return answer.version

    def open_connection(self, app, peer=WATCH_ADDRESS):
        answer = self.request(link.ConnectRequest(app, 1), peer=peer)
        assert isinstance(answer, link.ConnectResponse) and answer.app == app
        return answer

    def send_message(self, conn, value, payload_size):
        """An encrypted transfer as docs/connectiq-link.md orders it; returns every ack received."""
        acks = []
        key = bytes(self.key_rng.randrange(256) for _ in range(16))
        cipher = link.xxtea_encrypt(link.pad_for_xxtea(link.encode_value(value)), key)
        acks.append(self.request(link.EncryptionKey(conn, key, 0)))
        assert acks[-1] == link.Ack(conn, link.AckType.ENCRYPTION_KEY, 0, 0)
        acks.append(self.request(link.First(conn, link.FLAG_ENCRYPTED, len(cipher))))
        assert acks[-1] == link.Ack(conn, link.AckType.FIRST, 0, 0)
        packets = link.data_packets(conn, cipher, payload_size)
        for packet in packets:
            self.write(packet)
            if packet.seq == link.WINDOW - 1:
                acks.append(self.packet())
                assert acks[-1] == link.Ack(conn, link.AckType.DATA, 0, 14)
        last = link.last_for(conn, cipher, len(packets))
        acks.append(self.request(last))
        assert acks[-1] == link.Ack(conn, link.AckType.LAST, 0, last.seq)
        return acks, len(packets)

    def receive_message(self, conn, timeout=6.0):
        """Accept one transfer from the watch; returns (first, the transferred bytes)."""
        first = self.packet(timeout)
        assert isinstance(first, link.First) and first.conn == conn, f"expected first, got {first}"
        self.write(link.Ack(conn, link.AckType.FIRST, 0, 0))
        receiver = link.TransferReceiver(first, None)
        while True:
            packet = self.packet()
            if isinstance(packet, link.Last):
                ack = receiver.last(packet)
                self.write(ack)
                assert ack.status == link.AckStatus.SUCCESS, f"watch's transfer failed: {ack}"
                return first, receiver.plaintext
            assert isinstance(packet, link.Data) and packet.conn == conn, f"expected data, got {packet}"
            ack = receiver.data(packet)
            if ack is not None:
                self.write(ack)

    def close(self):
        self.sock.close()


class Rig:
    """Controllers + watch(es) + bridge, all on free loopback ports."""

    def __init__(self, apps, watch_args=(), controllers=2, bridge_args=()):
        self.processes = []
        try:
            self.controllers = self._start(
                "controllers", ["ciq_controllers.py", *(["tcp-server:127.0.0.1:0"] * controllers)]
            )
            self.ports = [int(p) for p in self.controllers.wait_ready()]
            # The watch and the bridge start side by side: each has its own controller.
            self.watch = self._start("watch", self.watch_argv(self.ports[0], WATCH_ADDRESS, apps, watch_args))
            # The bridge's channel as tether live makes it: a Unix socket in a private folder.
            self.socket_folder, listen = private_listen("bridge")
            self.bridge_address = listen
            self.bridge_process = self._start(
                "bridge",
                ["ciq_phone_bridge.py", "--hci", f"tcp-client:127.0.0.1:{self.ports[1]}",
                 "--listen", listen, *bridge_args],
            )
            self.watch.wait_ready()
            self.phone = Phone(self.bridge_process.wait_ready()[0])
        except BaseException:
            self.close()
            raise

    def _start(self, name, argv):
        process = Process(name, argv)
        self.processes.append(process)
        return process

    @staticmethod
    def watch_argv(port, address, apps, extra=()):
        argv = ["ciq_watch.py", "--hci", f"tcp-client:127.0.0.1:{port}", "--address", address]
        for app in apps:
            argv += ["--app", app]
        return argv + list(extra)

    def start_watch(self, port, address, apps, extra=()):
        """Another watch, on controller `port`; returns once it advertises."""
        watch = self._start(f"watch-{address}", self.watch_argv(port, address, apps, extra))
        watch.wait_ready()
        return watch

    def logs(self):
        return "\n".join(f"--- {p.name} ---\n{p.stderr()}" for p in self.processes)

    def close(self):
        codes = {}
        if getattr(self, "phone", None) is not None:
            self.phone.close()
        for process in reversed(self.processes):
            codes[process.name] = process.cleanup()
        if getattr(self, "socket_folder", None) is not None:
            shutil.rmtree(self.socket_folder)
            self.socket_folder = None
        return codes


MAIN_APPS = [
    f"{ECHO}:echo:{ECHO_VERSION}",
    f"{NOT_INSTALLED}:not-installed",
    f"{SILENT}:silent",
    f"{SLOW}:slow",
    f"{OOM}:oom",
    f"{BUSY}:busy",
    f"{NOT_STARTED}:not-started",
    f"{DISCONNECT_MID}:disconnect-mid",
]


@pytest.fixture
def rig():
    """The usual rig: one watch with MAIN_APPS, one bridge.

    The rig's logs are printed at teardown; pytest shows them only for a failed test.
    """
    started = Rig(MAIN_APPS, watch_args=["--slow-ms", "200"], bridge_args=["--connect-timeout", "2"])
    yield started
    print(started.logs())
    started.close()


def sample_message(size):
    """A nested Monkey C value whose serialization is about `size` bytes."""
    value = {
        "kind": "sample",
        "values": [i * 1000 for i in range(20)],
        "ratio": 0.125,
        "big": 5000000000,
        "flags": [True, False, None],
        "tags": ["a", "b", "a"],
        "nested": {"x": [1, [2, [3]]], "y": "why"},
        "text": "",
    }
    value["text"] = "t" * max(0, size - len(link.encode_value(value)))
    return value


def test_bridge_says_bluetooth_ready_first(rig):
    assert rig.phone.event("bluetooth") == {"ev": "bluetooth", "ready": True}


def test_bridge_connects_with_mtu_and_current_service(rig):
    connected = rig.phone.connect()
    assert connected == {"ev": "connected", "peer": WATCH_ADDRESS, "mtu": 247, "max_write": 244, "service": "current"}


def test_app_info_reports_version_of_installed_app(rig):
    rig.phone.connect()
    assert rig.phone.app_info(ECHO) == ECHO_VERSION


def test_app_info_reports_not_installed_app_as_ffff(rig):
    rig.phone.connect()
    assert rig.phone.app_info(NOT_INSTALLED) == 0xFFFF


def test_app_info_reports_unconfigured_app_as_ffff(rig):
    rig.phone.connect()
    assert rig.phone.app_info(UNKNOWN) == 0xFFFF


def test_connect_to_installed_app_gives_connection_with_large_packets(rig):
    rig.phone.connect()
    answer = rig.phone.open_connection(ECHO)
    assert (answer.status, answer.conn, answer.large_packets) == (0, 1, True)


def test_connect_to_not_installed_app_answers_app_not_found(rig):
    rig.phone.connect()
    assert rig.phone.open_connection(NOT_INSTALLED).status == link.ConnectStatus.APP_NOT_FOUND


def test_connect_to_busy_app_answers_no_free_ids(rig):
    rig.phone.connect()
    assert rig.phone.open_connection(BUSY).status == link.ConnectStatus.NO_FREE_CONNECTION_IDS


def test_second_connect_to_same_app_answers_already_open(rig):
    rig.phone.connect()
    first = rig.phone.open_connection(ECHO)
    again = rig.phone.open_connection(ECHO)
    assert (again.status, again.conn) == (link.ConnectStatus.CONNECTION_ALREADY_OPEN, first.conn)


def test_open_app_answers_prompt_shown_or_not_installed(rig):
    rig.phone.connect()
    shown = rig.phone.request(link.OpenAppRequest(ECHO))
    missing = rig.phone.request(link.OpenAppRequest(NOT_INSTALLED))
    assert (shown.code, missing.code) == (link.OpenAppResult.PROMPT_SHOWN, link.OpenAppResult.APP_NOT_INSTALLED)


def test_disconnect_command_frees_connection_id(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(ECHO).conn
    assert rig.phone.request(link.DisconnectRequest(conn)) == link.DisconnectResponse(0, conn)
    assert rig.phone.request(link.DisconnectRequest(conn)) == link.DisconnectResponse(1, conn)


@pytest.mark.parametrize(
    "size,payload_size", [(2048, link.SMALL_PAYLOAD), (2048, link.LARGE_PAYLOAD), (8192, link.LARGE_PAYLOAD)]
)
def test_echo_app_returns_encrypted_message_as_plain_transfer(rig, size, payload_size):
    rig.phone.connect()
    conn = rig.phone.open_connection(ECHO).conn
    message = sample_message(size)
    acks, packet_count = rig.phone.send_message(conn, message, payload_size)
    assert len(acks) == 3 + packet_count // link.WINDOW
    first, echoed = rig.phone.receive_message(conn)
    assert first.flags == 0x00
    assert echoed == link.encode_value(message)
    assert link.values_equal(link.decode_value(echoed), message)


def test_slow_app_acknowledges_late_but_completes_echo(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(SLOW).conn
    rig.phone.send_message(conn, {"n": 1}, link.LARGE_PAYLOAD)
    _, echoed = rig.phone.receive_message(conn)
    assert link.decode_value(echoed) == {"n": 1}


def test_ack_request_is_answered_with_type_three(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(ECHO).conn
    assert rig.phone.request(link.AckRequest(conn, 9)) == link.Ack(conn, link.AckType.ACK_REQUEST, 0, 9)


def test_transfer_on_unopened_connection_is_invalid_connection_id(rig):
    rig.phone.connect()
    answer = rig.phone.request(link.First(9, 0, 10))
    assert answer == link.Ack(9, link.AckType.FIRST, link.AckStatus.INVALID_CONNECTION_ID, 0)


def test_silent_app_sends_nothing_after_first(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(SILENT).conn
    cipher = link.xxtea_encrypt(link.pad_for_xxtea(link.encode_value("hi")), bytes(16))
    assert rig.phone.request(link.EncryptionKey(conn, bytes(16), 0)).kind == link.AckType.ENCRYPTION_KEY
    assert rig.phone.request(link.First(conn, link.FLAG_ENCRYPTED, len(cipher))) == link.Ack(conn, 0, 0, 0)
    packets = link.data_packets(conn, cipher, link.SMALL_PAYLOAD)
    for packet in packets:
        rig.phone.write(packet)
    rig.phone.write(link.last_for(conn, cipher, len(packets)))
    assert rig.phone.packet(timeout=6.0) is None


def test_oom_app_answers_first_with_out_of_memory(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(OOM).conn
    rig.phone.request(link.EncryptionKey(conn, bytes(16), 0))
    answer = rig.phone.request(link.First(conn, link.FLAG_ENCRYPTED, 16))
    assert answer == link.Ack(conn, link.AckType.FIRST, link.AckStatus.OUT_OF_MEMORY, 0)


def test_not_started_app_answers_every_first_with_transfer_not_started(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(NOT_STARTED).conn
    answers = [rig.phone.request(link.First(conn, 0, 16)) for _ in range(3)]
    assert answers == [link.Ack(conn, link.AckType.FIRST, link.AckStatus.TRANSFER_NOT_STARTED, 0)] * 3


def test_encrypted_first_without_key_answers_no_encryption_key(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(ECHO).conn
    answer = rig.phone.request(link.First(conn, link.FLAG_ENCRYPTED, 16))
    assert answer == link.Ack(conn, link.AckType.FIRST, link.AckStatus.NO_ENCRYPTION_KEY, 0)


def test_wrong_crc_in_last_answers_crc_failure(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(ECHO).conn
    payload = link.encode_value("plain")
    rig.phone.request(link.First(conn, 0, len(payload)))
    rig.phone.write(link.Data(conn, 0, payload))
    answer = rig.phone.request(link.Last(conn, 0, link.crc16_arc(payload) ^ 0xFFFF))
    assert answer == link.Ack(conn, link.AckType.LAST, link.AckStatus.CRC_FAILURE, 0)


def test_disconnect_mid_app_drops_link_after_five_data_packets(rig):
    rig.phone.connect()
    conn = rig.phone.open_connection(DISCONNECT_MID).conn
    payload = bytes(19 * 10)
    rig.phone.request(link.First(conn, 0, len(payload)))
    for packet in link.data_packets(conn, payload, link.SMALL_PAYLOAD):
        rig.phone.write(packet)
    event = rig.phone.event("disconnected", peer=WATCH_ADDRESS)
    assert event["reason"] == 0x13


def test_disconnect_op_reports_disconnected(rig):
    rig.phone.connect()
    rig.phone.send(op="disconnect", peer=WATCH_ADDRESS)
    assert rig.phone.event("disconnected", peer=WATCH_ADDRESS)["reason"] == 0x13


def test_watch_advertises_again_after_disconnect(rig):
    rig.phone.connect()
    rig.phone.send(op="disconnect", peer=WATCH_ADDRESS)
    rig.phone.event("disconnected", peer=WATCH_ADDRESS)
    rig.phone.connect()
    assert rig.phone.app_info(ECHO) == ECHO_VERSION


def test_absent_peer_is_not_found_and_later_connect_still_works(rig):
    rig.phone.send(op="connect", peer=ABSENT_ADDRESS)
    assert rig.phone.event("not_found", peer=ABSENT_ADDRESS)["reason"]
    rig.phone.connect()
    assert rig.phone.app_info(ECHO) == ECHO_VERSION


def test_bad_commands_give_errors_and_bridge_stays_up(rig):
    rig.phone.sock.sendall(b"this is not json\n")
    rig.phone.send(op="fly")
    rig.phone.send(op="write", peer=WATCH_ADDRESS, hex="00")
    rig.phone.send(op="connect", peer="not-an-address")
    errors = [rig.phone.event("error")["message"] for _ in range(4)]
    assert ["JSON" in errors[0], "unknown op" in errors[1], "not connected" in errors[2], "not a Bluetooth address" in errors[3]] == [True] * 4
    rig.phone.connect()
    assert rig.phone.app_info(ECHO) == ECHO_VERSION


def test_oversized_write_is_refused_with_error(rig):
    rig.phone.connect()
    rig.phone.send(op="write", peer=WATCH_ADDRESS, hex="00" * 245)
    assert "expected 1 to 244" in rig.phone.event("error")["message"]


def test_quit_op_ends_bridge_with_exit_zero(rig):
    rig.phone.connect()
    rig.phone.send(op="quit")
    rig.phone.event("disconnected", peer=WATCH_ADDRESS)
    assert rig.bridge_process.popen.wait(10) == 0


def test_eof_on_socket_ends_bridge_with_exit_zero(rig):
    rig.phone.event("bluetooth")
    rig.phone.sock.shutdown(socket.SHUT_WR)
    assert rig.bridge_process.popen.wait(10) == 0


def test_every_rig_process_exits_zero_on_sigterm(rig):
    rig.phone.connect()
    codes = rig.close()
    assert codes == {"controllers": 0, "watch": 0, "bridge": 0}


def test_bridge_says_ready_with_the_unix_socket_it_was_given(rig):
    assert rig.bridge_process.ready == [rig.bridge_address]


def test_bridge_socket_is_reachable_by_its_user_only(rig):
    path = rig.bridge_address[len("unix:"):]
    assert (os.stat(os.path.dirname(path)).st_mode & 0o777, os.stat(path).st_mode & 0o777) == (0o700, 0o600)


def test_a_second_client_of_the_bridge_socket_cannot_send_it_ops(rig):
    rig.phone.event("bluetooth")
    try:
        intruder = connect_to(rig.bridge_address)
    except (ConnectionRefusedError, FileNotFoundError):
        intruder = None  # refused outright: the bridge stopped listening after its one client
    if intruder is not None:
        # Accepted by the kernel's backlog at most: the bridge closes it without reading.
        intruder.sendall((json.dumps({"op": "quit"}) + "\n").encode())
        assert intruder.recv(100) == b""
        intruder.close()
    # The quit never reached the bridge: it still serves its one client.
    assert rig.phone.connect()["peer"] == WATCH_ADDRESS
    assert rig.bridge_process.popen.poll() is None


def test_a_process_other_than_the_bridges_parent_is_refused_even_when_it_connects_first():
    controllers = Process("controllers", ["ciq_controllers.py", "tcp-server:127.0.0.1:0"])
    folder, listen = private_listen("bridge")
    bridge = None
    phone = None
    try:
        port = int(controllers.wait_ready()[0])
        bridge = Process("bridge", ["ciq_phone_bridge.py", "--hci", f"tcp-client:127.0.0.1:{port}", "--listen", listen])
        address = bridge.wait_ready()[0]
        # Another local process (of the same user) gets in first and tries to stop the bridge.
        intruder = subprocess.run(
            [sys.executable, "-c", (
                "import socket, sys\n"
                "s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
                "s.settimeout(10)\n"
                "s.connect(sys.argv[1])\n"
                "try:\n"
                "    s.sendall(b'{\"op\":\"quit\"}\\n')\n"
                "    print('closed' if s.recv(100) == b'' else 'served')\n"
                "except (BrokenPipeError, ConnectionResetError):\n"
                "    print('closed')  # closed by the bridge before it could even send\n"
            ), address[len("unix:"):]],
            capture_output=True, text=True, timeout=STARTUP_S,
        )
        assert intruder.stdout.strip() == "closed", intruder.stderr
        phone = Phone(address)
        assert phone.event("bluetooth") == {"ev": "bluetooth", "ready": True}
        assert "refused a client (pid" in bridge.stderr()
    finally:
        if phone is not None:
            phone.close()
        if bridge is not None:
            bridge.cleanup()
        controllers.cleanup()
        shutil.rmtree(folder)


def test_bridge_refuses_a_unix_socket_in_a_folder_others_can_enter():
    folder = tempfile.mkdtemp(prefix="tether-test-")
    try:
        os.chmod(folder, 0o755)
        result = subprocess.run(
            [sys.executable, str(RIGS / "ciq_phone_bridge.py"), "--hci", "tcp-client:127.0.0.1:9", "--listen", f"unix:{folder}/bridge.sock"],
            capture_output=True, text=True, timeout=STARTUP_S,
        )
    finally:
        shutil.rmtree(folder)
    assert result.returncode == 2 and "mode 755" in result.stderr and not os.path.exists(f"{folder}/bridge.sock")


def test_bridge_still_serves_a_tcp_client_when_run_by_hand():
    controllers = Process("controllers", ["ciq_controllers.py", "tcp-server:127.0.0.1:0"])
    bridge = None
    phone = None
    try:
        port = int(controllers.wait_ready()[0])
        bridge = Process("bridge", ["ciq_phone_bridge.py", "--hci", f"tcp-client:127.0.0.1:{port}", "--listen", "127.0.0.1:0"])
        phone = Phone(bridge.wait_ready()[0])
        assert phone.event("bluetooth") == {"ev": "bluetooth", "ready": True}
    finally:
        if phone is not None:
            phone.close()
        if bridge is not None:
            bridge.cleanup()
        controllers.cleanup()


def test_controllers_ports_option_serves_free_ports_and_exits_zero():
    controllers = Process("controllers", ["ciq_controllers.py", "--ports", "0,0,0"])
    try:
        ports = [int(word) for word in controllers.wait_ready()]
        socket.create_connection(("127.0.0.1", ports[2]), timeout=5).close()
    finally:
        code = controllers.cleanup()
    assert len(set(ports)) == 3 and all(port > 0 for port in ports)
    assert code == 0


def test_two_watches_are_served_at_once_one_of_them_legacy():
    rig = Rig(MAIN_APPS, controllers=3)
    try:
        rig.start_watch(rig.ports[2], SECOND_WATCH_ADDRESS, [f"{ECHO}:echo:9"], ["--legacy"])
        rig.phone.send(op="connect", peer=WATCH_ADDRESS)
        rig.phone.send(op="connect", peer=SECOND_WATCH_ADDRESS)
        first = rig.phone.event("connected", peer=WATCH_ADDRESS)
        second = rig.phone.event("connected", peer=SECOND_WATCH_ADDRESS)
        assert (first["service"], second["service"]) == ("current", "legacy")
        versions = (rig.phone.app_info(ECHO, WATCH_ADDRESS), rig.phone.app_info(ECHO, SECOND_WATCH_ADDRESS))
        assert versions == (ECHO_VERSION, 9)
    except BaseException:
        print(rig.logs())
        raise
    finally:
        rig.close()


def test_connect_answer_without_large_packets_when_disabled():
    rig = Rig([f"{ECHO}:echo"], watch_args=["--no-large-packets"])
    try:
        rig.phone.connect()
        answer = rig.phone.open_connection(ECHO)
        assert (answer.status, answer.flags) == (0, 0)
        conn = answer.conn
        rig.phone.send_message(conn, sample_message(600), link.SMALL_PAYLOAD)
        _, echoed = rig.phone.receive_message(conn)
        assert link.decode_value(echoed) == sample_message(600)
    except BaseException:
        print(rig.logs())
        raise
    finally:
        rig.close()


def test_chatty_app_opens_sends_counters_and_closes():
    rig = Rig(
        [f"{CHATTY}:chatty"],
        watch_args=["--chatty-count", "3", "--chatty-interval-ms", "100", "--chatty-delay-ms", "100"],
    )
    try:
        rig.phone.connect()
        opened = rig.phone.packet()
        assert isinstance(opened, link.WatchOpen) and opened.app == CHATTY
        rig.phone.write(link.WatchOpenResponse(0, opened.conn))
        counters = []
        for _ in range(3):
            first, data = rig.phone.receive_message(opened.conn)
            assert first.flags == 0
            counters.append(link.decode_value(data))
        assert counters == [{"counter": 1}, {"counter": 2}, {"counter": 3}]
        assert rig.phone.packet() == link.WatchClose(opened.conn)
        rig.phone.write(link.WatchCloseResponse(0, opened.conn))
    except BaseException:
        print(rig.logs())
        raise
    finally:
        rig.close()
