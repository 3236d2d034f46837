import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import MQTT
import WidgetCore

/// Replays one process of the host-app ↔ widget channel (docs/widget-core.md) into ``WidgetCore``
/// and writes what the core does as `widget` trace events, comparing every publish and container
/// write with the one the process made in the capture.
///
/// The capture holds three interfaces recorded together (`tether live widget --record`, or
/// `tether record --tcp lo:PORT --app-group DIR` beside a host that records its calls):
/// - `api-calls` (`"core": "widget"`, ``WidgetAPICall``): `start` creates the core with the
///   container's files at launch and names the process (role, account, so its MQTT client id);
///   then the app's calls at their instants;
/// - `mqtt-tcp`: the broker's TCP traffic, reassembled and read as MQTT by the dissectors. The
///   replayed process's connection is the one whose CONNECT names its client id. Its CONNACK
///   (code 0), SUBACKs (with the filters of the SUBSCRIBE they answer), the broker's PUBLISHes and
///   the connection's end (FIN or RST) are the core's inputs; its own PUBLISHes are the captured
///   frames its publishes are matched against (channel `mqtt`);
/// - `app-group` (docs/app-group-link.md): the `moved_in` that completes an atomic write by this
///   process (`writer` = its role) is the captured frame its container writes are matched against
///   (channel `container`). When the recorder could not read the content (the other process had
///   already removed the file), the write is paired by its name (`own_writes_unread` counts them).
///   The other process's changes reach the core as the host's `container_changed` records, which
///   carry what the process read: inotify cannot keep the content of a file removed at once.
///
/// Feed order: when the `api-calls` records carry `link_inputs` (a live host wrote them), the
/// records and the MQTT inputs (CONNACK, SUBACK, PUBLISH, the connection's end) reach the core in
/// the order the live core got them, whatever their timestamps say (``FeedOrderQueue``).
public struct WidgetAdapter: CoreAdapter {
    /// Always `widget`.
    public let core = WidgetTraceMapping.core
    /// The adapter reads MQTT records from the TCP interface.
    public var dissectsFrames: Bool { true }
    /// The core under test.
    public private(set) var driver: WidgetDriver
    /// The output comparison.
    public private(set) var matcher: FrameMatcher
    /// How emitted frames are compared (`strict`, `responder` or `off`).
    public let matching: FrameMatchingMode
    /// The process replayed; `nil` until a `start` record.
    public private(set) var role: WidgetRole?

    private var clientID: String?
    /// The replayed process's connections, by their client → broker direction.
    private var connections: [TCPFlowKey: ConnectionState] = [:]
    private var counts = (apiCalls: 0, brokerMessages: 0, ownPublishes: 0, containerChanges: 0, ownWrites: 0, ownWritesUnread: 0, connections: 0, malformedRecords: 0)
    /// Container writes the core made that the capture has not shown yet, by name (for pairing a
    /// write whose content the recorder could not read).
    private var writesAwaitingCapture: [String: [[UInt8]]] = [:]
    private var order: FeedOrderQueue<WidgetInput, WidgetAPICall>?
    /// The capture timestamp of virtual time zero, for stamping a responder's answers.
    private var captureEpochNs: Int64 = 0
    private let prescan: WidgetCapturePrescan?
    private var faults: PeerFrameFaults
    /// Responder mode: the broker and the cloud as recorded (``WidgetResponder``); made at `start`.
    private var responder: WidgetResponder?
    /// Responder mode: whether the core holds a connection the responder accepted.
    private var responderConnected = false

    private struct ConnectionState {
        var subscribes: [UInt16: [String]] = [:]
        var ended = false
    }

    /// An adapter; `configuration` gives the core's timers (the account comes from `start`).
    public init(configuration: WidgetConfiguration = WidgetConfiguration(account: "demo"), matching: FrameMatchingMode = .strict,
                prescan: WidgetCapturePrescan? = nil, faults: PeerFrameFaults = .init(), feedOrder: FeedOrderPrescan = .init()) {
        self.driver = WidgetDriver(configuration: configuration)
        self.matcher = FrameMatcher(core: WidgetTraceMapping.core, reorderWindow: Self.reorderWindow, decode: WidgetTraceMapping.describeFrame)
        self.matching = matching
        self.prescan = matching == .responder ? prescan ?? WidgetCapturePrescan() : nil
        self.faults = faults
        if !feedOrder.calls.isEmpty { order = FeedOrderQueue(planned: feedOrder.calls) }
    }

    /// How far out of order a publish or write may come and still pair: a live host hands its
    /// actions to the socket and the folder in order, but the capture sees TCP segments and
    /// renames through two different sources (libpcap and inotify).
    public static let reorderWindow = 4

    /// API calls and container events raw; the broker's TCP dissected.
    public func input(for interface: ReplayInterface) -> ReplayInput {
        switch interface.role {
        case .apiCalls?: return .raw
        case .appGroup?: return .raw
        case .mqttTCP?: return .dissected
        case nil: return interface.linkType == .user1 ? .raw : .ignore
        default: return .ignore
        }
    }

    /// One frame: an API-call record, a container event or TCP.
    public mutating func frame(_ frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        // Every frame tells the capture time of virtual zero (a responder's answers are stamped from it).
        captureEpochNs = frame.timestampNs &- frame.virtualTimeNs
        if frame.interface.carriesAPICalls {
            return apiRecord(frame, now: now)
        }
        if frame.interface.role == .appGroup || frame.interface.linkType == .user1 {
            return containerEvent(frame, now: now)
        }
        guard let dissected = frame.dissected, let clientID else { return [] }
        var events: [TraceEvent] = []
        for record in dissected.mqtt {
            let client = record.fromClient ? record.flow : record.flow.reversed
            if record.fromClient, case .connect(let connect)? = record.packet?.body {
                guard connect.clientID == clientID else { continue }
                connections[client] = ConnectionState()
                counts.connections += 1
                continue
            }
            guard connections[client] != nil, let packet = record.packet else { continue }
            if !record.fromClient, let responder {
                // The broker's and the cloud's answers come when the core asks (``WidgetResponder``);
                // nothing reaches a core without a connection.
                if responder.isAnswer(packet.body, topic: record.topic) || !responderConnected { continue }
            }
            if record.fromClient {
                switch packet.body {
                case .publish(let publish):
                    counts.ownPublishes += 1
                    guard matching != .off, let topic = record.topic else { continue }
                    events += matcher.captured(
                        WidgetTraceMapping.publishFrame(topic: topic, payload: publish.payload, qos: Int(publish.qos)),
                        channel: WidgetTraceMapping.mqttChannel, frame: frame.number, timeNs: now.replayNanoseconds)
                case .subscribe(let id, _, let subscriptions):
                    connections[client]?.subscribes[id] = subscriptions.map(\.topicFilter)
                default:
                    break
                }
            } else {
                switch packet.body {
                case .connack(_, let code, _) where code == 0:
                    events += feed(.mqttConnected, frame: frame, now: now)
                case .suback(let id, _, let codes):
                    let filters = connections[client]?.subscribes.removeValue(forKey: id) ?? []
                    let granted = zip(filters, codes).filter { $0.1 < 0x80 }.map(\.0)
                    events += feed(.mqttSubscribed(granted), frame: frame, now: now)
                case .publish(let publish):
                    counts.brokerMessages += 1
                    guard let topic = record.topic else { continue }
                    events += feed(.mqttMessage(topic: topic, payload: publish.payload), frame: frame, now: now)
                default:
                    break
                }
            }
        }
        if let segment = dissected.tcp, segment.flags & (TCPSegment.fin | TCPSegment.rst) != 0 {
            let flow = TCPFlowKey(segment)
            for client in [flow, flow.reversed] where connections[client]?.ended == false {
                connections[client]?.ended = true
                if responder != nil {
                    guard responderConnected else { continue }
                    responderConnected = false
                    responder?.disconnected()
                }
                events += feed(.mqttDisconnected, frame: frame, now: now)
            }
        }
        return events
    }

    /// The core's next timer, the latest instant a held input is released, or the responder's
    /// next answer.
    /// Its faults are asked only as captured answers are scheduled: a copy may take other faults
    /// (``CoreAdapter/adoptFaults(_:)``).
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool {
        responder?.adopt(faults)
        self.faults = faults
        return true
    }

    public var nextDeadline: Duration? {
        let candidates = [driver.nextDeadline, order?.nextReleaseNs.map(Duration.nanoseconds), responder?.nextDueNs.map(Duration.nanoseconds)]
        return candidates.compactMap { $0 }.min()
    }

    /// Releases held inputs that waited too long, delivers the responder's answers due, then fires
    /// the core's timers.
    public mutating func timeout(now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        let timeNs = now.replayNanoseconds
        if order != nil { events += deliver(order!.releaseDue(nowNs: timeNs), now: now) }
        while let delivery = responder?.popDue(nowNs: timeNs) {
            if let made = delivery.made {
                events.append(TraceEvent(timeNs: timeNs, core: core, event: "responder_made", fields: [
                    "what": .string(made), "input": .string(Self.describe(delivery.input)),
                ]))
            }
            switch delivery.input {
            case .mqttConnected: responderConnected = true
            case .mqttDisconnected: responderConnected = false
            case .mqttMessage: counts.brokerMessages += 1
            default: break
            }
            events += feedAnswer(delivery.input, now: now)
        }
        guard let deadline = driver.nextDeadline, deadline <= now else { return events }
        return events + perform(driver.handleTimeout(now: now), now: now)
    }

    static func describe(_ input: WidgetInput) -> String {
        switch input {
        case .mqttConnected: "CONNACK 0"
        case .mqttSubscribed(let topics): "SUBACK granted \(topics.joined(separator: ", "))"
        case .mqttDisconnected: "connection ended"
        case let .mqttMessage(topic, payload): "PUBLISH \(topic) \(String(decoding: payload, as: UTF8.self))"
        case let .containerChanged(name, _): "container \(name)"
        }
    }

    /// Unpaired frames become divergences; then a `summary`.
    public mutating func finish(now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events: [TraceEvent] = []
        if order != nil { events += deliver(order!.releaseAll(), now: now) }
        events += matching == .off ? [] : matcher.finish(timeNs: timeNs)
        var fields: [String: TraceValue] = [
            "role": role.map { .string($0.rawValue) } ?? .null,
            "api_calls": .int(Int64(counts.apiCalls)),
            "connections": .int(Int64(counts.connections)),
            "broker_messages": .int(Int64(counts.brokerMessages)),
            "own_publishes": .int(Int64(counts.ownPublishes)),
            "container_changes": .int(Int64(counts.containerChanges)),
            "own_writes": .int(Int64(counts.ownWrites)),
            "own_writes_unread": .int(Int64(counts.ownWritesUnread)),
            "frame_matching": .string(matching.rawValue),
            "frames_matched": .int(Int64(matcher.matched)),
            "frames_diverged": .int(Int64(matcher.diverged)),
        ]
        if counts.malformedRecords > 0 { fields["malformed_api_records"] = .int(Int64(counts.malformedRecords)) }
        if let responder { fields["responder_made"] = .int(Int64(responder.made)) }
        if let first = matcher.firstDivergence { fields["first_divergence"] = .string(first.description) }
        if let order { fields.merge(order.summaryFields) { a, _ in a } }
        events.append(TraceEvent(timeNs: timeNs, core: core, event: "summary", fields: fields))
        return events
    }

    // MARK: inputs

    private mutating func malformed(_ frame: ReplayFrame, _ detail: String, now: Duration) -> [TraceEvent] {
        counts.malformedRecords += 1
        return [TraceEvent(timeNs: now.replayNanoseconds, core: core, event: "api_record_malformed", fields: [
            "frame": .int(Int64(frame.number)), "detail": .string(detail),
        ])]
    }

    private mutating func apiRecord(_ frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        let record: [String: TraceValue]
        switch frame.apiCallRecord() {
        case .parsed(let members): record = members
        case .malformed(let detail): return malformed(frame, detail, now: now)
        }
        guard case .string(WidgetTraceMapping.core)? = record["core"] else { return [] }
        let call: WidgetAPICall
        do throws(WidgetAPICallError) {
            call = try WidgetAPICall(record: record)
        } catch {
            return malformed(frame, error.description, now: now)
        }
        counts.apiCalls += 1
        if case .containerChanged = call { counts.containerChanges += 1 }
        if case let .start(startRole, account, _, _) = call {
            role = startRole
            let client = WidgetTopics.clientID(role: startRole, account: account)
            clientID = client
            if let prescan, responder == nil {
                responder = WidgetResponder(prescan: prescan, clientID: client, account: account, faults: faults)
            }
        }
        guard order != nil else { return apply(call, now: now) }
        return deliver(order!.call(call, frame: frame.number, linkInputs: FeedOrderPrescan.linkInputs(of: record), nowNs: now.replayNanoseconds), now: now)
    }

    private mutating func apply(_ call: WidgetAPICall, now: Duration) -> [TraceEvent] {
        let (actions, events) = driver.apply(call, now: now)
        return events + perform(actions, now: now)
    }

    /// A responder's answer, a link input like a captured one: it goes through the feed order too,
    /// so the count of link inputs the captured calls name stays the live one.
    private mutating func feedAnswer(_ input: WidgetInput, now: Duration) -> [TraceEvent] {
        guard order != nil else { return perform(driver.receive(input, now: now), now: now) }
        return deliver(order!.link(input, timestampNs: captureEpochNs &+ now.replayNanoseconds, nowNs: now.replayNanoseconds), now: now)
    }

    /// One MQTT input, through the feed order when the capture has one.
    private mutating func feed(_ input: WidgetInput, frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        guard order != nil else { return perform(driver.receive(input, now: now), now: now) }
        return deliver(order!.link(input, timestampNs: frame.timestampNs, nowNs: now.replayNanoseconds), now: now)
    }

    private mutating func deliver(_ items: [FeedOrderQueue<WidgetInput, WidgetAPICall>.Item], now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        for item in items {
            switch item {
            case .link(let input): events += perform(driver.receive(input, now: now), now: now)
            case .call(let call): events += apply(call, now: now)
            }
        }
        return events
    }

    private mutating func containerEvent(_ frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        let record: [String: TraceValue]
        do throws(TraceFormatError) {
            record = try JSONLiteral.parseObject(frame.bytes, label: "frame \(frame.number)")
        } catch {
            return malformed(frame, "App Group event: \(error.description)", now: now)
        }
        guard case .string(let op)? = record["op"], case .string(let name)? = record["name"] else {
            return malformed(frame, "App Group event without \"op\" and \"name\"", now: now)
        }
        var content: [UInt8]?
        if case .string(let hex)? = record["content"] { content = MonkeyCJSON.decodeHex(hex) }
        // Temporary files of the atomic-write convention are not the container's state.
        guard op == "moved_in", record["temporary_for"] == nil, !name.hasPrefix("."),
              case .string(let writer)? = record["writer"], writer == role?.rawValue else { return [] }
        counts.ownWrites += 1
        let frameBytes: [UInt8]
        if let content, record["content_truncated"] == nil {
            frameBytes = WidgetTraceMapping.fileFrame(name: name, bytes: content)
        } else if let waiting = writesAwaitingCapture[name]?.first {
            counts.ownWritesUnread += 1
            frameBytes = waiting
        } else {
            counts.ownWritesUnread += 1
            return []
        }
        if var waiting = writesAwaitingCapture[name], let index = waiting.firstIndex(of: frameBytes) {
            waiting.remove(at: index)
            writesAwaitingCapture[name] = waiting.isEmpty ? nil : waiting
        }
        guard matching != .off else { return [] }
        return matcher.captured(frameBytes, channel: WidgetTraceMapping.containerChannel, frame: frame.number, timeNs: now.replayNanoseconds)
    }

    private mutating func perform(_ actions: [WidgetAction], now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events: [TraceEvent] = []
        for action in actions {
            responder?.coreAsked(action, nowNs: timeNs)
            if case .mqttDisconnect = action { responderConnected = false }
            if matching != .off, let (channel, bytes) = WidgetTraceMapping.frame(of: action) {
                if case .writeFile(let name, _) = action { writesAwaitingCapture[name, default: []].append(bytes) }
                events += matcher.emitted(bytes, channel: channel, timeNs: timeNs)
            } else {
                events += WidgetTraceMapping.events(for: action, timeNs: timeNs)
            }
        }
        return events
    }
}
