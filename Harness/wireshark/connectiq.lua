-- connectiq.lua: Wireshark dissectors for the Garmin Connect IQ companion link and for
-- Tether's recorded API calls.
--
--   tshark -X lua_script:Harness/wireshark/connectiq.lua -r CAPTURE
--
-- 1. "Connect IQ link" (filter name `ciq`): one ATT value of the Connect IQ write
--    characteristic (ATT Write Command / Write Request, phone → watch) or of the notify
--    characteristic (Handle Value Notification, watch → phone) is one packet. Current and
--    legacy GATT UUIDs. Wireshark's ATT dissector hands a characteristic's value to the
--    `bluetooth.uuid` dissector table under the characteristic's UUID ("6a4e4c80-667b-…",
--    lower case with dashes); it learns which handle carries which UUID from the GATT
--    discovery in the capture, so the capture must include that discovery.
-- 2. "Tether API call" (filter name `tether.api`): frames of a LINKTYPE_USER0 (147)
--    interface, one UTF-8 JSON object each, e.g. {"call":"send","app":"…","id":3}.
--
-- Layouts: docs/connectiq-link.md ("Packets"), mirrored in docs/wireshark.md.
-- Integers of the link are little-endian; UUIDs go most significant byte first.
-- Every read is bounds-checked first: short packets get the `ciq.malformed` expert info.

---------------------------------------------------------------------------------------------
-- Wire constants
---------------------------------------------------------------------------------------------

-- Characteristic UUIDs (as the bluetooth.uuid table keys them) and the direction they carry.
local WRITE_CHARACTERISTICS = {
    "6a4e4c80-667b-11e3-949a-0800200c9a66", -- current
    "df334c80-e6a7-d082-274d-78fc66f85e16", -- legacy
}
local NOTIFY_CHARACTERISTICS = {
    "6a4ecd28-667b-11e3-949a-0800200c9a66", -- current
    "4acbcd28-7425-868e-f447-915c8f00d0cb", -- legacy
}
local PHONE_TO_WATCH = "phone→watch"
local WATCH_TO_PHONE = "watch→phone"

-- ATT opcodes whose value is a Connect IQ packet.
local ATT_WRITE_REQUEST = 0x12
local ATT_WRITE_COMMAND = 0x52
local ATT_HANDLE_VALUE_NOTIFICATION = 0x1b

local COMMAND_NAMES = {
    [1] = "connect", [2] = "disconnect", [3] = "watch opens", [4] = "watch closes",
    [5] = "app info", [6] = "open app",
}
local CONTROL_NAMES = {
    [0] = "first", [1] = "last", [2] = "ack", [3] = "ack request", [4] = "capabilities",
    [5] = "encryption key", [6] = "key request",
}
local ACK_TYPE_NAMES = {
    [0] = "first", [1] = "data", [2] = "last", [3] = "ack request", [4] = "capabilities",
    [5] = "encryption key",
}
local ACK_STATUS_NAMES = {
    [0] = "success", [1] = "resend", [2] = "CRC failure", [3] = "transfer not started",
    [4] = "invalid connection id", [5] = "out of memory", [6] = "no encryption key",
}
-- Status meanings per command (the watch's answers to connect and disconnect; the phone's
-- answers to watch opens / watch closes, where only 0 is documented).
local CONNECT_STATUS = {
    [0] = "success", [1] = "app not found", [2] = "no free connection ids",
    [3] = "connection already open",
}
local DISCONNECT_STATUS = { [0] = "success", [1] = "invalid connection id" }
local ANSWER_STATUS = { [0] = "success" }
local OPEN_APP_CODES = {
    [0] = "prompt shown", [1] = "prompt not shown", [2] = "app not installed",
    [3] = "app already running",
}
local KNOWN_APPS = { ["0180e520-5f7e-11e4-9803-0800200c9a66"] = "loopback test app" }
local VERSION_NOT_INSTALLED = 0xFFFF
local TRANSFER_ENCRYPTED = 0x02
local TRANSFER_TRANSIENT = 0x04
local CONNECT_FLAG_BIT0 = 0x01

---------------------------------------------------------------------------------------------
-- Protocol, fields, expert infos
---------------------------------------------------------------------------------------------

local ciq = Proto("ciq", "Connect IQ link")

local F = {
    kind           = ProtoField.string("ciq.kind", "Kind"),
    direction      = ProtoField.string("ciq.direction", "Direction"),
    role           = ProtoField.string("ciq.role", "Role"),
    command        = ProtoField.uint8("ciq.command", "Command", base.DEC, COMMAND_NAMES),
    command_data   = ProtoField.bytes("ciq.command_data", "Command data"),
    app_uuid       = ProtoField.guid("ciq.app_uuid", "App UUID"),
    status         = ProtoField.uint8("ciq.status", "Status", base.DEC),
    conn           = ProtoField.uint8("ciq.conn", "Connection id", base.DEC),
    flags          = ProtoField.uint8("ciq.flags", "Connect flags", base.HEX),
    force_open     = ProtoField.bool("ciq.flags.force_open", "Force open", 8, nil, CONNECT_FLAG_BIT0),
    large_packets  = ProtoField.bool("ciq.flags.large_packets", "Large packets", 8, nil, CONNECT_FLAG_BIT0),
    version        = ProtoField.uint16("ciq.version", "App version", base.DEC),
    installed      = ProtoField.bool("ciq.installed", "Installed"),
    open_app_code  = ProtoField.uint8("ciq.open_app_code", "Open app result", base.DEC, OPEN_APP_CODES),
    control        = ProtoField.uint8("ciq.control", "Control", base.DEC, CONTROL_NAMES),
    control_data   = ProtoField.bytes("ciq.control_data", "Control data"),
    transfer_flags = ProtoField.uint8("ciq.transfer_flags", "Transfer flags", base.HEX),
    encrypted      = ProtoField.bool("ciq.transfer_flags.encrypted", "Encrypted", 8, nil, TRANSFER_ENCRYPTED),
    transient      = ProtoField.bool("ciq.transfer_flags.transient", "Transient", 8, nil, TRANSFER_TRANSIENT),
    length         = ProtoField.uint32("ciq.length", "Transfer length", base.DEC),
    seq            = ProtoField.uint8("ciq.seq", "Sequence number", base.DEC),
    crc            = ProtoField.uint16("ciq.crc", "CRC-16/ARC", base.HEX),
    ack_type       = ProtoField.uint8("ciq.ack_type", "Acknowledged", base.DEC, ACK_TYPE_NAMES),
    ack_status     = ProtoField.uint8("ciq.ack_status", "Ack status", base.DEC, ACK_STATUS_NAMES),
    key            = ProtoField.bytes("ciq.key", "XXTEA key"),
    is_response    = ProtoField.uint8("ciq.is_response", "Is response", base.DEC, { [0] = "no", [1] = "yes" }),
    payload        = ProtoField.bytes("ciq.payload", "Payload"),
    payload_length = ProtoField.uint32("ciq.payload_length", "Payload length", base.DEC),
    trailing       = ProtoField.bytes("ciq.trailing", "Trailing bytes"),
}
ciq.fields = {
    F.kind, F.direction, F.role, F.command, F.command_data, F.app_uuid, F.status, F.conn, F.flags,
    F.force_open, F.large_packets, F.version, F.installed, F.open_app_code, F.control,
    F.control_data, F.transfer_flags, F.encrypted, F.transient, F.length, F.seq, F.crc, F.ack_type,
    F.ack_status, F.key, F.is_response, F.payload, F.payload_length, F.trailing,
}

local E = {
    malformed = ProtoExpert.new("ciq.malformed", "Malformed Connect IQ packet",
        expert.group.MALFORMED, expert.severity.ERROR),
    trailing = ProtoExpert.new("ciq.trailing_bytes", "Bytes after the end of the Connect IQ packet",
        expert.group.PROTOCOL, expert.severity.WARN),
    unknown = ProtoExpert.new("ciq.unknown", "Unknown Connect IQ command or control id",
        expert.group.UNDECODED, expert.severity.NOTE),
    unknown_status = ProtoExpert.new("ciq.unknown_status", "Status value with no documented meaning",
        expert.group.PROTOCOL, expert.severity.WARN),
    conn_zero = ProtoExpert.new("ciq.conn_zero", "Connection id 0 is never handed out",
        expert.group.PROTOCOL, expert.severity.WARN),
    empty_data = ProtoExpert.new("ciq.empty_data", "Data packet without payload",
        expert.group.PROTOCOL, expert.severity.WARN),
    not_installed = ProtoExpert.new("ciq.not_installed", "App not installed (version 0xFFFF)",
        expert.group.RESPONSE_CODE, expert.severity.NOTE),
}
ciq.experts = { E.malformed, E.trailing, E.unknown, E.unknown_status, E.conn_zero, E.empty_data,
    E.not_installed }

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

--- "0180e520-5f7e-11e4-9803-0800200c9a66" from 16 bytes in standard (big-endian) order.
local function uuid_text(range)
    local hex = range:bytes():tohex():lower()
    return hex:sub(1, 8) .. "-" .. hex:sub(9, 12) .. "-" .. hex:sub(13, 16) .. "-"
        .. hex:sub(17, 20) .. "-" .. hex:sub(21, 32)
end

--- Whether `bit` (a power of two) is set in `value`. Arithmetic only: Wireshark 4.0 runs Lua 5.2,
--- which has no bitwise operators, and Lua 5.4 (later Wireshark) has no bit32 library.
local function has_bit(value, bit)
    return math.floor(value / bit) % 2 == 1
end

local function name_or_unknown(names, value)
    return names[value] or ("unknown " .. value)
end

--- Layout items: each reads `size` bytes into the tree and records what it read in `ctx`.
local function item_uuid()
    return { what = "app UUID", size = 16, add = function(tree, range, ctx)
        ctx.uuid = uuid_text(range)
        local it = tree:add(F.app_uuid, range)
        if KNOWN_APPS[ctx.uuid] then it:append_text(" (" .. KNOWN_APPS[ctx.uuid] .. ")") end
    end }
end

local function item_conn()
    return { what = "connection id", size = 1, add = function(tree, range, ctx)
        ctx.conn = range:uint()
        tree:add(F.conn, range)
    end }
end

local function item_status(meanings)
    return { what = "status", size = 1, add = function(tree, range, ctx, pinfo)
        ctx.status = range:uint()
        local it = tree:add(F.status, range)
        local meaning = meanings[ctx.status]
        if meaning then
            it:append_text(" (" .. meaning .. ")")
        else
            it:append_text(" (no documented meaning)")
            it:add_proto_expert_info(E.unknown_status,
                "Status " .. ctx.status .. " has no documented meaning for this command")
        end
        ctx.status_text = meaning or ("status " .. ctx.status)
    end }
end

local function item_connect_flags(bit_field, optional)
    return { what = "flags", size = 1, optional = optional, add = function(tree, range, ctx)
        ctx.flags = range:uint()
        local it = tree:add(F.flags, range)
        it:add(bit_field, range)
    end }
end

local function item_version()
    return { what = "version", size = 2, add = function(tree, range, ctx)
        ctx.version = range:le_uint()
        local it = tree:add_le(F.version, range)
        local installed = ctx.version ~= VERSION_NOT_INSTALLED
        if not installed then
            it:append_text(" (not installed)")
            it:add_proto_expert_info(E.not_installed)
        end
        tree:add(F.installed, range, installed):set_generated()
    end }
end

local function item_open_code()
    return { what = "open app result", size = 1, add = function(tree, range, ctx)
        ctx.code = range:uint()
        tree:add(F.open_app_code, range)
    end }
end

local function item_seq()
    return { what = "sequence number", size = 1, add = function(tree, range, ctx)
        ctx.seq = range:uint()
        tree:add(F.seq, range)
    end }
end

--- Walk `items` from `offset`, adding each to `tree` while it fits. Returns three values: the
--- offset after the last item read; the first required item that did not fit (nil when all
--- fit); and the optional item that was absent because the packet ended exactly before it (nil
--- otherwise). An optional item cut in the middle counts as missing, i.e. malformed.
local function walk(tvb, tree, offset, items, ctx, pinfo)
    for _, item in ipairs(items) do
        if offset + item.size > tvb:len() then
            if item.optional and offset == tvb:len() then
                return offset, nil, item
            end
            return offset, item, nil
        end
        item.add(tree, tvb(offset, item.size), ctx, pinfo)
        offset = offset + item.size
    end
    return offset, nil, nil
end

--- Close a packet: flag a layout cut short, or bytes after its end. Returns true when malformed.
local function finish(tvb, tree, offset, missing, needed, what)
    if missing then
        tree:add_proto_expert_info(E.malformed, string.format(
            "%s too short: %d of %d bytes; expected the %s (%d byte%s) at offset %d",
            what, tvb:len(), needed, missing.what, missing.size, missing.size == 1 and "" or "s",
            offset))
        return true
    end
    if offset < tvb:len() then
        local it = tree:add(F.trailing, tvb(offset))
        it:add_proto_expert_info(E.trailing, string.format(
            "%d byte(s) after the end of the %s (%d bytes)", tvb:len() - offset, what, offset))
    end
    return false
end

local function total_size(offset, items)
    for _, item in ipairs(items) do offset = offset + item.size end
    return offset
end

---------------------------------------------------------------------------------------------
-- Commands (byte 0 = 0x00)
---------------------------------------------------------------------------------------------

-- Which side asks: for commands 1, 2, 5 and 6 the phone; for 3 and 4 the watch.
local WATCH_ASKS = { [3] = true, [4] = true }

--- Layout after `00 id` for (command id, is request). nil for unknown ids.
local function command_layout(id, request)
    if id == 1 then
        if request then return { item_uuid(), item_connect_flags(F.force_open, false) } end
        return { item_status(CONNECT_STATUS), item_uuid(), item_conn(),
            item_connect_flags(F.large_packets, true) }
    elseif id == 2 then
        if request then return { item_conn() } end
        return { item_status(DISCONNECT_STATUS), item_conn() }
    elseif id == 3 then
        if request then return { item_uuid(), item_conn() } end
        return { item_status(ANSWER_STATUS), item_conn() }
    elseif id == 4 then
        if request then return { item_conn() } end
        return { item_status(ANSWER_STATUS), item_conn() }
    elseif id == 5 then
        if request then return { item_uuid() } end
        return { item_uuid(), item_version() }
    elseif id == 6 then
        if request then return { item_uuid() } end
        return { item_uuid(), item_open_code() }
    end
    return nil
end

--- The Info text after "CIQ <command> <arrow>".
local function command_summary(id, request, ctx)
    local parts = {}
    local function add(s) if s then parts[#parts + 1] = s end end
    if ctx.uuid then add(ctx.uuid) end
    if not request and ctx.status_text then add(ctx.status_text) end
    if ctx.conn then add("conn " .. ctx.conn) end
    if id == 5 and ctx.version then
        add(ctx.version == VERSION_NOT_INSTALLED and "not installed" or ("version " .. ctx.version))
    end
    if id == 6 and ctx.code then add(name_or_unknown(OPEN_APP_CODES, ctx.code)) end
    if id == 1 and not request and ctx.status == 0 and ctx.flags and has_bit(ctx.flags, CONNECT_FLAG_BIT0) then
        add("large packets")
    end
    return table.concat(parts, " ")
end

local function dissect_command(tvb, pinfo, tree, direction)
    local id = tvb(1, 1):uint()
    tree:add(F.command, tvb(1, 1))
    local request = (direction == PHONE_TO_WATCH) ~= (WATCH_ASKS[id] == true)
    local name = COMMAND_NAMES[id]
    if name == nil then
        local info = "CIQ command " .. id .. " (unknown)"
        if tvb:len() > 2 then tree:add(F.command_data, tvb(2)) end
        tree:add_proto_expert_info(E.unknown, "Command id " .. id .. " is not a known Connect IQ command")
        return info
    end
    tree:add(F.role, tvb(1, 1), request and "request" or "answer"):set_generated()
    local ctx = {}
    local layout = command_layout(id, request)
    local offset, missing, cut = walk(tvb, tree, 2, layout, ctx, pinfo)
    if cut then
        -- A connect answer cut to 20 bytes: no flags byte, which means flags 0.
        tree:add(F.flags, 0):append_text(" (answer cut to 20 bytes: no large packets)"):set_generated()
        ctx.flags = 0
    end
    local label = (request and "request" or "answer")
    local is_malformed = finish(tvb, tree, offset, missing, total_size(2, layout),
        name .. " " .. label)
    local arrow = direction == PHONE_TO_WATCH and "→" or "←"
    local info = "CIQ " .. name .. " " .. arrow
    local summary = command_summary(id, request, ctx)
    if summary ~= "" then info = info .. " " .. summary end
    if is_malformed then info = info .. " [malformed]" end
    return info
end

---------------------------------------------------------------------------------------------
-- Transfer control (byte 0 = 0xF0 | conn)
---------------------------------------------------------------------------------------------

local function control_layout(id)
    if id == 0 then
        return {
            { what = "transfer flags", size = 1, add = function(tree, range, ctx)
                ctx.flags = range:uint()
                local it = tree:add(F.transfer_flags, range)
                it:add(F.encrypted, range)
                it:add(F.transient, range)
            end },
            { what = "length", size = 4, add = function(tree, range, ctx)
                ctx.length = range:le_uint()
                tree:add_le(F.length, range)
            end },
        }
    elseif id == 1 then
        return {
            item_seq(),
            { what = "CRC-16", size = 2, add = function(tree, range, ctx)
                ctx.crc = range:le_uint()
                tree:add_le(F.crc, range)
            end },
        }
    elseif id == 2 then
        return {
            { what = "acknowledged type", size = 1, add = function(tree, range, ctx)
                ctx.ack_type = range:uint()
                tree:add(F.ack_type, range)
            end },
            { what = "ack status", size = 1, add = function(tree, range, ctx)
                ctx.ack_status = range:uint()
                local it = tree:add(F.ack_status, range)
                if ACK_STATUS_NAMES[ctx.ack_status] == nil then
                    it:add_proto_expert_info(E.unknown_status,
                        "Ack status " .. ctx.ack_status .. " has no documented meaning")
                end
            end },
            item_seq(),
        }
    elseif id == 3 then
        return { item_seq() }
    elseif id == 5 then
        return {
            { what = "key", size = 16, add = function(tree, range, ctx)
                tree:add(F.key, range)
            end },
            { what = "isResponse", size = 1, add = function(tree, range, ctx)
                ctx.is_response = range:uint()
                tree:add(F.is_response, range)
            end },
        }
    end
    return nil -- 4 capabilities and 6 key request carry no decoded fields; others are unknown
end

local function control_summary(id, ctx)
    if id == 0 then
        local words = {}
        if ctx.length then words[#words + 1] = ctx.length .. " bytes" end
        if ctx.flags then
            if has_bit(ctx.flags, TRANSFER_ENCRYPTED) then words[#words + 1] = "encrypted" end
            if has_bit(ctx.flags, TRANSFER_TRANSIENT) then words[#words + 1] = "transient" end
            if not has_bit(ctx.flags, TRANSFER_ENCRYPTED) and not has_bit(ctx.flags, TRANSFER_TRANSIENT) then words[#words + 1] = "plain" end
        end
        return table.concat(words, " ")
    elseif id == 1 then
        local words = {}
        if ctx.seq then words[#words + 1] = "seq " .. ctx.seq end
        if ctx.crc then words[#words + 1] = string.format("crc 0x%04x", ctx.crc) end
        return table.concat(words, " ")
    elseif id == 2 then
        local words = {}
        if ctx.ack_type then words[#words + 1] = name_or_unknown(ACK_TYPE_NAMES, ctx.ack_type) end
        if ctx.ack_status then words[#words + 1] = name_or_unknown(ACK_STATUS_NAMES, ctx.ack_status) end
        if ctx.seq then words[#words + 1] = "seq " .. ctx.seq end
        return table.concat(words, " ")
    elseif id == 3 then
        return ctx.seq and ("seq " .. ctx.seq) or ""
    elseif id == 5 then
        if ctx.is_response == 1 then return "(response)" end
        if ctx.is_response == 0 then return "(request)" end
    end
    return ""
end

local function dissect_control(tvb, pinfo, tree, conn)
    local id = tvb(1, 1):uint()
    tree:add(F.control, tvb(1, 1))
    local name = CONTROL_NAMES[id]
    local layout = control_layout(id)
    local ctx = {}
    local offset, missing = 2, nil
    local is_malformed = false
    if layout then
        offset, missing = walk(tvb, tree, 2, layout, ctx, pinfo)
        is_malformed = finish(tvb, tree, offset, missing, total_size(2, layout), name .. " packet")
    elseif tvb:len() > 2 then
        tree:add(F.control_data, tvb(2))
    end
    if name == nil then
        tree:add_proto_expert_info(E.unknown, "Control id " .. id .. " is not a known transfer control packet")
        name = "control " .. id .. " (unknown)"
    end
    local info = "CIQ " .. name
    local summary = control_summary(id, ctx)
    if summary ~= "" then info = info .. " " .. summary end
    info = info .. " conn " .. conn
    if is_malformed then info = info .. " [malformed]" end
    return info
end

---------------------------------------------------------------------------------------------
-- The packet
---------------------------------------------------------------------------------------------

local function dissect_packet(tvb, pinfo, tree, direction)
    pinfo.cols.protocol:set("CIQ")
    local root = tree:add(ciq, tvb())
    root:add(F.direction, direction):set_generated()
    local info
    if tvb:len() == 0 then
        root:add_proto_expert_info(E.malformed,
            "empty packet: 0 of at least 1 byte; expected byte 0 (command, control or data) at offset 0")
        info = "CIQ [malformed: empty packet]"
    else
        local b0 = tvb(0, 1):uint()
        if b0 == 0x00 then
            root:add(F.kind, tvb(0, 1), "command")
            if tvb:len() < 2 then
                root:add_proto_expert_info(E.malformed,
                    "command packet too short: 1 of 2 bytes; expected the command id (1 byte) at offset 1")
                info = "CIQ command [malformed]"
            else
                info = dissect_command(tvb, pinfo, root, direction)
            end
        elseif b0 >= 0xF0 then
            local conn = b0 % 16
            root:add(F.kind, tvb(0, 1), "control")
            local conn_item = root:add(F.conn, tvb(0, 1), conn)
            if conn == 0 then conn_item:add_proto_expert_info(E.conn_zero) end
            if tvb:len() < 2 then
                root:add_proto_expert_info(E.malformed,
                    "control packet too short: 1 of 2 bytes; expected the control id (1 byte) at offset 1")
                info = "CIQ control conn " .. conn .. " [malformed]"
            else
                info = dissect_control(tvb, pinfo, root, conn)
            end
        else
            local seq, conn = math.floor(b0 / 16), b0 % 16
            root:add(F.kind, tvb(0, 1), "data")
            root:add(F.seq, tvb(0, 1), seq)
            local conn_item = root:add(F.conn, tvb(0, 1), conn)
            if conn == 0 then conn_item:add_proto_expert_info(E.conn_zero) end
            local size = tvb:len() - 1
            if size > 0 then
                root:add(F.payload, tvb(1))
            else
                root:add_proto_expert_info(E.empty_data)
            end
            root:add(F.payload_length, size):set_generated()
            info = string.format("CIQ data seq %d conn %d (%d bytes)", seq, conn, size)
        end
    end
    root:append_text(", " .. info:gsub("^CIQ ", ""))
    pinfo.cols.info:set(info)
    return tvb:len()
end

--- A dissector for one characteristic: only the ATT opcodes that carry a Connect IQ packet in
--- `direction` are decoded; anything else (a read, say) is left to the ATT dissector.
local function characteristic_dissector(direction, opcodes)
    return function(tvb, pinfo, tree)
        if not opcodes[current_att_opcode()] then return 0 end
        return dissect_packet(tvb, pinfo, tree, direction)
    end
end

-- Two small protocols hand the values of each characteristic to the shared code with the
-- direction they carry; they add nothing to the tree themselves.
local ciq_write = Proto("ciq_write", "Connect IQ write characteristic (phone → watch)")
ciq_write.dissector = characteristic_dissector(PHONE_TO_WATCH,
    { [ATT_WRITE_REQUEST] = true, [ATT_WRITE_COMMAND] = true })
local ciq_notify = Proto("ciq_notify", "Connect IQ notify characteristic (watch → phone)")
ciq_notify.dissector = characteristic_dissector(WATCH_TO_PHONE,
    { [ATT_HANDLE_VALUE_NOTIFICATION] = true })

local uuid_table = DissectorTable.get("bluetooth.uuid")
for _, uuid in ipairs(WRITE_CHARACTERISTICS) do uuid_table:add(uuid, ciq_write) end
for _, uuid in ipairs(NOTIFY_CHARACTERISTICS) do uuid_table:add(uuid, ciq_notify) end

---------------------------------------------------------------------------------------------
-- Tether API calls on LINKTYPE_USER0
---------------------------------------------------------------------------------------------

local api = Proto("tether.api", "Tether API call")
local A = {
    json   = ProtoField.string("tether.api.json", "JSON"),
    call   = ProtoField.string("tether.api.call", "Call"),
    member = ProtoField.string("tether.api.member", "Member"),
}
api.fields = { A.json, A.call, A.member }
local AE = {
    invalid = ProtoExpert.new("tether.api.invalid_json", "Not a JSON object",
        expert.group.MALFORMED, expert.severity.ERROR),
    invalid_utf8 = ProtoExpert.new("tether.api.invalid_utf8", "Not valid UTF-8",
        expert.group.MALFORMED, expert.severity.ERROR),
    no_call = ProtoExpert.new("tether.api.no_call", "API call record without a string \"call\" member",
        expert.group.PROTOCOL, expert.severity.WARN),
}
api.experts = { AE.invalid, AE.invalid_utf8, AE.no_call }

-- A small total JSON reader: it returns values or raises a table {message=…, offset=…}, which
-- the caller catches; any other error is a bug and is raised again.
local MAX_DEPTH = 64

local function json_fail(message, pos)
    error({ message = message, offset = pos - 1 }, 0)
end

local function skip_space(s, pos)
    local _, last = s:find("^[ \t\r\n]*", pos)
    return last + 1
end

local function utf8_encode(cp)
    if cp < 0x80 then return string.char(cp) end
    local function six(shift) return 0x80 + math.floor(cp / 2 ^ shift) % 64 end
    if cp < 0x800 then return string.char(0xC0 + math.floor(cp / 64), six(0)) end
    if cp < 0x10000 then return string.char(0xE0 + math.floor(cp / 4096), six(6), six(0)) end
    return string.char(0xF0 + math.floor(cp / 262144), six(12), six(6), six(0))
end

local ESCAPES = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

--- Reads a string starting at the opening quote; returns (decoded text, position after it).
local function read_string(s, pos)
    local out = {}
    local i = pos + 1
    while true do
        local c = s:sub(i, i)
        if c == "" then json_fail("unterminated string", pos) end
        if c == '"' then return table.concat(out), i + 1 end
        if c:byte() < 0x20 then json_fail("control character in string", i) end
        if c == "\\" then
            local e = s:sub(i + 1, i + 1)
            if ESCAPES[e] then
                out[#out + 1] = ESCAPES[e]
                i = i + 2
            elseif e == "u" then
                local hex = s:match("^%x%x%x%x", i + 2)
                if not hex then json_fail("expected 4 hex digits after \\u", i) end
                local cp = tonumber(hex, 16)
                i = i + 6
                if cp >= 0xD800 and cp <= 0xDBFF then
                    local low = s:match("^\\u(%x%x%x%x)", i)
                    local lcp = low and tonumber(low, 16)
                    if not lcp or lcp < 0xDC00 or lcp > 0xDFFF then
                        json_fail("unpaired UTF-16 surrogate", i)
                    end
                    cp = 0x10000 + (cp - 0xD800) * 1024 + (lcp - 0xDC00)
                    i = i + 6
                elseif cp >= 0xDC00 and cp <= 0xDFFF then
                    json_fail("unpaired UTF-16 surrogate", i - 6)
                end
                out[#out + 1] = utf8_encode(cp)
            else
                json_fail("invalid escape", i)
            end
        else
            out[#out + 1] = c
            i = i + 1
        end
    end
end

local read_value

local function read_number(s, pos)
    local i = pos
    if s:sub(i, i) == "-" then i = i + 1 end
    local c = s:sub(i, i)
    if c == "0" then
        i = i + 1
    elseif c:match("^[1-9]$") then
        local _, last = s:find("^%d+", i)
        i = last + 1
    else
        json_fail("expected a digit", i)
    end
    if s:sub(i, i) == "." then
        local _, last = s:find("^%d+", i + 1)
        if not last then json_fail("expected a digit after the decimal point", i + 1) end
        i = last + 1
    end
    if s:sub(i, i):match("^[eE]$") then
        local j = i + 1
        if s:sub(j, j):match("^[+-]$") then j = j + 1 end
        local _, last = s:find("^%d+", j)
        if not last then json_fail("expected a digit in the exponent", j) end
        i = last + 1
    end
    return s:sub(pos, i - 1), i
end

--- Reads any value at `pos`; returns (value, position after it). A string decodes to its text;
--- numbers, literals and arrays to their raw JSON text; an object to a list of members
--- {name, value, is_string, raw, first, last} (first/last: 1-based positions of the value).
function read_value(s, pos, depth)
    if depth > MAX_DEPTH then json_fail("nested deeper than " .. MAX_DEPTH .. " levels", pos) end
    pos = skip_space(s, pos)
    local c = s:sub(pos, pos)
    if c == '"' then
        return read_string(s, pos)
    elseif c == "{" then
        local members = {}
        local i = skip_space(s, pos + 1)
        if s:sub(i, i) == "}" then return members, i + 1 end
        while true do
            i = skip_space(s, i)
            if s:sub(i, i) ~= '"' then json_fail("expected a member name", i) end
            local name
            name, i = read_string(s, i)
            i = skip_space(s, i)
            if s:sub(i, i) ~= ":" then json_fail("expected ':'", i) end
            local value_start = skip_space(s, i + 1)
            local value
            value, i = read_value(s, value_start, depth + 1)
            members[#members + 1] = { name = name, value = value,
                is_string = s:sub(value_start, value_start) == '"',
                raw = s:sub(value_start, i - 1), first = value_start, last = i - 1 }
            i = skip_space(s, i)
            local sep = s:sub(i, i)
            if sep == "}" then return members, i + 1 end
            if sep ~= "," then json_fail("expected ',' or '}'", i) end
            i = i + 1
        end
    elseif c == "[" then
        local i = skip_space(s, pos + 1)
        if s:sub(i, i) == "]" then return s:sub(pos, i), i + 1 end
        while true do
            local _
            _, i = read_value(s, i, depth + 1)
            i = skip_space(s, i)
            local sep = s:sub(i, i)
            if sep == "]" then return s:sub(pos, i), i + 1 end
            if sep ~= "," then json_fail("expected ',' or ']'", i) end
            i = i + 1
        end
    elseif s:sub(pos, pos + 3) == "true" then
        return "true", pos + 4
    elseif s:sub(pos, pos + 4) == "false" then
        return "false", pos + 5
    elseif s:sub(pos, pos + 3) == "null" then
        return "null", pos + 4
    elseif c == "-" or c:match("^%d$") then
        return read_number(s, pos)
    end
    json_fail(c == "" and "unexpected end of text" or "unexpected character", pos)
end

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

--- Parses a whole text that must be one JSON object: returns (members, nil) or (nil, error).
local function parse_object(s)
    local ok, result = pcall(function()
        local start = skip_space(s, 1)
        if s:sub(start, start) ~= "{" then json_fail("expected a JSON object ('{')", start) end
        local members, after = read_value(s, start, 1)
        after = skip_space(s, after)
        if after <= #s then json_fail("text after the end of the object", after) end
        return members
    end)
    if ok then return result, nil end
    if type(result) == "table" and result.message then return nil, result end
    error(result, 0)
end

function api.dissector(tvb, pinfo, tree)
    pinfo.cols.protocol:set("Tether API")
    local root = tree:add(api, tvb())
    local text = tvb:raw()
    -- The C side decodes the text (invalid sequences become U+FFFD); Lua's TvbRange:string()
    -- in Wireshark 4.0 cuts such a string to the input's byte length.
    root:add_packet_field(A.json, tvb(), ENC_UTF_8)
    local bad = utf8_error_offset(text)
    if bad then
        root:add_proto_expert_info(AE.invalid_utf8, string.format(
            "Expected UTF-8 JSON text; byte %d (0x%02x) breaks UTF-8", bad, text:byte(bad + 1)))
        pinfo.cols.info:set("Tether API [invalid UTF-8]")
        return tvb:len()
    end
    local members, err = parse_object(text)
    if members == nil then
        root:add_proto_expert_info(AE.invalid, string.format(
            "Expected one JSON object per USER0 frame; %s at byte %d", err.message, err.offset))
        pinfo.cols.info:set("Tether API [malformed JSON]")
        return tvb:len()
    end
    local call
    for _, m in ipairs(members) do
        local range = tvb(m.first - 1, m.last - m.first + 1)
        if m.name == "call" and m.is_string and call == nil then
            call = m.value
            root:add(A.call, range, call)
        end
        local shown = m.is_string and m.value or m.raw
        root:add(A.member, range, m.name .. ": " .. shown)
    end
    if call == nil then
        root:add_proto_expert_info(AE.no_call)
        pinfo.cols.info:set("Tether API (no call)")
    else
        pinfo.cols.info:set("Tether API " .. call)
        root:append_text(", " .. call)
    end
    return tvb:len()
end

DissectorTable.get("wtap_encap"):add(wtap_encaps.USER0, api)
