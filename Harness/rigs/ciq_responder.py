"""The Connect IQ responder of `tether emulate`: the watch rig's link (ciq_watch.py's PhoneLink:
connection ids, transfers of any length in windows, acks, XXTEA decryption with the key the phone
sends, app info, open app, echoes) served on the emulated database's Connect IQ characteristics, with
the apps and their behaviour read from the recorded link.

A generic replay cannot stand in for a Connect IQ watch: the phone draws a new XXTEA key every
session, so its writes never match the recorded bytes and the recorded answers are encrypted with
the old key. This responder speaks the link instead, and answers as the recorded watch's apps did:

  recorded for an app                                         behaviour (ciq_watch.py)
  app info answered 0xFFFF, or connect answered "not found"   not-installed
  a transfer's `first` acknowledged, its `last` never         silent
  the watch started a transfer back on the app's connection   echo
  otherwise (installed, its transfers acknowledged)           echo (the closest the rig has)

The app's version is the recorded app-info answer's; large packets as the recorded connect answers
allowed them. `infer_apps` does the reading; `ConnectIQResponder` the serving.
"""

from __future__ import annotations

import asyncio
import types
import uuid as uuidlib

from bumble import att

import ciq_link as link
from ciq_watch import App, PhoneLink


def infer_apps(recorded):
    """Apps and large-packet permission from the recorded link: `recorded` is [(from_phone, bytes)]
    in capture order (writes to the write characteristic, notifications of the notify one).
    Returns (apps, large_packets, notes)."""
    notes = []
    installed: dict[uuidlib.UUID, int] = {}
    missing: set[uuidlib.UUID] = set()
    conn_app: dict[int, uuidlib.UUID] = {}
    seen: list[uuidlib.UUID] = []
    first_acked: set[int] = set()
    last_acked: set[int] = set()
    phone_first: set[int] = set()
    watch_first: set[int] = set()
    large = False
    for from_phone, data in recorded:
        direction = link.Direction.PHONE_TO_WATCH if from_phone else link.Direction.WATCH_TO_PHONE
        try:
            packet = link.decode_packet(data, direction)
        except link.PacketError:
            continue  # a data packet of an encrypted transfer decodes; anything else is not the link's
        app = getattr(packet, "app", None)
        if app is not None and app not in seen:
            seen.append(app)
        if isinstance(packet, link.AppInfoResponse):
            if packet.installed:
                installed[packet.app] = packet.version
            else:
                missing.add(packet.app)
        elif isinstance(packet, link.ConnectResponse):
            if packet.status == link.ConnectStatus.SUCCESS:
                conn_app[packet.conn] = packet.app
                large = large or packet.large_packets
            elif packet.status == link.ConnectStatus.APP_NOT_FOUND:
                missing.add(packet.app)
        elif isinstance(packet, link.First):
            (phone_first if from_phone else watch_first).add(packet.conn)
        elif isinstance(packet, link.Ack) and not from_phone and packet.status == link.AckStatus.SUCCESS:
            if packet.kind == link.AckType.FIRST:
                first_acked.add(packet.conn)
            elif packet.kind == link.AckType.LAST:
                last_acked.add(packet.conn)
    apps = []
    for app in seen:
        if app in missing and app not in installed:
            apps.append(App(app, "not-installed"))
            continue
        conns = {conn for conn, owner in conn_app.items() if owner == app}
        version = installed.get(app, 1)
        if conns & phone_first & first_acked and not conns & last_acked:
            behaviour = "silent"
        elif conns & watch_first:
            behaviour = "echo"
        else:
            behaviour = "echo"
            notes.append(f"app {app}: no echo recorded; served as the rig's echo app")
        apps.append(App(app, behaviour, version))
    return apps, large, notes


class ConnectIQResponder:
    """The watch side of the link on the emulated database's handles."""

    def __init__(self, device, plan: dict, log):
        self.device = device
        self.write_handle = plan["write"]
        self.notify_handle = plan["notify"]
        self.cccd_handle = plan.get("cccd")
        recorded = [(entry[0], bytes.fromhex(entry[1])) for entry in plan["recorded"]]
        apps, large, self.notes = infer_apps(recorded)
        self.log = log
        self.links: dict[int, PhoneLink] = {}
        self.background_tasks = set()
        self.watch = types.SimpleNamespace(
            device=types.SimpleNamespace(notify_subscriber=self.notify),
            notify_characteristic=None,
            apps={app.uuid: app for app in apps},
            large_packets=large,
            open_result=0,
            slow_s=1.0,
            chatty_interval_s=1.0,
            chatty_count=3,
            chatty_delay_s=0.5,
            disconnect_after=5,
            max_transfer=1 << 20,
            background=self.background,
        )
        self.describe = ", ".join(f"{app.uuid}={app.behaviour}:{app.version}" for app in apps) + (" (large packets)" if large else "")

    def background(self, coroutine) -> None:
        task = asyncio.create_task(coroutine)
        self.background_tasks.add(task)
        task.add_done_callback(self.background_tasks.discard)

    async def notify(self, connection, _characteristic, data: bytes) -> None:
        pdu = att.ATT_Handle_Value_Notification(attribute_handle=self.notify_handle, attribute_value=bytes(data))
        self.device.send_l2cap_pdu(connection.handle, att.ATT_CID, bytes(pdu))

    def owns(self, handle: int) -> bool:
        return handle in (self.write_handle, self.notify_handle, self.cccd_handle)

    def on_connection(self, connection) -> None:
        self.links[connection.handle] = PhoneLink(self.watch, connection)

    def on_disconnection(self, connection, reason: int) -> None:
        phone = self.links.pop(connection.handle, None)
        if phone is not None:
            phone.close(int(reason))

    def write(self, connection, handle: int, value: bytes) -> None:
        phone = self.links.get(connection.handle)
        if phone is None:
            return
        if handle == self.write_handle:
            phone.inbox.put_nowait(bytes(value))
        elif handle == self.cccd_handle and len(value) >= 1 and value[0] & 0x01:
            phone.on_subscribed()

    def read(self, handle: int) -> bytes:
        return b"\x01\x00" if handle == self.cccd_handle else b""
