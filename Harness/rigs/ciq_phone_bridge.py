#!/usr/bin/env python3
"""The phone's BLE host on Bumble, bridged to one local client as newline-delimited JSON.

Tether's Swift live host runs the MessagingCore state machine; this bridge does the Bluetooth for
it. It opens the Bumble transport `--hci`, powers the controller on, listens on `--listen` —
`unix:PATH`, a socket in a folder only this user can enter (mode 0700; what `tether live` gives,
so no other process can take the host's place), or `HOST:PORT` on TCP for running it by hand —
prints `READY unix:PATH` or `READY <port>` on stdout (flushed; with port 0 the port picked),
accepts ONE client (on a Unix socket, only the process that started the bridge) and then speaks one JSON object per line each
way (docs/ble-rigs.md has the whole contract):

bridge -> host
  {"ev":"bluetooth","ready":true}                         the controller is up (sent on accept)
  {"ev":"connected","peer":P,"mtu":247,"max_write":244,"service":"current"|"legacy"|"session"}
                                                           LE link, ATT MTU exchange, the
                                                           profile's service found, notifications
                                                           enabled
  {"ev":"not_found","peer":P,"reason":"..."}              connect or discovery failed
  {"ev":"notify","peer":P,"hex":"..."}                    a notification, in order
  {"ev":"disconnected","peer":P,"reason":19}              the link dropped (HCI reason code)
  {"ev":"error","message":"...","op":{...}}               a bad command (the bridge stays up)
host -> bridge
  {"op":"connect","peer":P}    {"op":"write","peer":P,"hex":"..."}
  {"op":"disconnect","peer":P} {"op":"quit"}              EOF on the socket = quit

P is a Bluetooth address as written ("F0:F1:F2:F3:F4:F5", a random/static address; add "/P" for a
public one); events carry it back exactly as the host wrote it. Writes are ATT Write Commands to
the profile's write characteristic, sent as they arrive, in order. Several peers may be
connected at once; connection attempts run one at a time (one LE initiator per controller).

`--profile` picks the GATT service looked for: `connectiq` (the default) the current Connect IQ
service, else the legacy one (docs/connectiq-link.md; ATT MTU at least 195); `session` Tether's session
link service 54450001-5345-5353-494F-4E4C494E4B01 (session-link.md; any ATT MTU), reported as
`"service":"session"`. Nothing else differs.

Example:
    python3 ciq_phone_bridge.py --hci tcp-client:127.0.0.1:9002 --listen 127.0.0.1:0
    python3 ciq_phone_bridge.py --hci tcp-client:127.0.0.1:9002 --listen 127.0.0.1:0 --profile session
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass

from bumble import att, hci
from bumble.core import UUID, PhysicalTransport
from bumble.device import Device, Peer
from bumble.gatt import GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR
from bumble.transport import open_transport

import ciq_link as link
import session_gatt
from bumble_local import (accept_stop_signals, check_address, close_client, error_event, parse_listen, read_commands, rig_argument_parser,
                          serve_until_done, set_no_delay, skip_debug_formatting,
                          write_command_prefix)

SERVICES = (
    ("current", link.CURRENT_SERVICE_UUID, link.CURRENT_WRITE_UUID, link.CURRENT_NOTIFY_UUID),
    ("legacy", link.LEGACY_SERVICE_UUID, link.LEGACY_WRITE_UUID, link.LEGACY_NOTIFY_UUID),
)


@dataclass(frozen=True)
class Profile:
    """What `connect` looks for: services tried in order, as (kind, service, write, notify) UUIDs;
    the smallest ATT MTU the link accepts; how a service is named in `not_found` reasons."""

    services: tuple
    min_mtu: int
    service_name: str  # formatted with {kind}
    none_found: str


PROFILES = {
    "connectiq": Profile(
        SERVICES,
        link.MIN_MTU,
        "{kind} Connect IQ service",
        "no Connect IQ service (current or legacy) on the peer",
    ),
    "session": Profile(
        (("session", session_gatt.SERVICE_UUID, session_gatt.WRITE_UUID, session_gatt.NOTIFY_UUID),),
        session_gatt.MIN_MTU,
        "session service",
        "no session link service on the peer",
    ),
}

POWER_ON_TIMEOUT_S = 10.0
QUIT_DISCONNECT_TIMEOUT_S = 2.0
MAX_LINE = 1 << 20
#: ACL packets a peer's writes may have queued in the host, in flight included, before the bridge
#: stops reading commands until the controller completes some (gatt_throughput.py's --backlog): the
#: bridge then takes in the controller's completions while the host still has packets to send,
#: instead of parsing every buffered command first and leaving the controller idle meanwhile.
WRITE_BACKLOG = 128
FLOW_WAIT_S = 0.5

_START = time.monotonic()


def log(text: str) -> None:
    """One line on stderr, with the seconds since start."""
    print(f"{time.monotonic() - _START:9.3f} bridge {text}", file=sys.stderr, flush=True)


class SetupFailed(Exception):
    """Connecting or discovering a peer failed; the message is the `not_found` reason."""


class PeerLink:
    """One watch: its Bumble connection and the Connect IQ characteristics once set up."""

    def __init__(self, name: str, address: hci.Address):
        self.name = name  # as the host wrote it; every event carries it back
        self.address = address
        self.connection = None
        self.write_characteristic = None
        self.write_command = b""  # ATT Write Command opcode and the write characteristic's handle
        self.packets = None  # the host's ACL packet queue of the connection (Bumble DataPacketQueue)
        self.notify_prefix = ""  # the `notify` event line up to its hex digits
        self.mtu = 0
        self.connected = False  # `connected` was sent
        self.drop_reason: int | None = None  # HCI reason when the link dropped during setup
        self.task: asyncio.Task | None = None  # the connect procedure while it runs


class Bridge:
    """The JSON-lines client on one side, the Bumble device on the other."""

    def __init__(self, device: Device, args):
        self.device = device
        self.args = args
        self.profile = PROFILES[args.profile]
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.peers: dict[str, PeerLink] = {}  # by normalized address
        self.keys: dict[str, str] = {}  # peer as a command writes it -> normalized address
        self.connect_lock = asyncio.Lock()  # one LE connection attempt at a time
        self.quitting = asyncio.Event()

    # --- events to the host -----------------------------------------------------------------

    def emit(self, event: dict) -> None:
        """Send one event line to the host (dropped once the client is gone)."""
        if self.args.verbose or event["ev"] != "notify":
            log(f"-> {json.dumps(event)}")
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write((json.dumps(event, separators=(",", ":")) + "\n").encode())

    def emit_notify(self, peer: PeerLink, value) -> None:
        """The `notify` event, the one sent per frame: its line put together without json.dumps."""
        if self.args.verbose:
            log(f"-> notify {peer.name} {bytes(value).hex()}")
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write((peer.notify_prefix + bytes(value).hex() + '"}\n').encode())

    def error(self, message: str, op=None) -> None:
        """An `error` event for a bad command."""
        self.emit(error_event(message, op))

    # --- commands from the host -------------------------------------------------------------

    async def serve_client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Read commands until quit or EOF."""
        self.reader, self.writer = reader, writer
        set_no_delay(writer)
        self.emit({"ev": "bluetooth", "ready": True})
        await read_commands(reader, self.quitting, MAX_LINE, self.handle, self.emit, "connect, write, disconnect or quit", log=log)
        await self.quit()

    async def handle(self, op: dict) -> None:
        """One command."""
        kind = op["op"]
        if kind == "quit":
            self.quitting.set()
            return
        if kind not in ("connect", "write", "disconnect"):
            self.error(f"unknown op {kind!r}; expected connect, write, disconnect or quit", op)
            return
        name = op.get("peer")
        if not isinstance(name, str):
            self.error(f'"{kind}" needs "peer": a Bluetooth address such as "F0:F1:F2:F3:F4:F5"', op)
            return
        key = self.keys.get(name)
        if key is None:  # parsed once per spelling: a write per frame names the same peer
            try:
                address = hci.Address(name.strip())
            except Exception as error:  # Bumble raises ValueError or InvalidArgumentError
                self.error(f"peer {name!r} is not a Bluetooth address ({error})", op)
                return
            key = str(address)
            self.keys[name] = key
        else:
            address = None
        peer = self.peers.get(key)
        if kind == "connect":
            if peer is not None:
                state = "connected" if peer.connected else "being connected"
                self.error(f"peer {name} is already {state}; disconnect it first", op)
                return
            peer = PeerLink(name, address if address is not None else hci.Address(name.strip()))
            self.peers[key] = peer
            peer.task = asyncio.create_task(self.connect(key, peer))
        elif kind == "write":
            if peer is None or not peer.connected:
                self.error(f"peer {name} is not connected; connect it and wait for \"connected\"", op)
                return
            try:
                data = bytes.fromhex(op.get("hex", None))
            except (TypeError, ValueError):
                self.error('"write" needs "hex": the bytes to write as hex digits', op)
                return
            if not data or len(data) > peer.mtu - 3:
                self.error(f"write of {len(data)} bytes; expected 1 to {peer.mtu - 3} (ATT MTU {peer.mtu} - 3)", op)
                return
            if self.args.verbose:
                log(f"<- write {name} {data.hex()}")
            try:
                # The Write Command as a PDU (bumble_local.write_command_prefix).
                peer.connection.send_l2cap_pdu(att.ATT_CID, peer.write_command + data)
            except Exception as error:  # the link went away under the write
                self.error(f"write to {name} failed: {error!r}", op)
                return
            await self.wait_for_flow(peer)
        else:  # disconnect
            if peer is None:
                self.error(f"peer {name} is not connected", op)
            elif not peer.connected:
                peer.task.cancel()  # the connect procedure reports not_found
            else:
                await self.disconnect(peer)

    async def wait_for_flow(self, peer: PeerLink) -> None:
        """While more than WRITE_BACKLOG of the peer's packets wait in the host, wait for the
        controller to complete some (Bumble's `flow`), or for the link to drop."""
        queue = peer.packets
        while queue is not None and queue.pending > WRITE_BACKLOG and peer.connected:
            flowed = asyncio.get_running_loop().create_future()
            queue.once("flow", lambda: flowed.done() or flowed.set_result(None))
            try:
                await asyncio.wait_for(flowed, FLOW_WAIT_S)
            except asyncio.TimeoutError:
                pass  # checked again: a dropped link ends the wait through `connected`

    # --- Bluetooth --------------------------------------------------------------------------

    async def connect(self, key: str, peer: PeerLink) -> None:
        """LE connect, MTU, discovery, subscription; then `connected`, else `not_found`."""
        timeout = self.args.connect_timeout
        try:
            async with self.connect_lock:
                log(f"connecting to {peer.name}")
                try:
                    # Bumble cancels the attempt itself after `timeout`; the outer bound also
                    # covers controllers that never complete a cancelled attempt.
                    connection = await asyncio.wait_for(
                        self.device.connect(peer.address, transport=PhysicalTransport.LE, timeout=timeout),
                        timeout + 1.0,
                    )
                except (asyncio.TimeoutError, TimeoutError):
                    raise SetupFailed(f"no connection within {timeout:g} s (is the watch advertising?)") from None
                except Exception as error:
                    raise SetupFailed(f"connection failed: {error}") from None
            peer.connection = connection
            connection.on("disconnection", lambda reason: self.on_disconnection(key, peer, reason))
            try:
                service = await asyncio.wait_for(self.set_up(peer), timeout)
            except asyncio.TimeoutError:
                raise SetupFailed(f"GATT setup did not finish within {timeout:g} s") from None
        except SetupFailed as failure:
            await self.fail(key, peer, str(failure))
            return
        except asyncio.CancelledError:
            if peer.drop_reason is not None:
                reason = f"the link dropped during setup (HCI reason {peer.drop_reason})"
            else:
                reason = "cancelled by a disconnect op"
            await self.fail(key, peer, reason)
            return
        except Exception as error:  # a GATT error from the peer, a dropped link
            await self.fail(key, peer, f"{type(error).__name__}: {error}")
            return
        finally:
            peer.task = None
        peer.packets = self.device.host.get_data_packet_queue(peer.connection.handle)
        peer.connected = True
        self.emit(
            {
                "ev": "connected",
                "peer": peer.name,
                "mtu": peer.mtu,
                "max_write": peer.mtu - 3,
                "service": service,
            }
        )

    async def set_up(self, peer: PeerLink) -> str:
        """MTU exchange, service and characteristic discovery, CCCD write; the service's kind."""
        gatt = Peer(peer.connection)
        peer.mtu = await gatt.request_mtu(self.args.mtu)
        if peer.mtu < self.profile.min_mtu:
            raise SetupFailed(f"ATT MTU is {peer.mtu}; the link needs at least {self.profile.min_mtu}")
        for kind, service_uuid, write_uuid, notify_uuid in self.profile.services:
            services = await gatt.discover_service(UUID(service_uuid))
            if not services:
                continue
            characteristics = await services[0].discover_characteristics()
            by_uuid = {c.uuid: c for c in characteristics}
            write = by_uuid.get(UUID(write_uuid))
            notify = by_uuid.get(UUID(notify_uuid))
            if write is None or notify is None:
                service_name = self.profile.service_name.format(kind=kind)
                raise SetupFailed(f"the {service_name} lacks its write or notify characteristic")
            await notify.discover_descriptors()
            if notify.get_descriptor(GATT_CLIENT_CHARACTERISTIC_CONFIGURATION_DESCRIPTOR) is None:
                raise SetupFailed(f"the {kind} notify characteristic has no CCCD")
            peer.notify_prefix = '{"ev":"notify","peer":' + json.dumps(peer.name) + ',"hex":"'
            await notify.subscribe(lambda value: self.emit_notify(peer, value))
            peer.write_characteristic = write
            peer.write_command = write_command_prefix(write.handle)
            return kind
        raise SetupFailed(self.profile.none_found)

    async def fail(self, key: str, peer: PeerLink, reason: str) -> None:
        """Report `not_found`, drop the half-made link, forget the peer."""
        if self.peers.get(key) is peer:
            del self.peers[key]
        connection, peer.connection = peer.connection, None
        self.emit({"ev": "not_found", "peer": peer.name, "reason": reason})
        if connection is not None and connection.handle in self.device.connections:
            try:
                await asyncio.wait_for(connection.disconnect(), QUIT_DISCONNECT_TIMEOUT_S)
            except Exception as error:  # best effort: the peer is reported not found anyway
                log(f"disconnecting {peer.name} after a failed setup: {error!r}")

    def on_disconnection(self, key: str, peer: PeerLink, reason: int) -> None:
        if peer.connection is None:
            return  # set-up failed and was reported as not_found
        peer.connection = None
        if not peer.connected:
            peer.drop_reason = int(reason)
            if peer.task is not None:
                peer.task.cancel()  # fail() reports not_found
            return
        peer.connected = False
        if self.peers.get(key) is peer:
            del self.peers[key]
        self.emit({"ev": "disconnected", "peer": peer.name, "reason": int(reason)})

    async def disconnect(self, peer: PeerLink) -> None:
        """HCI disconnect (reason 0x13); the `disconnected` event follows from the controller."""
        connection = peer.connection
        if connection is None:
            return
        try:
            await asyncio.wait_for(connection.disconnect(), QUIT_DISCONNECT_TIMEOUT_S)
        except Exception as error:
            self.error(f"disconnecting {peer.name} failed: {error!r}")

    def stop(self) -> None:
        """SIGTERM/SIGINT: end as on a quit op (the client's read loop sees end of input)."""
        self.quitting.set()
        if self.reader is not None:
            self.reader.feed_eof()

    async def quit(self) -> None:
        """Disconnect every peer, close the client, end."""
        self.quitting.set()
        for peer in list(self.peers.values()):
            if peer.task is not None:
                peer.task.cancel()
            elif peer.connected:
                await self.disconnect(peer)
        await asyncio.sleep(0)  # let pending disconnection events reach the client
        await close_client(self.writer)


async def run(args) -> int:
    async with await open_transport(args.hci) as hci_transport:
        device = Device.with_hci("Tether phone", hci.Address(args.address), hci_transport.source, hci_transport.sink)
        skip_debug_formatting(device.host)
        try:
            await asyncio.wait_for(device.power_on(), POWER_ON_TIMEOUT_S)
        except asyncio.TimeoutError:
            print(f"ciq_phone_bridge: the controller behind {args.hci} did not answer within {POWER_ON_TIMEOUT_S:g} s", file=sys.stderr)
            return 1
        log(f"controller up on {args.hci}, address {args.address}")

        bridge = Bridge(device, args)
        await serve_until_done(bridge, args.listen, MAX_LINE, log)
    return 0


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__)
    parser.add_argument("--hci", required=True, help="Bumble transport of the phone's controller, e.g. tcp-client:127.0.0.1:9002")
    parser.add_argument("--listen", required=True, type=parse_listen, help="unix:PATH (in a folder of mode 0700; what tether live gives) or HOST:PORT (port 0: pick one) for the one JSON-lines client")
    parser.add_argument("--address", default="F1:F1:F1:F1:F1:F1", help="the phone's static random address")
    parser.add_argument("--connect-timeout", type=float, default=5.0, help="seconds for the LE connection, and again for GATT setup")
    parser.add_argument(
        "--mtu", type=int, default=247,
        help=f"ATT MTU to ask for (at least {link.MIN_MTU} with connectiq, {session_gatt.MIN_MTU} with session)",
    )
    parser.add_argument(
        "--profile", choices=sorted(PROFILES), default="connectiq",
        help="the GATT service to look for: connectiq (current, else legacy; the default) or session (Tether's session link)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every write and notification on stderr")
    args = parser.parse_args()
    if args.profile == "connectiq" and args.mtu < link.MIN_MTU:
        parser.error(f"--mtu {args.mtu}: the Connect IQ link needs at least {link.MIN_MTU}")
    if args.profile == "session" and not session_gatt.MIN_MTU <= args.mtu <= 517:
        parser.error(f"--mtu {args.mtu}: an ATT MTU is {session_gatt.MIN_MTU} to 517")
    check_address(parser, args.address, static_random=False)
    try:
        return asyncio.run(run(args))
    except OSError as error:
        print(f"ciq_phone_bridge: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
