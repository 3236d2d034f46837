#!/usr/bin/env python3
"""A short GATT exchange between two Bumble hosts, one of them reaching its controller through
Tether's H4 tap.

Run Bumble's two virtual controllers on one radio link first, then the tap in front of one of
them, then this script:

    python3 Harness/rigs/ciq_controllers.py tcp-server:127.0.0.1:9001 tcp-server:127.0.0.1:9002
    tether record --ble tcp:127.0.0.1:9001 --ble-listen 127.0.0.1:9101 --out Captures/smoke
    python3 Harness/rigs/h4tap_smoke.py --central tcp-client:127.0.0.1:9101 \\
        --peripheral tcp-client:127.0.0.1:9002

The peripheral (a "watch": one custom service with one readable, writable, notifying
characteristic) advertises; the central (a "phone", behind the tap) connects over LE, raises the
ATT MTU, discovers the service, characteristic and descriptors, reads, writes, subscribes, gets
two notifications, and disconnects. So the tap sees the controller's reset and set-up, an LE
connection and ATT traffic both ways.

Exits 0 when every step succeeded, 1 otherwise (the reason on stderr). Takes a few seconds.
"""

import argparse
import asyncio
import sys

from bumble.core import UUID
from bumble.device import Device
from bumble.gatt import Characteristic, CharacteristicValue, Service
from bumble.hci import Address
from bumble.transport import open_transport

from bumble_local import connect_with_mtu, discover_characteristic

SERVICE_UUID = UUID("6a4e2401-667b-11e3-949a-0800200c9a66")
CHARACTERISTIC_UUID = UUID("6a4ecd28-667b-11e3-949a-0800200c9a66")
WATCH_ADDRESS = "F0:F0:F0:F0:F0:F2"
PHONE_ADDRESS = "F1:F1:F1:F1:F1:F2"
TIMEOUT_S = 20.0


async def exchange(central_spec, peripheral_spec):
    async with await open_transport(peripheral_spec) as watch_transport:
        async with await open_transport(central_spec) as phone_transport:
            watch = Device.with_hci("watch", Address(WATCH_ADDRESS), watch_transport.source, watch_transport.sink)
            phone = Device.with_hci("phone", Address(PHONE_ADDRESS), phone_transport.source, phone_transport.sink)

            written = []
            characteristic = Characteristic(
                CHARACTERISTIC_UUID,
                Characteristic.Properties.READ | Characteristic.Properties.WRITE | Characteristic.Properties.NOTIFY,
                Characteristic.READABLE | Characteristic.WRITEABLE,
                CharacteristicValue(read=lambda _connection: b"\x01\x02\x03", write=lambda _c, value: written.append(bytes(value))),
            )
            watch.add_service(Service(SERVICE_UUID, [characteristic]))

            connection, watch_connection, peer, _ = await connect_with_mtu(watch, phone, 185, 23)
            proxy = await discover_characteristic(peer, SERVICE_UUID, CHARACTERISTIC_UUID)

            value = await proxy.read_value()
            if bytes(value) != b"\x01\x02\x03":
                raise RuntimeError(f"read gave {bytes(value).hex()}, expected 010203")
            await proxy.write_value(b"\x10\x11", with_response=True)
            if written != [b"\x10\x11"]:
                raise RuntimeError(f"server saw writes {[w.hex() for w in written]}")

            notifications = []
            both = asyncio.Event()

            def on_notification(value):
                notifications.append(bytes(value))
                if len(notifications) == 2:
                    both.set()

            await proxy.subscribe(on_notification)
            await watch.notify_subscriber(watch_connection, characteristic, b"\xaa")
            await watch.notify_subscriber(watch_connection, characteristic, b"\xbb\xcc")
            await asyncio.wait_for(both.wait(), TIMEOUT_S)
            if notifications != [b"\xaa", b"\xbb\xcc"]:
                raise RuntimeError(f"central got notifications {[n.hex() for n in notifications]}")

            await connection.disconnect()
            print("h4tap_smoke: connected, discovered, read, wrote, got 2 notifications, disconnected")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--central", required=True, help="Bumble transport of the central's controller (the tap): tcp-client:HOST:PORT")
    parser.add_argument("--peripheral", required=True, help="Bumble transport of the peripheral's controller: tcp-client:HOST:PORT")
    args = parser.parse_args()
    try:
        asyncio.run(asyncio.wait_for(exchange(args.central, args.peripheral), TIMEOUT_S))
    except Exception as error:  # every failure ends the rig with its reason
        print(f"h4tap_smoke: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
