#!/usr/bin/env python3
"""The central of CI/bench/emulate-latency: connects to two peripherals on one virtual radio — the
emulated sensor (`tether emulate Captures/gatt-sensor`) and Bumble's own GATT server running the
same sensor (`Harness/rigs/gatt_sensor.py`) — and writes the control characteristic `02` (a Write
Request) to each in turn, ROUNDS times after WARMUP untimed rounds, waiting for each answer. The
peripherals time themselves at their HCI transport (Harness/rigs/hci_latency.py); this script only
drives them, and prints `rounds=N` when done.

usage: emulate_latency.py HCI EMULATED_ADDRESS REFERENCE_ADDRESS ROUNDS WARMUP
"""

import asyncio
import logging
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "Harness" / "rigs"))

from bumble import hci  # noqa: E402
from bumble.core import UUID  # noqa: E402
from bumble.device import Device, Peer  # noqa: E402
from bumble.transport import open_transport  # noqa: E402

import gatt_sensor  # noqa: E402


async def control_of(device, address):
    connection = await asyncio.wait_for(device.connect(hci.Address(address)), 15.0)
    peer = Peer(connection)
    await peer.request_mtu(247)
    await peer.discover_services([UUID(gatt_sensor.SENSOR_SERVICE)])
    await peer.discover_characteristics([UUID(gatt_sensor.CONTROL_UUID)])
    found = peer.get_characteristics_by_uuid(UUID(gatt_sensor.CONTROL_UUID))
    if not found:
        raise SystemExit(f"{address}: no control characteristic")
    return connection, found[0]


async def main(hci_name, emulated, reference, rounds, warmup):
    logging.getLogger("bumble").setLevel(logging.ERROR)
    async with await open_transport(hci_name) as transport:
        device = Device.with_hci("bench-central", hci.Address("F0:BE:00:00:00:01"), transport.source, transport.sink)
        await device.power_on()
        targets = [await control_of(device, emulated), await control_of(device, reference)]
        for _ in range(warmup + rounds):
            for _connection, control in targets:
                await control.write_value(b"\x02", with_response=True)
        for connection, _control in targets:
            await connection.disconnect()
    print(f"rounds={rounds} warmup={warmup}")


if __name__ == "__main__":
    if len(sys.argv) != 6:
        raise SystemExit(__doc__)
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
