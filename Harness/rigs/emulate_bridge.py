#!/usr/bin/env python3
"""The BLE side of `tether emulate`: a Bumble GATT server that serves a recorded peripheral's
database at its recorded handles and asks its one client (Tether) what to answer to each request.

It opens the Bumble transport `--hci`, powers the controller on, listens on `--listen` (`unix:PATH`
in a folder of mode 0700, as `tether emulate` gives it, or `HOST:PORT` by hand), prints
`READY unix:PATH` or `READY <port>`, accepts ONE client and speaks one JSON object per line each
way (docs/emulate.md has the contract):

host -> bridge
  {"op":"serve","name":N,"services":[UUID...],"mtu":M|null,"request_mtu":M|null,
   "database":[{"uuid":U,"start":H,"end":H,"primary":true,
                "characteristics":[{"uuid":U,"declaration":H,"value":H,"properties":P,
                                    "descriptors":[{"handle":H,"uuid":U}]}]}]}
                                  build the database (every attribute at its handle), advertise;
                                  an optional "responder":{"kind":"connectiq","write":H,"notify":H,
                                  "cccd":H,"recorded":[[from_phone,"hex"]...]} serves those handles
                                  with ciq_responder.py instead of asking the host
  {"op":"answer","id":I,"reply":"accept"|"value"|"error","hex":"..","code":C,
   "answers":[{"handle":H,"hex":"..","delay_ns":D,"indicate":false}]}
                                  the answer to request I; the notifications and indications are
                                  sent D ns after the request arrived, in order
  {"op":"send","answers":[...]}   answers not tied to a request (at connection time)
  {"op":"initiate","handle":H,"security_request":{"delay_ns":D,"auth_req":A,"frame":F}|absent,
   "discover":{"delay_ns":D,"services":B,"characteristics":B,"descriptors":B,"requests":N,"frame":F}|absent}
                                  what the recorded peripheral did unasked on this connection, each
                                  D ns after the connection came up: send a Security Request; discover
                                  the central's own GATT database (as GATT client)
  {"op":"quit"}                   EOF on the socket = quit
bridge -> host
  {"ev":"bluetooth","ready":true}                  the controller is up (sent on accept)
  {"ev":"serving","attributes":N}                  the database is built, advertising started
  {"ev":"connected","peer":P,"handle":H}           a central connected
  {"ev":"security_request","peer":P,"auth_req":A}   a Security Request was sent
  {"ev":"discovered","peer":P,"services":N,"characteristics":N,"descriptors":N,"requests":N}
                                                   the central's database was discovered
  {"ev":"mtu","peer":P,"mtu":M}                    the ATT MTU changed (an exchange was made)
  {"ev":"pairing","peer":P,"result":"..."}         a central paired (or failed to)
  {"ev":"responder","kind":"connectiq","apps":".."} a protocol-aware responder serves part of the database
  {"ev":"responded","op":"write"|"read","handle":H} a request the responder answered (for the counts)
  {"ev":"request","id":I,"op":"write"|"read","handle":H,"hex":"..","offset":O}
                                                   a write (request or command) or read to answer
  {"ev":"disconnected","peer":P,"reason":R}        the link dropped
  {"ev":"error","message":"..."}                   a bad command (the bridge stays up)

Pairing: the serve command's "pairing":{"sc":B,"io_capability":C,"bonding":B,"mitm":B,"recorded":B} is the
recorded peripheral's side of the recorded pairing: "sc":false offers legacy pairing only (the
Pairing Response clears the SC flag, so a central that asks for LE Secure Connections gets legacy).
Without it: LE Secure Connections with Just Works (no input, no output), bonding. Fresh keys each
time; each pairing is reported with the pairing and association model used.

Example (controllers from ciq_controllers.py on 9001/9002):
    python3 emulate_bridge.py --hci tcp-client:127.0.0.1:9001 --listen 127.0.0.1:0 --address F0:E0:00:00:00:01
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from bumble import att, hci, smp
from bumble.core import UUID, AdvertisingData
from bumble.device import Device, Peer
from bumble.gatt import Characteristic, CharacteristicDeclaration, CharacteristicValue, Descriptor, Service
from bumble.pairing import PairingConfig, PairingDelegate
from bumble.transport import open_transport

from ciq_responder import ConnectIQResponder
from hci_latency import LatencyProbe
from bumble_local import (accept_stop_signals, check_address, close_client, parse_listen, read_commands, rig_argument_parser, serve_until_done,
                          set_no_delay)

POWER_ON_TIMEOUT_S = 10.0
ANSWER_TIMEOUT_S = 10.0
EXIT_WATCHDOG_S = 5.0
MAX_LINE = 16 << 20
DEFAULT_MTU = 247
USER_TERMINATED = hci.HCI_REMOTE_USER_TERMINATED_CONNECTION_ERROR

_START = time.monotonic()


def log(text: str) -> None:
    print(f"{time.monotonic() - _START:9.3f} emulate-bridge {text}", file=sys.stderr, flush=True)


ASSOCIATION_MODELS = {
    smp.PairingMethod.JUST_WORKS: "Just Works",
    smp.PairingMethod.NUMERIC_COMPARISON: "Numeric Comparison",
    smp.PairingMethod.PASSKEY: "Passkey Entry",
    smp.PairingMethod.OOB: "Out of Band",
}


class ReportingSession(smp.Session):
    """Bumble's SMP session, noting on the connection which association model the pairing used
    (the pairing event carries only the keys)."""

    async def on_pairing(self) -> None:
        self.connection.tether_association_model = ASSOCIATION_MODELS.get(self.pairing_method, str(self.pairing_method))
        await super().on_pairing()


class LoggingDelegate(PairingDelegate):
    """The recorded peripheral's IO capability; a passkey or number it must show goes to the log
    (for a person entering it on the phone), a comparison is confirmed."""

    async def display_number(self, number: int, digits: int) -> None:
        log(f"pairing: show {number:0{digits}d} on the central")

    async def compare_numbers(self, number: int, digits: int) -> bool:
        log(f"pairing: numeric comparison {number:0{digits}d}, confirmed")
        return True


class EmulateBridge:
    """The JSON-lines client on one side, the emulated peripheral's GATT server on the other."""

    def __init__(self, device: Device, args):
        self.device = device
        self.args = args
        self.writer: asyncio.StreamWriter | None = None
        self.reader: asyncio.StreamReader | None = None
        self.quitting = asyncio.Event()
        self.next_id = 0
        self.pending: dict[int, tuple[asyncio.Future, float]] = {}
        self.attributes: dict[int, object] = {}
        self.connections: dict[int, object] = {}  # connection handle -> connection
        self.tasks: set[asyncio.Task] = set()
        self.plan: dict | None = None
        self.blob_offset = 0
        self.responder: ConnectIQResponder | None = None
        self.connected_at: dict[int, float] = {}  # connection handle -> when it came up (monotonic)
        device.on("connection", self.on_connection)
        device.pairing_config_factory = self.pairing_config
        device.smp_session_proxy = ReportingSession
        original_blob = device.gatt_server.on_att_read_blob_request

        def read_blob(bearer, request):
            self.blob_offset = request.value_offset
            return original_blob(bearer, request)

        device.gatt_server.on_att_read_blob_request = read_blob
        original_read = device.gatt_server.on_att_read_request

        def read(bearer, request):
            self.blob_offset = 0
            return original_read(bearer, request)

        device.gatt_server.on_att_read_request = read

    # --- the client ----------------------------------------------------------------------

    def emit(self, event: dict) -> None:
        if self.args.verbose:
            log(f"-> {json.dumps(event)}")
        if self.writer is not None and not self.writer.is_closing():
            self.writer.write((json.dumps(event, separators=(",", ":")) + "\n").encode())

    def spawn(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def serve_client(self, reader, writer) -> None:
        self.reader, self.writer = reader, writer
        set_no_delay(writer)
        self.emit({"ev": "bluetooth", "ready": True})
        await read_commands(reader, self.quitting, MAX_LINE, self.handle, self.emit, "serve, answer, send, initiate or quit")
        await self.quit()

    async def handle(self, op: dict) -> None:
        """One command."""
        kind = op["op"]
        if kind == "quit":
            self.quitting.set()
        elif kind == "serve":
            await self.serve(op)
        elif kind == "answer":
            entry = self.pending.pop(op.get("id"), None)
            if entry is None:
                self.emit({"ev": "error", "message": f"answer to unknown request {op.get('id')!r}"})
            elif not entry[0].done():
                entry[0].set_result(op)
        elif kind == "send":
            connection = next(iter(self.connections.values()), None)
            if connection is not None:
                self.schedule(connection, op.get("answers", []), time.monotonic())
        elif kind == "initiate":
            connection = self.connections.get(op.get("handle")) or next(iter(self.connections.values()), None)
            if connection is None:
                self.emit({"ev": "error", "message": "initiate: no connection"})
                return
            if isinstance(op.get("security_request"), dict):
                self.spawn(self.send_security_request(connection, op["security_request"]))
            if isinstance(op.get("discover"), dict):
                self.spawn(self.discover_central(connection, op["discover"]))
        else:
            self.emit({"ev": "error", "message": f"unknown op {kind!r}; expected serve, answer, send, initiate or quit"})

    # --- the database --------------------------------------------------------------------

    async def serve(self, plan: dict) -> None:
        """Builds the database with every attribute at its recorded handle, then advertises."""
        self.plan = plan
        server = self.device.gatt_server
        attributes = []
        services = []
        for s in plan["database"]:
            service = Service(UUID(s["uuid"]), [], primary=s.get("primary", True))
            service.handle = s["start"]
            service.end_group_handle = s["end"]
            attributes.append(service)
            services.append(service)
            for c in s["characteristics"]:
                value_handle = c["value"]
                characteristic = Characteristic(
                    UUID(c["uuid"]),
                    Characteristic.Properties(c["properties"]),
                    Characteristic.READABLE | Characteristic.WRITEABLE,
                    CharacteristicValue(read=self.reader_for(value_handle), write=self.writer_for(value_handle)),
                )
                last = max([value_handle] + [d["handle"] for d in c["descriptors"]])
                characteristic.handle = value_handle
                characteristic.end_group_handle = last
                declaration = CharacteristicDeclaration(characteristic, value_handle)
                declaration.handle = c["declaration"]
                declaration.end_group_handle = last
                attributes += [declaration, characteristic]
                descriptors = []
                for d in c["descriptors"]:
                    descriptor = Descriptor(
                        UUID(d["uuid"]),
                        Descriptor.READABLE | Descriptor.WRITEABLE,
                        CharacteristicValue(read=self.reader_for(d["handle"]), write=self.writer_for(d["handle"])),
                    )
                    descriptor.handle = d["handle"]
                    descriptor.end_group_handle = d["handle"]
                    descriptors.append(descriptor)
                characteristic.descriptors = descriptors
                attributes += descriptors
                service.characteristics.append(characteristic)
        attributes.sort(key=lambda a: a.handle)
        server.attributes = attributes
        server.attributes_by_handle = {}
        server.services = services
        server.max_mtu = plan.get("mtu") or DEFAULT_MTU
        self.attributes = {a.handle: a for a in attributes}
        self.device.name = plan.get("name") or self.device.name
        responder = plan.get("responder")
        if responder and responder.get("kind") == "connectiq":
            self.responder = ConnectIQResponder(self.device, responder, log)
            self.emit({"ev": "responder", "kind": "connectiq", "apps": self.responder.describe, "notes": self.responder.notes})
        await self.start_advertising()
        self.emit({"ev": "serving", "attributes": len(attributes)})

    def reader_for(self, handle: int):
        async def read(connection):
            if self.responder is not None and self.responder.owns(handle):
                self.emit({"ev": "responded", "op": "read", "handle": handle})
                return self.responder.read(handle)
            offset, self.blob_offset = self.blob_offset, 0  # a Read Blob's offset is for this read only
            answer = await self.ask(connection, {"op": "read", "handle": handle, "offset": offset})
            return self.apply(answer, connection, value=True)
        return read

    def writer_for(self, handle: int):
        async def write(connection, value):
            if self.responder is not None and self.responder.owns(handle):
                self.emit({"ev": "responded", "op": "write", "handle": handle})
                self.responder.write(connection, handle, bytes(value))
                return
            self.apply(await self.ask(connection, {"op": "write", "handle": handle, "hex": bytes(value).hex()}), connection)
        return write

    async def ask(self, connection, request: dict) -> dict:
        """Sends a request to the host and waits for its answer."""
        arrived = time.monotonic()
        self.next_id += 1
        request_id = self.next_id
        future = asyncio.get_running_loop().create_future()
        self.pending[request_id] = (future, arrived)
        self.emit({"ev": "request", "id": request_id, **request})
        try:
            answer = await asyncio.wait_for(future, ANSWER_TIMEOUT_S)
        except asyncio.TimeoutError:
            self.pending.pop(request_id, None)
            log(f"no answer from the host to request {request_id} within {ANSWER_TIMEOUT_S:g} s")
            raise att.ATT_Error(error_code=att.ATT_UNLIKELY_ERROR_ERROR)
        answer["_arrived"] = arrived
        return answer

    def apply(self, answer: dict, connection, value=False):
        """Schedules the answer's notifications, then gives the ATT reply (raises for an error)."""
        answers = answer.get("answers") or []
        if answers:
            self.schedule(connection, answers, answer["_arrived"])
        reply = answer.get("reply")
        if reply == "error":
            raise att.ATT_Error(error_code=int(answer.get("code", att.ATT_UNLIKELY_ERROR_ERROR)))
        if value:
            return bytes.fromhex(answer.get("hex", ""))
        return None

    def schedule(self, connection, answers: list, arrived: float) -> None:
        self.spawn(self.send_answers(connection, answers, arrived))

    async def send_answers(self, connection, answers: list, arrived: float) -> None:
        """Sends each answer at its recorded delay after `arrived`, in order."""
        for entry in answers:
            due = arrived + entry["delay_ns"] / 1e9
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if connection.handle not in self.connections:
                return  # the link went away
            value = bytes.fromhex(entry["hex"])
            handle = entry["handle"]
            try:
                if entry.get("indicate"):
                    attribute = self.attributes.get(handle)
                    if attribute is None:
                        log(f"indication on 0x{handle:04x}, not in the database: skipped")
                        continue
                    await self.device.gatt_server.indicate_subscriber(connection, attribute, value, force=True)
                else:
                    pdu = att.ATT_Handle_Value_Notification(attribute_handle=handle, attribute_value=value)
                    self.device.send_l2cap_pdu(connection.handle, att.ATT_CID, bytes(pdu))
            except Exception as error:  # the link dropped under the answer
                log(f"answer on 0x{handle:04x} failed: {error!r}")
                return

    # --- what the recorded peripheral did unasked ------------------------------------------

    def pairing_config(self, _connection) -> PairingConfig:
        """The recorded peripheral's side of the recorded pairing (see the module's docstring)."""
        offer = (self.plan or {}).get("pairing") or {}
        capability = int(offer.get("io_capability", PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
        try:
            io_capability = PairingDelegate.IoCapability(capability)
        except ValueError:  # a reserved value: nothing to show or enter, as the specification treats it
            io_capability = PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT
        return PairingConfig(sc=bool(offer.get("sc", True)), mitm=bool(offer.get("mitm", False)), bonding=bool(offer.get("bonding", True)),
                             delegate=LoggingDelegate(io_capability=io_capability))

    async def wait_until(self, connection, delay_ns: int) -> bool:
        """Sleeps until `delay_ns` after the connection came up; False when it went away meanwhile."""
        due = self.connected_at.get(connection.handle, time.monotonic()) + max(0, int(delay_ns)) / 1e9
        wait = due - time.monotonic()
        if wait > 0:
            await asyncio.sleep(wait)
        return connection.handle in self.connections

    async def send_security_request(self, connection, request: dict) -> None:
        """A Security Request at the recorded delay, with the recorded AuthReq (it agrees with the
        pairing offered: both come from the recorded device)."""
        if not await self.wait_until(connection, request.get("delay_ns", 0)):
            return
        try:
            auth_req = smp.AuthReq(int(request.get("auth_req", 0)) & 0xFF)
            self.device.smp_manager.send_command(connection, smp.SMP_Security_Request_Command(auth_req=auth_req))
        except Exception as error:
            self.emit({"ev": "error", "message": f"Security Request failed: {error!r}"})
            return
        log(f"Security Request sent to {connection.peer_address} (AuthReq 0x{int(auth_req):02x}, as recorded in frame {request.get('frame')})")
        self.emit({"ev": "security_request", "peer": str(connection.peer_address), "auth_req": f"0x{int(auth_req):02x}"})

    async def discover_central(self, connection, discover: dict) -> None:
        """The recorded peripheral discovered the central's own GATT database: so does the
        emulator, as GATT client, with the kinds of discovery the recording made. What the central
        answers is not compared with the recording; what matters is that it is asked."""
        if not await self.wait_until(connection, discover.get("delay_ns", 0)):
            return
        peer = Peer(connection)
        client = peer.gatt_client
        sent = 0
        original = client.send_request

        async def counting(request):
            nonlocal sent
            sent += 1
            return await original(request)

        client.send_request = counting
        services = characteristics = descriptors = 0
        try:
            found = await peer.discover_services()
            services = len(found)
            if discover.get("characteristics") or discover.get("descriptors"):
                for service in found:
                    characteristics += len(await peer.discover_characteristics(service=service))
            if discover.get("descriptors"):
                for service in found:
                    for characteristic in service.characteristics:
                        descriptors += len(await peer.discover_descriptors(characteristic=characteristic))
        except Exception as error:  # the link dropped, or the central refused
            self.emit({"ev": "error", "message": f"discovery of the central's database failed after {sent} requests: {error!r}"})
            return
        finally:
            client.send_request = original
        log(f"discovered central {connection.peer_address}: {services} services, {characteristics} characteristics, "
            f"{descriptors} descriptors in {sent} requests (recorded: {discover.get('requests')})")
        self.emit({"ev": "discovered", "peer": str(connection.peer_address), "services": services,
                   "characteristics": characteristics, "descriptors": descriptors, "requests": sent})

    # --- Bluetooth -----------------------------------------------------------------------

    def on_connection(self, connection) -> None:
        peer = str(connection.peer_address)
        self.connections[connection.handle] = connection
        self.connected_at[connection.handle] = time.monotonic()
        log(f"central {peer} connected, handle 0x{connection.handle:04x}")
        self.emit({"ev": "connected", "peer": peer, "handle": connection.handle})
        if self.responder is not None:
            self.responder.on_connection(connection)
        connection.on("disconnection", lambda reason: self.on_disconnection(connection, peer, reason))
        connection.on("connection_att_mtu_update", lambda: self.emit({"ev": "mtu", "peer": peer, "mtu": connection.att_mtu}))
        connection.on("pairing", lambda keys: self.emit({"ev": "pairing", "peer": peer, "result": self.paired(connection)}))
        connection.on("pairing_failure", lambda reason: self.emit({"ev": "pairing", "peer": peer, "result": f"failed, reason {reason}"}))
        request_mtu = (self.plan or {}).get("request_mtu")
        if request_mtu:
            self.spawn(self.request_mtu(connection, request_mtu))

    def paired(self, connection) -> str:
        """The pairing log line: which pairing and association model were used, and the keys."""
        kind = "LE Secure Connections" if connection.sc else "legacy pairing"
        model = getattr(connection, "tether_association_model", "?")
        offer = (self.plan or {}).get("pairing") or {}
        how = "offered as recorded" if offer.get("recorded") else "accepted as asked"
        return f"paired: {kind}, {model}, fresh keys ({how})"

    async def request_mtu(self, connection, mtu: int) -> None:
        """The recorded peripheral started the MTU exchange itself: so does the emulation."""
        try:
            await Peer(connection).request_mtu(mtu)
        except Exception as error:
            log(f"MTU exchange started by the peripheral failed: {error!r}")

    def on_disconnection(self, connection, peer: str, reason: int) -> None:
        self.connections.pop(connection.handle, None)
        self.connected_at.pop(connection.handle, None)
        if self.responder is not None:
            self.responder.on_disconnection(connection, reason)
        log(f"central {peer} disconnected, reason 0x{int(reason):02x}")
        self.emit({"ev": "disconnected", "peer": peer, "reason": int(reason)})
        if not self.quitting.is_set() and self.plan is not None:
            self.spawn(self.start_advertising())

    async def start_advertising(self) -> None:
        plan = self.plan or {}
        entries = [(AdvertisingData.FLAGS, bytes([0x06]))]
        short, long = [], []
        for text in plan.get("services", []):
            uuid = UUID(text)
            (short if len(uuid.to_bytes()) == 2 else long).append(uuid)
        if short:
            entries.append((AdvertisingData.COMPLETE_LIST_OF_16_BIT_SERVICE_CLASS_UUIDS, b"".join(u.to_bytes() for u in short)))
        if long:
            entries.append((AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, long[0].to_bytes(force_128=True)))
        advertising = bytes(AdvertisingData(entries))[:31]
        scan_response = bytes(AdvertisingData([(AdvertisingData.COMPLETE_LOCAL_NAME, (plan.get("name") or "Tether").encode("utf-8")[:29])]))
        try:
            await self.device.start_advertising(advertising_data=advertising, scan_response_data=scan_response,
                                                advertising_interval_min=20.0, advertising_interval_max=20.0)
            log(f"advertising as {self.args.address}")
        except Exception as error:
            self.emit({"ev": "error", "message": f"advertising failed: {error!r}"})

    def stop(self) -> None:
        self.quitting.set()
        if self.reader is not None:
            self.reader.feed_eof()

    async def quit(self) -> None:
        self.quitting.set()
        for connection in list(self.connections.values()):
            try:
                await asyncio.wait_for(connection.disconnect(USER_TERMINATED), 2.0)
            except Exception as error:
                log(f"disconnect on quit failed: {error!r}")
        await close_client(self.writer)


async def run(args) -> int:
    async with await open_transport(args.hci) as hci_transport:
        probe = LatencyProbe(args.latency_log) if args.latency_log else None
        sink = probe.sink(hci_transport.sink) if probe else hci_transport.sink
        device = Device.with_hci("Tether emulate", hci.Address(args.address), hci_transport.source, sink)
        if probe:
            probe.attach_source(hci_transport.source)
        bridge = EmulateBridge(device, args)
        try:
            await asyncio.wait_for(device.power_on(), POWER_ON_TIMEOUT_S)
        except asyncio.TimeoutError:
            print(f"emulate_bridge: the controller behind {args.hci} did not answer within {POWER_ON_TIMEOUT_S:g} s", file=sys.stderr)
            return 1
        log(f"controller up on {args.hci}")
        await serve_until_done(bridge, args.listen, MAX_LINE, log, exit_watchdog_s=EXIT_WATCHDOG_S)
    return 0


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__)
    parser.add_argument("--hci", required=True, help="Bumble transport of the emulated peripheral's controller")
    parser.add_argument("--listen", required=True, type=parse_listen, help="unix:PATH (folder of mode 0700) or HOST:PORT for the one JSON-lines client")
    parser.add_argument("--address", required=True, help="static random address to advertise, e.g. F0:E0:00:00:00:01")
    parser.add_argument("--latency-log", help="write when each write arrived and its first answer left (hci_latency.py; CI/bench/emulate-latency)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log every line exchanged with the host")
    args = parser.parse_args()
    check_address(parser, args.address)
    try:
        return asyncio.run(run(args))
    except OSError as error:
        print(f"emulate_bridge: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
