#!/usr/bin/env python3
"""A real GATT exchange between two Bumble devices, recorded as btsnoop.

Two Bumble hosts, each on its own virtual controller, share one in-process radio
(bumble.link.LocalLink), so no kernel Bluetooth and no radio are needed. The
"watch" is a GATT server with one custom 128-bit service holding one
characteristic (read, write, write without response, notify). The "phone"
connects, raises the ATT MTU, discovers services, characteristics and
descriptors, reads, writes (request and command), subscribes and receives
notifications, one of them 200 bytes long.

Bumble's btsnoop writer (bumble.snoop.BtSnooper, datalink 1002 = H4) records
every HCI packet between the phone's host and its controller. A Bumble host
fragments outgoing ACL data to the controller's LE buffer size (27 bytes here),
while Bumble's virtual controller hands received data to its host in one ACL
packet. So in the phone's file the 200-byte write is split across several ACL
fragments (and the notification arrives whole); in the watch's file
(--watch-snoop) it is the 200-byte notification that is fragmented. Tether's
tests compare Tether's ATT list for these files against tshark's.

Usage:
    python3 bumble_gatt_exchange.py PHONE.btsnoop [--watch-snoop WATCH.btsnoop]

Exits 0 when every step of the exchange succeeded, 1 otherwise (with the reason
on stderr). Takes well under a few seconds.
"""

import argparse
import asyncio
import sys

from bumble.core import UUID
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.link import LocalLink

from bumble_local import connect_with_mtu, discover_characteristic, make_device

SERVICE_UUID = UUID("6a4e2401-667b-11e3-949a-0800200c9a66")
CHARACTERISTIC_UUID = UUID("6a4ecd28-667b-11e3-949a-0800200c9a66")
WATCH_ADDRESS = "F0:F0:F0:F0:F0:F0"
PHONE_ADDRESS = "F1:F1:F1:F1:F1:F1"
LONG_VALUE = bytes(i % 256 for i in range(200))
TIMEOUT_S = 10.0




async def exchange(phone_snoop, watch_snoop):
    link = LocalLink()
    watch = make_device(link, "watch", WATCH_ADDRESS, watch_snoop)
    phone = make_device(link, "phone", PHONE_ADDRESS, phone_snoop)

    written = []
    write_seen = asyncio.Event()

    def on_write(_connection, value):
        written.append(bytes(value))
        write_seen.set()

    characteristic = Characteristic(
        CHARACTERISTIC_UUID,
        Characteristic.Properties.READ
        | Characteristic.Properties.WRITE
        | Characteristic.Properties.WRITE_WITHOUT_RESPONSE
        | Characteristic.Properties.NOTIFY,
        Characteristic.READABLE | Characteristic.WRITEABLE,
        CharacteristicValue(read=lambda _connection: b"\x01\x02\x03", write=on_write),
    )
    watch.add_service(Service(SERVICE_UUID, [characteristic]))

    # A 200-byte notification needs an ATT MTU of at least 203.
    connection, watch_connection, peer, mtu = await connect_with_mtu(watch, phone, 247, 203)

    proxy = await discover_characteristic(peer, SERVICE_UUID, CHARACTERISTIC_UUID)

    value = await proxy.read_value()
    if bytes(value) != b"\x01\x02\x03":
        raise RuntimeError(f"read gave {bytes(value).hex()}, expected 010203")

    # Write request (answered), then a long write request split across ACL fragments,
    # then a write command (unanswered: wait until the server has seen it).
    await proxy.write_value(b"\x10\x11", with_response=True)
    await proxy.write_value(LONG_VALUE, with_response=True)
    write_seen.clear()
    await proxy.write_value(b"\x20", with_response=False)
    await asyncio.wait_for(write_seen.wait(), TIMEOUT_S)
    if written != [b"\x10\x11", LONG_VALUE, b"\x20"]:
        raise RuntimeError(f"server saw writes {[w.hex() for w in written]}")

    notifications = []
    all_received = asyncio.Event()
    expected = [b"\xaa", b"\xbb\xcc", LONG_VALUE]

    def on_notification(value):
        notifications.append(bytes(value))
        if len(notifications) == len(expected):
            all_received.set()

    await proxy.subscribe(on_notification)
    for value in expected:
        await watch.notify_subscriber(watch_connection, characteristic, value)
    await asyncio.wait_for(all_received.wait(), TIMEOUT_S)
    if notifications != expected:
        raise RuntimeError(f"phone got notifications {[n.hex() for n in notifications]}")

    await connection.disconnect()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("phone_snoop", help="btsnoop file for the phone (GATT client) side")
    parser.add_argument("--watch-snoop", help="btsnoop file for the watch (GATT server) side")
    args = parser.parse_args()

    with open(args.phone_snoop, "wb") as phone_snoop:
        watch_snoop = open(args.watch_snoop, "wb") if args.watch_snoop else None
        try:
            asyncio.run(asyncio.wait_for(exchange(phone_snoop, watch_snoop), TIMEOUT_S))
        except Exception as error:  # every failure ends the rig with its reason
            print(f"bumble_gatt_exchange: {type(error).__name__}: {error}", file=sys.stderr)
            return 1
        finally:
            if watch_snoop is not None:
                watch_snoop.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
