#!/usr/bin/env python3
"""A Bluetooth heart-rate chest strap on Bumble: Heart Rate Service 0x180D over real GATT.

The strap is a Bumble host on one (usually virtual) controller. It serves Device Information
(0x180A: manufacturer name, model number) first and the Heart Rate Service after it, so the heart
rate handles are not the trivial first ones and a client that hard-codes them would fail:
  Heart Rate Measurement 0x2A37   notify (with its CCCD); not readable, as the spec has it
  Body Sensor Location   0x2A38   read: 1 (chest)
  Heart Rate Control Point 0x2A39 write (Write Request): 0x01 resets the Energy Expended counter;
                                  any other value is refused with ATT error 0x80
It advertises connectable at the static random `--address` with flags, the 16-bit UUID 0x180D
and the complete local name, and stops advertising while a central is connected.

Notifications start one interval after a central enables them (CCCD 01 00) and follow
`--scenario` (values deterministic from `--seed`, see heart_rate_gatt.schedule):
  clean         1 Hz measurements: some in the 16-bit form, RR intervals, Energy Expended
                every 10th, sensor contact supported and detected
  contact-lost  as clean, but contact not detected for --contact-lost-for ticks from tick
                --contact-lost-at, then detected again
  silent        --silent-after measurements, then no notification at all while staying connected
Each new subscription starts the scenario from its first tick; the energy counter runs for the
whole process until the Control Point resets it.

`READY <address>` on stdout (flushed) once advertising. One stderr line per connection event,
subscription, read, write and notification (hex and decoded). SIGTERM/SIGINT: disconnect the
central (reason 0x15, power off) and exit 0.

Example (controllers from ciq_controllers.py on 9001/9002):
    python3 heart_rate_peripheral.py --hci tcp-client:127.0.0.1:9001 --scenario clean --seed 1
"""

from __future__ import annotations

import asyncio
import sys
import time

from bumble import att, hci
from bumble.core import UUID, AdvertisingData
from bumble.device import Device
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.profiles.device_information_service import DeviceInformationService
from bumble.transport import open_transport

import heart_rate_gatt as hr
from bumble_local import accept_stop_signals, check_address, disconnect_on_exit, ready_until_stopped, rig_argument_parser, start_exit_watchdog

_START = time.monotonic()


def log(text: str) -> None:
    """One line on stderr: seconds since start, then what happened."""
    print(f"{time.monotonic() - _START:9.3f} {text}", file=sys.stderr, flush=True)


class Strap:
    """The GATT database and the notification schedule of one strap."""

    def __init__(self, args, device: Device):
        self.args = args
        self.device = device
        self.energy_kj = 0  # the Energy Expended counter; the Control Point resets it
        self.connections = {}  # connection handle -> Connection
        self.streams = {}  # connection handle -> the task notifying that central

        self.measurement = Characteristic(
            UUID.from_16_bits(hr.HEART_RATE_MEASUREMENT),
            Characteristic.Properties.NOTIFY,
            0,
            # Notify only: the spec gives Heart Rate Measurement no read, and Bumble 0.0.236 does
            # not enforce the missing READABLE permission by itself, so the read is refused here.
            CharacteristicValue(read=self.on_measurement_read),
        )
        self.measurement.on("subscription", self.on_subscription)
        location = Characteristic(
            UUID.from_16_bits(hr.BODY_SENSOR_LOCATION),
            Characteristic.Properties.READ,
            Characteristic.READABLE,
            CharacteristicValue(read=self.on_location_read),
        )
        control_point = Characteristic(
            UUID.from_16_bits(hr.HEART_RATE_CONTROL_POINT),
            Characteristic.Properties.WRITE,
            Characteristic.WRITEABLE,
            CharacteristicValue(write=self.on_control_point_write),
        )
        device.add_service(DeviceInformationService(manufacturer_name="Tether Labs", model_number="HR-Strap 1"))
        device.add_service(Service(UUID.from_16_bits(hr.HEART_RATE_SERVICE), [self.measurement, location, control_point]))
        device.on("connection", self.on_connection)

    def handles(self) -> str:
        """The heart rate handles as served, for the log (and the reader of a capture)."""
        service, characteristic = UUID.from_16_bits(hr.HEART_RATE_SERVICE), UUID.from_16_bits(hr.HEART_RATE_MEASUREMENT)
        cccd = self.device.gatt_server.get_descriptor_attribute(service, characteristic, UUID.from_16_bits(hr.CCCD))
        return f"measurement=0x{self.measurement.handle:04x}" + (f" cccd=0x{cccd.handle:04x}" if cccd else "")

    def on_connection(self, connection) -> None:
        self.connections[connection.handle] = connection
        log(f"connected {connection.peer_address} handle=0x{connection.handle:04x}")

        def on_disconnection(reason):
            log(f"disconnected {connection.peer_address} reason=0x{reason:02x}")
            self.connections.pop(connection.handle, None)
            self.stop_stream(connection.handle)

        connection.on("disconnection", on_disconnection)

    def on_subscription(self, bearer, notify_enabled, _indicate_enabled) -> None:
        handle = getattr(bearer, "handle", None)
        connection = self.connections.get(handle)
        log(f"CCCD of Heart Rate Measurement: notifications {'on' if notify_enabled else 'off'}")
        self.stop_stream(handle)
        if connection is not None and notify_enabled:
            self.streams[handle] = asyncio.get_running_loop().create_task(self.stream(connection))

    def stop_stream(self, handle) -> None:
        task = self.streams.pop(handle, None)
        if task is not None:
            task.cancel()

    def on_measurement_read(self, _connection) -> bytes:
        log("read Heart Rate Measurement: not permitted, ATT error 0x02")
        raise att.ATT_Error(att.ATT_READ_NOT_PERMITTED_ERROR)

    def on_location_read(self, _connection) -> bytes:
        log("read Body Sensor Location -> 01 (chest)")
        return bytes([hr.BODY_SENSOR_LOCATION_CHEST])

    def on_control_point_write(self, _connection, value) -> None:
        value = bytes(value)
        if value != bytes([hr.RESET_ENERGY_EXPENDED]):
            log(f"write Heart Rate Control Point {value.hex()}: not supported, ATT error 0x80")
            raise att.ATT_Error(hr.CONTROL_POINT_NOT_SUPPORTED)
        log(f"write Heart Rate Control Point 01: Energy Expended reset (was {self.energy_kj} kJ)")
        self.energy_kj = 0

    async def stream(self, connection) -> None:
        """Notifies the scenario's measurements, one per interval, from the subscription on. The
        next tick is scheduled from the start time rather than the previous send, so the rate
        does not drift over a long run."""
        interval = self.args.interval_ms / 1000
        start = time.monotonic()
        ticks = hr.schedule(
            self.args.scenario, self.args.seed, self.args.contact_lost_at, self.args.contact_lost_for, self.args.silent_after
        )
        for n, tick in enumerate(ticks):
            await asyncio.sleep(max(0.0, start + (n + 1) * interval - time.monotonic()))
            self.energy_kj = min(0xFFFF, self.energy_kj + tick.energy_spent)  # the field saturates
            m = hr.Measurement(
                tick.heart_rate, tick.wide, tick.contact, self.energy_kj if tick.include_energy else None, tick.rr_intervals
            )
            value = hr.encode_measurement(m)
            log(f"notify #{n} {value.hex()} {hr.describe(m)}")
            try:
                await self.device.notify_subscriber(connection, self.measurement, value)
            except Exception as error:  # the link is going away; the disconnection ends this task
                log(f"notification failed: {error!r}")
                return
        log(f"scenario {self.args.scenario}: no more notifications (still connected)")

    async def start_advertising(self, name: str) -> None:
        advertising = AdvertisingData(
            [
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, UUID.from_16_bits(hr.HEART_RATE_SERVICE).to_bytes()),
                (AdvertisingData.COMPLETE_LOCAL_NAME, name.encode("utf-8")[:20]),
            ]
        )
        await self.device.start_advertising(
            auto_restart=True,
            advertising_data=bytes(advertising),
            advertising_interval_min=20.0,
            advertising_interval_max=20.0,
        )

    async def power_off(self) -> None:
        """Disconnect every central (reason 0x15, power off), each bounded in time."""
        for connection in list(self.connections.values()):
            await disconnect_on_exit(connection, log)


async def run(args) -> int:
    async with await open_transport(args.hci) as hci_transport:
        device = Device.with_hci(args.name, hci.Address(args.address), hci_transport.source, hci_transport.sink)
        strap = Strap(args, device)
        await device.power_on()
        await strap.start_advertising(args.name)
        log(f"advertising as {args.address}, scenario {args.scenario}, seed {args.seed}; {strap.handles()}")
        await ready_until_stopped(f"READY {args.address}")
        log("stopping")
        start_exit_watchdog(5.0)  # the process ends 5 s after the signal whatever the shutdown is doing
        for handle in list(strap.streams):
            strap.stop_stream(handle)
        await strap.power_off()
    return 0


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__)
    parser.add_argument("--hci", default="tcp-client:127.0.0.1:9001", help="Bumble transport of the strap's controller")
    parser.add_argument("--address", default="F0:48:52:00:00:01", help="static random address to advertise (top two bits set)")
    parser.add_argument("--name", default="Tether HR strap", help="complete local name in the advertising data")
    parser.add_argument("--scenario", choices=hr.SCENARIOS, default="clean", help="what the strap does once subscribed")
    parser.add_argument("--seed", type=int, default=1, help="seed of the measurement values")
    parser.add_argument("--interval-ms", type=int, default=1000, help="time between two measurements (default 1000)")
    parser.add_argument("--contact-lost-at", type=int, default=4, help="contact-lost: first tick without contact (0-based)")
    parser.add_argument("--contact-lost-for", type=int, default=3, help="contact-lost: ticks without contact")
    parser.add_argument("--silent-after", type=int, default=3, help="silent: measurements sent before the strap goes silent")
    args = parser.parse_args()
    check_address(parser, args.address)
    if args.interval_ms <= 0:
        parser.error("--interval-ms must be greater than 0")
    try:
        return asyncio.run(run(args))
    except OSError as error:
        print(f"heart_rate_peripheral: cannot open HCI transport {args.hci}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
