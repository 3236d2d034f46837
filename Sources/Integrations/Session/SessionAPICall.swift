import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import MonkeyC
import SessionCore

/// One thing the app or its host did to a ``SessionCore``, as recorded on the `api-calls`
/// interface (one JSON object per frame, `"core": "session"`), or made by a live host's script. The
/// same value drives the core in replay and live, so both write the same trace.
///
/// Records (docs/capture-set.md): `start` {role, identity, seed, restored} — the host process
/// started, with a new core or one restored from its last stored snapshot · `set_paired` {peer}
/// (UUID or null) · `set_app_state` {installed, complication, foreground} (watch) · `activate` ·
/// `update_context` {context} · `send_message` {message, expects_reply} · `send_message_data`
/// {data (hex), expects_reply} · `reply` {id, reply} · `reply_data` {id, data} ·
/// `transfer_user_info` {user_info} · `transfer_complication` {user_info} · `cancel_user_info` {id} ·
/// `transfer_file` {content, metadata?} · `cancel_file` {id}. Dictionaries are JSON values
/// (``MonkeyCJSON``).
public enum SessionAPICall: Sendable, Hashable {
    /// Host fact: the process started. `restored`: from the last snapshot it stored.
    case start(role: SessionRole, identity: SessionDeviceID, seed: UInt64, restored: Bool)
    /// Host fact: the paired counterpart (the phone's active watch, the watch's phone).
    case setPaired(SessionDeviceID?)
    /// Host fact (watch): the app's state.
    case setAppState(WatchAppState)
    /// `activate()`.
    case activate
    /// `updateApplicationContext(_:)`.
    case updateContext(MonkeyCValue)
    /// `sendMessage(_:replyHandler:errorHandler:)`; `expectsReply` when a reply handler is given.
    case sendMessage(MonkeyCValue, expectsReply: Bool)
    /// `sendMessageData(_:replyHandler:errorHandler:)`.
    case sendMessageData([UInt8], expectsReply: Bool)
    /// The app's reply handler call for a received message.
    case reply(SessionMessageID, MonkeyCValue)
    /// The app's reply handler call for received message data.
    case replyData(SessionMessageID, [UInt8])
    /// `transferUserInfo(_:)`.
    case transferUserInfo(MonkeyCValue)
    /// `transferCurrentComplicationUserInfo(_:)`.
    case transferComplication(MonkeyCValue)
    /// `WCSessionUserInfoTransfer.cancel()`.
    case cancelUserInfo(UserInfoTransferID)
    /// `transferFile(_:metadata:)`.
    case transferFile(SessionFileContent, metadata: MonkeyCValue?)
    /// `WCSessionFileTransfer.cancel()`.
    case cancelFile(FileTransferID)

    /// The record's `call` name.
    public var name: String {
        switch self {
        case .start: "start"
        case .setPaired: "set_paired"
        case .setAppState: "set_app_state"
        case .activate: "activate"
        case .updateContext: "update_context"
        case .sendMessage: "send_message"
        case .sendMessageData: "send_message_data"
        case .reply: "reply"
        case .replyData: "reply_data"
        case .transferUserInfo: "transfer_user_info"
        case .transferComplication: "transfer_complication"
        case .cancelUserInfo: "cancel_user_info"
        case .transferFile: "transfer_file"
        case .cancelFile: "cancel_file"
        }
    }

    /// The names ``init(record:)`` accepts.
    public static let names: [String] = [
        "start", "set_paired", "set_app_state", "activate", "update_context", "send_message", "send_message_data",
        "reply", "reply_data", "transfer_user_info", "transfer_complication", "cancel_user_info", "transfer_file", "cancel_file",
    ]

    /// The record as JSON members (without `core`).
    public var record: [String: TraceValue] {
        var r: [String: TraceValue] = ["call": .string(name)]
        switch self {
        case let .start(role, identity, seed, restored):
            r["role"] = .string(role.rawValue)
            r["identity"] = .string(identity.description)
            r["seed"] = .string(String(seed, radix: 16))
            r["restored"] = .bool(restored)
        case .setPaired(let peer):
            r["peer"] = peer.map { .string($0.description) } ?? .null
        case .setAppState(let state):
            r["installed"] = .bool(state.installed)
            r["complication"] = .bool(state.complicationEnabled)
            r["foreground"] = .bool(state.foreground)
        case .activate:
            break
        case .updateContext(let value):
            r["context"] = MonkeyCJSON.traceValue(value)
        case let .sendMessage(value, expectsReply):
            r["message"] = MonkeyCJSON.traceValue(value)
            r["expects_reply"] = .bool(expectsReply)
        case let .sendMessageData(bytes, expectsReply):
            r["data"] = .string(JSONLiteral.hex(bytes))
            r["expects_reply"] = .bool(expectsReply)
        case let .reply(id, value):
            r["id"] = .int(Int64(id.rawValue))
            r["reply"] = MonkeyCJSON.traceValue(value)
        case let .replyData(id, bytes):
            r["id"] = .int(Int64(id.rawValue))
            r["data"] = .string(JSONLiteral.hex(bytes))
        case .transferUserInfo(let value), .transferComplication(let value):
            r["user_info"] = MonkeyCJSON.traceValue(value)
        case .cancelUserInfo(let id):
            r["id"] = .int(Int64(id.rawValue))
        case let .transferFile(content, metadata):
            r["content"] = content.record
            if let metadata { r["metadata"] = MonkeyCJSON.traceValue(metadata) }
        case .cancelFile(let id):
            r["id"] = .int(Int64(id.rawValue))
        }
        return r
    }

    /// The record as one line of JSON, as the `api-calls` interface stores it.
    public var recordJSON: String {
        var r = record
        r["core"] = .string("session")
        return JSONLiteral.text(.object(r))
    }

    /// The record as a live host writes it: with `link_inputs`, the link inputs its core had been
    /// given before this call (docs/capture-set.md, ``FeedOrderQueue``).
    public func recordJSON(linkInputs: Int) -> String {
        var r = record
        r["core"] = .string("session")
        r[FeedOrderPrescan.recordKey] = .int(Int64(linkInputs))
        return JSONLiteral.text(.object(r))
    }

    /// Reads a record's members (`core` is ignored).
    public init(record: [String: TraceValue]) throws(SessionAPICallError) {
        guard case .string(let call)? = record["call"] else { throw .missing("call", call: nil) }
        func value(_ key: String) throws(SessionAPICallError) -> TraceValue {
            guard let value = record[key] else { throw .missing(key, call: call) }
            return value
        }
        func string(_ key: String) throws(SessionAPICallError) -> String {
            guard case .string(let s) = try value(key) else { throw .wrongType(key, call: call, expected: "a string") }
            return s
        }
        func bool(_ key: String, default fallback: Bool? = nil) throws(SessionAPICallError) -> Bool {
            if record[key] == nil, let fallback { return fallback }
            guard case .bool(let b) = try value(key) else { throw .wrongType(key, call: call, expected: "true or false") }
            return b
        }
        func identity(_ key: String) throws(SessionAPICallError) -> SessionDeviceID {
            guard let id = SessionDeviceID(try string(key)) else { throw .wrongType(key, call: call, expected: "a UUID such as 0ff1ce00-0000-4000-8000-0000000000a1") }
            return id
        }
        func id(_ key: String = "id") throws(SessionAPICallError) -> UInt32 {
            guard case .int(let i) = try value(key), let id = UInt32(exactly: i), id > 0 else {
                throw .wrongType(key, call: call, expected: "a whole number from 1 to 4294967295")
            }
            return id
        }
        func dictionary(_ key: String) throws(SessionAPICallError) -> MonkeyCValue {
            let json = try value(key)
            do throws(MonkeyCJSONError) {
                return try MonkeyCJSON.monkeyCValue(json)
            } catch {
                throw .wrongType(key, call: call, expected: error.description)
            }
        }
        func hex(_ key: String) throws(SessionAPICallError) -> [UInt8] {
            guard let bytes = MonkeyCJSON.decodeHex(try string(key)) else { throw .wrongType(key, call: call, expected: "hex digits in pairs") }
            return bytes
        }
        switch call {
        case "start":
            guard let role = SessionRole(rawValue: try string("role")) else { throw .wrongType("role", call: call, expected: "phone or watch") }
            guard let seed = UInt64(try string("seed"), radix: 16) else { throw .wrongType("seed", call: call, expected: "up to 16 hex digits") }
            self = .start(role: role, identity: try identity("identity"), seed: seed, restored: try bool("restored", default: false))
        case "set_paired":
            if record["peer"] == nil || record["peer"] == .null { self = .setPaired(nil) } else { self = .setPaired(try identity("peer")) }
        case "set_app_state":
            self = .setAppState(WatchAppState(
                installed: try bool("installed", default: true), complicationEnabled: try bool("complication", default: false),
                foreground: try bool("foreground", default: true)))
        case "activate": self = .activate
        case "update_context": self = .updateContext(try dictionary("context"))
        case "send_message": self = .sendMessage(try dictionary("message"), expectsReply: try bool("expects_reply", default: true))
        case "send_message_data": self = .sendMessageData(try hex("data"), expectsReply: try bool("expects_reply", default: true))
        case "reply": self = .reply(SessionMessageID(rawValue: try id()), try dictionary("reply"))
        case "reply_data": self = .replyData(SessionMessageID(rawValue: try id()), try hex("data"))
        case "transfer_user_info": self = .transferUserInfo(try dictionary("user_info"))
        case "transfer_complication": self = .transferComplication(try dictionary("user_info"))
        case "cancel_user_info": self = .cancelUserInfo(UserInfoTransferID(rawValue: try id()))
        case "transfer_file":
            let content = try SessionFileContent(record: try value("content"), call: call)
            // Spelled out: MonkeyCValue is nil-literal expressible, so `cond ? nil : value` would make `.null`.
            var metadata: MonkeyCValue? = .none
            if record["metadata"] != nil { metadata = try dictionary("metadata") }
            self = .transferFile(content, metadata: metadata)
        case "cancel_file": self = .cancelFile(FileTransferID(rawValue: try id()))
        default:
            throw .unknownCall(call)
        }
    }
}

/// The bytes of a file a script or record transfers, said in a few words rather than copied into
/// every record: `{"size": N}` (a fixed pattern of N bytes), `{"text": "…"}` (UTF-8) or
/// `{"hex": "…"}`.
public enum SessionFileContent: Sendable, Hashable {
    /// `size` bytes, byte `i` = `(i × 31 + 7) mod 256`.
    case pattern(size: Int)
    /// The UTF-8 bytes of a text.
    case text(String)
    /// These bytes.
    case bytes([UInt8])

    /// Largest pattern a record may ask for (the link's file limit).
    public static let maximumPatternSize = 4_294_967_294

    /// The file's bytes.
    public var bytes: [UInt8] {
        switch self {
        case .pattern(let size):
            return (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        case .text(let text):
            return Array(text.utf8)
        case .bytes(let bytes):
            return bytes
        }
    }

    /// The record form.
    public var record: TraceValue {
        switch self {
        case .pattern(let size): .object(["size": .int(Int64(size))])
        case .text(let text): .object(["text": .string(text)])
        case .bytes(let bytes): .object(["hex": .string(JSONLiteral.hex(bytes))])
        }
    }

    /// Reads the record form.
    public init(record: TraceValue, call: String) throws(SessionAPICallError) {
        guard case .object(let object) = record, object.count == 1, let (key, value) = object.first else {
            throw .wrongType("content", call: call, expected: "one of {size: N}, {text: \"…\"}, {hex: \"…\"}")
        }
        switch (key, value) {
        case ("size", .int(let n)) where n >= 0 && n <= Int64(Self.maximumPatternSize):
            self = .pattern(size: Int(n))
        case ("text", .string(let text)):
            self = .text(text)
        case ("hex", .string(let hex)):
            guard let bytes = MonkeyCJSON.decodeHex(hex) else { throw .wrongType("content.hex", call: call, expected: "hex digits in pairs") }
            self = .bytes(bytes)
        default:
            throw .wrongType("content", call: call, expected: "one of {size: 0…4294967294}, {text: \"…\"}, {hex: \"…\"}")
        }
    }
}

/// A session API-call record that cannot be used.
public enum SessionAPICallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A required key is absent.
    case missing(String, call: String?)
    /// A key has the wrong type or value.
    case wrongType(String, call: String, expected: String)
    /// The call is not one of ``SessionAPICall/names``.
    case unknownCall(String)

    /// One sentence.
    public var description: String {
        switch self {
        case let .missing(key, call?): "\(call) needs '\(key)'"
        case let .missing(key, nil): "the record has no '\(key)'"
        case let .wrongType(key, call, expected): "\(call).\(key) must be \(expected)"
        case .unknownCall(let call): "unknown session call '\(call)'; known: \(SessionAPICall.names.joined(separator: ", "))"
        }
    }
}
