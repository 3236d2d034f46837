import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import SessionCore

/// Replays one side of a session-link capture (docs/session-link.md) into ``SessionCore`` and
/// writes what the core does as `session` trace events, comparing every frame the core writes with
/// the frame that side wrote in the capture.
///
/// The capture is one host's HCI (the phone's or the watch's, recorded by its H4 tap). The replayed
/// side is the manifest's `session.role` (else the first `start` record's). Inputs, each at its
/// captured instant:
/// - the host's records on the `api-calls` interface (``SessionAPICall``): `start` creates the core
///   (or, `restored`, rebuilds it from the last snapshot it handed out, as the host's store held
///   it), the app's calls, the host's pairing and app-state facts;
/// - the link: the acknowledged subscription to the notify characteristic brings it up
///   (`maxPayload` = ATT MTU − 3 from the capture's MTU exchange), Disconnection Complete brings it
///   down;
/// - the other side's frames: the phone's writes when replaying the watch, the watch's
///   notifications when replaying the phone.
///
/// Feed order: when the `api-calls` records carry `link_inputs` (a live host wrote them), the
/// records and the link inputs (link up, a peer frame, link down) reach the core in the order the
/// live core got them, whatever their timestamps say (``FeedOrderQueue``).
///
/// Outputs: every ``SessionAction/write(_:)`` goes to the ``FrameMatcher`` against the replayed
/// side's own captured frames (`strict` and `responder`), or is only written (`off`).
///
/// Responder mode (``SessionResponder``): the peer's answers (WELCOME, ACK, STATUS-ACK, replies)
/// are not fed at their captured instants but when the core's frames ask for them, made by
/// protocol when the capture holds none (`responder_made`); under faults the peer also resends
/// what the core did not acknowledge. The core's random numbers
/// (incarnation, epochs, nonces) come from the seed the `start` record names, so its HELLOs equal
/// the captured ones.
public struct SessionAdapter: CoreAdapter {
    /// Always `session`.
    public let core = SessionTrace.core
    /// The adapter reads ATT records and HCI link events.
    public var dissectsFrames: Bool { true }
    /// The core under test and what its host keeps.
    public private(set) var driver: SessionDriver
    /// The output comparison.
    public var matcher: FrameMatcher { skeleton.matcher }
    /// How emitted frames are compared (`strict`, `responder` or `off`).
    public var matching: FrameMatchingMode { skeleton.matching }
    /// The side replayed; `nil` until the manifest or a `start` record says.
    public private(set) var role: SessionRole?

    private struct Link {
        var mtu = ATTMTUExchange()
        var up = false
    }

    private var links: [UInt16: Link] = [:]
    private let section: ManifestSession?
    private let prescan: SessionCapturePrescan?
    private var faults: PeerFrameFaults
    private var responder: SessionResponder?
    private var counts = (peerFrames: 0, ownFrames: 0, linksUp: 0)
    /// What the core is fed from the link, as the live host counts it.
    private enum LinkInput {
        case up(maxPayload: Int)
        case frame([UInt8])
        /// A responder's answer, ready for the core.
        case answer([UInt8])
        case down
    }
    /// API records, feed order, frame matching and the summary's shared half.
    private var skeleton: CoreAdapterSkeleton<LinkInput, SessionAPICall>

    /// An adapter for a set with the given manifest section and settings.
    public init(section: ManifestSession?, overrides: SessionOverrides? = nil, matching: FrameMatchingMode = .strict,
                prescan: SessionCapturePrescan? = nil, faults: PeerFrameFaults = .init(), feedOrder: FeedOrderPrescan = .init()) {
        self.section = section
        self.prescan = matching == .responder ? prescan ?? SessionCapturePrescan() : nil
        self.faults = faults
        self.role = section.flatMap { SessionRole(rawValue: $0.role) }
        let settings = (section?.settings ?? SessionOverrides()).overridden(by: overrides)
        self.driver = SessionDriver(configuration: Self.configuration(applying: settings))
        // A stated window lets the recorded side run further ahead: twice it, as for the 8 frames.
        let reorder = max(Self.reorderWindow, 2 * (settings.windowFrames ?? 0))
        self.skeleton = CoreAdapterSkeleton(core: SessionTrace.core, matching: matching,
                                            matcher: FrameMatcher(core: SessionTrace.core, reorderWindow: reorder, decode: SessionTrace.describeFrame),
                                            feedOrder: feedOrder)
        makeResponder()
    }

    /// The responder, once the replayed side is known.
    private mutating func makeResponder() {
        guard responder == nil, let prescan, let role else { return }
        responder = SessionResponder(prescan: prescan, role: role, faults: faults,
                                     retransmissionTimeout: driver.configuration.retransmissionTimeout,
                                     handshakeTimeout: driver.configuration.handshakeTimeout)
    }

    /// How far out of order the replayed side's frames may come and still pair: the link's window of
    /// 8 frames on each of its lanes, twice (``FrameMatcher/reorderWindow``).
    public static let reorderWindow = 16

    /// The core's defaults with every field `overrides` sets replaced.
    public static func configuration(applying overrides: SessionOverrides?, to base: SessionConfiguration = .init()) -> SessionConfiguration {
        guard let overrides else { return base }
        return SessionConfiguration(
            handshakeTimeout: overrides.handshakeTimeoutMs.map { .milliseconds($0) } ?? base.handshakeTimeout,
            retransmissionTimeout: overrides.retransmissionTimeoutMs.map { .milliseconds($0) } ?? base.retransmissionTimeout,
            messageReplyTimeout: overrides.messageReplyTimeoutMs.map { .milliseconds($0) } ?? base.messageReplyTimeout,
            complicationTransfersPerWindow: overrides.complicationTransfersPerWindow ?? base.complicationTransfersPerWindow,
            complicationBudgetWindow: overrides.complicationBudgetWindowS.map { .seconds($0) } ?? base.complicationBudgetWindow,
            maximumMessageBytes: base.maximumMessageBytes, maximumUserInfoBytes: base.maximumUserInfoBytes,
            maximumApplicationContextBytes: base.maximumApplicationContextBytes, maximumFileBytes: base.maximumFileBytes,
            windowFrames: overrides.windowFrames ?? base.windowFrames,
            compactFrames: overrides.compactFrames ?? base.compactFrames)
    }

    /// API-call records raw; BLE interfaces the manifest gives to `session` dissected.
    public func input(for interface: ReplayInterface) -> ReplayInput { .bleCore(for: interface) }

    /// One frame: an API-call record, or HCI.
    public mutating func frame(_ frame: ReplayFrame, bytes _: RawSpan, now: Duration) -> [TraceEvent] {
        skeleton.saw(frame)
        if frame.interface.carriesAPICalls {
            return apiRecord(frame, now: now)
        }
        responder?.frameFed(frame.number)
        guard let dissected = frame.dissected else { return [] }
        var events: [TraceEvent] = []
        if driver.core == nil { events += startFromManifest(now: now) }
        switch dissected.linkChange {
        case .connected(let handle, _, _)?:
            links[handle] = Link()
        case .disconnected(let handle, _)?:
            if let link = links.removeValue(forKey: handle), link.up {
                events += feed(.down, frame: frame, now: now)
            }
        case nil:
            break
        }
        guard let role else { return events }
        for record in dissected.att {
            switch SessionRecordKind.classify(record, recordedBy: role) {
            case .mtu(let client, let server):
                links[record.connectionHandle, default: Link()].mtu.note(client: client, server: server)
            case .subscribed:
                var link = links[record.connectionHandle, default: Link()]
                guard !link.up else { continue }
                link.up = true
                links[record.connectionHandle] = link
                counts.linksUp += 1
                events += feed(.up(maxPayload: link.mtu.maxPayload), frame: frame, now: now)
            case .ownFrame(let bytes):
                counts.ownFrames += 1
                events += skeleton.captured(bytes, channel: SessionTrace.channel, frame: frame.number, now: now)
            case .peerFrame(let captured):
                counts.peerFrames += 1
                // The responder works with full frames (``CapturedCompactFrames``); strict replay
                // feeds the frame as captured.
                let bytes = responder?.wholeFrame(captured, capturedIn: frame.number) ?? captured
                // An answer comes from the responder when the core asks for it (``SessionResponder``),
                // and counts as a link input then, not here.
                if let responder, responder.isAnswer(bytes, capturedIn: frame.number) { continue }
                events += feed(.frame(bytes), frame: frame, now: now)
            case .other:
                break
            }
        }
        return events
    }

    /// Its faults are asked only as frames and captured answers are scheduled: a copy may take
    /// other faults (``CoreAdapter/adoptFaults(_:)``), unless they would turn its responder's
    /// resends on or off.
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool {
        if var responder {
            guard responder.adopt(faults) else { return false }
            self.responder = responder
        } else if faults.isEmpty != self.faults.isEmpty {
            return false
        }
        self.faults = faults
        return true
    }

    /// The core's next timer, the earliest instant a held input is released, or the responder's
    /// next delivery.
    public var nextDeadline: Duration? {
        skeleton.nextDeadline(core: driver.nextDeadline, responder?.nextDueNs)
    }

    /// Releases held inputs that waited too long, delivers the responder's answers due, then fires
    /// the core's timers.
    public mutating func timeout(now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events = deliver(skeleton.releaseDue(now: now), now: now)
        while let (bytes, made) = popResponderDelivery(nowNs: timeNs) {
            if let made {
                events.append(TraceEvent(timeNs: timeNs, core: core, event: .responderMade, fields: [
                    "what": .string(made), "frame": .string(SessionTrace.describeFrame(bytes)),
                ]))
            }
            // Through the feed order, as a captured frame would go: the captured calls' counts of
            // link inputs are the live core's, answers included.
            events += deliver(skeleton.routeAnswer(.answer(bytes), now: now), now: now)
        }
        guard let actions = driver.timersDue(now: now) else { return events }
        return events + perform(actions, now: now)
    }

    /// The responder's next delivery due, prepared for the core, and why it was made (`nil`: captured).
    private mutating func popResponderDelivery(nowNs: Int64) -> ([UInt8], String?)? {
        guard var responder else { return nil }
        defer { self.responder = responder }
        guard let delivery = responder.popDue(nowNs: nowNs), let bytes = delivery.bytes else { return nil }
        return (responder.prepare(bytes), delivery.made)
    }

    /// Unpaired frames become divergences; then a `summary`.
    public mutating func finish(now: Duration) -> [TraceEvent] {
        let events = deliver(skeleton.releaseAll(), now: now)
        return events + skeleton.finish(now: now, fields: [
            "role": role.map { .string($0.rawValue) } ?? .null,
            "peer_frames": .int(Int64(counts.peerFrames)),
            "own_frames": .int(Int64(counts.ownFrames)),
            "links": .int(Int64(counts.linksUp)),
        ], responderMade: responder?.made, reportsUnsent: true)
    }

    // MARK: inputs

    /// A capture without a `start` record (imported): the core is made from the manifest's
    /// `session` section when the first HCI frame comes.
    private mutating func startFromManifest(now: Duration) -> [TraceEvent] {
        guard let section, let role, let identityText = section.identity, let identity = SessionDeviceID(identityText) else { return [] }
        var events: [TraceEvent] = []
        let (startActions, startEvents) = driver.apply(.start(role: role, identity: identity, seed: section.seed ?? 0, restored: false), now: now)
        events += startEvents + perform(startActions, now: now)
        if let peerText = section.pairedPeer, let peer = SessionDeviceID(peerText) {
            let (actions, callEvents) = driver.apply(.setPaired(peer), now: now)
            events += callEvents + perform(actions, now: now)
        }
        return events
    }

    private mutating func apiRecord(_ frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        switch skeleton.readCall(frame, now: now, decode: { (record) throws(SessionAPICallError) in try SessionAPICall(record: record) }) {
        case .otherCore, .record:
            return []
        case .malformed(let event):
            return [event]
        case .parsed(let call, let record):
            if case .start(let startRole, _, _, _) = call, role == nil {
                role = startRole
                makeResponder()
            }
            return deliver(skeleton.route(call, frame: frame.number, record: record, now: now), now: now)
        }
    }

    private mutating func apply(_ call: SessionAPICall, now: Duration) -> [TraceEvent] {
        let (actions, events) = driver.apply(call, now: now)
        return events + perform(actions, now: now)
    }

    /// One link input, through the feed order when the capture has one.
    private mutating func feed(_ input: LinkInput, frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        deliver(skeleton.route(input, timestampNs: frame.timestampNs, now: now), now: now)
    }

    private mutating func deliver(_ items: CoreAdapterSkeleton<LinkInput, SessionAPICall>.Routed, now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        for item in items {
            switch item {
            case .link(let input): events += apply(input, now: now)
            case .call(let call): events += apply(call, now: now)
            }
        }
        return events
    }

    private mutating func apply(_ input: LinkInput, now: Duration) -> [TraceEvent] {
        switch input {
        case .up(let maxPayload):
            responder?.linkCameUp(nowNs: now.replayNanoseconds, maxPayload: maxPayload)
            return perform(driver.linkUp(maxPayload: maxPayload, now: now), now: now)
        case .frame(let bytes):
            guard var responder else { return perform(driver.receive(bytes, now: now), now: now) }
            // Under faults, a captured frame the real peer would not have sent yet is held back.
            guard responder.admit(bytes, nowNs: now.replayNanoseconds) else {
                self.responder = responder
                return []
            }
            let prepared = responder.prepare(bytes)
            self.responder = responder
            return perform(driver.receive(prepared, now: now), now: now)
        case .answer(let bytes):
            return perform(driver.receive(bytes, now: now), now: now)
        case .down:
            var events: [TraceEvent] = []
            events += skeleton.linkDown(channel: SessionTrace.channel, now: now)
            responder?.linkWentDown(nowNs: now.replayNanoseconds)
            return events + perform(driver.linkDown(now: now), now: now)
        }
    }

    private mutating func perform(_ actions: [SessionAction], now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events: [TraceEvent] = []
        for action in actions {
            if case .write(let bytes) = action { responder?.coreWrote(bytes, nowNs: timeNs) }
            if case .event(.handshakeCompleted) = action { responder?.bound(nowNs: timeNs) }
            if case .write(let bytes) = action, skeleton.matching != .off {
                events += skeleton.emitted(bytes, channel: SessionTrace.channel, now: now)
            } else {
                events += SessionTrace.events(for: action, timeNs: timeNs)
            }
        }
        return events
    }
}

/// What one ATT record of a session-link capture is, seen from the host that recorded it.
public enum SessionRecordKind: Sendable, Hashable {
    /// A frame the recorded side wrote (the phone's write, or the watch's notification).
    case ownFrame([UInt8])
    /// A frame of the other side.
    case peerFrame([UInt8])
    /// The phone's subscription to the notify characteristic was acknowledged (Write Response to
    /// its CCCD): the link is up.
    case subscribed
    /// ATT MTU exchange: what the client (phone) asked and the server (watch) answered.
    case mtu(client: UInt16?, server: UInt16?)
    /// Nothing the link cares about.
    case other

    /// Classifies `record` of a capture made by `recordedBy`'s host. Records of unknown direction
    /// (H4 without direction flags) are taken by opcode: writes from the phone, notifications from
    /// the watch.
    public static func classify(_ record: ATTRecord, recordedBy role: SessionRole) -> SessionRecordKind {
        // Seen from the recording host: which direction the phone's PDUs take.
        let phoneSends: HCIDirection = role == .phone ? .sent : .received
        let watchSends: HCIDirection = role == .phone ? .received : .sent
        func from(_ expected: HCIDirection) -> Bool { record.direction == expected || record.direction == .unknown }
        if let offer = ATTMTUExchange.offer(in: record) { return .mtu(client: offer.client, server: offer.server) }
        switch record.pdu {
        case .writeCommand(_, let frame), .writeRequest(_, let frame): // the phone writes a frame
            guard from(phoneSends), record.descriptorUUID == nil, record.characteristicUUID == SessionLinkUUIDs.write else { return .other }
            return role == .phone ? .ownFrame(frame) : .peerFrame(frame)
        case .handleValueNotification(_, let frame): // the watch sends a frame
            guard from(watchSends), record.characteristicUUID == SessionLinkUUIDs.notify else { return .other }
            return role == .watch ? .ownFrame(frame) : .peerFrame(frame)
        case .writeResponse: // from the watch: answers the phone's CCCD write
            guard from(watchSends), record.characteristicUUID == SessionLinkUUIDs.notify,
                  record.descriptorUUID == .clientCharacteristicConfiguration else { return .other }
            return .subscribed
        default:
            return .other
        }
    }
}
