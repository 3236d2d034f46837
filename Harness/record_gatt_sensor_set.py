#!/usr/bin/env python3
"""Records `Captures/gatt-sensor`: a phone-side btsnoop of a session with the generic sensor rig
(Harness/rigs/gatt_sensor.py), imported with `tether import` as a capture set.

Both devices run in this process on one virtual radio (bumble.link.LocalLink); the central's HCI
is written by Bumble's BtSnooper (btsnoop, datalink 1002), as a phone's btsnoop_hci.log would be.
The session: scan (advertising reports in the capture), connect, MTU 247, discover everything, read
the Device Information strings, the battery and the config twice, subscribe to the stream, burst
and reply characteristics, let the stream run, write `02` (a pong), `01 78` (a burst of 120
notifications), `02` again (a different pong for the same bytes), `03 01` without response (no
answer), write and read the config, unsubscribe from the stream, disconnect.

    python3 Harness/record_gatt_sensor_set.py --out Captures/gatt-sensor [--tether .build/debug/tether]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "Harness" / "rigs"))

from bumble.core import UUID  # noqa: E402
from bumble.device import Peer  # noqa: E402
from bumble.hci import Address  # noqa: E402
from bumble.link import LocalLink  # noqa: E402

import gatt_sensor  # noqa: E402
from bumble_local import make_device, scan_until_advertised  # noqa: E402

SENSOR_ADDRESS = "F0:5E:00:00:00:01"
PHONE_ADDRESS = "F0:5E:00:00:00:A0"


async def session(snoop_path: str) -> None:
    link = LocalLink()
    with open(snoop_path, "wb") as snoop:
        device = make_device(link, "sensor", SENSOR_ADDRESS)
        sensor = gatt_sensor.Sensor(device)
        phone = make_device(link, "phone", PHONE_ADDRESS, snoop)
        await device.power_on()
        await phone.power_on()
        await device.start_advertising(advertising_data=sensor.advertising_data(), auto_restart=False)
        await scan_until_advertised(phone, SENSOR_ADDRESS)
        connection = await phone.connect(Address(SENSOR_ADDRESS))
        peer = Peer(connection)
        await peer.request_mtu(247)
        await peer.discover_all()

        def characteristic(uuid: str):
            found = peer.get_characteristics_by_uuid(UUID(uuid))
            if not found:
                raise RuntimeError(f"characteristic {uuid} not discovered")
            return found[0]

        for uuid in ("2A29", "2A24", "2A19"):
            await characteristic(uuid).read_value()
        config = characteristic(gatt_sensor.CONFIG_UUID)
        await config.read_value()
        await config.read_value()
        for uuid in (gatt_sensor.STREAM_UUID, gatt_sensor.BURST_UUID, gatt_sensor.REPLY_UUID):
            await characteristic(uuid).subscribe(lambda value: None)
        await asyncio.sleep(0.4)
        control = characteristic(gatt_sensor.CONTROL_UUID)
        await control.write_value(b"\x02", with_response=True)
        await asyncio.sleep(0.2)
        await control.write_value(b"\x01\x78", with_response=True)
        await asyncio.sleep(1.0)
        await control.write_value(b"\x02", with_response=True)
        await asyncio.sleep(0.2)
        await control.write_value(b"\x03\x01", with_response=False)
        await asyncio.sleep(0.2)
        await config.write_value(b"CFG", with_response=True)
        await config.read_value()
        await characteristic(gatt_sensor.STREAM_UUID).unsubscribe()
        await asyncio.sleep(0.2)
        await connection.disconnect()
        await asyncio.sleep(0.2)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the capture set to create, e.g. Captures/gatt-sensor")
    parser.add_argument("--tether", default=str(ROOT / ".build" / "debug" / "tether"), help="the tether binary")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        snoop = os.path.join(folder, "btsnoop_hci.log")
        asyncio.run(session(snoop))
        result = subprocess.run([args.tether, "import", snoop, "--out", args.out, "--title",
                                 "Generic BLE sensor (Harness/rigs/gatt_sensor.py): stream, burst of 120, pongs, config reads"],
                                capture_output=True, text=True)
        sys.stdout.write(result.stdout)
        sys.stderr.write(result.stderr)
        return result.returncode


if __name__ == "__main__":
    sys.exit(main())
