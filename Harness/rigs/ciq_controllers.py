#!/usr/bin/env python3
"""Several Bumble virtual BLE controllers on one shared virtual radio, each served as H4.

Each TRANSPORT is a Bumble transport spec that this process *serves* (the hosts connect to it),
usually `tcp-server:127.0.0.1:PORT`. All controllers share one in-process radio
(bumble.link.LocalLink), so a host on one controller can advertise and a host on another can
connect to it, with no kernel Bluetooth and no radio.

Why not `python3 -m bumble.apps.controllers`: in Bumble 0.0.236 that app accepts exactly two
transports, cannot pick free ports, says nothing when it is ready, and its controllers never
finish a cancelled LE connection attempt (HCI_LE_Create_Connection_Cancel answers success but no
LE Connection Complete follows, so the host waits forever and every later connect is refused with
"command disallowed"). This script fixes those four points and nothing else:

- any number of transports;
- `tcp-server:HOST:0` binds a free port; `READY <port> <port> ...` goes to stdout (flushed) once
  every transport listens, one entry per TRANSPORT in order (`-` for a non-TCP transport);
- Create Connection Cancel ends a pending attempt with LE Connection Complete, status 0x02
  (Unknown Connection Identifier), as the Core spec (Vol 4, Part E, 7.8.13) asks;
- SIGTERM or SIGINT closes the transports and exits 0.
And one point of speed, for the sessions and their raw reference alike: unless the
`bumble.controller` logger logs DEBUG, ACL data and events skip the debug line Bumble formats for
every packet (a third of this process's CPU at ATT MTU 23, where every 20-byte write is a packet).

Usage:
    python3 ciq_controllers.py tcp-server:127.0.0.1:9001 tcp-server:127.0.0.1:9002
    python3 ciq_controllers.py --ports 9001,9002          # the same, on 127.0.0.1
    python3 ciq_controllers.py --ports 0,0                # free ports; prints READY p1 p2

A host (ciq_watch.py, ciq_phone_bridge.py, Tether's H4 tap) then uses
`tcp-client:127.0.0.1:PORT`. One host per controller at a time.
"""

import argparse
import asyncio
import logging
import socket
import sys

from bumble import hci
from bumble.controller import Controller
from bumble.link import LocalLink
from bumble.transport import open_transport
from bumble.transport.tcp_server import open_tcp_server_transport_with_socket
from bumble_local import accept_stop_signals, ready_until_stopped


class CancellableController(Controller):
    """Bumble's virtual controller, with LE Create Connection Cancel that really cancels, and
    without the per-packet debug formatting while nobody logs it."""

    QUIET = not logging.getLogger("bumble.controller").isEnabledFor(logging.DEBUG)

    def on_hci_packet(self, packet):
        """From the host: ACL data straight to its handler; anything else as Bumble does it."""
        if self.QUIET and isinstance(packet, hci.HCI_AclDataPacket):
            self.on_hci_acl_data_packet(packet)
        else:
            super().on_hci_packet(packet)

    def send_hci_packet(self, packet):
        """To the host, on the next turn of the loop, as Bumble does it, minus the debug line."""
        if not self.QUIET:
            super().send_hci_packet(packet)
        elif self.host:
            asyncio.get_running_loop().call_soon(self.host.on_packet, bytes(packet))

    def on_hci_le_create_connection_cancel_command(self, _command):
        """Core spec Vol 4, Part E, 7.8.13: Command Complete, then LE Connection Complete 0x02."""
        pending = self.pending_le_connection
        if pending is None:
            return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.COMMAND_DISALLOWED_ERROR)
        self.pending_le_connection = None

        def report_cancelled():
            self.send_hci_packet(
                hci.HCI_LE_Connection_Complete_Event(
                    status=hci.HCI_ErrorCode.UNKNOWN_CONNECTION_IDENTIFIER_ERROR,
                    connection_handle=0,
                    role=hci.Role.CENTRAL,
                    peer_address_type=pending.peer_address.address_type,
                    peer_address=pending.peer_address,
                    connection_interval=0,
                    peripheral_latency=0,
                    supervision_timeout=0,
                    central_clock_accuracy=0,
                )
            )

        # The Command Complete for this command is sent when this handler returns.
        asyncio.get_running_loop().call_soon(report_cancelled)
        return hci.HCI_StatusReturnParameters(hci.HCI_ErrorCode.SUCCESS)


async def open_served_transport(spec):
    """Open `spec`; a `tcp-server:HOST:PORT` binds the socket here so port 0 gives a free port.

    Returns (transport, port or None).
    """
    if spec.startswith("tcp-server:"):
        host, port = spec[len("tcp-server:") :].rsplit(":", maxsplit=1)
        host = "" if host == "_" else host
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if int(port) != 0:  # a fixed port may be rebound at once after a previous run
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, int(port)))
        transport = await open_tcp_server_transport_with_socket(sock)
        return transport, sock.getsockname()[1]
    return await open_transport(spec), None


async def serve(specs):
    link = LocalLink()
    transports = []
    ports = []
    try:
        for index, spec in enumerate(specs):
            transport, port = await open_served_transport(spec)
            transports.append(transport)
            ports.append("-" if port is None else str(port))
            CancellableController(
                f"C{index}", host_source=transport.source, host_sink=transport.sink, link=link
            )
        await ready_until_stopped("READY " + " ".join(ports))
    finally:
        for transport in transports:
            await transport.close()


def main():
    accept_stop_signals()
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Examples: ciq_controllers.py --ports 9001,9002\n"
        "          ciq_controllers.py tcp-server:127.0.0.1:0 tcp-server:127.0.0.1:0",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "transports",
        nargs="*",
        metavar="TRANSPORT",
        help="a Bumble transport to serve one controller on, e.g. tcp-server:127.0.0.1:9001",
    )
    parser.add_argument(
        "--ports",
        help="comma-separated TCP ports, one controller each, served on --host (0 picks a free port)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address --ports listen on (default 127.0.0.1)")
    args = parser.parse_args()
    specs = list(args.transports)
    if args.ports:
        try:
            ports = [int(port) for port in args.ports.split(",")]
        except ValueError:
            parser.error(f"--ports {args.ports!r}: expected comma-separated port numbers, e.g. 9001,9002")
        if any(not 0 <= port <= 65535 for port in ports):
            parser.error(f"--ports {args.ports!r}: ports are 0-65535")
        specs += [f"tcp-server:{args.host}:{port}" for port in ports]
    if not specs:
        parser.error("no controller to serve: give TRANSPORT arguments or --ports, e.g. --ports 9001,9002")
    try:
        asyncio.run(serve(specs))
    except (OSError, ValueError) as error:
        print(f"ciq_controllers: cannot open a transport: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
