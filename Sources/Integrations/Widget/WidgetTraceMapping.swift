import ReplayKit
import BehaviourTrace
import WidgetCore

/// WidgetCore's values in the behaviour trace (core `widget`): its JSON maps one to one onto
/// ``TraceValue``, its events are named by ``Names`` and hold the core's own values as their fields
/// (``WidgetEventFields``), and the actions that reach the outside (container writes, MQTT) become
/// events of their own, so replay and the live hosts write the same lines.
public enum WidgetTraceMapping {
    /// The trace's core name.
    public static let core: TraceName = "widget"

    /// The core's events in the trace, declared once: WidgetCore knows nothing of traces, so its
    /// events and the host's actions are named here, and an event is named by one of these rather
    /// than by a literal interned each time it is written.
    public enum Names {
        /// `settings_changed`.
        public static let settingsChanged: TraceName = "settings_changed"
        /// `settings_unchanged`.
        public static let settingsUnchanged: TraceName = "settings_unchanged"
        /// `has_content_changed`.
        public static let hasContentChanged: TraceName = "has_content_changed"
        /// `stale_file_ignored`.
        public static let staleFileIgnored: TraceName = "stale_file_ignored"
        /// `open_url_requested`.
        public static let openURLRequested: TraceName = "open_url_requested"
        /// `open_url_completed`.
        public static let openURLCompleted: TraceName = "open_url_completed"
        /// `open_url_result_discarded`.
        public static let openURLResultDiscarded: TraceName = "open_url_result_discarded"
        /// `refresh_started`.
        public static let refreshStarted: TraceName = "refresh_started"
        /// `refresh_completed`.
        public static let refreshCompleted: TraceName = "refresh_completed"
        /// `connection_state_changed`.
        public static let connectionStateChanged: TraceName = "connection_state_changed"
        /// `request_issued`.
        public static let requestIssued: TraceName = "request_issued"
        /// `request_succeeded`.
        public static let requestSucceeded: TraceName = "request_succeeded"
        /// `request_failed`.
        public static let requestFailed: TraceName = "request_failed"
        /// `response_ignored`.
        public static let responseIgnored: TraceName = "response_ignored"
        /// `widget_devices_changed`.
        public static let widgetDevicesChanged: TraceName = "widget_devices_changed"
        /// `widget_scenes_changed`.
        public static let widgetScenesChanged: TraceName = "widget_scenes_changed"
        /// `device_properties_changed`.
        public static let devicePropertiesChanged: TraceName = "device_properties_changed"
        /// `device_status_changed`.
        public static let deviceStatusChanged: TraceName = "device_status_changed"
        /// `stale_update_ignored`.
        public static let staleUpdateIgnored: TraceName = "stale_update_ignored"
        /// `update_held`.
        public static let updateHeld: TraceName = "update_held"
        /// `timeout`.
        public static let timeout: TraceName = "timeout"
        /// `violation`.
        public static let violation: TraceName = "violation"
        /// `file_removed`.
        public static let fileRemoved: TraceName = "file_removed"
        /// `mqtt_connect`.
        public static let mqttConnect: TraceName = "mqtt_connect"
        /// `mqtt_subscribe`.
        public static let mqttSubscribe: TraceName = "mqtt_subscribe"
        /// `mqtt_disconnect`.
        public static let mqttDisconnect: TraceName = "mqtt_disconnect"

        /// Every name above, in the order declared: the integration's `emittedEvents` is made from
        /// this list, so a name is spelled once.
        public static let all: [TraceName] = [
            settingsChanged, settingsUnchanged, hasContentChanged, staleFileIgnored, openURLRequested,
            openURLCompleted, openURLResultDiscarded, refreshStarted, refreshCompleted,
            connectionStateChanged, requestIssued, requestSucceeded, requestFailed, responseIgnored,
            widgetDevicesChanged, widgetScenesChanged, devicePropertiesChanged, deviceStatusChanged,
            staleUpdateIgnored, updateHeld, timeout, violation, fileRemoved, mqttConnect, mqttSubscribe,
            mqttDisconnect]
    }

    /// The trace name of `action`. A container write and a publish are named as the actions they
    /// are (`file_written`, `mqtt_publish`), though a trace writes them as `frame_emitted` events.
    public static func name(of action: WidgetAction) -> TraceName {
        switch action {
        case .writeFile: "file_written"
        case .removeFile: Names.fileRemoved
        case .event(let event): name(of: event)
        case .mqttConnect: Names.mqttConnect
        case .mqttSubscribe: Names.mqttSubscribe
        case .mqttPublish: "mqtt_publish"
        case .mqttDisconnect: Names.mqttDisconnect
        }
    }

    /// The trace name of a core event: its case name in snake case.
    public static func name(of event: WidgetEvent) -> TraceName {
        switch event {
        case .settingsChanged: Names.settingsChanged
        case .settingsUnchanged: Names.settingsUnchanged
        case .hasContentChanged: Names.hasContentChanged
        case .staleFileIgnored: Names.staleFileIgnored
        case .openURLRequested: Names.openURLRequested
        case .openURLCompleted: Names.openURLCompleted
        case .openURLResultDiscarded: Names.openURLResultDiscarded
        case .refreshStarted: Names.refreshStarted
        case .refreshCompleted: Names.refreshCompleted
        case .connectionStateChanged: Names.connectionStateChanged
        case .requestIssued: Names.requestIssued
        case .requestSucceeded: Names.requestSucceeded
        case .requestFailed: Names.requestFailed
        case .responseIgnored: Names.responseIgnored
        case .widgetDevicesChanged: Names.widgetDevicesChanged
        case .widgetScenesChanged: Names.widgetScenesChanged
        case .devicePropertiesChanged: Names.devicePropertiesChanged
        case .deviceStatusChanged: Names.deviceStatusChanged
        case .staleUpdateIgnored: Names.staleUpdateIgnored
        case .updateHeld: Names.updateHeld
        case .timeout: Names.timeout
        case .violation: Names.violation
        }
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
        return [TraceEvent(timeNs: timeNs, core: core, event: name(of: action), payload: WidgetEventFields(action))]
    }

    /// Bytes shown as their text when they are UTF-8 (the channel's files and payloads are JSON),
    /// else as `{"hex": …}`.
    public static func content(_ bytes: [UInt8]) -> TraceValue {
        if let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
        return .object(["hex": .string(JSONLiteral.hex(bytes))])
    }
}
