"""tshark with sessionlink.lua against real Bumble captures made by make_session_capture.py.

Run: python3 -m pytest Harness/wireshark -q

Every frame the capture script wrote to its JSON expectations must come out of tshark, in
order, with exactly the field values stated there (and no `tsl.` field it did not state), the
stated expert infos and no others, the stated ATT opcode and Info line; the btsnoop and pcapng
captures read alike; no frame of the scenario or of a capture of random and mutated frames
carries a Lua error; the capture script's encoder reproduces every test vector of
docs/session-link.md byte for byte, and tshark decodes those frames to the values the document
states; connectiq.lua and sessionlink.lua load together.
Needs tshark (apt-get install -y tshark) and Bumble (pip install bumble); a missing one fails
the tests with that instruction, nothing is skipped.
"""

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
import uuid as uuidlib

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)

import make_session_capture as msc  # noqa: E402  (the script next to this file; it puts Harness/rigs on the path)
import session_link as sl  # noqa: E402

LUA_SCRIPT = os.path.join(HERE, "sessionlink.lua")
CONNECTIQ_SCRIPT = os.path.join(HERE, "connectiq.lua")
SPEC = os.path.join(ROOT, "docs", "session-link.md")
TSHARK_TIMEOUT_S = 120
FUZZ_SEED = 20240607

#: Every expert info of the session link dissector.
EXPERT_FIELDS = [
    "tsl.malformed_frame", "tsl.invalid_flags", "tsl.unknown_channel", "tsl.malformed_control",
    "tsl.unknown_control", "tsl.item_too_large", "tsl.undecodable_payload", "tsl.unknown_error_code",
    "tsl.version_mismatch", "tsl.wrong_direction",
]
EXTRA_FIELDS = EXPERT_FIELDS + ["frame.number", "_ws.col.Info", "btatt.opcode", "_ws.expert.message"]

#: A Lua runtime error in a dissector, or an exception Wireshark caught while dissecting.
BROKEN = "_ws.lua.error || _ws.malformed.expert || _ws.malformed.dissector_bug"
HARMLESS_STDERR = ('Running as user "root" and group "root". This could be dangerous.',)


# --------------------------------------------------------------------------------------------
# Running tshark
# --------------------------------------------------------------------------------------------


def tshark_path():
    path = shutil.which("tshark")
    if path is None:
        pytest.fail("tshark not found: install tshark (apt-get install -y tshark)")
    return path


def run_tshark(*args, scripts=(LUA_SCRIPT,)):
    """tshark with the Lua scripts; fails on a non-zero exit or any stderr output."""
    command = [tshark_path()]
    if args and args[0] == "-G":  # -G must come first
        command += list(args[:2])
        args = args[2:]
    command += ["-n"] if "-r" in args else []
    for script in scripts:
        command += ["-X", f"lua_script:{script}"]
    result = subprocess.run(command + list(args), capture_output=True, text=True, timeout=TSHARK_TIMEOUT_S)
    stderr = [line for line in result.stderr.splitlines() if line.strip() and line not in HARMLESS_STDERR]
    assert result.returncode == 0, f"tshark exited {result.returncode}: {result.stderr}"
    assert stderr == [], f"tshark wrote to stderr: {stderr}"
    return result.stdout


def tshark_fields(capture, display_filter, fields, scripts=(LUA_SCRIPT,)):
    """One dict per matching frame: field name -> list of values as tshark shows them."""
    args = ["-r", capture, "-Y", display_filter, "-T", "json"]
    for name in fields:
        args += ["-e", name]
    out = run_tshark(*args, scripts=scripts)
    return [packet["_source"]["layers"] for packet in json.loads(out)] if out.strip() else []


@pytest.fixture(scope="session")
def field_types():
    """Every `tsl.` field the script registers -> its Wireshark type (FT_UINT32, …)."""
    out = run_tshark("-G", "fields")
    types = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if parts[0] == "F" and parts[2].startswith("tsl."):
            types[parts[2]] = parts[3]
    return types


@pytest.fixture(scope="session")
def checked_fields(field_types):
    return sorted(name for name in field_types if name not in EXPERT_FIELDS)


def normalized(expected, shown, field_type):
    """tshark's text for a field, turned into the type of the expected value."""
    if field_type == "FT_BYTES":
        return shown.replace(":", "").lower()
    if field_type == "FT_BOOLEAN":
        return bool(int(shown, 0))
    if field_type.startswith("FT_UINT") or field_type.startswith("FT_INT"):
        return int(shown, 0)
    return shown


def mismatches(expected, frame, field_types, checked):
    """Differences between one expected frame (a JSON object of the capture script) and tshark's."""
    problems = []
    for name, value in expected["fields"].items():
        shown = frame.get(name)
        if name not in field_types:
            problems.append(f"{name} is not a field of the dissector")
        elif shown is None:
            problems.append(f"{name} missing, expected {value!r}")
        elif len(shown) != 1:
            problems.append(f"{name} shown {len(shown)} times: {shown}")
        elif normalized(value, shown[0], field_types[name]) != value:
            problems.append(f"{name} is {shown[0]!r}, expected {value!r}")
    unexpected = [(name, frame[name]) for name in checked if name in frame and name not in expected["fields"]]
    if unexpected:
        problems.append(f"fields the frame does not have: {unexpected}")
    raised = sorted(name for name in EXPERT_FIELDS if name in frame)
    if raised != sorted(expected["experts"]):
        problems.append(f"expert infos {raised}, expected {sorted(expected['experts'])}")
    opcode = int(frame["btatt.opcode"][0], 0)
    if opcode != expected["att_opcode"]:
        problems.append(f"ATT opcode 0x{opcode:02x}, expected 0x{expected['att_opcode']:02x}")
    info = frame.get("_ws.col.Info", [None])[0]
    if info != expected["info"]:
        problems.append(f"Info {info!r}, expected {expected['info']!r}")
    return problems


# --------------------------------------------------------------------------------------------
# Captures (made once per test session)
# --------------------------------------------------------------------------------------------


def require_bumble():
    try:
        import bumble  # noqa: F401
    except ImportError:
        pytest.fail("Bumble not found: install it (python3 -m pip install bumble)")


@pytest.fixture(scope="session")
def captures(tmp_path_factory):
    tshark_path()
    require_bumble()
    folder = tmp_path_factory.mktemp("tsl")
    paths = {"btsnoop": str(folder / "session.btsnoop"), "pcapng": str(folder / "session.pcapng"),
             "fuzz": str(folder / "fuzz.btsnoop")}
    msc.make_capture(paths["btsnoop"])
    msc.make_capture(paths["pcapng"])
    msc.make_capture(paths["fuzz"], msc.fuzz_scenario(FUZZ_SEED))
    return paths


@pytest.fixture(scope="session")
def expected(captures):
    """The expectations the capture script wrote next to the btsnoop capture."""
    with open(msc.expected_path_for(captures["btsnoop"]), encoding="utf-8") as f:
        return json.load(f)


def tsl_frames(capture, checked, scripts=(LUA_SCRIPT,)):
    return tshark_fields(capture, "tsl", checked + EXTRA_FIELDS, scripts=scripts)


@pytest.fixture(scope="session")
def frames(captures, checked_fields):
    return tsl_frames(captures["btsnoop"], checked_fields)


STEPS = msc.scenario()


def step_id(index):
    s = STEPS[index]
    return f"{index:02d}-{s.sender}-{s.value[:2].hex()}"


# --------------------------------------------------------------------------------------------
# The encoder against the document's test vectors
# --------------------------------------------------------------------------------------------


def spec_vectors():
    """The test vectors of docs/session-link.md: bold name -> list of frames (bytes), from the
    fenced blocks of the "Test vectors" section (one frame a line, spaces between fields)."""
    with open(SPEC, encoding="utf-8") as f:
        text = f.read()
    section = text.split("## Test vectors", 1)[1].split("\n## ", 1)[0]
    vectors = {}
    for match in re.finditer(r"\*\*([^*]+)\*\*(.*?)```\n(.*?)```", section, re.S):
        vectors[match.group(1).lower()] = [bytes.fromhex(line.replace(" ", "")) for line in match.group(3).splitlines() if line.strip()]
    return vectors


def test_the_document_has_the_test_vectors_this_suite_knows():
    assert sorted(spec_vectors()) == sorted(["hello", "welcome", "context", "fragmented message", "ack", "error", "file",
                                             "hello with a window", "hello with compact frames", "file with compact frames"])


def compact_file_frames():
    """File 1 of the alphabet at maxPayload 20 through a sender's frame context (page version 3)."""
    context = sl.FrameContext()
    alphabet = b"abcdefghijklmnopqrstuvwxyz"
    return [context.encode(sl.Channel.FILE_METADATA, sl.FIRST | sl.LAST | sl.NEEDS_ACK, 1, 4, sl.file_metadata_payload(26)),
            context.encode(sl.Channel.FILE_CHUNK, sl.FIRST, 1, 26, alphabet[:10]),
            context.encode(sl.Channel.FILE_CHUNK, sl.LAST | sl.NEEDS_ACK, 1, 10, alphabet[10:])]


def test_the_encoder_reproduces_every_test_vector_byte_for_byte():
    phone = uuidlib.UUID("0ff1ce00-0000-4000-8000-000000000001")
    watch = uuidlib.UUID("0ff1ce00-0000-4000-8000-0000000000a1")
    status = sl.PAIRED | sl.INSTALLED | sl.REACHABLE | sl.ACTIVATED
    assert status == 0x1B
    built = {
        "hello": sl.control_frames(1, sl.hello(sl.Handshake(phone, 0x11223344, 0x55667788, 0x0BADCAFE, status)), 244),
        "hello with a window": sl.control_frames(
            1, sl.hello(sl.Handshake(phone, 0x11223344, 0x55667788, 0x0BADCAFE, status, window=64)), 244),
        "hello with compact frames": sl.control_frames(
            1, sl.hello(sl.Handshake(phone, 0x11223344, 0x55667788, 0x0BADCAFE, status, compact_frames=True)), 244),
        "file with compact frames": compact_file_frames(),
        "welcome": sl.control_frames(1, sl.welcome(sl.Handshake(
            watch, 0x99AABBCC, 0x01020304, 0x0BADCAFE, status, watermark_user_info=3, watermark_file=1,
            resume_id=2, resume_offset=40)), 244),
        "context": sl.fragment(sl.Channel.CONTEXT, 1, sl.dictionary({"a": "b", "b": [1, 2]}), 244),
        "fragmented message": sl.fragment(sl.Channel.MESSAGE, 1, sl.dictionary({"hr": 72}), 20, sl.EXPECTS_REPLY),
        "ack": sl.control_frames(2, sl.ack(sl.Channel.MESSAGE, 1, sl.COMPLETE), 20),
        "error": sl.control_frames(3, sl.error(sl.Channel.MESSAGE, 1, 7011), 20),
        "file": sl.fragment(sl.Channel.FILE_METADATA, 1, sl.file_metadata_payload(26), 20)
        + sl.fragment(sl.Channel.FILE_CHUNK, 1, b"abcdefghijklmnopqrstuvwxyz", 20),
    }
    vectors = spec_vectors()
    assert {name: [f.hex() for f in frames] for name, frames in built.items()} == \
        {name: [f.hex() for f in frames] for name, frames in vectors.items()}


#: Vectors of page version 2 that the recorded exchange (a page-version-1 link: no options) does
#: not carry; the encoder test above reproduces them, the dissector test below reads them.
PAGE_2_VECTORS = {"hello with a window", "hello with compact frames", "file with compact frames"}


def test_the_scenario_carries_every_test_vector_in_order():
    vectors = {name: frames for name, frames in spec_vectors().items() if name not in PAGE_2_VECTORS}
    carried = {}
    for s in STEPS:
        if s.vector:
            carried.setdefault(s.vector.lower(), []).append(s.value)
    assert carried == vectors


def test_the_resume_continuation_of_the_document_is_the_second_chunk_frame():
    # "the sender would go on with the second chunk frame exactly as above: a continuation at offset 10"
    assert sl.fragment(sl.Channel.FILE_CHUNK, 1, b"abcdefghijklmnopqrstuvwxyz", 20, start=10) == \
        spec_vectors()["file"][2:]


def test_the_fragmented_message_payload_is_the_documented_36_bytes():
    documented = bytes.fromhex("abcdabcd 00000005 0003 6872 00".replace(" ", "")
                               + "da7ada7a 0000000f 0b 00000001 03 00000000 01 00000048".replace(" ", ""))
    assert len(documented) == 36
    assert sl.dictionary({"hr": 72}) == documented


# --------------------------------------------------------------------------------------------
# The dissector on the recorded exchange
# --------------------------------------------------------------------------------------------


def test_the_expert_list_is_every_expert_the_script_registers(field_types):
    assert sorted(name for name, kind in field_types.items() if kind == "FT_NONE") == sorted(EXPERT_FIELDS)


def test_the_written_expectations_are_the_scenario(expected):
    assert expected == [s.to_json(i) for i, s in enumerate(STEPS)]


def test_every_frame_is_dissected_once_in_order(frames, expected):
    shown = [(f["tsl.direction"][0], f.get("tsl.channel", [None])[0]) for f in frames]
    assert len(frames) == len(expected)
    assert [d for d, _ in shown] == [e["direction"] for e in expected]


@pytest.mark.parametrize("index", range(len(STEPS)), ids=step_id)
def test_frame_fields_equal_the_values_written(frames, expected, field_types, checked_fields, index):
    assert len(frames) == len(expected), "frame count differs; see the ordering test"
    assert mismatches(expected[index], frames[index], field_types, checked_fields) == []


def test_pcapng_with_h4_direction_header_gives_the_same_fields(captures, field_types, checked_fields):
    with open(msc.expected_path_for(captures["pcapng"]), encoding="utf-8") as f:
        expected = json.load(f)
    shown = tsl_frames(captures["pcapng"], checked_fields)
    assert len(shown) == len(expected)
    assert {i: mismatches(e, f, field_types, checked_fields) for i, (e, f) in enumerate(zip(expected, shown))
            if mismatches(e, f, field_types, checked_fields)} == {}


def test_no_frame_has_a_lua_error_or_wireshark_malformed_exception(captures):
    for capture in captures.values():
        assert run_tshark("-r", capture, "-Y", BROKEN) == ""


def test_every_random_or_mutated_frame_is_dissected_without_error(captures):
    steps = msc.fuzz_scenario(FUZZ_SEED)
    shown = tshark_fields(captures["fuzz"], "tsl", ["tsl.direction", "_ws.col.Info", "_ws.lua.error"])
    assert len(shown) == len(steps)
    assert [f["tsl.direction"][0] for f in shown] == [msc.DIRECTION[s.sender] for s in steps]
    assert [f for f in shown if "_ws.lua.error" in f or not f.get("_ws.col.Info", [""])[0]] == []


def test_malformed_frames_carry_the_expert_info_with_a_reason(frames, expected):
    flagged = {i: frames[i]["_ws.expert.message"] for i, e in enumerate(expected) if e["experts"]}
    assert len(flagged) >= 25
    kinds = {name for e in expected for name in e["experts"]}
    assert kinds == set(EXPERT_FIELDS)
    short = [frames[i]["_ws.expert.message"] for i, e in enumerate(expected)
             if len(bytes.fromhex(e["value"])) < 10]
    assert short == [
        ["A frame of 5 bytes; the header (channel, flags, id, total or offset) alone is 10 (malformed-frame)"],
        ["A frame of 1 bytes; the header (channel, flags, id, total or offset) alone is 10 (malformed-frame)"],
    ]
    messages = [m for ms in flagged.values() for m in ms]
    for needle in [
        "reserved flag bits 0x40 are set; the frame is refused (invalid-flags)",
        "Channel 0x09 is not defined (0x00-0x08); the frame is ignored (unknown-channel)",
        "ACK is 10 bytes, op included; this one has 9 (malformed-control)",
        "Control op 0x08 is not defined (ops 0x01-0x07); the item is refused (unknown-control)",
        "LAST is set but the bytes end at 5 of 20 (malformed-frame)",
        "Not a property-list dictionary: null at [\"a\"] has no property-list type "
        "(undecodable-payload; the receiver answers ERROR 7010)",
    ]:
        assert needle in messages


def vector_frames(frames, expected, name):
    return [frames[i] for i, e in enumerate(expected) if e["vector"] == name]


def one(frame, name):
    values = frame[name]
    assert len(values) == 1, f"{name}: {values}"
    return values[0]


def test_the_documents_vectors_decode_to_the_documented_values(frames, expected):
    # Values as docs/session-link.md states them in prose, not from the capture script.
    hello, = vector_frames(frames, expected, "HELLO")
    assert {k: one(hello, k) for k in [
        "tsl.direction", "tsl.channel", "tsl.id", "tsl.total", "tsl.control.op", "tsl.control.version",
        "tsl.control.identity", "tsl.control.status.paired", "tsl.control.status.installed",
        "tsl.control.status.complication", "tsl.control.status.reachable", "tsl.control.status.activated",
    ]} == {
        "tsl.direction": "phone→watch", "tsl.channel": "0x00", "tsl.id": "1", "tsl.total": "55",
        "tsl.control.op": "0x01", "tsl.control.version": "1",
        "tsl.control.identity": "0ff1ce00-0000-4000-8000-000000000001",
        "tsl.control.status.paired": "1", "tsl.control.status.installed": "1",
        "tsl.control.status.complication": "0", "tsl.control.status.reachable": "1",
        "tsl.control.status.activated": "1",
    }
    assert [int(one(hello, k), 0) for k in ["tsl.control.incarnation", "tsl.control.epoch", "tsl.control.nonce",
                                            "tsl.control.status"]] == [0x11223344, 0x55667788, 0x0BADCAFE, 0x1B]
    marks = ["tsl.control.watermark.context", "tsl.control.watermark.user_info",
             "tsl.control.watermark.complication", "tsl.control.watermark.file",
             "tsl.control.resume_id", "tsl.control.resume_offset"]
    assert [int(one(hello, k)) for k in marks] == [0, 0, 0, 0, 0, 0]

    welcome, = vector_frames(frames, expected, "WELCOME")
    assert one(welcome, "tsl.direction") == "watch→phone"
    assert one(welcome, "tsl.control.identity") == "0ff1ce00-0000-4000-8000-0000000000a1"
    assert [int(one(welcome, k), 0) for k in ["tsl.control.incarnation", "tsl.control.epoch",
                                              "tsl.control.nonce"]] == [0x99AABBCC, 0x01020304, 0x0BADCAFE]
    assert [int(one(welcome, k)) for k in marks] == [0, 3, 0, 1, 2, 40]

    context, = vector_frames(frames, expected, "context")
    assert (int(one(context, "tsl.flags"), 0), int(one(context, "tsl.total"))) == (0x07, 59)
    assert one(context, "tsl.value") == '{"a": "b", "b": [1, 2]}'

    message = vector_frames(frames, expected, "fragmented message")
    assert [int(one(f, "tsl.flags"), 0) for f in message] == [0x11, 0x10, 0x10, 0x16]
    assert int(one(message[0], "tsl.total")) == 36
    assert [int(one(f, "tsl.offset")) for f in message[1:]] == [10, 20, 30]
    assert b"".join(bytes.fromhex(one(f, "tsl.data").replace(":", "")) for f in message) == \
        sl.dictionary({"hr": 72})
    assert [one(f, "tsl.flags.expects_reply") for f in message] == ["1"] * 4

    ack, = vector_frames(frames, expected, "ACK")
    assert (one(ack, "_ws.col.Info"), int(one(ack, "tsl.id")), int(one(ack, "tsl.control.received"))) == \
        ("ACK message 1 complete", 2, 0xFFFFFFFF)
    error, = vector_frames(frames, expected, "ERROR")
    assert (int(one(error, "tsl.id")), int(one(error, "tsl.control.code")), int(one(error, "tsl.control.id"))) == \
        (3, 7011, 1)
    assert one(error, "_ws.col.Info") == "ERROR message 1 7011 messageReplyFailed"

    metadata, *chunks = vector_frames(frames, expected, "file")
    assert int(one(metadata, "tsl.file_size")) == 26
    assert [int(one(f, "tsl.flags"), 0) for f in [metadata, *chunks]] == [0x07, 0x01, 0x00, 0x06]
    assert b"".join(bytes.fromhex(one(f, "tsl.data").replace(":", "")) for f in chunks) == \
        b"abcdefghijklmnopqrstuvwxyz"


def test_display_filters_select_what_they_name(captures, expected):
    acks = tshark_fields(captures["btsnoop"], "tsl.control.op == 3 && tsl.control.received == 0xffffffff",
                         ["tsl.control.channel"])
    assert len(acks) == sum(e["fields"].get("tsl.control.received") == sl.COMPLETE for e in expected) == 10
    retransmitted = tshark_fields(captures["btsnoop"], "tsl.flags.retransmission == 1", ["tsl.offset"])
    assert retransmitted == [{"tsl.offset": ["40"]}]
    watch = tshark_fields(captures["btsnoop"], 'tsl.control.identity == 0ff1ce00-0000-4000-8000-0000000000a1',
                          ["tsl.control.op"])
    assert [f["tsl.control.op"][0] for f in watch] == ["0x02", "0x02"]


def test_both_scripts_load_together(captures, checked_fields, expected, field_types, tmp_path):
    both = (CONNECTIQ_SCRIPT, LUA_SCRIPT)
    shown = tsl_frames(captures["btsnoop"], checked_fields, scripts=both)
    assert len(shown) == len(expected)
    assert {i: mismatches(e, f, field_types, checked_fields) for i, (e, f) in enumerate(zip(expected, shown))
            if mismatches(e, f, field_types, checked_fields)} == {}
    assert tshark_fields(captures["btsnoop"], "ciq", ["frame.number"], scripts=both) == []
    # And a Connect IQ capture keeps its Connect IQ packets, with no session link frame in it.
    import make_ciq_capture
    ciq_capture = str(tmp_path / "ciq.btsnoop")
    make_ciq_capture.make_capture(ciq_capture)
    assert len(tshark_fields(ciq_capture, "ciq", ["ciq.kind"], scripts=both)) == len(make_ciq_capture.scenario())
    assert tshark_fields(ciq_capture, "tsl", ["frame.number"], scripts=both) == []


# --------------------------------------------------------------------------------------------
# Page version 2: a HELLO and a WELCOME stating a window
# --------------------------------------------------------------------------------------------


def test_a_handshake_stating_a_window_is_read_with_its_window(tmp_path):
    tshark_path()
    require_bumble()
    hello = dataclasses.replace(msc.HELLO, window=64)
    welcome = dataclasses.replace(msc.WELCOME, window=32)
    steps = [
        msc.handshake_step(msc.PHONE, 1, sl.Op.HELLO, hello,
                           "HELLO epoch=0x55667788 nonce=0x0badcafe identity=0ff1ce00-0000-4000-8000-000000000001 window=64",
                           vector="HELLO with a window"),
        msc.handshake_step(msc.WATCH, 1, sl.Op.WELCOME, welcome,
                           "WELCOME epoch=0x01020304 nonce=0x0badcafe identity=0ff1ce00-0000-4000-8000-0000000000a1 window=32"),
    ]
    capture = str(tmp_path / "window.btsnoop")
    msc.make_capture(capture, steps)
    shown = tshark_fields(capture, "tsl.control.op", ["_ws.col.Info", "tsl.control.window", "_ws.expert"])
    assert [frame["tsl.control.window"] for frame in shown] == [["64"], ["32"]]
    assert [frame["_ws.col.Info"][0].endswith(f"window={w}") for frame, w in zip(shown, (64, 32))] == [True, True]
    assert all(frame.get("_ws.expert", []) == [] for frame in shown), shown


# --------------------------------------------------------------------------------------------
# Page version 3: compact frames, negotiated in a handshake fragmented at ATT MTU 23
# --------------------------------------------------------------------------------------------


def test_the_mirror_decodes_what_it_encodes_and_refuses_a_frame_of_another_item():
    sender, receiver = sl.FrameContext(), sl.FrameContext()
    frames = [(sl.Channel.FILE_CHUNK, sl.FIRST, 5, 70000, b"x" * 10), (sl.Channel.FILE_CHUNK, 0, 5, 10, b"y" * 16),
              (sl.Channel.USER_INFO, sl.FIRST, 2, 30, b"u" * 10), (sl.Channel.FILE_CHUNK, sl.RETRANSMISSION, 5, 10, b"y" * 16),
              (sl.Channel.USER_INFO, sl.LAST | sl.NEEDS_ACK, 2, 10, b"v" * 16), (sl.Channel.FILE_CHUNK, 0, 5, 60000, b"z")]
    for channel, flags, item_id, field, data in frames:
        wire = sender.encode(channel, flags, item_id, field, data)
        got = receiver.decode(wire)
        assert (got.channel, got.flags, got.item_id, got.total_or_offset, got.data) == (channel, flags, item_id, field, data)
        assert got.compact == (not flags & sl.FIRST and field != 60000)
    with pytest.raises(sl.CompactFrameError) as refused:
        receiver.decode(bytes([0x80 | 6 << 4 | sl.Channel.FILE_CHUNK, 0, 0x10, 0x00, 1]))
    assert refused.value.offset == 0 and "id tag 6" in refused.value.reason


def test_compact_frames_after_a_fragmented_handshake_are_read_with_their_id_and_offset(tmp_path):
    """A HELLO and a WELCOME stating compact frames, each in several 20-byte frames, then the
    document's compact file, then a compact frame of another item: tshark reads the negotiation
    from the reassembled handshake, the compact frame's id and offset from the context, and
    refuses the stray one."""
    tshark_path()
    require_bumble()
    hello = dataclasses.replace(msc.HELLO, compact_frames=True)
    welcome = dataclasses.replace(msc.WELCOME, compact_frames=True)
    values = [(msc.PHONE, f) for f in sl.control_frames(1, hello.encode(sl.Op.HELLO), msc.SMALL)]
    values += [(msc.WATCH, f) for f in sl.control_frames(1, welcome.encode(sl.Op.WELCOME), msc.SMALL)]
    values += [(msc.WATCH, f) for f in spec_vectors()["file with compact frames"]]
    values.append((msc.WATCH, bytes([0x80 | 2 << 4 | sl.Channel.FILE_CHUNK, 0, 0x1a, 0x00, 0x41])))
    steps = [msc.Step(sender, value, None, (), "") for sender, value in values]
    capture = str(tmp_path / "compact.btsnoop")
    msc.record_btsnoop(capture, steps)
    shown = tshark_fields(capture, "tsl", ["tsl.compact", "tsl.channel", "tsl.id", "tsl.offset", "tsl.data",
                                           "tsl.control.compact_frames", "_ws.col.Info", "tsl.malformed_frame"])
    assert len(shown) == len(values)
    handshakes = [f for f in shown if f.get("tsl.control.compact_frames")]
    assert len(handshakes) == 0  # fragmented: no frame holds a whole item, the options show nowhere
    compact = [f for f in shown if f.get("tsl.compact") == ["1"]]
    assert len(compact) == 2
    read, stray = compact
    assert read["tsl.id"] == ["1"] and read["tsl.offset"] == ["10"] and read["tsl.channel"] == ["0x08"]
    assert read["tsl.data"] == [b"klmnopqrstuvwxyz".hex()]
    assert read["_ws.col.Info"] == ["file-chunk 1 [LAST|NEEDS-ACK] offset=10 (compact)"]
    assert "tsl.malformed_frame" not in read
    assert "tsl.malformed_frame" in stray and "tsl.id" not in stray


def test_a_compact_frame_on_a_link_that_did_not_negotiate_them_is_an_unknown_channel(tmp_path):
    tshark_path()
    require_bumble()
    values = [(msc.PHONE, f) for f in sl.control_frames(1, msc.HELLO.encode(sl.Op.HELLO), msc.MAX_PAYLOAD)]
    values += [(msc.WATCH, f) for f in sl.control_frames(1, msc.WELCOME.encode(sl.Op.WELCOME), msc.MAX_PAYLOAD)]
    values += [(msc.WATCH, f) for f in spec_vectors()["file with compact frames"]]
    steps = [msc.Step(sender, value, None, (), "") for sender, value in values]
    capture = str(tmp_path / "plain.btsnoop")
    msc.record_btsnoop(capture, steps)
    shown = tshark_fields(capture, "tsl", ["tsl.compact", "tsl.unknown_channel"])
    assert [("tsl.compact" in f, "tsl.unknown_channel" in f) for f in shown][-1] == (False, True)
