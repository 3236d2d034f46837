#!/usr/bin/env python3
"""The phone side of a heart-rate session on Bumble: a GATT client doing, over real BLE, exactly
what the Swift HeartRateCore (Examples/HeartRate) asks its host to do, in the same order.

After connecting to `--peer` it runs the full discovery a phone's stack runs before the app gets
the handles (primary services, the characteristics of each, the descriptors of each), then:
  1. Write Request 01 00 to the Heart Rate Measurement CCCD (notifications on), and waits for the
     Write Response;
  2. Read Request of Body Sensor Location, and waits for the Read Response;
  3. receives notifications; with `--reset-after S`, S seconds after the CCCD write response it
     sends Write Request 0x01 to the Heart Rate Control Point (Reset Energy Expended) and waits
     for the response;
  4. `--duration` seconds after the CCCD write response it disconnects (reason 0x13).
One request at a time, each after the previous response, as ATT and the core require. No MTU
exchange: the core makes none, so the default ATT MTU of 23 stays.

Stdout, one line each, flushed; T is CLOCK_REALTIME in ns since the epoch (the clock Tether's H4
tap stamps frames with), taken just before a request is handed to the stack or just after a
response or notification is delivered:
  READY <own address>                   the controller is up
  CONNECTED T <peer>
  HANDLES measurement=0x.. cccd=0x.. body_sensor_location=0x.. control_point=0x..
  WRITE_CCCD T / SUBSCRIBED T           the CCCD Write Request and its response
  READ_BSL T / SENSOR_LOCATION T VALUE  the Body Sensor Location read and its value
  NOTIFICATION T HEX                    every Heart Rate Measurement notification
  WRITE_CP T / CP_RESPONSE T ok|error=0xNN
  DISCONNECT T / DISCONNECTED T reason=0xNN
  DONE notifications=N
The decoded measurements and the progress go to stderr. Exit 0 when every step succeeded, 1 with
the reason on stderr otherwise; SIGTERM/SIGINT disconnects and exits 0.

Example (the strap on controller 9001, this central on 9002 or on a Tether H4 tap in front of it):
    python3 heart_rate_central.py --hci tcp-client:127.0.0.1:9002 --peer F0:48:52:00:00:01 \\
        --duration 15 --reset-after 5
"""

from __future__ import annotations

import asyncio
import sys
import time

from bumble import hci
from bumble.core import UUID, ProtocolError
from bumble.device import Device, Peer
from bumble.transport import open_transport

import heart_rate_gatt as hr
from bumble_local import accept_stop_signals, rig_argument_parser, stop_signal_event

_START = time.monotonic()


def log(text: str) -> None:
    """One progress line on stderr, seconds since start first."""
    print(f"{time.monotonic() - _START:9.3f} {text}", file=sys.stderr, flush=True)


def out(text: str) -> None:
    """One line of the stdout protocol (module docstring)."""
    print(text, flush=True)


class CentralError(RuntimeError):
    """A step of the session failed; the message says which."""


def find_handles(peer: Peer):
    """(measurement, cccd, body sensor location or None, control point or None) from discovery."""
    services = [s for s in peer.services if s.uuid == UUID.from_16_bits(hr.HEART_RATE_SERVICE)]
    if not services:
        raise CentralError("no Heart Rate Service (0x180D) on the peer")
    characteristics = {c.uuid: c for c in services[0].characteristics}
    measurement = characteristics.get(UUID.from_16_bits(hr.HEART_RATE_MEASUREMENT))
    if measurement is None:
        raise CentralError("no Heart Rate Measurement (0x2A37) in the Heart Rate Service")
    cccd = measurement.get_descriptor(UUID.from_16_bits(hr.CCCD))
    if cccd is None:
        raise CentralError("Heart Rate Measurement has no CCCD (0x2902)")
    location = characteristics.get(UUID.from_16_bits(hr.BODY_SENSOR_LOCATION))
    control_point = characteristics.get(UUID.from_16_bits(hr.HEART_RATE_CONTROL_POINT))
    return measurement, cccd, location, control_point


async def session(args, device: Device, stopping: asyncio.Event) -> int:
    """Connect, discover, subscribe, read, (reset), wait, disconnect."""
    log(f"connecting to {args.peer}")
    try:
        connection = await device.connect(args.peer, timeout=args.connect_timeout)
    except Exception as error:
        raise CentralError(f"no LE connection to {args.peer} within {args.connect_timeout} s: {error!r}") from None
    out(f"CONNECTED {time.time_ns()} {args.peer}")
    disconnected = asyncio.Event()

    def on_disconnection(reason):
        out(f"DISCONNECTED {time.time_ns()} reason=0x{reason:02x}")
        disconnected.set()

    connection.on("disconnection", on_disconnection)
    peer = Peer(connection)
    await peer.discover_all()
    measurement, cccd, location, control_point = find_handles(peer)
    out(
        f"HANDLES measurement=0x{measurement.handle:04x} cccd=0x{cccd.handle:04x} "
        f"body_sensor_location={'0x%04x' % location.handle if location else '-'} "
        f"control_point={'0x%04x' % control_point.handle if control_point else '-'}"
    )

    notifications = 0

    def on_notification(value):
        nonlocal notifications
        notifications += 1
        value = bytes(value)
        out(f"NOTIFICATION {time.time_ns()} {value.hex()}")
        try:
            log(f"measurement {hr.describe(hr.decode_measurement(value))}")
        except hr.MeasurementError as error:
            log(f"malformed measurement {value.hex()}: {error}")

    # Registered before the CCCD write, so a notification that overtakes the write response is
    # not lost; the write itself is ours, not Bumble's subscribe(), to control it byte for byte.
    peer.gatt_client.notification_subscribers.setdefault(measurement.handle, set()).add(on_notification)

    out(f"WRITE_CCCD {time.time_ns()}")
    await peer.write_value(cccd, hr.ENABLE_NOTIFICATIONS, with_response=True)
    subscribed = time.monotonic()
    out(f"SUBSCRIBED {time.time_ns()}")

    if location is not None:
        out(f"READ_BSL {time.time_ns()}")
        value = bytes(await peer.read_value(location))
        out(f"SENSOR_LOCATION {time.time_ns()} {value.hex()}")

    async def wait_until(offset_s: float) -> bool:
        """Sleeps until `offset_s` after the subscription; False if the link drops or a stop
        signal comes first."""
        waiters = [asyncio.create_task(disconnected.wait()), asyncio.create_task(stopping.wait())]
        remaining = max(0.0, subscribed + offset_s - time.monotonic())
        done, pending = await asyncio.wait(waiters, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        for task in pending:
            task.cancel()
        return not done

    if args.reset_after is not None:
        if control_point is None:
            raise CentralError("--reset-after: the peer has no Heart Rate Control Point (0x2A39)")
        if await wait_until(args.reset_after):
            out(f"WRITE_CP {time.time_ns()}")
            try:
                await peer.write_value(control_point, bytes([hr.RESET_ENERGY_EXPENDED]), with_response=True)
                out(f"CP_RESPONSE {time.time_ns()} ok")
            except ProtocolError as error:
                out(f"CP_RESPONSE {time.time_ns()} error=0x{error.error_code:02x}")

    completed = await wait_until(args.duration)
    if disconnected.is_set():
        raise CentralError("the peer dropped the link before --duration")
    out(f"DISCONNECT {time.time_ns()}")
    await connection.disconnect(hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR)
    await asyncio.wait_for(disconnected.wait(), 5.0)
    out(f"DONE notifications={notifications}")
    log("stopped by a signal" if not completed else f"done after {args.duration} s")
    return 0


async def run(args) -> int:
    async with await open_transport(args.hci) as hci_transport:
        device = Device.with_hci("Tether HR phone", hci.Address(args.address), hci_transport.source, hci_transport.sink)
        await asyncio.wait_for(device.power_on(), 10.0)
        stopping = stop_signal_event()
        out(f"READY {args.address}")
        limit = args.connect_timeout + args.duration + 30
        task = asyncio.create_task(asyncio.wait_for(session(args, device, stopping), limit))
        stop_wait = asyncio.create_task(stopping.wait())
        await asyncio.wait([task, stop_wait], return_when=asyncio.FIRST_COMPLETED)
        if not task.done():
            # A stop signal: a session that is waiting disconnects at once and ends by itself;
            # one still connecting or discovering is abandoned after a moment.
            done, _ = await asyncio.wait([task], timeout=3.0)
            if not done:
                task.cancel()
                log("stopped by a signal before the session was set up")
                return 0
        stop_wait.cancel()
        return task.result()


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__)
    parser.add_argument("--hci", default="tcp-client:127.0.0.1:9002", help="Bumble transport of the central's controller (or a tap)")
    parser.add_argument("--peer", default="F0:48:52:00:00:01", help="the strap's static random address")
    parser.add_argument("--address", default="F1:48:52:00:00:02", help="this central's static random address")
    parser.add_argument("--duration", type=float, default=15.0, help="seconds from the subscription to the disconnection")
    parser.add_argument("--reset-after", type=float, default=None, help="seconds from the subscription to the Control Point write (none by default)")
    parser.add_argument("--connect-timeout", type=float, default=10.0, help="seconds to wait for the LE connection")
    args = parser.parse_args()
    if args.duration <= 0:
        parser.error("--duration must be greater than 0")
    if args.reset_after is not None and not 0 <= args.reset_after < args.duration:
        parser.error("--reset-after must be at least 0 and less than --duration")
    try:
        return asyncio.run(run(args))
    except CentralError as error:
        print(f"heart_rate_central: {error}", file=sys.stderr)
    except OSError as error:
        print(f"heart_rate_central: cannot open HCI transport {args.hci}: {error}", file=sys.stderr)
    except (asyncio.TimeoutError, TimeoutError):
        print("heart_rate_central: timed out", file=sys.stderr)
    except ProtocolError as error:
        print(f"heart_rate_central: GATT request refused: {error}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main())
