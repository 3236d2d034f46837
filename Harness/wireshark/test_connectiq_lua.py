"""tshark with connectiq.lua against real Bumble captures made by make_ciq_capture.py.

Run: python3 -m pytest Harness/wireshark -q

Every Connect IQ packet the capture script wrote must come out of tshark, in order,
with exactly the field values the script put in (and no Connect IQ field it did not);
truncated packets carry the malformed expert info; no frame carries a Lua error; and
the USER0 API-call dissector shows the JSON text and its "call" member.
Needs tshark (apt-get install -y tshark) and Bumble (pip install bumble); a missing one
fails the tests with that instruction, nothing is skipped.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import make_ciq_capture as ciq  # noqa: E402  (the script next to this file)

LUA_SCRIPT = os.path.join(HERE, "connectiq.lua")
TSHARK_TIMEOUT_S = 120

#: The Connect IQ fields a scenario step states; a frame must show exactly the stated ones.
CHECKED_FIELDS = [
    "ciq.kind", "ciq.direction", "ciq.command", "ciq.command_data", "ciq.app_uuid", "ciq.status",
    "ciq.conn", "ciq.flags", "ciq.version", "ciq.open_app_code", "ciq.control", "ciq.control_data",
    "ciq.transfer_flags", "ciq.length", "ciq.seq", "ciq.crc", "ciq.ack_type", "ciq.ack_status",
    "ciq.key", "ciq.is_response", "ciq.payload",
]
#: Every expert info of the Connect IQ dissector.
EXPERT_FIELDS = [
    "ciq.malformed", "ciq.trailing_bytes", "ciq.unknown", "ciq.unknown_status", "ciq.conn_zero",
    "ciq.empty_data", "ciq.not_installed",
]
EXTRA_FIELDS = EXPERT_FIELDS + [
    "frame.number", "_ws.col.Info", "btatt.opcode",
    "ciq.installed", "ciq.transfer_flags.encrypted", "ciq.transfer_flags.transient",
    "_ws.expert.message",
]
ATT_WRITE_REQUEST, ATT_WRITE_COMMAND, ATT_NOTIFICATION, ATT_READ_RESPONSE = 0x12, 0x52, 0x1B, 0x0B

#: A Lua runtime error in a dissector, or an exception Wireshark caught while dissecting (the
#: malformed expert infos the scripts raise on purpose are group "malformed" too, so the bare
#: `_ws.malformed` protocol would match those as well).
BROKEN = "_ws.lua.error || _ws.malformed.expert || _ws.malformed.dissector_bug"

#: tshark's own warning when run as root; any other stderr line is a failure.
HARMLESS_STDERR = ('Running as user "root" and group "root". This could be dangerous.',)


# --------------------------------------------------------------------------------------------
# Running tshark
# --------------------------------------------------------------------------------------------


def tshark_path():
    path = shutil.which("tshark")
    if path is None:
        pytest.fail("tshark not found: install tshark (apt-get install -y tshark)")
    return path


def run_tshark(capture, *args):
    """tshark with the Lua script on `capture`; fails on a non-zero exit or any stderr output."""
    result = subprocess.run(
        [tshark_path(), "-n", "-X", f"lua_script:{LUA_SCRIPT}", "-r", capture, *args],
        capture_output=True, text=True, timeout=TSHARK_TIMEOUT_S,
    )
    stderr = [line for line in result.stderr.splitlines() if line.strip() and line not in HARMLESS_STDERR]
    assert result.returncode == 0, f"tshark exited {result.returncode}: {result.stderr}"
    assert stderr == [], f"tshark wrote to stderr: {stderr}"
    return result.stdout


def tshark_fields(capture, display_filter, fields):
    """One dict per matching frame: field name -> list of values as tshark shows them."""
    args = ["-Y", display_filter, "-T", "json"]
    for name in fields:
        args += ["-e", name]
    out = run_tshark(capture, *args)
    return [packet["_source"]["layers"] for packet in json.loads(out)] if out.strip() else []


def ciq_frames(capture):
    return tshark_fields(capture, "ciq", CHECKED_FIELDS + EXTRA_FIELDS)


def normalized(expected, shown):
    """tshark's text for a field, turned into the type of the expected value."""
    if isinstance(expected, bytes):
        return bytes.fromhex(shown.replace(":", ""))
    if isinstance(expected, int):
        return int(shown, 0)
    return shown


def mismatches(step, frame):
    """Differences between a scenario step and the tshark frame that should show it."""
    problems = []
    for name, value in step.expect.items():
        shown = frame.get(name)
        if shown is None:
            problems.append(f"{name} missing, expected {value!r}")
        elif len(shown) != 1:
            problems.append(f"{name} shown {len(shown)} times: {shown}")
        elif normalized(value, shown[0]) != value:
            problems.append(f"{name} is {shown[0]!r}, expected {value!r}")
    unexpected = [name for name in CHECKED_FIELDS if name in frame and name not in step.expect]
    if unexpected:
        problems.append(f"fields the packet does not have: {[(n, frame[n]) for n in unexpected]}")
    raised = [name for name in EXPERT_FIELDS if name in frame]
    if sorted(raised) != sorted(step.experts):
        problems.append(f"expert infos {raised}, expected {list(step.experts)}")
    opcode = int(frame["btatt.opcode"][0], 0)
    want = ATT_NOTIFICATION if step.sender == ciq.WATCH else (
        ATT_WRITE_REQUEST if step.with_response else ATT_WRITE_COMMAND)
    if opcode != want:
        problems.append(f"ATT opcode 0x{opcode:02x}, expected 0x{want:02x}")
    return problems


# --------------------------------------------------------------------------------------------
# Captures (made once per test session)
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def captures(tmp_path_factory):
    tshark_path()
    try:
        import bumble  # noqa: F401
    except ImportError:
        pytest.fail("Bumble not found: install it (python3 -m pip install bumble)")
    folder = tmp_path_factory.mktemp("ciq")
    paths = {
        "current": str(folder / "current.btsnoop"),
        "legacy": str(folder / "legacy.btsnoop"),
        "pcapng": str(folder / "current.pcapng"),
    }
    ciq.make_capture(paths["current"])
    ciq.make_capture(paths["legacy"], legacy=True)
    ciq.make_capture(paths["pcapng"])
    return paths


@pytest.fixture(scope="session")
def current_frames(captures):
    return ciq_frames(captures["current"])


STEPS = ciq.scenario()


def step_id(index):
    step = STEPS[index]
    kind = step.expect.get("ciq.kind", "packet")
    return f"{index:02d}-{step.sender}-{kind}-{step.value[:2].hex()}"


# --------------------------------------------------------------------------------------------
# The capture script's own building blocks, against published values
# --------------------------------------------------------------------------------------------


def test_crc16_arc_gives_the_check_value():
    assert ciq.crc16_arc(b"123456789") == 0xBB3D


def test_xxtea_of_zero_block_with_zero_key_gives_the_reference_ciphertext():
    # Reference XXTEA: key 0, words (0, 0) encrypt to (0x053704ab, 0x575d8c80).
    assert ciq.xxtea_encrypt(bytes(8), bytes(16)) == struct_words(0x053704AB, 0x575D8C80)


def test_xxtea_pads_to_a_multiple_of_four_and_at_least_eight_bytes():
    assert [len(ciq.xxtea_encrypt(bytes(n), bytes(16))) for n in (1, 8, 9, 13)] == [8, 8, 12, 16]


def struct_words(*words):
    return b"".join(w.to_bytes(4, "little") for w in words)


def test_monkeyc_string_serialization_matches_the_published_vector():
    assert ciq.serialize_monkeyc_string("Hello, world!").hex() == (
        "abcdabcd00000010000e48656c6c6f2c20776f726c642100da7ada7a000000050300000000")


def test_builders_lay_packets_out_as_connectiq_link_md():
    assert ciq.connect_request(ciq.LOOPBACK_APP).value.hex() == "0001" + "0180e5205f7e11e498030800200c9a66" + "01"
    assert ciq.ack(ciq.WATCH, 1, ciq.ACK_KEY, 0, 0).value.hex() == "f1020500" + "00"
    assert ciq.ack(ciq.PHONE, 3, ciq.ACK_DATA, 0, 14).value.hex() == "f30201000e"
    assert ciq.first(ciq.PHONE, 1, 0x02, 0x01020304).value.hex() == "f1000204030201"
    assert ciq.last(ciq.PHONE, 1, 5, 0xBB3D).value.hex() == "f101053dbb"
    assert ciq.app_info_answer(ciq.LOOPBACK_APP, 0x0102).value[-2:].hex() == "0201"
    assert ciq.data(ciq.PHONE, 3, 1, b"\xaa").value.hex() == "31aa"


def test_outbound_transfer_uses_large_packets_and_wraps_seq_after_14():
    outbound = [s for s in STEPS if s.sender == ciq.PHONE and s.expect.get("ciq.kind") == "data" and not s.experts]
    seqs = [s.expect["ciq.seq"] for s in outbound]
    sizes = [len(s.expect["ciq.payload"]) for s in outbound]
    assert seqs == list(range(15)) + [0]
    assert sizes[:15] == [ciq.LARGE_PAYLOAD] * 15


# --------------------------------------------------------------------------------------------
# The dissector on the recorded exchange
# --------------------------------------------------------------------------------------------


def test_every_scenario_packet_is_dissected_once_in_order(current_frames):
    kinds = [frame.get("ciq.kind", [None])[0] for frame in current_frames]
    assert kinds == [step.expect.get("ciq.kind") for step in STEPS]


@pytest.mark.parametrize("index", range(len(STEPS)), ids=step_id)
def test_packet_fields_equal_the_values_written(current_frames, index):
    assert len(current_frames) == len(STEPS), "frame count differs; see the ordering test"
    assert mismatches(STEPS[index], current_frames[index]) == []


def test_legacy_service_packets_are_dissected_with_the_same_fields(captures):
    frames = ciq_frames(captures["legacy"])
    assert len(frames) == len(STEPS)
    assert {i: mismatches(step, frame) for i, (step, frame) in enumerate(zip(STEPS, frames))
            if mismatches(step, frame)} == {}


def test_pcapng_with_h4_direction_header_gives_the_same_fields(captures):
    frames = ciq_frames(captures["pcapng"])
    assert len(frames) == len(STEPS)
    assert {i: mismatches(step, frame) for i, (step, frame) in enumerate(zip(STEPS, frames))
            if mismatches(step, frame)} == {}


def test_no_frame_has_a_lua_error_or_wireshark_malformed_exception(captures):
    for capture in captures.values():
        assert run_tshark(capture, "-Y", BROKEN) == ""


def test_truncated_packets_carry_the_malformed_expert_info(current_frames):
    flagged = [frame["_ws.expert.message"] for frame in current_frames if "ciq.malformed" in frame]
    assert flagged == [
        ["connect request too short: 5 of 19 bytes; expected the app UUID (16 bytes) at offset 2"],
        ["last packet too short: 3 of 5 bytes; expected the CRC-16 (2 bytes) at offset 3"],
        ["command packet too short: 1 of 2 bytes; expected the command id (1 byte) at offset 1"],
        ["control packet too short: 1 of 2 bytes; expected the control id (1 byte) at offset 1"],
    ]


def test_read_response_on_the_notify_characteristic_is_left_to_att(captures):
    frames = tshark_fields(captures["current"], f"btatt.opcode == {ATT_READ_RESPONSE}",
                           ["btatt.value", "ciq.kind"])
    assert frames == [{"btatt.value": [ciq.NOTIFY_READ_VALUE.hex()]}]


def test_info_column_lines(current_frames):
    infos = [frame["_ws.col.Info"][0] for frame in current_frames]
    for line in [
        "CIQ connect → 0180e520-5f7e-11e4-9803-0800200c9a66",
        "CIQ connect ← 0180e520-5f7e-11e4-9803-0800200c9a66 success conn 1 large packets",
        "CIQ app info ← e3b0c442-98fc-4c14-9afb-f4c8996fb924 not installed",
        "CIQ open app ← 0180e520-5f7e-11e4-9803-0800200c9a66 app already running",
        "CIQ encryption key (request) conn 1",
        "CIQ first 2924 bytes encrypted conn 1",
        "CIQ data seq 14 conn 1 (191 bytes)",
        "CIQ ack data success seq 14 conn 1",
        "CIQ data seq 0 conn 2 (19 bytes)",
        "CIQ ack first no encryption key seq 0 conn 1",
        "CIQ watch opens ← 7c6e3a4b-1f2d-4e5a-9b8c-0d1e2f3a4b5c conn 2",
        "CIQ connect ← e3b0c442-98fc-4c14-9afb-f4c8996fb924 app not found conn 0",
        "CIQ command 9 (unknown)",
    ]:
        assert line in infos


def test_version_ffff_reads_as_not_installed(current_frames):
    installed = [(int(f["ciq.version"][0]), f["ciq.installed"][0]) for f in current_frames if "ciq.version" in f]
    assert installed == [(0x0102, "1"), (0xFFFF, "0")]


def test_transfer_flag_bits_are_decoded(current_frames):
    firsts = [(int(f["ciq.transfer_flags"][0], 0), f["ciq.transfer_flags.encrypted"][0],
               f["ciq.transfer_flags.transient"][0]) for f in current_frames if "ciq.transfer_flags" in f]
    assert firsts == [(0x02, "1", "0"), (0x06, "1", "1"), (0x02, "1", "0"), (0x00, "0", "0")]


def test_display_filter_on_app_uuid_selects_its_commands(captures):
    frames = tshark_fields(captures["current"], "ciq.app_uuid == 0180e520-5f7e-11e4-9803-0800200c9a66",
                           ["ciq.command"])
    assert [f["ciq.command"][0] for f in frames] == ["1", "1", "5", "5", "6", "6"]


# --------------------------------------------------------------------------------------------
# The API-call dissector on LINKTYPE_USER0
# --------------------------------------------------------------------------------------------

API_FRAMES = [
    b'{"call":"send","app":"0180e520-5f7e-11e4-9803-0800200c9a66","id":3}',
    b'{ "call" : "register", "nested": {"a": [1, 2.5e-3, {"b": null}]}, "ok": true, "n": -0 }',
    '{"call":"log","text":"\\u00e9t\\u00e9 \\ud83d\\ude00 \\"q\\" caf\u00e9"}'.encode("utf-8"),
    b'{"app":"x","id":5}',
    b'{"call":7}',
    b'{"call": "tru',
    b"[1, 2]",
    b'{"a":' + b"[" * 100 + b"]" * 100 + b"}",
    b'{"call":"s\xffnd"}',
    b'{"call":"\xed\xa0\x80"}',
]


@pytest.fixture(scope="session")
def api_capture(tmp_path_factory):
    tshark_path()
    path = str(tmp_path_factory.mktemp("api") / "api.pcapng")
    ciq.write_pcapng(path, [ciq.LINKTYPE_USER0], [(0, 1_700_000_000_000_000 + i, f) for i, f in enumerate(API_FRAMES)])
    return path


@pytest.fixture(scope="session")
def api_frames(api_capture):
    return tshark_fields(api_capture, "frame", ["tether.api.json", "tether.api.call", "tether.api.member",
                                                "tether.api.invalid_json", "tether.api.no_call",
                                                "tether.api.invalid_utf8",
                                                "_ws.col.Info", "_ws.lua.error", "_ws.malformed.expert",
                                                "_ws.malformed.dissector_bug"])


def test_api_frames_show_their_json_text(api_frames):
    assert [f["tether.api.json"][0] for f in api_frames] == [frame.decode("utf-8", "replace") for frame in API_FRAMES[:8]] + [
        '{"call":"s\ufffdnd"}', '{"call":"\ufffd\ufffd\ufffd"}']


def test_api_text_that_is_not_utf8_is_flagged(api_frames):
    assert ["tether.api.invalid_utf8" in f for f in api_frames] == [False] * 8 + [True] * 2


def test_api_frames_show_the_call_member(api_frames):
    assert [f.get("tether.api.call", [None])[0] for f in api_frames] == ["send", "register", "log"] + [None] * 7


def test_api_string_members_are_unescaped(api_frames):
    assert "text: été 😀 \"q\" café" in api_frames[2]["tether.api.member"]


def test_api_record_without_call_is_flagged(api_frames):
    assert ["tether.api.no_call" in f for f in api_frames] == [False, False, False, True, True, False, False, False, False, False]


def test_api_text_that_is_not_one_json_object_is_flagged_without_lua_error(api_frames):
    assert ["tether.api.invalid_json" in f for f in api_frames] == [False] * 5 + [True] * 3 + [False] * 2
    assert [f for f in api_frames if {"_ws.lua.error", "_ws.malformed.expert", "_ws.malformed.dissector_bug"} & f.keys()] == []


def test_api_calls_sit_next_to_the_packets_they_caused(captures):
    frames = tshark_fields(captures["pcapng"], "ciq || tether.api", ["tether.api.call", "ciq.kind"])
    order = [("api", f["tether.api.call"][0]) if "tether.api.call" in f else ("ciq", None) for f in frames]
    expected = []
    for step in STEPS:
        if step.api_call is not None:
            expected.append(("api", step.api_call["call"]))
        expected.append(("ciq", None))
    assert order == expected
