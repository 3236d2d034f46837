#!/usr/bin/env python3
"""The watch's BLE host for the session link on Bumble, bridged to one local client as JSON lines.

Tether's Swift live host runs SessionCore in the watch role; this bridge does the Bluetooth for it.
It opens the Bumble transport `--hci`, powers the controller on, serves the session link's GATT
service (docs/session-link.md: write characteristic, write without response and plain write both
accepted; notify characteristic with its CCCD), advertises connectable at the static random
address `--address` once its client is attached, listens on `--listen` — `unix:PATH`, a socket in
a folder only this user can enter (mode 0700; what `tether live` gives), or `HOST:PORT` on TCP for
running it by hand — prints `READY unix:PATH` or `READY <port>` on stdout (flushed; with port 0 the
port picked), accepts ONE client (on a Unix socket, only the process that started the bridge) and then speaks one JSON object
per line each way (docs/ble-rigs.md has the whole contract):

bridge -> host
  {"ev":"bluetooth","ready":true}                    the controller is up (sent on accept)
  {"ev":"connected","peer":P,"mtu":247,"max_write":244}
                                                      a central enabled notifications on the CCCD
                                                      (the link is up); mtu is the ATT MTU then
  {"ev":"write","peer":P,"hex":"..."}                every value written to the write
                                                      characteristic, in order
  {"ev":"unsubscribed","peer":P}                     the central disabled notifications again
  {"ev":"disconnected","peer":P,"reason":19}         the link dropped (HCI reason code); only
                                                      after `connected` was sent for that link
  {"ev":"error","message":"...","op":{...}}          a bad command (the bridge stays up)
host -> bridge
  {"op":"notify","hex":"..."}   one notification to the subscribed central, in order
  {"op":"disconnect"}           drop the link (HCI reason 0x13)
  {"op":"advertise","on":true|false}
  {"op":"quit"}                 EOF on the socket = quit

P is the central's address as Bumble writes it ("F1:F1:F1:F1:F1:F1" for a random address,
"…/P" for a public one), which is the form ciq_phone_bridge.py takes as `peer`. One central at a
time: advertising stops while a central is connected and starts again when the link drops, unless
the host turned it off.

Example (controllers from ciq_controllers.py on 9001/9002):
    python3 session_watch_bridge.py --hci tcp-client:127.0.0.1:9001 --listen 127.0.0.1:0 \\
        --address F0:F1:F2:F3:F4:F5
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from bumble import att, hci
from bumble.core import UUID, AdvertisingData
from bumble.device import Device
from bumble.transport import open_transport

import session_gatt
from bumble_local import (accept_stop_signals, check_address, close_client, error_event, parse_listen, read_commands, rig_argument_parser,
                          serve_until_done, set_no_delay, skip_debug_formatting, take_write_commands)

POWER_ON_TIMEOUT_S = 10.0
QUIT_DISCONNECT_TIMEOUT_S = 2.0
EXIT_WATCHDOG_S = 5.0
MAX_LINE = 1 << 20
MAX_MTU = 517  # the largest ATT MTU: 512-byte values + 5 (Core Vol 3, Part F, 3.2.9)
USER_TERMINATED = hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR  # 0x13
OPS = "notify, disconnect, advertise or quit"

_START = time.monotonic()


def log(text: str) -> None:
    """One line on stderr, with the seconds since start."""
    print(f"{time.monotonic() - _START:9.3f} watch-bridge {text}", file=sys.stderr, flush=True)


class Central:
    """The one connected central: its Bumble connection and whether the link is up for the host."""

    def __init__(self, connection):
        self.connection = connection
        self.name = str(connection.peer_address)
        self.write_prefix = '{"ev":"write","peer":' + json.dumps(self.name) + ',"hex":"'  # the per-frame event line's start
        self.subscribed = False  # notifications enabled on the CCCD right now
        self.announced = False  # `connected` was sent for this connection


class WatchBridge:
    """The JSON-lines client on one side, the Bumble GATT server on the other."""

    def __init__(self, device: Device, args):
        self.device = device
        self.args = args
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.central: Central | None = None
        self.advertise_wanted = True  # the host's wish; honoured whenever no central is connected
        self.advertising = False  # what this bridge last told the controller
        self.advertising_lock = asyncio.Lock()
        self.quitting = asyncio.Event()
        self.tasks: set[asyncio.Task] = set()

        service, self.notify_characteristic = session_gatt.make_service(self.on_write)
        self.service_uuid = service.uuid
        self.notify_characteristic.on("subscription", self.on_subscription)
        device.gatt_server.max_mtu = args.mtu
        device.add_service(service)
        # The frames (one Write Command per 20 bytes at ATT MTU 23) skip Bumble's GATT server.
        write = next(c for c in service.characteristics if c.uuid == UUID(session_gatt.WRITE_UUID))
        take_write_commands(device, write.handle, self.on_write)
        device.on("connection", self.on_connection)

    # --- events to the host -----------------------------------------------------------------

    def emit(self, event: dict) -> None:
        """Send one event line to the host (dropped while no client is attached)."""
        if self.args.verbose or event["ev"] != "write":
            log(f"-> {json.dumps(event)}")
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write((json.dumps(event, separators=(",", ":")) + "\n").encode())

    def error(self, message: str, op=None) -> None:
        """An `error` event for a bad command."""
        self.emit(error_event(message, op))

    def spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    # --- commands from the host -------------------------------------------------------------

    async def serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read commands until quit or EOF."""
        self.reader, self.writer = reader, writer
        set_no_delay(writer)
        self.emit({"ev": "bluetooth", "ready": True})
        await self.apply_advertising()  # only now, so the host sees every event of every link
        await read_commands(reader, self.quitting, MAX_LINE, self.handle, self.emit, OPS, log=log)
        await self.quit()

    async def handle(self, op: dict) -> None:
        """One command."""
        kind = op["op"]
        if kind == "quit":
            self.quitting.set()
        elif kind == "notify":
            await self.notify(op)
        elif kind == "disconnect":
            await self.disconnect(op)
        elif kind == "advertise":
            on = op.get("on")
            if not isinstance(on, bool):
                self.error('"advertise" needs "on": true or false', op)
                return
            log(f"<- advertise {'on' if on else 'off'}")
            self.advertise_wanted = on
            await self.apply_advertising()
        else:
            self.error(f"unknown op {kind!r}; expected {OPS}", op)

    async def notify(self, op: dict) -> None:
        """One ATT Handle Value Notification, awaited before the next command is read (in order)."""
        try:
            data = bytes.fromhex(op.get("hex", None))
        except (TypeError, ValueError):
            self.error('"notify" needs "hex": the bytes to notify as hex digits', op)
            return
        central = self.central
        if central is None:
            self.error("no central is connected; wait for \"connected\"", op)
            return
        if not central.subscribed:
            self.error(f"central {central.name} has not enabled notifications; wait for \"connected\"", op)
            return
        limit = central.connection.att_mtu - 3
        if not data or len(data) > limit:
            self.error(f"notification of {len(data)} bytes; expected 1 to {limit} (ATT MTU {limit + 3} - 3)", op)
            return
        if self.args.verbose:
            log(f"<- notify {data.hex()}")
        try:
            await self.device.notify_subscriber(central.connection, self.notify_characteristic, data)
        except Exception as error:  # the link went away under the notification
            self.error(f"notification to {central.name} failed: {error!r}", op)

    async def disconnect(self, op: dict | None) -> None:
        """HCI Disconnect (reason 0x13); `disconnected` follows from the controller."""
        central = self.central
        if central is None:
            if op is not None:
                self.error("no central is connected", op)
            return
        log(f"disconnecting {central.name}")
        try:
            await asyncio.wait_for(central.connection.disconnect(USER_TERMINATED), QUIT_DISCONNECT_TIMEOUT_S)
        except Exception as error:
            self.error(f"disconnecting {central.name} failed: {error!r}", op)

    # --- Bluetooth --------------------------------------------------------------------------

    def on_connection(self, connection) -> None:
        if self.central is not None:  # not expected: advertising stops while a central is connected
            log(f"second central {connection.peer_address} refused (one at a time)")
            self.spawn(connection.disconnect(USER_TERMINATED))
            return
        central = Central(connection)
        self.central = central
        self.advertising = False  # the controller stops advertising when a connection is made
        log(f"central {central.name} connected, handle 0x{connection.handle:04x}")
        connection.on("disconnection", lambda reason: self.on_disconnection(central, reason))
        connection.on("connection_att_mtu_update", lambda: log(f"ATT MTU {connection.att_mtu}"))

    def on_disconnection(self, central: Central, reason: int) -> None:
        if self.central is not central:
            return
        self.central = None
        log(f"central {central.name} disconnected, reason 0x{int(reason):02x}")
        if central.announced:
            self.emit({"ev": "disconnected", "peer": central.name, "reason": int(reason)})
        if not self.quitting.is_set():
            self.spawn(self.apply_advertising())

    def on_write(self, connection, value) -> None:
        """Bumble calls this for each Write Command / Write Request, in arrival order."""
        central = self.central
        if central is None or central.connection is not connection:
            self.emit({"ev": "write", "peer": str(connection.peer_address), "hex": bytes(value).hex()})
            return
        # The event sent per frame: its line put together without json.dumps.
        if self.args.verbose:
            log(f"-> write {central.name} {bytes(value).hex()}")
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write((central.write_prefix + bytes(value).hex() + '"}\n').encode())

    def on_subscription(self, bearer, notify_enabled: bool, _indicate_enabled: bool) -> None:
        """The central wrote the notify characteristic's CCCD (Bumble's `subscription` event)."""
        connection = bearer.connection if att.is_enhanced_bearer(bearer) else bearer
        central = self.central
        if central is None or central.connection is not connection:
            return
        if notify_enabled and not central.subscribed:
            central.subscribed = True
            central.announced = True
            mtu = connection.att_mtu
            self.emit({"ev": "connected", "peer": central.name, "mtu": mtu, "max_write": mtu - 3})
        elif not notify_enabled and central.subscribed:
            central.subscribed = False
            self.emit({"ev": "unsubscribed", "peer": central.name})

    async def apply_advertising(self) -> None:
        """Advertise exactly when the host wants it and no central is connected."""
        async with self.advertising_lock:
            want = self.advertise_wanted and self.central is None and not self.quitting.is_set()
            if want == self.advertising:
                return
            try:
                if want:
                    await self.start_advertising()
                    log(f"advertising as {self.args.address}")
                else:
                    await self.device.stop_advertising()
                    log("advertising stopped")
                self.advertising = want
            except Exception as error:
                self.error(f"{'starting' if want else 'stopping'} advertising failed: {error!r}")

    async def start_advertising(self) -> None:
        advertising = AdvertisingData(
            [
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, self.service_uuid.to_bytes(force_128=True)),
            ]
        )
        scan_response = AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, self.args.name.encode("utf-8")[:29])])
        await self.device.start_advertising(
            advertising_data=bytes(advertising),
            scan_response_data=bytes(scan_response),
            advertising_interval_min=20.0,
            advertising_interval_max=20.0,
        )

    # --- the end ----------------------------------------------------------------------------

    def stop(self) -> None:
        """SIGTERM/SIGINT: end as on a quit op (the client's read loop sees end of input)."""
        self.quitting.set()
        if self.reader is not None:
            self.reader.feed_eof()

    async def quit(self) -> None:
        """Drop the central (→ `disconnected`), close the client, end."""
        self.quitting.set()
        await self.disconnect(None)
        await asyncio.sleep(0)  # let the disconnection event reach the client
        await close_client(self.writer)


async def run(args) -> int:
    async with await open_transport(args.hci) as hci_transport:
        device = Device.with_hci(args.name, hci.Address(args.address), hci_transport.source, hci_transport.sink)
        skip_debug_formatting(device.host)
        bridge = WatchBridge(device, args)
        try:
            await asyncio.wait_for(device.power_on(), POWER_ON_TIMEOUT_S)
        except asyncio.TimeoutError:
            print(f"session_watch_bridge: the controller behind {args.hci} did not answer within {POWER_ON_TIMEOUT_S:g} s", file=sys.stderr)
            return 1
        log(f"controller up on {args.hci}")

        await serve_until_done(bridge, args.listen, MAX_LINE, log, exit_watchdog_s=EXIT_WATCHDOG_S,
                               if_nobody_came=lambda: bridge.disconnect(None))
    return 0


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__)
    parser.add_argument("--hci", required=True, help="Bumble transport of the watch's controller, e.g. tcp-client:127.0.0.1:9001")
    parser.add_argument("--listen", required=True, type=parse_listen, help="unix:PATH (in a folder of mode 0700; what tether live gives) or HOST:PORT (port 0: pick one) for the one JSON-lines client")
    parser.add_argument("--address", required=True, help="static random address to advertise, e.g. F0:F1:F2:F3:F4:F5 (first byte C0-FF)")
    parser.add_argument("--name", default="Tether session watch", help="local name in the scan response")
    parser.add_argument("--mtu", type=int, default=247, help=f"largest ATT MTU the server accepts ({session_gatt.MIN_MTU}-{MAX_MTU})")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every write and notification on stderr")
    args = parser.parse_args()
    check_address(parser, args.address)
    if not session_gatt.MIN_MTU <= args.mtu <= MAX_MTU:
        parser.error(f"--mtu {args.mtu}: an ATT MTU is {session_gatt.MIN_MTU} to {MAX_MTU}")
    try:
        return asyncio.run(run(args))
    except OSError as error:
        print(f"session_watch_bridge: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
