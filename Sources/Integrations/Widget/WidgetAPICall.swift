import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import MonkeyC
import WidgetCore

/// Why an API-call record or script step does not name a widget call Tether can make.
public struct WidgetAPICallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, as a sentence.
    public var description: String
    init(_ description: String) { self.description = description }
}

/// One thing the app or its host did to a ``WidgetCore``, as recorded on the `api-calls` interface
/// (`"core": "widget"`) or made by a live host's script; the same value drives the core in replay
/// and live.
///
/// Records (docs/capture-set.md): `start` {role, account, seed (hex), container: {name: hex}} — the
/// process started with these files in the App Group · `update_settings` {settings} ·
/// `set_has_content` {value} · `did_open_url` {id, opened} · `open_host_app` {url} · `refresh`
/// {budget_ms} · `start_connection` · `stop_connection` · `list_devices` · `update_devices`
/// {iot_ids} · `query_properties` {iot_id, product_key} · `set_properties` {iot_id, items} ·
/// `list_scenes` · `query_scenes` {page_no, page_size} · `update_scenes` {scene_ids} · `fire_scene`
/// {scene_id} · `container_changed` {name, content (hex, or null when removed)} — a host fact: what
/// the process read after inotify said the other process changed a file.
public enum WidgetAPICall: Sendable, Hashable {
    /// Host fact: the process started, the container holding `container`.
    case start(role: WidgetRole, account: String, seed: UInt64, container: [String: [UInt8]])
    /// Host app: write new settings.
    case updateSettings(WidgetJSON)
    /// Host app: `setHasContent`.
    case setHasContent(Bool)
    /// Host app: answer to an open-URL request.
    case didOpenURL(WidgetOpenURLID, opened: Bool)
    /// Widget: `extensionContext.openURL`.
    case openHostApp(String)
    /// System → widget: `widgetPerformUpdate` with a time budget.
    case refresh(budget: Duration)
    /// Open the long-lived connection.
    case startConnection
    /// Close it.
    case stopConnection
    /// `/iotx/ilop/queryComponentProduct`.
    case listDevices
    /// `/iotx/ilop/updateComponentProduct`.
    case updateDevices([String])
    /// `/iotx/ilop/queryComponentProperty`.
    case queryProperties(iotId: String, productKey: String)
    /// `/thing/properties/set`.
    case setProperties(iotId: String, items: [String: WidgetJSON])
    /// `/living/appwidget/list`.
    case listScenes
    /// `/living/scene/query`.
    case queryScenes(pageNo: Int, pageSize: Int)
    /// `/living/appwidget/create`.
    case updateScenes([String])
    /// `/scene/fire`.
    case fireScene(String)
    /// Host fact: the process read a container file the other process changed (`nil`: removed),
    /// as inotify told it. Recorded because inotify cannot keep the content: a file the other
    /// process deletes at once is gone before a recorder reads it.
    case containerChanged(name: String, bytes: [UInt8]?)
    /// Host fact: opening the MQTT connection failed before any CONNECT was sent (refused, no
    /// route). On the wire that is a SYN answered by an RST with no client id, so nothing in the
    /// capture says whose attempt it was.
    case mqttConnectFailed(String)

    /// The record's `call` name.
    public var name: String {
        switch self {
        case .start: "start"
        case .updateSettings: "update_settings"
        case .setHasContent: "set_has_content"
        case .didOpenURL: "did_open_url"
        case .openHostApp: "open_host_app"
        case .refresh: "refresh"
        case .startConnection: "start_connection"
        case .stopConnection: "stop_connection"
        case .listDevices: "list_devices"
        case .updateDevices: "update_devices"
        case .queryProperties: "query_properties"
        case .setProperties: "set_properties"
        case .listScenes: "list_scenes"
        case .queryScenes: "query_scenes"
        case .updateScenes: "update_scenes"
        case .fireScene: "fire_scene"
        case .containerChanged: "container_changed"
        case .mqttConnectFailed: "mqtt_connect_failed"
        }
    }

    /// The names ``init(record:)`` accepts.
    public static let names: [String] = [
        "start", "update_settings", "set_has_content", "did_open_url", "open_host_app", "refresh", "start_connection",
        "stop_connection", "list_devices", "update_devices", "query_properties", "set_properties", "list_scenes",
        "query_scenes", "update_scenes", "fire_scene", "container_changed", "mqtt_connect_failed",
    ]

    /// The record as JSON members (without `core`).
    public var record: [String: TraceValue] {
        var r: [String: TraceValue] = ["call": .string(name)]
        switch self {
        case let .start(role, account, seed, container):
            r["role"] = .string(role.rawValue)
            r["account"] = .string(account)
            r["seed"] = .string(String(seed, radix: 16))
            r["container"] = .object(container.mapValues { .string(JSONLiteral.hex($0)) })
        case .updateSettings(let settings):
            r["settings"] = WidgetTraceMapping.traceValue(settings)
        case .setHasContent(let value):
            r["value"] = .bool(value)
        case let .didOpenURL(id, opened):
            r["id"] = .string(id.rawValue)
            r["opened"] = .bool(opened)
        case .openHostApp(let url):
            r["url"] = .string(url)
        case .refresh(let budget):
            r["budget_ms"] = .int(budget.replayNanoseconds / 1_000_000)
        case .startConnection, .stopConnection, .listDevices, .listScenes:
            break
        case .updateDevices(let ids):
            r["iot_ids"] = .array(ids.map(TraceValue.string))
        case let .queryProperties(iotId, productKey):
            r["iot_id"] = .string(iotId)
            r["product_key"] = .string(productKey)
        case let .setProperties(iotId, items):
            r["iot_id"] = .string(iotId)
            r["items"] = .object(items.mapValues(WidgetTraceMapping.traceValue))
        case let .queryScenes(pageNo, pageSize):
            r["page_no"] = .int(Int64(pageNo))
            r["page_size"] = .int(Int64(pageSize))
        case .updateScenes(let ids):
            r["scene_ids"] = .array(ids.map(TraceValue.string))
        case .fireScene(let id):
            r["scene_id"] = .string(id)
        case let .containerChanged(name, bytes):
            r["name"] = .string(name)
            r["content"] = bytes.map { .string(JSONLiteral.hex($0)) } ?? .null
        case .mqttConnectFailed(let detail):
            r["detail"] = .string(detail)
        }
        return r
    }

    /// The record as one line of JSON, as the `api-calls` interface stores it.
    public var recordJSON: String {
        var r = record
        r["core"] = .string(WidgetTraceMapping.core.text)
        return JSONLiteral.text(.object(r))
    }

    /// The record as a live host writes it: with `link_inputs`, the link inputs its core had been
    /// given before this call (docs/capture-set.md, ``FeedOrderQueue``).
    public func recordJSON(linkInputs: Int) -> String {
        var r = record
        r["core"] = .string(WidgetTraceMapping.core.text)
        r[FeedOrderPrescan.recordKey] = .int(Int64(linkInputs))
        return JSONLiteral.text(.object(r))
    }

    /// Reads a record's members (`core` is ignored).
    public init(record: [String: TraceValue]) throws(WidgetAPICallError) {
        guard case .string(let call)? = record["call"] else { throw WidgetAPICallError("the record has no \"call\" string") }
        func string(_ key: String) throws(WidgetAPICallError) -> String {
            guard case .string(let text)? = record[key] else { throw WidgetAPICallError("\(call): \"\(key)\" must be a string") }
            return text
        }
        func strings(_ key: String) throws(WidgetAPICallError) -> [String] {
            guard case .array(let elements)? = record[key] else { throw WidgetAPICallError("\(call): \"\(key)\" must be a list of strings") }
            var texts: [String] = []
            for element in elements {
                guard case .string(let text) = element else { throw WidgetAPICallError("\(call): \"\(key)\" must be a list of strings") }
                texts.append(text)
            }
            return texts
        }
        func int(_ key: String, default fallback: Int? = nil) throws(WidgetAPICallError) -> Int {
            if record[key] == nil, let fallback { return fallback }
            guard case .int(let number)? = record[key], let value = Int(exactly: number) else {
                throw WidgetAPICallError("\(call): \"\(key)\" must be a whole number")
            }
            return value
        }
        func bool(_ key: String) throws(WidgetAPICallError) -> Bool {
            guard case .bool(let flag)? = record[key] else { throw WidgetAPICallError("\(call): \"\(key)\" must be true or false") }
            return flag
        }
        switch call {
        case "start":
            guard let role = WidgetRole(rawValue: try string("role")) else { throw WidgetAPICallError("start: \"role\" must be host or widget") }
            guard let seed = UInt64(try string("seed"), radix: 16) else { throw WidgetAPICallError("start: \"seed\" must be hexadecimal") }
            var container: [String: [UInt8]] = [:]
            if case .object(let files)? = record["container"] {
                for (name, value) in files {
                    guard case .string(let hex) = value, let bytes = MonkeyCJSON.decodeHex(hex) else {
                        throw WidgetAPICallError("start: container file \(name) must be given in hex")
                    }
                    container[name] = bytes
                }
            }
            self = .start(role: role, account: try string("account"), seed: seed, container: container)
        case "update_settings":
            guard let settings = record["settings"] else { throw WidgetAPICallError("update_settings needs \"settings\"") }
            self = .updateSettings(WidgetTraceMapping.json(settings))
        case "set_has_content":
            self = .setHasContent(try bool("value"))
        case "did_open_url":
            self = .didOpenURL(WidgetOpenURLID(rawValue: try string("id")), opened: try bool("opened"))
        case "open_host_app":
            self = .openHostApp(try string("url"))
        case "refresh":
            let milliseconds = try int("budget_ms")
            guard milliseconds > 0 else { throw WidgetAPICallError("refresh: \"budget_ms\" must be positive") }
            self = .refresh(budget: .milliseconds(milliseconds))
        case "start_connection": self = .startConnection
        case "stop_connection": self = .stopConnection
        case "list_devices": self = .listDevices
        case "update_devices": self = .updateDevices(try strings("iot_ids"))
        case "query_properties": self = .queryProperties(iotId: try string("iot_id"), productKey: try string("product_key"))
        case "set_properties":
            guard case .object(let items)? = record["items"] else { throw WidgetAPICallError("set_properties: \"items\" must be a mapping") }
            self = .setProperties(iotId: try string("iot_id"), items: items.mapValues(WidgetTraceMapping.json))
        case "list_scenes": self = .listScenes
        case "query_scenes": self = .queryScenes(pageNo: try int("page_no", default: 1), pageSize: try int("page_size", default: 20))
        case "update_scenes": self = .updateScenes(try strings("scene_ids"))
        case "fire_scene": self = .fireScene(try string("scene_id"))
        case "container_changed":
            var bytes: [UInt8]?
            if case .string(let hex)? = record["content"] {
                guard let decoded = MonkeyCJSON.decodeHex(hex) else { throw WidgetAPICallError("container_changed: \"content\" must be hex") }
                bytes = decoded
            }
            self = .containerChanged(name: try string("name"), bytes: bytes)
        case "mqtt_connect_failed":
            self = .mqttConnectFailed(try string("detail"))
        default:
            throw WidgetAPICallError("unknown widget call \"\(call)\"; known: \(Self.names.joined(separator: ", "))")
        }
    }
}
