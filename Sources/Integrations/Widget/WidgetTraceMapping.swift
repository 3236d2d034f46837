import ReplayKit
import BehaviourTrace
import WidgetCore

/// WidgetCore's values in the behaviour trace (core `widget`): its JSON maps one to one onto
/// ``TraceValue``, its events keep the names and fields ``WidgetEvent/traceName`` gives, and the
/// actions that reach the outside (container writes, MQTT) become events of their own, so replay
/// and the live hosts write the same lines.
public enum WidgetTraceMapping {
    /// The trace's core name.
    public static let core: TraceName = "widget"

    /// The names of the events the integration declares (``WidgetIntegration/emittedEvents``), by
    /// text: WidgetCore names its actions and events with `String`s (it knows nothing of traces),
    /// and a look-up in this table, read-only once made, takes no lock where making a name from
    /// the text each time would.
    static let declaredNames: [String: TraceName] = Dictionary(
        WidgetIntegration().emittedEvents.map { ($0.text, $0) }, uniquingKeysWith: { first, _ in first })

    /// The trace name of `action`: ``WidgetAction/traceName`` as a declared name.
    public static func name(of action: WidgetAction) -> TraceName {
        let text = action.traceName
        return declaredNames[text] ?? TraceName(text)
    }

    /// A WidgetCore JSON value as a trace value.
    public static func traceValue(_ json: WidgetJSON) -> TraceValue {
        switch json {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int(let number): .int(number)
        case .double(let number): .double(number)
        case .string(let text): .string(text)
        case .array(let elements): .array(elements.map(traceValue))
        case .object(let members): .object(members.mapValues(traceValue))
        }
    }

    /// A trace value (a script's or record's argument) as WidgetCore JSON.
    public static func json(_ value: TraceValue) -> WidgetJSON {
        switch value {
        case .null: .null
        case .bool(let flag): .bool(flag)
        case .int(let number): .int(number)
        case .double(let number): .double(number)
        case .string(let text): .string(text)
        case .array(let elements): .array(elements.map(json))
        case .object(let members): .object(members.mapValues(json))
        }
    }

    /// The channel of the core's MQTT publishes in `frame_emitted` events and frame matching.
    public static let mqttChannel = "mqtt"
    /// The channel of the core's container writes.
    public static let containerChannel = "container"

    /// What the frame matcher compares for a publish: the QoS byte, the topic, a NUL, the payload.
    public static func publishFrame(topic: String, payload: [UInt8], qos: Int) -> [UInt8] {
        [UInt8(truncatingIfNeeded: qos)] + Array(topic.utf8) + [0] + payload
    }

    /// What the frame matcher compares for a container write: the name, a NUL, the content.
    public static func fileFrame(name: String, bytes: [UInt8]) -> [UInt8] {
        Array(name.utf8) + [0] + bytes
    }

    /// The channel and matcher bytes of an action that leaves the process as a frame (a publish
    /// or a container write), else `nil`.
    public static func frame(of action: WidgetAction) -> (channel: String, bytes: [UInt8])? {
        switch action {
        case let .mqttPublish(topic, payload, qos): (mqttChannel, publishFrame(topic: topic, payload: payload, qos: qos.rawValue))
        case let .writeFile(name, bytes): (containerChannel, fileFrame(name: name, bytes: bytes))
        default: nil
        }
    }

    /// One line for a matcher frame: `PUBLISH topic QoS 1: {…}` or `write settings.json: {…}`.
    public static func describeFrame(_ bytes: [UInt8]) -> String {
        guard let nul = bytes.firstIndex(of: 0) else { return "\(bytes.count) bytes" }
        func text(_ part: ArraySlice<UInt8>) -> String {
            let shown = String(decoding: part.prefix(200), as: UTF8.self)
            return part.count > 200 ? shown + "…" : shown
        }
        // A publish starts with its QoS byte (0–2), which no container name starts with.
        if let first = bytes.first, first <= 2, nul > 0 {
            return "PUBLISH \(text(bytes[1..<nul])) QoS \(first): \(text(bytes[(nul + 1)...]))"
        }
        return "write \(text(bytes[..<nul])): \(text(bytes[(nul + 1)...]))"
    }

    /// The trace events of one action at `timeNs`. Publishes and container writes are
    /// `frame_emitted` events (devices `mqtt` and `container`), as replay's frame matcher writes them.
    public static func events(for action: WidgetAction, timeNs: Int64) -> [TraceEvent] {
        if let (channel, bytes) = frame(of: action) {
            return [FrameMatcher.emittedEvent(core: core, channel: channel, bytes: bytes, packet: describeFrame(bytes), timeNs: timeNs)]
        }
        let fields: [String: TraceValue]
        switch action {
        case .event(let event):
            var eventFields = event.traceFields
            // The deadline is on the core's own clock, which differs between a live host and
            // replay; the event's t_ns says when it fired.
            if case .timeout = event { eventFields["deadline_ns"] = nil }
            fields = eventFields.mapValues(traceValue)
        case .writeFile, .mqttPublish:
            fields = [:]
        case .removeFile(let name):
            fields = ["name": .string(name)]
        case .mqttConnect(let clientID):
            fields = ["client_id": .string(clientID)]
        case .mqttSubscribe(let topics):
            fields = ["topics": .array(topics.map(TraceValue.string))]
        case .mqttDisconnect:
            fields = [:]
        }
        return [TraceEvent(timeNs: timeNs, core: core, event: name(of: action), fields: fields)]
    }

    /// Bytes shown as their text when they are UTF-8 (the channel's files and payloads are JSON),
    /// else as `{"hex": …}`.
    public static func content(_ bytes: [UInt8]) -> TraceValue {
        if let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
        return .object(["hex": .string(JSONLiteral.hex(bytes))])
    }
}
