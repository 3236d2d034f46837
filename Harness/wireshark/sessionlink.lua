-- sessionlink.lua: a Wireshark dissector for Tether's session link (SessionCore's wire).
--
--   tshark -X lua_script:Harness/wireshark/sessionlink.lua -r CAPTURE
--
-- "Tether session link" (filter name `tsl`): one ATT value of the session link's write
-- characteristic 54450002-5345-5353-494f-4e4c494e4b01 (ATT Write Command / Write Request,
-- phone → watch) or of its notify characteristic 54450003-… (Handle Value Notification,
-- watch → phone) is one frame. Wireshark's ATT dissector hands a characteristic's value to the
-- `bluetooth.uuid` dissector table under the characteristic's UUID; it learns which handle
-- carries which UUID from the GATT discovery in the capture, so the capture must include it.
--
-- Layouts: docs/session-link.md (frames, channels, control items); dictionaries are in the
-- Monkey C serialization of docs/connectiq-link.md. Integers of the link are
-- little-endian, identities most significant byte first, Monkey C values big-endian.
--
-- Each frame is decoded on its own (no reassembly): the header, the flags, and — when the frame
-- holds a whole item (FIRST|LAST) — the control item or the dictionary it carries. Compact frames
-- (page version 3, "Compact frames") are the exception: whether a link negotiated them is in its
-- HELLO and WELCOME, which at ATT MTU 23 span several frames, and a compact frame's id and offset
-- come from the frames before it. So on the first pass, in capture order, the script reassembles
-- the handshake items of each direction (for their options only), keeps each direction's frame
-- context, and stores for every frame what it needs; later passes read what was stored. It
-- follows one link at a time (a capture of one phone and one watch). Every read is
-- bounds-checked first; anything the link refuses gets an expert info; no input raises a Lua
-- error. The script stands alone (it shares no file with connectiq.lua), so either or both can
-- be loaded.

---------------------------------------------------------------------------------------------
-- Wire constants
---------------------------------------------------------------------------------------------

local WRITE_CHARACTERISTIC = "54450002-5345-5353-494f-4e4c494e4b01"
local NOTIFY_CHARACTERISTIC = "54450003-5345-5353-494f-4e4c494e4b01"
local PHONE_TO_WATCH = "phone→watch"
local WATCH_TO_PHONE = "watch→phone"

local ATT_WRITE_REQUEST = 0x12
local ATT_WRITE_COMMAND = 0x52
local ATT_HANDLE_VALUE_NOTIFICATION = 0x1b

local HEADER_LENGTH = 10
local U32_MAX = 4294967295
local COMPLETE = U32_MAX

local CH_CONTROL, CH_CONTEXT, CH_MESSAGE, CH_MESSAGE_DATA, CH_REPLY = 0, 1, 2, 3, 4
local CH_USER_INFO, CH_COMPLICATION, CH_FILE_METADATA, CH_FILE_CHUNK = 5, 6, 7, 8

local CHANNEL_NAMES = {
    [0] = "control", [1] = "context", [2] = "message", [3] = "message-data", [4] = "reply",
    [5] = "user-info", [6] = "complication", [7] = "file-metadata", [8] = "file-chunk",
}
-- The largest item of each channel (session-link.md, "Channels").
local LARGEST_ITEM = {
    [0] = 256, [1] = 262144, [2] = 65536, [3] = 65536, [4] = 65540, [5] = 65536, [6] = 65536,
    [7] = 65540, [8] = 4294967294,
}
-- Channels whose whole item is a property-list dictionary.
local DICTIONARY_CHANNELS = { [1] = true, [2] = true, [5] = true, [6] = true }

local FIRST, LAST, NEEDS_ACK, RETRANSMISSION = 0x01, 0x02, 0x04, 0x08
local EXPECTS_REPLY, CURRENT_COMPLICATION, RESERVED = 0x10, 0x20, 0xC0
local FLAG_NAMES = {
    { FIRST, "FIRST" }, { LAST, "LAST" }, { NEEDS_ACK, "NEEDS-ACK" },
    { RETRANSMISSION, "RETRANSMISSION" }, { EXPECTS_REPLY, "EXPECTS-REPLY" },
    { CURRENT_COMPLICATION, "CURRENT-COMPLICATION" },
}

local OP_HELLO, OP_WELCOME, OP_ACK, OP_ERROR, OP_CANCEL, OP_STATUS, OP_STATUS_ACK = 1, 2, 3, 4, 5, 6, 7
local OP_NAMES = {
    [1] = "HELLO", [2] = "WELCOME", [3] = "ACK", [4] = "ERROR", [5] = "CANCEL", [6] = "STATUS",
    [7] = "STATUS-ACK",
}
local CONTROL_LENGTHS = { [1] = 55, [2] = 55, [3] = 10, [4] = 8, [5] = 6, [6] = 6, [7] = 5 }
local LINK_VERSION = 1

local PAIRED, INSTALLED, COMPLICATION, REACHABLE, ACTIVATED = 0x01, 0x02, 0x04, 0x08, 0x10
local STATUS_NAMES = {
    { PAIRED, "paired" }, { INSTALLED, "installed" }, { COMPLICATION, "complication" },
    { REACHABLE, "reachable" }, { ACTIVATED, "activated" },
}

-- WCError codes (docs/session-semantics.md, "Errors").
local ERROR_NAMES = {
    [7001] = "genericError", [7002] = "sessionNotSupported", [7003] = "sessionMissingDelegate",
    [7004] = "sessionNotActivated", [7005] = "deviceNotPaired", [7006] = "watchAppNotInstalled",
    [7007] = "notReachable", [7008] = "invalidParameter", [7009] = "payloadTooLarge",
    [7010] = "payloadUnsupportedTypes", [7011] = "messageReplyFailed",
    [7012] = "messageReplyTimedOut", [7013] = "fileAccessDenied", [7014] = "deliveryFailed",
    [7015] = "insufficientSpace", [7016] = "sessionInactive", [7017] = "transferTimedOut",
    [7018] = "companionAppNotInstalled", [7019] = "watchOnlyApp",
}

-- Longest tsl.value text and the part of it shown in the Info column.
local VALUE_TEXT_LIMIT = 4000
local INFO_VALUE_LIMIT = 80
-- The deepest Monkey C nesting decoded (as Tether's own decoder: the top value is depth 0).
local MAX_NESTING = 128

---------------------------------------------------------------------------------------------
-- Protocol, fields, expert infos
---------------------------------------------------------------------------------------------

local tsl = Proto("tsl", "Tether session link")

local F = {
    direction      = ProtoField.string("tsl.direction", "Direction"),
    channel        = ProtoField.uint8("tsl.channel", "Channel", base.HEX, CHANNEL_NAMES),
    flags          = ProtoField.uint8("tsl.flags", "Flags", base.HEX),
    first          = ProtoField.bool("tsl.flags.first", "FIRST", 8, nil, FIRST),
    last           = ProtoField.bool("tsl.flags.last", "LAST", 8, nil, LAST),
    needs_ack      = ProtoField.bool("tsl.flags.needs_ack", "NEEDS-ACK", 8, nil, NEEDS_ACK),
    retransmission = ProtoField.bool("tsl.flags.retransmission", "RETRANSMISSION", 8, nil, RETRANSMISSION),
    expects_reply  = ProtoField.bool("tsl.flags.expects_reply", "EXPECTS-REPLY", 8, nil, EXPECTS_REPLY),
    current_compl  = ProtoField.bool("tsl.flags.current_complication", "CURRENT-COMPLICATION", 8, nil,
        CURRENT_COMPLICATION),
    reserved       = ProtoField.bool("tsl.flags.reserved", "Reserved (0xC0)", 8, nil, RESERVED),
    id             = ProtoField.uint32("tsl.id", "Item id", base.DEC),
    total          = ProtoField.uint32("tsl.total", "Item total length", base.DEC),
    offset         = ProtoField.uint32("tsl.offset", "Offset in the item", base.DEC),
    data           = ProtoField.bytes("tsl.data", "Item bytes"),
    value          = ProtoField.string("tsl.value", "Dictionary"),
    in_reply_to    = ProtoField.uint32("tsl.in_reply_to", "In reply to message", base.DEC),
    file_size      = ProtoField.uint32("tsl.file_size", "File size", base.DEC),
    op             = ProtoField.uint8("tsl.control.op", "Control op", base.HEX, OP_NAMES),
    version        = ProtoField.uint8("tsl.control.version", "Version", base.DEC),
    identity       = ProtoField.guid("tsl.control.identity", "Identity"),
    incarnation    = ProtoField.uint32("tsl.control.incarnation", "Incarnation", base.HEX),
    epoch          = ProtoField.uint32("tsl.control.epoch", "Epoch", base.HEX),
    nonce          = ProtoField.uint32("tsl.control.nonce", "Nonce", base.HEX),
    status         = ProtoField.uint8("tsl.control.status", "Status", base.HEX),
    paired         = ProtoField.bool("tsl.control.status.paired", "Paired", 8, nil, PAIRED),
    installed      = ProtoField.bool("tsl.control.status.installed", "Installed", 8, nil, INSTALLED),
    complication   = ProtoField.bool("tsl.control.status.complication", "Complication", 8, nil, COMPLICATION),
    reachable      = ProtoField.bool("tsl.control.status.reachable", "Reachable", 8, nil, REACHABLE),
    activated      = ProtoField.bool("tsl.control.status.activated", "Activated", 8, nil, ACTIVATED),
    wm_context     = ProtoField.uint32("tsl.control.watermark.context", "Watermark context", base.DEC),
    wm_user_info   = ProtoField.uint32("tsl.control.watermark.user_info", "Watermark user info", base.DEC),
    wm_complication = ProtoField.uint32("tsl.control.watermark.complication", "Watermark complication", base.DEC),
    wm_file        = ProtoField.uint32("tsl.control.watermark.file", "Watermark file", base.DEC),
    resume_id      = ProtoField.uint32("tsl.control.resume_id", "File resume id", base.DEC),
    resume_offset  = ProtoField.uint32("tsl.control.resume_offset", "File resume offset", base.DEC),
    window         = ProtoField.uint16("tsl.control.window", "Window (frames)", base.DEC),
    compact_frames = ProtoField.bool("tsl.control.compact_frames", "Compact frames stated"),
    compact        = ProtoField.bool("tsl.compact", "Compact frame"),
    offset_bits    = ProtoField.uint16("tsl.offset_bits", "Offset mod 2^16", base.DEC),
    option_type    = ProtoField.uint8("tsl.control.option", "Handshake option", base.HEX),
    ctl_channel    = ProtoField.uint8("tsl.control.channel", "Channel", base.HEX, CHANNEL_NAMES),
    ctl_id         = ProtoField.uint32("tsl.control.id", "Item id", base.DEC),
    received       = ProtoField.uint32("tsl.control.received", "Received", base.DEC),
    code           = ProtoField.uint16("tsl.control.code", "Error code", base.DEC, ERROR_NAMES),
    sequence       = ProtoField.uint32("tsl.control.sequence", "Sequence", base.DEC),
}
tsl.fields = {
    F.direction, F.channel, F.flags, F.first, F.last, F.needs_ack, F.retransmission,
    F.expects_reply, F.current_compl, F.reserved, F.id, F.total, F.offset, F.data, F.value,
    F.in_reply_to, F.file_size, F.op, F.version, F.identity, F.incarnation, F.epoch, F.nonce,
    F.status, F.paired, F.installed, F.complication, F.reachable, F.activated, F.wm_context,
    F.wm_user_info, F.wm_complication, F.wm_file, F.resume_id, F.resume_offset, F.window, F.compact_frames, F.compact, F.offset_bits, F.option_type, F.ctl_channel,
    F.ctl_id, F.received, F.code, F.sequence,
}

-- One expert per violation kind of session-link.md ("Violations") a single frame can show.
local E = {
    malformed_frame = ProtoExpert.new("tsl.malformed_frame", "Malformed session link frame",
        expert.group.MALFORMED, expert.severity.ERROR),
    invalid_flags = ProtoExpert.new("tsl.invalid_flags", "Flags the session link refuses",
        expert.group.PROTOCOL, expert.severity.ERROR),
    unknown_channel = ProtoExpert.new("tsl.unknown_channel", "Unknown session link channel",
        expert.group.PROTOCOL, expert.severity.WARN),
    malformed_control = ProtoExpert.new("tsl.malformed_control", "Control item of the wrong length",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown_control = ProtoExpert.new("tsl.unknown_control", "Unknown control op",
        expert.group.PROTOCOL, expert.severity.WARN),
    item_too_large = ProtoExpert.new("tsl.item_too_large", "Item larger than its channel allows",
        expert.group.PROTOCOL, expert.severity.WARN),
    undecodable_payload = ProtoExpert.new("tsl.undecodable_payload",
        "Item whose content does not decode (dictionary, property list, 4-byte prefix)",
        expert.group.MALFORMED, expert.severity.ERROR),
    unknown_error_code = ProtoExpert.new("tsl.unknown_error_code", "Error code outside 7001-7019",
        expert.group.PROTOCOL, expert.severity.WARN),
    version_mismatch = ProtoExpert.new("tsl.version_mismatch", "Handshake of another link version",
        expert.group.PROTOCOL, expert.severity.WARN),
    wrong_direction = ProtoExpert.new("tsl.wrong_direction",
        "HELLO goes phone to watch, WELCOME watch to phone",
        expert.group.PROTOCOL, expert.severity.WARN),
}
tsl.experts = {
    E.malformed_frame, E.invalid_flags, E.unknown_channel, E.malformed_control, E.unknown_control,
    E.item_too_large, E.undecodable_payload, E.unknown_error_code,
    E.version_mismatch, E.wrong_direction,
}

local att_opcode_field = Field.new("btatt.opcode")

---------------------------------------------------------------------------------------------
-- Helpers
---------------------------------------------------------------------------------------------

--- The ATT opcode of the PDU being dissected (the last one in the frame so far), or nil.
local function current_att_opcode()
    local values = { att_opcode_field() }
    local last = values[#values]
    if last == nil then return nil end
    return last.value
end

--- Whether `bit` (a power of two) is set in `value`. Arithmetic only: Wireshark 4.0 runs Lua
--- 5.2, which has no bitwise operators, and Lua 5.4 (later Wireshark) has no bit32 library.
local function has_bit(value, bit)
    return math.floor(value / bit) % 2 == 1
end

local function channel_text(channel)
    return CHANNEL_NAMES[channel] or string.format("channel 0x%02x", channel)
end

--- `FIRST|LAST|NEEDS-ACK`, reserved bits as `0x40`; "" for no flags.
local function flag_text(flags)
    local parts = {}
    for _, pair in ipairs(FLAG_NAMES) do
        if has_bit(flags, pair[1]) then parts[#parts + 1] = pair[2] end
    end
    local reserved = flags - flags % 0x40
    if reserved ~= 0 then parts[#parts + 1] = string.format("0x%02x", reserved) end
    return table.concat(parts, "|")
end

--- `paired|installed`, unknown bits as `0xe0`; "none" for 0.
local function status_text(status)
    local parts = {}
    for _, pair in ipairs(STATUS_NAMES) do
        if has_bit(status, pair[1]) then parts[#parts + 1] = pair[2] end
    end
    local unknown = status - status % 0x20
    if unknown ~= 0 then parts[#parts + 1] = string.format("0x%02x", unknown) end
    if #parts == 0 then return "none" end
    return table.concat(parts, "|")
end

--- "0ff1ce00-0000-4000-8000-000000000001" from 16 bytes in standard (big-endian) order.
local function uuid_text(range)
    local hex = range:bytes():tohex():lower()
    return hex:sub(1, 8) .. "-" .. hex:sub(9, 12) .. "-" .. hex:sub(13, 16) .. "-"
        .. hex:sub(17, 20) .. "-" .. hex:sub(21, 32)
end

--- `text` cut to `limit` characters (bytes; never inside a UTF-8 sequence), with "…" when cut.
local function clip(text, limit)
    if #text <= limit then return text end
    local cut = limit
    while cut > 0 and text:byte(cut + 1) >= 0x80 and text:byte(cut + 1) < 0xC0 do cut = cut - 1 end
    return text:sub(1, cut) .. "…"
end

---------------------------------------------------------------------------------------------
-- Monkey C values (docs/connectiq-link.md, "Monkey C value serialization"), total and bounded
---------------------------------------------------------------------------------------------

-- Decoding raises a table {message = …, offset = …} for bytes that are not a value; the
-- callers catch exactly those, and raise anything else again (a bug must stay visible).
local function mc_fail(message, offset)
    error({ message = message, offset = offset }, 0)
end

local TAG_NULL, TAG_INT, TAG_FLOAT, TAG_STRING, TAG_ARRAY = 0x00, 0x01, 0x02, 0x03, 0x05
local TAG_BOOL, TAG_DICT, TAG_LONG, TAG_DOUBLE, TAG_CHAR, TAG_BYTES = 0x09, 0x0B, 0x0E, 0x0F, 0x13, 0x14
local STRING_MAGIC = "\171\205\171\205"
local OBJECT_MAGIC = "\218\122\218\122"

--- The 0-based offset of the first byte that breaks UTF-8 in `s` (overlong forms, surrogates
--- and code points above U+10FFFF included), or nil when `s` is valid UTF-8.
local function utf8_error_offset(s)
    local i, n = 1, #s
    while i <= n do
        local c = s:byte(i)
        local len
        if c < 0x80 then len = 1
        elseif c >= 0xC2 and c <= 0xDF then len = 2
        elseif c >= 0xE0 and c <= 0xEF then len = 3
        elseif c >= 0xF0 and c <= 0xF4 then len = 4
        else return i - 1 end
        if i + len - 1 > n then return i - 1 end
        for k = 1, len - 1 do
            local b = s:byte(i + k)
            if b < 0x80 or b > 0xBF then return i - 1 end
        end
        local b2 = s:byte(i + 1)
        if (c == 0xE0 and b2 < 0xA0) or (c == 0xED and b2 > 0x9F)
            or (c == 0xF0 and b2 < 0x90) or (c == 0xF4 and b2 > 0x8F) then
            return i - 1
        end
        i = i + len
    end
    return nil
end

--- Decodes the serialized value in `s` (a Lua string; offsets in errors are 0-based into it).
--- Returns the list of nodes in breadth-first order: node 1 is the top value; a container
--- node has `count` children (arrays) or pairs (dictionaries) starting at node `first`.
--- The rules are Tether's decoder's: an optional string block, one object block whose length
--- is used exactly, only zero bytes after it; string references point at an entry of the string
--- block; counts are checked against the bytes left before anything is built.
local function mc_decode(s)
    local n = #s
    local function u32(at)
        local a, b, c, d = s:byte(at + 1, at + 4)
        return ((a * 256 + b) * 256 + c) * 256 + d
    end
    local function need(count, at, limit, what)
        if count > limit - at then
            mc_fail(string.format("expected %s (%d bytes) at offset %d but only %d remain",
                what, count, at, math.max(0, limit - at)), at)
        end
    end

    local pos = 0
    local strings_start, strings_end
    need(4, pos, n, "a block magic")
    local magic = s:sub(pos + 1, pos + 4)
    if magic == STRING_MAGIC then
        need(4, pos + 4, n, "the string block length")
        local length = u32(pos + 4)
        need(length, pos + 8, n, "the string block")
        strings_start, strings_end = pos + 8, pos + 8 + length
        pos = strings_end
        need(4, pos, n, "the object block magic")
        magic = s:sub(pos + 1, pos + 4)
    end
    if magic ~= OBJECT_MAGIC then
        mc_fail(string.format("expected the object block magic da7ada7a at offset %d, found %s",
            pos, Struct.tohex(magic):lower()), pos)
    end
    need(4, pos + 4, n, "the object block length")
    local length = u32(pos + 4)
    local start = pos + 8
    need(length, start, n, "the object block")
    local stop = start + length
    for i = stop + 1, n do
        if s:byte(i) ~= 0 then
            mc_fail(string.format("%d bytes after the object block (offset %d) are not zero padding",
                n - stop, stop), i - 1)
        end
    end

    local string_cache = {}
    local function string_at(reference, at)
        if string_cache[reference] then return string_cache[reference] end
        if strings_start == nil then
            mc_fail(string.format("a string at offset %d but the value has no string block", at), at)
        end
        if reference > strings_end - strings_start - 2 then
            mc_fail(string.format("string reference %d at offset %d is outside the %d-byte string block",
                reference, at, strings_end - strings_start), at)
        end
        local entry = strings_start + reference
        local size = s:byte(entry + 1) * 256 + s:byte(entry + 2)
        if size == 0 then mc_fail(string.format("string length 0 at offset %d", entry), entry) end
        local text_start = entry + 2
        need(size, text_start, strings_end, "a string and its terminator")
        local terminator = text_start + size - 1
        if s:byte(terminator + 1) ~= 0 then
            mc_fail(string.format("string at offset %d does not end with 00", entry), terminator)
        end
        local text = s:sub(text_start + 1, terminator)
        local bad = utf8_error_offset(text)
        if bad then
            mc_fail(string.format("string at offset %d is not UTF-8 (byte %d)", entry, text_start + bad),
                text_start + bad)
        end
        string_cache[reference] = text
        return text
    end

    local nodes, depths = {}, { 0 }
    local expected = 1
    pos = start
    while #nodes < expected do
        if pos >= stop then
            mc_fail(string.format("the object block ends at offset %d with %d objects still due",
                stop, expected - #nodes), pos)
        end
        local depth = depths[#nodes + 1]
        local at = pos
        local tag = s:byte(pos + 1)
        pos = pos + 1
        local node
        if tag == TAG_NULL then
            node = { kind = "null" }
        elseif tag == TAG_BOOL then
            need(1, pos, stop, "a bool")
            node = { kind = "bool", value = s:byte(pos + 1) ~= 0 }
            pos = pos + 1
        elseif tag == TAG_INT then
            need(4, pos, stop, "an int32")
            node = { kind = "int", value = Struct.unpack(">i4", s, pos + 1) }
            pos = pos + 4
        elseif tag == TAG_LONG then
            need(8, pos, stop, "an int64")
            node = { kind = "long", value = Struct.unpack(">e", s, pos + 1) }
            pos = pos + 8
        elseif tag == TAG_FLOAT then
            need(4, pos, stop, "a float32")
            node = { kind = "float", value = Struct.unpack(">f", s, pos + 1) }
            pos = pos + 4
        elseif tag == TAG_DOUBLE then
            need(8, pos, stop, "a double")
            node = { kind = "double", value = Struct.unpack(">d", s, pos + 1) }
            pos = pos + 8
        elseif tag == TAG_CHAR then
            need(4, pos, stop, "a char")
            node = { kind = "char", value = u32(pos) }
            pos = pos + 4
        elseif tag == TAG_STRING then
            need(4, pos, stop, "a string reference")
            node = { kind = "string", value = string_at(u32(pos), pos) }
            pos = pos + 4
        elseif tag == TAG_BYTES then
            need(4, pos, stop, "a byte array length")
            local count = u32(pos)
            pos = pos + 4
            need(count, pos, stop, "the bytes of a byte array")
            node = { kind = "bytes", value = s:sub(pos + 1, pos + count) }
            pos = pos + count
        elseif tag == TAG_ARRAY or tag == TAG_DICT then
            local is_array = tag == TAG_ARRAY
            need(4, pos, stop, is_array and "an array count" or "a dictionary pair count")
            local count = u32(pos)
            pos = pos + 4
            local children = is_array and count or 2 * count
            -- Every object still due takes at least one byte: refuse counts the block cannot hold.
            local still_due = expected - #nodes - 1
            if children > stop - pos - still_due then
                mc_fail(string.format("%s at offset %d counts %d but only %d bytes remain",
                    is_array and "an array" or "a dictionary", at, count, stop - pos), at)
            end
            if children > 0 and depth + 1 > MAX_NESTING then
                mc_fail(string.format("containers nest deeper than %d levels at offset %d", MAX_NESTING, at), at)
            end
            node = { kind = is_array and "array" or "dict", count = count, first = expected + 1 }
            for _ = 1, children do depths[#depths + 1] = depth + 1 end
            expected = expected + children
        else
            mc_fail(string.format("unknown type tag 0x%02x at offset %d", tag, at), at)
        end
        nodes[#nodes + 1] = node
    end
    if pos ~= stop then
        mc_fail(string.format("the object block says %d bytes but its objects end at offset %d",
            length, pos), pos)
    end
    return nodes
end

--- Shortest "d.ddde±xx" text that reads back as `v` (as a float32 when `single`).
local function shortest_exponent_text(v, single)
    for precision = 0, 16 do
        local text = string.format("%." .. precision .. "e", v)
        local back = tonumber(text)
        if single then back = Struct.unpack(">f", Struct.pack(">f", back)) end
        if back == v then return text end
    end
    return string.format("%.16e", v)
end

--- A float as MonkeyCValue's description writes it: shortest round-trip digits, decimal for
--- magnitudes in [1e-4, 2^53) (2^24 for a float32), else `1e+16` style; integral values get
--- `.0`; `nan`, `inf`, `-inf`.
local function float_text(v, single)
    if v ~= v then return "nan" end
    if v == math.huge then return "inf" end
    if v == -math.huge then return "-inf" end
    local sign = (v < 0 or (v == 0 and 1 / v < 0)) and "-" or ""
    local magnitude = math.abs(v)
    if magnitude == 0 then return sign .. "0.0" end
    local text = shortest_exponent_text(magnitude, single)
    local lead, rest, exponent = text:match("^(%d)%.?(%d*)e([-+]%d+)$")
    local digits = (lead .. rest):gsub("0+$", "")
    if digits == "" then digits = "0" end
    local e = tonumber(exponent)
    local limit = single and 16777216 or 9007199254740992
    if magnitude >= 1e-4 and magnitude < limit then
        if e >= 0 then
            local whole = digits:sub(1, e + 1)
            whole = whole .. string.rep("0", e + 1 - #whole)
            local fraction = digits:sub(e + 2)
            if fraction == "" then fraction = "0" end
            return sign .. whole .. "." .. fraction
        end
        return sign .. "0." .. string.rep("0", -e - 1) .. digits
    end
    local mantissa = digits:sub(1, 1)
    if #digits > 1 then mantissa = mantissa .. "." .. digits:sub(2) end
    return string.format("%s%se%s%02d", sign, mantissa, e < 0 and "-" or "+", math.abs(e))
end

local function quoted(text)
    local out = text:gsub('[%c"\\\127]', function(c)
        if c == '"' then return '\\"' end
        if c == "\\" then return "\\\\" end
        if c == "\n" then return "\\n" end
        if c == "\r" then return "\\r" end
        if c == "\t" then return "\\t" end
        return string.format("\\u%04x", c:byte())
    end)
    return '"' .. out .. '"'
end

local function char_text(code)
    if code >= 0x20 and code < 0x7F and code ~= 0x27 and code ~= 0x5C then
        return "'" .. string.char(code) .. "'"
    end
    return string.format("'\\u{%X}'", code)
end

--- One line for the value at node `index`: JSON where JSON has the type, Monkey C suffixes
--- where it does not (`5000000000l`, `3.5f`, `'a'`, `[0x01, 0xff]b`), as Tether's traces write
--- values. Stops adding once the text passes VALUE_TEXT_LIMIT (the caller clips it).
local function value_text(nodes, index)
    local parts, size = {}, 0
    local function put(text)
        parts[#parts + 1] = text
        size = size + #text
    end
    local function write(i)
        if size > VALUE_TEXT_LIMIT then return end
        local node = nodes[i]
        local kind = node.kind
        if kind == "null" then put("null")
        elseif kind == "bool" then put(node.value and "true" or "false")
        elseif kind == "int" then put(tostring(node.value))
        elseif kind == "long" then put(tostring(node.value) .. "l")
        elseif kind == "float" then put(float_text(node.value, true) .. "f")
        elseif kind == "double" then put(float_text(node.value, false))
        elseif kind == "char" then put(char_text(node.value))
        elseif kind == "string" then put(quoted(node.value))
        elseif kind == "bytes" then
            local hex = {}
            for k = 1, math.min(#node.value, VALUE_TEXT_LIMIT) do
                hex[#hex + 1] = string.format("0x%02x", node.value:byte(k))
            end
            put("[" .. table.concat(hex, ", ") .. "]b")
        elseif kind == "array" then
            put("[")
            for k = 0, node.count - 1 do
                if size > VALUE_TEXT_LIMIT then return end
                if k > 0 then put(", ") end
                write(node.first + k)
            end
            put("]")
        else
            put("{")
            for k = 0, node.count - 1 do
                if size > VALUE_TEXT_LIMIT then return end
                if k > 0 then put(", ") end
                write(node.first + 2 * k)
                put(": ")
                write(node.first + 2 * k + 1)
            end
            put("}")
        end
    end
    write(index)
    return clip(table.concat(parts), VALUE_TEXT_LIMIT)
end

local TYPE_NAMES = {
    null = "null", bool = "a bool", int = "an integer", long = "an integer", float = "a float",
    double = "a float", char = "a char", string = "a string", bytes = "a byte array",
    array = "an array", dict = "a dictionary",
}

--- Why the decoded value is not a property-list dictionary (session-link.md, "Channels": string
--- keys at every depth, no null and no char anywhere), or nil when it is one.
local function property_list_problem(nodes)
    if nodes[1].kind ~= "dict" then
        return "the top value is " .. TYPE_NAMES[nodes[1].kind] .. ", not a dictionary"
    end
    local function check(i, path)
        local node = nodes[i]
        local where = path == "" and "the top" or path
        if node.kind == "null" then return "null at " .. where .. " has no property-list type" end
        if node.kind == "char" then return "a char at " .. where .. " has no property-list type" end
        if node.kind == "array" then
            for k = 0, node.count - 1 do
                local problem = check(node.first + k, path .. "[" .. k .. "]")
                if problem then return problem end
            end
        elseif node.kind == "dict" then
            for k = 0, node.count - 1 do
                local key = nodes[node.first + 2 * k]
                if key.kind ~= "string" then
                    return "a key of " .. TYPE_NAMES[key.kind] .. " at " .. where .. "; keys must be strings"
                end
                local problem = check(node.first + 2 * k + 1, path .. "[" .. quoted(key.value) .. "]")
                if problem then return problem end
            end
        end
        return nil
    end
    return check(1, "")
end

--- Decodes `s` as a property-list dictionary: returns (text, nil), (text, problem) when it
--- decodes but is no property list, or (nil, problem) when it does not decode.
local function decode_dictionary(s)
    local ok, result = pcall(mc_decode, s)
    if not ok then
        if type(result) == "table" and result.message then return nil, result.message end
        error(result, 0)
    end
    return value_text(result, 1), property_list_problem(result)
end

---------------------------------------------------------------------------------------------
-- Control items (channel 0x00), from a whole item in one frame
---------------------------------------------------------------------------------------------

local function add_status(tree, range)
    local it = tree:add(F.status, range)
    it:append_text(" (" .. status_text(range:uint()) .. ")")
    it:add(F.paired, range)
    it:add(F.installed, range)
    it:add(F.complication, range)
    it:add(F.reachable, range)
    it:add(F.activated, range)
end

--- Adds the control item in `item` (a TvbRange of `size` bytes, size ≥ 1); returns the Info
--- text, and whether the item is refused.
local function dissect_control(item, size, tree, direction)
    local op = item(0, 1):uint()
    local op_item = tree:add(F.op, item(0, 1))
    local name = OP_NAMES[op]
    if name == nil then
        op_item:add_proto_expert_info(E.unknown_control, string.format(
            "Control op 0x%02x is not defined (ops 0x01-0x07); the item is refused (unknown-control)", op))
        return string.format("control op 0x%02x (unknown)", op), true
    end
    local length = CONTROL_LENGTHS[op]
    -- HELLO and WELCOME are 55 bytes and then their options (page version 2); the rest are fixed.
    local handshake = op == OP_HELLO or op == OP_WELCOME
    if (handshake and size < length) or (not handshake and size ~= length) then
        op_item:add_proto_expert_info(E.malformed_control, string.format(
            "%s is %d bytes, op included; this one has %d (malformed-control)", name, length, size))
        return string.format("%s [malformed control: %d of %d bytes]", name, size, length), true
    end
    if op == OP_HELLO or op == OP_WELCOME then
        local version = item(1, 1):uint()
        local version_item = tree:add(F.version, item(1, 1))
        if version ~= LINK_VERSION then
            version_item:add_proto_expert_info(E.version_mismatch, string.format(
                "Version %d; this link is version %d (version-mismatch: the watch does not answer)",
                version, LINK_VERSION))
        end
        tree:add(F.identity, item(2, 16))
        tree:add_le(F.incarnation, item(18, 4))
        tree:add_le(F.epoch, item(22, 4))
        tree:add_le(F.nonce, item(26, 4))
        add_status(tree, item(30, 1))
        tree:add_le(F.wm_context, item(31, 4))
        tree:add_le(F.wm_user_info, item(35, 4))
        tree:add_le(F.wm_complication, item(39, 4))
        tree:add_le(F.wm_file, item(43, 4))
        tree:add_le(F.resume_id, item(47, 4))
        tree:add_le(F.resume_offset, item(51, 4))
        local expected_direction = op == OP_HELLO and PHONE_TO_WATCH or WATCH_TO_PHONE
        if direction ~= expected_direction then
            op_item:add_proto_expert_info(E.wrong_direction, string.format(
                "%s goes %s; this one came %s", name, expected_direction, direction))
        end
        local info = string.format("%s epoch=0x%08x nonce=0x%08x identity=%s", name,
            item(22, 4):le_uint(), item(26, 4):le_uint(), uuid_text(item(2, 16)))
        -- Options: type u8, length u8, value. Unknown types are skipped; a cut-short option or a
        -- window of the wrong length makes the item malformed-control.
        local offset = 55
        while offset < size do
            if size - offset < 2 or size - offset - 2 < item(offset + 1, 1):uint() then
                op_item:add_proto_expert_info(E.malformed_control, string.format(
                    "%s option at byte %d is cut short (malformed-control)", name, offset))
                return info .. " [malformed option]", true
            end
            local option_type, option_length = item(offset, 1):uint(), item(offset + 1, 1):uint()
            tree:add(F.option_type, item(offset, 1))
            if option_type == 1 then
                if option_length ~= 2 or item(offset + 2, 2):le_uint() == 0 then
                    op_item:add_proto_expert_info(E.malformed_control, string.format(
                        "%s window option must be 2 bytes, 1-65535 (malformed-control)", name))
                    return info .. " [malformed option]", true
                end
                tree:add_le(F.window, item(offset + 2, 2))
                info = info .. string.format(" window=%d", item(offset + 2, 2):le_uint())
            elseif option_type == 2 then
                if option_length ~= 0 then
                    op_item:add_proto_expert_info(E.malformed_control, string.format(
                        "%s compact frames option takes no value (malformed-control)", name))
                    return info .. " [malformed option]", true
                end
                tree:add(F.compact_frames, item(offset, 2), true)
                info = info .. " compact-frames"
            end
            offset = offset + 2 + option_length
        end
        if version ~= LINK_VERSION then info = info .. string.format(" [version %d]", version) end
        return info, version ~= LINK_VERSION
    end
    if op == OP_STATUS then
        tree:add_le(F.sequence, item(1, 4))
        add_status(tree, item(5, 1))
        return string.format("STATUS %d %s", item(1, 4):le_uint(), status_text(item(5, 1):uint())), false
    end
    if op == OP_STATUS_ACK then
        tree:add_le(F.sequence, item(1, 4))
        return string.format("STATUS-ACK %d", item(1, 4):le_uint()), false
    end
    -- ACK, ERROR, CANCEL: channel u8, id u32, then their own field.
    local channel = item(1, 1):uint()
    local target = channel_text(channel) .. " " .. item(2, 4):le_uint()
    tree:add(F.ctl_channel, item(1, 1))
    tree:add_le(F.ctl_id, item(2, 4))
    if op == OP_ACK then
        local received = item(6, 4):le_uint()
        local it = tree:add_le(F.received, item(6, 4))
        if received == COMPLETE then
            it:append_text(" (complete)")
            return "ACK " .. target .. " complete", false
        end
        return "ACK " .. target .. " received=" .. received, false
    elseif op == OP_ERROR then
        local code = item(6, 2):le_uint()
        local it = tree:add_le(F.code, item(6, 2))
        local code_name = ERROR_NAMES[code]
        if code_name == nil then
            it:add_proto_expert_info(E.unknown_error_code, string.format(
                "Code %d is not a WCError code (7001-7019); it is taken as 7001 (unknown-error-code)", code))
            code_name = "unknown"
        end
        return string.format("ERROR %s %d %s", target, code, code_name), code_name == "unknown"
    end
    return "CANCEL " .. target, false
end

---------------------------------------------------------------------------------------------
-- Data items, from a whole item in one frame
---------------------------------------------------------------------------------------------

--- Adds tsl.value for the dictionary in `range` (`size` > 0 bytes); `required`: the item must be
--- a property-list dictionary (else bytes that do not decode are just bytes). Returns the text
--- for Info, or nil, and whether the item is refused.
local function add_dictionary(tree, range, size, required)
    local text, problem = decode_dictionary(range:raw())
    if text then tree:add(F.value, range, text) end
    if problem and (required or text) then
        tree:add_proto_expert_info(E.undecodable_payload, (text and "Not a property-list dictionary: "
            or "The Monkey C value does not decode: ") .. problem
            .. " (undecodable-payload; the receiver answers ERROR 7010)")
        return text, true
    end
    return text, false
end

--- Adds what the whole item in `item` (`size` bytes) of `channel` carries; returns an Info
--- suffix and whether the item is refused.
local function dissect_data_item(item, size, tree, channel)
    local suffix, refused = "", false
    local text
    if DICTIONARY_CHANNELS[channel] then
        if size == 0 then
            tree:add_proto_expert_info(E.undecodable_payload,
                "An empty item where a dictionary belongs (undecodable-payload; ERROR 7010)")
            return " [undecodable]", true
        end
        text, refused = add_dictionary(tree, item, size, true)
    elseif channel == CH_REPLY or channel == CH_FILE_METADATA then
        local what = channel == CH_REPLY and "inReplyTo" or "the file size"
        if size < 4 then
            tree:add_proto_expert_info(E.undecodable_payload, string.format(
                "A %s item of %d bytes: it starts with %s (u32) (undecodable-payload; the receiver answers ERROR %d)",
                channel_text(channel), size, what, channel == CH_REPLY and 7011 or 7010))
            return " [undecodable]", true
        end
        if channel == CH_REPLY then
            tree:add_le(F.in_reply_to, item(0, 4))
            suffix = " in-reply-to=" .. item(0, 4):le_uint()
        else
            tree:add_le(F.file_size, item(0, 4))
            suffix = " size=" .. item(0, 4):le_uint()
        end
        if size > 4 then
            -- A reply is a dictionary or bytes, as its message was; file metadata a dictionary.
            text, refused = add_dictionary(tree, item(4, size - 4), size - 4, channel == CH_FILE_METADATA)
        end
    end
    if text then suffix = suffix .. " " .. clip(text, INFO_VALUE_LIMIT) end
    if refused then suffix = suffix .. " [undecodable]" end
    return suffix, refused
end

---------------------------------------------------------------------------------------------
-- The frame
---------------------------------------------------------------------------------------------

--- Why the frame breaks the rules of one frame (session-link.md, "Frames"), or nil.
local function frame_problem(flags, field, n)
    if has_bit(flags, FIRST) then
        if n > field then
            return string.format("a FIRST frame carries %d bytes but announces an item of %d", n, field)
        end
        if (n == field) ~= has_bit(flags, LAST) then
            if has_bit(flags, LAST) then
                return string.format("LAST is set but the bytes end at %d of %d", n, field)
            end
            return string.format("the bytes reach the item's total %d but LAST is not set", field)
        end
    else
        if n == 0 then return "a continuation frame (no FIRST) without bytes" end
        if field + n > U32_MAX then
            return string.format("offset %d plus %d bytes passes 2^32 - 1", field, n)
        end
    end
    return nil
end

--- Why the flags are refused (`invalid-flags`), or nil.
local function flags_problem(channel, flags)
    if flags >= 0x40 then return string.format("reserved flag bits 0x%02x are set", flags - flags % 0x40) end
    if channel == CH_CONTROL and flags % 4 ~= flags then
        return "control frames carry only FIRST and LAST"
    end
    if has_bit(flags, EXPECTS_REPLY) and channel ~= CH_MESSAGE and channel ~= CH_MESSAGE_DATA then
        return "EXPECTS-REPLY belongs only on the message channels (0x02, 0x03)"
    end
    if has_bit(flags, CURRENT_COMPLICATION) and channel ~= CH_USER_INFO and channel ~= CH_COMPLICATION then
        return "CURRENT-COMPLICATION belongs only on the user info channels (0x05, 0x06)"
    end
    return nil
end

---------------------------------------------------------------------------------------------
-- Compact frames (page version 3): the link's state, followed on the first pass
---------------------------------------------------------------------------------------------

local COMPACT_HEADER_LENGTH = 4

-- Per direction: whether compact frames are in use, the frame context (channel -> {id, end}),
-- and the control item being reassembled. Reset when a capture is (re)loaded.
local link = {}
-- Per frame number: what the first pass found (compact frames only: channel, id, offset or why
-- not), read again on later passes.
local stored = {}

local function reset_link()
    link = {
        [PHONE_TO_WATCH] = { compact = false, context = {}, control = nil },
        [WATCH_TO_PHONE] = { compact = false, context = {}, control = nil },
        welcome_nonce = nil,
    }
    stored = {}
end
reset_link()
function tsl.init() reset_link() end

--- The options of a whole HELLO or WELCOME (a Lua string): whether it states compact frames.
local function states_compact(item)
    local offset = 56
    while offset + 1 <= #item do
        local option_type, length = item:byte(offset), item:byte(offset + 1)
        if option_type == 2 and length == 0 then return true end
        offset = offset + 2 + length
    end
    return false
end

--- A whole control item seen on the first pass: a WELCOME decides compact frames (the watch states
--- them only for a HELLO that did). The watch's sending context starts again with every WELCOME;
--- the phone's when it takes one, which is the first WELCOME of a nonce.
local function take_control_item(item)
    if #item < 55 or item:byte(1) ~= OP_WELCOME then return end
    local compact = states_compact(item)
    link[WATCH_TO_PHONE].compact = compact
    link[WATCH_TO_PHONE].context = {}
    local nonce = item:sub(27, 30)
    if nonce ~= link.welcome_nonce then
        link.welcome_nonce = nonce
        link[PHONE_TO_WATCH].compact = compact
        link[PHONE_TO_WATCH].context = {}
    end
end

--- First pass, a full frame: reassembles control items (in order, as a sender writes them) and
--- records data frames in the direction's context.
local function follow_full_frame(tvb, direction, channel, flags, id, field, n)
    local state = link[direction]
    if channel == CH_CONTROL then
        if has_bit(flags, FIRST) then
            if field <= 256 then state.control = { id = id, total = field, bytes = "" } else state.control = nil end
        end
        local c = state.control
        local offset = has_bit(flags, FIRST) and 0 or field
        if c ~= nil and c.id == id and offset == #c.bytes and #c.bytes + n <= c.total then
            if n > 0 then c.bytes = c.bytes .. tvb(HEADER_LENGTH, n):raw() end
            if #c.bytes == c.total then
                state.control = nil
                take_control_item(c.bytes)
            end
        end
    elseif channel >= 1 and channel <= 8 then
        state.context[channel] = { id = id, last_end = (has_bit(flags, FIRST) and 0 or field) + n }
    end
end

--- First pass, a compact frame: its fields from the context, or why it has none.
local function follow_compact_frame(tvb, direction)
    local size = tvb:len()
    if size < COMPACT_HEADER_LENGTH then
        return { problem = string.format("a compact frame of %d bytes; its header alone is 4", size) }
    end
    local b0, flags = tvb(0, 1):uint(), tvb(1, 1):uint()
    local channel, tag = b0 % 16, math.floor(b0 / 16) % 8
    local found = { channel = channel, flags = flags }
    if channel < 1 or channel > 8 then
        found.problem = string.format("compact frames carry channels 0x01-0x08, not 0x%02x", channel)
    elseif has_bit(flags, FIRST) then
        found.problem = "a compact frame never has FIRST; an item starts with a full frame"
    elseif size == COMPACT_HEADER_LENGTH then
        found.problem = "a continuation carries at least one byte"
    else
        local context = link[direction].context[channel]
        if context == nil then
            found.problem = "no frame of " .. channel_text(channel) .. " before it in this binding: its id is unknown"
        elseif context.id % 8 ~= tag then
            found.problem = string.format("id tag %d, but the channel's last frame was #%d: a frame is missing", tag, context.id)
        else
            local bits = tvb(2, 2):le_uint()
            local delta = (bits - context.last_end) % 65536
            if delta >= 32768 then delta = delta - 65536 end
            local offset = context.last_end + delta
            local n = size - COMPACT_HEADER_LENGTH
            if offset < 0 or offset + n > U32_MAX then
                found.problem = string.format("offset bits 0x%04x after a frame ending at %d give offset %d", bits,
                    context.last_end, offset)
            else
                found.id, found.offset = context.id, offset
                link[direction].context[channel] = { id = context.id, last_end = offset + n }
            end
        end
    end
    return found
end

--- Shows a compact frame (what the first pass stored for it).
local function dissect_compact(tvb, pinfo, root, found)
    local size = tvb:len()
    local channel_item = root:add(F.channel, tvb(0, 1), found.channel)
    root:add(F.compact, tvb(0, 1), true)
    local info
    if size >= 2 then
        local flags_item = root:add(F.flags, tvb(1, 1))
        flags_item:append_text(" (" .. (found.flags == 0 and "none" or flag_text(found.flags)) .. ")")
        for _, field in ipairs({ F.first, F.last, F.needs_ack, F.retransmission, F.expects_reply, F.current_compl, F.reserved }) do
            flags_item:add(field, tvb(1, 1))
        end
        local problem = flags_problem(found.channel, found.flags)
        if problem then
            flags_item:add_proto_expert_info(E.invalid_flags, problem .. "; the frame is refused (invalid-flags)")
        end
    end
    if size >= COMPACT_HEADER_LENGTH then root:add_le(F.offset_bits, tvb(2, 2)) end
    if found.problem then
        root:add_proto_expert_info(E.malformed_frame, found.problem .. " (malformed-frame)")
        info = string.format("compact %s [malformed]", channel_text(found.channel))
    else
        root:add(F.id, tvb(0, 1), found.id):set_generated()
        root:add(F.offset, tvb(2, 2), found.offset):set_generated()
        root:add(F.data, tvb(COMPACT_HEADER_LENGTH, size - COMPACT_HEADER_LENGTH))
        info = channel_text(found.channel) .. " " .. found.id
        local flag_words = flag_text(found.flags)
        if flag_words ~= "" then info = info .. " [" .. flag_words .. "]" end
        info = info .. " offset=" .. found.offset .. " (compact)"
    end
    root:append_text(", " .. info)
    pinfo.cols.info:set(info)
    return size
end

local function dissect_frame(tvb, pinfo, tree, direction)
    pinfo.cols.protocol:set("TSL")
    local size = tvb:len()
    local root = tree:add(tsl, tvb())
    root:add(F.direction, direction):set_generated()
    local info
    if not pinfo.visited then
        if size >= 1 and tvb(0, 1):uint() >= 0x80 and link[direction].compact then
            stored[pinfo.number] = follow_compact_frame(tvb, direction)
        elseif size >= HEADER_LENGTH then
            follow_full_frame(tvb, direction, tvb(0, 1):uint(), tvb(1, 1):uint(), tvb(2, 4):le_uint(),
                tvb(6, 4):le_uint(), size - HEADER_LENGTH)
        end
    end
    if stored[pinfo.number] ~= nil then
        return dissect_compact(tvb, pinfo, root, stored[pinfo.number])
    end
    if size < HEADER_LENGTH then
        -- What fits of the header is still shown.
        if size >= 1 then root:add(F.channel, tvb(0, 1)) end
        if size >= 2 then root:add(F.flags, tvb(1, 1)) end
        root:add_proto_expert_info(E.malformed_frame, string.format(
            "A frame of %d bytes; the header (channel, flags, id, total or offset) alone is 10 (malformed-frame)", size))
        info = string.format("malformed frame (%d of the header's 10 bytes)", size)
        root:append_text(", " .. info)
        pinfo.cols.info:set(info)
        return size
    end

    local channel = tvb(0, 1):uint()
    local flags = tvb(1, 1):uint()
    local id = tvb(2, 4):le_uint()
    local field = tvb(6, 4):le_uint()
    local n = size - HEADER_LENGTH
    local is_first = has_bit(flags, FIRST)

    local channel_item = root:add(F.channel, tvb(0, 1))
    local flags_item = root:add(F.flags, tvb(1, 1))
    flags_item:append_text(" (" .. (flags == 0 and "none" or flag_text(flags)) .. ")")
    flags_item:add(F.first, tvb(1, 1))
    flags_item:add(F.last, tvb(1, 1))
    flags_item:add(F.needs_ack, tvb(1, 1))
    flags_item:add(F.retransmission, tvb(1, 1))
    flags_item:add(F.expects_reply, tvb(1, 1))
    flags_item:add(F.current_compl, tvb(1, 1))
    flags_item:add(F.reserved, tvb(1, 1))
    root:add_le(F.id, tvb(2, 4))
    root:add_le(is_first and F.total or F.offset, tvb(6, 4))
    if n > 0 then root:add(F.data, tvb(HEADER_LENGTH, n)) end

    local tags = {}
    local known = CHANNEL_NAMES[channel] ~= nil
    if not known then
        channel_item:add_proto_expert_info(E.unknown_channel, string.format(
            "Channel 0x%02x is not defined (0x00-0x08); the frame is ignored (unknown-channel)", channel))
        tags[#tags + 1] = "unknown channel"
    end
    local flag_problem = flags_problem(channel, flags)
    if flag_problem then
        flags_item:add_proto_expert_info(E.invalid_flags, flag_problem .. "; the frame is refused (invalid-flags)")
        tags[#tags + 1] = "invalid flags"
    end
    local problem = frame_problem(flags, field, n)
    if problem then
        root:add_proto_expert_info(E.malformed_frame, problem .. " (malformed-frame)")
        tags[#tags + 1] = "malformed"
    end
    if is_first and known and field > LARGEST_ITEM[channel] then
        root:add_proto_expert_info(E.item_too_large, string.format(
            "A %s item of %d bytes; the channel's largest is %d (item-too-large%s)", channel_text(channel),
            field, LARGEST_ITEM[channel], channel == CH_CONTROL and "" or "; the receiver answers ERROR 7009"))
        tags[#tags + 1] = "too large"
    end

    local whole = problem == nil and is_first and has_bit(flags, LAST)
    local flag_words = flag_text(flags)
    local head = channel_text(channel) .. " " .. id
    if flag_words ~= "" then head = head .. " [" .. flag_words .. "]" end
    head = head .. (is_first and " total=" or " offset=") .. field

    if channel == CH_CONTROL and whole and n >= 1 then
        local item = tvb(HEADER_LENGTH, n)
        info = dissect_control(item, n, root, direction)
    elseif channel == CH_CONTROL and whole then
        root:add_proto_expert_info(E.malformed_control, "An empty control item: it needs an op (malformed-control)")
        info = head .. " [malformed control: empty]"
    else
        info = head
        if whole and known then
            local suffix = dissect_data_item(n > 0 and tvb(HEADER_LENGTH, n) or nil, n, root, channel)
            info = info .. suffix
        end
    end
    if #tags > 0 then info = info .. " [" .. table.concat(tags, ", ") .. "]" end
    root:append_text(", " .. info)
    pinfo.cols.info:set(info)
    return size
end

--- A dissector for one characteristic: only the ATT opcodes that carry a frame in `direction`
--- are decoded; anything else (a read, say) is left to the ATT dissector.
local function characteristic_dissector(direction, opcodes)
    return function(tvb, pinfo, tree)
        if not opcodes[current_att_opcode()] then return 0 end
        return dissect_frame(tvb, pinfo, tree, direction)
    end
end

-- Two small protocols hand the values of each characteristic to the shared code with the
-- direction they carry; they add nothing to the tree themselves.
local tsl_write = Proto("tsl_write", "Tether session link write characteristic (phone → watch)")
tsl_write.dissector = characteristic_dissector(PHONE_TO_WATCH,
    { [ATT_WRITE_REQUEST] = true, [ATT_WRITE_COMMAND] = true })
local tsl_notify = Proto("tsl_notify", "Tether session link notify characteristic (watch → phone)")
tsl_notify.dissector = characteristic_dissector(WATCH_TO_PHONE,
    { [ATT_HANDLE_VALUE_NOTIFICATION] = true })

local uuid_table = DissectorTable.get("bluetooth.uuid")
uuid_table:add(WRITE_CHARACTERISTIC, tsl_write)
uuid_table:add(NOTIFY_CHARACTERISTIC, tsl_notify)
