"""Two Bumble devices on one in-process radio: the setup the single-process rigs share.

Each device gets its own virtual controller attached to a shared `bumble.link.LocalLink`, so no
kernel Bluetooth and no radio are needed; a device's HCI traffic can be written as btsnoop by
Bumble's BtSnooper. `connect_with_mtu` is the common opening of a GATT exchange: power both on,
advertise the watch, connect the phone to it, and raise the ATT MTU.

`discover_characteristic` finds one characteristic of one service and its descriptors.
`accept_stop_signals` lets a rig's SIGTERM/SIGINT handlers run even when its parent started it
with those signals blocked. `skip_debug_formatting` spares a host the debug line Bumble formats for
every HCI packet even when nobody logs it (the bridges' largest cost per frame at ATT MTU 23);
`write_command_prefix` and `take_write_commands` send and receive ATT Write Commands as PDUs,
past Bumble's per-PDU objects (used alike by the session bridges and the raw reference,
gatt_throughput.py, so that the reference measures the same code paths without SessionCore).

The rigs' common skeleton: `rig_argument_parser` (the command line from the module docstring),
`check_address` (--address), `parse_listen` and `serve_one_client` (the bridges' one JSON-lines
client, on a private Unix socket or TCP), `on_stop_signals` / `stop_signal_event` / `ready_until_stopped`
(SIGTERM and SIGINT as the way to stop), `start_exit_watchdog` and `disconnect_on_exit` (a
bounded shutdown).

Used by bumble_gatt_exchange.py and h4tap_smoke.py (Harness/rigs) and make_ciq_capture.py
(Harness/wireshark), and by the rigs run as processes (ciq_controllers.py, ciq_watch.py,
ciq_phone_bridge.py, session_watch_bridge.py, gatt_throughput.py, heart_rate_peripheral.py,
heart_rate_central.py).
"""

import argparse
import asyncio
import json
import logging
import os
import signal
import socket
import struct
import threading

from bumble import att, hci
from bumble.controller import Controller
from bumble.device import Device, Peer
from bumble.hci import HCI_REMOTE_DEVICE_TERMINATED_CONNECTION_DUE_TO_POWER_OFF_ERROR as POWER_OFF
from bumble.hci import Address
from bumble.host import Host
from bumble.snoop import BtSnooper
from bumble.transport.common import AsyncPipeSink


def make_device(link, name, address, snoop_file=None):
    """A Bumble device on its own virtual controller attached to `link`; its HCI traffic is
    written to `snoop_file` (an open binary file) when one is given."""
    controller = Controller(name, link=link, public_address=address)
    host = Host(controller, AsyncPipeSink(controller))
    if snoop_file is not None:
        host.snooper = BtSnooper(snoop_file)
    return Device(name=name, address=Address(address), host=host)


def skip_debug_formatting(host):
    """Routes the ACL data and events of Bumble `host` past the debug line its `on_hci_packet` and
    `send_hci_packet` build for every packet (an f-string that formats the whole packet, built even
    when debug logging is off): at ATT MTU 23 that formatting was 23-45% of a bridge's CPU
    (py-spy, CI/bench/README.md). Nothing else changes: packets go to the same handlers in the same
    order. Does nothing when the `bumble.host` logger logs DEBUG or the host has a snooper (whose
    copy the original methods make)."""
    if logging.getLogger("bumble.host").isEnabledFor(logging.DEBUG) or host.snooper is not None:
        return
    logged_receive, logged_send = host.on_hci_packet, host.send_hci_packet

    def on_hci_packet(packet):
        if isinstance(packet, hci.HCI_AclDataPacket):
            host.on_hci_acl_data_packet(packet)
        elif isinstance(packet, hci.HCI_Event):
            host.on_hci_event_packet(packet)
        else:  # commands from a controller, SCO, ISO: rare; Bumble's own path
            logged_receive(packet)

    def send_hci_packet(packet):
        if host.hci_sink is None:
            logged_send(packet)
        else:
            host.hci_sink.on_packet(bytes(packet))

    host.on_hci_packet = on_hci_packet
    host.send_hci_packet = send_hci_packet


def write_command_prefix(handle):
    """The first 3 bytes of an ATT Write Command to `handle` (Core Vol 3, Part F, 3.4.5.3: opcode
    0x52, handle u16): the PDU is these and the value, sent with
    `connection.send_l2cap_pdu(att.ATT_CID, pdu)` — what Bumble's `write_value(with_response=False)`
    sends, without the ATT_PDU object and debug line it builds for each write."""
    return bytes([att.Opcode.ATT_WRITE_COMMAND]) + handle.to_bytes(2, "little")


def take_write_commands(device, handle, on_value):
    """ATT Write Commands to attribute `handle` of `device`'s GATT server go from the ATT channel
    straight to `on_value(connection, value)`, in arrival order, instead of through Bumble's GATT
    server (which parses each into an ATT_PDU object, formats a debug line for it and runs the
    write as a task). Every other ATT PDU, Write Requests to the same handle included, still goes to
    Bumble. Values longer than an attribute's 512 bytes are left to Bumble too (it ignores them)."""
    channels = device.l2cap_channel_manager.fixed_channels
    bumble_att = channels[att.ATT_CID]
    prefix = write_command_prefix(handle)

    def on_att_pdu(connection_handle, pdu):
        if 3 < len(pdu) <= 3 + 512 and pdu[:3] == prefix:
            connection = device.lookup_connection(connection_handle)
            if connection is not None:
                on_value(connection, pdu[3:])
                return
        bumble_att(connection_handle, pdu)

    channels[att.ATT_CID] = on_att_pdu


async def scan_until_advertised(central, address, timeout_s=5.0):
    """Scans (passively) until `address` advertises, then stops scanning: a recorder's central
    connects only to a peripheral it has seen, as a phone does. Raises TimeoutError after
    `timeout_s` seconds."""
    seen = asyncio.get_running_loop().create_future()

    def on_advertisement(advertisement):
        if str(advertisement.address).startswith(address) and not seen.done():
            seen.set_result(advertisement)

    central.on("advertisement", on_advertisement)
    await central.start_scanning(active=False)
    try:
        return await asyncio.wait_for(seen, timeout_s)
    finally:
        await central.stop_scanning()


async def connect_with_mtu(watch, phone, mtu, minimum_mtu):
    """Powers both devices on, advertises `watch`, connects `phone` to it and asks for `mtu`.

    Returns (phone's connection, watch's connection, a Peer on the phone's side, the agreed MTU).
    Raises RuntimeError when the agreed MTU is below `minimum_mtu`.
    """
    await watch.power_on()
    await phone.power_on()
    watch_connected = asyncio.get_running_loop().create_future()
    watch.once(watch.EVENT_CONNECTION, watch_connected.set_result)
    await watch.start_advertising(advertising_interval_min=20.0)
    connection = await phone.connect(watch.random_address)
    watch_connection = await watch_connected
    peer = Peer(connection)
    agreed = await peer.request_mtu(mtu)
    if agreed < minimum_mtu:
        raise RuntimeError(f"ATT MTU is {agreed}; at least {minimum_mtu} is needed")
    return connection, watch_connection, peer, agreed


async def discover_characteristic(peer, service_uuid, characteristic_uuid):
    """The proxy of `characteristic_uuid` in `service_uuid` on `peer`, descriptors discovered.
    Raises RuntimeError naming what was not found."""
    await peer.discover_services()
    services = [s for s in peer.services if s.uuid == service_uuid]
    if not services:
        raise RuntimeError(f"service {service_uuid} not discovered")
    await services[0].discover_characteristics()
    proxies = [c for c in services[0].characteristics if c.uuid == characteristic_uuid]
    if not proxies:
        raise RuntimeError(f"characteristic {characteristic_uuid} not discovered")
    proxy = proxies[0]
    await proxy.discover_descriptors()
    return proxy


def accept_stop_signals():
    """Unblocks SIGTERM and SIGINT in this process. A rig started by Foundation's `Process` from a
    Swift test inherits the runner thread's blocked mask; without this its stop handlers never run
    and only SIGKILL ends it (skipping the clean disconnect)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})


def rig_argument_parser(doc, epilog_from=1):
    """A rig's argument parser: the description is the first paragraph of `doc` (the module
    docstring), the epilog its paragraphs from index `epilog_from` on, both kept as written."""
    paragraphs = doc.split("\n\n")
    return argparse.ArgumentParser(
        description=paragraphs[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n\n".join(paragraphs[epilog_from:]),
    )


def check_address(parser, address, static_random=True):
    """Ends the program through `parser.error` unless `address` (given as --address) is a
    Bluetooth address and, with `static_random`, a static random one (two top bits set)."""
    try:
        Address(address)
    except Exception as error:  # Bumble raises ValueError or its own InvalidArgumentError
        parser.error(f"--address {address!r} is not a Bluetooth address: {error}")
    if static_random and int(address.split(":")[0], 16) & 0xC0 != 0xC0:
        parser.error(f"--address {address}: a static random address has its two top bits set (C0-FF first byte)")


def on_stop_signals(callback):
    """Makes SIGTERM and SIGINT call `callback` in the running event loop."""
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, callback)


def stop_signal_event():
    """An asyncio.Event that SIGTERM and SIGINT set (in the running event loop)."""
    stop = asyncio.Event()
    on_stop_signals(stop.set)
    return stop


async def ready_until_stopped(ready_line):
    """Prints `ready_line` (flushed) once SIGTERM and SIGINT are handled, and returns when one of
    them arrives."""
    stop = stop_signal_event()
    print(ready_line, flush=True)
    await stop.wait()


def start_exit_watchdog(seconds):
    """Ends the process with exit code 0 `seconds` from now, whatever it is doing then. Closing a
    Bumble transport can wait on a peer that is already gone; a rig that was told to stop must
    still go away."""
    watchdog = threading.Timer(seconds, lambda: os._exit(0))
    watchdog.daemon = True
    watchdog.start()


async def disconnect_on_exit(connection, log):
    """Disconnects `connection` as a device powering off does (reason 0x15), within 2 s; a failure
    is logged through `log(text)` and is otherwise ignored (best effort on the way out)."""
    try:
        await asyncio.wait_for(connection.disconnect(POWER_OFF), 2.0)
    except Exception as error:  # best effort on the way out
        log(f"disconnect on exit failed: {error!r}")


def parse_listen(text):
    """`--listen` of the bridges: `unix:PATH` (what Tether's live hosts give: a socket in a folder
    only their user can enter) or `HOST:PORT` (TCP, for running a bridge by hand; port 0 picks one).
    Returns ("unix", PATH) or ("tcp", HOST, PORT)."""
    if text.startswith("unix:"):
        path = text[len("unix:"):]
        if not path:
            raise argparse.ArgumentTypeError(f"--listen {text!r}: expected unix:PATH, e.g. unix:/tmp/tether-x1y2z3/bridge.sock")
        problem = private_folder_problem(path)
        if problem is not None:
            # Checked here too, so a wrong folder fails before the controller is opened.
            raise argparse.ArgumentTypeError(f"--listen {text!r}: {problem}; put the socket in a folder made with mkdtemp (mode 0700)")
        return ("unix", path)
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"--listen {text!r}: expected unix:PATH or HOST:PORT, e.g. 127.0.0.1:0")
    return ("tcp", host, int(port))


def private_folder_problem(path):
    """Why the folder of the socket `path` does not keep other users out, or None when it does
    (owned by this user, no access for group or others). A socket file's own mode is not checked
    on connect by every system; its folder's is."""
    folder = os.path.dirname(os.path.abspath(path))
    try:
        status = os.stat(folder)
    except OSError as error:
        return f"{folder}: {error.strerror}"
    if status.st_uid != os.geteuid():
        return f"{folder} belongs to user {status.st_uid}, not to this user {os.geteuid()}"
    if status.st_mode & 0o077:
        return f"{folder} has mode {status.st_mode & 0o777:03o}; other users could reach the socket (it must be 0700)"
    return None


def peer_credentials(writer):
    """(pid, uid) of the process on the other end of a Unix socket connection, as the kernel saw
    it connect (SO_PEERCRED), or None where the system does not say."""
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
    return pid, uid


def set_no_delay(writer):
    """TCP_NODELAY on a TCP connection (a Unix socket has no Nagle delay to turn off)."""
    sock = writer.get_extra_info("socket")
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)


async def close_client(writer):
    """Sends what is still buffered to the JSON-lines client, then closes it: what every bridge's
    quit does last (a client already gone is not an error then)."""
    if writer is None or writer.is_closing():
        return
    try:
        await writer.drain()
    except ConnectionError:
        pass
    writer.close()


def error_event(message, op=None):
    """A bridge's `error` event: what was wrong, and the command it was wrong with when there is one."""
    event = {"ev": "error", "message": message}
    if op is not None:
        event["op"] = op
    return event


async def read_commands(reader, quitting, max_line, handle, emit, expected_ops, log=None):
    """Reads a bridge's commands, one JSON object a line, from `reader` until `quitting` is set or
    the client closes the socket, and awaits `handle(op)` for each object with a string "op".
    Anything else (an overlong line, text that is not JSON, an object without "op") is answered
    with an `error` event through `emit` and skipped: a bad command never ends the bridge. `expected_ops`
    names the ops in that answer."""
    while not quitting.is_set():
        try:
            line = await reader.readline()
        except (ValueError, asyncio.LimitOverrunError):
            emit(error_event(f"command line longer than {max_line} bytes; ignored"))
            continue
        except ConnectionError:
            break
        if not line:
            if log is not None:
                log("client closed the socket: quitting")
            break
        if not line.strip():
            continue
        try:
            op = json.loads(line)
        except (json.JSONDecodeError, UnicodeDecodeError) as problem:
            emit(error_event(f"not a JSON object: {problem}; send one object per line"))
            continue
        if not isinstance(op, dict) or not isinstance(op.get("op"), str):
            emit(error_event(f'expected an object with "op": {expected_ops}', op))
            continue
        await handle(op)


async def serve_until_done(bridge, listen, max_line, log, exit_watchdog_s=None, if_nobody_came=None):
    """A bridge's life after its controller is up: `serve_one_client`, then (with
    `exit_watchdog_s`) the watchdog that ends the process that long after quitting began, then
    wait for the client's session to end; when none came (a stop before any client), close the
    listener and await `if_nobody_came()` when given. Logs `bye`."""
    server, accepted, done = await serve_one_client(bridge, listen, max_line, log)
    if exit_watchdog_s is not None:
        start_exit_watchdog(exit_watchdog_s)
    if accepted.is_set():
        await done.wait()  # serve_client ends: quit op, EOF or stop()
    else:
        server.close()
        if if_nobody_came is not None:
            await if_nobody_came()
    log("bye")


async def serve_one_client(bridge, listen, max_line, log):
    """The bridges' JSON-lines front: listens on `listen` (from `parse_listen`), prints
    `READY <port>` for TCP or `READY unix:<path>` (flushed), hands exactly ONE client to
    `bridge.serve_client(reader, writer)` (later ones are closed; on a Unix socket, so is any client
    but the process that started the bridge), makes SIGTERM/SIGINT call `bridge.stop()`, and returns once that client is done or
    `bridge.quitting` is set, whichever is first.

    A Unix socket must be in a private folder (see `private_folder_problem`): otherwise this raises
    SystemExit with the reason, before listening.

    Returns (server, accepted, done): `done` is set when the client's session ends. From then on
    SIGTERM and SIGINT are blocked: the bridge is already quitting.
    """
    accepted = asyncio.Event()
    done = asyncio.Event()
    server = None

    async def on_client(reader, writer):
        if accepted.is_set():
            log("refused a second client: the bridge serves exactly one")
            writer.close()  # ONE client only
            return
        if listen[0] == "unix":
            # The one client of a bridge on a Unix socket is the process that started it (tether
            # live): any other process, even of this user and even if it comes first, is refused.
            credentials = peer_credentials(writer)
            if credentials is not None and credentials[1] != os.geteuid():
                log(f"refused a client of user {credentials[1]}: the bridge serves its own user {os.geteuid()} only")
                writer.close()
                return
            if credentials is not None and credentials[0] != os.getppid():
                log(f"refused a client (pid {credentials[0]}): the bridge serves the process that started it (pid {os.getppid()}) only")
                writer.close()
                return
        accepted.set()
        server.close()
        log(f"client {writer.get_extra_info('peername') or 'on the Unix socket'}")
        try:
            await bridge.serve_client(reader, writer)
        finally:
            done.set()

    on_stop_signals(bridge.stop)
    if listen[0] == "unix":
        path = listen[1]
        problem = private_folder_problem(path)
        if problem is not None:
            raise SystemExit(f"--listen unix:{path}: {problem}. Put the socket in a folder made with mkdtemp (mode 0700).")
        server = await asyncio.start_unix_server(on_client, path, limit=max_line)
        os.chmod(path, 0o600)
        print(f"READY unix:{path}", flush=True)
        log(f"listening on unix:{path}")
    else:
        _, host, port = listen
        server = await asyncio.start_server(on_client, host, port, limit=max_line)
        port = server.sockets[0].getsockname()[1]
        print(f"READY {port}", flush=True)
        log(f"listening on {host}:{port}")
    quit_wait = asyncio.create_task(bridge.quitting.wait())
    await asyncio.wait([asyncio.create_task(done.wait()), quit_wait], return_when=asyncio.FIRST_COMPLETED)
    # The bridge is on its way out. Closing the event loop gives SIGTERM its default action back,
    # so a stop signal arriving during the teardown (a supervisor stopping a bridge whose client
    # already hung up) would kill it with -15; held blocked, it is simply not needed.
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    return server, accepted, done
