"""Tests of the heart-rate rigs: the codec against hand-written byte vectors, the scenario
schedules, the strap's GATT database in process, and the strap and the central end to end over
Bumble virtual controllers (no Tether needed). The process helper and the per-test time limit
come from test_ciq_rigs.py.

Run with `python3 -m pytest Harness/rigs/test_heart_rate_rigs.py -q`. The byte vectors are the
ones of Examples/HeartRate/Tests/HeartRateCoreTests/HeartRateMeasurementTests.swift, so the Swift
parser and this encoder answer to the same bytes. End-to-end tests start real processes on free
loopback ports, run the strap at 4 Hz to keep them short, and stop every process they start.
"""

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

RIGS = Path(__file__).resolve().parent
sys.path.insert(0, str(RIGS))

import heart_rate_gatt as hr  # noqa: E402
from test_ciq_rigs import Process, time_limit  # noqa: E402,F401  (time_limit: the autouse alarm)

STRAP = "F0:48:52:00:00:11"


# =============================================================================================
# Codec: the vectors shared with the Swift tests
# =============================================================================================

M = hr.Measurement
VECTORS = [
    ("0048", M(72)),
    ("014800", M(72, wide=True)),
    ("012c01", M(300, wide=True)),
    ("0648", M(72, contact=hr.DETECTED)),
    ("0448", M(72, contact=hr.NOT_DETECTED)),
    ("08483412", M(72, energy_expended=0x1234)),
    ("10480004", M(72, rr_intervals=(1024,))),
    ("104800045503", M(72, rr_intervals=(1024, 853))),
    ("1e48341200045503", M(72, contact=hr.DETECTED, energy_expended=0x1234, rr_intervals=(1024, 853))),
    ("1f2c0134120004", M(300, wide=True, contact=hr.DETECTED, energy_expended=0x1234, rr_intervals=(1024,))),
    ("1c5affff2003", M(90, contact=hr.NOT_DETECTED, energy_expended=0xFFFF, rr_intervals=(800,))),
]

TRUNCATED = [
    ("", "flags", 0, 1, 0),
    ("00", "heart_rate", 1, 1, 0),
    ("01", "heart_rate", 1, 2, 0),
    ("0148", "heart_rate", 1, 2, 1),
    ("0848", "energy_expended", 2, 2, 0),
    ("084834", "energy_expended", 2, 2, 1),
    ("1048", "rr_interval", 2, 2, 0),
    ("1048000455", "rr_interval", 4, 2, 1),
    ("192c01341200", "rr_interval", 5, 2, 1),
    ("18483412", "rr_interval", 4, 2, 0),
]


@pytest.mark.parametrize("hex_value,measurement", VECTORS, ids=[v for v, _ in VECTORS])
def test_encoder_gives_shared_vector(hex_value, measurement):
    assert hr.encode_measurement(measurement).hex() == hex_value


@pytest.mark.parametrize("hex_value,measurement", VECTORS, ids=[v for v, _ in VECTORS])
def test_decoder_reads_shared_vector(hex_value, measurement):
    assert hr.decode_measurement(bytes.fromhex(hex_value)) == measurement


@pytest.mark.parametrize("hex_value,field,offset,needed,available", TRUNCATED, ids=[t[0] or "empty" for t in TRUNCATED])
def test_decoder_reports_truncation_with_offset(hex_value, field, offset, needed, available):
    with pytest.raises(hr.MeasurementError) as caught:
        hr.decode_measurement(bytes.fromhex(hex_value))
    assert (caught.value.field, caught.value.offset, caught.value.needed, caught.value.available) == (
        field, offset, needed, available,
    )


@pytest.mark.parametrize("flags", range(32))
def test_every_flag_combination_decodes_each_field(flags):
    wide = bool(flags & 0x01)
    value = bytes([flags]) + (b"\x50\x01" if wide else b"\x50")
    if flags & 0x08:
        value += b"\x03\x02"
    if flags & 0x10:
        value += b"\x05\x04\x07\x06"
    m = hr.decode_measurement(value)
    assert m.heart_rate == (0x0150 if wide else 0x50)
    assert m.wide == wide
    assert m.contact == (hr.NOT_SUPPORTED if not flags & 0x04 else hr.DETECTED if flags & 0x02 else hr.NOT_DETECTED)
    assert m.energy_expended == (0x0203 if flags & 0x08 else None)
    assert m.rr_intervals == ((0x0405, 0x0607) if flags & 0x10 else ())


def test_encoder_widens_heart_rate_above_255():
    assert hr.encode_measurement(M(300, wide=False)).hex() == "012c01"


def test_reserved_flag_bits_are_ignored():
    assert hr.decode_measurement(bytes.fromhex("e048")) == M(72)


# =============================================================================================
# Scenario schedules
# =============================================================================================


def take(generator, count):
    return [tick for _, tick in zip(range(count), generator)]


def test_schedule_is_deterministic_from_seed():
    assert take(hr.schedule("clean", 5), 30) == take(hr.schedule("clean", 5), 30)
    assert take(hr.schedule("clean", 5), 30) != take(hr.schedule("clean", 6), 30)


def test_clean_schedule_has_wide_values_rr_intervals_and_energy_every_tenth():
    ticks = take(hr.schedule("clean", 1), 20)
    assert [n for n, t in enumerate(ticks) if t.include_energy] == [0, 10]
    assert [n for n, t in enumerate(ticks) if t.wide] == [2, 7, 12, 17]
    assert all(t.rr_intervals and t.contact == hr.DETECTED for t in ticks)


def test_contact_lost_schedule_drops_contact_and_rr_for_three_ticks():
    ticks = take(hr.schedule("contact-lost", 1), 10)
    assert [t.contact for t in ticks] == [hr.DETECTED] * 4 + [hr.NOT_DETECTED] * 3 + [hr.DETECTED] * 3
    assert all(not t.rr_intervals for t in ticks[4:7])


def test_silent_schedule_ends_after_silent_after_ticks():
    assert len(list(hr.schedule("silent", 1, silent_after=3))) == 3


# =============================================================================================
# The strap's GATT database, in process (two Bumble devices on one LocalLink)
# =============================================================================================


def test_strap_serves_heart_rate_after_device_information_and_answers_reads_and_writes():
    from types import SimpleNamespace

    from bumble import att
    from bumble.core import UUID
    from bumble.device import Peer
    from bumble.link import LocalLink

    from bumble_local import make_device
    from heart_rate_peripheral import Strap

    async def scenario():
        link = LocalLink()
        strap_device = make_device(link, "strap", "F0:48:52:00:00:21")
        phone = make_device(link, "phone", "F1:48:52:00:00:22")
        args = SimpleNamespace(scenario="clean", seed=1, interval_ms=100, contact_lost_at=4, contact_lost_for=3, silent_after=3)
        strap = Strap(args, strap_device)
        await strap_device.power_on()
        await phone.power_on()
        await strap.start_advertising("Tether HR strap")
        connection = await phone.connect(strap_device.random_address)
        peer = Peer(connection)
        await peer.discover_all()
        uuids = [s.uuid for s in peer.services]
        heart_rate = peer.get_services_by_uuid(UUID.from_16_bits(hr.HEART_RATE_SERVICE))[0]
        information = peer.get_services_by_uuid(UUID.from_16_bits(hr.DEVICE_INFORMATION_SERVICE))[0]
        assert uuids.index(information.uuid) < uuids.index(heart_rate.uuid)
        chars = {c.uuid: c for c in heart_rate.characteristics}
        location = chars[UUID.from_16_bits(hr.BODY_SENSOR_LOCATION)]
        control_point = chars[UUID.from_16_bits(hr.HEART_RATE_CONTROL_POINT)]
        measurement = chars[UUID.from_16_bits(hr.HEART_RATE_MEASUREMENT)]
        assert measurement.get_descriptor(UUID.from_16_bits(hr.CCCD)) is not None
        assert bytes(await peer.read_value(location)) == b"\x01"
        strap.energy_kj = 42
        await peer.write_value(control_point, b"\x01", with_response=True)
        assert strap.energy_kj == 0
        with pytest.raises(att.ATT_Error) as refused:
            await peer.write_value(control_point, b"\x02", with_response=True)
        assert refused.value.error_code == hr.CONTROL_POINT_NOT_SUPPORTED
        with pytest.raises(att.ATT_Error) as not_readable:
            await peer.read_value(measurement)  # notify only
        assert not_readable.value.error_code == att.ATT_READ_NOT_PERMITTED_ERROR
        await connection.disconnect()

    asyncio.run(asyncio.wait_for(scenario(), 30))


# =============================================================================================
# End to end: ciq_controllers.py + heart_rate_peripheral.py + heart_rate_central.py
# =============================================================================================


def start(args, processes):
    """Starts a rig (a test_ciq_rigs.Process, kept in `processes`), waits for its READY line;
    returns (process, the line's words)."""
    process = Process(Path(args[0]).stem, [str(a) for a in args])
    processes.append(process)
    return process, process.wait_ready()


@pytest.fixture
def processes():
    """The rigs a test started; each is stopped, and its log removed, at the test's end."""
    started = []
    yield started
    for process in reversed(started):
        process.cleanup()


def run_session(processes, scenario, central_args, strap_args=()):
    """Controllers, a strap running `scenario` at 4 Hz, and the central until it exits.
    Returns (central's stdout lines as word lists, strap's process)."""
    _, ports = start([RIGS / "ciq_controllers.py", "--ports", "0,0"], processes)
    strap, _ = start(
        [RIGS / "heart_rate_peripheral.py", "--hci", f"tcp-client:127.0.0.1:{ports[0]}", "--address", STRAP,
         "--scenario", scenario, "--seed", "4", "--interval-ms", "250", *strap_args],
        processes,
    )
    central = subprocess.run(
        [sys.executable, RIGS / "heart_rate_central.py", "--hci", f"tcp-client:127.0.0.1:{ports[1]}", "--peer", STRAP,
         "--address", "F1:48:52:00:00:12", *[str(a) for a in central_args]],
        capture_output=True, text=True, timeout=45,
    )
    assert central.returncode == 0, central.stderr
    return [line.split() for line in central.stdout.splitlines()], strap


def notifications(lines):
    return [hr.decode_measurement(bytes.fromhex(words[2])) for words in lines if words[0] == "NOTIFICATION"]


def test_central_runs_the_core_request_order_and_gets_the_clean_scenario(processes):
    lines, strap = run_session(processes, "clean", ["--duration", "3.1", "--reset-after", "1.4"])
    kinds = [words[0] for words in lines]
    order = [k for k in kinds if k != "NOTIFICATION"]
    assert order == ["READY", "CONNECTED", "HANDLES", "WRITE_CCCD", "SUBSCRIBED", "READ_BSL", "SENSOR_LOCATION",
                     "WRITE_CP", "CP_RESPONSE", "DISCONNECT", "DISCONNECTED", "DONE"]
    assert lines[kinds.index("SENSOR_LOCATION")][2] == "01"
    assert lines[kinds.index("CP_RESPONSE")][2] == "ok"
    assert lines[kinds.index("DISCONNECTED")][2] == "reason=0x13"
    # Every value is the schedule's, in order, with the energy counter reset by the CP write.
    received = notifications(lines)
    assert 11 <= len(received) <= 13
    ticks = take(hr.schedule("clean", 4), len(received))
    assert [m.heart_rate for m in received] == [t.heart_rate for t in ticks]
    assert [m.rr_intervals for m in received] == [t.rr_intervals for t in ticks]
    assert [m.wide for m in received] == [t.wide for t in ticks]
    assert received[0].energy_expended == ticks[0].energy_spent
    reset_index = sum(1 for k in kinds[: kinds.index("WRITE_CP")] if k == "NOTIFICATION")
    assert received[10].energy_expended == sum(t.energy_spent for t in ticks[reset_index:11])
    assert strap.stop() == 0


def test_central_handles_are_past_the_device_information_service(processes):
    lines, _ = run_session(processes, "clean", ["--duration", "0.5"])
    handles = dict(item.split("=") for item in next(w for w in lines if w[0] == "HANDLES")[1:])
    assert int(handles["measurement"], 16) > 0x000A
    assert int(handles["cccd"], 16) == int(handles["measurement"], 16) + 1


def test_contact_lost_scenario_notifies_no_contact_then_contact_again(processes):
    lines, _ = run_session(processes, "contact-lost", ["--duration", "2.6"])
    contacts = [m.contact for m in notifications(lines)][:9]
    assert contacts == [hr.DETECTED] * 4 + [hr.NOT_DETECTED] * 3 + [hr.DETECTED] * 2


def test_silent_scenario_stops_notifying_but_keeps_the_link(processes):
    lines, strap = run_session(processes, "silent", ["--duration", "2.5"], ["--silent-after", "3"])
    assert len(notifications(lines)) == 3
    kinds = [words[0] for words in lines]
    assert kinds.index("DISCONNECT") < kinds.index("DISCONNECTED")  # the central ended it, not the strap
    assert strap.stop() == 0


def test_central_without_strap_fails_with_reason(processes):
    _, ports = start([RIGS / "ciq_controllers.py", "--ports", "0"], processes)
    central = subprocess.run(
        [sys.executable, RIGS / "heart_rate_central.py", "--hci", f"tcp-client:127.0.0.1:{ports[0]}", "--peer", STRAP,
         "--connect-timeout", "1", "--duration", "1"],
        capture_output=True, text=True, timeout=30,
    )
    assert central.returncode == 1
    assert "no LE connection" in central.stderr


def test_peripheral_exits_zero_on_sigterm(processes):
    _, ports = start([RIGS / "ciq_controllers.py", "--ports", "0"], processes)
    strap, words = start([RIGS / "heart_rate_peripheral.py", "--hci", f"tcp-client:127.0.0.1:{ports[0]}", "--address", STRAP], processes)
    assert words == [STRAP]
    assert strap.stop() == 0
