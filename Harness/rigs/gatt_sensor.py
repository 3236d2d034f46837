#!/usr/bin/env python3
"""A generic BLE sensor peripheral on Bumble: several services, a notification stream, and a write
that triggers a burst of notifications. The device behind `Captures/gatt-sensor` (recorded by
`Harness/record_gatt_sensor_set.py`), which `tether emulate` then stands in for.

GATT database (Bumble numbers the handles in this order):
  Device Information 0x180A   Manufacturer Name 0x2A29 (read), Model Number 0x2A24 (read)
  Battery 0x180F              Battery Level 0x2A19 (read, notify)
  Tether sensor (SENSOR_SERVICE, 128-bit)
    stream   (notify)          a 6-byte sample every STREAM_PERIOD_S while subscribed:
                               sequence u16 LE, then x, y as i16 LE
    control  (write, write without response)
                               01 NN  -> NN notifications on `burst` (bytes: 0xB5, index u8, index*3 u16 LE)
                               02     -> one notification on `reply`: b"pong" + a count of pongs u8
                               03 XX  -> LED on/off, no answer
    burst    (notify)
    reply    (notify)
    config   (read, write)     each read gives b"cfg" + the number of reads so far (u8); a write
                               replaces the b"cfg" prefix

Security and the peripheral as GATT client, as trackers in real phone captures behave (each off by
default; `Harness/record_gatt_sensor_security_sets.py` records sets with them on):
  --security-request S    send an SMP Security Request S seconds after each connection comes up
  --legacy-pairing        accept LE legacy pairing only (the Pairing Response clears the SC flag),
                          Just Works, bonding; otherwise LE Secure Connections, Just Works, bonding
  --discover-central S    S seconds after each connection, discover the central's own GATT database
                          (services, characteristics, descriptors) as GATT client

Run it on a controller (e.g. from ciq_controllers.py):
    python3 gatt_sensor.py --hci tcp-client:127.0.0.1:9001 --address F0:5E:00:00:00:01
It prints `READY` once advertising and runs until SIGTERM or SIGINT.
"""

from __future__ import annotations

import asyncio
import struct
import sys

from bumble import hci
from bumble.core import AdvertisingData
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

from hci_latency import LatencyProbe
from bumble_local import accept_stop_signals, check_address, ready_until_stopped, rig_argument_parser

SENSOR_SERVICE = "7E7E5E00-0000-4000-8000-00000000A001"
STREAM_UUID = "7E7E5E01-0000-4000-8000-00000000A001"
CONTROL_UUID = "7E7E5E02-0000-4000-8000-00000000A001"
BURST_UUID = "7E7E5E03-0000-4000-8000-00000000A001"
REPLY_UUID = "7E7E5E04-0000-4000-8000-00000000A001"
CONFIG_UUID = "7E7E5E05-0000-4000-8000-00000000A001"
NAME = "Tether Sensor"
STREAM_PERIOD_S = 0.05

READ = Characteristic.Properties.READ
NOTIFY = Characteristic.Properties.NOTIFY
WRITE = Characteristic.Properties.WRITE
WRITE_NO_RESPONSE = Characteristic.Properties.WRITE_WITHOUT_RESPONSE


def burst_value(index: int) -> bytes:
    """The `index`-th notification of a burst."""
    return bytes([0xB5, index & 0xFF]) + struct.pack("<H", (index * 3) & 0xFFFF)


def stream_value(sequence: int) -> bytes:
    """The `sequence`-th sample of the stream: a deterministic pattern."""
    x = (sequence * 37) % 2000 - 1000
    y = (sequence * 91) % 2000 - 1000
    return struct.pack("<Hhh", sequence & 0xFFFF, x, y)


class Sensor:
    """The sensor's GATT database and behaviour on one Bumble device."""

    def __init__(self, device: Device, security_request_s: float | None = None, legacy_pairing: bool = False,
                 discover_central_s: float | None = None):
        self.device = device
        self.security_request_s = security_request_s
        self.legacy_pairing = legacy_pairing
        self.discover_central_s = discover_central_s
        self.central_discoveries: list[int] = []  # services found, one entry per discovery made
        device.pairing_config_factory = lambda _connection: PairingConfig(
            sc=not legacy_pairing, mitm=False, bonding=True,
            delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
        if security_request_s is not None or discover_central_s is not None:
            device.on("connection", self.on_connection)
        self.reads = 0
        self.pongs = 0
        self.prefix = b"cfg"
        self.led = 0
        self.stream_task: asyncio.Task | None = None
        self.tasks: set[asyncio.Task] = set()
        self.battery = Characteristic("2A19", READ | NOTIFY, Characteristic.READABLE, bytes([87]))
        self.stream = Characteristic(STREAM_UUID, NOTIFY, Characteristic.READABLE, b"")
        self.burst = Characteristic(BURST_UUID, NOTIFY, Characteristic.READABLE, b"")
        self.reply = Characteristic(REPLY_UUID, NOTIFY, Characteristic.READABLE, b"")
        control = Characteristic(CONTROL_UUID, WRITE | WRITE_NO_RESPONSE, Characteristic.WRITEABLE,
                                 CharacteristicValue(write=self.on_control))
        config = Characteristic(CONFIG_UUID, READ | WRITE, Characteristic.READABLE | Characteristic.WRITEABLE,
                                CharacteristicValue(read=self.read_config, write=self.write_config))
        device.add_services([
            Service("180A", [
                Characteristic("2A29", READ, Characteristic.READABLE, b"Tether Labs"),
                Characteristic("2A24", READ, Characteristic.READABLE, b"TS-1"),
            ]),
            Service("180F", [self.battery]),
            Service(SENSOR_SERVICE, [self.stream, control, self.burst, self.reply, config]),
        ])
        self.stream.on("subscription", self.on_stream_subscription)

    def on_connection(self, connection) -> None:
        if self.security_request_s is not None:
            self.spawn(self.request_security(connection, self.security_request_s))
        if self.discover_central_s is not None:
            self.spawn(self.discover_central(connection, self.discover_central_s))

    async def request_security(self, connection, delay_s: float) -> None:
        """A Security Request: the central is asked to pair (its AuthReq from the pairing config)."""
        await asyncio.sleep(delay_s)
        if connection.is_encrypted or connection.handle not in self.device.connections:
            return
        connection.request_pairing()

    async def discover_central(self, connection, delay_s: float) -> None:
        """The sensor as GATT client: discovers the central's whole database."""
        await asyncio.sleep(delay_s)
        if connection.handle not in self.device.connections:
            return
        peer = Peer(connection)
        try:
            await peer.discover_all()
        except Exception as error:  # the link went away under it
            print(f"gatt_sensor: discovery of the central failed: {error!r}", file=sys.stderr)
            return
        self.central_discoveries.append(len(peer.services))

    def spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def read_config(self, _connection) -> bytes:
        self.reads += 1
        return self.prefix + bytes([self.reads & 0xFF])

    def write_config(self, _connection, value) -> None:
        self.prefix = bytes(value)

    def on_control(self, connection, value) -> None:
        value = bytes(value)
        if len(value) == 2 and value[0] == 0x01:
            self.spawn(self.send_burst(connection, value[1]))
        elif value == b"\x02":
            self.pongs += 1
            self.spawn(self.device.notify_subscriber(connection, self.reply, b"pong" + bytes([self.pongs & 0xFF])))
        elif len(value) == 2 and value[0] == 0x03:
            self.led = value[1]

    async def send_burst(self, connection, count: int) -> None:
        for index in range(count):
            await self.device.notify_subscriber(connection, self.burst, burst_value(index))

    def on_stream_subscription(self, bearer, notify_enabled: bool, _indicate_enabled: bool) -> None:
        if notify_enabled and self.stream_task is None:
            self.stream_task = asyncio.create_task(self.run_stream(bearer))
        elif not notify_enabled and self.stream_task is not None:
            self.stream_task.cancel()
            self.stream_task = None

    async def run_stream(self, connection) -> None:
        sequence = 0
        while True:
            try:
                await self.device.notify_subscriber(connection, self.stream, stream_value(sequence))
            except Exception:  # the link went away
                return
            sequence += 1
            await asyncio.sleep(STREAM_PERIOD_S)

    def advertising_data(self) -> bytes:
        return bytes(AdvertisingData([
            (AdvertisingData.FLAGS, bytes([0x06])),
            (AdvertisingData.COMPLETE_LOCAL_NAME, NAME.encode()),
            (AdvertisingData.INCOMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, bytes([0x0F, 0x18])),
        ]))


async def run(args) -> int:
    async with await open_transport(args.hci) as transport:
        probe = LatencyProbe(args.latency_log) if args.latency_log else None
        sink = probe.sink(transport.sink) if probe else transport.sink
        device = Device.with_hci(NAME, hci.Address(args.address), transport.source, sink)
        if probe:
            probe.attach_source(transport.source)
        sensor = Sensor(device, security_request_s=args.security_request, legacy_pairing=args.legacy_pairing,
                        discover_central_s=args.discover_central)
        await device.power_on()
        await device.start_advertising(advertising_data=sensor.advertising_data(), auto_restart=True)
        await ready_until_stopped("READY")
    return 0


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__)
    parser.add_argument("--hci", required=True, help="Bumble transport of the sensor's controller")
    parser.add_argument("--address", default="F0:5E:00:00:00:01", help="static random address to advertise")
    parser.add_argument("--latency-log", help="write when each write arrived and its first answer left (hci_latency.py; CI/bench/emulate-latency)")
    parser.add_argument("--security-request", type=float, metavar="S", help="send a Security Request S seconds after each connection")
    parser.add_argument("--legacy-pairing", action="store_true", help="accept LE legacy pairing only (SC flag clear)")
    parser.add_argument("--discover-central", type=float, metavar="S", help="discover the central's GATT database S seconds after each connection")
    args = parser.parse_args()
    check_address(parser, args.address)
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
