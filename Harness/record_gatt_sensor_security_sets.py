#!/usr/bin/env python3
"""Records the two small security sets of the generic sensor rig (Harness/rigs/gatt_sensor.py):
phone-side btsnoops, imported with `tether import`, as Harness/record_gatt_sensor_set.py does.

- `Captures/gatt-sensor-legacy-pairing`: the tracker behaviour found in real phone captures. The
  sensor sends a Security Request 0.15 s after each connection, accepts LE legacy pairing only,
  and 0.6 s after each connection discovers the phone's own GATT database as GATT client. Two
  connections, each re-paired: connect, MTU 247, discover, (Security Request → the phone pairs,
  asking for LE Secure Connections and getting legacy, Just Works, bonding), read the battery,
  write `02` (a pong), wait for the sensor's discovery, disconnect.
- `Captures/gatt-sensor-sc-pairing`: the same sensor with LE Secure Connections and no discovery of
  the phone: one connection, Security Request, LE Secure Connections, battery read, `02`.

Both devices run in this process on one virtual radio (bumble.link.LocalLink); the phone's HCI is
written by Bumble's BtSnooper (btsnoop, datalink 1002), as a phone's btsnoop_hci.log would be.

    python3 Harness/record_gatt_sensor_security_sets.py --out Captures [--tether .build/debug/tether]
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
from bumble.pairing import PairingConfig, PairingDelegate  # noqa: E402

import gatt_sensor  # noqa: E402
from bumble_local import make_device, scan_until_advertised  # noqa: E402

SENSOR_ADDRESS = "F0:5E:00:00:00:02"
PHONE_ADDRESS = "F0:5E:00:00:00:A0"
SECURITY_REQUEST_S = 0.15
DISCOVER_CENTRAL_S = 0.6

SETS = {
    "gatt-sensor-legacy-pairing": dict(legacy=True, discover=True, connections=2,
                                       title="Generic BLE sensor asking for legacy pairing on every connection and discovering the phone"),
    "gatt-sensor-sc-pairing": dict(legacy=False, discover=False, connections=1,
                                   title="Generic BLE sensor asking for LE Secure Connections pairing"),
}


async def session(snoop_path: str, legacy: bool, discover: bool, connections: int) -> None:
    link = LocalLink()
    with open(snoop_path, "wb") as snoop:
        device = make_device(link, "sensor", SENSOR_ADDRESS)
        sensor = gatt_sensor.Sensor(device, security_request_s=SECURITY_REQUEST_S, legacy_pairing=legacy,
                                    discover_central_s=DISCOVER_CENTRAL_S if discover else None)
        phone = make_device(link, "phone", PHONE_ADDRESS, snoop)
        # The phone asks for LE Secure Connections, as phones do; the sensor decides.
        phone.pairing_config_factory = lambda _connection: PairingConfig(
            sc=True, mitm=False, bonding=True, delegate=PairingDelegate(io_capability=PairingDelegate.IoCapability.NO_OUTPUT_NO_INPUT))
        await device.power_on()
        await phone.power_on()
        await device.start_advertising(advertising_data=sensor.advertising_data(), auto_restart=True)
        await scan_until_advertised(phone, SENSOR_ADDRESS)
        for number in range(connections):
            connection = await phone.connect(Address(SENSOR_ADDRESS))
            asked = asyncio.get_running_loop().create_future()
            connection.on("security_request", lambda _auth_req, asked=asked: asked.done() or asked.set_result(True))
            peer = Peer(connection)
            await peer.request_mtu(247)
            await peer.discover_all()
            await asyncio.wait_for(asked, 5.0)
            await asyncio.wait_for(connection.pair(), 10.0)
            expected = "LE Secure Connections" if not legacy else "legacy pairing"
            made = "LE Secure Connections" if connection.sc else "legacy pairing"
            if made != expected:
                raise RuntimeError(f"connection {number + 1}: {made}, expected {expected}")

            def characteristic(uuid: str):
                found = peer.get_characteristics_by_uuid(UUID(uuid))
                if not found:
                    raise RuntimeError(f"characteristic {uuid} not discovered")
                return found[0]

            await characteristic("2A19").read_value()
            await characteristic(gatt_sensor.REPLY_UUID).subscribe(lambda value: None)
            await characteristic(gatt_sensor.CONTROL_UUID).write_value(b"\x02", with_response=True)
            await asyncio.sleep(0.2)
            if discover:
                for _ in range(50):
                    if len(sensor.central_discoveries) > number:
                        break
                    await asyncio.sleep(0.05)
                else:
                    raise RuntimeError(f"connection {number + 1}: the sensor did not discover the phone's database")
            await connection.disconnect()
            await asyncio.sleep(0.3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True, help="the folder to create the sets in, e.g. Captures")
    parser.add_argument("--tether", default=str(ROOT / ".build" / "debug" / "tether"), help="the tether binary")
    parser.add_argument("--only", choices=sorted(SETS), help="record only this set")
    args = parser.parse_args()
    for name, spec in SETS.items():
        if args.only and name != args.only:
            continue
        with tempfile.TemporaryDirectory() as folder:
            snoop = os.path.join(folder, "btsnoop_hci.log")
            asyncio.run(session(snoop, spec["legacy"], spec["discover"], spec["connections"]))
            result = subprocess.run([args.tether, "import", snoop, "--out", os.path.join(args.out, name), "--title", spec["title"]],
                                    capture_output=True, text=True)
            sys.stdout.write(result.stdout)
            sys.stderr.write(result.stderr)
            if result.returncode != 0:
                return result.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
