#!/usr/bin/env python3
"""The IoT cloud and its devices for the widget rigs, as one MQTT client (paho-mqtt).

It plays the cloud of source document 001 (an ilop/"Living" IoT platform's widget): it answers the
widget's and the host app's API requests by path, publishes the devices' property changes on
`thing/properties` and their online state on `thing/status`, and takes scenario commands on a control
topic, from `--script FILE` and from stdin. docs/widget-mqtt.md is the whole protocol; this file
implements exactly that page. Topics, for account A (default `demo`):

  tether/A/api/request/{client_id}    widget/host -> cloud   {"id","path","version","params"}
  tether/A/api/response/{client_id}   cloud -> widget/host   {"id","code","message","data"}
  tether/A/thing/properties           cloud -> all           {"iotId","items":{prop:{"value","time"}}}
  tether/A/thing/status               cloud -> all           {"iotId","status":{"value":1|3,"time"}}
  tether/A/sim/control                scenario -> cloud      {"op":...}
  tether/A/sim/control/ack            cloud -> scenario      {"op","ok","detail"}

All QoS 1, nothing retained. The protocol (requests, world state, the per-device clock, control ops,
timers) lives in `Cloud`, which does no I/O and reads no clock: every call takes `now_ms` and
returns actions (`Publish`, `Log`) to carry out in order, and `next_deadline()` says when to call
`handle_timeout`. The paho wiring below it is thin: one thread feeds `Cloud` from a queue.

The CLI prints `READY` on stdout once connected and subscribed, logs every API call, notification
and control command as one JSON object per line on stderr (or `--log FILE`), reconnects and
resubscribes when the broker restarts, and exits 0 on SIGTERM or SIGINT.

Example (a broker from mqtt_broker.py on 1883):
    python3 Harness/rigs/iot_cloud.py --port 1883 --account demo
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import math
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# --- the protocol's constants (docs/widget-mqtt.md) ---------------------------------------------

QOS = 1
ONLINE, OFFLINE = 1, 3  # the Aliyun thing model's status values
OK, BAD_REQUEST, NOT_FOUND, DEVICE_OFFLINE = 200, 400, 404, 9201
DATA_TYPES = ("BOOL", "INT", "FLOAT", "TEXT", "ENUM")
ACCESS_MODES = ("rw", "r")
INJECTABLE_CODES = (BAD_REQUEST, DEVICE_OFFLINE)
DEFAULT_TEXT_MAX = 2048
MAX_PAGE_SIZE = 100
DEFAULT_STALE_AGE_MS = 1000

PATH_QUERY_PRODUCTS = "/iotx/ilop/queryComponentProduct"
PATH_UPDATE_PRODUCTS = "/iotx/ilop/updateComponentProduct"
PATH_QUERY_PROPERTIES = "/iotx/ilop/queryComponentProperty"
PATH_SET_PROPERTIES = "/thing/properties/set"
PATH_WIDGET_SCENES = "/living/appwidget/list"
PATH_QUERY_SCENES = "/living/scene/query"
PATH_UPDATE_SCENES = "/living/appwidget/create"
PATH_FIRE_SCENE = "/scene/fire"

CONTROL_OPS = ("set_property", "status", "fail_next_set", "delay_responses", "publish_stale", "periodic", "ping")


def client_id(role: str, account: str) -> str:
    """`host-demo`, `widget-demo`, `cloud-demo`."""
    return f"{role}-{account}"


class Topics:
    """The topics of one account."""

    def __init__(self, account: str):
        if not account or any(c in account for c in "/+#\0"):
            raise ValueError(f"account {account!r} must be one non-empty topic level (no / + # or NUL)")
        base = f"tether/{account}"
        self.account = account
        self.request_prefix = f"{base}/api/request/"
        self.request_filter = f"{base}/api/request/+"
        self.response_prefix = f"{base}/api/response/"
        self.properties = f"{base}/thing/properties"
        self.status = f"{base}/thing/status"
        self.control = f"{base}/sim/control"
        self.control_ack = f"{base}/sim/control/ack"

    def request(self, client: str) -> str:
        return self.request_prefix + client

    def response(self, client: str) -> str:
        return self.response_prefix + client


# --- actions --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Publish:
    """Publish `payload` (a JSON value) on `topic` at QoS 1, not retained."""

    topic: str
    payload: Any


@dataclass(frozen=True)
class Log:
    """One log record (a JSON object)."""

    record: dict


def encode(payload: Any) -> bytes:
    """The wire form of every payload: compact JSON, UTF-8."""
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


# --- the world ------------------------------------------------------------------------------------


class WorldError(ValueError):
    """The world file is wrong; the message names where."""


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return (is_int(value) or isinstance(value, float)) and math.isfinite(value)


@dataclass
class Property:
    """One property of a device: its spec and its current value and time."""

    name: str
    data_type: str
    access: str = "rw"
    minimum: float | None = None
    maximum: float | None = None
    enum: dict[int, str] = field(default_factory=dict)
    max_length: int = DEFAULT_TEXT_MAX
    value: Any = None
    time: int = 0

    @property
    def writable(self) -> bool:
        return self.access == "rw"

    def check(self, value: Any) -> tuple[Any, str | None]:
        """(the value as stored, None) or (None, why it does not fit this property)."""
        kind = self.data_type
        if kind == "BOOL":
            if is_int(value) and value in (0, 1):
                return value, None
            return None, f"{self.name} is BOOL and takes 0 or 1, not {json.dumps(value)}"
        if kind in ("INT", "FLOAT"):
            if kind == "INT" and not is_int(value):
                return None, f"{self.name} is INT and takes an integer, not {json.dumps(value)}"
            if kind == "FLOAT" and not is_number(value):
                return None, f"{self.name} is FLOAT and takes a number, not {json.dumps(value)}"
            if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
                return None, f"{self.name} takes {self.minimum} to {self.maximum}, not {value}"
            return (float(value) if kind == "FLOAT" else value), None
        if kind == "ENUM":
            if is_int(value) and value in self.enum:
                return value, None
            return None, f"{self.name} is ENUM and takes one of {sorted(self.enum)}, not {json.dumps(value)}"
        if isinstance(value, str) and len(value) <= self.max_length:
            return value, None
        return None, f"{self.name} is TEXT and takes a string of at most {self.max_length} characters"


@dataclass
class Device:
    iot_id: str
    product_key: str
    device_name: str
    nick_name: str
    status: int
    properties: dict[str, Property]
    status_time: int = 0
    last_time: int = 0  # the device's clock: the last time it gave out


@dataclass
class Scene:
    scene_id: str
    name: str
    enable: bool
    actions: list[tuple[str, dict]]  # (iotId, {prop: value}) in order


DEFAULT_WORLD = {
    "devices": [
        {
            "iotId": "lamp-0001", "productKey": "a1LampDemo", "deviceName": "lamp-01", "nickName": "Desk lamp",
            "status": ONLINE,
            "properties": {
                "powerstate": {"dataType": "BOOL", "value": 0},
                "brightness": {"dataType": "INT", "min": 0, "max": 100, "value": 60},
                "color": {"dataType": "ENUM", "values": {0: "white", 1: "warm", 2: "red"}, "value": 0},
            },
        },
        {
            "iotId": "plug-0001", "productKey": "a1PlugDemo", "deviceName": "plug-01", "nickName": "Kettle plug",
            "status": ONLINE,
            "properties": {
                "powerstate": {"dataType": "BOOL", "value": 1},
                "power": {"dataType": "FLOAT", "accessMode": "r", "min": 0, "max": 3000, "value": 0.0},
            },
        },
        {
            "iotId": "sensor-0001", "productKey": "a1SensorDemo", "deviceName": "sensor-01",
            "nickName": "Living room sensor", "status": ONLINE,
            "properties": {
                "temperature": {"dataType": "FLOAT", "accessMode": "r", "min": -40, "max": 85, "value": 22.5},
                "humidity": {"dataType": "INT", "accessMode": "r", "min": 0, "max": 100, "value": 45},
            },
        },
    ],
    "scenes": [
        {"sceneId": "scene-0001", "name": "Good night", "actions": [
            {"iotId": "lamp-0001", "items": {"powerstate": 0}},
            {"iotId": "plug-0001", "items": {"powerstate": 0}},
        ]},
        {"sceneId": "scene-0002", "name": "Reading", "actions": [
            {"iotId": "lamp-0001", "items": {"powerstate": 1, "brightness": 80, "color": 1}},
        ]},
        {"sceneId": "scene-0003", "name": "Away", "enable": False, "actions": [
            {"iotId": "plug-0001", "items": {"powerstate": 0}},
        ]},
    ],
    "widget": {"devices": ["lamp-0001", "plug-0001", "sensor-0001"], "scenes": ["scene-0001", "scene-0002"]},
}


def _need(mapping: Any, key: str, where: str, kind, kind_name: str):
    if not isinstance(mapping, dict) or key not in mapping:
        raise WorldError(f"{where}: {key!r} is missing")
    value = mapping[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise WorldError(f"{where}.{key}: expected {kind_name}, got {json.dumps(value, default=str)}")
    return value


def _parse_property(name: str, spec: Any, where: str) -> Property:
    if not isinstance(spec, dict):
        raise WorldError(f"{where}: expected a mapping")
    unknown = set(spec) - {"dataType", "accessMode", "min", "max", "values", "maxLength", "value"}
    if unknown:
        raise WorldError(f"{where}: unknown keys {sorted(unknown)}")
    data_type = _need(spec, "dataType", where, str, "a string")
    if data_type not in DATA_TYPES:
        raise WorldError(f"{where}.dataType: {data_type!r} is not one of {', '.join(DATA_TYPES)}")
    access = spec.get("accessMode", "rw")
    if access not in ACCESS_MODES:
        raise WorldError(f"{where}.accessMode: {access!r} is not rw or r")
    prop = Property(name=name, data_type=data_type, access=access)
    for key in ("min", "max"):
        if key in spec:
            if data_type not in ("INT", "FLOAT") or not is_number(spec[key]):
                raise WorldError(f"{where}.{key}: only INT and FLOAT take a numeric {key}")
    prop.minimum, prop.maximum = spec.get("min"), spec.get("max")
    if data_type == "ENUM":
        values = spec.get("values")
        if not isinstance(values, dict) or not values:
            raise WorldError(f"{where}.values: ENUM needs a non-empty mapping of integer -> name")
        for key, label in values.items():
            try:
                number = int(key)
            except (TypeError, ValueError):
                raise WorldError(f"{where}.values: {key!r} is not an integer") from None
            if isinstance(key, bool) or str(number) != str(key).strip():
                raise WorldError(f"{where}.values: {key!r} is not an integer")
            if not isinstance(label, str):
                raise WorldError(f"{where}.values.{key}: the name must be a string, not {label!r} "
                                 "(quote it in YAML, where on/off/yes/no are booleans)")
            prop.enum[number] = label
    elif "values" in spec:
        raise WorldError(f"{where}.values: only ENUM takes values")
    if "maxLength" in spec:
        if data_type != "TEXT" or not is_int(spec["maxLength"]) or spec["maxLength"] < 0:
            raise WorldError(f"{where}.maxLength: only TEXT takes a maxLength (an integer >= 0)")
        prop.max_length = spec["maxLength"]
    if "value" not in spec:
        raise WorldError(f"{where}: 'value' is missing")
    value, why = prop.check(spec["value"])
    if why:
        raise WorldError(f"{where}.value: {why}")
    prop.value = value
    return prop


def parse_world(world: Any) -> tuple[dict[str, Device], dict[str, Scene], list[str], list[str]]:
    """(devices, scenes, widget device ids, widget scene ids) from a world document; WorldError if wrong."""
    if not isinstance(world, dict):
        raise WorldError("world: expected a mapping with devices, scenes and widget")
    unknown = set(world) - {"devices", "scenes", "widget"}
    if unknown:
        raise WorldError(f"world: unknown keys {sorted(unknown)}")
    devices: dict[str, Device] = {}
    for index, entry in enumerate(_need(world, "devices", "world", list, "a list")):
        where = f"devices[{index}]"
        if not isinstance(entry, dict):
            raise WorldError(f"{where}: expected a mapping")
        unknown = set(entry) - {"iotId", "productKey", "deviceName", "nickName", "status", "properties"}
        if unknown:
            raise WorldError(f"{where}: unknown keys {sorted(unknown)}")
        iot_id = _need(entry, "iotId", where, str, "a string")
        if not iot_id or iot_id in devices:
            raise WorldError(f"{where}.iotId: {iot_id!r} is empty or used twice")
        status = entry.get("status", ONLINE)
        if status not in (ONLINE, OFFLINE) or isinstance(status, bool):
            raise WorldError(f"{where}.status: 1 (online) or 3 (offline), not {status!r}")
        props = _need(entry, "properties", where, dict, "a mapping")
        devices[iot_id] = Device(
            iot_id=iot_id,
            product_key=_need(entry, "productKey", where, str, "a string"),
            device_name=_need(entry, "deviceName", where, str, "a string"),
            nick_name=entry.get("nickName", entry["deviceName"]),
            status=status,
            properties={str(name): _parse_property(str(name), spec, f"{where}.properties.{name}")
                        for name, spec in props.items()},
        )
        if not isinstance(devices[iot_id].nick_name, str):
            raise WorldError(f"{where}.nickName: expected a string")
    scenes: dict[str, Scene] = {}
    scene_entries = world.get("scenes", [])
    if not isinstance(scene_entries, list):
        raise WorldError("world.scenes: expected a list")
    for index, entry in enumerate(scene_entries):
        where = f"scenes[{index}]"
        scene_id = _need(entry, "sceneId", where, str, "a string")
        unknown = set(entry) - {"sceneId", "name", "enable", "actions"}
        if unknown:
            raise WorldError(f"{where}: unknown keys {sorted(unknown)}")
        if not scene_id or scene_id in scenes:
            raise WorldError(f"{where}.sceneId: {scene_id!r} is empty or used twice")
        enable = entry.get("enable", True)
        if not isinstance(enable, bool):
            raise WorldError(f"{where}.enable: expected true or false")
        actions = []
        seen = set()
        for number, action in enumerate(_need(entry, "actions", where, list, "a list")):
            at = f"{where}.actions[{number}]"
            iot_id = _need(action, "iotId", at, str, "a string")
            if set(action) - {"iotId", "items"}:
                raise WorldError(f"{at}: unknown keys {sorted(set(action) - {'iotId', 'items'})}")
            if iot_id not in devices:
                raise WorldError(f"{at}.iotId: no device {iot_id!r}")
            if iot_id in seen:
                raise WorldError(f"{at}.iotId: {iot_id!r} has two actions in one scene")
            seen.add(iot_id)
            items = _need(action, "items", at, dict, "a mapping")
            normalised, why = _check_items(devices[iot_id], items, device_side=False)
            if why:
                raise WorldError(f"{at}.items: {why[1]}")
            actions.append((iot_id, normalised))
        scenes[scene_id] = Scene(scene_id, _need(entry, "name", where, str, "a string"), enable, actions)
    widget = world.get("widget", {})
    if not isinstance(widget, dict) or set(widget) - {"devices", "scenes"}:
        raise WorldError("widget: expected a mapping with devices and scenes")
    widget_devices = _id_list(widget.get("devices", []), devices, "widget.devices", "device")
    widget_scenes = _id_list(widget.get("scenes", []), scenes, "widget.scenes", "scene")
    return devices, scenes, widget_devices, widget_scenes


def _id_list(ids: Any, known: dict, where: str, what: str) -> list[str]:
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids) or len(set(ids)) != len(ids):
        raise WorldError(f"{where}: expected a list of distinct {what} ids")
    for i in ids:
        if i not in known:
            raise WorldError(f"{where}: no {what} {i!r}")
    return list(ids)


def _check_items(device: Device, items: Any, device_side: bool) -> tuple[dict, tuple[int, str] | None]:
    """({prop: stored value}, None) or ({}, (400, why)). The device itself may write read-only
    properties (`device_side`); the API may not."""
    if not isinstance(items, dict) or not items:
        return {}, (BAD_REQUEST, "items must be a non-empty object of property: value")
    normalised = {}
    for name, value in items.items():
        prop = device.properties.get(name)
        if prop is None:
            return {}, (BAD_REQUEST, f"device {device.iot_id} has no property {name!r}")
        if not device_side and not prop.writable:
            return {}, (BAD_REQUEST, f"property {name} of device {device.iot_id} is read-only")
        stored, why = prop.check(value)
        if why:
            return {}, (BAD_REQUEST, why)
        normalised[name] = stored
    return normalised, None


def load_document(path: Path) -> Any:
    """A world or script document from a .json file, else YAML (.yaml, .yml). OSError if it cannot
    be read, WorldError if it does not parse."""
    text = Path(path).read_text()
    if Path(path).suffix.lower() == ".json":
        try:
            return json.loads(text)
        except ValueError as error:
            raise WorldError(f"{path}: not JSON: {error}") from None
    import yaml  # PyYAML (requirements.txt); only needed for YAML files

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise WorldError(f"{path}: not YAML: {error}") from None


def parse_script(entries: Any) -> list[tuple[int, dict]]:
    """[(at_ms, command)] from a script document: a list of {"at_ms": N, "op": ..., ...}.
    WorldError names the first bad entry."""
    if not isinstance(entries, list):
        raise WorldError("script: expected a list of {at_ms, op, ...}")
    commands = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict) or not is_int(entry.get("at_ms")) or entry["at_ms"] < 0:
            raise WorldError(f"script[{index}]: needs at_ms, an integer >= 0")
        if entry.get("op") not in CONTROL_OPS:
            raise WorldError(f"script[{index}]: op {entry.get('op')!r} is not one of {', '.join(CONTROL_OPS)}")
        commands.append((entry["at_ms"], {k: v for k, v in entry.items() if k != "at_ms"}))
    return commands


# --- the cloud (no I/O) ---------------------------------------------------------------------------


class ApiError(Exception):
    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


class Cloud:
    """The cloud and its devices: API requests, control commands, timers. No I/O, no clock.

    Give one input (`receive`, `control`, `handle_timeout`) with the current time in milliseconds
    since the epoch, carry out the returned actions in order, then ask `next_deadline()`.
    `now_ms` may go backwards (the device clocks do not: each gives max(now, last + 1)).
    """

    def __init__(self, now_ms: int, world: Any = None, account: str = "demo"):
        self.topics = Topics(account)
        self.account = account
        self.devices, self.scenes, self.widget_devices, self.widget_scenes = parse_world(
            DEFAULT_WORLD if world is None else world)
        for device in self.devices.values():
            stamp = self._tick(device, now_ms)
            device.status_time = stamp
            for prop in device.properties.values():
                prop.time = stamp
        self.response_delay_ms = 0
        self.fail_next: dict[str, tuple[int, str]] = {}  # iotId -> (code, message)
        self._timers: list[tuple[int, int, str, Any]] = []  # heap of (due, seq, kind, data)
        self._seq = itertools.count()
        self._last_request_due = 0
        self._periodic: dict[tuple[str, str], int] = {}  # (iotId, prop) -> the live job's seq

    # --- inputs ---
    def receive(self, topic: str, payload: bytes, now_ms: int) -> list:
        """A message on one of the cloud's subscriptions (a request or a control command)."""
        if topic.startswith(self.topics.request_prefix):
            client = topic[len(self.topics.request_prefix):]
            if self.response_delay_ms > 0 or self._last_request_due > now_ms:
                due = max(now_ms + self.response_delay_ms, self._last_request_due)
                self._last_request_due = due
                self._schedule(due, "request", (client, payload, now_ms))
                return [Log({"event": "api_delayed", "client": client, "until": due})]
            return self._handle_request(client, payload, now_ms, now_ms)
        if topic == self.topics.control:
            try:
                command = json.loads(payload)
            except (ValueError, UnicodeDecodeError):
                return self._ack(None, False, "the control message is not JSON", "mqtt", payload)
            return self.control(command, now_ms, source="mqtt")
        return [Log({"event": "ignored", "topic": topic})]

    def control(self, command: Any, now_ms: int, source: str = "stdin") -> list:
        """A scenario command (docs/widget-mqtt.md, "Control"); always answered with one ack."""
        op = command.get("op") if isinstance(command, dict) else None
        handler = getattr(self, f"_op_{op}", None) if op in CONTROL_OPS else None
        if handler is None:
            why = "a control command is a JSON object with \"op\"" if not isinstance(command, dict) or op is None \
                else f"unknown op {op!r}; one of {', '.join(CONTROL_OPS)}"
            return self._ack(command, False, why, source)
        try:
            detail, actions = handler(command, now_ms)
        except ApiError as error:
            return self._ack(command, False, error.message, source)
        return self._ack(command, True, detail, source) + actions

    def handle_timeout(self, now_ms: int) -> list:
        """Run every timer due at `now_ms` (an early call does nothing)."""
        actions = []
        while self._timers and self._timers[0][0] <= now_ms:
            due, seq, kind, data = heapq.heappop(self._timers)
            if kind == "request":
                client, payload, received = data
                actions += self._handle_request(client, payload, now_ms, received)
            elif kind == "script":
                actions += self.control(data, now_ms, source="script")
            elif kind == "periodic":
                actions += self._periodic_report(seq, data, due, now_ms)
        return actions

    def next_deadline(self) -> int | None:
        return self._timers[0][0] if self._timers else None

    def load_script(self, entries: Any, now_ms: int) -> None:
        """Schedule a script's commands (see parse_script), each `at_ms` after `now_ms`.
        Raises WorldError, scheduling nothing, when an entry is malformed."""
        for at_ms, command in parse_script(entries):
            self._schedule(now_ms + at_ms, "script", command)

    # --- the clock ---
    @staticmethod
    def _tick(device: Device, now_ms: int) -> int:
        stamp = max(int(now_ms), device.last_time + 1)
        device.last_time = stamp
        return stamp

    def _schedule(self, due: int, kind: str, data: Any) -> int:
        seq = next(self._seq)
        heapq.heappush(self._timers, (due, seq, kind, data))
        return seq

    # --- API ---
    def _handle_request(self, client: str, payload: bytes, now_ms: int, received_ms: int) -> list:
        request_id = ""
        request: Any = None
        after: list = []
        try:
            try:
                request = json.loads(payload)
            except (ValueError, UnicodeDecodeError):
                raise ApiError(BAD_REQUEST, "the request is not JSON") from None
            if not isinstance(request, dict):
                raise ApiError(BAD_REQUEST, "the request is not a JSON object")
            if isinstance(request.get("id"), str):
                request_id = request["id"]
            else:
                raise ApiError(BAD_REQUEST, "the request has no \"id\" string")
            path = request.get("path")
            if not isinstance(path, str):
                raise ApiError(BAD_REQUEST, "the request has no \"path\" string")
            params = request.get("params", {})
            if not isinstance(params, dict):
                raise ApiError(BAD_REQUEST, "\"params\" must be a JSON object")
            handler = self.API.get(path)
            if handler is None:
                raise ApiError(NOT_FOUND, f"unknown API path {path}")
            data, after = handler(self, params, now_ms)
            response = {"id": request_id, "code": OK, "message": "success", "data": data}
        except ApiError as error:
            response = {"id": request_id, "code": error.code, "message": error.message, "data": None}
            after = []
        shown = request if request is not None else payload.decode("utf-8", "replace")
        record = {"event": "api", "client": client, "request": shown, "response": response}
        if now_ms != received_ms:
            record["delayed_ms"] = now_ms - received_ms
        return [Log(record), Publish(self.topics.response(client), response)] + after

    def _device(self, params: dict, key: str = "iotId") -> Device:
        iot_id = params.get(key)
        if not isinstance(iot_id, str):
            raise ApiError(BAD_REQUEST, f"params.{key} must be a string")
        device = self.devices.get(iot_id)
        if device is None:
            raise ApiError(NOT_FOUND, f"no device {iot_id}")
        return device

    def _api_query_products(self, _params, _now):
        return [self._product(self.devices[i]) for i in self.widget_devices], []

    @staticmethod
    def _product(device: Device) -> dict:
        return {"iotId": device.iot_id, "productKey": device.product_key, "deviceName": device.device_name,
                "nickName": device.nick_name, "status": device.status}

    def _api_update_products(self, params, _now):
        self.widget_devices = self._ids(params, "iotIds", self.devices, "device")
        return None, []

    def _ids(self, params: dict, key: str, known: dict, what: str) -> list[str]:
        ids = params.get(key)
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise ApiError(BAD_REQUEST, f"params.{key} must be a list of {what} id strings")
        if len(set(ids)) != len(ids):
            raise ApiError(BAD_REQUEST, f"params.{key} lists a {what} twice")
        for i in ids:
            if i not in known:
                raise ApiError(NOT_FOUND, f"no {what} {i}")
        return list(ids)

    def _api_query_properties(self, params, _now):
        device = self._device(params)
        product_key = params.get("productKey")
        if product_key is not None and product_key != device.product_key:
            raise ApiError(BAD_REQUEST, f"productKey {product_key} is not device {device.iot_id}'s ({device.product_key})")
        query = params.get("query", {})
        if not isinstance(query, dict):
            raise ApiError(BAD_REQUEST, "params.query must be an object")
        data_type = query.get("dataType")
        if data_type is not None and data_type not in DATA_TYPES:
            raise ApiError(BAD_REQUEST, f"query.dataType must be one of {', '.join(DATA_TYPES)}")
        language = query.get("I18Language")
        if language is not None and not isinstance(language, str):
            raise ApiError(BAD_REQUEST, "query.I18Language must be a string")
        items = {name: {"value": prop.value, "time": prop.time} for name, prop in device.properties.items()
                 if data_type is None or prop.data_type == data_type}
        return {"iotId": device.iot_id, "items": items}, []

    def _api_set_properties(self, params, now_ms):
        device = self._device(params)
        failure = self.fail_next.pop(device.iot_id, None)
        if failure is not None:
            raise ApiError(*failure)
        if device.status != ONLINE:
            raise ApiError(DEVICE_OFFLINE, f"device {device.iot_id} is offline")
        items, why = _check_items(device, params.get("items"), device_side=False)
        if why:
            raise ApiError(*why)
        return None, [self._apply(device, items, now_ms)]

    def _api_widget_scenes(self, _params, _now):
        return [{"sceneId": s, "name": self.scenes[s].name} for s in self.widget_scenes], []

    def _api_query_scenes(self, params, _now):
        catalog = params.get("catalogId", "0")
        page_no = params.get("pageNo", 1)
        page_size = params.get("pageSize", 20)
        if not isinstance(catalog, str):
            raise ApiError(BAD_REQUEST, "params.catalogId must be a string")
        if not is_int(page_no) or page_no < 1:
            raise ApiError(BAD_REQUEST, "params.pageNo must be an integer >= 1")
        if not is_int(page_size) or not 1 <= page_size <= MAX_PAGE_SIZE:
            raise ApiError(BAD_REQUEST, f"params.pageSize must be an integer 1 to {MAX_PAGE_SIZE}")
        scenes = list(self.scenes.values()) if catalog == "0" else []
        page = scenes[(page_no - 1) * page_size: page_no * page_size]
        return {"total": len(scenes), "pageNo": page_no, "pageSize": page_size,
                "data": [{"sceneId": s.scene_id, "name": s.name, "enable": s.enable} for s in page]}, []

    def _api_update_scenes(self, params, _now):
        self.widget_scenes = self._ids(params, "sceneIds", self.scenes, "scene")
        return None, []

    def _api_fire_scene(self, params, now_ms):
        scene_id = params.get("sceneId")
        if not isinstance(scene_id, str):
            raise ApiError(BAD_REQUEST, "params.sceneId must be a string")
        scene = self.scenes.get(scene_id)
        if scene is None:
            raise ApiError(NOT_FOUND, f"no scene {scene_id}")
        if not scene.enable:
            raise ApiError(BAD_REQUEST, f"scene {scene_id} is disabled")
        skipped, after = [], []
        for iot_id, items in scene.actions:
            device = self.devices[iot_id]
            if device.status != ONLINE:
                skipped.append(iot_id)
            else:
                after.append(self._apply(device, items, now_ms))
        return {"skipped": skipped}, after

    API = {
        PATH_QUERY_PRODUCTS: _api_query_products,
        PATH_UPDATE_PRODUCTS: _api_update_products,
        PATH_QUERY_PROPERTIES: _api_query_properties,
        PATH_SET_PROPERTIES: _api_set_properties,
        PATH_WIDGET_SCENES: _api_widget_scenes,
        PATH_QUERY_SCENES: _api_query_scenes,
        PATH_UPDATE_SCENES: _api_update_scenes,
        PATH_FIRE_SCENE: _api_fire_scene,
    }

    # --- state changes and notifications ---
    def _apply(self, device: Device, items: dict, now_ms: int) -> Publish:
        """Store `items` (already checked) with one new time; the thing/properties notification."""
        stamp = self._tick(device, now_ms)
        for name, value in items.items():
            device.properties[name].value = value
            device.properties[name].time = stamp
        return self._properties(device.iot_id, {name: (value, stamp) for name, value in items.items()})

    def _properties(self, iot_id: str, items: dict) -> Publish:
        payload = {"iotId": iot_id, "items": {name: {"value": value, "time": stamp}
                                               for name, (value, stamp) in items.items()}}
        return Publish(self.topics.properties, payload)

    # --- control ops: each returns (detail, actions) or raises ApiError (ok: false) ---
    def _ack(self, command: Any, ok: bool, detail: str, source: str, raw: bytes | None = None) -> list:
        op = command.get("op") if isinstance(command, dict) else None
        ack = {"op": op if isinstance(op, str) else None, "ok": ok, "detail": detail}
        if isinstance(command, dict) and "id" in command:
            ack["id"] = command["id"]
        shown = command if raw is None else raw.decode("utf-8", "replace")
        return [Log({"event": "control", "source": source, "command": shown, "ack": ack}),
                Publish(self.topics.control_ack, ack)]

    def _control_device(self, command: dict) -> Device:
        try:
            return self._device(command)
        except ApiError as error:
            raise ApiError(error.code, error.message.replace("params.", "")) from None

    def _op_ping(self, _command, _now):
        return "pong", []

    def _op_set_property(self, command, now_ms):
        device = self._control_device(command)
        if device.status != ONLINE:
            raise ApiError(DEVICE_OFFLINE, f"device {device.iot_id} is offline; send status 1 first")
        items, why = _check_items(device, command.get("items"), device_side=True)
        if why:
            raise ApiError(*why)
        return f"{device.iot_id} reported {', '.join(items)}", [self._apply(device, items, now_ms)]

    def _op_status(self, command, now_ms):
        device = self._control_device(command)
        value = command.get("value")
        if value not in (ONLINE, OFFLINE) or isinstance(value, bool):
            raise ApiError(BAD_REQUEST, "value must be 1 (online) or 3 (offline)")
        device.status = value
        device.status_time = self._tick(device, now_ms)
        payload = {"iotId": device.iot_id, "status": {"value": value, "time": device.status_time}}
        return f"{device.iot_id} is {'online' if value == ONLINE else 'offline'}", [Publish(self.topics.status, payload)]

    def _op_fail_next_set(self, command, _now):
        device = self._control_device(command)
        code = command.get("code", DEVICE_OFFLINE)
        if code not in INJECTABLE_CODES or isinstance(code, bool):
            raise ApiError(BAD_REQUEST, f"code must be one of {list(INJECTABLE_CODES)}")
        message = command.get("message")
        if message is None:
            message = f"device {device.iot_id} is offline" if code == DEVICE_OFFLINE else "request rejected by the device"
        elif not isinstance(message, str):
            raise ApiError(BAD_REQUEST, "message must be a string")
        self.fail_next[device.iot_id] = (code, message)
        return f"the next {PATH_SET_PROPERTIES} on {device.iot_id} answers {code}", []

    def _op_delay_responses(self, command, _now):
        ms = command.get("ms")
        if not is_int(ms) or ms < 0:
            raise ApiError(BAD_REQUEST, "ms must be an integer >= 0")
        self.response_delay_ms = ms
        return f"API requests are handled {ms} ms after they arrive", []

    def _op_publish_stale(self, command, _now):
        device = self._control_device(command)
        items, why = _check_items(device, command.get("items"), device_side=True)
        if why:
            raise ApiError(*why)
        age = command.get("age_ms", DEFAULT_STALE_AGE_MS)
        if not is_int(age) or age < 1:
            raise ApiError(BAD_REQUEST, "age_ms must be an integer >= 1")
        stamp = min(device.properties[name].time for name in items) - age
        publish = self._properties(device.iot_id, {name: (value, stamp) for name, value in items.items()})
        return f"stale {', '.join(items)} of {device.iot_id} at time {stamp}", [publish]

    def _op_periodic(self, command, now_ms):
        device = self._control_device(command)
        name = command.get("prop")
        prop = device.properties.get(name) if isinstance(name, str) else None
        if prop is None:
            raise ApiError(BAD_REQUEST, f"device {device.iot_id} has no property {name!r}")
        every, count = command.get("every_ms"), command.get("count")
        if not is_int(every) or every < 1:
            raise ApiError(BAD_REQUEST, "every_ms must be an integer >= 1")
        if not is_int(count) or count < 0:
            raise ApiError(BAD_REQUEST, "count must be an integer >= 0 (0 stops a running report)")
        values = command.get("values")
        if values is not None:
            if not isinstance(values, list) or not values:
                raise ApiError(BAD_REQUEST, "values must be a non-empty list")
            checked = []
            for value in values:
                stored, why = prop.check(value)
                if why:
                    raise ApiError(BAD_REQUEST, why)
                checked.append(stored)
            values = checked
        elif prop.data_type == "TEXT":
            raise ApiError(BAD_REQUEST, f"{name} is TEXT: give values to report")
        step = command.get("step", 1 if prop.data_type == "INT" else 0.1)
        if not is_number(step) or (prop.data_type == "INT" and not is_int(step)):
            raise ApiError(BAD_REQUEST, "step must be a number (an integer for INT)")
        key = (device.iot_id, name)
        self._periodic.pop(key, None)
        if count == 0:
            return f"no more reports of {name} on {device.iot_id}", []
        job = {"iotId": device.iot_id, "prop": name, "every": every, "left": count, "values": values,
               "index": 0, "step": step}
        self._periodic[key] = self._schedule(now_ms + every, "periodic", job)
        return f"{count} reports of {name} on {device.iot_id} every {every} ms", []

    def _periodic_report(self, seq: int, job: dict, due: int, now_ms: int) -> list:
        key = (job["iotId"], job["prop"])
        if self._periodic.get(key) != seq:
            return []  # replaced or stopped
        del self._periodic[key]
        device = self.devices[job["iotId"]]
        prop = device.properties[job["prop"]]
        job["left"] -= 1
        if job["left"] > 0:
            self._periodic[key] = self._schedule(due + job["every"], "periodic", job)
        if device.status != ONLINE:
            return [Log({"event": "periodic_skipped", "iotId": device.iot_id, "prop": prop.name,
                         "reason": "device offline"})]
        if job["values"] is not None:
            value = job["values"][job["index"] % len(job["values"])]
            job["index"] += 1
        else:
            value = self._next_value(prop, job["step"])
        return [self._apply(device, {prop.name: value}, now_ms)]

    @staticmethod
    def _next_value(prop: Property, step: float) -> Any:
        """The next report of a sensor without scripted values: BOOL toggles, ENUM cycles,
        INT/FLOAT go up by `step` and wrap from max to min."""
        if prop.data_type == "BOOL":
            return 1 - prop.value
        if prop.data_type == "ENUM":
            keys = sorted(prop.enum)
            return keys[(keys.index(prop.value) + 1) % len(keys)]
        value = prop.value + step
        if prop.data_type == "FLOAT":
            value = round(value, 6)
        if prop.maximum is not None and value > prop.maximum:
            value = prop.minimum if prop.minimum is not None else prop.value
        return float(value) if prop.data_type == "FLOAT" else value


# --- the MQTT wiring ------------------------------------------------------------------------------


def no_delay(sock) -> None:
    """TCP_NODELAY on a paho socket. paho leaves Nagle on, so a small publish that follows a PUBACK
    waits for the broker's delayed ACK (40 ms on Linux): each request would take about 90 ms."""
    import socket

    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (OSError, AttributeError):
        pass  # not a TCP socket


class EpochClock:
    """Milliseconds since the epoch that never go backwards: the epoch at start plus monotonic time."""

    def __init__(self):
        self._epoch = time.time()
        self._start = time.monotonic()

    def now_ms(self) -> int:
        return int((self._epoch + time.monotonic() - self._start) * 1000)


class Simulator:
    """Cloud behind a paho client: paho's thread and stdin's thread feed one queue; this thread
    runs Cloud and publishes. Reconnects and resubscribes by itself."""

    RECONNECT_MIN_S = 0.05
    RECONNECT_MAX_S = 0.5

    def __init__(self, args, cloud: Cloud, clock: EpochClock, log_file):
        import paho.mqtt.client as mqtt

        self.mqtt = mqtt
        self.args = args
        self.cloud = cloud
        self.clock = clock
        self.log_file = log_file
        self.events: queue.Queue = queue.Queue()
        self.stopping = False
        self.exit_code = 0
        self.connected = False
        self.ready = False
        self.script = None
        version = mqtt.MQTTProtocolVersion.MQTTv5 if args.mqtt_version == "5" else mqtt.MQTTProtocolVersion.MQTTv311
        self.client = mqtt.Client(
            callback_api_version=mqtt.CallbackAPIVersion.VERSION2,
            client_id=client_id("cloud", args.account),
            protocol=version,
            **({} if version == mqtt.MQTTProtocolVersion.MQTTv5 else {"clean_session": True}),
        )
        self.client.reconnect_delay_set(self.RECONNECT_MIN_S, self.RECONNECT_MAX_S)
        self.client.on_socket_open = lambda _c, _u, sock: no_delay(sock)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda _c, _u, _mid, codes, _p: self.events.put(("subscribed", codes))
        self.client.on_disconnect = lambda _c, _u, _f, code, _p: self.events.put(("disconnected", str(code)))
        self.client.on_message = lambda _c, _u, msg: self.events.put(("message", msg.topic, msg.payload))

    def _on_connect(self, client, _userdata, _flags, code, _properties):
        if code.is_failure:
            self.events.put(("refused", str(code)))
            return
        topics = self.cloud.topics
        client.subscribe([(topics.request_filter, QOS), (topics.control, QOS)])
        self.events.put(("connected", None))

    def log(self, record: dict) -> None:
        line = json.dumps({"t": self.clock.now_ms(), **record}, separators=(",", ":"), ensure_ascii=False)
        print(line, file=self.log_file, flush=True)

    def carry_out(self, actions: list, echo_acks: bool = False) -> None:
        for action in actions:
            if isinstance(action, Log):
                self.log(action.record)
                continue
            if echo_acks and action.topic == self.cloud.topics.control_ack:
                print(json.dumps(action.payload, separators=(",", ":")), flush=True)
            if action.topic in (self.cloud.topics.properties, self.cloud.topics.status):
                self.log({"event": "notify", "topic": action.topic, "payload": action.payload})
            if not self.connected:
                self.log({"event": "dropped", "topic": action.topic, "reason": "not connected to the broker"})
                continue
            info = self.client.publish(action.topic, encode(action.payload), qos=QOS, retain=False)
            if info.rc != self.mqtt.MQTTErrorCode.MQTT_ERR_SUCCESS:
                self.log({"event": "publish_failed", "topic": action.topic, "rc": int(info.rc)})

    def read_stdin(self) -> None:
        for line in sys.stdin:
            if line.strip():
                self.events.put(("stdin", line))

    def run(self) -> int:
        v5 = self.args.mqtt_version == "5"
        self.client.connect_async(self.args.host, self.args.port, keepalive=10, **({"clean_start": True} if v5 else {}))
        self.client.loop_start()
        try:
            while not self.stopping:
                deadline = self.cloud.next_deadline()
                wait = 0.2 if deadline is None else min(0.2, max(0.0, (deadline - self.clock.now_ms()) / 1000))
                try:
                    event = self.events.get(timeout=wait)
                except queue.Empty:
                    event = None
                if event is not None:
                    self.handle(event)
                self.carry_out(self.cloud.handle_timeout(self.clock.now_ms()))
        finally:
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
            self.client.disconnect()
            self.client.loop_stop()
            self.log({"event": "stopped"})
        return self.exit_code

    def handle(self, event: tuple) -> None:
        kind = event[0]
        if kind == "message":
            self.carry_out(self.cloud.receive(event[1], event[2], self.clock.now_ms()))
        elif kind == "stdin":
            try:
                command = json.loads(event[1])
            except ValueError:
                command = event[1].strip()
            self.carry_out(self.cloud.control(command, self.clock.now_ms(), source="stdin"), echo_acks=True)
        elif kind == "connected":
            self.connected = True
            self.log({"event": "connected", "broker": f"{self.args.host}:{self.args.port}",
                      "mqtt": self.args.mqtt_version, "client_id": client_id("cloud", self.args.account)})
        elif kind == "subscribed":
            codes = [int(c.value) for c in event[1]]
            topics = self.cloud.topics
            self.log({"event": "subscribed", "topics": [topics.request_filter, topics.control], "granted": codes})
            if any(c >= 0x80 for c in codes):
                self.log({"event": "error", "reason": "the broker refused a subscription"})
                self.stopping = True
                self.exit_code = 1
            elif not self.ready:
                self.ready = True
                if self.script is not None:
                    self.cloud.load_script(self.script, self.clock.now_ms())
                print("READY", flush=True)
                # Commands from stdin are read from now on, so their acks follow READY on stdout.
                threading.Thread(target=self.read_stdin, name="stdin", daemon=True).start()
        elif kind == "disconnected":
            self.connected = False
            self.log({"event": "disconnected", "reason": event[1]})
        elif kind == "refused":
            self.log({"event": "refused", "reason": event[1]})


def main() -> int:
    # A rig started by a Swift host may inherit blocked stop signals (see bumble_local.py).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="Examples:\n"
        "  iot_cloud.py --port 1883\n"
        "  iot_cloud.py --port 1883 --account demo --world world.yaml --mqtt-version 5 --script scenario.yaml\n"
        "The protocol, the world file and the control ops: docs/widget-mqtt.md.",
    )
    parser.add_argument("--host", default="127.0.0.1", help="the broker's address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=1883, help="the broker's port (default 1883)")
    parser.add_argument("--account", default="demo", help="the account: topics tether/ACCOUNT/... (default demo)")
    parser.add_argument("--world", type=Path, help="devices, scenes and the widget's lists (.yaml/.yml/.json); "
                        "default: the built-in world")
    parser.add_argument("--mqtt-version", choices=("3.1.1", "5"), default="3.1.1", help="default 3.1.1")
    parser.add_argument("--script", type=Path, help="control commands at times: a list of {at_ms, op, ...} "
                        "(.yaml/.yml/.json); at_ms counts from READY")
    parser.add_argument("--log", type=Path, help="write the JSON-lines log here instead of stderr")
    args = parser.parse_args()
    if not 1 <= args.port <= 65535:
        parser.error("--port must be 1 to 65535")

    clock = EpochClock()
    try:
        world = load_document(args.world) if args.world else None
        cloud = Cloud(clock.now_ms(), world, args.account)
        script = load_document(args.script) if args.script else None
        if script is not None:
            parse_script(script)  # checked now, scheduled at READY
    except (OSError, ValueError) as error:  # WorldError is a ValueError
        print(f"iot_cloud.py: {error}", file=sys.stderr)
        return 2

    try:
        import paho.mqtt.client  # noqa: F401
    except ImportError:
        print("iot_cloud.py: paho-mqtt is not installed; python3 -m pip install -r Harness/rigs/requirements.txt, "
              "or run ./CI/test which installs it", file=sys.stderr)
        return 2
    log_file = open(args.log, "a") if args.log else sys.stderr
    simulator = Simulator(args, cloud, clock, log_file)
    simulator.script = script

    def on_signal(_signum, _frame):
        simulator.stopping = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        return simulator.run()
    finally:
        if args.log:
            log_file.close()


if __name__ == "__main__":
    sys.exit(main())
