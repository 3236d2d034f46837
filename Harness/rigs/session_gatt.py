"""The session link's GATT service (docs/session-link.md, "GATT"), as Bumble objects.

One primary service, two characteristics: the write characteristic (phone -> watch; write without
response, plain write also accepted) and the notify characteristic (watch -> phone; Bumble adds
its CCCD when the service is added to a GATT server). The watch is the GATT server.

Used by session_watch_bridge.py (the watch's BLE host), ciq_phone_bridge.py --profile session
(the phone's side) and gatt_throughput.py (the raw GATT reference figure).
"""

from bumble.core import UUID
from bumble.gatt import Characteristic, CharacteristicValue, Service

SERVICE_UUID = "54450001-5345-5353-494F-4E4C494E4B01"
WRITE_UUID = "54450002-5345-5353-494F-4E4C494E4B01"
NOTIFY_UUID = "54450003-5345-5353-494F-4E4C494E4B01"

# BLE's smallest ATT MTU; the link works at any MTU (maxPayload = MTU - 3, clamped to 20...512).
MIN_MTU = 23


def make_service(on_write):
    """(service, notify characteristic). `on_write(connection, value)` is called for every value
    written to the write characteristic (Write Command or Write Request), in arrival order."""
    write = Characteristic(
        UUID(WRITE_UUID),
        Characteristic.Properties.WRITE_WITHOUT_RESPONSE | Characteristic.Properties.WRITE,
        Characteristic.WRITEABLE,
        CharacteristicValue(write=on_write),
    )
    notify = Characteristic(
        UUID(NOTIFY_UUID),
        Characteristic.Properties.NOTIFY,
        Characteristic.READABLE,
        b"",
    )
    return Service(UUID(SERVICE_UUID), [write, notify]), notify
