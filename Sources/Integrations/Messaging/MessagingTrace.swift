import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import MessagingCore
import MonkeyC

/// MessagingCore's events as `messaging` trace events: the one mapping both replay and the live
/// host use, so their traces can be compared with `tether diff`. docs/trace-format.md lists the
/// events and fields.
public enum MessagingTrace {
    /// The trace's core name.
    public static let core: TraceName = "messaging"

    /// The core's own events in the trace, declared once: an event is named by one of these
    /// rather than by a literal interned each time it is written.
    public enum Names {
        /// `app_status`.
        public static let appStatus: TraceName = "app_status"
        /// `completion`.
        public static let completion: TraceName = "completion"
        /// `connection_closed`.
        public static let connectionClosed: TraceName = "connection_closed"
        /// `connection_opened`.
        public static let connectionOpened: TraceName = "connection_opened"
        /// `device_list`.
        public static let deviceList: TraceName = "device_list"
        /// `device_list_saved`.
        public static let deviceListSaved: TraceName = "device_list_saved"
        /// `device_status`.
        public static let deviceStatus: TraceName = "device_status"
        /// `message_received`.
        public static let messageReceived: TraceName = "message_received"
        /// `message_unclaimed`.
        public static let messageUnclaimed: TraceName = "message_unclaimed"
        /// `no_recorded_answer`: the responder had no captured answer for a command.
        public static let noRecordedAnswer: TraceName = "no_recorded_answer"
        /// `open_app`.
        public static let openApp: TraceName = "open_app"
        /// `progress`.
        public static let progress: TraceName = "progress"
        /// `timeout`.
        public static let timeout: TraceName = "timeout"
        /// `violation`.
        public static let violation: TraceName = "violation"
    }

    /// The trace events for one action. A write is a `frame_emitted` event; replay in strict or
    /// responder mode passes writes to its ``FrameMatcher`` instead, which writes the same event.
    public static func events(for action: MessagingAction, timeNs: Int64) -> [TraceEvent] {
        switch action {
        case .write(let device, let bytes):
            return [FrameMatcher.emittedEvent(core: core, channel: deviceText(device), bytes: bytes,
                                              packet: describePacket(bytes, from: .phone), timeNs: timeNs)]
        case .saveDeviceList(let devices):
            return [TraceEvent(timeNs: timeNs, core: core, event: Names.deviceListSaved, fields: [
                "count": .int(Int64(devices.count)),
            ])]
        case .event(let event):
            return [self.event(event, timeNs: timeNs)]
        }
    }

    /// One core event as a trace event.
    public static func event(_ event: MessagingEvent, timeNs: Int64) -> TraceEvent {
        func make(_ name: TraceName, _ fields: [String: TraceValue]) -> TraceEvent {
            TraceEvent(timeNs: timeNs, core: core, event: name, fields: fields)
        }
        func app(_ app: IQApp) -> [String: TraceValue] {
            ["app": .string(app.uuid.description), "device": .string(app.device.description)]
        }
        switch event {
        case .deviceListReplaced(let devices):
            return make(Names.deviceList, ["devices": .array(devices.map {
                .object(["uuid": .string($0.uuid.description), "model": .string($0.modelName), "name": .string($0.friendlyName)])
            })])
        case .deviceStatus(let device, let status):
            return make(Names.deviceStatus, ["device": .string(device.description), "status": .string(status.rawValue)])
        case .appStatus(let request, let target, let status):
            var fields = app(target)
            fields["request"] = .int(Int64(request.rawValue))
            fields["installed"] = status.map { .bool($0.isInstalled) } ?? .null
            fields["version"] = status.map { .int(Int64($0.version)) } ?? .null
            return make(Names.appStatus, fields)
        case .progress(let send, let target, let sent, let total):
            return TraceEvent(timeNs: timeNs, core: core, event: Names.progress, payload: MessagingAppEventFields(
                app: target, detail: .progress(send: send, sent: sent, total: total)))
        case .completion(let send, let target, let result):
            return TraceEvent(timeNs: timeNs, core: core, event: Names.completion, payload: MessagingAppEventFields(
                app: target, detail: .completion(send: send, result: result)))
        case .messageReceived(let target, let listener, let value):
            return TraceEvent(timeNs: timeNs, core: core, event: Names.messageReceived, payload: MessagingAppEventFields(
                app: target, detail: .messageReceived(listener: listener, value: MonkeyCJSON.traceValue(value))))
        case .messageUnclaimed(let target, let value):
            var fields = app(target)
            fields["value"] = MonkeyCJSON.traceValue(value)
            return make(Names.messageUnclaimed, fields)
        case .openAppResult(let request, let target, let result):
            var fields = app(target)
            fields["request"] = .int(Int64(request.rawValue))
            fields["result"] = .string(result.name)
            return make(Names.openApp, fields)
        case .connectionOpened(let target, let connection, let large, let byWatch):
            var fields = app(target)
            fields["connection"] = .int(Int64(connection))
            fields["large_packets"] = .bool(large)
            fields["by_watch"] = .bool(byWatch)
            return make(Names.connectionOpened, fields)
        case .connectionClosed(let target, let connection):
            var fields = app(target)
            fields["connection"] = .int(Int64(connection))
            return make(Names.connectionClosed, fields)
        case .timeout(let kind, let device, let target, _):
            // The deadline is on the core's clock, whose zero is not the trace's in a live run; in
            // replay the event's own `t_ns` is the deadline, exactly.
            var fields: [String: TraceValue] = ["what": .string(kind.rawValue), "device": .string(device.description)]
            if let target { fields["app"] = .string(target.uuid.description) }
            return make(Names.timeout, fields)
        case .violation(let device, let kind, let detail):
            return make(Names.violation, ["device": .string(device.description), "kind": .string(kind.rawValue), "detail": .string(detail)])
        }
    }

    /// One line for a link packet, as `inspect` and the frame matcher show it.
    public static func describePacket(_ bytes: [UInt8], from side: LinkDirection) -> String {
        LinkPacket.summary(of: bytes, from: side)
    }

    /// A device id as the trace writes it.
    public static func deviceText(_ device: DeviceID) -> String { device.description }

    /// A device id from trace text; `nil` when it is not a UUID.
    public static func deviceID(_ text: String) -> DeviceID? { IQUUID(text) }
}

