"""`tether emulate` end to end over two Bumble virtual controllers (ciq_controllers.py): the emulated
peripheral of `Captures/gatt-sensor` on one, the checking central `Harness/emulate_central.py` on the
other. The central discovers the database, subscribes, performs the recorded writes and reads, and
must see every recorded notification and read value byte for byte; `tether emulate` must then count
every request as answered (from the capture or by its generic responder) and none unanswered.

Needs the tether binary (`swift build`; TETHER_BINARY names another one). Run with
`TETHER_BINARY=$PWD/.build/debug/tether python3 -m pytest -q Harness/rigs/test_emulate.py`.
"""

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

RIGS = Path(__file__).resolve().parent
ROOT = RIGS.parent.parent
sys.path.insert(0, str(RIGS))

from test_ciq_rigs import Process, time_limit  # noqa: E402,F401  (time_limit: the autouse alarm)

SET = ROOT / "Captures" / "gatt-sensor"
SENSOR = "F0:5E:00:00:00:01"


def tether_binary():
    path = os.environ.get("TETHER_BINARY", str(ROOT / ".build" / "debug" / "tether"))
    if not os.path.exists(path):
        pytest.fail(f"no tether binary at {path}: run `swift build` (or set TETHER_BINARY)")
    return path


class Emulation:
    """`tether emulate` as a process; its stdout lines collected as they come."""

    def __init__(self, argv):
        self.popen = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=ROOT)
        self.lines = []
        self.buffer = b""

    def wait_for(self, pattern, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in self.lines:
                if re.search(pattern, line):
                    return line
            if self.popen.poll() is not None and not self._read(0.0):
                break
            self._read(0.2)
        raise AssertionError(f"no line matching {pattern!r} from tether emulate; got:\n" + "\n".join(self.lines)
                             + "\nstderr:\n" + (self.popen.stderr.read().decode(errors='replace') if self.popen.poll() is not None else ""))

    def _read(self, timeout):
        ready, _, _ = select.select([self.popen.stdout], [], [], timeout)
        if not ready:
            return False
        chunk = os.read(self.popen.stdout.fileno(), 65536)
        if not chunk:
            return False
        self.buffer += chunk
        *complete, self.buffer = self.buffer.split(b"\n")
        self.lines += [line.decode(errors="replace") for line in complete]
        return True

    def interrupt(self, timeout=15.0):
        self.popen.send_signal(signal.SIGINT)
        try:
            out, err = self.popen.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            out, err = self.popen.communicate()
        self.lines += (self.buffer + out).decode(errors="replace").splitlines()
        self.buffer = b""
        return self.popen.returncode, err.decode(errors="replace")

    def kill(self):
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.communicate()


@pytest.fixture
def controllers():
    process = Process("controllers", ["ciq_controllers.py", "tcp-server:127.0.0.1:0", "tcp-server:127.0.0.1:0"])
    try:
        ports = process.wait_ready()
        yield [int(port) for port in ports]
    finally:
        process.cleanup()


def run_central(port, extra=(), set_path=SET, peer=SENSOR):
    return subprocess.run(
        [sys.executable, str(ROOT / "Harness" / "emulate_central.py"), "--hci", f"tcp-client:127.0.0.1:{port}",
         "--set", str(set_path), "--peer", peer, "--tether", tether_binary(), "--json", *extra],
        capture_output=True, text=True, timeout=120,
    )


def test_a_paired_central_sees_the_recorded_notifications_byte_for_byte(controllers):
    emulation = Emulation([tether_binary(), "emulate", str(SET), "--hci", f"tcp-client:127.0.0.1:{controllers[0]}"])
    try:
        emulation.wait_for(r"^advertising as Tether Sensor at F0:5E:00:00:00:01")
        central = run_central(controllers[1], extra=("--pair",))
        assert central.returncode == 0, central.stdout + central.stderr
        counts = json.loads(central.stdout)
        emulation.wait_for(r"^pairing with F0:CE:00:00:00:01: paired: LE Secure Connections, Just Works")
        assert counts["problems"] == []
        # gatt-sensor's device never asked for security nor discovered the phone: neither does its emulation.
        assert counts["security_request_seen"] is False
        assert sum(counts["discovery_requests_served"].values()) == 0
        assert counts["notifications_expected"] >= 120
        assert counts["notifications_received"] == counts["notifications_expected"]
        code, err = emulation.interrupt()
        assert code == 0, err
        final = emulation.wait_for(r"^emulation ended")
        answered = re.search(r"(\d+) requests? answered from the capture \((\d+) by position\), (\d+) by a responder, (\d+) unanswered", final)
        assert answered is not None, final
        from_capture, by_position, _responder, unanswered = map(int, answered.groups())
        assert from_capture == counts["writes"] + counts["reads"]
        assert by_position == 0
        assert unanswered == 0
    finally:
        emulation.kill()


def test_on_unknown_end_stops_at_the_first_request_the_capture_cannot_answer(controllers):
    emulation = Emulation([tether_binary(), "emulate", str(SET), "--hci", f"tcp-client:127.0.0.1:{controllers[0]}", "--on-unknown", "end"])
    try:
        emulation.wait_for(r"^advertising as")
        # The same session twice on one emulation: the second run's writes go past what the capture
        # holds for the control characteristic, so the emulation ends there.
        first = run_central(controllers[1])
        assert first.returncode == 0, first.stdout + first.stderr
        second = run_central(controllers[1], extra=("--answer-timeout", "2"))
        assert second.returncode == 1
        emulation.wait_for(r"^emulation ended \(on-unknown end\)")
        assert emulation.popen.wait(15) == 1
    finally:
        emulation.kill()


# =============================================================================================
# Security and the peripheral as GATT client: the trackers of real phone captures
# =============================================================================================

LEGACY_SET = ROOT / "Captures" / "gatt-sensor-legacy-pairing"
SC_SET = ROOT / "Captures" / "gatt-sensor-sc-pairing"
SECURE_SENSOR = "F0:5E:00:00:00:02"
# The recorded Security Requests came 151-152 ms after the connection (the phone's btsnoop); the
# emulator's is timed from its own connection event, the central's clock starts when its connect()
# returns. A Security Request sent at once, or seconds late, is outside this.
SECURITY_REQUEST_WINDOW_S = (0.08, 0.6)


def test_a_device_that_asks_for_legacy_pairing_and_discovers_the_phone_does_so_on_every_connection(controllers):
    """`Captures/gatt-sensor-legacy-pairing`: the device sent a Security Request 0.15 s after each
    connection, was re-paired with legacy pairing each time although the phone asked for LE Secure
    Connections, and discovered the phone's own database 0.6 s in. Two centrals in turn against its
    emulation each see the Security Request, pair with legacy pairing, and serve the emulator's
    discovery of their database (Read By Group Type, Read By Type, Find Information)."""
    emulation = Emulation([tether_binary(), "emulate", str(LEGACY_SET), "--hci", f"tcp-client:127.0.0.1:{controllers[0]}",
                           "--reset-per-connection"])
    try:
        emulation.wait_for(r"^note: pairing offered: legacy pairing \(frame \d+: legacy pairing, Just Works, peripheral NoInputNoOutput, bonding")
        emulation.wait_for(rf"^advertising as .* at {SECURE_SENSOR}")
        served_total = 0
        for run in (1, 2):
            central = run_central(controllers[1], extra=("--pair-on-security-request", "--linger", "1.0"), set_path=LEGACY_SET, peer=SECURE_SENSOR)
            assert central.returncode == 0, f"run {run}: " + central.stdout + central.stderr
            counts = json.loads(central.stdout)
            assert counts["problems"] == [], counts
            assert counts["security_request_seen"] is True
            low, high = SECURITY_REQUEST_WINDOW_S
            assert low <= counts["security_request_after_s"] <= high, counts
            # The AuthReq of a legacy-only device: bonding, SC clear.
            assert counts["security_request_auth_req"] & 0x08 == 0 and counts["security_request_auth_req"] & 0x03 == 0x01
            assert counts["pairing"] == "legacy pairing"
            served = counts["discovery_requests_served"]
            assert served["read_by_group_type"] >= 1 and served["read_by_type"] >= 1 and served["find_information"] >= 1, served
            served_total += sum(served.values())
            assert counts["notifications_received"] == counts["notifications_expected"] > 0
        emulation.wait_for(r"^pairing with F0:CE:00:00:00:01: paired: legacy pairing, Just Works, fresh keys \(offered as recorded\)")
        emulation.wait_for(r"^discovered the database of central F0:CE:00:00:00:01, as the recorded peripheral did: [1-9]\d* services")
        code, err = emulation.interrupt()
        assert code == 0, err
        final = emulation.wait_for(r"^emulation ended")
        done = re.search(r"; 2 Security Requests sent, 2 pairings, 2 discoveries of the central's database \((\d+) requests\)$", final)
        assert done is not None, final
        assert int(done.group(1)) == served_total
    finally:
        emulation.kill()


def test_a_device_recorded_with_le_secure_connections_is_still_offered_them(controllers):
    """`Captures/gatt-sensor-sc-pairing`: the same device recorded pairing with LE Secure
    Connections: its emulation sends the Security Request with the SC bit and pairs with LE Secure
    Connections, and discovers nothing of the central (the recording did not)."""
    emulation = Emulation([tether_binary(), "emulate", str(SC_SET), "--hci", f"tcp-client:127.0.0.1:{controllers[0]}"])
    try:
        emulation.wait_for(r"^note: pairing offered: LE Secure Connections \(frame \d+: LE Secure Connections, Just Works")
        emulation.wait_for(rf"^advertising as .* at {SECURE_SENSOR}")
        central = run_central(controllers[1], extra=("--pair-on-security-request",), set_path=SC_SET, peer=SECURE_SENSOR)
        assert central.returncode == 0, central.stdout + central.stderr
        counts = json.loads(central.stdout)
        assert counts["problems"] == [], counts
        assert counts["security_request_auth_req"] & 0x08 == 0x08
        assert counts["pairing"] == "LE Secure Connections"
        assert sum(counts["discovery_requests_served"].values()) == 0
        emulation.wait_for(r"^pairing with F0:CE:00:00:00:01: paired: LE Secure Connections, Just Works, fresh keys \(offered as recorded\)")
        code, err = emulation.interrupt()
        assert code == 0, err
        final = emulation.wait_for(r"^emulation ended")
        assert final.endswith("; 1 Security Request sent, 1 pairing, 0 discoveries of the central's database (0 requests)"), final
    finally:
        emulation.kill()


def test_a_set_without_bluetooth_is_refused_with_what_to_do():
    result = subprocess.run([tether_binary(), "emulate", str(ROOT / "Captures" / "plugin-clean"), "--hci", "tcp-client:127.0.0.1:1"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "no Bluetooth HCI interface" in result.stderr
    assert "tether import" in result.stderr


# =============================================================================================
# The Connect IQ responder: live MessagingCore against the emulated watch of a recorded set
# =============================================================================================

WATCH = "F0:F0:F0:F0:F0:F0"
# How far an event may move from its recorded time. On a quiet machine the emulated runs stay within
# 20 ms (ciq) and 35 ms (session) of the recorded ones; on CI's two cores shared with builds (load
# 6-7) the 2 KB transfer's windows drift by up to ~0.1 s, each window's acks waiting for a core. The
# test is about the same callbacks, in the same order, with the same values and timeouts; 250 ms
# still catches a timer firing at the wrong time (the 5 s Failure_Timeout, the 3 s handshake resend).
TOLERANCE_MS = 250


@pytest.mark.parametrize("name", ["clean", "silent-timeout", "app-not-installed"])
def test_live_messaging_against_the_emulated_watch_gives_the_recorded_callbacks(controllers, name, tmp_path):
    """`tether live messaging` with the set's own scenario against `tether emulate` of the set: its
    trace equals the committed live trace (same events in the same order, each within TOLERANCE_MS
    of its recorded time from the capture's first frame); only the encrypted bytes differ, because
    the phone draws new XXTEA keys."""
    tether = tether_binary()
    emulation = Emulation([tether, "emulate", str(ROOT / "Captures" / f"ciq-{name}"), "--hci", f"tcp-client:127.0.0.1:{controllers[0]}"])
    try:
        emulation.wait_for(r"^Connect IQ responder on the watch's link")
        emulation.wait_for(rf"^advertising as .* at {WATCH}")
        trace = tmp_path / "live.jsonl"
        live = subprocess.run(
            [tether, "live", "messaging", "--hci", f"tcp-client:127.0.0.1:{controllers[1]}", "--peer", WATCH,
             "--script", str(ROOT / "Harness" / "scenarios" / "ciq" / f"{name}.yaml"), "--record", str(tmp_path / "set"), "--trace", str(trace)],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )
        assert live.returncode == 0, live.stdout[-3000:] + live.stderr[-3000:]
        code, err = emulation.interrupt()
        assert code == 0, err
        final = emulation.wait_for(r"^emulation ended")
        assert re.search(r"0 requests answered from the capture .* [1-9]\d* by a responder, 0 unanswered", final), final
        diff = subprocess.run(
            [tether, "diff", str(ROOT / "Captures" / f"ciq-{name}" / "live" / "messaging.jsonl"), str(trace),
             "--ignore-field", "bytes", "--ignore-field", "packet", "--tolerance-ms", str(TOLERANCE_MS)],
            capture_output=True, text=True, timeout=60,
        )
        assert diff.returncode == 0, diff.stdout[-4000:]
        assert "no differences" in diff.stdout
    finally:
        emulation.kill()


def test_recorded_link_gives_the_apps_behaviours():
    import uuid as uuidlib

    import ciq_link as link
    from ciq_responder import infer_apps

    echo, silent, missing = (uuidlib.UUID(int=n) for n in (1, 2, 3))
    recorded = [
        (True, link.AppInfoRequest(missing).encode()),
        (False, link.AppInfoResponse(missing, link.APP_NOT_INSTALLED).encode()),
        (True, link.AppInfoRequest(echo).encode()),
        (False, link.AppInfoResponse(echo, 7).encode()),
        (True, link.ConnectRequest(echo).encode()),
        (False, link.ConnectResponse(link.ConnectStatus.SUCCESS, echo, 1, 0).encode()),
        (True, link.ConnectRequest(silent).encode()),
        (False, link.ConnectResponse(link.ConnectStatus.SUCCESS, silent, 2, link.CONNECT_FLAG_LARGE_PACKETS).encode()),
        (True, link.First(2, 0, 40).encode()),
        (False, link.Ack(2, link.AckType.FIRST, link.AckStatus.SUCCESS, 0).encode()),
        (False, link.First(1, 0, 12).encode()),
    ]
    apps, large, _notes = infer_apps(recorded)
    assert {(app.uuid, app.behaviour, app.version) for app in apps} == {
        (missing, "not-installed", 1), (echo, "echo", 7), (silent, "silent", 1),
    }
    assert large


# =============================================================================================
# The session link: live SessionCore (phone) against the emulated watch of session-clean
# =============================================================================================

SESSION_WATCH = "F0:F0:F0:F0:F0:A1"


def shifted(trace: Path, by_ns: int, out: Path) -> Path:
    """A copy of `trace` with every t_ns moved by `by_ns`."""
    with open(trace) as source, open(out, "w") as target:
        for line in source:
            event = json.loads(line)
            event["t_ns"] += by_ns
            target.write(json.dumps(event) + "\n")
    return out


def first_time(trace: Path, event_name: str) -> int:
    with open(trace) as source:
        for line in source:
            event = json.loads(line)
            if event["event"] == event_name:
                return event["t_ns"]
    raise AssertionError(f"{trace}: no {event_name} event")


def live_phone_against_emulated_watch(controllers, tmp_path, set_name, phone_script, extra=()):
    """`tether emulate Captures/SET_NAME` on the first controller, `tether live session --role phone`
    with Harness/scenarios/session/PHONE_SCRIPT (and `extra` arguments) on the second; the phone's
    trace and the emulator's final line, once both ended cleanly."""
    tether = tether_binary()
    emulation = Emulation([tether, "emulate", str(ROOT / "Captures" / set_name), "--hci", f"tcp-client:127.0.0.1:{controllers[0]}"])
    try:
        emulation.wait_for(r"^session-link responder on the watch's link")
        emulation.wait_for(rf"^advertising as .* at {SESSION_WATCH}")
        trace = tmp_path / "live.jsonl"
        live = subprocess.run(
            [tether, "live", "session", "--role", "phone", "--hci", f"tcp-client:127.0.0.1:{controllers[1]}", "--peer", SESSION_WATCH,
             "--script", str(ROOT / "Harness" / "scenarios" / "session" / phone_script), "--store", str(tmp_path / "phone.sqlite"),
             "--trace", str(trace), *extra],
            capture_output=True, text=True, timeout=180, cwd=ROOT,
        )
        assert live.returncode == 0, live.stdout[-3000:] + live.stderr[-3000:]
        code, err = emulation.interrupt()
        assert code == 0, err
        return trace, emulation.wait_for(r"^emulation ended")
    finally:
        emulation.kill()


def test_live_session_phone_against_the_emulated_watch_gives_the_recorded_callbacks(controllers, tmp_path):
    """`tether live session --role phone` with session-clean's phone script against `tether emulate
    Captures/session-clean`: the same callbacks, in the same order with the same values, as the
    committed live trace. The HELLO differs (random incarnation, epoch and nonce; the session-link
    responder answers it) and so does the seed. Times are compared from the activation on, within
    TOLERANCE_MS: before it, the run's start-up (bridge, controller, connection) is not the emulator's."""
    recorded = ROOT / "Captures" / "session-clean" / "live" / "session.jsonl"
    trace, final = live_phone_against_emulated_watch(
        controllers, tmp_path, "session-clean", "clean.phone.yaml", ["--record", str(tmp_path / "set")])
    assert re.search(r"[1-9]\d* requests? answered from the capture \(0 by position\), [1-9]\d* by a responder, 0 unanswered", final), final
    offset = first_time(recorded, "activation_did_complete") - first_time(trace, "activation_did_complete")
    aligned = shifted(trace, offset, tmp_path / "aligned.jsonl")
    diff = subprocess.run(
        [tether_binary(), "diff", str(recorded), str(aligned), "--ignore-event", "frame_matched", "--ignore-event", "frame_unsent",
         "--ignore-event", "summary", "--ignore-field", "seed", "--ignore-field", "bytes", "--ignore-field", "packet",
         "--tolerance-ms", str(TOLERANCE_MS)],
        capture_output=True, text=True, timeout=60,
    )
    # The seed call at t=0 and the events of start-up come before the activation: their times
    # are the run's, so only timing before the activation may differ.
    lines = [line for line in diff.stdout.splitlines() if line.startswith(("!", "-", "+"))]
    assert lines == [], diff.stdout[-4000:]
    early = [line for line in diff.stdout.splitlines() if line.startswith("@")]
    for line in early:
        recorded_ns = int(re.search(r"t_ns=(\d+)", line).group(1))
        assert recorded_ns < first_time(recorded, "activation_did_complete"), line


def test_live_session_phone_at_mtu_23_binds_to_the_emulated_watch_and_resumes_its_file(controllers, tmp_path):
    """`tether live session --role phone` with session-compact-mtu23's phone script (ATT MTU 23, a
    window of 64, compact frames) against `tether emulate Captures/session-compact-mtu23`. At MTU 23
    the HELLO and the WELCOME travel in 7 pieces each, the random fields and the nonce in later
    ones: the session-link responder matches each piece without its random fields and sends the
    recorded WELCOME's pieces with the live nonce. The phone binds on both connections, gets the
    watch's user info once, finishes its file after the drop and gets its reply."""
    trace, final = live_phone_against_emulated_watch(
        controllers, tmp_path, "session-compact-mtu23", "compact-mtu23.phone.yaml", ["--mtu", "23", "--window", "64", "--compact-frames"])
    assert re.search(r"[1-9]\d* by a responder", final), final
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    names = [event["event"] for event in events]
    assert names.count("handshake_completed") == 2, names
    assert names.count("did_receive_user_info") == 1, names
    finished = [event for event in events if event["event"] == "file_transfer_did_finish"]
    assert [event.get("code") for event in finished] == [None], finished
    assert names.count("did_receive_reply") == 1, names
    assert "violation" not in names, [event for event in events if event["event"] == "violation"]
