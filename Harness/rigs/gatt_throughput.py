#!/usr/bin/env python3
"""Raw GATT write-without-response throughput of the Bumble link the live hosts use.

The reference figure for the session link benchmarks: how fast plain ATT Write Commands cross
the same stack (two Bumble hosts, each on its own virtual controller from ciq_controllers.py,
reached over TCP H4, one shared virtual radio), with no JSON, no bridge and no SessionCore.

What runs:
  - ciq_controllers.py with two free ports (a subprocess; or give --hci-server/--hci-client to use
    controllers already running, e.g. behind Tether's H4 tap);
  - the server (this script with --serve, a subprocess, like the watch bridge is its own process):
    the session link's GATT service (session_gatt.py), accepting ATT MTU up to --mtu, advertising;
    it counts the bytes written to the write characteristic;
  - the client (this process, like the phone bridge): connects, asks for ATT MTU --mtu, discovers
    the write characteristic, then writes --bytes bytes as Write Commands of MTU - 3 bytes each
    (the last one shorter), keeping at most --backlog ACL packets queued in its host.
Both ends run the Bumble code paths the session bridges run (bumble_local: no per-packet debug
formatting in the hosts, Write Commands sent and taken as PDUs), so the reference differs from the
session path by exactly SessionCore, the Swift hosts and the bridges' JSON.

Measured: from just before the first write to the moment the server's callback has seen the last
byte (both read with time.monotonic(), one system-wide clock). One JSON line on stdout:
    {"bytes":N,"seconds":S,"bytes_per_s":R,"mtu":M,"writes":W}
Progress and errors go to stderr; exit 0 on success, 1 on failure or timeout.

Example:
    python3 gatt_throughput.py                    # 10 MiB
    python3 gatt_throughput.py --bytes 200000
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import signal
import sys
import time

from bumble import att, hci
from bumble.core import UUID, AdvertisingData, PhysicalTransport
from bumble.device import Device, Peer
from bumble.transport import open_transport

import session_gatt
from bumble_local import (accept_stop_signals, discover_characteristic, rig_argument_parser, skip_debug_formatting, stop_signal_event,
                          take_write_commands, write_command_prefix)

RIGS = os.path.dirname(os.path.abspath(__file__))
SERVER_ADDRESS = "F0:F1:F2:F3:F4:F5"
CLIENT_ADDRESS = "F1:F1:F1:F1:F1:F1"
STARTUP_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 5.0

_START = time.monotonic()


def log(role: str, text: str) -> None:
    print(f"{time.monotonic() - _START:9.3f} throughput-{role} {text}", file=sys.stderr, flush=True)


# --- the server (--serve) ------------------------------------------------------------------


async def serve(args) -> int:
    """GATT server: count written bytes; print `DONE <bytes> <first> <last>` once --bytes arrived."""
    state = {"count": 0, "first": None, "reported": False}

    def on_write(_connection, value) -> None:
        now = time.monotonic()
        if state["first"] is None:
            state["first"] = now
        state["count"] += len(value)
        if state["count"] >= args.bytes and not state["reported"]:
            state["reported"] = True
            print(f"DONE {state['count']} {state['first']!r} {now!r}", flush=True)

    async with await open_transport(args.hci) as transport:
        device = Device.with_hci("Tether throughput server", hci.Address(SERVER_ADDRESS), transport.source, transport.sink)
        skip_debug_formatting(device.host)  # as the session bridges do: the reference runs the same host code
        service, _notify = session_gatt.make_service(on_write)
        device.gatt_server.max_mtu = args.mtu
        device.add_service(service)
        # As the session watch bridge takes its frames: the reference runs the same receive path.
        write = next(c for c in service.characteristics if c.uuid == UUID(session_gatt.WRITE_UUID))
        take_write_commands(device, write.handle, on_write)
        await asyncio.wait_for(device.power_on(), STARTUP_TIMEOUT_S)
        advertising = AdvertisingData(
            [
                (AdvertisingData.FLAGS, bytes([0x06])),
                (AdvertisingData.COMPLETE_LIST_OF_128_BIT_SERVICE_CLASS_UUIDS, service.uuid.to_bytes(force_128=True)),
            ]
        )
        await device.start_advertising(
            advertising_data=bytes(advertising), advertising_interval_min=20.0, advertising_interval_max=20.0
        )
        stop = stop_signal_event()
        device.on("connection", lambda connection: connection.on("disconnection", lambda _reason: stop.set()))
        print("READY", flush=True)
        # Ends on a signal, when the client disconnects, or when the controller's transport closes.
        await asyncio.wait(
            {asyncio.create_task(stop.wait()), asyncio.ensure_future(transport.source.terminated)},
            return_when=asyncio.FIRST_COMPLETED,
        )
    return 0


# --- the client and the whole run ----------------------------------------------------------


async def read_ready(process: asyncio.subprocess.Process, name: str) -> list[str]:
    """The words after READY on `process`'s stdout, within STARTUP_TIMEOUT_S."""
    line = await asyncio.wait_for(process.stdout.readline(), STARTUP_TIMEOUT_S)
    words = line.decode().split()
    if not words or words[0] != "READY":
        raise RuntimeError(f"{name} did not say READY (printed {line!r})")
    return words[1:]


async def stop_process(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), STOP_TIMEOUT_S)
        except asyncio.TimeoutError:
            process.kill()
            await process.wait()


async def measure(args) -> dict:
    processes = []

    async def start(name, *argv):
        process = await asyncio.create_subprocess_exec(
            sys.executable, os.path.join(RIGS, argv[0]), *argv[1:],
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
        )
        processes.append(process)
        return process

    try:
        if args.hci_server and args.hci_client:
            server_hci, client_hci = args.hci_server, args.hci_client
        else:
            controllers = await start("controllers", "ciq_controllers.py", "--ports", "0,0")
            ports = await read_ready(controllers, "ciq_controllers.py")
            server_hci, client_hci = (f"tcp-client:127.0.0.1:{port}" for port in ports)
        server = await start(
            "server", "gatt_throughput.py", "--serve", "--hci", server_hci, "--bytes", str(args.bytes), "--mtu", str(args.mtu)
        )
        await read_ready(server, "the throughput server")
        log("client", f"server up on {server_hci}; client on {client_hci}")
        return await run_client(args, client_hci, server)
    finally:
        for process in reversed(processes):
            await stop_process(process)


async def run_client(args, client_hci: str, server: asyncio.subprocess.Process) -> dict:
    async with await open_transport(client_hci) as transport:
        device = Device.with_hci("Tether throughput client", hci.Address(CLIENT_ADDRESS), transport.source, transport.sink)
        skip_debug_formatting(device.host)  # as the session bridges do: the reference runs the same host code
        await asyncio.wait_for(device.power_on(), STARTUP_TIMEOUT_S)
        connection = await device.connect(hci.Address(SERVER_ADDRESS), transport=PhysicalTransport.LE, timeout=STARTUP_TIMEOUT_S)
        peer = Peer(connection)
        mtu = await peer.request_mtu(args.mtu)
        write = await discover_characteristic(peer, UUID(session_gatt.SERVICE_UUID), UUID(session_gatt.WRITE_UUID))
        size = mtu - 3
        writes = math.ceil(args.bytes / size)
        block = bytes(i & 0xFF for i in range(size))
        queue = device.host.get_data_packet_queue(connection.handle)
        prefix = write_command_prefix(write.handle)
        log("client", f"ATT MTU {mtu}: {args.bytes} bytes in {writes} Write Commands of up to {size} bytes")

        loop = asyncio.get_running_loop()
        lost = loop.create_future()  # the link dropped, or a process under it went away
        connection.on("disconnection", lambda reason: lost.done() or lost.set_result(f"the link dropped (HCI reason 0x{reason:02x})"))
        transport.source.terminated.add_done_callback(
            lambda _: lost.done() or lost.set_result("the controller's transport closed")
        )
        done = asyncio.create_task(server.stdout.readline())  # `DONE …`, or b"" if the server ended
        started = time.monotonic()
        deadline = started + args.timeout
        sent = 0
        for _ in range(writes):
            while queue.pending > args.backlog:  # bound the host's queue; the link drains it
                flowed = loop.create_future()
                queue.once("flow", lambda: flowed.done() or flowed.set_result(None))
                await asyncio.wait({flowed, done, lost}, timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED)
                if lost.done():
                    raise RuntimeError(lost.result())
                if done.done():
                    break  # the server ended early: reported below
                if not flowed.done():
                    raise TimeoutError
            if done.done():
                break
            chunk = block if args.bytes - sent >= size else block[: args.bytes - sent]
            # As the session phone bridge writes its frames: the Write Command as a PDU.
            connection.send_l2cap_pdu(att.ATT_CID, prefix + chunk)
            sent += len(chunk)
        await asyncio.wait({done, lost}, timeout=max(0.0, deadline - time.monotonic()), return_when=asyncio.FIRST_COMPLETED)
        if not done.done():
            raise RuntimeError(lost.result()) if lost.done() else TimeoutError
        line = done.result()
        words = line.decode().split()
        if not words or words[0] != "DONE":
            raise RuntimeError(f"the server ended without counting every byte (printed {line!r})")
        received, last = int(words[1]), float(words[3])
        seconds = last - started
        try:
            await asyncio.wait_for(connection.disconnect(), STOP_TIMEOUT_S)
        except Exception as error:  # the figure is taken; best effort
            log("client", f"disconnect failed: {error!r}")
        return {
            "bytes": received,
            "seconds": round(seconds, 6),
            "bytes_per_s": round(received / seconds, 1),
            "mtu": mtu,
            "writes": writes,
        }


def main() -> int:
    accept_stop_signals()
    parser = rig_argument_parser(__doc__)
    parser.add_argument("--bytes", type=int, default=10 * 1024 * 1024, help="bytes to write (default 10485760)")
    parser.add_argument("--mtu", type=int, default=247, help="ATT MTU to ask for (23-517; default 247)")
    parser.add_argument("--backlog", type=int, default=128, help="most ACL packets queued in the client's host, in flight included (default 128)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds the whole transfer may take (default 600)")
    parser.add_argument("--hci-server", help="use this transport for the server instead of starting ciq_controllers.py")
    parser.add_argument("--hci-client", help="use this transport for the client (with --hci-server)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--hci", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.bytes < 1:
        parser.error("--bytes must be at least 1")
    if args.backlog < 1:
        parser.error("--backlog must be at least 1")
    if not session_gatt.MIN_MTU <= args.mtu <= 517:
        parser.error(f"--mtu {args.mtu}: an ATT MTU is {session_gatt.MIN_MTU} to 517")
    if bool(args.hci_server) != bool(args.hci_client):
        parser.error("--hci-server and --hci-client go together")
    if args.serve:
        return asyncio.run(serve(args))
    try:
        result = asyncio.run(asyncio.wait_for(measure(args), args.timeout + 2 * STARTUP_TIMEOUT_S))
    except (asyncio.TimeoutError, TimeoutError):
        print(f"gatt_throughput: no result within {args.timeout:g} s", file=sys.stderr)
        return 1
    except (OSError, RuntimeError) as error:
        print(f"gatt_throughput: {error}", file=sys.stderr)
        return 1
    print(json.dumps(result, separators=(",", ":")), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
