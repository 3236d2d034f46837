"""`tether inspect --json` reads MQTT over TCP as the generator wrote it and as tshark reads it.

Three captures:
- make_mqtt_capture.py `cases` in its four variants (Ethernet or raw, IPv4 or IPv6). They cover
  segmentation, several packets per segment, out-of-order segments, retransmissions and overlaps,
  a 100 KB PUBLISH, sequence wrap, RST and port reuse, a non-MQTT port, both directions
  interleaved, MQTT 5 properties and a topic alias, and a Remaining Length split across segments.
  Tether's `mqtt_all` must equal the generator's own truth (the sidecar) frame by frame, every
  packet and field. It must also equal tshark's `mqtt.*` fields under the generator's
  TSHARK_OPTIONS, except on the frames where tshark 4.0 is documented to lose sync
  (`tshark_unreliable_frames`: the split Remaining Length, which Tether reads correctly).
- a real recording: mosquitto (Harness/rigs/mqtt_broker.py), `tether record --tcp lo:PORT`, and
  paho-mqtt clients speaking MQTT 3.1.1 and 5. Tether and tshark must agree on every frame.
- a small `bulk` capture with reordering and retransmission. Tether must find exactly the
  packets the generator reports, and agree with tshark frame by frame.

Needs tshark, mosquitto, paho-mqtt and the tether binary (`swift build`; TETHER_BINARY names
another one). ./CI/test installs all of them.
"""

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "Harness", "rigs"))

import make_mqtt_capture as mmc  # noqa: E402
from test_mqtt_capture import differences, tshark_packets, load_sidecar, VARIANTS, VARIANT_IDS  # noqa: E402


def tether_binary():
    path = os.environ.get("TETHER_BINARY", os.path.join(ROOT, ".build", "debug", "tether"))
    if not os.access(path, os.X_OK):
        pytest.fail(f"no tether binary at {path}: run `swift build` (or set TETHER_BINARY)")
    return path


def require_tshark():
    if shutil.which("tshark") is None:
        pytest.fail("tshark is not installed: apt-get install -y tshark (./CI/test installs it)")


def tether_mqtt(capture, *extra):
    """frame number -> the `mqtt_all` list of `tether inspect --frames --json`."""
    result = subprocess.run([tether_binary(), "inspect", capture, "--frames", "--json", *extra],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    frames = json.loads(result.stdout)["frame_list"]
    return {frame["number"]: frame["mqtt_all"] for frame in frames if "mqtt_all" in frame}


def as_sidecar(record):
    """Tether's MQTT object in the sidecar's shape: the fields the generator states."""
    out = {"type": record["type"], "topic": record.get("topic"), "qos": record.get("qos"),
           "packet_id": record.get("packet_id"), "payload": record.get("payload")}
    if "topic_alias" in record:
        out["topic_alias"] = record["topic_alias"]
    if "topics" in record:
        out["topics"] = record["topics"]
    return out


def sidecar_shape(record):
    out = {key: record.get(key) for key in ("type", "topic", "qos", "packet_id", "payload")}
    for key in ("topic_alias", "topics"):
        if key in record:
            out[key] = record[key]
    return out


def compare_with_tshark(tether, shown, skip=()):
    """{frame: (Tether's packets as tshark would show them, tshark's)} where they differ: the
    generator test's comparison, with Tether's records in the sidecar's shape."""
    return differences({frame: [as_sidecar(r) for r in records] for frame, records in tether.items()}, shown, unreliable=skip)


@pytest.fixture(scope="module")
def cases(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mqtt-inspect")
    made = {}
    for linktype, ipv6 in VARIANTS:
        path = str(folder / f"cases-{linktype}-{'v6' if ipv6 else 'v4'}.pcap")
        index = mmc.make_cases(path, linktype, ipv6)
        made[(linktype, ipv6)] = (path, load_sidecar(path + ".json"), index)
    return made


@pytest.mark.parametrize("linktype,ipv6", VARIANTS, ids=VARIANT_IDS)
def test_tether_lists_exactly_the_generators_packets_frame_by_frame(cases, linktype, ipv6):
    path, sidecar, _ = cases[(linktype, ipv6)]
    tether = tether_mqtt(path)
    expected = {frame: [sidecar_shape(r) for r in records] for frame, records in sidecar.items()}
    got = {frame: [as_sidecar(r) for r in records] for frame, records in tether.items()}
    wrong = {f: (expected.get(f), got.get(f)) for f in sorted(set(expected) | set(got)) if expected.get(f) != got.get(f)}
    assert not wrong, f"{len(wrong)} frames differ, first: {list(wrong.items())[:3]}"
    assert sum(len(r) for r in got.values()) > 80


@pytest.mark.parametrize("linktype,ipv6", VARIANTS, ids=VARIANT_IDS)
def test_tether_agrees_with_tshark_frame_by_frame(cases, linktype, ipv6):
    require_tshark()
    path, _, index = cases[(linktype, ipv6)]
    differing = compare_with_tshark(tether_mqtt(path), tshark_packets(path), skip=set(index["tshark_unreliable_frames"]))
    assert not differing, f"{len(differing)} frames differ from tshark, first: {list(differing.items())[:3]}"


def test_no_mqtt_problems_in_the_cases_and_none_on_the_http_port(cases):
    path, _, index = cases[("ethernet", False)]
    result = subprocess.run([tether_binary(), "inspect", path, "--frames", "--json"], capture_output=True, text=True, check=True)
    frames = json.loads(result.stdout)["frame_list"]
    http = next(c for c in index["cases"] if c["case"] == "i")
    for frame in frames:
        assert "problem" not in frame, frame
        if http["first_frame"] <= frame["number"] <= http["last_frame"]:
            assert "mqtt" not in frame and "tcp" in frame


def test_a_small_bulk_capture_is_read_whole_and_as_tshark_reads_it(tmp_path):
    require_tshark()
    path = str(tmp_path / "bulk.pcap")
    summary = mmc.make_bulk(path, 6, 150, seed=7, reorder=0.05, retransmit=0.05)
    tether = tether_mqtt(path)
    assert sum(len(r) for r in tether.values()) == summary["mqtt_packets"]
    differing = compare_with_tshark(tether, tshark_packets(path))
    assert not differing, f"{len(differing)} frames differ from tshark, first: {list(differing.items())[:3]}"


def test_a_real_mosquitto_session_recorded_by_tether_reads_as_tshark_reads_it(tmp_path):
    require_tshark()
    paho = pytest.importorskip("paho.mqtt.client", reason="paho-mqtt is installed by ./CI/test (Harness/rigs/requirements.txt)")
    from mqtt_broker import Broker

    with Broker(port=0) as broker:
        out = str(tmp_path / "set")
        recorder = subprocess.Popen([tether_binary(), "record", "--tcp", f"lo:{broker.port}", "--out", out],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(1.5)  # libpcap is capturing once the set folder exists
            deadline = time.time() + 10
            while not os.path.exists(os.path.join(out, "manifest.yaml")) and time.time() < deadline:
                time.sleep(0.1)
            for version in (paho.MQTTv311, paho.MQTTv5):
                client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=f"widget-{version}", protocol=version)
                client.connect("127.0.0.1", broker.port)
                client.loop_start()
                client.subscribe([("tether/demo/thing/properties", 1), ("tether/demo/thing/status", 0)])
                time.sleep(0.2)
                for n in range(5):
                    client.publish("tether/demo/thing/properties", json.dumps({"iotId": "lamp", "items": {"power": {"value": n, "time": 1000 + n}}}), qos=n % 2)
                client.publish("tether/demo/big", b"x" * 100_000, qos=1).wait_for_publish(5)
                time.sleep(0.5)
                client.disconnect()
                client.loop_stop()
            time.sleep(1.2)
        finally:
            recorder.terminate()
            _, err = recorder.communicate(timeout=30)
        assert recorder.returncode == 0, err
    tether = tether_mqtt(out)
    types = [r["type"] for records in tether.values() for r in records]
    # Two sessions, each: CONNECT, CONNACK, SUBSCRIBE, SUBACK, 6 PUBLISH out, and the broker's
    # copies of the 5 on a subscribed topic back.
    assert types.count(1) == 2 and types.count(2) == 2 and types.count(8) == 2 and types.count(9) == 2
    assert types.count(3) == 22
    big = [r for records in tether.values() for r in records if r.get("topic") == "tether/demo/big"]
    assert len(big) == 2 and all(len(r["payload"]) == 200_000 for r in big)
    capture = os.path.join(out, "capture.pcapng")
    shown = tshark_packets(capture, extra=["-d", f"tcp.port=={broker.port},mqtt"])
    differing = compare_with_tshark(tether, shown)
    assert not differing, f"{len(differing)} frames differ from tshark, first: {list(differing.items())[:3]}"
