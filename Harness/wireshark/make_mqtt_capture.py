#!/usr/bin/env python3
"""Write MQTT-over-TCP captures with every TCP reassembly edge case, and the MQTT packets each frame completes.

An independent generator for checking Tether's TCP stream reassembler and MQTT 3.1.1/5.0
dissector against tshark: its MQTT encoder is written here from the OASIS MQTT 3.1.1 and MQTT 5.0
standards (fixed header and Remaining Length, UTF-8 strings, binary data, properties), its TCP
from RFC 793/9293; Python 3.11 standard library only.

Output: classic pcap (magic a1b2c3d4, microsecond timestamps, snaplen 65535), LINKTYPE_ETHERNET (1)
or with `--linktype raw` LINKTYPE_RAW (101); IPv4 (192.0.2.0/24, TEST-NET-1) or with `--ipv6`
IPv6 (2001:db8::/32). IPv4 header checksums and TCP checksums are computed (tshark with
`-o ip.check_checksum:TRUE -o tcp.check_checksum:TRUE` finds every one good). SYN and SYN-ACK carry
an MSS option of 1460; the window is 65535; timestamps start at 2024-06-01 00:00:00 UTC and
increase with every frame: by 100 us in `cases`, by 20-180 us drawn from `--seed` in `bulk`. The
Ethernet, raw, IPv4 and IPv6 variants of `cases` have the same frames in the same order, so the
same sidecar.

Usage:
    make_mqtt_capture.py cases OUT.pcap [--linktype ethernet|raw] [--ipv6] [--sidecar PATH]
    make_mqtt_capture.py bulk OUT.pcap --connections N --messages M [--seed S] [--payload-size B]
        [--reorder P] [--retransmit P] [--linktype ethernet|raw] [--ipv6] [--sidecar [PATH]]

`cases` writes a fixed, deterministic capture: one TCP connection per case, one after another,
client 192.0.2.1 (2001:db8::1), server 192.0.2.100 (2001:db8::100) port 1883, each opened by
SYN / SYN-ACK / ACK and closed by FIN / FIN / ACK, the receiver acknowledging data (a reply
carries the ACK, otherwise a pure ACK follows):
    a  50001  MQTT 3.1.1 session: CONNECT (client id, keep alive, user name, password, a QoS 1
              retained will), CONNACK, SUBSCRIBE (two filters, QoS 0 and 1) / SUBACK, PUBLISH QoS
              0, QoS 1 + PUBACK, QoS 2 + PUBREC / PUBREL / PUBCOMP client->broker and
              broker->client, a QoS 1 PUBLISH broker->client, a PUBLISH with an empty message,
              UNSUBSCRIBE (two filters) / UNSUBACK, PINGREQ / PINGRESP, DISCONNECT.
    b  50002  MQTT 5 session: CONNECT with properties (session expiry, receive maximum, topic alias
              maximum, user property) and a will with will properties; CONNACK with properties
              (assigned client id, maximum QoS, topic alias maximum, ...); SUBSCRIBE with a
              subscription identifier and options (No Local, Retain As Published, Retain
              Handling) / SUBACK with reason codes 1, 0, 0x87 and a reason string; PUBLISH QoS 1
              with payload format, message expiry, content type, response topic, correlation
              data and two user properties / PUBACK reason 0x10 with a reason string; a PUBLISH
              that sets topic alias 1 with its topic, then two (QoS 0 and QoS 1) with an empty
              topic and alias 1, all client->broker; a broker->client PUBLISH with a subscription
              identifier and a short PUBACK; UNSUBSCRIBE / UNSUBACK with reason codes; DISCONNECT
              reason 0x04 with a reason string. No AUTH.
    c  50003  One PUBLISH over 3 segments, the first holding only its type byte; four packets in
              one segment (and two in the reply); three PUBLISHes over three segments: [P1 part]
              [P1 end, P2, P3 start] [P3 end].
    d  50004  Out of order: three segments of three PUBLISHes sent 1, 3, 2 (a duplicate ACK after
              3): segment 1 completes P1, segment 3 nothing, segment 2 completes P2 and P3.
    e  50005  Retransmission: a whole-packet segment sent twice (same sequence number, same
              bytes); a packet's first segment sent twice; an overlap: bytes [0, 60) of P3, then
              a segment covering [0, len(P3) + 30) (old bytes and new), then the rest of P4.
    f  50006  A 100 KiB PUBLISH over 1460-byte segments, ACKed every second segment.
    g  50007  Initial sequence numbers 0xFFFFFF00 (client) and 0xFFFFFFF0 (server): both flows
              wrap past 2^32 inside a PUBLISH, the server's inside a segment that arrives out of
              order (1, 3, 2).
    h  50008  An MQTT 3.1.1 connection with a PUBLISH half sent, ended by RST; then a new
              connection from the same port with other initial sequence numbers, MQTT 5.
    i  50009  Not MQTT: HTTP on port 8080 (its bytes include 0x10 and 0x30).
    j  50010  Both directions send a multi-segment PUBLISH at once, the segments interleaved; then
              a segment with a PUBACK and a PUBLISH.
    k  50011  A segment that ends inside a two-byte Remaining Length (type byte and the first
              length byte), the rest in two more segments; the client then closes without
              DISCONNECT. See "Where tshark 4.0 differs".
Beside OUT.pcap it writes the sidecar OUT.pcap.json (or --sidecar PATH) and OUT.pcap.cases.json:
{"tshark_options": [...], "cases": [{"case", "summary", "client_port", "server_port",
"first_frame", "last_frame"}], "tshark_unreliable_frames": [frame numbers]}.

`bulk` writes a large realistic capture for benchmarks: N concurrent connections (client
192.0.2.2-201, ports 20000 + i; every fourth MQTT 5) interleaved at random a step at a time, each
CONNECT / CONNACK / SUBSCRIBE / SUBACK, then M PUBLISH messages alternating QoS 0 and QoS 1 (each
QoS 1 answered by a PUBACK), JSON payloads of about B bytes (default 200) on
tether/demo/thing-NNNN/properties (every eighth message broker->client on .../commands), then
DISCONNECT and FIN. Pure ACKs follow every second unanswered segment; 10% of QoS 0 messages share a
segment with the next message, 3% of flights are cut at random points; with probability --reorder
(default 0.002) a flight has two adjacent segments swapped, with --retransmit (default 0.002) one
segment is sent again (half the time as an overlap running on into the next segment's new bytes).
No cut falls inside a Remaining Length. It prints one JSON line {"frames": F, "mqtt_packets": P,
"bytes": B, "publish_packets": Q} (frames written, MQTT packets written and completed, the file's
size, PUBLISH packets among them) and, with --sidecar, writes the sidecar too. About 17 us of CPU a
frame: `bulk --connections 50 --messages 20000` is 1.67 million frames, 360 MB, in about 30 s.

The sidecar (JSON object, keys in frame order): frame number (1-based, as a string) -> the MQTT
packets that frame completes, in stream order; frames that complete none are left out. A packet
belongs to the frame whose segment makes its last byte available in sequence order (the in-order
rule: a segment beyond a hole completes nothing; the segment that fills the hole completes every
packet up to the next hole; a segment of bytes already received completes nothing). The rule is
applied by simulating the receiver of every flow over the segments as sent, not by hand. Each
packet: {"type": int (1-15), "topic": str|null (PUBLISH: its topic, for an empty topic with a
topic alias the topic the alias stands for; SUBSCRIBE/UNSUBSCRIBE: the first filter), "qos":
int|null (PUBLISH's header QoS only), "packet_id": int|null, "payload": hex|null (PUBLISH's
application message only; "" when empty)}, plus "topic_alias": int on a PUBLISH that carries a
Topic Alias property and "topics": [every filter] on SUBSCRIBE/UNSUBSCRIBE.

tshark (4.0) reads the same per frame with

    tshark -r FILE -o tcp.desegment_tcp_streams:TRUE -o tcp.reassemble_out_of_order:TRUE
        -o tcp.analyze_sequence_numbers:TRUE -o mqtt.show_msg_as_text:FALSE
        -T fields -e frame.number -e mqtt.msgtype -e mqtt.topic -e mqtt.qos -e mqtt.msgid -e mqtt.msg
        -E occurrence=a -E separator=/t -E aggregator=,

(TSHARK_OPTIONS and TSHARK_FIELDS below):
  - tcp.reassemble_out_of_order:TRUE is required (4.0's default is FALSE): without it the segment
    that fills a hole is taken for a retransmission and not dissected (tcp.no_subdissector_on_error
    is TRUE by default), so case d's P2 and P3, case e's overlap and case g's out-of-order PUBLISH
    are lost. tcp.desegment_tcp_streams and tcp.analyze_sequence_numbers are TRUE by default and
    both are required (without sequence analysis there is no out-of-order reassembly and
    retransmitted bytes are dissected again); they are given so that a profile cannot change them.
    mqtt.show_msg_as_text:FALSE keeps the message in mqtt.msg as hex (TRUE moves it to
    mqtt.msg_text).
  - One pass: do not add -2 (see below). `-d tcp.port==1883,mqtt` is not needed: 1883 is MQTT's
    port in tshark; port 8080 goes to HTTP.
  - Under these options tshark attributes every MQTT packet to the frame the in-order rule names,
    including retransmitted, overlapping, out-of-order and wrapped segments and the reused port
    (tshark: "TCP Port numbers reused", a new conversation whose own CONNECT sets the version).
  - Reading the fields: each field's values in a frame are its occurrences in packet order, joined
    by ","; no topic or filter in these captures contains a comma. Per sidecar packet, tshark
    shows: mqtt.msgtype once; mqtt.topic once for a PUBLISH (an alias-only PUBLISH shows the
    resolved topic as a generated [Topic] item) and once per filter of a SUBSCRIBE or UNSUBSCRIBE,
    never for other types (CONNECT's will topic is mqtt.willtopic, MQTT 5's response topic a
    property); mqtt.qos for a PUBLISH only (the will QoS is mqtt.conflag.qos, requested QoS
    mqtt.sub.qos or mqtt.subscription_options_qos, granted mqtt.suback.qos or
    mqtt.suback.reason_code); mqtt.msgid for every packet with a packet identifier; mqtt.msg once
    per PUBLISH, as lowercase hex without separators. Frames without MQTT have an empty
    mqtt.msgtype. test_mqtt_capture.tshark_view is this mapping in code.

Where tshark 4.0 differs and why (test_mqtt_capture.py compares modulo exactly these):
  1. A segment boundary inside a multi-byte Remaining Length, after its first byte (case k): MQTT's
     get_mqtt_pdu_len reads the whole variable length integer, but tcp_dissect_pdus asks for more
     data only when fewer than 2 bytes (the fixed length MQTT registers) are there, so the read
     runs past the segment and throws: that frame is [Malformed Packet], and tshark then takes
     the following bytes of that flow for new packets (a "Reserved" type 0 packet, then a
     malformed CONNECT and a PUBCOMP where the PUBLISH completes). The client's data frames from
     the cut on (three frames) are listed in OUT.pcap.cases.json "tshark_unreliable_frames":
     compare nothing in them; the sidecar has the PUBLISH on the last. A segment holding only the
     type byte (case c) is fine (fewer than 2 bytes: tshark waits). `bulk` never cuts there.
  2. A PUBLISH with an empty application message (case a, "payload": ""): tshark shows mqtt.msg
     all the same, with the text <MISSING> (how -T fields prints a zero-length byte field).
  3. With two-pass analysis (-2) the PUBLISH that sets a topic alias with its topic shows
     mqtt.topic twice (its own, and in the second pass the generated [Topic] of the alias map).
     One pass shows it once, hence no -2.
  4. tshark keeps one topic alias map per TCP conversation, not one per direction as MQTT 5 says
     (3.3.2.3.4): a broker->client PUBLISH setting alias 1 would change what a client->broker
     alias 1 resolves to in tshark. The cases set aliases client->broker only, so this does not
     show; an alias with no mapping shows no mqtt.topic (and an "Unknown topic alias" expert).
"""

import argparse
import json
import random
import struct
import sys
from dataclasses import dataclass

# --------------------------------------------------------------------------------------------
# MQTT control packets (OASIS MQTT 3.1.1, section 2-3; MQTT 5.0, sections 2-3)
# --------------------------------------------------------------------------------------------

CONNECT, CONNACK, PUBLISH, PUBACK, PUBREC, PUBREL, PUBCOMP = 1, 2, 3, 4, 5, 6, 7
SUBSCRIBE, SUBACK, UNSUBSCRIBE, UNSUBACK, PINGREQ, PINGRESP, DISCONNECT, AUTH = 8, 9, 10, 11, 12, 13, 14, 15

V311, V5 = 4, 5  # the Protocol Level byte of CONNECT

#: MQTT 5.0 property identifiers (section 2.2.2.2) and how each value is encoded.
BYTE, TWO, FOUR, VARINT, UTF8, BINARY, PAIR = "byte", "two", "four", "varint", "utf8", "binary", "pair"
PROPERTIES = {
    "payload_format": (0x01, BYTE), "message_expiry": (0x02, FOUR), "content_type": (0x03, UTF8),
    "response_topic": (0x08, UTF8), "correlation_data": (0x09, BINARY), "subscription_id": (0x0B, VARINT),
    "session_expiry": (0x11, FOUR), "assigned_client_id": (0x12, UTF8), "server_keep_alive": (0x13, TWO),
    "auth_method": (0x15, UTF8), "auth_data": (0x16, BINARY), "request_problem_info": (0x17, BYTE),
    "will_delay": (0x18, FOUR), "request_response_info": (0x19, BYTE), "response_info": (0x1A, UTF8),
    "server_reference": (0x1C, UTF8), "reason_string": (0x1F, UTF8), "receive_maximum": (0x21, TWO),
    "topic_alias_maximum": (0x22, TWO), "topic_alias": (0x23, TWO), "maximum_qos": (0x24, BYTE),
    "retain_available": (0x25, BYTE), "user_property": (0x26, PAIR), "maximum_packet_size": (0x27, FOUR),
    "wildcard_available": (0x28, BYTE), "subscription_id_available": (0x29, BYTE),
    "shared_available": (0x2A, BYTE),
}


def varint(value):
    """A Variable Byte Integer: 7 bits a byte, least significant group first, 0x80 = more follow."""
    if not 0 <= value <= 268_435_455:
        raise ValueError(f"{value} does not fit a variable byte integer")
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def utf8(text):
    """A UTF-8 Encoded String: a 16-bit big-endian length, then the bytes."""
    raw = text.encode("utf-8")
    return struct.pack(">H", len(raw)) + raw


def binary(data):
    """Binary Data: a 16-bit big-endian length, then the bytes."""
    return struct.pack(">H", len(data)) + bytes(data)


def properties(props=()):
    """An MQTT 5 property block: its length as a variable byte integer, then each property.

    `props` is a sequence of (name, value) from PROPERTIES; a user property's value is a
    (key, value) pair, and a name may repeat."""
    body = bytearray()
    for name, value in props:
        ident, kind = PROPERTIES[name]
        body += varint(ident)
        if kind == BYTE:
            body.append(value)
        elif kind == TWO:
            body += struct.pack(">H", value)
        elif kind == FOUR:
            body += struct.pack(">I", value)
        elif kind == VARINT:
            body += varint(value)
        elif kind == UTF8:
            body += utf8(value)
        elif kind == BINARY:
            body += binary(value)
        else:
            body += utf8(value[0]) + utf8(value[1])
    return varint(len(body)) + bytes(body)


@dataclass
class Packet:
    """One encoded MQTT control packet and the facts the sidecar states about it (type None:
    bytes of another protocol, which the sidecar leaves out)."""

    data: bytes
    type: int
    topic: str = None
    qos: int = None
    packet_id: int = None
    payload: bytes = None
    topic_alias: int = None
    topics: list = None

    def record(self):
        out = {"type": self.type, "topic": self.topic, "qos": self.qos, "packet_id": self.packet_id,
               "payload": None if self.payload is None else self.payload.hex()}
        if self.topic_alias is not None:
            out["topic_alias"] = self.topic_alias
        if self.topics is not None:
            out["topics"] = list(self.topics)
        return out


def control(kind, flags, body):
    """The fixed header (type, flags, Remaining Length) followed by `body`."""
    return bytes([kind << 4 | flags]) + varint(len(body)) + body


def connect(version, client_id, keep_alive=60, clean=True, username=None, password=None, will=None,
            props=()):
    """CONNECT. `will` is a dict: topic, message (bytes), qos, retain and (MQTT 5) props."""
    flags = 0x02 if clean else 0
    if will is not None:
        flags |= 0x04 | will.get("qos", 0) << 3 | (0x20 if will.get("retain") else 0)
    if username is not None:
        flags |= 0x80
    if password is not None:
        flags |= 0x40
    body = bytearray(utf8("MQTT") + bytes([version, flags]) + struct.pack(">H", keep_alive))
    if version == V5:
        body += properties(props)
    body += utf8(client_id)
    if will is not None:
        if version == V5:
            body += properties(will.get("props", ()))
        body += utf8(will["topic"]) + binary(will["message"])
    if username is not None:
        body += utf8(username)
    if password is not None:
        body += binary(password)
    return Packet(control(CONNECT, 0, bytes(body)), CONNECT)


def connack(version, session_present=False, code=0, props=()):
    body = bytes([1 if session_present else 0, code])
    if version == V5:
        body += properties(props)
    return Packet(control(CONNACK, 0, body), CONNACK)


def publish(version, topic, payload, qos=0, packet_id=None, retain=False, dup=False, props=(),
            resolved_topic=None):
    """PUBLISH. With an empty `topic` and a topic alias property, `resolved_topic` is the topic
    the alias stands for (what the sidecar records)."""
    if (qos > 0) != (packet_id is not None):
        raise ValueError("a packet identifier goes with QoS 1 and 2 only")
    body = bytearray(utf8(topic))
    if qos > 0:
        body += struct.pack(">H", packet_id)
    if version == V5:
        body += properties(props)
    body += payload
    flags = (0x08 if dup else 0) | qos << 1 | (0x01 if retain else 0)
    alias = next((value for name, value in props if name == "topic_alias"), None)
    return Packet(control(PUBLISH, flags, bytes(body)), PUBLISH, topic=resolved_topic or topic, qos=qos,
                  packet_id=packet_id, payload=bytes(payload), topic_alias=alias)


def publish_response(kind, version, packet_id, code=0, props=()):
    """PUBACK, PUBREC, PUBREL or PUBCOMP. MQTT 5 leaves out the reason code and properties when
    the code is 0 and there are no properties (section 3.4.2.1)."""
    body = struct.pack(">H", packet_id)
    if version == V5 and (code or props):
        body += bytes([code]) + (properties(props) if props else b"")
    return Packet(control(kind, 0x02 if kind == PUBREL else 0, body), kind, packet_id=packet_id)


def subscribe(version, packet_id, filters, props=()):
    """SUBSCRIBE. `filters` holds (topic filter, options byte): the requested QoS in MQTT 3.1.1,
    QoS | No Local << 2 | Retain As Published << 3 | Retain Handling << 4 in MQTT 5."""
    body = bytearray(struct.pack(">H", packet_id))
    if version == V5:
        body += properties(props)
    for topic, options in filters:
        body += utf8(topic) + bytes([options])
    topics = [topic for topic, _ in filters]
    return Packet(control(SUBSCRIBE, 0x02, bytes(body)), SUBSCRIBE, topic=topics[0], packet_id=packet_id,
                  topics=topics)


def sub_options(qos, no_local=False, retain_as_published=False, retain_handling=0):
    return qos | (0x04 if no_local else 0) | (0x08 if retain_as_published else 0) | retain_handling << 4


def suback(version, packet_id, codes, props=()):
    body = struct.pack(">H", packet_id) + (properties(props) if version == V5 else b"") + bytes(codes)
    return Packet(control(SUBACK, 0, body), SUBACK, packet_id=packet_id)


def unsubscribe(version, packet_id, topics, props=()):
    body = bytearray(struct.pack(">H", packet_id))
    if version == V5:
        body += properties(props)
    for topic in topics:
        body += utf8(topic)
    return Packet(control(UNSUBSCRIBE, 0x02, bytes(body)), UNSUBSCRIBE, topic=topics[0], packet_id=packet_id,
                  topics=list(topics))


def unsuback(version, packet_id, codes=(), props=()):
    body = struct.pack(">H", packet_id)
    if version == V5:
        body += properties(props) + bytes(codes)
    return Packet(control(UNSUBACK, 0, body), UNSUBACK, packet_id=packet_id)


def pingreq():
    return Packet(control(PINGREQ, 0, b""), PINGREQ)


def pingresp():
    return Packet(control(PINGRESP, 0, b""), PINGRESP)


def disconnect(version, code=0, props=()):
    body = b""
    if version == V5 and (code or props):
        body = bytes([code]) + (properties(props) if props else b"")
    return Packet(control(DISCONNECT, 0, body), DISCONNECT)


# --------------------------------------------------------------------------------------------
# Packets on the wire: pcap, Ethernet, IPv4/IPv6, TCP
# --------------------------------------------------------------------------------------------

LINKTYPE_ETHERNET, LINKTYPE_RAW = 1, 101
TCP_FIN, TCP_SYN, TCP_RST, TCP_PSH, TCP_ACK = 0x01, 0x02, 0x04, 0x08, 0x10
MSS = 1460
WINDOW = 65535
MQTT_PORT = 1883
#: 2024-06-01 00:00:00 UTC: the first frame's time.
START_TIME_S = 1_717_200_000
GAP_US = 100


def fold(total):
    """The Internet checksum (RFC 1071) of data whose 16-bit words add up to `total`: any sum
    congruent modulo 0xFFFF does, since 0x10000 = 1 (mod 0xFFFF) is the end-around carry (a
    32-bit field may go in whole; a byte string as one big-endian integer). The data here is
    never all zero, so its ones' complement sum is 0xFFFF, never 0, when `total` is a multiple."""
    return 0xFFFF - (total % 0xFFFF or 0xFFFF)


IPV4_HEADER = struct.Struct(">BBHHHBBH")  # then the two addresses
TCP_HEADER = struct.Struct(">HHIIHHHH")  # then the options
RECORD_HEADER = struct.Struct("<IIII")


@dataclass
class Host:
    """An endpoint: its address, its MAC and its IPv4 Identification counter."""

    ip: bytes  # 4 or 16 bytes
    mac: bytes
    ip_id: int = 0x1000  # the next IPv4 Identification


class Route:
    """One direction of a TCP connection as every segment of it goes on the wire: the link
    header, the addresses and ports, and the checksum sums of what never changes."""

    def __init__(self, cap, src, dst, sport, dport):
        self.src, self.sport, self.dport = src, sport, dport
        ethertype = b"\x86\xdd" if cap.ipv6 else b"\x08\x00"
        self.link = dst.mac + src.mac + ethertype if cap.ethernet else b""
        self.addresses = src.ip + dst.ip
        addresses = int.from_bytes(src.ip, "big") + int.from_bytes(dst.ip, "big")
        # TCP: the pseudo-header's addresses and protocol, the ports and the window (the
        # checksum and urgent pointer fields are 0). IPv4: all but the length, id and checksum.
        self.tcp_sum = addresses + 6 + sport + dport + WINDOW
        self.ip_sum = addresses + 0x4500 + 0x4000 + (64 << 8 | 6)


class Capture:
    """A classic pcap file being written, and the sidecar's truth: frame -> MQTT packets."""

    def __init__(self, path, linktype="ethernet", ipv6=False, gaps=None):
        self.path = path
        self.ipv6 = ipv6
        self.ethernet = linktype == "ethernet"
        self.out = open(path, "wb", buffering=1 << 22)
        self.out.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 0xFFFF,
                                   LINKTYPE_ETHERNET if self.ethernet else LINKTYPE_RAW))
        self.frames = 0
        self.bytes = 24
        self.time_us = 0
        self.gaps = gaps  # None: GAP_US between frames; else a callable giving each gap
        self.truth = {}  # frame number -> [Packet record]
        self.packets = 0  # MQTT packets completed (each counted once)
        self.publishes = 0
        self.keep_truth = True

    def host(self, index):
        """Host `index` (1-254): 192.0.2.index (TEST-NET-1) or 2001:db8::index, MAC
        02:00:00:00:00:index (locally administered)."""
        if not 1 <= index <= 254:
            raise ValueError(f"host {index} is not in 1-254")
        ip = bytes.fromhex("20010db8" + "00" * 11) + bytes([index]) if self.ipv6 else bytes([192, 0, 2, index])
        return Host(ip, bytes([0x02, 0, 0, 0, 0, index]))

    def emit(self, route, seq, ack, flags, payload=b"", options=b""):
        """Writes one TCP segment along `route`; returns its frame number."""
        hlen = 20 + len(options)
        length = hlen + len(payload)
        total = route.tcp_sum + length + seq + ack + (hlen << 10 | flags)
        if options:
            total += int.from_bytes(options, "big")
        if payload:  # it starts on an even offset of the segment; an odd length is padded
            total += int.from_bytes(payload, "big") << (8 if len(payload) & 1 else 0)
        tcp = TCP_HEADER.pack(route.sport, route.dport, seq, ack, hlen << 10 | flags, WINDOW, fold(total), 0)
        if self.ipv6:
            ip = struct.pack(">IHBB", 0x60000000, length, 6, 64)
        else:
            src = route.src
            ident = src.ip_id
            src.ip_id = (ident + 1) & 0xFFFF
            ip = IPV4_HEADER.pack(0x45, 0, 20 + length, ident, 0x4000, 64, 6,
                                  fold(route.ip_sum + 20 + length + ident))
        size = len(route.link) + len(ip) + len(route.addresses) + length
        self.time_us += GAP_US if self.gaps is None else self.gaps()
        seconds, micros = divmod(self.time_us, 1_000_000)
        self.out.write(b"".join((RECORD_HEADER.pack(START_TIME_S + seconds, micros, size, size), route.link, ip,
                                 route.addresses, tcp, options, payload)))
        self.frames += 1
        self.bytes += 16 + size
        return self.frames

    def completed(self, frame, packets):
        for packet in packets:
            if packet.type is None:  # bytes of another protocol
                continue
            self.packets += 1
            if packet.type == PUBLISH:
                self.publishes += 1
            if self.keep_truth:
                self.truth.setdefault(frame, []).append(packet.record())

    def close(self):
        self.out.close()

    def write_sidecar(self, path):
        with open(path, "w", encoding="utf-8") as f:
            f.write("{\n")
            f.write(",\n".join(f'"{frame}": {json.dumps(records)}' for frame, records in sorted(self.truth.items())))
            f.write("\n}\n")


class Flow:
    """One direction of a TCP connection: what the sender wrote (the byte stream and where each
    MQTT packet ends in it) and what the receiver has in sequence order."""

    def __init__(self, isn):
        self.isn = isn & 0xFFFFFFFF
        self.data = bytearray()  # the stream from offset `base` on; offset 0 is sequence number isn + 1
        self.base = 0
        self.written = 0  # stream bytes written
        self.ends = []  # (end offset, Packet) of the packets not yet complete, in stream order
        self.sent = 0  # stream bytes sent at least once
        self.contiguous = 0  # stream bytes the receiver has in order
        self.pending = []  # (start, end) received beyond `contiguous`
        self.fin = False

    def write(self, packets):
        for packet in packets:
            self.data += packet.data
            self.written += len(packet.data)
            self.ends.append((self.written, packet))

    def bytes(self, start, end):
        if start < self.base:
            raise ValueError(f"stream bytes before {self.base} were dropped")
        return bytes(self.data[start - self.base:end - self.base])

    def seq(self, offset):
        return (self.isn + 1 + offset) & 0xFFFFFFFF

    def next_seq(self):
        return self.seq(self.sent + (1 if self.fin else 0))

    def ack_value(self):
        """The acknowledgment number the receiver of this flow sends."""
        return self.seq(self.contiguous + (1 if self.fin and self.contiguous == self.written else 0))

    def receive(self, start, end):
        """The receiver gets stream bytes [start, end); returns the packets this completes: those
        whose last byte becomes available in sequence order."""
        if end <= self.contiguous:
            return []
        if start > self.contiguous:
            self.pending.append((start, end))
            return []
        self.contiguous = end
        if self.pending:
            self.pending.sort()
            while self.pending and self.pending[0][0] <= self.contiguous:
                self.contiguous = max(self.contiguous, self.pending.pop(0)[1])
        count = 0
        while count < len(self.ends) and self.ends[count][0] <= self.contiguous:
            count += 1
        done = [packet for _, packet in self.ends[:count]]
        del self.ends[:count]
        return done

    def drop_delivered(self):
        """Forgets the bytes the receiver has (bulk captures keep memory flat); they cannot be
        sent again afterwards."""
        if self.contiguous > self.base:
            del self.data[:self.contiguous - self.base]
            self.base = self.contiguous


class Connection:
    """A TCP connection between a client and an MQTT server (or another server port)."""

    def __init__(self, cap, client, server, cport, sport=MQTT_PORT, client_isn=0x1000, server_isn=0x8000):
        self.cap = cap
        self.routes = {"c": Route(cap, client, server, cport, sport), "s": Route(cap, server, client, sport, cport)}
        self.flows = {"c": Flow(client_isn), "s": Flow(server_isn)}
        self.unacked = {"c": 0, "s": 0}  # data segments sent since the peer last acknowledged

    @staticmethod
    def other(side):
        return "s" if side == "c" else "c"

    def _emit(self, side, seq, flags, payload=b"", options=b""):
        ack = self.flows[self.other(side)].ack_value() if flags & TCP_ACK else 0
        return self.cap.emit(self.routes[side], seq, ack, flags, payload, options)

    def handshake(self):
        mss = struct.pack(">BBH", 2, 4, MSS)
        c, s = self.flows["c"], self.flows["s"]
        self.cap.emit(self.routes["c"], c.isn, 0, TCP_SYN, b"", mss)
        self.cap.emit(self.routes["s"], s.isn, c.seq(0), TCP_SYN | TCP_ACK, b"", mss)
        self.cap.emit(self.routes["c"], c.seq(0), s.seq(0), TCP_ACK)

    def write(self, side, *packets):
        self.flows[side].write(packets)

    def segment(self, side, start, end, push=True):
        """Sends stream bytes [start, end) of `side`'s flow as one segment (any range: a first
        sending, a retransmission or an overlap of both); returns its frame number."""
        flow = self.flows[side]
        if not 0 <= start < end <= flow.written:
            raise ValueError(f"segment [{start}, {end}) outside the {flow.written} bytes written")
        frame = self._emit(side, flow.seq(start), TCP_ACK | (TCP_PSH if push else 0), flow.bytes(start, end))
        flow.sent = max(flow.sent, end)
        self.unacked[side] += 1
        self.unacked[self.other(side)] = 0
        done = flow.receive(start, end)
        if done:
            self.cap.completed(frame, done)
        return frame

    def send(self, side, *packets, cuts=None, order=None, ack=True, mss=MSS, ack_every=2):
        """Writes `packets` and sends every unsent byte: as segments of the sizes in `cuts` (the
        rest in `mss` pieces), in the order `order` (indices into the segments; default in
        order). Then, with `ack`, the receiver sends a pure ACK (also after every `ack_every`
        segments of a longer flight)."""
        flow = self.flows[side]
        flow.write(packets)
        pieces, at = [], flow.sent
        for size in cuts or ():
            pieces.append((at, at + size))
            at += size
        while at < flow.written:
            pieces.append((at, min(at + mss, flow.written)))
            at = pieces[-1][1]
        if pieces and pieces[-1][1] != flow.written:
            raise ValueError("cuts go past the bytes written")
        frames = []
        for n, index in enumerate(order if order is not None else range(len(pieces))):
            start, end = pieces[index]
            frames.append(self.segment(side, start, end, push=end == flow.written))
            if ack and ack_every and (n + 1) % ack_every == 0 and n + 1 < len(pieces):
                self.ack(self.other(side))
        if ack:
            self.ack(self.other(side))
        return frames

    def ack(self, side):
        """A pure ACK from `side` for what it has received in order."""
        self.unacked[self.other(side)] = 0
        return self._emit(side, self.flows[side].next_seq(), TCP_ACK)

    def close(self, side="c"):
        """FIN from `side`, FIN from the peer, last ACK."""
        peer = self.other(side)
        for who in (side, peer):
            flow = self.flows[who]
            self._emit(who, flow.seq(flow.sent), TCP_FIN | TCP_ACK)
            flow.fin = True
        self.ack(side)

    def reset(self, side="c"):
        flow = self.flows[side]
        return self._emit(side, flow.seq(flow.sent), TCP_RST | TCP_ACK)


# --------------------------------------------------------------------------------------------
# `cases`: one connection per reassembly edge case
# --------------------------------------------------------------------------------------------

HTTP_PORT = 8080

#: The tshark options under which tshark's MQTT packets per frame equal the sidecar's (modulo the
#: differences the module docstring lists).
TSHARK_OPTIONS = ["-o", "tcp.desegment_tcp_streams:TRUE", "-o", "tcp.reassemble_out_of_order:TRUE",
                  "-o", "tcp.analyze_sequence_numbers:TRUE", "-o", "mqtt.show_msg_as_text:FALSE"]
TSHARK_FIELDS = ["frame.number", "mqtt.msgtype", "mqtt.topic", "mqtt.qos", "mqtt.msgid", "mqtt.msg"]


def pattern(size, seed):
    """`size` deterministic bytes of JSON-ish text."""
    rng = random.Random(seed)
    words = [b"tether", b"demo", b"mqtt", b"value", b"sensor", b"frame", b"stream", b"segment"]
    out = bytearray(b'{"data":"')
    while len(out) < size - 2:
        out += rng.choice(words) + b" "
    out = out[: size - 2] + b'"}'
    return bytes(out)


def case_a_mqtt311_session(cap, client, server, port):
    """MQTT 3.1.1: every packet type, QoS 0/1/2 both ways."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x1A000000, server_isn=0x2A000000)
    conn.handshake()
    conn.send("c", connect(v, "tether-a", keep_alive=60, username="alice", password=b"s3cret",
                           will={"topic": "tether/demo/a/status", "message": b"offline", "qos": 1, "retain": True}),
              ack=False)
    conn.send("s", connack(v))
    conn.send("c", subscribe(v, 1, [("tether/demo/a/cmd", 0), ("tether/demo/+/status", 1)]), ack=False)
    conn.send("s", suback(v, 1, [0, 1]))
    conn.send("c", publish(v, "tether/demo/a/telemetry", b'{"temperature":21.5}'))
    conn.send("c", publish(v, "tether/demo/a/telemetry", b'{"temperature":21.7}', qos=1, packet_id=2), ack=False)
    conn.send("s", publish_response(PUBACK, v, 2))
    conn.send("c", publish(v, "tether/demo/a/events", b'{"event":"door-open"}', qos=2, packet_id=3), ack=False)
    conn.send("s", publish_response(PUBREC, v, 3), ack=False)
    conn.send("c", publish_response(PUBREL, v, 3), ack=False)
    conn.send("s", publish_response(PUBCOMP, v, 3))
    conn.send("s", publish(v, "tether/demo/a/cmd", b'{"cmd":"reboot"}', qos=2, packet_id=7), ack=False)
    conn.send("c", publish_response(PUBREC, v, 7), ack=False)
    conn.send("s", publish_response(PUBREL, v, 7), ack=False)
    conn.send("c", publish_response(PUBCOMP, v, 7))
    conn.send("s", publish(v, "tether/demo/b/status", b"online", qos=1, packet_id=8, retain=True), ack=False)
    conn.send("c", publish_response(PUBACK, v, 8))
    # A retained message cleared: a PUBLISH with an empty application message.
    conn.send("c", publish(v, "tether/demo/a/retained", b"", retain=True))
    conn.send("c", unsubscribe(v, 4, ["tether/demo/a/cmd", "tether/demo/+/status"]), ack=False)
    conn.send("s", unsuback(v, 4))
    conn.send("c", pingreq(), ack=False)
    conn.send("s", pingresp())
    conn.send("c", disconnect(v))
    conn.close("c")


def case_b_mqtt5_session(cap, client, server, port):
    """MQTT 5: properties everywhere, reason codes, a topic alias set and then used."""
    v = V5
    conn = Connection(cap, client, server, port, client_isn=0x1B000000, server_isn=0x2B000000)
    conn.handshake()
    conn.send("c", connect(
        v, "", keep_alive=30, username="bob", password=b"pw",
        props=[("session_expiry", 3600), ("receive_maximum", 20), ("topic_alias_maximum", 10),
               ("user_property", ("client", "tether"))],
        will={"topic": "tether/demo/b/status", "message": b"gone", "qos": 1,
              "props": [("will_delay", 5), ("payload_format", 1), ("message_expiry", 60),
                        ("content_type", "text/plain"), ("user_property", ("why", "unexpected"))]}),
        ack=False)
    conn.send("s", connack(v, props=[("assigned_client_id", "auto-7f3a9c"), ("maximum_qos", 1),
                                     ("topic_alias_maximum", 5), ("receive_maximum", 10),
                                     ("retain_available", 1)]))
    conn.send("c", subscribe(v, 10, [
        ("tether/demo/b/cmd", sub_options(1, no_local=True, retain_handling=2)),
        ("tether/demo/+/events", sub_options(0, retain_as_published=True, retain_handling=1)),
        ("$SYS/#", sub_options(0))],
        props=[("subscription_id", 42), ("user_property", ("purpose", "demo"))]), ack=False)
    conn.send("s", suback(v, 10, [0x01, 0x00, 0x87], props=[("reason_string", "$SYS is not for you")]))
    conn.send("c", publish(v, "tether/demo/b/properties", b'{"temperature":19.25,"unit":"C"}', qos=1,
                           packet_id=11,
                           props=[("payload_format", 1), ("message_expiry", 120),
                                  ("content_type", "application/json"), ("response_topic", "tether/demo/b/reply"),
                                  ("correlation_data", b"\x01\x02req-1"), ("user_property", ("unit", "celsius")),
                                  ("user_property", ("source", "sensor-3"))]), ack=False)
    conn.send("s", publish_response(PUBACK, v, 11, code=0x10, props=[("reason_string", "no matching subscribers")]))
    conn.send("c", publish(v, "tether/demo/b/telemetry", b'{"rssi":-61}', props=[("topic_alias", 1)]))
    conn.send("c", publish(v, "", b'{"rssi":-63}', props=[("topic_alias", 1)],
                           resolved_topic="tether/demo/b/telemetry"))
    conn.send("c", publish(v, "", b'{"rssi":-60}', qos=1, packet_id=12, props=[("topic_alias", 1)],
                           resolved_topic="tether/demo/b/telemetry"), ack=False)
    conn.send("s", publish_response(PUBACK, v, 12))
    conn.send("s", publish(v, "tether/demo/b/cmd", b'{"cmd":"blink"}', qos=1, packet_id=1,
                           props=[("subscription_id", 42)]), ack=False)
    conn.send("c", publish_response(PUBACK, v, 1))
    conn.send("c", unsubscribe(v, 13, ["tether/demo/+/events"], props=[("user_property", ("k", "v"))]),
              ack=False)
    conn.send("s", unsuback(v, 13, [0x00]))
    conn.send("c", disconnect(v, code=0x04, props=[("reason_string", "sensor shutting down")]))
    conn.close("c")


def short_session(conn, v=V311, client_id="tether"):
    conn.handshake()
    conn.send("c", connect(v, client_id, keep_alive=60), ack=False)
    conn.send("s", connack(v))


def case_c_segmentation(cap, client, server, port):
    """One packet over 3 segments (the first holds only the type byte), several packets in one
    segment, a segment that ends one packet, holds another and begins a third."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x1C000000, server_isn=0x2C000000)
    short_session(conn, client_id="tether-c")
    conn.send("c", publish(v, "tether/demo/c/split", pattern(300, 3), qos=1, packet_id=1), cuts=[1, 50],
              ack=False)
    conn.send("s", publish_response(PUBACK, v, 1))
    # Four packets in one segment; the answer has two in one segment.
    conn.send("c", publish(v, "tether/demo/c/many", b"one"), publish(v, "tether/demo/c/many", b"two"),
              publish(v, "tether/demo/c/many", b"three", qos=1, packet_id=2), pingreq(), ack=False)
    conn.send("s", publish_response(PUBACK, v, 2), pingresp())
    # Three packets cut across three segments: [P1 part] [P1 end, P2 whole, P3 start] [P3 end].
    p1, p2, p3 = (publish(v, f"tether/demo/c/run/{n}", pattern(60, n)) for n in (1, 2, 3))
    conn.send("c", p1, p2, p3, cuts=[40, len(p1.data) - 40 + len(p2.data) + 10])
    conn.send("c", disconnect(v))
    conn.close("c")


def case_d_out_of_order(cap, client, server, port):
    """Segments sent 1, 3, 2: the third segment arrives before the second."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x1D000000, server_isn=0x2D000000)
    short_session(conn, client_id="tether-d")
    p1 = publish(v, "tether/demo/d/ooo", pattern(100, 11), qos=1, packet_id=1)
    p2 = publish(v, "tether/demo/d/ooo", pattern(100, 12), qos=1, packet_id=2)
    p3 = publish(v, "tether/demo/d/ooo", pattern(100, 13), qos=1, packet_id=3)
    first = len(p1.data) + 20
    conn.flows["c"].write([p1, p2, p3])
    total = conn.flows["c"].written
    second = len(p1.data) + len(p2.data) + 30 - first
    base = conn.flows["c"].sent
    conn.segment("c", base, base + first, push=False)
    conn.segment("c", base + first + second, total)
    conn.ack("s")  # a duplicate ACK: the second segment is missing
    conn.segment("c", base + first, base + first + second, push=False)
    conn.send("s", publish_response(PUBACK, v, 1), publish_response(PUBACK, v, 2),
              publish_response(PUBACK, v, 3))
    conn.send("c", disconnect(v))
    conn.close("c")


def case_e_retransmission(cap, client, server, port):
    """A segment sent twice (same sequence number, same bytes) and a retransmission that covers
    bytes already sent plus new ones."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x1E000000, server_isn=0x2E000000)
    short_session(conn, client_id="tether-e")
    flow = conn.flows["c"]
    # A whole packet sent twice.
    p1 = publish(v, "tether/demo/e/again", b'{"attempt":1}', qos=1, packet_id=1)
    flow.write([p1])
    start = flow.sent
    conn.segment("c", start, flow.sent + len(p1.data))
    conn.segment("c", start, flow.written)
    conn.send("s", publish_response(PUBACK, v, 1))
    # The first part of a packet sent twice, then its end.
    p2 = publish(v, "tether/demo/e/again", pattern(120, 21), qos=1, packet_id=2)
    flow.write([p2])
    start = flow.sent
    conn.segment("c", start, start + 40, push=False)
    conn.segment("c", start, start + 40, push=False)
    conn.segment("c", start + 40, flow.written)
    conn.send("s", publish_response(PUBACK, v, 2))
    # An overlap: bytes [0, 60) of P3 sent, then [0, len(P3) + 30) (old and new), then the rest of P4.
    p3 = publish(v, "tether/demo/e/overlap", pattern(100, 31), qos=1, packet_id=3)
    p4 = publish(v, "tether/demo/e/overlap", pattern(100, 32), qos=1, packet_id=4)
    flow.write([p3, p4])
    start = flow.sent
    conn.segment("c", start, start + 60, push=False)
    conn.segment("c", start, start + len(p3.data) + 30, push=False)
    conn.segment("c", start + len(p3.data) + 30, flow.written)
    conn.send("s", publish_response(PUBACK, v, 3), publish_response(PUBACK, v, 4))
    conn.send("c", disconnect(v))
    conn.close("c")


def case_f_large_publish(cap, client, server, port):
    """A 100 KiB PUBLISH over 1460-byte segments, ACKed every second segment."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x1F000000, server_isn=0x2F000000)
    short_session(conn, client_id="tether-f")
    conn.send("c", publish(v, "tether/demo/f/firmware", pattern(100 * 1024, 41), qos=1, packet_id=1), ack=True)
    conn.send("s", publish_response(PUBACK, v, 1))
    conn.send("c", disconnect(v))
    conn.close("c")


def case_g_sequence_wrap(cap, client, server, port):
    """Initial sequence numbers just below 2^32: both flows wrap past zero mid-packet."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0xFFFFFF00, server_isn=0xFFFFFFF0)
    short_session(conn, client_id="tether-g")
    # The client's stream wraps 255 bytes in: inside this packet and inside a segment.
    conn.send("c", publish(v, "tether/demo/g/wrap", pattern(600, 51), qos=1, packet_id=1), cuts=[200, 200],
              ack=False)
    conn.send("s", publish_response(PUBACK, v, 1))
    # The server's wraps 15 bytes in, inside this PUBLISH and inside its second segment, which
    # arrives last (segments 1, 3, 2).
    conn.send("s", publish(v, "tether/demo/g/cmd", pattern(300, 52)), cuts=[5, 100], order=[0, 2, 1])
    conn.send("c", disconnect(v))
    conn.close("c")


def case_h_reset_and_reuse(cap, client, server, port):
    """A connection ended by RST with a packet half sent, then a new connection (MQTT 5) from the
    same client port with a different initial sequence number."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x10000000, server_isn=0x20000000)
    short_session(conn, client_id="tether-h")
    conn.send("c", publish(v, "tether/demo/h/first", b'{"n":1}'))
    half = publish(v, "tether/demo/h/lost", pattern(200, 61), qos=1, packet_id=1)
    conn.flows["c"].write([half])
    start = conn.flows["c"].sent
    conn.segment("c", start, start + 50, push=False)
    conn.reset("c")
    v = V5
    conn = Connection(cap, client, server, port, client_isn=0x30000000, server_isn=0x40000000)
    short_session(conn, v=v, client_id="tether-h")
    conn.send("c", publish(v, "tether/demo/h/second", b'{"n":2}', qos=1, packet_id=1,
                           props=[("payload_format", 1)]), ack=False)
    conn.send("s", publish_response(PUBACK, v, 1))
    conn.send("c", disconnect(v))
    conn.close("c")


def case_i_not_mqtt(cap, client, server, port):
    """HTTP on port 8080: no MQTT, though the bytes include 0x30 and 0x10 (PUBLISH, CONNECT)."""
    conn = Connection(cap, client, server, port, sport=HTTP_PORT, client_isn=0x11000000, server_isn=0x21000000)
    conn.handshake()
    request = b"GET /status HTTP/1.1\r\nHost: demo.example\r\nUser-Agent: tether\r\n\r\n"
    body = b'{"mqtt":"0\x10broker","ok":true}'
    response = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                + str(len(body)).encode() + b"\r\n\r\n" + body)
    conn.send("c", Packet(request, None), ack=False)
    conn.send("s", Packet(response, None))
    conn.close("c")


def case_j_interleaved(cap, client, server, port):
    """Both directions send multi-segment PUBLISHes at once, their segments interleaved."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x1A0A0000, server_isn=0x2A0A0000)
    short_session(conn, client_id="tether-j")
    conn.send("c", subscribe(v, 1, [("tether/demo/j/cmd", 1)]), ack=False)
    conn.send("s", suback(v, 1, [1]))
    up = publish(v, "tether/demo/j/up", pattern(3000, 71), qos=1, packet_id=2)
    down = publish(v, "tether/demo/j/cmd", pattern(2000, 72), qos=1, packet_id=5)
    c, s = conn.flows["c"], conn.flows["s"]
    c.write([up])
    s.write([down])
    cuts = {"c": [(c.sent, c.sent + 1000), (c.sent + 1000, c.sent + 2000), (c.sent + 2000, c.written)],
            "s": [(s.sent, s.sent + 900), (s.sent + 900, s.written)]}
    for side, index in (("c", 0), ("s", 0), ("c", 1), ("s", 1), ("c", 2)):
        start, end = cuts[side][index]
        conn.segment(side, start, end, push=end == conn.flows[side].written)
    conn.send("s", publish_response(PUBACK, v, 2), ack=False)
    conn.send("c", publish_response(PUBACK, v, 5), publish(v, "tether/demo/j/up", b"bye"))
    conn.send("c", disconnect(v))
    conn.close("c")


def case_k_length_split(cap, client, server, port):
    """A segment that ends inside a two-byte Remaining Length (type byte and the first length
    byte), the rest of the packet in two more segments. The client then closes the connection
    without DISCONNECT (nothing more from it: see "Where tshark 4.0 differs")."""
    v = V311
    conn = Connection(cap, client, server, port, client_isn=0x1B0B0000, server_isn=0x2B0B0000)
    short_session(conn, client_id="tether-k")
    packet = publish(v, "tether/demo/k/length", pattern(300, 81), qos=1, packet_id=1)
    if not packet.data[1] & 0x80:
        raise AssertionError("the Remaining Length must take two bytes")
    cut_frames = conn.send("c", packet, cuts=[2, 48], ack=False)
    conn.send("s", publish_response(PUBACK, v, 1))
    conn.close("c")
    return cut_frames


#: The cases in capture order: (letter, function, client port).
CASES = [
    ("a", case_a_mqtt311_session, 50001), ("b", case_b_mqtt5_session, 50002),
    ("c", case_c_segmentation, 50003), ("d", case_d_out_of_order, 50004),
    ("e", case_e_retransmission, 50005), ("f", case_f_large_publish, 50006),
    ("g", case_g_sequence_wrap, 50007), ("h", case_h_reset_and_reuse, 50008),
    ("i", case_i_not_mqtt, 50009), ("j", case_j_interleaved, 50010),
    ("k", case_k_length_split, 50011),
]


def make_cases(path, linktype="ethernet", ipv6=False, sidecar=None):
    """Writes the `cases` capture, its sidecar (default: path + ".json") and the case index
    (path + ".cases.json"); returns the case index."""
    cap = Capture(path, linktype, ipv6)
    client, server = cap.host(1), cap.host(100)
    index = {"tshark_options": TSHARK_OPTIONS, "cases": [], "tshark_unreliable_frames": []}
    for letter, function, port in CASES:
        first = cap.frames + 1
        unreliable = function(cap, client, server, port) or []
        index["cases"].append({"case": letter, "summary": function.__doc__.split("\n\n")[0].replace("\n   ", ""),
                               "client_port": port, "server_port": HTTP_PORT if letter == "i" else MQTT_PORT,
                               "first_frame": first, "last_frame": cap.frames})
        index["tshark_unreliable_frames"] += unreliable
    cap.close()
    cap.write_sidecar(sidecar or path + ".json")
    with open(path + ".cases.json", "w", encoding="utf-8") as f:
        json.dump(index, f, indent=1)
        f.write("\n")
    return index


# --------------------------------------------------------------------------------------------
# `bulk`: many concurrent connections for benchmarks
# --------------------------------------------------------------------------------------------


#: The chance that a flight is cut at random points, and that a QoS 0 PUBLISH shares its segment
#: with the next message of the same sender.
SPLIT_CHANCE = 0.03
COALESCE_CHANCE = 0.1
#: Every `DOWNLINK_EVERY`-th message of a connection goes from the broker to the client.
DOWNLINK_EVERY = 8


class BulkPayloads:
    """JSON property reports of about `size` bytes (at least the fixed fields' length)."""

    def __init__(self, size, rng):
        self.size = size
        self.bits = rng.getrandbits

    def make(self, thing, seq, time_ms):
        r = self.bits(32)
        temperature, humidity, battery = 1500 + r % 1500, 300 + (r >> 11) % 400, 20 + (r >> 20) % 81
        text = (f'{{"thing":"{thing}","seq":{seq},"ts":{time_ms},"temperature":{temperature // 100}.'
                f'{temperature % 100:02d},"humidity":{humidity // 10}.{humidity % 10},"battery":{battery}')
        pad = self.size - len(text) - 10
        text += f',"pad":"{"x" * pad}"}}' if pad > 0 else "}"
        return text.encode()


class BulkPublisher:
    """PUBLISH packets of one sender on one topic, as publish() builds them, with the parts that
    never change encoded once."""

    def __init__(self, version, topic, props):
        self.topic = topic
        self.head = utf8(topic)
        self.props = properties(props) if version == V5 else b""

    def publish(self, payload, qos, packet_id):
        ident = struct.pack(">H", packet_id) if qos else b""
        length = len(self.head) + len(ident) + len(self.props) + len(payload)
        data = b"".join((bytes((PUBLISH << 4 | qos << 1,)), varint(length), self.head, ident, self.props, payload))
        return Packet(data, PUBLISH, self.topic, qos, packet_id, payload)


def transmit(conn, side, packets, rng, reorder, retransmit):
    """Sends `packets` from `side`: in MSS segments, sometimes cut at random points, sometimes
    with two segments swapped (out of order) or one segment sent again (an exact copy, or a
    copy that runs on into the next segment's new bytes)."""
    flow = conn.flows[side]
    start = flow.sent
    flow.write(packets)
    end = flow.written
    roll = rng.random
    shuffle = reorder and roll() < reorder
    again = retransmit and roll() < retransmit
    split = roll() < SPLIT_CHANCE
    if end - start <= MSS and not (shuffle or again or split):
        conn.segment(side, start, end)
        return
    cuts = list(range(start + MSS, end, MSS))
    if (shuffle or split) and end - start >= 3 and len(cuts) < 2:
        cuts += rng.sample(range(start + 1, end), 2 if end - start > 200 else 1)
    # No cut may fall inside a Remaining Length field after its first byte: tshark 4.0 cannot
    # reassemble that (see "Where tshark 4.0 differs"); such a cut moves to after the type byte.
    forbidden, at = {}, start
    for packet in packets:
        length_bytes = 1
        while packet.data[length_bytes] & 0x80:
            length_bytes += 1
        for cut in range(at + 2, at + 1 + length_bytes):
            forbidden[cut] = at + 1
        at += len(packet.data)
    bounds = [start] + sorted({forbidden.get(cut, cut) for cut in cuts}) + [end]
    pieces = [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
    if shuffle and len(pieces) >= 2:
        at = rng.randrange(len(pieces) - 1)
        pieces[at], pieces[at + 1] = pieces[at + 1], pieces[at]
    if again and len(pieces) >= 2 and roll() < 0.5:
        # The sender resends segment `at` together with the next one's (new) bytes.
        at = rng.randrange(len(pieces) - 1)
        if pieces[at][1] == pieces[at + 1][0]:
            pieces[at + 1] = (pieces[at][0], pieces[at + 1][1])
            again = False
    for a, b in pieces:
        conn.segment(side, a, b, push=b == end)
    if again:
        a, b = pieces[rng.randrange(len(pieces))]
        conn.segment(side, a, b, push=b == end)


def bulk_connection(cap, rng, index, client, server, port, messages, payloads, reorder, retransmit):
    """The frames of one bulk connection, a step at a time (the generator yields between steps
    so that the caller interleaves the connections)."""
    v = V5 if index % 4 == 3 else V311
    thing = f"thing-{index:04d}"
    conn = Connection(cap, client, server, port, client_isn=rng.getrandbits(32), server_isn=rng.getrandbits(32))
    conn.handshake()
    yield
    props = [("session_expiry", 300), ("receive_maximum", 100)] if v == V5 else ()
    transmit(conn, "c", [connect(v, thing, keep_alive=60, props=props)], rng, 0, 0)
    yield
    transmit(conn, "s", [connack(v)], rng, 0, 0)
    yield
    commands = f"tether/demo/{thing}/commands"
    transmit(conn, "c", [subscribe(v, 1, [(commands, 1)])], rng, 0, 0)
    yield
    transmit(conn, "s", [suback(v, 1, [1])], rng, 0, 0)
    yield
    publish_props = [("payload_format", 1), ("message_expiry", 3600)]
    publishers = {"c": BulkPublisher(v, f"tether/demo/{thing}/properties", publish_props),
                  "s": BulkPublisher(v, commands, publish_props)}
    ids = {"c": 0, "s": 0}
    flows = conn.flows.values()
    k = 0
    while k < messages:
        side = "s" if k % DOWNLINK_EVERY == DOWNLINK_EVERY - 1 else "c"
        publisher = publishers[side]
        flight, acks = [], []
        while k < messages:
            qos = k & 1
            packet_id = None
            if qos:
                packet_id = ids[side] = ids[side] % 0xFFFF + 1
                acks.append(packet_id)
            flight.append(publisher.publish(payloads.make(thing, k, START_TIME_S * 1000 + cap.time_us // 1000),
                                            qos, packet_id))
            k += 1
            next_side = "s" if k % DOWNLINK_EVERY == DOWNLINK_EVERY - 1 else "c"
            if qos or next_side != side or rng.random() >= COALESCE_CHANCE:
                break
        transmit(conn, side, flight, rng, reorder, retransmit)
        yield
        peer = "s" if side == "c" else "c"
        if acks:
            transmit(conn, peer, [publish_response(PUBACK, v, i) for i in acks], rng, 0, 0)
            yield
        elif conn.unacked[side] >= 2:
            conn.ack(peer)
        for flow in flows:
            flow.drop_delivered()
    transmit(conn, "c", [disconnect(v)], rng, 0, 0)
    yield
    conn.close("c")


def make_bulk(path, connections, messages, seed=1, payload_size=200, reorder=0.002, retransmit=0.002,
              linktype="ethernet", ipv6=False, sidecar=None):
    """Writes the bulk capture (and with `sidecar` its truth); returns the summary dict."""
    rng = random.Random(seed)
    gap_table = [rng.randrange(20, 181) for _ in range(4096)]
    gap_index = [0]

    def gap():
        gap_index[0] = (gap_index[0] + 1) & 4095
        return gap_table[gap_index[0]]

    cap = Capture(path, linktype, ipv6, gaps=gap)
    cap.keep_truth = sidecar is not None
    server = cap.host(1)
    payloads = BulkPayloads(payload_size, rng)
    active = []
    for i in range(connections):
        client = cap.host(2 + i % 200)
        port = 20000 + i
        if port > 65535:
            raise ValueError("at most 45536 connections")
        active.append(bulk_connection(cap, rng, i, client, server, port, messages, payloads, reorder, retransmit))
    random_ = rng.random
    while active:
        at = int(random_() * len(active))
        try:
            next(active[at])
        except StopIteration:
            active[at] = active[-1]
            active.pop()
    cap.close()
    if sidecar is not None:
        cap.write_sidecar(sidecar)
    return {"frames": cap.frames, "mqtt_packets": cap.packets, "bytes": cap.bytes, "publish_packets": cap.publishes}


# --------------------------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------------------------


def probability(text):
    value = float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text} is not a probability")
    return value


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    cases = sub.add_parser("cases", help="the fixed reassembly edge cases, with OUT.json beside")
    bulk = sub.add_parser("bulk", help="a large capture of many concurrent connections, for benchmarks")
    for p in (cases, bulk):
        p.add_argument("output", help="the pcap file to write")
        p.add_argument("--linktype", choices=["ethernet", "raw"], default="ethernet",
                       help="LINKTYPE_ETHERNET (1, default) or LINKTYPE_RAW (101)")
        p.add_argument("--ipv6", action="store_true", help="IPv6 packets instead of IPv4")
    cases.add_argument("--sidecar", help="where to write the JSON truth (default: OUTPUT.json)")
    bulk.add_argument("--connections", type=int, required=True)
    bulk.add_argument("--messages", type=int, required=True, help="PUBLISH messages per connection")
    bulk.add_argument("--seed", type=int, default=1)
    bulk.add_argument("--payload-size", type=int, default=200, help="bytes of JSON per message (about)")
    bulk.add_argument("--reorder", type=probability, default=0.002,
                      help="chance that a flight has two segments swapped")
    bulk.add_argument("--retransmit", type=probability, default=0.002,
                      help="chance that a flight has a segment sent again")
    bulk.add_argument("--sidecar", nargs="?", const="", default=None,
                      help="also write the JSON truth (to OUTPUT.json, or the path given)")
    args = parser.parse_args(argv)
    if args.mode == "cases":
        make_cases(args.output, args.linktype, args.ipv6, args.sidecar)
        return 0
    if args.connections < 1 or args.messages < 0:
        parser.error("--connections must be at least 1 and --messages at least 0")
    sidecar = None if args.sidecar is None else (args.sidecar or args.output + ".json")
    summary = make_bulk(args.output, args.connections, args.messages, args.seed, args.payload_size, args.reorder,
                        args.retransmit, args.linktype, args.ipv6, sidecar)
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
