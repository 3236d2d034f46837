import MonkeyCTrace
import ReplayKit
import BehaviourTrace
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

    /// Every record's `call` name, as ``name`` gives them and ``init(record:defaultDevice:)`` reads them.
    public static var callNames: Set<String> { MessagingSectionSchema.callNames }

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

    /// The record as a live host writes it: with `link_inputs`, the link inputs its core had been
    /// given before this call (docs/capture-set.md, ``FeedOrderQueue``).
    public func recordJSON(linkInputs: Int) -> String {
        var r = record
        r["core"] = .string("messaging")
        r[FeedOrderPrescan.recordKey] = .int(Int64(linkInputs))
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

