"""Tests of the IoT widget rigs: the cloud simulator's protocol core, then everything over a real broker.

Run with `python3 -m pytest Harness/rigs -q`. The first half calls `iot_cloud.Cloud` (no I/O, no
clock: every call takes `now_ms`) directly. The second half starts mosquitto through mqtt_broker.py
on a free loopback port (one broker for the module; the restart tests start their own),
iot_cloud.py as a process with an account of its own per test, and plays the widget with a paho
client, in MQTT 3.1.1 or 5. docs/widget-mqtt.md is the protocol these tests hold the rigs to.
"""

import itertools
import json
import os
import queue
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import pytest

RIGS = Path(__file__).resolve().parent
sys.path.insert(0, str(RIGS))

import iot_cloud  # noqa: E402
import mqtt_broker  # noqa: E402
from iot_cloud import Cloud, Log, Publish  # noqa: E402
from test_ciq_rigs import Process, time_limit  # noqa: E402,F401  (time_limit: the autouse alarm)

T0 = 1_700_000_000_000  # a "now" for the core, in ms since the epoch
LAMP, PLUG, SENSOR = "lamp-0001", "plug-0001", "sensor-0001"
NIGHT, READING, AWAY = "scene-0001", "scene-0002", "scene-0003"
WIDGET = "widget-demo"
TOPICS = iot_cloud.Topics("demo")
WAIT_S = 5.0  # for one MQTT message
QUIET_S = 0.4  # to show that nothing arrives


# =============================================================================================
# Cloud: the protocol core, no I/O
# =============================================================================================


def request_bytes(path, params=None, request_id="r1", **extra):
    body = {"id": request_id, "path": path, "version": "1.0.0", "params": {} if params is None else params}
    body.update(extra)
    return json.dumps(body).encode()


def call(cloud, path, params=None, now=T0 + 1000, client=WIDGET, request_id="r1"):
    """(response payload, every Publish after it) for one request handled at once."""
    actions = cloud.receive(TOPICS.request(client), request_bytes(path, params, request_id), now)
    return split_response(actions, client)


def split_response(actions, client=WIDGET):
    publishes = [a for a in actions if isinstance(a, Publish)]
    assert publishes and publishes[0].topic == TOPICS.response(client), actions
    return publishes[0].payload, publishes[1:]


def ok(cloud, path, params=None, now=T0 + 1000):
    response, after = call(cloud, path, params, now)
    assert (response["code"], response["message"]) == (200, "success"), response
    return response["data"], after


def error_code(cloud, path, params=None, now=T0 + 1000):
    response, after = call(cloud, path, params, now)
    assert after == [] and response["data"] is None and response["message"], response
    return response["code"]


def control(cloud, now=T0 + 1000, **command):
    """(ack, the Publishes after the ack) for one control command."""
    publishes = [a for a in cloud.control(command, now) if isinstance(a, Publish)]
    assert publishes[0].topic == cloud.topics.control_ack
    return publishes[0].payload, publishes[1:]


def properties(iot_id, now, **items):
    return Publish(TOPICS.properties, {"iotId": iot_id, "items": {k: {"value": v, "time": now} for k, v in items.items()}})


def values(cloud, iot_id):
    data, _ = ok(cloud, iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": iot_id})
    return {name: item["value"] for name, item in data["items"].items()}


@pytest.fixture
def cloud():
    return Cloud(T0)


def test_default_world_lists_the_widget_devices_in_widget_order(cloud):
    data, after = ok(cloud, iot_cloud.PATH_QUERY_PRODUCTS)
    assert after == []
    assert data == [
        {"iotId": LAMP, "productKey": "a1LampDemo", "deviceName": "lamp-01", "nickName": "Desk lamp", "status": 1},
        {"iotId": PLUG, "productKey": "a1PlugDemo", "deviceName": "plug-01", "nickName": "Kettle plug", "status": 1},
        {"iotId": SENSOR, "productKey": "a1SensorDemo", "deviceName": "sensor-01",
         "nickName": "Living room sensor", "status": 1},
    ]


def test_update_component_product_sets_the_list_and_its_order(cloud):
    assert ok(cloud, iot_cloud.PATH_UPDATE_PRODUCTS, {"iotIds": [SENSOR, LAMP]}) == (None, [])
    assert [d["iotId"] for d in ok(cloud, iot_cloud.PATH_QUERY_PRODUCTS)[0]] == [SENSOR, LAMP]
    assert ok(cloud, iot_cloud.PATH_UPDATE_PRODUCTS, {"iotIds": []})[0] is None
    assert ok(cloud, iot_cloud.PATH_QUERY_PRODUCTS)[0] == []


@pytest.mark.parametrize("params,code", [
    ({"iotIds": [LAMP, "nope"]}, 404),
    ({"iotIds": [LAMP, LAMP]}, 400),
    ({"iotIds": LAMP}, 400),
    ({"iotIds": [1]}, 400),
    ({}, 400),
])
def test_update_component_product_refuses_a_bad_list_and_keeps_the_old_one(cloud, params, code):
    assert error_code(cloud, iot_cloud.PATH_UPDATE_PRODUCTS, params) == code
    assert [d["iotId"] for d in ok(cloud, iot_cloud.PATH_QUERY_PRODUCTS)[0]] == [LAMP, PLUG, SENSOR]


def test_query_component_property_gives_every_property_with_value_and_time(cloud):
    data, _ = ok(cloud, iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": LAMP, "productKey": "a1LampDemo"})
    assert data == {"iotId": LAMP, "items": {"powerstate": {"value": 0, "time": T0}, "brightness": {"value": 60, "time": T0},
                                             "color": {"value": 0, "time": T0}}}


@pytest.mark.parametrize("iot_id,data_type,names", [
    (LAMP, "BOOL", ["powerstate"]), (LAMP, "INT", ["brightness"]), (LAMP, "ENUM", ["color"]),
    (PLUG, "FLOAT", ["power"]), (SENSOR, "TEXT", []),
])
def test_query_component_property_filters_by_data_type(cloud, iot_id, data_type, names):
    params = {"iotId": iot_id, "query": {"dataType": data_type, "I18Language": "en-US"}}
    assert list(ok(cloud, iot_cloud.PATH_QUERY_PROPERTIES, params)[0]["items"]) == names


@pytest.mark.parametrize("params,code", [
    ({"iotId": "nope"}, 404),
    ({}, 400),
    ({"iotId": LAMP, "productKey": "a1PlugDemo"}, 400),
    ({"iotId": LAMP, "query": {"dataType": "DOUBLE"}}, 400),
    ({"iotId": LAMP, "query": "BOOL"}, 400),
    ({"iotId": LAMP, "query": {"I18Language": 7}}, 400),
])
def test_query_component_property_failures(cloud, params, code):
    assert error_code(cloud, iot_cloud.PATH_QUERY_PROPERTIES, params) == code


def test_property_set_answers_then_notifies_with_a_new_time(cloud):
    response, after = call(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"powerstate": 1, "brightness": 90}},
                           now=T0 + 500)
    assert response == {"id": "r1", "code": 200, "message": "success", "data": None}
    assert after == [properties(LAMP, T0 + 500, powerstate=1, brightness=90)]
    data, _ = ok(cloud, iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": LAMP, "query": {"dataType": "INT"}})
    assert data["items"] == {"brightness": {"value": 90, "time": T0 + 500}}


def test_property_set_of_a_float_stores_a_float(cloud):
    control(cloud, iotId=PLUG, op="set_property", items={"power": 12})
    assert values(cloud, PLUG)["power"] == 12.0 and isinstance(values(cloud, PLUG)["power"], float)


@pytest.mark.parametrize("items", [
    {"nope": 1},                      # unknown property
    {"temperature": 30.0},            # read-only (on the sensor below)
    {"powerstate": True},             # BOOL takes 0 or 1
    {"powerstate": 2},
    {"brightness": 1.5},              # INT
    {"brightness": 101},              # above max
    {"color": 7},                     # not an ENUM key
    {"color": "red"},
    {},                               # nothing to set
    {"powerstate": 1, "brightness": -1},  # one bad item: nothing changes
])
def test_property_set_refuses_bad_items_with_400_and_changes_nothing(cloud, items):
    target = SENSOR if "temperature" in items else LAMP
    before = values(cloud, target)
    assert error_code(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": target, "items": items}) == 400
    assert values(cloud, target) == before


def test_property_set_of_a_read_only_property_says_so(cloud):
    response, _ = call(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": PLUG, "items": {"power": 5}})
    assert response["code"] == 400 and "read-only" in response["message"]


def test_property_set_on_an_offline_device_is_9201(cloud):
    control(cloud, op="status", iotId=LAMP, value=3)
    response, after = call(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"powerstate": 1}})
    assert (response["code"], after) == (9201, [])
    assert "offline" in response["message"]


def test_property_set_on_an_unknown_device_is_404(cloud):
    assert error_code(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": "nope", "items": {"powerstate": 1}}) == 404


def test_device_clock_never_goes_backwards(cloud):
    set_params = {"iotId": LAMP, "items": {"brightness": 10}}
    assert call(cloud, iot_cloud.PATH_SET_PROPERTIES, set_params, now=T0 + 5000)[1] == [properties(LAMP, T0 + 5000, brightness=10)]
    assert call(cloud, iot_cloud.PATH_SET_PROPERTIES, set_params, now=T0 + 4000)[1] == [properties(LAMP, T0 + 5001, brightness=10)]
    assert call(cloud, iot_cloud.PATH_SET_PROPERTIES, set_params, now=T0 + 5001)[1] == [properties(LAMP, T0 + 5002, brightness=10)]
    # Each device has its own clock.
    _, after = call(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": PLUG, "items": {"powerstate": 0}}, now=T0 + 4000)
    assert after == [properties(PLUG, T0 + 4000, powerstate=0)]


def test_widget_scene_list_and_its_update(cloud):
    assert ok(cloud, iot_cloud.PATH_WIDGET_SCENES)[0] == [{"sceneId": NIGHT, "name": "Good night"},
                                                          {"sceneId": READING, "name": "Reading"}]
    assert ok(cloud, iot_cloud.PATH_UPDATE_SCENES, {"sceneIds": [AWAY, NIGHT]}) == (None, [])
    assert [s["sceneId"] for s in ok(cloud, iot_cloud.PATH_WIDGET_SCENES)[0]] == [AWAY, NIGHT]


@pytest.mark.parametrize("params,code", [({"sceneIds": ["nope"]}, 404), ({"sceneIds": [NIGHT, NIGHT]}, 400),
                                         ({"sceneIds": NIGHT}, 400), ({}, 400)])
def test_widget_scene_update_failures(cloud, params, code):
    assert error_code(cloud, iot_cloud.PATH_UPDATE_SCENES, params) == code
    assert len(ok(cloud, iot_cloud.PATH_WIDGET_SCENES)[0]) == 2


def test_scene_query_pages_every_scene(cloud):
    query = iot_cloud.PATH_QUERY_SCENES
    first = ok(cloud, query, {"catalogId": "0", "pageNo": 1, "pageSize": 2})[0]
    assert first == {"total": 3, "pageNo": 1, "pageSize": 2, "data": [
        {"sceneId": NIGHT, "name": "Good night", "enable": True}, {"sceneId": READING, "name": "Reading", "enable": True}]}
    assert ok(cloud, query, {"catalogId": "0", "pageNo": 2, "pageSize": 2})[0]["data"] == [
        {"sceneId": AWAY, "name": "Away", "enable": False}]
    assert ok(cloud, query, {"catalogId": "0", "pageNo": 3, "pageSize": 2})[0]["data"] == []
    assert ok(cloud, query, {})[0]["pageSize"] == 20 and ok(cloud, query, {})[0]["total"] == 3
    assert ok(cloud, query, {"catalogId": "7"})[0] == {"total": 0, "pageNo": 1, "pageSize": 20, "data": []}


@pytest.mark.parametrize("params", [{"pageNo": 0}, {"pageNo": "1"}, {"pageSize": 0}, {"pageSize": 101}, {"catalogId": 0}])
def test_scene_query_refuses_bad_paging_with_400(cloud, params):
    assert error_code(cloud, iot_cloud.PATH_QUERY_SCENES, params) == 400


def test_scene_fire_answers_then_applies_each_action_in_order(cloud):
    response, after = call(cloud, iot_cloud.PATH_FIRE_SCENE, {"sceneId": READING}, now=T0 + 10)
    assert response == {"id": "r1", "code": 200, "message": "success", "data": {"skipped": []}}
    assert after == [properties(LAMP, T0 + 10, powerstate=1, brightness=80, color=1)]
    response, after = call(cloud, iot_cloud.PATH_FIRE_SCENE, {"sceneId": NIGHT}, now=T0 + 20)
    assert after == [properties(LAMP, T0 + 20, powerstate=0), properties(PLUG, T0 + 20, powerstate=0)]


def test_scene_fire_skips_an_offline_device_and_names_it(cloud):
    control(cloud, op="status", iotId=PLUG, value=3)
    response, after = call(cloud, iot_cloud.PATH_FIRE_SCENE, {"sceneId": NIGHT}, now=T0 + 20)
    assert (response["code"], response["data"]) == (200, {"skipped": [PLUG]})
    assert after == [properties(LAMP, T0 + 20, powerstate=0)]
    assert values(cloud, PLUG)["powerstate"] == 1


@pytest.mark.parametrize("params,code", [({"sceneId": "nope"}, 404), ({"sceneId": AWAY}, 400), ({}, 400)])
def test_scene_fire_failures(cloud, params, code):
    assert error_code(cloud, iot_cloud.PATH_FIRE_SCENE, params) == code


@pytest.mark.parametrize("payload,request_id,code", [
    (b"not json", "", 400),
    (b"\xff\xfe", "", 400),
    (b"[1,2]", "", 400),
    (b'{"path":"/living/appwidget/list","params":{}}', "", 400),
    (b'{"id":7,"path":"/living/appwidget/list"}', "", 400),
    (b'{"id":"x1","params":{}}', "x1", 400),
    (b'{"id":"x2","path":"/living/appwidget/list","params":[]}', "x2", 400),
    (b'{"id":"x3","path":"/no/such/path","params":{}}', "x3", 404),
])
def test_malformed_request_gets_an_error_with_the_id_it_could_read(cloud, payload, request_id, code):
    actions = cloud.receive(TOPICS.request(WIDGET), payload, T0)
    response, after = split_response(actions)
    assert (response["id"], response["code"], response["data"], after) == (request_id, code, None, [])
    assert response["message"]


def test_request_without_params_or_version_is_served(cloud):
    actions = cloud.receive(TOPICS.request("host-demo"), b'{"id":"h","path":"/living/appwidget/list"}', T0)
    response, _ = split_response(actions, "host-demo")
    assert response["code"] == 200 and len(response["data"]) == 2


def test_every_api_call_is_logged_with_request_and_response(cloud):
    actions = cloud.receive(TOPICS.request(WIDGET), request_bytes(iot_cloud.PATH_WIDGET_SCENES), T0)
    (log,) = [a for a in actions if isinstance(a, Log)]
    assert log.record["event"] == "api" and log.record["client"] == WIDGET
    assert log.record["request"]["path"] == iot_cloud.PATH_WIDGET_SCENES and log.record["response"]["code"] == 200


# --- control ops ---


def test_status_op_notifies_and_changes_the_device_list(cloud):
    ack, after = control(cloud, now=T0 + 7, op="status", iotId=SENSOR, value=3, id="c1")
    assert ack == {"op": "status", "ok": True, "detail": f"{SENSOR} is offline", "id": "c1"}
    assert after == [Publish(TOPICS.status, {"iotId": SENSOR, "status": {"value": 3, "time": T0 + 7}})]
    assert ok(cloud, iot_cloud.PATH_QUERY_PRODUCTS)[0][2]["status"] == 3
    assert control(cloud, now=T0 + 8, op="status", iotId=SENSOR, value=1)[1][0].payload["status"] == {"value": 1, "time": T0 + 8}


def test_set_property_op_is_a_device_side_report_that_may_change_read_only_properties(cloud):
    ack, after = control(cloud, now=T0 + 3, op="set_property", iotId=SENSOR, items={"temperature": 23.0, "humidity": 50})
    assert ack["ok"] is True
    assert after == [properties(SENSOR, T0 + 3, temperature=23.0, humidity=50)]
    assert values(cloud, SENSOR) == {"temperature": 23.0, "humidity": 50}


@pytest.mark.parametrize("command,word", [
    ({"op": "set_property", "iotId": "nope", "items": {"x": 1}}, "no device"),
    ({"op": "set_property", "iotId": SENSOR, "items": {"humidity": 1.5}}, "INT"),
    ({"op": "set_property", "iotId": SENSOR}, "items"),
    ({"op": "status", "iotId": LAMP, "value": 2}, "1 (online) or 3"),
    ({"op": "fail_next_set", "iotId": LAMP, "code": 500}, "code"),
    ({"op": "delay_responses", "ms": -1}, "ms"),
    ({"op": "publish_stale", "iotId": LAMP, "items": {"powerstate": 1}, "age_ms": 0}, "age_ms"),
    ({"op": "periodic", "iotId": SENSOR, "prop": "nope", "every_ms": 10, "count": 1}, "no property"),
    ({"op": "periodic", "iotId": SENSOR, "prop": "humidity", "every_ms": 0, "count": 1}, "every_ms"),
    ({"op": "periodic", "iotId": SENSOR, "prop": "humidity", "every_ms": 10, "count": -1}, "count"),
    ({"op": "periodic", "iotId": SENSOR, "prop": "humidity", "every_ms": 10, "count": 1, "values": [1.5]}, "INT"),
    ({"op": "fly"}, "unknown op"),
    ({"iotId": LAMP}, '"op"'),
    ([1, 2], '"op"'),
])
def test_bad_control_commands_are_acked_not_ok_with_the_reason(cloud, command, word):
    actions = cloud.control(command, T0)
    publishes = [a for a in actions if isinstance(a, Publish)]
    assert len(publishes) == 1 and publishes[0].topic == TOPICS.control_ack
    ack = publishes[0].payload
    assert ack["ok"] is False and word in ack["detail"], ack
    assert ack["op"] == (command.get("op") if isinstance(command, dict) else None)


def test_set_property_op_on_an_offline_device_is_refused(cloud):
    control(cloud, op="status", iotId=SENSOR, value=3)
    ack, after = control(cloud, op="set_property", iotId=SENSOR, items={"humidity": 1})
    assert (ack["ok"], after) == (False, []) and "offline" in ack["detail"]


def test_control_message_that_is_not_json_is_acked_not_ok(cloud):
    publishes = [a for a in cloud.receive(TOPICS.control, b"{nope", T0) if isinstance(a, Publish)]
    assert publishes == [Publish(TOPICS.control_ack, {"op": None, "ok": False, "detail": "the control message is not JSON"})]


def test_ping_is_acked(cloud):
    assert control(cloud, op="ping") == ({"op": "ping", "ok": True, "detail": "pong"}, [])


def test_fail_next_set_fails_exactly_one_set(cloud):
    control(cloud, op="fail_next_set", iotId=LAMP, code=9201)
    set_params = {"iotId": LAMP, "items": {"powerstate": 1}}
    response, after = call(cloud, iot_cloud.PATH_SET_PROPERTIES, set_params)
    assert (response["code"], response["message"], after) == (9201, f"device {LAMP} is offline", [])
    assert values(cloud, LAMP)["powerstate"] == 0
    assert call(cloud, iot_cloud.PATH_SET_PROPERTIES, set_params)[0]["code"] == 200
    control(cloud, op="fail_next_set", iotId=LAMP, code=400, message="the lamp is busy")
    response, _ = call(cloud, iot_cloud.PATH_SET_PROPERTIES, set_params)
    assert (response["code"], response["message"]) == (400, "the lamp is busy")


def test_fail_next_set_is_not_spent_by_another_device(cloud):
    control(cloud, op="fail_next_set", iotId=LAMP)
    assert call(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": PLUG, "items": {"powerstate": 0}})[0]["code"] == 200
    assert call(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"powerstate": 1}})[0]["code"] == 9201


def test_publish_stale_carries_a_time_older_than_the_last_and_changes_nothing(cloud):
    call(cloud, iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"brightness": 70}}, now=T0 + 2000)
    ack, after = control(cloud, now=T0 + 3000, op="publish_stale", iotId=LAMP, items={"brightness": 20, "powerstate": 1},
                         age_ms=500)
    assert ack["ok"] is True
    # powerstate's last time is T0 (the world's start), brightness's T0 + 2000: older than both.
    assert after == [properties(LAMP, T0 - 500, brightness=20, powerstate=1)]
    assert values(cloud, LAMP) == {"powerstate": 0, "brightness": 70, "color": 0}
    _, after = control(cloud, now=T0 + 3000, op="publish_stale", iotId=LAMP, items={"brightness": 20})
    assert after[0].payload["items"]["brightness"]["time"] == T0 + 2000 - iot_cloud.DEFAULT_STALE_AGE_MS


def test_delayed_request_is_handled_at_its_deadline_and_not_before(cloud):
    control(cloud, op="delay_responses", ms=300)
    actions = cloud.receive(TOPICS.request(WIDGET), request_bytes(iot_cloud.PATH_SET_PROPERTIES,
                                                                   {"iotId": LAMP, "items": {"powerstate": 1}}), T0 + 100)
    assert not [a for a in actions if isinstance(a, Publish)]
    assert cloud.next_deadline() == T0 + 400
    assert cloud.handle_timeout(T0 + 399) == []
    response, after = split_response(cloud.handle_timeout(T0 + 400))
    assert response["code"] == 200 and after == [properties(LAMP, T0 + 400, powerstate=1)]
    assert cloud.next_deadline() is None


def test_delayed_requests_keep_their_order_when_the_delay_is_turned_off(cloud):
    control(cloud, op="delay_responses", ms=300)
    cloud.receive(TOPICS.request(WIDGET), request_bytes(iot_cloud.PATH_WIDGET_SCENES, request_id="a"), T0)
    control(cloud, op="delay_responses", ms=0)
    assert not [a for a in cloud.receive(TOPICS.request(WIDGET), request_bytes(iot_cloud.PATH_WIDGET_SCENES, request_id="b"), T0 + 1)
                if isinstance(a, Publish)]
    ids = [a.payload["id"] for a in cloud.handle_timeout(T0 + 300) if isinstance(a, Publish)]
    assert ids == ["a", "b"]
    assert split_response(cloud.receive(TOPICS.request(WIDGET), request_bytes(iot_cloud.PATH_WIDGET_SCENES), T0 + 301))[0]["code"] == 200


def test_periodic_reports_every_interval_exactly_count_times(cloud):
    ack, after = control(cloud, now=T0, op="periodic", iotId=SENSOR, prop="humidity", every_ms=100, count=3)
    assert ack["ok"] is True and after == []
    reports = []
    for due in (T0 + 100, T0 + 200, T0 + 300):
        assert cloud.next_deadline() == due
        assert cloud.handle_timeout(due - 1) == []
        reports += cloud.handle_timeout(due)
    assert reports == [properties(SENSOR, T0 + 100, humidity=46), properties(SENSOR, T0 + 200, humidity=47),
                       properties(SENSOR, T0 + 300, humidity=48)]
    assert cloud.next_deadline() is None


def test_periodic_cycles_given_values_and_floats_step_by_a_tenth(cloud):
    control(cloud, now=T0, op="periodic", iotId=SENSOR, prop="humidity", every_ms=10, count=3, values=[1, 2])
    control(cloud, now=T0, op="periodic", iotId=SENSOR, prop="temperature", every_ms=10, count=2)
    first = cloud.handle_timeout(T0 + 10)
    second = cloud.handle_timeout(T0 + 20)
    third = cloud.handle_timeout(T0 + 30)
    assert [p.payload["items"] for p in first] == [{"humidity": {"value": 1, "time": T0 + 10}},
                                                    {"temperature": {"value": 22.6, "time": T0 + 11}}]
    assert [p.payload["items"] for p in second] == [{"humidity": {"value": 2, "time": T0 + 20}},
                                                     {"temperature": {"value": 22.7, "time": T0 + 21}}]
    assert [p.payload["items"] for p in third] == [{"humidity": {"value": 1, "time": T0 + 30}}]


def test_periodic_with_count_zero_stops_a_running_report(cloud):
    control(cloud, now=T0, op="periodic", iotId=SENSOR, prop="humidity", every_ms=10, count=5)
    assert len(cloud.handle_timeout(T0 + 10)) == 1
    control(cloud, now=T0 + 11, op="periodic", iotId=SENSOR, prop="humidity", every_ms=10, count=0)
    assert cloud.handle_timeout(T0 + 100) == []


def test_periodic_skips_reports_while_the_device_is_offline(cloud):
    control(cloud, now=T0, op="periodic", iotId=SENSOR, prop="humidity", every_ms=10, count=2)
    control(cloud, now=T0 + 5, op="status", iotId=SENSOR, value=3)
    skipped = cloud.handle_timeout(T0 + 10)
    assert [a.record["event"] for a in skipped] == ["periodic_skipped"]
    control(cloud, now=T0 + 15, op="status", iotId=SENSOR, value=1)
    assert cloud.handle_timeout(T0 + 20) == [properties(SENSOR, T0 + 20, humidity=46)]


def test_script_commands_run_at_their_times(cloud):
    cloud.load_script([{"at_ms": 50, "op": "status", "iotId": LAMP, "value": 3},
                       {"at_ms": 0, "op": "set_property", "iotId": SENSOR, "items": {"humidity": 60}}], T0)
    assert cloud.next_deadline() == T0
    first = [a for a in cloud.handle_timeout(T0) if isinstance(a, Publish)]
    # The world was loaded at T0, so the sensor's clock gives T0 + 1 next.
    assert first[0].payload["op"] == "set_property" and first[1] == properties(SENSOR, T0 + 1, humidity=60)
    assert cloud.handle_timeout(T0 + 49) == []
    second = [a for a in cloud.handle_timeout(T0 + 50) if isinstance(a, Publish)]
    assert second[1] == Publish(TOPICS.status, {"iotId": LAMP, "status": {"value": 3, "time": T0 + 50}})


@pytest.mark.parametrize("script,word", [({"at_ms": 0}, "list"), ([{"op": "ping"}], "at_ms"),
                                         ([{"at_ms": -1, "op": "ping"}], "at_ms"), ([{"at_ms": 0, "op": "fly"}], "op")])
def test_bad_script_is_refused_whole(cloud, script, word):
    with pytest.raises(iot_cloud.WorldError, match=word):
        cloud.load_script(script, T0)
    assert cloud.next_deadline() is None


# --- worlds ---

SMALL_WORLD = {
    "devices": [{"iotId": "d1", "productKey": "pk", "deviceName": "n1", "status": 3, "properties": {
        "label": {"dataType": "TEXT", "value": "hi", "maxLength": 4},
        "mode": {"dataType": "ENUM", "values": {"0": "off", "1": "on"}, "value": 1},
    }}],
    "scenes": [{"sceneId": "s1", "name": "S", "actions": [{"iotId": "d1", "items": {"label": "yo"}}]}],
    "widget": {"devices": ["d1"], "scenes": ["s1"]},
}


def test_a_world_of_its_own_with_text_and_string_enum_keys():
    cloud = Cloud(T0, SMALL_WORLD, account="acme")
    topics = iot_cloud.Topics("acme")
    actions = cloud.receive(topics.request("widget-acme"), request_bytes(iot_cloud.PATH_QUERY_PRODUCTS), T0)
    response = [a for a in actions if isinstance(a, Publish)][0]
    assert response.topic == "tether/acme/api/response/widget-acme"
    assert response.payload["data"] == [{"iotId": "d1", "productKey": "pk", "deviceName": "n1", "nickName": "n1", "status": 3}]
    control(cloud, op="status", iotId="d1", value=1)
    items = {"items": {"label": "four", "mode": 0}, "iotId": "d1"}
    actions = cloud.receive(topics.request("w"), request_bytes(iot_cloud.PATH_SET_PROPERTIES, items), T0 + 1)
    assert [a.payload for a in actions if isinstance(a, Publish)][0]["code"] == 200
    items = {"items": {"label": "fives"}, "iotId": "d1"}
    actions = cloud.receive(topics.request("w"), request_bytes(iot_cloud.PATH_SET_PROPERTIES, items), T0 + 1)
    assert [a.payload for a in actions if isinstance(a, Publish)][0]["code"] == 400


def broken(path, value):
    """SMALL_WORLD with the value at `path` (keys and indexes) replaced, or removed for None."""
    world = json.loads(json.dumps(SMALL_WORLD))
    target = world
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return world


@pytest.mark.parametrize("world,word", [
    (broken(["devices", 0, "properties", "label", "dataType"], "STRING"), "dataType"),
    (broken(["devices", 0, "properties", "label", "value"], 5), "TEXT"),
    (broken(["devices", 0, "properties", "label", "accessMode"], "w"), "accessMode"),
    (broken(["devices", 0, "properties", "mode", "values"], {"a": "x"}), "integer"),
    (broken(["devices", 0, "properties", "mode", "value"], 3), "ENUM"),
    (broken(["devices", 0, "properties", "label", "min"], 0), "min"),
    (broken(["devices", 0, "status"], 2), "status"),
    (broken(["devices", 0, "iotId"], None), "iotId"),
    (broken(["devices", 0, "color"], "red"), "unknown keys"),
    (broken(["scenes", 0, "enabled"], True), "unknown keys"),
    (broken(["scenes", 0, "actions", 0, "iotId"], "d9"), "no device"),
    (broken(["scenes", 0, "actions", 0, "items"], {"nope": 1}), "no property"),
    (broken(["widget", "devices"], ["d9"]), "no device"),
    (broken(["widget", "scenes"], ["s1", "s1"]), "distinct"),
    (broken(["scenes"], {}), "list"),
    ([], "mapping"),
])
def test_a_broken_world_is_refused_with_where(world, word):
    with pytest.raises(iot_cloud.WorldError, match=word):
        Cloud(T0, world)


def test_world_files_in_yaml_and_json(tmp_path):
    yaml_file = tmp_path / "world.yaml"
    yaml_file.write_text(
        "devices:\n"
        "  - iotId: d1\n    productKey: pk\n    deviceName: n1\n    properties:\n"
        "      mode: {dataType: ENUM, values: {0: white, 1: red}, value: 0}\n"
        "scenes: []\nwidget: {devices: [d1], scenes: []}\n")
    json_file = tmp_path / "world.json"
    json_file.write_text(json.dumps(SMALL_WORLD))
    assert Cloud(T0, iot_cloud.load_document(yaml_file)).devices["d1"].properties["mode"].enum == {0: "white", 1: "red"}
    assert Cloud(T0, iot_cloud.load_document(json_file)).devices["d1"].properties["mode"].enum == {0: "off", 1: "on"}
    yaml_file.write_text(yaml_file.read_text().replace("white", "off"))  # YAML 1.1: off is false
    with pytest.raises(iot_cloud.WorldError, match="quote it"):
        Cloud(T0, iot_cloud.load_document(yaml_file))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(iot_cloud.WorldError, match="not JSON"):
        iot_cloud.load_document(tmp_path / "bad.json")
    (tmp_path / "bad.yaml").write_text("a: [")
    with pytest.raises(iot_cloud.WorldError, match="not YAML"):
        iot_cloud.load_document(tmp_path / "bad.yaml")


def test_the_default_world_is_the_yaml_block_in_the_protocol_page():
    import yaml

    page = (RIGS.parent.parent / "docs" / "widget-mqtt.md").read_text()
    block = page.split("<!-- default-world -->\n```yaml\n", 1)[1].split("```", 1)[0]
    assert yaml.safe_load(block) == iot_cloud.DEFAULT_WORLD


# =============================================================================================
# Over a real broker: mqtt_broker.py, iot_cloud.py, a paho widget
# =============================================================================================

ACCOUNTS = itertools.count(1)


class Client:
    """A paho client playing the widget (or the host app, or a test scenario): subscribes to the
    cloud's topics again on every (re)connect unless `resubscribe` is False; every message is kept
    in arrival order with its JSON payload."""

    def __init__(self, port, account, role="widget", version="3.1.1", resubscribe=True):
        self.topics = iot_cloud.Topics(account)
        self.client_id = iot_cloud.client_id(role, account)
        self.resubscribe = resubscribe
        self.arrived = queue.Queue()  # (topic, payload) as they come
        self.kept = []  # read from `arrived` but not yet taken
        self.connects = queue.Queue()
        self.subacks = queue.Queue()
        self.ids = itertools.count(1)
        v5 = version == "5"
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=self.client_id,
                                  protocol=mqtt.MQTTv5 if v5 else mqtt.MQTTv311)
        self.client.reconnect_delay_set(0.05, 0.5)
        self.client.on_socket_open = lambda _c, _u, sock: iot_cloud.no_delay(sock)
        self.client.on_connect = self._on_connect
        self.client.on_subscribe = lambda *_args: self.subacks.put(True)
        self.client.on_message = lambda _c, _u, msg: self.arrived.put((msg.topic, json.loads(msg.payload)))
        self.subscriptions = 0
        self.client.connect("127.0.0.1", port, keepalive=10, **({"clean_start": True} if v5 else {}))
        self.client.loop_start()
        self.wait_subscribed()

    def _on_connect(self, client, _userdata, _flags, code, _properties):
        self.connects.put(str(code))
        if self.resubscribe or self.subscriptions == 0:
            self.subscriptions += 1
            t = self.topics
            client.subscribe([(t.response(self.client_id), 1), (t.properties, 1), (t.status, 1), (t.control_ack, 1)])

    def wait_subscribed(self, timeout=WAIT_S):
        assert self.connects.get(timeout=timeout) == "Success"
        assert self.subacks.get(timeout=timeout)

    def publish(self, topic, payload):
        info = self.client.publish(topic, payload if isinstance(payload, bytes) else json.dumps(payload), qos=1)
        info.wait_for_publish(WAIT_S)

    def take(self, topic, match=lambda _p: True, timeout=WAIT_S):
        """(index in arrival order, payload) of the next message on `topic` that `match`es."""
        for index, (seen_topic, payload) in enumerate(self.kept):
            if seen_topic == topic and match(payload):
                self.kept[index] = (None, None)
                return index, payload
        deadline = time.monotonic() + timeout
        while True:
            try:
                seen_topic, payload = self.arrived.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"nothing on {topic} within {timeout} s; kept {self.kept}") from None
            self.kept.append((seen_topic, payload))
            if seen_topic == topic and match(payload):
                self.kept[-1] = (None, None)
                return len(self.kept) - 1, payload

    def nothing_on(self, topic, within=QUIET_S):
        try:
            self.take(topic, timeout=within)
        except AssertionError:
            return True
        return False

    def request(self, path, params=None, request_id=None, version="1.0.0"):
        """The response to one request, with its arrival index."""
        request_id = request_id or f"{self.client_id}-{next(self.ids)}"
        self.publish(self.topics.request(self.client_id),
                     {"id": request_id, "path": path, "version": version, "params": {} if params is None else params})
        return self.take(self.topics.response(self.client_id), lambda p: p.get("id") == request_id)

    def control(self, **command):
        """The ack of one control command (matched by an id this client adds)."""
        command.setdefault("id", f"c{next(self.ids)}")
        self.publish(self.topics.control, command)
        return self.take(self.topics.control_ack, lambda p: p.get("id") == command["id"])[1]

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


class Simulator(Process):
    """iot_cloud.py as a process; stdin is a pipe when `stdin` is True."""

    def __init__(self, port, account, *extra, stdin=False):
        self.name = f"iot-cloud-{account}"
        self.log = tempfile.NamedTemporaryFile(prefix=f"{self.name}-", suffix=".log", delete=False)
        self.popen = subprocess.Popen(
            [sys.executable, "iot_cloud.py", "--port", str(port), "--account", account, *extra],
            cwd=RIGS, stdout=subprocess.PIPE, stderr=self.log,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        )
        self.ready = None

    def line(self, timeout=WAIT_S):
        """One more line of stdout (after READY)."""
        deadline = time.monotonic() + timeout
        data = b""
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            readable, _, _ = select.select([self.popen.stdout], [], [], max(0.0, remaining))
            if not readable:
                raise AssertionError(f"no line on stdout within {timeout} s: {self.stderr()}")
            chunk = os.read(self.popen.stdout.fileno(), 1)
            if not chunk:
                raise AssertionError(f"stdout closed: {self.stderr()}")
            data += chunk
        return data.decode()

    def send(self, command):
        self.popen.stdin.write((json.dumps(command) + "\n").encode())
        self.popen.stdin.flush()

    def records(self):
        """Every JSON log record so far."""
        text = Path(self.log.name).read_text(errors="replace")
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    def stop(self, timeout=10.0, signum=signal.SIGTERM):
        if self.popen.poll() is None:
            self.popen.send_signal(signum)
        if self.popen.stdin:
            self.popen.stdin.close()
        return super().stop(timeout)


@pytest.fixture(scope="module")
def broker():
    with mqtt_broker.Broker(port=0) as started:
        yield started


class Rig:
    """The module's broker, one simulator with an account of its own, and the clients made."""

    def __init__(self, broker, *extra, stdin=False, start=True):
        self.broker = broker
        self.account = f"t{os.getpid()}x{next(ACCOUNTS)}"
        self.clients = []
        self.sim = Simulator(broker.port, self.account, *extra, stdin=stdin)
        if start:
            self.sim.wait_ready()

    def client(self, role="widget", version="3.1.1", resubscribe=True):
        made = Client(self.broker.port, self.account, role, version, resubscribe)
        self.clients.append(made)
        return made

    def close(self):
        for made in self.clients:
            made.close()
        return self.sim.cleanup()  # stops it and removes its log


@pytest.fixture
def rig(broker):
    started = Rig(broker)
    yield started
    print(started.sim.stderr())
    started.close()


# --- the broker ---


def test_broker_cli_prints_ready_serves_mqtt_and_exits_0_on_sigterm():
    process = Process("broker", ["mqtt_broker.py", "--port", "0"])
    try:
        (port,) = process.wait_ready()
        assert mqtt_broker.mqtt_probe("127.0.0.1", int(port))
    finally:
        assert process.cleanup() == 0
    assert not mqtt_broker.mqtt_probe("127.0.0.1", int(port), timeout=0.2)


def test_broker_cli_restarts_on_sigusr1_on_the_same_port_and_exits_0_on_sigint():
    process = Process("broker", ["mqtt_broker.py", "--port", "0"])
    try:
        (port,) = process.wait_ready()
        client = Client(int(port), "cli")
        process.popen.send_signal(signal.SIGUSR1)
        assert process.wait_ready() == [port]
        assert client.connects.get(timeout=WAIT_S) == "Success"  # paho reconnected to the new broker
        client.close()
        process.popen.send_signal(signal.SIGINT)
        assert process.popen.wait(10) == 0
    finally:
        process.cleanup()


def stdout_words(process, timeout=WAIT_S):
    """The words of the next line the rig process prints on stdout."""
    deadline = time.monotonic() + timeout
    line = b""
    while not line.endswith(b"\n"):
        remaining = deadline - time.monotonic()
        assert remaining > 0 and process.popen.poll() is None, f"{process.name} printed {line!r}: {process.stderr()}"
        ready, _, _ = select.select([process.popen.stdout], [], [], remaining)
        if ready:
            chunk = os.read(process.popen.stdout.fileno(), 1)
            assert chunk, f"{process.name} closed stdout: {process.stderr()}"
            line += chunk
    return line.decode().split()


def refused(port):
    """True when connecting to 127.0.0.1:port is refused (nothing listens: SYN answered by RST)."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1.0).close()
    except ConnectionRefusedError:
        return True
    return False


def test_broker_cli_stays_down_from_sigusr2_until_sigusr1_on_the_same_port():
    process = Process("broker", ["mqtt_broker.py", "--port", "0"])
    try:
        (port,) = process.wait_ready()
        client = Client(int(port), "outage")
        process.popen.send_signal(signal.SIGUSR2)
        assert stdout_words(process) == ["STOPPED", port]
        time.sleep(1.0)  # down for a while: still running, connections refused, paho cannot get in
        assert process.popen.poll() is None
        assert refused(int(port))
        assert client.connects.empty()
        assert not mqtt_broker.mqtt_probe("127.0.0.1", int(port), timeout=0.2)
        process.popen.send_signal(signal.SIGUSR2)  # already down: said again, nothing else
        assert stdout_words(process) == ["STOPPED", port]
        process.popen.send_signal(signal.SIGUSR1)
        assert stdout_words(process) == ["READY", port]
        assert mqtt_broker.mqtt_probe("127.0.0.1", int(port))
        assert client.connects.get(timeout=WAIT_S) == "Success"  # paho reconnected to the broker that is back
        client.close()
        process.popen.send_signal(signal.SIGUSR2)  # a stop signal while down still exits 0
        assert stdout_words(process) == ["STOPPED", port]
        process.popen.send_signal(signal.SIGTERM)
        assert process.popen.wait(10) == 0
    finally:
        process.cleanup()
    assert refused(int(port))


def test_broker_pause_and_resume_keep_the_port_and_refuse_connections_between():
    with mqtt_broker.Broker(port=0) as own:
        port = own.port
        client = Client(port, "pause")
        own.pause()
        assert not own.running and refused(port)
        own.pause()  # paused twice: still paused
        assert not own.running
        time.sleep(0.6)  # paho tries again meanwhile and is refused
        assert client.connects.empty()
        own.resume()
        assert own.port == port and own.running
        own.resume()  # running already: left alone
        assert own.running
        assert client.connects.get(timeout=WAIT_S) == "Success"
        client.close()
    assert not own.running


def test_broker_refuses_a_port_in_use_with_a_clear_message(broker):
    with pytest.raises(mqtt_broker.BrokerError, match=f"port {broker.port} on 127.0.0.1 is already in use"):
        mqtt_broker.Broker(port=broker.port).start()
    process = Process("broker", ["mqtt_broker.py", "--port", str(broker.port)])
    assert process.popen.wait(10) == 1
    assert "already in use" in process.stderr()
    process.cleanup()


def test_broker_without_mosquitto_says_how_to_install_it():
    with pytest.raises(mqtt_broker.BrokerError, match="apt-get install mosquitto, or run ./CI/test"):
        mqtt_broker.Broker(port=0, mosquitto="/nonexistent/mosquitto").start()


def test_broker_restart_keeps_the_port_and_drops_every_connection():
    with mqtt_broker.Broker(port=0) as own:
        port = own.port
        client = Client(port, "restart")
        own.restart()
        assert own.port == port and own.running
        assert client.connects.get(timeout=WAIT_S) == "Success"
        client.close()
        assert "mosquitto version" in own.log_text()
    assert not own.running


# --- the simulator over MQTT ---


def test_every_api_path_over_mqtt_with_its_success_and_failure_codes(rig):
    widget = rig.client()
    cases = [
        (iot_cloud.PATH_QUERY_PRODUCTS, {}, 200),
        (iot_cloud.PATH_UPDATE_PRODUCTS, {"iotIds": [PLUG, LAMP]}, 200),
        (iot_cloud.PATH_UPDATE_PRODUCTS, {"iotIds": ["nope"]}, 404),
        (iot_cloud.PATH_UPDATE_PRODUCTS, {"iotIds": "x"}, 400),
        (iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": LAMP, "productKey": "a1LampDemo",
                                           "query": {"dataType": "BOOL", "I18Language": "en-US"}}, 200),
        (iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": "nope"}, 404),
        (iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": LAMP, "query": {"dataType": "X"}}, 400),
        (iot_cloud.PATH_SET_PROPERTIES, {"iotId": PLUG, "items": {"power": 1.0}}, 400),
        (iot_cloud.PATH_SET_PROPERTIES, {"iotId": "nope", "items": {"powerstate": 1}}, 404),
        (iot_cloud.PATH_WIDGET_SCENES, {}, 200),
        (iot_cloud.PATH_QUERY_SCENES, {"catalogId": "0", "pageNo": 1, "pageSize": 20}, 200),
        (iot_cloud.PATH_QUERY_SCENES, {"pageSize": 0}, 400),
        (iot_cloud.PATH_UPDATE_SCENES, {"sceneIds": [READING]}, 200),
        (iot_cloud.PATH_UPDATE_SCENES, {"sceneIds": ["nope"]}, 404),
        (iot_cloud.PATH_UPDATE_SCENES, {"sceneIds": [READING, READING]}, 400),
        (iot_cloud.PATH_FIRE_SCENE, {"sceneId": "nope"}, 404),
        (iot_cloud.PATH_FIRE_SCENE, {"sceneId": AWAY}, 400),
        ("/no/such/path", {}, 404),
    ]
    answers = [(path, widget.request(path, params)[1]) for path, params, _ in cases]
    assert [(path, a["code"]) for path, a in answers] == [(path, code) for path, _, code in cases]
    assert answers[0][1]["data"][0]["iotId"] == LAMP
    assert answers[4][1]["data"] == {"iotId": LAMP, "items": {"powerstate": {"value": 0, "time": answers[4][1]["data"]
                                                                            ["items"]["powerstate"]["time"]}}}
    assert [d["iotId"] for d in widget.request(iot_cloud.PATH_QUERY_PRODUCTS)[1]["data"]] == [PLUG, LAMP]
    assert widget.request(iot_cloud.PATH_WIDGET_SCENES)[1]["data"] == [{"sceneId": READING, "name": "Reading"}]
    assert [(r["event"], r["response"]["code"]) for r in rig.sim.records() if r["event"] == "api"][:3] == [
        ("api", 200), ("api", 200), ("api", 404)]


@pytest.mark.parametrize("version", ["3.1.1", "5"])
def test_property_set_response_arrives_before_its_notification(rig, version):
    widget = rig.client(version=version)
    host = rig.client(role="host", version=version)
    before = int(time.time() * 1000)
    index, response = widget.request(iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"powerstate": 1, "color": 2}})
    assert response["code"] == 200 and response["data"] is None
    notified_at, notification = widget.take(widget.topics.properties)
    assert index < notified_at
    items = notification["items"]
    assert notification["iotId"] == LAMP and {k: v["value"] for k, v in items.items()} == {"powerstate": 1, "color": 2}
    assert items["powerstate"]["time"] == items["color"]["time"] >= before
    assert host.take(host.topics.properties)[1] == notification  # every subscriber hears it
    assert host.nothing_on(host.topics.response(host.client_id), within=0.1)  # responses go to the asker only
    query = widget.request(iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": LAMP, "query": {"dataType": "ENUM"}})[1]
    assert query["data"]["items"] == {"color": items["color"]}


def test_scene_fire_over_mqtt_answers_then_notifies_each_device(rig):
    widget = rig.client()
    index, response = widget.request(iot_cloud.PATH_FIRE_SCENE, {"sceneId": NIGHT})
    assert response["data"] == {"skipped": []}
    lamp_at, lamp = widget.take(widget.topics.properties)
    plug_at, plug = widget.take(widget.topics.properties)
    assert index < lamp_at < plug_at
    assert (lamp["iotId"], lamp["items"]["powerstate"]["value"], plug["iotId"], plug["items"]["powerstate"]["value"]) == (
        LAMP, 0, PLUG, 0)
    assert widget.control(op="status", iotId=PLUG, value=3)["ok"]
    widget.take(widget.topics.status)
    assert widget.request(iot_cloud.PATH_FIRE_SCENE, {"sceneId": NIGHT})[1]["data"] == {"skipped": [PLUG]}
    assert widget.take(widget.topics.properties)[1]["iotId"] == LAMP
    assert widget.nothing_on(widget.topics.properties)


def test_status_changes_reach_every_subscriber_and_the_device_list(rig):
    widget, host = rig.client(), rig.client(role="host")
    ack = widget.control(op="status", iotId=SENSOR, value=3)
    assert ack["ok"] is True and ack["op"] == "status"
    _, status = widget.take(widget.topics.status)
    assert status["iotId"] == SENSOR and status["status"]["value"] == 3 and isinstance(status["status"]["time"], int)
    assert host.take(host.topics.status)[1] == status
    assert widget.request(iot_cloud.PATH_QUERY_PRODUCTS)[1]["data"][2]["status"] == 3
    assert widget.request(iot_cloud.PATH_SET_PROPERTIES, {"iotId": SENSOR, "items": {"humidity": 1}})[1]["code"] == 9201
    widget.control(op="status", iotId=SENSOR, value=1)
    assert widget.take(widget.topics.status)[1]["status"]["time"] > status["status"]["time"]


def test_broker_restart_the_simulator_reconnects_and_a_resubscribing_client_hears_again():
    with mqtt_broker.Broker(port=0) as own:
        rig = Rig(own)
        try:
            widget = rig.client()
            forgetful = rig.client(role="host", resubscribe=False)
            own.restart()
            widget.wait_subscribed()
            assert forgetful.connects.get(timeout=WAIT_S) == "Success"
            deadline = time.monotonic() + WAIT_S
            while True:  # until the simulator is subscribed again
                widget.publish(widget.topics.control, {"op": "ping", "id": "p"})
                try:
                    widget.take(widget.topics.control_ack, timeout=0.2)
                    break
                except AssertionError:
                    assert time.monotonic() < deadline, rig.sim.stderr()
            widget.control(op="set_property", iotId=SENSOR, items={"humidity": 70})
            assert widget.take(widget.topics.properties)[1]["items"]["humidity"]["value"] == 70
            assert forgetful.nothing_on(forgetful.topics.properties)  # clean session: subscriptions died with it
            events = [r["event"] for r in rig.sim.records()]
            assert events.count("connected") == 2 and events.count("subscribed") == 2 and "disconnected" in events
        finally:
            print(rig.sim.stderr())
            assert rig.close() == 0


def test_simulator_waits_for_a_broker_that_is_not_there_yet():
    own = mqtt_broker.Broker(port=mqtt_broker.free_port("127.0.0.1"))
    rig = Rig(own, start=False)  # nothing listens on own.port yet
    try:
        time.sleep(0.3)
        assert rig.sim.popen.poll() is None
        own.start()
        assert rig.sim.wait_ready() == []
        assert rig.client().request(iot_cloud.PATH_WIDGET_SCENES)[1]["code"] == 200
    finally:
        assert rig.close() == 0
        own.stop()


def test_stale_publish_over_mqtt_carries_an_older_time(rig):
    widget = rig.client()
    widget.request(iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"brightness": 90}})
    _, fresh = widget.take(widget.topics.properties)
    assert widget.control(op="publish_stale", iotId=LAMP, items={"brightness": 10}, age_ms=250)["ok"]
    _, stale = widget.take(widget.topics.properties)
    assert stale["items"]["brightness"] == {"value": 10, "time": fresh["items"]["brightness"]["time"] - 250}
    query = widget.request(iot_cloud.PATH_QUERY_PROPERTIES, {"iotId": LAMP, "query": {"dataType": "INT"}})[1]
    assert query["data"]["items"]["brightness"] == fresh["items"]["brightness"]


@pytest.mark.parametrize("payload,request_id", [(b"{not json", ""), (b'{"path":"/living/appwidget/list"}', ""),
                                                (b'{"id":"m1","params":{}}', "m1")])
def test_malformed_request_over_mqtt_gets_400(rig, payload, request_id):
    widget = rig.client()
    widget.publish(widget.topics.request(widget.client_id), payload)
    _, response = widget.take(widget.topics.response(widget.client_id))
    assert (response["id"], response["code"], response["data"]) == (request_id, 400, None)
    assert widget.request(iot_cloud.PATH_WIDGET_SCENES)[1]["code"] == 200  # still serving


def test_simulator_on_mqtt_5_serves_clients_of_both_versions(broker):
    rig = Rig(broker, "--mqtt-version", "5")
    try:
        old, new = rig.client(version="3.1.1"), rig.client(role="host", version="5")
        assert old.request(iot_cloud.PATH_QUERY_PRODUCTS)[1]["code"] == 200
        assert new.request(iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"brightness": 5}})[1]["code"] == 200
        assert old.take(old.topics.properties)[1] == new.take(new.topics.properties)[1]
        assert [r for r in rig.sim.records() if r["event"] == "connected"][0]["mqtt"] == "5"
    finally:
        assert rig.close() == 0


def test_fail_next_set_and_delay_responses_over_mqtt(rig):
    widget = rig.client()
    assert widget.control(op="fail_next_set", iotId=LAMP, code=400, message="busy")["ok"]
    assert widget.request(iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"powerstate": 1}})[1] == {
        "id": f"{widget.client_id}-2", "code": 400, "message": "busy", "data": None}
    assert widget.nothing_on(widget.topics.properties, within=0.1)
    assert widget.control(op="delay_responses", ms=400)["ok"]
    started = time.monotonic()
    assert widget.request(iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"powerstate": 1}})[1]["code"] == 200
    assert time.monotonic() - started >= 0.4
    widget.take(widget.topics.properties)
    widget.control(op="delay_responses", ms=0)
    started = time.monotonic()
    widget.request(iot_cloud.PATH_WIDGET_SCENES)
    assert time.monotonic() - started < 0.4


def test_periodic_reports_over_mqtt(rig):
    widget = rig.client()
    assert widget.control(op="periodic", iotId=SENSOR, prop="temperature", every_ms=50, count=3)["ok"]
    reports = [widget.take(widget.topics.properties)[1]["items"]["temperature"] for _ in range(3)]
    assert [r["value"] for r in reports] == [22.6, 22.7, 22.8]
    assert reports[0]["time"] < reports[1]["time"] < reports[2]["time"]
    assert widget.nothing_on(widget.topics.properties, within=0.2)


def test_stdin_commands_are_acked_on_stdout_and_acted_on(broker):
    rig = Rig(broker, stdin=True)
    try:
        widget = rig.client()
        rig.sim.send({"op": "set_property", "iotId": LAMP, "items": {"brightness": 33}})
        assert json.loads(rig.sim.line()) == {"op": "set_property", "ok": True, "detail": f"{LAMP} reported brightness"}
        assert widget.take(widget.topics.properties)[1]["items"]["brightness"]["value"] == 33
        assert widget.take(widget.topics.control_ack)[1]["ok"] is True  # published on MQTT too
        rig.sim.popen.stdin.write(b"oops\n")
        rig.sim.popen.stdin.flush()
        assert json.loads(rig.sim.line())["ok"] is False
    finally:
        assert rig.close() == 0


def test_script_file_drives_the_simulator_from_ready(broker, tmp_path):
    script = tmp_path / "scenario.yaml"
    script.write_text("- {at_ms: 700, op: status, iotId: plug-0001, value: 3}\n"
                      "- {at_ms: 750, op: set_property, iotId: sensor-0001, items: {humidity: 12}}\n")
    rig = Rig(broker, "--script", str(script))
    try:
        widget = rig.client()  # subscribed well within 700 ms of READY
        assert widget.take(widget.topics.status)[1]["status"]["value"] == 3
        assert widget.take(widget.topics.properties)[1]["items"]["humidity"]["value"] == 12
        sources = [r["source"] for r in rig.sim.records() if r["event"] == "control"]
        assert sources == ["script", "script"]
    finally:
        assert rig.close() == 0


def test_log_file_has_one_json_record_per_api_call_and_notification(broker, tmp_path):
    log = tmp_path / "cloud.jsonl"
    rig = Rig(broker, "--log", str(log))
    try:
        widget = rig.client()
        widget.request(iot_cloud.PATH_SET_PROPERTIES, {"iotId": LAMP, "items": {"powerstate": 1}})
        widget.take(widget.topics.properties)
    finally:
        assert rig.close() == 0
    records = [json.loads(line) for line in log.read_text().splitlines()]
    events = [r["event"] for r in records]
    assert events[:2] == ["connected", "subscribed"] and events[-1] == "stopped"
    assert events.index("api") < events.index("notify")
    assert all(isinstance(r["t"], int) for r in records)


def test_simulator_exits_0_on_sigint(broker):
    rig = Rig(broker)
    rig.sim.popen.send_signal(signal.SIGINT)
    assert rig.sim.popen.wait(10) == 0
    rig.sim.cleanup()


@pytest.mark.parametrize("content,word", [("devices: 5\n", "devices"), ("a: [\n", "not YAML")])
def test_simulator_refuses_a_bad_world_file_with_exit_2(broker, tmp_path, content, word):
    world = tmp_path / "world.yaml"
    world.write_text(content)
    sim = Simulator(broker.port, "bad", "--world", str(world))
    assert sim.popen.wait(10) == 2
    assert word in sim.stderr()
    sim.cleanup()
