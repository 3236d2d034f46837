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
    public var matcher: FrameMatcher { skeleton.matcher }
    /// How emitted frames are compared (`strict`, `responder` or `off`).
    public var matching: FrameMatchingMode { skeleton.matching }
    /// The process replayed; `nil` until a `start` record.
    public private(set) var role: WidgetRole?

    private var clientID: String?
    /// The replayed process's connections, by their client → broker direction.
    private var connections: [TCPFlowKey: ConnectionState] = [:]
    private var counts = (brokerMessages: 0, ownPublishes: 0, containerChanges: 0, ownWrites: 0, ownWritesUnread: 0, connections: 0)
    /// Container writes the core made that the capture has not shown yet, by name (for pairing a
    /// write whose content the recorder could not read).
    private var writesAwaitingCapture: [String: [[UInt8]]] = [:]
    /// API records, feed order, frame matching and the summary's shared half.
    private var skeleton: CoreAdapterSkeleton<WidgetInput, WidgetAPICall>
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
        self.skeleton = CoreAdapterSkeleton(
            core: WidgetTraceMapping.core, matching: matching,
            matcher: FrameMatcher(core: WidgetTraceMapping.core, reorderWindow: Self.reorderWindow, decode: WidgetTraceMapping.describeFrame),
            feedOrder: feedOrder)
        self.prescan = matching == .responder ? prescan ?? WidgetCapturePrescan() : nil
        self.faults = faults
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
    public mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent] {
        skeleton.saw(frame)
        if frame.interface.carriesAPICalls {
            return apiRecord(frame, now: now)
        }
        if frame.interface.role == .appGroup || frame.interface.linkType == .user1 {
            return containerEvent(frame, bytes: bytes, now: now)
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
                    guard let topic = record.topic else { continue }
                    events += skeleton.captured(
                        WidgetTraceMapping.publishFrame(topic: topic, payload: publish.payload, qos: Int(publish.qos)),
                        channel: WidgetTraceMapping.mqttChannel, frame: frame.number, now: now)
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

    /// Its faults are asked only as captured answers are scheduled: a copy may take other faults
    /// (``CoreAdapter/adoptFaults(_:)``).
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool {
        responder?.adopt(faults)
        self.faults = faults
        return true
    }

    /// The core's next timer, the earliest instant a held input is released, or the responder's
    /// next answer.
    public var nextDeadline: Duration? {
        skeleton.nextDeadline(core: driver.nextDeadline, responder?.nextDueNs)
    }

    /// Releases held inputs that waited too long, delivers the responder's answers due, then fires
    /// the core's timers.
    public mutating func timeout(now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events = deliver(skeleton.releaseDue(now: now), now: now)
        while let delivery = responder?.popDue(nowNs: timeNs) {
            if let made = delivery.made {
                events.append(TraceEvent(timeNs: timeNs, core: core, event: .responderMade, fields: [
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
        guard let actions = driver.timersDue(now: now) else { return events }
        return events + perform(actions, now: now)
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
        let events = deliver(skeleton.releaseAll(), now: now)
        return events + skeleton.finish(now: now, fields: [
            "role": role.map { .string($0.rawValue) } ?? .null,
            "connections": .int(Int64(counts.connections)),
            "broker_messages": .int(Int64(counts.brokerMessages)),
            "own_publishes": .int(Int64(counts.ownPublishes)),
            "container_changes": .int(Int64(counts.containerChanges)),
            "own_writes": .int(Int64(counts.ownWrites)),
            "own_writes_unread": .int(Int64(counts.ownWritesUnread)),
        ], responderMade: responder?.made)
    }

    // MARK: inputs

    private mutating func apiRecord(_ frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        switch skeleton.readCall(frame, now: now, decode: { (record) throws(WidgetAPICallError) in try WidgetAPICall(record: record) }) {
        case .otherCore, .record:
            return []
        case .malformed(let event):
            return [event]
        case .parsed(let call, let record):
            if case .containerChanged = call { counts.containerChanges += 1 }
            if case let .start(startRole, account, _, _) = call {
                role = startRole
                let client = WidgetTopics.clientID(role: startRole, account: account)
                clientID = client
                if let prescan, responder == nil {
                    responder = WidgetResponder(prescan: prescan, clientID: client, account: account, faults: faults)
                }
            }
            return deliver(skeleton.route(call, frame: frame.number, record: record, now: now), now: now)
        }
    }

    private mutating func apply(_ call: WidgetAPICall, now: Duration) -> [TraceEvent] {
        let (actions, events) = driver.apply(call, now: now)
        return events + perform(actions, now: now)
    }

    /// A responder's answer, a link input like a captured one: it goes through the feed order too,
    /// so the count of link inputs the captured calls name stays the live one.
    private mutating func feedAnswer(_ input: WidgetInput, now: Duration) -> [TraceEvent] {
        deliver(skeleton.routeAnswer(input, now: now), now: now)
    }

    /// One MQTT input, through the feed order when the capture has one.
    private mutating func feed(_ input: WidgetInput, frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        deliver(skeleton.route(input, timestampNs: frame.timestampNs, now: now), now: now)
    }

    private mutating func deliver(_ items: CoreAdapterSkeleton<WidgetInput, WidgetAPICall>.Routed, now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        for item in items {
            switch item {
            case .link(let input): events += perform(driver.receive(input, now: now), now: now)
            case .call(let call): events += apply(call, now: now)
            }
        }
        return events
    }

    private mutating func containerEvent(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent] {
        let record: [String: TraceValue]
        do throws(TraceFormatError) {
            record = try bytes.withUnsafeBytes { raw throws(TraceFormatError) in try JSONLiteral.parseObject(raw, label: "frame \(frame.number)") }
        } catch {
            return [skeleton.malformedRecord(frame: frame.number, detail: "App Group event: \(error.description)", now: now)]
        }
        guard case .string(let op)? = record["op"], case .string(let name)? = record["name"] else {
            return [skeleton.malformedRecord(frame: frame.number, detail: "App Group event without \"op\" and \"name\"", now: now)]
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
        return skeleton.captured(frameBytes, channel: WidgetTraceMapping.containerChannel, frame: frame.number, now: now)
    }

    private mutating func perform(_ actions: [WidgetAction], now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events: [TraceEvent] = []
        for action in actions {
            responder?.coreAsked(action, nowNs: timeNs)
            if case .mqttDisconnect = action { responderConnected = false }
            if skeleton.matching != .off, let (channel, bytes) = WidgetTraceMapping.frame(of: action) {
                if case .writeFile(let name, _) = action { writesAwaitingCapture[name, default: []].append(bytes) }
                events += skeleton.emitted(bytes, channel: channel, now: now)
            } else {
                events += WidgetTraceMapping.events(for: action, timeNs: timeNs)
            }
        }
        return events
    }
}
