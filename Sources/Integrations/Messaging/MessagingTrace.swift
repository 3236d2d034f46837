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
        /// `open_app`.
        public static let openApp: TraceName = "open_app"
        /// `progress`.
        public static let progress: TraceName = "progress"
        /// `timeout`.
        public static let timeout: TraceName = "timeout"
        /// `violation`.
        public static let violation: TraceName = "violation"

        /// Every name above, in the order declared: the integration's `emittedEvents` is made from
        /// this list, so a name is spelled once.
        public static let all: [TraceName] = [
            appStatus, completion, connectionClosed, connectionOpened, deviceList, deviceListSaved,
            deviceStatus, messageReceived, messageUnclaimed, openApp, progress, timeout, violation]
    }

    /// The trace events for one action. A write is a `frame_emitted` event; replay in strict or
    /// responder mode passes writes to its ``FrameMatcher`` instead, which writes the same event.
    public static func events(for action: MessagingAction, timeNs: Int64) -> [TraceEvent] {
        switch action {
        case .write(let device, let bytes):
            return [FrameMatcher.emittedEvent(core: core, channel: deviceText(device), bytes: bytes,
                                              packet: describePacket(bytes, from: .phone), timeNs: timeNs)]
        case .saveDeviceList(let devices):
            return [TraceEvent(timeNs: timeNs, core: core, event: Names.deviceListSaved,
                               payload: MessagingEventFields(.deviceListSaved(count: devices.count)))]
        case .event(let event):
            return [self.event(event, timeNs: timeNs)]
        }
    }

    /// One core event as a trace event: named by ``name(of:)``, its fields the core's values
    /// (``MessagingEventFields``), written as docs/trace-format.md lists them.
    public static func event(_ event: MessagingEvent, timeNs: Int64) -> TraceEvent {
        let fields: MessagingEventFields
        switch event {
        case .deviceListReplaced(let devices):
            fields = MessagingEventFields(.deviceList(devices))
        case .deviceStatus(let device, let status):
            fields = MessagingEventFields(.deviceStatus(device, status))
        case .appStatus(let request, let target, let status):
            fields = MessagingEventFields(app: target, detail: .appStatus(request: request, status: status))
        case .progress(let send, let target, let sent, let total):
            fields = MessagingEventFields(app: target, detail: .progress(send: send, sent: sent, total: total))
        case .completion(let send, let target, let result):
            fields = MessagingEventFields(app: target, detail: .completion(send: send, result: result))
        case .messageReceived(let target, let listener, let value):
            fields = MessagingEventFields(app: target, detail: .messageReceived(listener: listener, value: MonkeyCJSON.traceValue(value)))
        case .messageUnclaimed(let target, let value):
            fields = MessagingEventFields(app: target, detail: .messageUnclaimed(value: MonkeyCJSON.traceValue(value)))
        case .openAppResult(let request, let target, let result):
            fields = MessagingEventFields(app: target, detail: .openApp(request: request, result: result))
        case .connectionOpened(let target, let connection, let large, let byWatch):
            fields = MessagingEventFields(app: target, detail: .connectionOpened(connection: connection, largePackets: large, byWatch: byWatch))
        case .connectionClosed(let target, let connection):
            fields = MessagingEventFields(app: target, detail: .connectionClosed(connection: connection))
        case .timeout(let kind, let device, let target, _):
            // The deadline is on the core's clock, whose zero is not the trace's in a live run; in
            // replay the event's own `t_ns` is the deadline, exactly.
            fields = MessagingEventFields(.timeout(kind, device: device, app: target?.uuid))
        case .violation(let device, let kind, let detail):
            fields = MessagingEventFields(.violation(device, kind, detail: detail))
        }
        return TraceEvent(timeNs: timeNs, core: core, event: name(of: event), payload: fields)
    }

    /// The trace name of a core event.
    public static func name(of event: MessagingEvent) -> TraceName {
        switch event {
        case .deviceListReplaced: Names.deviceList
        case .deviceStatus: Names.deviceStatus
        case .appStatus: Names.appStatus
        case .progress: Names.progress
        case .completion: Names.completion
        case .messageReceived: Names.messageReceived
        case .messageUnclaimed: Names.messageUnclaimed
        case .openAppResult: Names.openApp
        case .connectionOpened: Names.connectionOpened
        case .connectionClosed: Names.connectionClosed
        case .timeout: Names.timeout
        case .violation: Names.violation
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

