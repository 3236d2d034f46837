import BehaviourTrace
import Dissectors
import Emulation
import ReplayKit

/// Replays a capture's peripheral to the app's own CoreBluetooth code (`TetherCoreBluetooth`):
/// the app's calls arrive as `api-calls` records from the app-in-the-loop host, go to a
/// ``VirtualPeripheralLink`` built from the capture, and what the link answers becomes the
/// `central` core's trace events, which the facade turns into delegate callbacks.
///
/// The adapter takes no frame from the engine: the whole capture was read once, when the adapter
/// was made, into the link's model of the peripheral. The recorded central's own calls do not
/// exist (a capture of HCI holds none); the app makes every call.
public struct CentralAdapter: CoreAdapter {
    /// `central`.
    public let core = CentralIntegration.core

    /// The events the adapter writes for the link and the app's requests, declared once: an
    /// event is named by one of these rather than by a literal interned each time it is written.
    public enum Names {
        /// `api_misuse`.
        public static let apiMisuse: TraceName = "api_misuse"
        /// `characteristics_discovered`.
        public static let characteristicsDiscovered: TraceName = "characteristics_discovered"
        /// `connected`.
        public static let connected: TraceName = "connected"
        /// `descriptors_discovered`.
        public static let descriptorsDiscovered: TraceName = "descriptors_discovered"
        /// `disconnected`.
        public static let disconnected: TraceName = "disconnected"
        /// `discovered`.
        public static let discovered: TraceName = "discovered"
        /// `included_services_discovered`.
        public static let includedServicesDiscovered: TraceName = "included_services_discovered"
        /// `mtu`.
        public static let mtu: TraceName = "mtu"
        /// `notification`.
        public static let notification: TraceName = "notification"
        /// `notification_state`.
        public static let notificationState: TraceName = "notification_state"
        /// `read`.
        public static let read: TraceName = "read"
        /// `rssi`.
        public static let rssi: TraceName = "rssi"
        /// `services_discovered`.
        public static let servicesDiscovered: TraceName = "services_discovered"
        /// `state`.
        public static let state: TraceName = "state"
        /// `written`.
        public static let written: TraceName = "written"

        /// Every name above, in the order declared: the integration's `emittedEvents` is made from
        /// this list, so a name is spelled once.
        public static let all: [TraceName] = [
            apiMisuse, characteristicsDiscovered, connected, descriptorsDiscovered, disconnected, discovered,
            includedServicesDiscovered, mtu, notification, notificationState, read, rssi, servicesDiscovered,
            state, written]
    }
    private var link: VirtualPeripheralLink
    /// Request ids of the operations queued on the link, oldest first: the link answers them in order.
    private var pending: [Int64] = []
    private var nextRequest: Int64 = 1
    private var stats = (calls: 0, misuses: 0)
    /// Connections the app asked of peripherals the capture never connected to: they stay
    /// pending, as a phone's attempt does, until cancelled.
    private var pendingElsewhere: Set<String> = []

    /// An adapter over `link`.
    public init(link: VirtualPeripheralLink) {
        self.link = link
    }

    /// The identifier the facade gives the peripheral at `address`: stable across runs and
    /// machines, so a test may keep it (a real phone makes one up per device).
    public static func identifier(of address: String) -> String {
        let digits = address.filter(\.isHexDigit).lowercased()
        let padded = String(repeating: "0", count: max(0, 12 - digits.count)) + digits.suffix(12)
        return "7e7e7e7e-0000-4000-8000-" + padded
    }

    /// The Bluetooth interfaces' frames, raw, only so the engine runs the run's faults over them
    /// and writes each `fault_injected` event at its frame's captured instant, as for every core;
    /// the adapter does nothing with them (the capture was read into the link when it was made,
    /// and the link follows the same faults). The app's calls are handed over by the host.
    public func input(for interface: ReplayInterface) -> ReplayInput {
        if interface.carriesAPICalls { return .ignore }
        switch ReplayInput.bleCore(for: interface) {
        case .ignore: return .ignore
        default: return .raw
        }
    }

    public mutating func frame(_ frame: ReplayFrame, bytes _: RawSpan, now: Duration) -> [TraceEvent] {
        guard frame.interface.carriesAPICalls, case .parsed(let record) = frame.apiCallRecord(), case .string(let call)? = record["call"] else { return [] }
        let t = now.replayNanoseconds
        stats.calls += 1
        var fields = record
        fields["core"] = nil
        var events: [TraceEvent] = []
        var linkEvents: [VirtualLinkEvent] = []
        // The operations answered later carry a request id, echoed by the event that ends them.
        var request: Int64?
        func op(_ operation: VirtualPeripheralLink.Operation, answered: Bool = true) {
            let before = linkEvents.count
            linkEvents += link.perform(operation, now: t)
            let misused = linkEvents[before...].contains { if case .misuse = $0 { true } else { false } }
            if answered, !misused {
                request = nextRequest
                nextRequest += 1
                pending.append(request!)
            }
        }
        let handle = record["handle"].flatMap(Self.int).map { UInt16(clamping: $0) }
        switch call {
        case "create_manager":
            events.append(TraceEvent(timeNs: t, core: core, event: .apiCall, fields: fields))
            // The recorded peripheral is one the system knows: `retrievePeripherals` finds it.
            events.append(TraceEvent(timeNs: t, core: core, event: Names.state, fields: [
                "state": .string("powered_on"), "known_peripherals": .array([.string(Self.identifier(of: link.address))])]))
            return events
        case "scan":
            let services = record["services"].flatMap(Self.uuids)
            linkEvents += link.startScan(services: services, allowDuplicates: record["allow_duplicates"] == .bool(true), now: t)
        case "stop_scan":
            link.stopScan()
        case "connect" where !isRecordedPeripheral(record):
            if case .string(let id)? = record["peripheral"] { pendingElsewhere.insert(id) }
            linkEvents.append(.unanswered("connect to a peripheral the capture never connected to: it stays connecting, as on a phone"))
        case "cancel_connection" where !isRecordedPeripheral(record):
            guard case .string(let id)? = record["peripheral"], pendingElsewhere.remove(id) != nil else { break }
            events.append(TraceEvent(timeNs: t, core: core, event: .apiCall, fields: fields))
            events.append(TraceEvent(timeNs: t, core: core, event: Names.disconnected, payload: CentralLinkEventFields(
                .connection(.disconnected(reason: 0x16, byCentral: true, frame: nil), peripheral: id))))
            return events
        case "connect":
            linkEvents += link.connect(now: t)
        case "cancel_connection":
            linkEvents += link.cancelConnection(now: t)
            pending.removeAll()
        case "discover_services":
            op(.discoverServices(record["services"].flatMap(Self.uuids)))
        case "discover_included_services":
            op(.discoverIncludedServices(service: handle ?? 0))
        case "discover_characteristics":
            op(.discoverCharacteristics(service: handle ?? 0, record["characteristics"].flatMap(Self.uuids)))
        case "discover_descriptors":
            op(.discoverDescriptors(characteristic: handle ?? 0))
        case "read":
            op(.read(handle ?? 0))
        case "write", "write_without_response":
            let value = record["value"].flatMap(Self.bytes) ?? []
            op(.write(handle ?? 0, value, withResponse: call == "write"), answered: call == "write")
        case "set_notify":
            op(.setNotify(handle ?? 0, record["enabled"] != .bool(false)))
        case "read_rssi":
            linkEvents += link.readRSSI(now: t)
        default:
            stats.misuses += 1
            return [TraceEvent(timeNs: t, core: core, event: Names.apiMisuse, fields: ["detail": .string("unknown call \(call): not delivered")])]
        }
        if let request { fields["request"] = .int(request) }
        events.append(TraceEvent(timeNs: t, core: core, event: .apiCall, fields: fields))
        events += trace(linkEvents, at: t)
        return events
    }

    /// Whether a call names the recorded peripheral (or none).
    private func isRecordedPeripheral(_ record: [String: TraceValue]) -> Bool {
        guard case .string(let id)? = record["peripheral"] else { return true }
        return id == Self.identifier(of: link.address)
    }

    public var nextDeadline: Duration? {
        link.nextDeadlineNs.map { .nanoseconds($0) }
    }

    public mutating func timeout(now: Duration) -> [TraceEvent] {
        let t = now.replayNanoseconds
        return trace(link.advance(to: t), at: t)
    }

    public mutating func finish(now: Duration) -> [TraceEvent] {
        let counts = link.counts
        return [TraceEvent(timeNs: now.replayNanoseconds, core: core, event: .summary, fields: [
            "calls": .int(Int64(stats.calls)), "requests_matched": .int(Int64(counts.matched)), "requests_diverged": .int(Int64(counts.diverged)),
            "answered_from_database": .int(Int64(counts.unanswered)), "notifications": .int(Int64(counts.notified)),
            "notifications_not_subscribed": .int(Int64(counts.notSubscribed)), "lost_to_faults": .int(Int64(counts.lostToFaults)),
            "misuses": .int(Int64(stats.misuses)),
        ])]
    }

    // MARK: link events → trace events

    private mutating func trace(_ linkEvents: [VirtualLinkEvent], at t: Int64) -> [TraceEvent] {
        var events: [TraceEvent] = []
        events.reserveCapacity(linkEvents.count)
        /// An event that ends an app request, with the oldest waiting request's id.
        func answer(_ answer: CentralLinkEventFields.Answer) -> CentralLinkEventFields.Source {
            .answer(answer, request: pending.isEmpty ? nil : pending.removeFirst())
        }
        for event in linkEvents {
            let name: TraceName
            let source: CentralLinkEventFields.Source
            switch event {
            case .advertisement(let report, let synthesized):
                // The advertisement as CoreBluetooth hands it over, parsed once here.
                name = Names.discovered
                source = .advertisement(report, AdvertisingData(report.data), synthesized: synthesized,
                                        peripheral: Self.identifier(of: report.address))
            case let .connected(recorded, frame):
                name = Names.connected
                source = .connection(.connected(recorded: recorded, frame: frame), peripheral: Self.identifier(of: link.address))
            case let .disconnected(reason, byCentral, frame):
                pending.removeAll()
                name = Names.disconnected
                source = .connection(.disconnected(reason: reason, byCentral: byCentral, frame: frame),
                                     peripheral: Self.identifier(of: link.address))
            case .mtuChanged(let mtu):
                name = Names.mtu
                source = .link(.mtuChanged(mtu))
            case let .requestSent(pdu, matched, expected):
                // A Write Command that matched nothing is not reported: the app waits for no answer.
                if matched == nil, pdu.first == 0x52 { continue }
                name = matched == nil ? .frameDiverged : .frameMatched
                source = .link(.requestSent(pdu: pdu, matched: matched, expected: expected))
            case let .servicesDiscovered(services, error):
                (name, source) = (Names.servicesDiscovered, answer(.servicesDiscovered(services, error: error)))
            case let .includedServicesDiscovered(service, services, error):
                (name, source) = (Names.includedServicesDiscovered, answer(.includedServicesDiscovered(service: service, services, error: error)))
            case let .characteristicsDiscovered(service, found, error):
                (name, source) = (Names.characteristicsDiscovered, answer(.characteristicsDiscovered(service: service, found, error: error)))
            case let .descriptorsDiscovered(characteristic, found, error):
                (name, source) = (Names.descriptorsDiscovered, answer(.descriptorsDiscovered(characteristic: characteristic, found, error: error)))
            case let .read(handle, value, error, frame):
                (name, source) = (Names.read, answer(.read(handle: handle, value: value, error: error, frame: frame)))
            case let .written(handle, error, frame):
                (name, source) = (Names.written, answer(.written(handle: handle, error: error, frame: frame)))
            case let .notificationState(handle, enabled, error):
                (name, source) = (Names.notificationState, answer(.notificationState(handle: handle, enabled: enabled, error: error)))
            case .notified(let item):
                events.append(TraceEvent(timeNs: t, core: core, event: Names.notification, payload: CentralNotificationFields(
                    frame: item.frame, handle: item.handle, isIndication: item.isIndication, value: item.value)))
                continue
            case .rssi(let rssi):
                name = Names.rssi
                source = .link(.rssi(rssi))
            case .unanswered(let detail):
                name = .noRecordedAnswer
                source = .link(.unanswered(detail))
            case .misuse(let detail):
                stats.misuses += 1
                name = Names.apiMisuse
                source = .link(.misuse(detail))
            }
            events.append(TraceEvent(timeNs: t, core: core, event: name, payload: CentralLinkEventFields(source)))
        }
        return events
    }

    static func int(_ value: TraceValue) -> Int? {
        switch value {
        case .int(let i): Int(exactly: i)
        case .double(let d): Int(exactly: d)
        case .string(let s): Int(s)
        default: nil
        }
    }

    static func uuids(_ value: TraceValue) -> [BluetoothUUID]? {
        guard case .array(let items) = value else { return nil }
        return items.compactMap { if case .string(let s) = $0 { BluetoothUUID(s) } else { nil } }
    }

    static func bytes(_ value: TraceValue) -> [UInt8]? {
        guard case .string(let text) = value else { return nil }
        return JSONLiteral.bytes(fromHex: text)
    }
}
