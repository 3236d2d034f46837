#!/usr/bin/env python3
"""A Garmin Connect IQ watch on Bumble: the Connect IQ GATT service and the app-message link.

The watch is a Bumble host on one (usually virtual) controller. It serves the Connect IQ service
with its two characteristics (write without response: phone -> watch; notify: watch -> phone;
`--legacy` serves the legacy UUIDs instead), advertises connectable at the fixed static address
`--address`, and speaks the link of Tether's `docs/connectiq-link.md`: commands 1-6, transfer control,
data windows of 15, acks matched by type, CRC-16/ARC, XXTEA decryption of the phone's encrypted
transfers with the key packet, large packets when enabled. Where that note leaves the watch's
behaviour open, docs/ble-rigs.md says what this rig does.

Apps are given on the command line, repeatable, as `--app UUID:BEHAVIOUR[:VERSION]`:
  echo            installed; every message received is sent back as a plain transfer
  not-installed   app info 0xFFFF, connect status 1 (app not found), open app 2
  silent          accepts connect, the key and `first`, then acknowledges nothing more
  slow            like echo, every ack delayed by --slow-ms
  oom             answers `first` with status 5 (out of memory)
  busy            connect answers status 2 (no free connection ids)
  not-started     answers every `first` with status 3 (transfer not started)
  chatty          opens its own connection (command 3), sends --chatty-count dictionaries
                  {"counter": n} every --chatty-interval-ms, then closes it (command 4)
  disconnect-mid  drops the BLE link after --disconnect-after data packets of a transfer
Without any --app, the watch has the SDK's loopback app 0180E520-… as `echo`.

Every packet received and sent is logged decoded on stderr, one line each. When advertising,
`READY <address>` is printed on stdout (flushed). Runs until SIGTERM/SIGINT, then disconnects
(reason 0x15, power off) and exits 0.

Example (controllers from ciq_controllers.py on 9001/9002):
    python3 ciq_watch.py --hci tcp-client:127.0.0.1:9001 --address F0:F1:F2:F3:F4:F5 \\
        --app 0180E520-5F7E-11E4-9803-0800200C9A66:echo:3 \\
        --app 11111111-2222-3333-4444-555555555555:not-installed
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import traceback
import uuid as uuidlib
from dataclasses import dataclass, field

from bumble import hci
from bumble.core import UUID, AdvertisingData
from bumble.device import Device
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.transport import open_transport

import ciq_link as link
from bumble_local import accept_stop_signals, check_address, disconnect_on_exit, ready_until_stopped, rig_argument_parser, start_exit_watchdog

BEHAVIOURS = (
    "echo", "not-installed", "silent", "slow", "oom", "busy", "not-started", "chatty", "disconnect-mid",
)
STEP_TIMEOUT_S = 5.0  # waiting for an ack of one transfer step
COMMAND_TIMEOUT_S = 3.0  # waiting for the phone's answer to command 3 or 4
USER_TERMINATED = hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR


@dataclass(frozen=True)
class App:
    """One app on the watch: its UUID, how it behaves and its version (u16)."""

    uuid: uuidlib.UUID
    behaviour: str
    version: int = 1

    @property
    def installed(self) -> bool:
        """Whether app info reports a version (every behaviour but not-installed)."""
        return self.behaviour != "not-installed"


def parse_app(text: str) -> App:
    """`UUID:BEHAVIOUR[:VERSION]` -> App; raises argparse.ArgumentTypeError saying what is wrong."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise argparse.ArgumentTypeError(f"--app {text!r}: expected UUID:BEHAVIOUR[:VERSION]")
    try:
        app_uuid = uuidlib.UUID(parts[0])
    except ValueError:
        raise argparse.ArgumentTypeError(f"--app {text!r}: {parts[0]!r} is not a UUID") from None
    if parts[1] not in BEHAVIOURS:
        raise argparse.ArgumentTypeError(
            f"--app {text!r}: unknown behaviour {parts[1]!r}; expected one of {', '.join(BEHAVIOURS)}"
        )
    version = 1
    if len(parts) == 3:
        try:
            version = int(parts[2], 0)
        except ValueError:
            version = -1
        if not 0 <= version < 0xFFFF:
            raise argparse.ArgumentTypeError(
                f"--app {text!r}: version {parts[2]!r} must be an integer 0-65534 (0xFFFF means not installed)"
            )
    return App(app_uuid, parts[1], version)


_START = time.monotonic()


def log(peer: str, text: str) -> None:
    """One line on stderr: seconds since start, the phone's address, what happened."""
    print(f"{time.monotonic() - _START:9.3f} {peer} {text}", file=sys.stderr, flush=True)


@dataclass(eq=False)
class Channel:
    """One link connection id on one BLE connection, bound to one app."""

    conn: int
    app: App
    large_packets: bool
    opened_by: str  # "phone" (command 1) or "watch" (command 3)
    key: bytes | None = None  # from the key packet, for the next transfer
    receiver: link.TransferReceiver | None = None
    not_started_reported: bool = False  # data without `first` answered once
    silenced: bool = False  # silent app after its first `first`
    waiters: dict = field(default_factory=dict)  # AckType -> Future, for the watch's own sends
    send_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ack_lane: asyncio.Queue | None = None  # slow app: acks wait here, in order
    tasks: list = field(default_factory=list)


class PhoneLink:
    """One BLE connection from a phone: its inbox, outbox, connection ids and running tasks."""

    def __init__(self, watch: "Watch", connection):
        self.watch = watch
        self.connection = connection
        self.peer = str(connection.peer_address).replace("/P", "")
        self.channels: dict[int, Channel] = {}
        self.inbox: asyncio.Queue = asyncio.Queue()
        self.outbox: asyncio.Queue = asyncio.Queue()
        self.command_waiters: dict[tuple[int, int], asyncio.Future] = {}
        self.subscribed = False
        self.closed = False
        self.dropping = False  # disconnect-mid has asked for the BLE disconnect
        self.tasks = [
            asyncio.create_task(self._read_inbox()),
            asyncio.create_task(self._write_outbox()),
        ]

    # --- plumbing ---------------------------------------------------------------------------

    def send(self, packet) -> None:
        """Queue one packet for notification (sent in order by the outbox task) and log it."""
        if self.closed:
            return
        data = packet.encode()
        log(self.peer, f"tx {data.hex()} {packet}")
        self.outbox.put_nowait(data)

    async def _write_outbox(self) -> None:
        while True:
            data = await self.outbox.get()
            try:
                await self.watch.device.notify_subscriber(self.connection, self.watch.notify_characteristic, data)
            except Exception as error:  # the link is going away; the disconnection ends this task
                log(self.peer, f"notification of {data.hex()} failed: {error!r}")

    async def _read_inbox(self) -> None:
        while True:
            data = await self.inbox.get()
            try:
                packet = link.decode_packet(data, link.Direction.PHONE_TO_WATCH)
            except link.PacketError as error:
                log(self.peer, f"rx {data.hex()} undecodable, ignored: {error}")
                continue
            log(self.peer, f"rx {data.hex()} {packet}")
            try:
                self.handle(packet)
            except Exception:  # a bug in this rig must show, and not silence the watch
                log(self.peer, "error while handling the packet:\n" + traceback.format_exc())

    def spawn(self, channel: Channel | None, coroutine) -> None:
        """Run `coroutine` as a task owned by this link (and `channel`), cancelled when they end."""
        task = asyncio.create_task(coroutine)
        owner = channel.tasks if channel else self.tasks
        owner.append(task)
        task.add_done_callback(lambda done: done in owner and owner.remove(done))

    def close(self, reason: int) -> None:
        """The BLE link is gone: stop every task of this link."""
        self.closed = True
        log(self.peer, f"disconnected reason=0x{reason:02x}")
        for channel in self.channels.values():
            self._stop_channel(channel)
        self.channels.clear()
        for task in self.tasks:
            task.cancel()
        for waiter in self.command_waiters.values():
            waiter.cancel()

    def _stop_channel(self, channel: Channel) -> None:
        for task in channel.tasks:
            task.cancel()
        for waiter in channel.waiters.values():
            waiter.cancel()

    def on_subscribed(self) -> None:
        """The phone enabled notifications: start every chatty app once."""
        if self.subscribed:
            return
        self.subscribed = True
        log(self.peer, "subscribed to notifications")
        for app in self.watch.apps.values():
            if app.behaviour == "chatty":
                self.spawn(None, self.run_chatty(app))

    # --- connection ids ---------------------------------------------------------------------

    def allocate(self, app: App, large: bool, opened_by: str) -> Channel | None:
        """A new channel on the lowest free connection id, or None when all 15 are taken."""
        for conn in link.CONNECTION_IDS:
            if conn not in self.channels:
                channel = Channel(conn, app, large, opened_by)
                if app.behaviour == "slow":
                    channel.ack_lane = asyncio.Queue()
                    channel.tasks.append(asyncio.create_task(self._run_ack_lane(channel)))
                self.channels[conn] = channel
                return channel
        return None

    def release(self, conn: int) -> None:
        """Forget connection id `conn` and stop its tasks."""
        channel = self.channels.pop(conn, None)
        if channel is not None:
            self._stop_channel(channel)

    def channel_for(self, app_uuid: uuidlib.UUID) -> Channel | None:
        return next((c for c in self.channels.values() if c.app.uuid == app_uuid), None)

    # --- acks -------------------------------------------------------------------------------

    def send_ack(self, channel: Channel, ack: link.Ack) -> asyncio.Future:
        """Send an ack now, or (slow app) after --slow-ms, keeping the order of acks.

        The future is done once the ack is queued for notification.
        """
        sent = asyncio.get_running_loop().create_future()
        if channel.ack_lane is not None:
            channel.ack_lane.put_nowait((time.monotonic() + self.watch.slow_s, ack, sent))
        else:
            self.send(ack)
            sent.set_result(None)
        return sent

    async def _run_ack_lane(self, channel: Channel) -> None:
        while True:
            due, ack, sent = await channel.ack_lane.get()
            await asyncio.sleep(max(0.0, due - time.monotonic()))
            self.send(ack)
            sent.set_result(None)

    async def expect_ack(self, channel: Channel, packet, kind: link.AckType) -> link.Ack | None:
        """Send `packet` and wait up to 5 s for the phone's ack of type `kind` (None on timeout)."""
        waiter = asyncio.get_running_loop().create_future()
        channel.waiters[kind] = waiter
        self.send(packet)
        try:
            return await asyncio.wait_for(waiter, STEP_TIMEOUT_S)
        except asyncio.TimeoutError:
            log(self.peer, f"conn={channel.conn} no ack of type {kind.name} within {STEP_TIMEOUT_S:.0f} s")
            return None
        finally:
            if channel.waiters.get(kind) is waiter:
                del channel.waiters[kind]

    async def expect_command_answer(self, packet, command: link.Command, conn: int):
        """Send a watch command (3 or 4) and wait up to 3 s for the phone's answer."""
        waiter = asyncio.get_running_loop().create_future()
        self.command_waiters[(command, conn)] = waiter
        self.send(packet)
        try:
            return await asyncio.wait_for(waiter, COMMAND_TIMEOUT_S)
        except asyncio.TimeoutError:
            log(self.peer, f"conn={conn} no answer to command {command.name} within {COMMAND_TIMEOUT_S:.0f} s")
            return None
        finally:
            self.command_waiters.pop((command, conn), None)

    # --- the watch's own transfers ----------------------------------------------------------

    def payload_size(self, channel: Channel) -> int:
        """19 bytes, or 191 when large packets are on and the ATT MTU carries 1 + 191."""
        if channel.large_packets and self.connection.att_mtu - 3 >= 1 + link.LARGE_PAYLOAD:
            return link.LARGE_PAYLOAD
        return link.SMALL_PAYLOAD

    async def send_transfer(self, channel: Channel, payload: bytes) -> bool:
        """Send `payload` as one plain transfer (flags 0x00); True when the phone acked `last` 0."""
        async with channel.send_lock:
            conn = channel.conn
            ack = await self.expect_ack(channel, link.First(conn, 0x00, len(payload)), link.AckType.FIRST)
            if ack is None or ack.status != link.AckStatus.SUCCESS:
                log(self.peer, f"conn={conn} transfer abandoned: first not accepted ({ack})")
                return False
            packets = link.data_packets(conn, payload, self.payload_size(channel))
            for packet in packets:
                if packet.seq == link.WINDOW - 1:
                    ack = await self.expect_ack(channel, packet, link.AckType.DATA)
                    if ack is None or ack.status != link.AckStatus.SUCCESS:
                        log(self.peer, f"conn={conn} transfer abandoned: window not accepted ({ack})")
                        return False
                else:
                    self.send(packet)
            last = link.last_for(conn, payload, len(packets))
            ack = await self.expect_ack(channel, last, link.AckType.LAST)
            if ack is None or ack.status != link.AckStatus.SUCCESS:
                log(self.peer, f"conn={conn} transfer failed at last ({ack})")
                return False
            log(self.peer, f"conn={conn} sent {len(payload)} bytes")
            return True

    async def run_chatty(self, app: App) -> None:
        """Open a connection (command 3), send --chatty-count counters, close it (command 4)."""
        await asyncio.sleep(self.watch.chatty_delay_s)
        channel = self.allocate(app, self.watch.large_packets, "watch")
        if channel is None:
            log(self.peer, f"chatty {app.uuid}: no free connection id")
            return
        conn = channel.conn
        answer = await self.expect_command_answer(link.WatchOpen(app.uuid, conn), link.Command.WATCH_OPEN, conn)
        if answer is None or answer.status != 0:
            log(self.peer, f"chatty {app.uuid}: phone did not accept conn={conn} ({answer})")
            self.release(conn)
            return
        for counter in range(1, self.watch.chatty_count + 1):
            if counter > 1:
                await asyncio.sleep(self.watch.chatty_interval_s)
            if conn not in self.channels:
                log(self.peer, f"chatty {app.uuid}: conn={conn} was closed by the phone")
                return
            message = {"counter": counter}
            log(self.peer, f"conn={conn} chatty message {message}")
            await self.send_transfer(channel, link.encode_value(message))
        await self.expect_command_answer(link.WatchClose(conn), link.Command.WATCH_CLOSE, conn)
        self.release(conn)

    # --- packets from the phone -------------------------------------------------------------

    def handle(self, packet) -> None:
        """React to one decoded packet from the phone."""
        if isinstance(packet, link.ConnectRequest):
            self.on_connect(packet)
        elif isinstance(packet, link.DisconnectRequest):
            status = link.DisconnectStatus.INVALID_CONNECTION_ID
            if packet.conn in self.channels:
                self.release(packet.conn)
                status = link.DisconnectStatus.SUCCESS
            self.send(link.DisconnectResponse(status, packet.conn))
        elif isinstance(packet, link.AppInfoRequest):
            app = self.watch.apps.get(packet.app)
            installed = app is not None and app.installed
            self.send(link.AppInfoResponse(packet.app, app.version if installed else link.APP_NOT_INSTALLED))
        elif isinstance(packet, link.OpenAppRequest):
            app = self.watch.apps.get(packet.app)
            installed = app is not None and app.installed
            code = self.watch.open_result if installed else link.OpenAppResult.APP_NOT_INSTALLED
            self.send(link.OpenAppResponse(packet.app, code))
        elif isinstance(packet, (link.WatchOpenResponse, link.WatchCloseResponse)):
            command = link.Command.WATCH_OPEN if isinstance(packet, link.WatchOpenResponse) else link.Command.WATCH_CLOSE
            waiter = self.command_waiters.get((command, packet.conn))
            if waiter is not None and not waiter.done():
                waiter.set_result(packet)
            else:
                log(self.peer, f"unexpected {packet}, ignored")
        elif isinstance(packet, link.UnknownCommand):
            log(self.peer, "unknown command, ignored")
        else:
            self.on_transfer_packet(packet)

    def on_connect(self, packet: link.ConnectRequest) -> None:
        app = self.watch.apps.get(packet.app)
        if app is None or not app.installed:
            self.send(link.ConnectResponse(link.ConnectStatus.APP_NOT_FOUND, packet.app, 0, 0))
            return
        if app.behaviour == "busy":
            self.send(link.ConnectResponse(link.ConnectStatus.NO_FREE_CONNECTION_IDS, packet.app, 0, 0))
            return
        existing = self.channel_for(app.uuid)
        if existing is not None:
            self.send(link.ConnectResponse(link.ConnectStatus.CONNECTION_ALREADY_OPEN, packet.app, existing.conn, 0))
            return
        channel = self.allocate(app, self.watch.large_packets, "phone")
        if channel is None:
            self.send(link.ConnectResponse(link.ConnectStatus.NO_FREE_CONNECTION_IDS, packet.app, 0, 0))
            return
        flags = link.CONNECT_FLAG_LARGE_PACKETS if channel.large_packets else 0
        self.send(link.ConnectResponse(link.ConnectStatus.SUCCESS, packet.app, channel.conn, flags))

    def on_transfer_packet(self, packet) -> None:
        channel = self.channels.get(packet.conn)
        invalid = link.AckStatus.INVALID_CONNECTION_ID
        if channel is None:
            if isinstance(packet, link.EncryptionKey):
                self.send(link.Ack(packet.conn, link.AckType.ENCRYPTION_KEY, invalid, 0))
            elif isinstance(packet, link.First):
                self.send(link.Ack(packet.conn, link.AckType.FIRST, invalid, 0))
            elif isinstance(packet, link.Last):
                self.send(link.Ack(packet.conn, link.AckType.LAST, invalid, packet.seq))
            elif isinstance(packet, link.AckRequest):
                self.send(link.Ack(packet.conn, link.AckType.ACK_REQUEST, invalid, packet.seq))
            else:
                log(self.peer, f"conn={packet.conn} is not open; packet ignored")
            return

        if isinstance(packet, link.Ack):
            waiter = channel.waiters.get(packet.kind)  # keyed by AckType, an IntEnum
            if waiter is not None and not waiter.done():
                waiter.set_result(packet)
            else:
                log(self.peer, f"conn={channel.conn} unexpected ack, ignored")
            return
        if channel.silenced:
            log(self.peer, f"conn={channel.conn} silent app: not acknowledged")
            return
        behaviour = channel.app.behaviour

        if isinstance(packet, link.EncryptionKey):
            channel.key = packet.key
            self.send_ack(channel, link.Ack(channel.conn, link.AckType.ENCRYPTION_KEY, link.AckStatus.SUCCESS, 0))
        elif isinstance(packet, link.First):
            self.on_first(channel, packet, behaviour)
        elif isinstance(packet, link.Data):
            self.on_data(channel, packet, behaviour)
        elif isinstance(packet, link.Last):
            self.on_last(channel, packet, behaviour)
        elif isinstance(packet, link.AckRequest):
            self.send_ack(channel, link.Ack(channel.conn, link.AckType.ACK_REQUEST, link.AckStatus.SUCCESS, packet.seq))
        else:
            log(self.peer, f"conn={channel.conn} control packet not handled by this watch, ignored")

    def on_first(self, channel: Channel, packet: link.First, behaviour: str) -> None:
        def answer(status):
            self.send_ack(channel, link.Ack(channel.conn, link.AckType.FIRST, status, 0))

        if behaviour == "oom":
            return answer(link.AckStatus.OUT_OF_MEMORY)
        if behaviour == "not-started":
            return answer(link.AckStatus.TRANSFER_NOT_STARTED)
        if packet.encrypted and channel.key is None:
            return answer(link.AckStatus.NO_ENCRYPTION_KEY)
        if packet.length > self.watch.max_transfer:
            return answer(link.AckStatus.OUT_OF_MEMORY)
        if channel.receiver is not None:
            log(self.peer, f"conn={channel.conn} new first replaces an unfinished transfer")
        channel.receiver = link.TransferReceiver(packet, channel.key if packet.encrypted else None)
        channel.key = None
        channel.not_started_reported = False
        if behaviour == "silent":
            channel.silenced = True
        answer(link.AckStatus.SUCCESS)

    def on_data(self, channel: Channel, packet: link.Data, behaviour: str) -> None:
        receiver = channel.receiver
        if receiver is None:
            if not channel.not_started_reported:
                channel.not_started_reported = True
                self.send_ack(channel, link.Ack(channel.conn, link.AckType.DATA, link.AckStatus.TRANSFER_NOT_STARTED, packet.seq))
            return
        ack = receiver.data(packet)
        if behaviour == "disconnect-mid" and receiver.count >= self.watch.disconnect_after:
            if not self.dropping:
                self.dropping = True
                log(self.peer, f"conn={channel.conn} disconnect-mid: dropping the BLE link after {receiver.count} data packets")
                self.watch.background(self.connection.disconnect(USER_TERMINATED))
            return
        if ack is not None:
            self.send_ack(channel, ack)

    def on_last(self, channel: Channel, packet: link.Last, behaviour: str) -> None:
        receiver = channel.receiver
        if receiver is None:
            self.send_ack(channel, link.Ack(channel.conn, link.AckType.LAST, link.AckStatus.TRANSFER_NOT_STARTED, packet.seq))
            return
        channel.receiver = None
        ack = receiver.last(packet)
        ack_sent = self.send_ack(channel, ack)
        if ack.status != link.AckStatus.SUCCESS:
            return
        try:
            value, consumed = link.decode_value_prefix(receiver.plaintext)
        except link.MonkeyCError as error:
            log(self.peer, f"conn={channel.conn} message of {len(receiver.plaintext)} bytes is not a Monkey C value ({error}); not delivered")
            return
        shown = repr(value)
        log(self.peer, f"conn={channel.conn} message {shown[:200]}{'…' if len(shown) > 200 else ''}")
        if behaviour in ("echo", "slow"):
            self.spawn(channel, self.echo(channel, ack_sent, receiver.plaintext[:consumed]))

    async def echo(self, channel: Channel, ack_sent: asyncio.Future, message: bytes) -> None:
        """Send `message` back once the ack of its `last` has gone out."""
        await ack_sent
        await self.send_transfer(channel, message)


class Watch:
    """The Bumble device: GATT service, advertising, and one PhoneLink per BLE connection."""

    def __init__(self, args, device: Device):
        self.device = device
        self.apps = {app.uuid: app for app in args.app}
        self.large_packets = not args.no_large_packets
        self.open_result = args.open_result
        self.slow_s = args.slow_ms / 1000.0
        self.chatty_interval_s = args.chatty_interval_ms / 1000.0
        self.chatty_count = args.chatty_count
        self.chatty_delay_s = args.chatty_delay_ms / 1000.0
        self.disconnect_after = args.disconnect_after
        self.max_transfer = args.max_transfer
        self.links: dict[int, PhoneLink] = {}
        self.background_tasks: set[asyncio.Task] = set()

        if args.legacy:
            service_uuid, write_uuid, notify_uuid = (
                link.LEGACY_SERVICE_UUID, link.LEGACY_WRITE_UUID, link.LEGACY_NOTIFY_UUID,
            )
        else:
            service_uuid, write_uuid, notify_uuid = (
                link.CURRENT_SERVICE_UUID, link.CURRENT_WRITE_UUID, link.CURRENT_NOTIFY_UUID,
            )
        self.service_uuid = UUID(service_uuid)
        write_characteristic = Characteristic(
            UUID(write_uuid),
            Characteristic.Properties.WRITE_WITHOUT_RESPONSE | Characteristic.Properties.WRITE,
            Characteristic.WRITEABLE,
            CharacteristicValue(write=self.on_write),
        )
        self.notify_characteristic = Characteristic(
            UUID(notify_uuid),
            Characteristic.Properties.NOTIFY,
            Characteristic.READABLE,
            b"",
        )
        self.notify_characteristic.on("subscription", self.on_subscription)
        device.add_service(Service(self.service_uuid, [write_characteristic, self.notify_characteristic]))
        device.on("connection", self.on_connection)

    def background(self, coroutine) -> None:
        """Run `coroutine` on its own, outliving the link that asked for it (e.g. a disconnect)."""
        task = asyncio.create_task(coroutine)
        self.background_tasks.add(task)
        task.add_done_callback(self.background_tasks.discard)

    def on_connection(self, connection) -> None:
        phone = PhoneLink(self, connection)
        self.links[connection.handle] = phone
        log(phone.peer, f"connected handle=0x{connection.handle:04x}")

        def on_mtu_update():
            log(phone.peer, f"ATT MTU {connection.att_mtu}")

        def on_disconnection(reason):
            self.links.pop(connection.handle, None)
            phone.close(reason)

        connection.on("connection_att_mtu_update", on_mtu_update)
        connection.on("disconnection", on_disconnection)

    def on_write(self, connection, value) -> None:
        phone = self.links.get(connection.handle)
        if phone is not None:
            phone.inbox.put_nowait(bytes(value))

    def on_subscription(self, bearer, notify_enabled, _indicate_enabled) -> None:
        phone = self.links.get(getattr(bearer, "handle", None))
        if phone is not None and notify_enabled:
            phone.on_subscribed()

    async def start_advertising(self, name: str) -> None:
        advertising = AdvertisingData(
            [
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, self.service_uuid.to_bytes(force_128=True)),
            ]
        )
        scan_response = AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, name.encode("utf-8")[:29])])
        await self.device.start_advertising(
            auto_restart=True,
            advertising_data=bytes(advertising),
            scan_response_data=bytes(scan_response),
            advertising_interval_min=20.0,
            advertising_interval_max=20.0,
        )

    async def power_off(self) -> None:
        """Disconnect every phone (reason 0x15, power off), each bounded in time."""
        for phone in list(self.links.values()):
            await disconnect_on_exit(phone.connection, lambda text, peer=phone.peer: log(peer, text))


async def run(args) -> int:
    async with await open_transport(args.hci) as hci_transport:
        device = Device.with_hci(args.name, hci.Address(args.address), hci_transport.source, hci_transport.sink)
        watch = Watch(args, device)
        await device.power_on()
        await watch.start_advertising(args.name)
        apps = ", ".join(f"{a.uuid}={a.behaviour}:{a.version}" for a in watch.apps.values())
        log("-", f"advertising as {args.address} ({'legacy' if args.legacy else 'current'} service); apps: {apps}")
        await ready_until_stopped(f"READY {args.address}")
        log("-", "stopping")
        start_exit_watchdog(5.0)  # the process ends 5 s after the signal whatever the shutdown is doing
        await watch.power_off()
    return 0


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__, epilog_from=2)
    parser.add_argument("--hci", default="tcp-client:127.0.0.1:9001", help="Bumble transport of the watch's controller")
    parser.add_argument("--address", default="F0:F1:F2:F3:F4:F5", help="static random address to advertise (top two bits set)")
    parser.add_argument("--name", default="Tether CIQ watch", help="local name in the scan response")
    parser.add_argument("--legacy", action="store_true", help="serve the legacy Connect IQ UUIDs instead of the current ones")
    parser.add_argument("--app", action="append", type=parse_app, default=[], metavar="UUID:BEHAVIOUR[:VERSION]", help="an app on the watch (repeatable)")
    parser.add_argument("--no-large-packets", action="store_true", help="clear the large-packet flag in connect answers")
    parser.add_argument("--open-result", type=int, default=0, choices=range(0, 4), help="open-app code for installed apps (default 0, prompt shown)")
    parser.add_argument("--slow-ms", type=int, default=1000, help="ack delay of `slow` apps")
    parser.add_argument("--chatty-interval-ms", type=int, default=1000, help="pause between two messages of a `chatty` app")
    parser.add_argument("--chatty-count", type=int, default=3, help="messages a `chatty` app sends before closing")
    parser.add_argument("--chatty-delay-ms", type=int, default=500, help="wait after the phone subscribes before a `chatty` app opens")
    parser.add_argument("--disconnect-after", type=int, default=5, help="data packets a `disconnect-mid` app takes before dropping the link")
    parser.add_argument("--max-transfer", type=int, default=1 << 20, help="largest transfer accepted; a larger `first` gets status 5")
    args = parser.parse_args()
    if not args.app:
        args.app = [App(uuidlib.UUID(link.LOOPBACK_APP_UUID), "echo", 1)]
    check_address(parser, args.address)
    try:
        return asyncio.run(run(args))
    except OSError as error:
        print(f"ciq_watch: cannot open HCI transport {args.hci}: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
