import MessagingCore
import MonkeyC

/// One call the companion app made to the Connect IQ SDK, as recorded on the `api-calls`
/// interface (one JSON object per frame), written by hand in a manifest, or made by a live host's
/// script. The same value drives the core in replay and live, so both write the same trace.
///
/// The record's keys (docs/capture-set.md): `core` (`messaging`), `call`, and per call:
/// `device_list` {url} · `bind_device` {device, peer} · `bluetooth_state` {ready} · `register_device` {device} ·
/// `unregister_device` {device} · `unregister_all_devices` · `register_app` {app, device,
/// listener?} · `unregister_app` {app, device, listener?} · `app_status` {app, device} ·
/// `send` {app, device, message} · `open_app` {app, device}. `device` and `app` are UUID strings;
/// `peer` a BLE address; `message` a JSON value (see ``MonkeyCJSON``).
public enum MessagingAPICall: Sendable, Hashable {
    /// Garmin Connect Mobile opened the app with a device-selection URL.
    case deviceList(url: String)
    /// Host fact, not an SDK call: the device with this UUID is reached at this BLE address.
    case bindDevice(device: String, peer: String)
    /// Host fact, not an SDK call: the phone's Bluetooth became ready (powered on) or not.
    case bluetoothState(ready: Bool)
    /// `registerForDeviceEvents`.
    case registerDevice(device: String)
    /// `unregisterForDeviceEvents`.
    case unregisterDevice(device: String)
    /// `unregisterForAllDeviceEvents`.
    case unregisterAllDevices
    /// `registerForAppMessages` with a listener id (1 when not given).
    case registerApp(app: String, device: String, listener: Int)
    /// `unregisterForAppMessages`.
    case unregisterApp(app: String, device: String, listener: Int)
    /// `getAppStatus`.
    case appStatus(app: String, device: String)
    /// `sendMessage(message, toApp:, progress:, completion:)`.
    case send(app: String, device: String, message: MonkeyCValue)
    /// Open the app on the watch.
    case openApp(app: String, device: String)

    /// The record's `call` name.
    public var name: String {
        switch self {
        case .deviceList: "device_list"
        case .bindDevice: "bind_device"
        case .bluetoothState: "bluetooth_state"
        case .registerDevice: "register_device"
        case .unregisterDevice: "unregister_device"
        case .unregisterAllDevices: "unregister_all_devices"
        case .registerApp: "register_app"
        case .unregisterApp: "unregister_app"
        case .appStatus: "app_status"
        case .send: "send"
        case .openApp: "open_app"
        }
    }

    /// The record as JSON members (without `core`).
    public var record: [String: TraceValue] {
        var r: [String: TraceValue] = ["call": .string(name)]
        switch self {
        case .deviceList(let url): r["url"] = .string(url)
        case .bindDevice(let device, let peer): r["device"] = .string(device); r["peer"] = .string(peer)
        case .bluetoothState(let ready): r["ready"] = .bool(ready)
        case .registerDevice(let device), .unregisterDevice(let device): r["device"] = .string(device)
        case .unregisterAllDevices: break
        case .registerApp(let app, let device, let listener), .unregisterApp(let app, let device, let listener):
            r["app"] = .string(app); r["device"] = .string(device); r["listener"] = .int(Int64(listener))
        case .appStatus(let app, let device), .openApp(let app, let device):
            r["app"] = .string(app); r["device"] = .string(device)
        case .send(let app, let device, let message):
            r["app"] = .string(app); r["device"] = .string(device); r["message"] = MonkeyCJSON.traceValue(message)
        }
        return r
    }

    /// The record as one line of JSON, as the `api-calls` interface stores it.
    public var recordJSON: String {
        var r = record
        r["core"] = .string("messaging")
        return JSONLiteral.text(.object(r))
    }

    /// Reads a record's members. `device` may be left out when `defaultDevice` is given (a manifest
    /// or script naming one device).
    public init(record: [String: TraceValue], defaultDevice: String? = nil) throws(MessagingAPICallError) {
        guard case .string(let call)? = record["call"] else { throw .missing("call", call: nil) }
        func string(_ key: String) throws(MessagingAPICallError) -> String {
            guard let value = record[key] else { throw .missing(key, call: call) }
            guard case .string(let s) = value else { throw .wrongType(key, call: call, expected: "a string") }
            return s
        }
        func device() throws(MessagingAPICallError) -> String {
            if record["device"] == nil, let defaultDevice { return defaultDevice }
            return try string("device")
        }
        func listener() throws(MessagingAPICallError) -> Int {
            guard let value = record["listener"] else { return 1 }
            guard case .int(let i) = value, i >= 0, i <= Int64(Int32.max) else {
                throw .wrongType("listener", call: call, expected: "a whole number from 0 to 2147483647")
            }
            return Int(i)
        }
        switch call {
        case "device_list": self = .deviceList(url: try string("url"))
        case "bind_device": self = .bindDevice(device: try string("device"), peer: try string("peer"))
        case "bluetooth_state":
            guard case .bool(let ready)? = record["ready"] else { throw .wrongType("ready", call: call, expected: "true or false") }
            self = .bluetoothState(ready: ready)
        case "register_device": self = .registerDevice(device: try device())
        case "unregister_device": self = .unregisterDevice(device: try device())
        case "unregister_all_devices": self = .unregisterAllDevices
        case "register_app": self = .registerApp(app: try string("app"), device: try device(), listener: try listener())
        case "unregister_app": self = .unregisterApp(app: try string("app"), device: try device(), listener: try listener())
        case "app_status": self = .appStatus(app: try string("app"), device: try device())
        case "open_app": self = .openApp(app: try string("app"), device: try device())
        case "send":
            guard let message = record["message"] else { throw .missing("message", call: call) }
            let value: MonkeyCValue
            do throws(MonkeyCJSONError) {
                value = try MonkeyCJSON.monkeyCValue(message)
            } catch {
                throw .wrongType("message", call: call, expected: error.description)
            }
            self = .send(app: try string("app"), device: try device(), message: value)
        default:
            throw .unknownCall(call)
        }
    }
}

/// Why an API-call record could not be read.
public enum MessagingAPICallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A required key is absent.
    case missing(String, call: String?)
    /// A key has the wrong kind of value.
    case wrongType(String, call: String, expected: String)
    /// `call` names no call Tether knows.
    case unknownCall(String)
    /// The frame is not one JSON object.
    case notJSON(String)

    /// One sentence saying what is wrong and what is accepted.
    public var description: String {
        switch self {
        case .missing(let key, let call):
            "API call record\(call.map { " '\($0)'" } ?? ""): the key '\(key)' is missing"
        case .wrongType(let key, let call, let expected):
            "API call record '\(call)': '\(key)' must be \(expected)"
        case .unknownCall(let call):
            "API call record: unknown call '\(call)'; known: device_list, bind_device, bluetooth_state, register_device, unregister_device, "
                + "unregister_all_devices, register_app, unregister_app, app_status, send, open_app"
        case .notJSON(let detail):
            "API call record: expected one JSON object, \(detail)"
        }
    }
}

/// Why a JSON value is not a Monkey C value.
public struct MonkeyCJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var description: String
}

/// Monkey C values as JSON, in traces and API-call records.
///
/// A JSON integer is an `int32` when it fits, else an `int64`; a non-integer number a `double`;
/// strings, booleans, null, arrays as themselves; an object with string keys a dictionary (keys in
/// sorted order). What JSON cannot say directly is an object with one `$` key: `{"$float32": 1.5}`,
/// `{"$int64": 3}`, `{"$char": 65}`, `{"$bytes": "00ff"}` (hex), and a dictionary whose keys are not
/// all strings `{"$pairs": [[key, value], …]}`.
public enum MonkeyCJSON {
    /// The JSON form of a Monkey C value.
    public static func traceValue(_ value: MonkeyCValue) -> TraceValue {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int32(let i): return .int(Int64(i))
        case .int64(let i): return Int32(exactly: i) != nil ? .object(["$int64": .int(i)]) : .int(i)
        case .float32(let f): return .object(["$float32": .double(Double(f))])
        case .double(let d): return .double(d)
        case .char(let c): return .object(["$char": .int(Int64(c))])
        case .string(let s): return .string(s)
        case .byteArray(let bytes): return .object(["$bytes": .string(JSONLiteral.hex(bytes))])
        case .array(let items): return .array(items.map(traceValue))
        case .dictionary(let pairs):
            var object: [String: TraceValue] = [:]
            for pair in pairs {
                guard case .string(let key) = pair.key, object[key] == nil, !key.hasPrefix("$") else {
                    return .object(["$pairs": .array(pairs.map { .array([traceValue($0.key), traceValue($0.value)]) })])
                }
                object[key] = traceValue(pair.value)
            }
            return .object(object)
        }
    }

    /// The Monkey C value a JSON value stands for.
    public static func monkeyCValue(_ value: TraceValue, depth: Int = 0) throws(MonkeyCJSONError) -> MonkeyCValue {
        guard depth < 64 else { throw MonkeyCJSONError(description: "nested more than 64 levels deep") }
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return Int32(exactly: i).map { .int32($0) } ?? .int64(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let items):
            var out: [MonkeyCValue] = []
            for item in items { out.append(try monkeyCValue(item, depth: depth + 1)) }
            return .array(out)
        case .object(let object):
            if object.count == 1, let (key, inner) = object.first, key.hasPrefix("$") {
                switch (key, inner) {
                case ("$float32", .double(let d)): return .float32(Float(d))
                case ("$float32", .int(let i)): return .float32(Float(i))
                case ("$int64", .int(let i)): return .int64(i)
                case ("$char", .int(let c)) where c >= 0 && c <= Int64(UInt32.max): return .char(UInt32(c))
                case ("$bytes", .string(let hex)):
                    guard let bytes = decodeHex(hex) else { throw MonkeyCJSONError(description: "\"$bytes\" must be hex digits in pairs") }
                    return .byteArray(bytes)
                case ("$pairs", .array(let pairs)):
                    var out: [MonkeyCPair] = []
                    for pair in pairs {
                        guard case .array(let kv) = pair, kv.count == 2 else {
                            throw MonkeyCJSONError(description: "\"$pairs\" must hold [key, value] lists")
                        }
                        out.append(MonkeyCPair(try monkeyCValue(kv[0], depth: depth + 1), try monkeyCValue(kv[1], depth: depth + 1)))
                    }
                    return .dictionary(out)
                default:
                    throw MonkeyCJSONError(description: "unknown or ill-typed special form {\"\(key)\": …}; known: $float32 (number), $int64 (integer), $char (integer), $bytes (hex), $pairs (list of [key, value])")
                }
            }
            var out: [MonkeyCPair] = []
            for key in object.keys.sorted() {
                out.append(MonkeyCPair(.string(key), try monkeyCValue(object[key]!, depth: depth + 1)))
            }
            return .dictionary(out)
        }
    }

    /// Bytes from hex digits in pairs (either case); `nil` for anything else.
    public static func decodeHex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = nibble(digits[i]), let lo = nibble(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
