"""Tests of the session link's BLE bridges and of the raw GATT throughput script.

Run with `python3 -m pytest Harness/rigs -q`. Each end-to-end test starts its own processes on free
loopback ports: ciq_controllers.py (two controllers, one virtual radio), session_watch_bridge.py on
one and ciq_phone_bridge.py --profile session on the other, and plays both Swift hosts over the two
JSON-lines sockets. No Swift is needed. The process and JSON helpers, and the per-test time limit,
come from test_ciq_rigs.py.
"""

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

RIGS = Path(__file__).resolve().parent
sys.path.insert(0, str(RIGS))

import session_gatt  # noqa: E402
from test_ciq_rigs import Phone as JsonClient  # noqa: E402  (a JSON-lines client with event matching)
from test_ciq_rigs import Process, connect_to, private_listen, time_limit  # noqa: E402,F401  (time_limit: the autouse alarm)

WATCH = "F0:F1:F2:F3:F4:F5"  # the watch bridge's static random address
PHONE = "F1:F1:F1:F1:F1:F1"  # ciq_phone_bridge.py's default address, as the watch reports it
TEST_CENTRAL = "F2:F2:F2:F2:F2:F2"
USER_TERMINATED = 0x13


class SessionRig:
    """Controllers + the watch bridge + the phone bridge (session profile), both clients attached."""

    def __init__(self, phone_args=(), controllers=2):
        self.processes = []
        self.clients = []
        self.socket_folders = []
        try:
            self.controllers = self._start(
                "controllers", ["ciq_controllers.py", *(["tcp-server:127.0.0.1:0"] * controllers)]
            )
            self.ports = [int(p) for p in self.controllers.wait_ready()]
            self.watch_process = self._start(
                "watch-bridge",
                ["session_watch_bridge.py", "--hci", f"tcp-client:127.0.0.1:{self.ports[0]}",
                 "--listen", self._private_listen("watch"), "--address", WATCH, "-v"],
            )
            self.phone_process = self._start(
                "phone-bridge",
                ["ciq_phone_bridge.py", "--hci", f"tcp-client:127.0.0.1:{self.ports[1]}",
                 "--listen", self._private_listen("phone"), "--profile", "session", "-v", *phone_args],
            )
            self.watch = self._attach(self.watch_process)
            self.phone = self._attach(self.phone_process)
            assert self.watch.event("bluetooth") == {"ev": "bluetooth", "ready": True}
            assert self.phone.event("bluetooth") == {"ev": "bluetooth", "ready": True}
        except BaseException:
            print(self.logs())
            self.close()
            raise

    def _start(self, name, argv):
        process = Process(name, argv)
        self.processes.append(process)
        return process

    def _private_listen(self, name):
        """The bridge's channel as tether live makes it: a Unix socket in a private folder."""
        folder, listen = private_listen(name)
        self.socket_folders.append(folder)
        return listen

    def _attach(self, process):
        client = JsonClient(process.wait_ready()[0])
        self.clients.append(client)
        return client

    def connect(self):
        """Phone `connect`; returns (phone's `connected`, watch's `connected`)."""
        self.phone.send(op="connect", peer=WATCH)
        return self.phone.event("connected", peer=WATCH), self.watch.event("connected", peer=PHONE)

    def logs(self):
        return "\n".join(f"--- {p.name} ---\n{p.stderr()}" for p in self.processes)

    def close(self):
        for client in self.clients:
            client.close()
        codes = {process.name: process.cleanup() for process in reversed(self.processes)}
        for folder in self.socket_folders:
            shutil.rmtree(folder)
        self.socket_folders = []
        return codes


@pytest.fixture
def rig():
    """Both bridges on one virtual radio; logs printed at teardown (pytest shows them on failure)."""
    started = SessionRig(phone_args=["--connect-timeout", "1.5"])
    yield started
    print(started.logs())
    started.close()


def frames(count, size, tag):
    """`count` distinct values of `size` bytes as hex: byte 0 is `tag`, byte 1 the index."""
    return [(bytes([tag, index]) + bytes((index + k) & 0xFF for k in range(size - 2))).hex() for index in range(count)]


def test_phone_connect_brings_the_link_up_on_both_sides(rig):
    phone, watch = rig.connect()
    assert phone == {"ev": "connected", "peer": WATCH, "mtu": 247, "max_write": 244, "service": "session"}
    assert watch == {"ev": "connected", "peer": PHONE, "mtu": 247, "max_write": 244}


def test_phone_writes_reach_the_watch_in_order_with_exact_bytes(rig):
    rig.connect()
    values = frames(3, 16, 0xA0)
    for value in values:
        rig.phone.send(op="write", peer=WATCH, hex=value)
    assert [rig.watch.event("write") for _ in values] == [{"ev": "write", "peer": PHONE, "hex": v} for v in values]


def test_watch_notifications_reach_the_phone_in_order_with_exact_bytes(rig):
    rig.connect()
    values = frames(3, 16, 0xB0)
    for value in values:
        rig.watch.send(op="notify", hex=value)
    assert [rig.phone.event("notify") for _ in values] == [{"ev": "notify", "peer": WATCH, "hex": v} for v in values]


def test_full_size_values_pass_intact_both_ways(rig):
    rig.connect()
    (to_watch,), (to_phone,) = frames(1, 244, 0xC0), frames(1, 244, 0xC1)
    rig.phone.send(op="write", peer=WATCH, hex=to_watch)
    rig.watch.send(op="notify", hex=to_phone)
    assert rig.watch.event("write")["hex"] == to_watch
    assert rig.phone.event("notify")["hex"] == to_phone


def test_many_full_size_values_keep_their_order_both_ways(rig):
    rig.connect()
    to_watch, to_phone = frames(150, 244, 0xD0), frames(150, 244, 0xD1)
    for up, down in zip(to_watch, to_phone):
        rig.phone.send(op="write", peer=WATCH, hex=up)
        rig.watch.send(op="notify", hex=down)
    assert [rig.watch.event("write", timeout=20)["hex"] for _ in to_watch] == to_watch
    assert [rig.phone.event("notify", timeout=20)["hex"] for _ in to_phone] == to_phone
    assert not [e for e in rig.watch.events + rig.phone.events if e["ev"] == "error"]


def test_phone_disconnect_is_seen_on_both_sides_and_the_watch_advertises_again(rig):
    rig.connect()
    rig.phone.send(op="disconnect", peer=WATCH)
    assert rig.phone.event("disconnected", peer=WATCH)["reason"] == USER_TERMINATED
    assert rig.watch.event("disconnected", peer=PHONE)["reason"] == USER_TERMINATED
    phone, watch = rig.connect()
    assert (phone["service"], watch["mtu"]) == ("session", 247)
    rig.phone.send(op="write", peer=WATCH, hex="0102")
    assert rig.watch.event("write")["hex"] == "0102"


def test_watch_notify_with_nobody_subscribed_is_an_error(rig):
    rig.watch.send(op="notify", hex="0102")
    error = rig.watch.event("error")
    assert "no central is connected" in error["message"] and error["op"] == {"op": "notify", "hex": "0102"}
    rig.connect()
    rig.phone.send(op="disconnect", peer=WATCH)
    rig.watch.event("disconnected")
    rig.watch.send(op="notify", hex="0304")
    assert "no central is connected" in rig.watch.event("error")["message"]


def test_malformed_ops_give_errors_and_the_watch_bridge_keeps_working(rig):
    rig.watch.sock.sendall(b"this is not json\n")
    rig.watch.sock.sendall(b"[1, 2]\n")
    rig.watch.send(op="fly")
    rig.watch.send(op="notify")
    rig.watch.send(op="notify", hex="zz")
    rig.watch.send(op="advertise", on="yes")
    rig.watch.send(op="disconnect")
    messages = [rig.watch.event("error")["message"] for _ in range(7)]
    expected = ["JSON", '"op"', "unknown op", '"hex"', '"hex"', '"on"', "no central is connected"]
    assert [word in message for word, message in zip(expected, messages)] == [True] * 7, messages
    rig.connect()
    rig.watch.send(op="notify", hex="00" * 245)
    assert "expected 1 to 244" in rig.watch.event("error")["message"]
    rig.watch.send(op="notify", hex="05")
    assert rig.phone.event("notify")["hex"] == "05"


def test_watch_disconnect_op_drops_the_link(rig):
    rig.connect()
    rig.watch.send(op="disconnect")
    assert rig.phone.event("disconnected", peer=WATCH)["reason"] == USER_TERMINATED
    assert rig.watch.event("disconnected", peer=PHONE)["reason"] == USER_TERMINATED


def test_advertising_off_hides_the_watch_until_turned_on_again(rig):
    rig.watch.send(op="advertise", on=False)
    rig.watch.send(op="notify", hex="00")  # its error tells that the advertise op was handled
    rig.watch.event("error")
    rig.phone.send(op="connect", peer=WATCH)
    assert rig.phone.event("not_found", peer=WATCH)["reason"]
    rig.watch.send(op="advertise", on=True)
    phone, _ = rig.connect()
    assert phone["service"] == "session"


def test_no_readvertising_after_a_disconnect_when_advertising_is_off(rig):
    rig.connect()
    rig.watch.send(op="advertise", on=False)  # connected: nothing to stop now, but no restart later
    rig.watch.send(op="disconnect")
    rig.watch.event("disconnected")
    rig.phone.event("disconnected")
    rig.phone.send(op="connect", peer=WATCH)
    assert rig.phone.event("not_found", peer=WATCH)


def test_quit_op_disconnects_the_phone_and_exits_zero(rig):
    rig.connect()
    rig.watch.send(op="quit")
    assert rig.watch.event("disconnected", peer=PHONE)["reason"] == USER_TERMINATED
    assert rig.phone.event("disconnected", peer=WATCH)
    assert rig.watch_process.popen.wait(10) == 0


def test_every_process_exits_zero_on_sigterm(rig):
    rig.connect()
    assert rig.close() == {"phone-bridge": 0, "watch-bridge": 0, "controllers": 0}


def test_session_profile_does_not_take_a_connect_iq_watch():
    rig = SessionRig(phone_args=["--connect-timeout", "3"], controllers=3)
    try:
        watch = rig._start("ciq-watch", ["ciq_watch.py", "--hci", f"tcp-client:127.0.0.1:{rig.ports[2]}",
                                         "--address", "E0:E1:E2:E3:E4:E5"])
        watch.wait_ready()
        rig.phone.send(op="connect", peer="E0:E1:E2:E3:E4:E5")
        assert rig.phone.event("not_found", peer="E0:E1:E2:E3:E4:E5")["reason"] == "no session link service on the peer"
    except BaseException:
        print(rig.logs())
        raise
    finally:
        rig.close()


async def central_session(port):
    """A Bumble central in this process: connect to the watch, subscribe, write with a Write
    Request, unsubscribe, then write again; returns nothing (the watch bridge's events tell)."""
    from bumble import hci
    from bumble.core import UUID
    from bumble.device import Device, Peer
    from bumble.transport import open_transport

    async with await open_transport(f"tcp-client:127.0.0.1:{port}") as transport:
        device = Device.with_hci("test central", hci.Address(TEST_CENTRAL), transport.source, transport.sink)
        await device.power_on()
        connection = await device.connect(hci.Address(WATCH), timeout=5.0)
        peer = Peer(connection)
        await peer.request_mtu(100)
        await peer.discover_services([UUID(session_gatt.SERVICE_UUID)])
        service = peer.get_services_by_uuid(UUID(session_gatt.SERVICE_UUID))[0]
        await service.discover_characteristics()
        write = service.get_characteristics_by_uuid(UUID(session_gatt.WRITE_UUID))[0]
        notify = service.get_characteristics_by_uuid(UUID(session_gatt.NOTIFY_UUID))[0]
        await notify.discover_descriptors()
        await notify.subscribe(lambda _value: None)
        await write.write_value(b"\x01\x02", with_response=True)
        await notify.unsubscribe()
        await write.write_value(b"\x03", with_response=True)
        await connection.disconnect()


def test_watch_reports_unsubscribe_and_accepts_plain_writes():
    """The phone bridge never unsubscribes, so a Bumble central in the test does (on controller 3)."""
    rig = SessionRig(controllers=3)
    try:
        asyncio.run(asyncio.wait_for(central_session(rig.ports[2]), 20))
        events = [rig.watch.event(kind) for kind in ("connected", "write", "unsubscribed", "write", "disconnected")]
        assert events == [
            {"ev": "connected", "peer": TEST_CENTRAL, "mtu": 100, "max_write": 97},
            {"ev": "write", "peer": TEST_CENTRAL, "hex": "0102"},
            {"ev": "unsubscribed", "peer": TEST_CENTRAL},
            {"ev": "write", "peer": TEST_CENTRAL, "hex": "03"},
            {"ev": "disconnected", "peer": TEST_CENTRAL, "reason": USER_TERMINATED},
        ]
    except BaseException:
        print(rig.logs())
        raise
    finally:
        rig.close()


def test_gatt_throughput_prints_one_sane_json_line():
    result = subprocess.run(
        [sys.executable, str(RIGS / "gatt_throughput.py"), "--bytes", "200000", "--timeout", "30"],
        capture_output=True, timeout=50, cwd=RIGS,
    )
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().splitlines()
    assert len(lines) == 1, lines
    figure = json.loads(lines[0])
    assert set(figure) == {"bytes", "seconds", "bytes_per_s", "mtu", "writes"}
    assert (figure["bytes"], figure["mtu"], figure["writes"]) == (200000, 247, 820)  # ceil(200000 / 244)
    assert 0 < figure["seconds"] < 30
    assert figure["bytes_per_s"] == pytest.approx(200000 / figure["seconds"], rel=1e-3)
