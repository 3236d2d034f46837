"""make_mqtt_capture.py against the MQTT standards, against itself and against tshark.

Run: python3 -m pytest -q -p no:cacheprovider Harness/wireshark/test_mqtt_capture.py

Without tshark: the encoder writes the byte strings the OASIS MQTT 3.1.1 and 5.0 standards state;
the `cases` capture is well-formed classic pcap (header, record lengths, IPv4 header and TCP
checksums recomputed here word by word), deterministic, the same in its four variants, and its
sidecar states what every case claims (the in-order rule for out-of-order, retransmitted and
overlapping segments, a topic alias, packets sharing a segment); `bulk` writes the frames,
packets and bytes it reports, deterministically from its seed.

With tshark (apt-get install -y tshark; these tests are skipped without it): under
make_mqtt_capture.TSHARK_OPTIONS tshark's MQTT packets per frame equal the sidecar's, frame by
frame, for Ethernet and raw, IPv4 and IPv6 and for a small `bulk` capture with many reordered and
retransmitted segments, modulo exactly the differences the generator's docstring lists ("Where
tshark 4.0 differs"), each of which is checked to still be there; tshark finds every checksum
good and no MQTT on port 8080; each pinned TCP option is needed; tshark counts the PUBLISH packets
`bulk` reports.
"""

import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_mqtt_capture as mmc  # noqa: E402  (the script next to this file)

SCRIPT = os.path.join(HERE, "make_mqtt_capture.py")
TSHARK_TIMEOUT_S = 120
needs_tshark = pytest.mark.skipif(shutil.which("tshark") is None,
                                  reason="tshark is not installed (apt-get install -y tshark)")
VARIANTS = [("ethernet", False), ("raw", False), ("ethernet", True), ("raw", True)]
VARIANT_IDS = [f"{linktype}-{'v6' if ipv6 else 'v4'}" for linktype, ipv6 in VARIANTS]


# --------------------------------------------------------------------------------------------
# Reading what was written
# --------------------------------------------------------------------------------------------


def read_pcap(path):
    """(linktype, [(seconds, micros, frame bytes)]) of a classic microsecond pcap file."""
    with open(path, "rb") as f:
        data = f.read()
    magic, major, minor, _, _, snaplen, linktype = struct.unpack_from("<IHHiIII", data)
    assert (magic, major, minor, snaplen) == (0xA1B2C3D4, 2, 4, 0xFFFF)
    records, at = [], 24
    while at < len(data):
        seconds, micros, captured, original = struct.unpack_from("<IIII", data, at)
        assert captured == original and micros < 1_000_000
        records.append((seconds, micros, data[at + 16:at + 16 + captured]))
        at += 16 + captured
    assert at == len(data)
    return linktype, records


def word_sum(data):
    """The ones' complement sum of 16-bit words, folded: computed word by word (not as the
    generator does), so the checksums are checked independently."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f">{len(data) // 2}H", data))
    while total > 0xFFFF:
        total = (total & 0xFFFF) + (total >> 16)
    return total


def tcp_segments(linktype, frame):
    """(ip version, src, dst, TCP header fields dict, payload) of one frame, checking the IPv4
    header checksum and the TCP checksum on the way."""
    if linktype == mmc.LINKTYPE_ETHERNET:
        ethertype = struct.unpack_from(">H", frame, 12)[0]
        packet = frame[14:]
        assert ethertype == (0x0800 if packet[0] >> 4 == 4 else 0x86DD)
    else:
        assert linktype == mmc.LINKTYPE_RAW
        packet = frame
    if packet[0] >> 4 == 4:
        assert packet[0] == 0x45 and packet[9] == 6
        assert word_sum(packet[:20]) == 0xFFFF, "bad IPv4 header checksum"
        total_length = struct.unpack_from(">H", packet, 2)[0]
        assert total_length == len(packet)
        src, dst, tcp = packet[12:16], packet[16:20], packet[20:]
        pseudo = src + dst + struct.pack(">xBH", 6, len(tcp))
    else:
        assert packet[0] >> 4 == 6 and packet[6] == 6
        assert struct.unpack_from(">H", packet, 4)[0] == len(packet) - 40
        src, dst, tcp = packet[8:24], packet[24:40], packet[40:]
        pseudo = src + dst + struct.pack(">IxxxB", len(tcp), 6)
    assert word_sum(pseudo + tcp) == 0xFFFF, "bad TCP checksum"
    sport, dport, seq, ack, offset, flags = struct.unpack_from(">HHIIBB", tcp)
    header = {"sport": sport, "dport": dport, "seq": seq, "ack": ack, "flags": flags}
    return packet[0] >> 4, src, dst, header, tcp[(offset >> 4) * 4:]


def split(value):
    return value.split(",") if value else []


def tshark_packets(capture, options=None, extra=()):
    """frame number -> {field: [values]} for every frame in which tshark shows MQTT."""
    options = mmc.TSHARK_OPTIONS if options is None else options
    command = ["tshark", "-n", "-r", capture, *options, *extra, "-T", "fields",
               "-E", "occurrence=a", "-E", "separator=/t", "-E", "aggregator=,"]
    for field in mmc.TSHARK_FIELDS:
        command += ["-e", field]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TSHARK_TIMEOUT_S)
    assert result.returncode == 0, result.stderr
    frames = {}
    for line in result.stdout.splitlines():
        values = line.split("\t")
        number, fields = int(values[0]), dict(zip(mmc.TSHARK_FIELDS[1:], values[1:]))
        if fields.get("mqtt.msgtype"):
            frames[number] = {name: split(fields.get(name, "")) for name in mmc.TSHARK_FIELDS[1:]}
    return frames


def tshark_view(records):
    """What tshark shows for the sidecar's packets of one frame, field by field, by the rules of
    the generator's docstring: `mqtt.qos` on PUBLISH only, `mqtt.topic` once per PUBLISH (the
    resolved topic for an alias) and once per SUBSCRIBE/UNSUBSCRIBE filter, `mqtt.msgid` on every
    packet that has one, `mqtt.msg` once per PUBLISH: `<MISSING>` for an empty message."""
    view = {name: [] for name in mmc.TSHARK_FIELDS[1:]}
    for r in records:
        view["mqtt.msgtype"].append(str(r["type"]))
        if r["type"] in (mmc.SUBSCRIBE, mmc.UNSUBSCRIBE):
            view["mqtt.topic"] += r["topics"]
        elif r["type"] == mmc.PUBLISH:
            view["mqtt.topic"].append(r["topic"])
            view["mqtt.qos"].append(str(r["qos"]))
            view["mqtt.msg"].append(r["payload"] or "<MISSING>")
        if r["packet_id"] is not None:
            view["mqtt.msgid"].append(str(r["packet_id"]))
    return view


def load_sidecar(path):
    with open(path, encoding="utf-8") as f:
        return {int(frame): records for frame, records in json.load(f).items()}


def differences(sidecar, shown, unreliable=()):
    """{frame: (expected view, tshark's)} for every frame where they differ, leaving out the
    frames where tshark is documented to be wrong."""
    out = {}
    for frame in sorted(set(sidecar) | set(shown)):
        if frame in unreliable:
            continue
        expected = tshark_view(sidecar.get(frame, []))
        got = shown.get(frame, {name: [] for name in mmc.TSHARK_FIELDS[1:]})
        if expected != got:
            out[frame] = (expected, got)
    return out


# --------------------------------------------------------------------------------------------
# Captures (made once per test session)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def cases(tmp_path_factory):
    """(linktype, ipv6) -> (capture path, sidecar, case index)."""
    folder = tmp_path_factory.mktemp("mqtt")
    made = {}
    for linktype, ipv6 in VARIANTS:
        path = str(folder / f"cases-{linktype}-{'v6' if ipv6 else 'v4'}.pcap")
        index = mmc.make_cases(path, linktype, ipv6)
        made[(linktype, ipv6)] = (path, load_sidecar(path + ".json"), index)
    return made


@pytest.fixture(scope="session")
def default_cases(cases):
    return cases[("ethernet", False)]


def case_span(index, letter):
    case = next(c for c in index["cases"] if c["case"] == letter)
    return range(case["first_frame"], case["last_frame"] + 1)


def frames_of(sidecar, index, letter):
    """The sidecar's packets within one case: [(frame, records)] in frame order."""
    span = case_span(index, letter)
    return [(frame, sidecar[frame]) for frame in sorted(sidecar) if frame in span]


# --------------------------------------------------------------------------------------------
# The capture as written (no tshark)
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("linktype,ipv6", VARIANTS, ids=VARIANT_IDS)
def test_capture_is_well_formed_pcap_with_good_checksums(cases, linktype, ipv6):
    path, sidecar, index = cases[(linktype, ipv6)]
    kind, records = read_pcap(path)
    assert kind == (mmc.LINKTYPE_ETHERNET if linktype == "ethernet" else mmc.LINKTYPE_RAW)
    assert len(records) == index["cases"][-1]["last_frame"]
    times = [seconds * 1_000_000 + micros for seconds, micros, _ in records]
    assert all(b - a == mmc.GAP_US for a, b in zip(times, times[1:]))
    for _, _, frame in records:
        version, *_ = tcp_segments(kind, frame)
        assert version == (6 if ipv6 else 4)
    assert max(sidecar) <= len(records)


def test_cases_are_deterministic_and_variants_carry_the_same_truth(cases, tmp_path):
    path, sidecar, index = cases[("ethernet", False)]
    again = str(tmp_path / "again.pcap")
    mmc.make_cases(again)
    with open(path, "rb") as a, open(again, "rb") as b:
        assert a.read() == b.read()
    for other_path, other_sidecar, other_index in cases.values():
        assert other_sidecar == sidecar
        assert other_index == index


def test_every_connection_opens_with_a_handshake_and_ends_with_fin_or_rst(default_cases):
    path, _, index = default_cases
    kind, records = read_pcap(path)
    segments = [tcp_segments(kind, frame)[3] for _, _, frame in records]
    for case in index["cases"]:
        span = [segments[n - 1] for n in range(case["first_frame"], case["last_frame"] + 1)]
        assert [s["flags"] for s in span[:3]] == [mmc.TCP_SYN, mmc.TCP_SYN | mmc.TCP_ACK, mmc.TCP_ACK]
        assert span[0]["sport"] == case["client_port"] and span[0]["dport"] == case["server_port"]
        assert all({s["sport"], s["dport"]} == {case["client_port"], case["server_port"]} for s in span)
        last_flags = [s["flags"] for s in span[-3:]]
        assert last_flags == [mmc.TCP_FIN | mmc.TCP_ACK, mmc.TCP_FIN | mmc.TCP_ACK, mmc.TCP_ACK]
    # Case h: an RST, then a new SYN from the same port with another initial sequence number.
    h = [segments[n - 1] for n in case_span(index, "h")]
    syns = [s for s in h if s["flags"] == mmc.TCP_SYN]
    assert len(syns) == 2 and syns[0]["seq"] != syns[1]["seq"] and syns[0]["sport"] == syns[1]["sport"]
    assert h.index(syns[1]) - 1 == next(i for i, s in enumerate(h) if s["flags"] & mmc.TCP_RST)
    # Case g: both initial sequence numbers are within 256 of 2^32, and the streams wrap.
    g = [segments[n - 1] for n in case_span(index, "g")]
    assert g[0]["seq"] >= 0xFFFFFF00 and g[1]["seq"] >= 0xFFFFFF00
    assert any(s["seq"] < 0x1000 for s in g if s["sport"] == 50007) and \
        any(s["seq"] < 0x1000 for s in g if s["sport"] == mmc.MQTT_PORT)


def test_the_sidecar_states_every_case(default_cases):
    path, sidecar, index = default_cases
    kind, records = read_pcap(path)
    payload_length = {n + 1: len(tcp_segments(kind, frame)[4]) for n, (_, _, frame) in enumerate(records)}
    every = [r for records_ in sidecar.values() for r in records_]
    assert {r["type"] for r in every} == set(range(1, 15))  # every type but AUTH
    # a: QoS 0, 1 and 2 PUBLISH both ways; an empty application message.
    a = [r for _, rs in frames_of(sidecar, index, "a") for r in rs]
    assert sorted(r["qos"] for r in a if r["type"] == mmc.PUBLISH) == [0, 0, 1, 1, 2, 2]
    assert [r["payload"] for r in a if r["type"] == mmc.PUBLISH].count("") == 1
    assert [r["topics"] for r in a if r["type"] == mmc.SUBSCRIBE] == [["tether/demo/a/cmd", "tether/demo/+/status"]]
    # b: the alias is set once with its topic, then used twice with an empty topic.
    b = [r for _, rs in frames_of(sidecar, index, "b") for r in rs if r.get("topic_alias")]
    assert [(r["topic"], r["topic_alias"]) for r in b] == [("tether/demo/b/telemetry", 1)] * 3
    # c: one frame completes four packets; a three-segment packet's first segment is one byte.
    c = frames_of(sidecar, index, "c")
    assert [len(rs) for _, rs in c].count(4) == 1
    first_split = next(frame for frame, rs in c if rs[0]["topic"] == "tether/demo/c/split")
    assert (payload_length[first_split - 2], payload_length[first_split - 1]) == (1, 50)
    # d: segments 1, 3, 2: the third frame completes nothing, the last one two packets.
    d = [(frame, [r["packet_id"] for r in rs]) for frame, rs in frames_of(sidecar, index, "d")
         if rs[0]["type"] == mmc.PUBLISH]
    (f1, ids1), (f2, ids2) = d
    assert (ids1, ids2, f2 - f1) == ([1], [2, 3], 3)  # seg 1, seg 3, dup ACK, seg 2
    # e: a duplicate segment completes nothing; the overlapping one completes packet 3.
    e = {r["packet_id"]: frame for frame, rs in frames_of(sidecar, index, "e") for r in rs
         if r["type"] == mmc.PUBLISH}
    assert payload_length[e[1] + 1] == payload_length[e[1]] and e[1] + 1 not in sidecar
    assert e[4] == e[3] + 1
    # f: 100 KiB in one PUBLISH.
    f = [r for _, rs in frames_of(sidecar, index, "f") for r in rs if r["type"] == mmc.PUBLISH]
    assert len(bytes.fromhex(f[0]["payload"])) == 100 * 1024
    # i: no MQTT at all.
    assert frames_of(sidecar, index, "i") == []
    # j: each direction's multi-segment PUBLISH completes while the other is still in flight.
    j = [r["topic"] for _, rs in frames_of(sidecar, index, "j") for r in rs if r["type"] == mmc.PUBLISH]
    assert j == ["tether/demo/j/cmd", "tether/demo/j/up", "tether/demo/j/up"]


def test_the_encoder_writes_the_standards_examples():
    """Byte strings stated in the OASIS standards, not computed by the encoder."""
    # MQTT 3.1.1 table 2.4 / MQTT 5.0 table 1-1: the ends of each Remaining Length size.
    for value, encoded in [(0, "00"), (127, "7f"), (128, "8001"), (16383, "ff7f"), (16384, "808001"),
                           (2097151, "ffff7f"), (2097152, "80808001"), (268435455, "ffffff7f")]:
        assert mmc.varint(value).hex() == encoded
    with pytest.raises(ValueError):
        mmc.varint(268435456)
    # MQTT 3.1.1 3.1.2.10, figure 3.6: "MQTT", level 4, flags 0xCE (user name, password, will QoS
    # 1, will, clean session), keep alive 10.
    v311 = mmc.connect(mmc.V311, "c", keep_alive=10, username="u", password=b"p",
                       will={"topic": "w", "message": b"m", "qos": 1})
    assert v311.data[2:12].hex() == "00044d51545404ce000a"
    # MQTT 5.0 3.1.2.11, figure 3-6: level 5, flags 0xC2 (user name, password, clean start), keep
    # alive 10, properties of length 5: Session Expiry Interval (0x11) 10.
    v5 = mmc.connect(mmc.V5, "c", keep_alive=10, username="u", password=b"p", props=[("session_expiry", 10)])
    assert v5.data[2:18].hex() == "00044d51545405c2000a05110000000a"
    # Fixed headers: reserved flags 0010 for PUBREL, SUBSCRIBE and UNSUBSCRIBE (3.1.1 2.2.2).
    assert mmc.pingreq().data.hex() == "c000" and mmc.pingresp().data.hex() == "d000"
    assert mmc.disconnect(mmc.V311).data.hex() == "e000"
    assert mmc.publish_response(mmc.PUBREL, mmc.V311, 0x1234).data.hex() == "62021234"
    assert mmc.subscribe(mmc.V311, 10, [("a/b", 1)]).data.hex() == "8208000a0003612f6201"
    assert mmc.unsubscribe(mmc.V311, 10, ["a/b"]).data.hex() == "a207000a0003612f62"
    # PUBLISH QoS 1, DUP, RETAIN: 0x3B; topic "a/b", packet identifier 10, message "hi".
    assert mmc.publish(mmc.V311, "a/b", b"hi", qos=1, packet_id=10, dup=True, retain=True).data.hex() == \
        "3b090003612f62000a6869"
    # MQTT 5: a PUBACK with reason 0 and no properties is the short form (3.4.2.1).
    assert mmc.publish_response(mmc.PUBACK, mmc.V5, 7).data.hex() == "40020007"
    assert mmc.publish_response(mmc.PUBACK, mmc.V5, 7, code=0x10).data.hex() == "4003000710"


def test_the_in_order_rule_on_a_hand_made_flow():
    """Flow.receive, the sidecar's rule, on known ranges: out of order, duplicate, overlap."""
    flow = mmc.Flow(0)
    packets = [mmc.pingreq(), mmc.pingresp(), mmc.pingreq()]  # 2 bytes each: ends at 2, 4, 6
    flow.write(packets)
    assert flow.receive(0, 1) == []
    assert flow.receive(3, 6) == []  # beyond a gap
    assert flow.receive(0, 1) == []  # a duplicate
    assert flow.receive(0, 3) == packets  # an overlap that fills the gap
    assert flow.receive(2, 6) == []


# --------------------------------------------------------------------------------------------
# tshark against the sidecar
# --------------------------------------------------------------------------------------------


@needs_tshark
@pytest.mark.parametrize("linktype,ipv6", VARIANTS, ids=VARIANT_IDS)
def test_tshark_shows_the_sidecar_packets_frame_by_frame(cases, linktype, ipv6):
    path, sidecar, index = cases[(linktype, ipv6)]
    shown = tshark_packets(path)
    unreliable = set(index["tshark_unreliable_frames"])
    assert differences(sidecar, shown, unreliable) == {}
    assert len(shown) >= len(sidecar) - len(unreliable & set(sidecar))


@needs_tshark
def test_two_pass_tshark_shows_an_alias_setting_topic_twice(default_cases):
    """Why the options leave out -2: in its second pass tshark 4.0 adds the alias's generated
    [Topic] to the PUBLISH that sets the alias too, so that frame shows mqtt.topic twice."""
    path, sidecar, index = default_cases
    wrong = differences(sidecar, tshark_packets(path, extra=["-2"]), set(index["tshark_unreliable_frames"]))
    setting = [frame for frame, records in sidecar.items()
               if any(r.get("topic_alias") and r["topic"] for r in records)
               and frame in case_span(index, "b")][:1]
    assert sorted(wrong) == setting
    for frame in setting:
        expected, shown = wrong[frame]
        assert shown == dict(expected, **{"mqtt.topic": expected["mqtt.topic"] * 2})


@needs_tshark
def test_the_documented_tshark_difference_is_still_there(default_cases):
    """Case k: tshark 4.0 cannot read a Remaining Length cut by a segment boundary. If a newer
    tshark can, this fails: drop the difference from the docstring and the case index."""
    path, sidecar, index = default_cases
    unreliable = index["tshark_unreliable_frames"]
    assert len(unreliable) == 3 and all(frame in case_span(index, "k") for frame in unreliable)
    assert [frame for frame in unreliable if frame in sidecar] == [unreliable[-1]]
    command = ["tshark", "-n", "-r", path, *mmc.TSHARK_OPTIONS, "-Y", "_ws.malformed", "-T", "fields",
               "-e", "frame.number"]
    malformed = subprocess.run(command, capture_output=True, text=True, timeout=TSHARK_TIMEOUT_S, check=True)
    assert [int(n) for n in malformed.stdout.split()] == [unreliable[0], unreliable[-1]]
    shown = tshark_packets(path)
    assert tshark_view(sidecar[unreliable[-1]]) != shown.get(unreliable[-1])


@needs_tshark
def test_tshark_keeps_one_topic_alias_map_per_connection(tmp_path):
    """Difference 4: MQTT 5 topic aliases are per direction; tshark 4.0 keeps one map per TCP
    conversation, so the broker's alias 1 replaces the client's. (Hence `cases` sets aliases in
    one direction only.) An alias with no mapping: no mqtt.topic, an expert info."""
    path = str(tmp_path / "alias.pcap")
    cap = mmc.Capture(path)
    conn = mmc.Connection(cap, cap.host(1), cap.host(100), 40000)
    mmc.short_session(conn, v=mmc.V5)
    for side, topic, resolved, alias in [("c", "a/up", None, 1), ("s", "b/down", None, 1), ("c", "", "a/up", 1),
                                         ("s", "", "b/down", 1), ("c", "", "a/other", 2)]:
        conn.send(side, mmc.publish(mmc.V5, topic, b"m", props=[("topic_alias", alias)], resolved_topic=resolved))
    conn.close()
    cap.close()
    truth = {frame: records for frame, records in cap.truth.items() if records[0]["type"] == mmc.PUBLISH}
    assert [r[0]["topic"] for r in truth.values()] == ["a/up", "b/down", "a/up", "b/down", "a/other"]
    shown = tshark_packets(path)
    assert [shown[frame]["mqtt.topic"] for frame in truth] == [["a/up"], ["b/down"], ["b/down"], ["b/down"], []]
    command = ["tshark", "-n", "-r", path, *mmc.TSHARK_OPTIONS, "-Y", "mqtt.unknown_topic_alias", "-T", "fields",
               "-e", "frame.number"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TSHARK_TIMEOUT_S, check=True)
    assert [int(n) for n in result.stdout.split()] == [list(truth)[-1]]


@needs_tshark
@pytest.mark.parametrize("linktype,ipv6", VARIANTS, ids=VARIANT_IDS)
def test_tshark_finds_every_checksum_good_and_port_8080_http_not_mqtt(cases, linktype, ipv6):
    path, _, index = cases[(linktype, ipv6)]
    command = ["tshark", "-n", "-r", path, *mmc.TSHARK_OPTIONS, "-o", "tcp.check_checksum:TRUE",
               "-o", "ip.check_checksum:TRUE", "-T", "fields", "-E", "separator=/t", "-e", "frame.number",
               "-e", "tcp.checksum.status", "-e", "ip.checksum.status", "-e", "tcp.port", "-e", "frame.protocols"]
    result = subprocess.run(command, capture_output=True, text=True, timeout=TSHARK_TIMEOUT_S, check=True)
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert len(rows) == index["cases"][-1]["last_frame"]
    assert [r[0] for r in rows if r[1] != "1"] == []  # 1: good
    assert [r[0] for r in rows if r[2] != ("" if ipv6 else "1")] == []
    http = [int(r[0]) for r in rows if ":http" in r[4]]
    assert len(http) == 2 and all(frame in case_span(index, "i") for frame in http)
    assert [r[0] for r in rows if "8080" in r[3].split(",") and ":mqtt" in r[4]] == []
    assert all(":mqtt" not in r[4] for r in rows if int(r[0]) in case_span(index, "i"))


@needs_tshark
@pytest.mark.parametrize("option,lost_in", [("tcp.reassemble_out_of_order", "deg"),
                                            ("tcp.analyze_sequence_numbers", "de")])
def test_each_tcp_option_is_needed(default_cases, option, lost_in):
    """Why the options pin these two: with either FALSE tshark gets cases d, e (and g) wrong:
    without out-of-order reassembly the segment that fills a hole is not dissected; without
    sequence analysis there is no reassembly out of order and a retransmission is dissected again."""
    path, sidecar, index = default_cases
    options = [o.replace(f"{option}:TRUE", f"{option}:FALSE") for o in mmc.TSHARK_OPTIONS]
    assert options != mmc.TSHARK_OPTIONS
    wrong = differences(sidecar, tshark_packets(path, options), set(index["tshark_unreliable_frames"]))
    for letter in lost_in:
        assert any(frame in case_span(index, letter) for frame in wrong), letter
    if option == "tcp.analyze_sequence_numbers":
        duplicate = min(frame for frame in wrong if frame in case_span(index, "e"))
        assert duplicate not in sidecar and duplicate - 1 in sidecar  # the copy shows the packet again
        assert wrong[duplicate][1] == tshark_view(sidecar[duplicate - 1])


# --------------------------------------------------------------------------------------------
# bulk
# --------------------------------------------------------------------------------------------


def run_bulk(path, *args):
    result = subprocess.run([sys.executable, SCRIPT, "bulk", path, *args], capture_output=True, text=True,
                            timeout=120, check=True)
    lines = result.stdout.splitlines()
    assert len(lines) == 1
    return json.loads(lines[0])


BULK_ARGS = ["--connections", "6", "--messages", "50", "--seed", "7", "--reorder", "0.15", "--retransmit", "0.15"]


@pytest.fixture(scope="session")
def bulk(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("bulk") / "bulk.pcap")
    summary = run_bulk(path, *BULK_ARGS, "--sidecar")
    return path, summary, load_sidecar(path + ".json")


def test_bulk_reports_what_it_wrote(bulk):
    path, summary, sidecar = bulk
    kind, records = read_pcap(path)
    assert kind == mmc.LINKTYPE_ETHERNET
    assert summary["frames"] == len(records)
    assert summary["bytes"] == os.path.getsize(path)
    every = [r for rs in sidecar.values() for r in rs]
    assert summary["mqtt_packets"] == len(every)
    publishes = [r for r in every if r["type"] == mmc.PUBLISH]
    assert summary["publish_packets"] == len(publishes) == 6 * 50
    # Each connection: CONNECT, CONNACK, SUBSCRIBE, SUBACK, 50 PUBLISH (25 QoS 1, each with a
    # PUBACK), DISCONNECT.
    assert summary["mqtt_packets"] == 6 * (5 + 50 + 25)
    assert sorted(r["qos"] for r in publishes) == [0] * 150 + [1] * 150
    times = [s * 1_000_000 + us for s, us, _ in records]
    assert all(b > a for a, b in zip(times, times[1:]))
    ports = set()
    for _, _, frame in records:
        header = tcp_segments(kind, frame)[3]
        ports.add(header["sport"] if header["dport"] == mmc.MQTT_PORT else header["dport"])
    assert len(ports) == 6


def test_bulk_is_deterministic_from_its_seed(bulk, tmp_path):
    path, summary, _ = bulk
    again = str(tmp_path / "again.pcap")
    assert run_bulk(again, *BULK_ARGS) == summary
    with open(path, "rb") as a, open(again, "rb") as b:
        assert a.read() == b.read()
    other = str(tmp_path / "other.pcap")
    run_bulk(other, *BULK_ARGS[:-6], "--seed", "8", *BULK_ARGS[-4:])
    with open(path, "rb") as a, open(other, "rb") as b:
        assert a.read() != b.read()


def test_bulk_options_change_the_capture(tmp_path):
    v6 = run_bulk(str(tmp_path / "v6.pcap"), "--connections", "2", "--messages", "4", "--ipv6", "--linktype", "raw",
                  "--payload-size", "500")
    kind, records = read_pcap(str(tmp_path / "v6.pcap"))
    assert kind == mmc.LINKTYPE_RAW and v6["frames"] == len(records)
    assert all(tcp_segments(kind, frame)[0] == 6 for _, _, frame in records)
    assert max(len(frame) for _, _, frame in records) >= 40 + 20 + 500


@needs_tshark
def test_tshark_counts_the_bulk_publishes_and_agrees_frame_by_frame(bulk):
    path, summary, sidecar = bulk
    shown = tshark_packets(path)
    assert sum(f["mqtt.msgtype"].count("3") for f in shown.values()) == summary["publish_packets"]
    assert sum(len(f["mqtt.msgtype"]) for f in shown.values()) == summary["mqtt_packets"]
    assert differences(sidecar, shown) == {}
