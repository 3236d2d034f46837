import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import MessagingCore

/// Replays a phone-side Connect IQ capture into ``MessagingCore`` and writes what the core does as
/// `messaging` trace events, comparing every frame the core writes with the phone's captured write.
///
/// Inputs, each at its captured instant:
/// - the app's API calls: frames of an `api-calls` interface (one JSON record each), and the
///   manifest's hand-written `messaging.api_calls` (fired as deadlines at their `t_ms`);
/// - the BLE link: LE Connection Complete gives a link's peer address (mapped to a device by
///   `bind_device` records or the manifest's `messaging.devices`); the ATT MTU exchange its write
///   size; the acknowledged subscription to the notify characteristic brings the link up
///   (``MessagingCore/linkConnected(_:maxWriteLength:now:)``, as the live host does when its bridge
///   reports `connected`); Disconnection Complete brings it down;
/// - the watch's notifications on the Connect IQ notify characteristic (strict and off modes; in
///   responder mode only the watch's own initiatives — see below).
///
/// Outputs: every ``MessagingAction/write(_:_:)`` goes to the ``FrameMatcher`` against the phone's
/// captured writes on the Connect IQ write characteristic (`frame_emitted`, `frame_matched`,
/// `frame_diverged`); every event becomes a trace event (``MessagingTrace``).
///
/// Encryption keys: the core's key source is a ``ScriptedKeySource`` over the keys of the phone's
/// captured key packets, in order, so the core's ciphertext equals the captured one.
///
/// Feed order: when the `api-calls` records carry `link_inputs` (a live host wrote them), calls
/// and link inputs (a link up, a notification, a link down) reach the core in the order the live
/// core got them, whatever their timestamps say (``FeedOrderQueue``; not in responder mode, where
/// the watch's answers follow the core's writes instead).
///
/// Responder mode: a captured watch packet that answers something (a command answer, an ack) is
/// not fed at its captured instant; instead, each time the core writes a packet that asks for an
/// answer, the next captured answer of the matching kind on that device is delivered after the
/// delay it had in the capture. The watch's own initiatives (opening or closing a connection, its
/// transfers) are still fed at their captured instants.
public struct MessagingAdapter: CoreAdapter {
    /// Always `messaging`.
    public let core = MessagingTrace.core
    /// The adapter reads ATT records and HCI link events.
    public var dissectsFrames: Bool { true }
    /// The core under test.
    public private(set) var messaging: MessagingCore
    /// The output comparison.
    public var matcher: FrameMatcher { skeleton.matcher }
    /// How emitted frames are compared.
    public var matching: FrameMatchingMode { skeleton.matching }

    private struct Link {
        var peer: String
        var mtu = ATTMTUExchange()
        var up = false
        /// The device bound to `peer` and its trace text, fixed when the link comes up (resolving
        /// them per packet parsed and printed a UUID for every frame).
        var device: (id: DeviceID, text: String)?
    }

    private var links: [UInt16: Link] = [:]
    private var deviceTexts: [DeviceID: String] = [:]
    private var deviceByPeer: [String: String] = [:]
    private let manifestDevices: [ManifestMessagingDevice]
    private var manualCalls: [ManifestAPICall]
    private var nextManualCall = 0
    private var responder: MessagingResponder?
    /// No `api-calls` interface will say when Bluetooth came up (an imported capture): it is taken
    /// as ready from the first BLE frame.
    private var assumeBluetoothReady: Bool
    private var counts = (notifications: 0, phoneWrites: 0, unmappedLinks: 0)
    /// What the core is fed from the link, in the live host's terms: what ``FeedOrderQueue`` orders
    /// against the calls.
    private enum LinkInput: Equatable {
        case connected(DeviceID, maxWrite: Int)
        case notification(DeviceID, [UInt8])
        case disconnected(DeviceID)
    }
    /// A call waits in the feed order as its record and where it came from: it is read only when
    /// applied, as a `bind_device` before it may decide its device.
    private typealias RecordedCall = (record: [String: TraceValue], label: String)
    /// API records, feed order, frame matching and the summary's shared half.
    private var skeleton: CoreAdapterSkeleton<LinkInput, RecordedCall>

    /// An adapter for a set with the given manifest section, settings and capture prescan.
    public init(
        section: ManifestMessaging = .init(), overrides: MessagingOverrides? = nil, matching: FrameMatchingMode = .strict,
        prescan: MessagingCapturePrescan = .init(), gattHandles: [ManifestGATTHandle] = [], faults: PeerFrameFaults = .init(),
        hasAPICallsInterface: Bool = false, feedOrder: FeedOrderPrescan = .init()
    ) {
        self.assumeBluetoothReady = !hasAPICallsInterface
        let settings = (section.settings ?? MessagingOverrides()).overridden(by: overrides)
        // The prescan keeps only 16-byte keys, so the scripted source accepts them; the seeded
        // fallback covers keys the recorded phone never sent (a core that transfers more).
        let keys: any EncryptionKeySource = (try? ScriptedKeySource(keys: prescan.keys.filter { $0.count == 16 }, fallbackSeed: Self.fallbackKeySeed))
            ?? SeededKeySource(seed: Self.fallbackKeySeed)
        self.messaging = MessagingCore(configuration: Self.configuration(applying: settings), keySource: keys)
        // Records without `core` are the Connect IQ adapter's (they predate the member); in
        // responder mode the watch's answers follow the core's writes, so no live order applies.
        self.skeleton = CoreAdapterSkeleton(core: MessagingTrace.core, matching: matching,
                                            matcher: FrameMatcher(core: MessagingTrace.core, decode: { MessagingTrace.describePacket($0, from: .phone) }),
                                            feedOrder: feedOrder, keepsFeedOrder: matching != .responder, takesUnlabelledRecords: true)
        self.manifestDevices = section.devices
        for device in section.devices {
            if let address = device.address { deviceByPeer[address.uppercased()] = device.uuid }
        }
        self.manualCalls = section.apiCalls.sorted { $0.tMs < $1.tMs }
        if matching == .responder { responder = MessagingResponder(prescan: prescan, faults: faults) }
    }

    /// Seeds the keys a replayed core draws beyond the captured ones.
    public static let fallbackKeySeed: UInt64 = 0x7E7E_E7E7

    /// The core's defaults with every field `overrides` sets replaced.
    public static func configuration(applying overrides: MessagingOverrides?, to base: MessagingConfiguration = .init()) -> MessagingConfiguration {
        var configuration = base
        guard let overrides else { return configuration }
        if let ms = overrides.stepTimeoutMs { configuration.stepTimeout = .milliseconds(ms) }
        if let ms = overrides.commandTimeoutMs { configuration.commandTimeout = .milliseconds(ms) }
        if let n = overrides.windowSize { configuration.windowSize = n }
        if let n = overrides.firstRetries { configuration.firstRetries = n }
        return configuration
    }

    /// API-call records raw; BLE interfaces dissected; nothing else.
    public func input(for interface: ReplayInterface) -> ReplayInput { .bleCore(for: interface) }

    /// One frame: an API-call record, or HCI.
    public mutating func frame(_ frame: ReplayFrame, bytes _: RawSpan, now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        if frame.interface.carriesAPICalls {
            return apiRecord(frame, now: now)
        }
        // Read through `frame.dissected?` where it lies: binding the frame to a local, and each
        // record in a `for` loop, copied them (a retain and release of every text and array in
        // them) for every frame.
        guard frame.dissected != nil else { return [] }
        var events: [TraceEvent] = []
        if assumeBluetoothReady {
            assumeBluetoothReady = false
            events += perform(messaging.bluetoothStateChanged(ready: true, now: now), now: now)
        }
        switch frame.dissected?.linkChange {
        case .connected(let handle, let peer, _)?:
            links[handle] = Link(peer: peer.uppercased())
        case .disconnected(let handle, _)?:
            if let link = links.removeValue(forKey: handle), link.up, let device = device(for: link.peer) {
                events += feed(.disconnected(device), frame: frame, now: now)
            }
        case nil:
            break
        }
        let recordCount = frame.dissected?.att.count ?? 0
        for index in 0..<recordCount {
            let connectionHandle = frame.dissected!.att[index].connectionHandle
            switch ConnectIQRecordKind.classify(frame.dissected!.att[index]) {
            case .mtu(let client, let server):
                links[connectionHandle, default: Link(peer: "")].mtu.note(client: client, server: server)
            case .subscribed:
                guard var link = links[connectionHandle], !link.up else { continue }
                guard let device = device(for: link.peer) else {
                    counts.unmappedLinks += 1
                    events.append(TraceEvent(timeNs: timeNs, core: core, event: MessagingTrace.Names.violation, fields: [
                        "kind": .string("unmapped_link"), "device": .string(link.peer),
                        "detail": .string("frame \(frame.number): a Connect IQ link to \(link.peer) came up, but no device is bound to that address; add it to the manifest's messaging.devices"),
                    ]))
                    continue
                }
                link.up = true
                link.device = (device, MessagingTrace.deviceText(device))
                links[connectionHandle] = link
                events += feed(.connected(device, maxWrite: link.mtu.maxPayload), frame: frame, now: now)
            case .phoneWrite(let bytes):
                counts.phoneWrites += 1
                guard skeleton.matching != .off else { continue }
                let link = links[connectionHandle]
                let channel = link?.device?.text ?? link.flatMap { device(for: $0.peer) }.map(MessagingTrace.deviceText) ?? link?.peer ?? "?"
                events += skeleton.captured(bytes, channel: channel, frame: frame.number, now: now)
            case .watchNotification(let bytes):
                counts.notifications += 1
                guard let link = links[connectionHandle], let device = link.device?.id ?? device(for: link.peer) else {
                    events.append(TraceEvent(timeNs: timeNs, core: core, event: MessagingTrace.Names.violation, fields: [
                        "kind": .string("unmapped_link"), "device": .string(links[connectionHandle]?.peer ?? "?"),
                        "detail": .string("frame \(frame.number): a Connect IQ notification on a link no device is bound to"),
                    ]))
                    continue
                }
                if let responder, responder.isAnswer(bytes) { continue }
                events += feed(.notification(device, bytes), frame: frame, now: now)
            case .other:
                break
            }
        }
        return events
    }

    /// Its faults live in its responder, which asks them only as it schedules each captured
    /// answer: a copy may take other faults (``CoreAdapter/adoptFaults(_:)``).
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool {
        responder?.adopt(faults)
        return true
    }

    /// The core, the matcher, the responder, the feed order and the adapter's own links, devices
    /// and calls left; the counts its summary reports are left out.
    public func hasSameState(as other: any CoreAdapter) -> Bool {
        guard let other = other as? MessagingAdapter, messaging.hasSameState(as: other.messaging),
              skeleton.hasSameState(as: other.skeleton, sameLink: ==, sameCall: { $0.record == $1.record && $0.label == $1.label }),
              nextManualCall == other.nextManualCall, manualCalls == other.manualCalls, assumeBluetoothReady == other.assumeBluetoothReady,
              deviceTexts == other.deviceTexts, deviceByPeer == other.deviceByPeer, links.count == other.links.count
        else { return false }
        for (handle, link) in links {
            guard let theirs = other.links[handle], link.peer == theirs.peer, link.mtu == theirs.mtu, link.up == theirs.up, link.device?.id == theirs.device?.id,
                  link.device?.text == theirs.device?.text else { return false }
        }
        switch (responder, other.responder) {
        case (nil, nil): return true
        case let (a?, b?): return a.hasSameState(as: b)
        default: return false
        }
    }

    /// When the core, a hand-written API call, a responder delivery or a held input wants time next.
    public var nextDeadline: Duration? {
        let manual = nextManualCall < manualCalls.count ? Self.nanoseconds(ofMilliseconds: manualCalls[nextManualCall].tMs) : nil
        return skeleton.nextDeadline(core: messaging.nextDeadline, manual, responder?.nextDeliveryNs)
    }

    /// Fires what is due: hand-written calls, responder deliveries, the core's timers.
    public mutating func timeout(now: Duration) -> [TraceEvent] {
        let nowNs = now.replayNanoseconds
        var events = deliver(skeleton.releaseDue(now: now), now: now)
        while nextManualCall < manualCalls.count, Self.nanoseconds(ofMilliseconds: manualCalls[nextManualCall].tMs) <= nowNs {
            let manual = manualCalls[nextManualCall]
            nextManualCall += 1
            guard manual.core == "messaging" else { continue }
            var record = manual.arguments.mapValues(Self.traceValue)
            record["call"] = .string(manual.call)
            events += apply(record: record, label: "manifest api_calls[\(nextManualCall - 1)]", now: now)
        }
        while let (device, bytes) = responder?.popDue(nowNs: nowNs) {
            events += perform(messaging.receive(bytes, from: device, now: now), now: now)
        }
        if let actions = messaging.timersDue(now: now) {
            events += perform(actions, now: now)
        }
        return events
    }

    /// Unpaired frames become divergences; then a `summary`.
    public mutating func finish(now: Duration) -> [TraceEvent] {
        let events = deliver(skeleton.releaseAll(), now: now)
        return events + skeleton.finish(now: now, fields: [
            "notifications": .int(Int64(counts.notifications)),
            "phone_writes": .int(Int64(counts.phoneWrites)),
        ])
    }

    // MARK: inputs

    private mutating func apiRecord(_ frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        switch skeleton.readRecord(frame, now: now) {
        case .otherCore, .parsed:
            return []
        case .malformed(let event):
            return [event]
        case .record(let record):
            let label = "frame \(frame.number)"
            return deliver(skeleton.route((record, label), frame: frame.number, record: record, now: now), now: now)
        }
    }

    /// One link input, through the feed order when the capture has one.
    private mutating func feed(_ input: LinkInput, frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        deliver(skeleton.route(input, timestampNs: frame.timestampNs, now: now), now: now)
    }

    private mutating func deliver(_ items: CoreAdapterSkeleton<LinkInput, RecordedCall>.Routed, now: Duration) -> [TraceEvent] {
        var events: [TraceEvent] = []
        for item in items {
            switch item {
            case .link(let input): events += apply(input, now: now)
            case .call(let call): events += apply(record: call.record, label: call.label, now: now)
            }
        }
        return events
    }

    private mutating func apply(_ input: LinkInput, now: Duration) -> [TraceEvent] {
        switch input {
        case .connected(let device, let maxWrite):
            return perform(messaging.linkConnected(device, maxWriteLength: maxWrite, now: now), now: now)
        case .notification(let device, let bytes):
            return perform(messaging.receive(bytes, from: device, now: now), now: now)
        case .disconnected(let device):
            let events = perform(messaging.linkDisconnected(device, now: now), now: now)
            responder?.linkDown(device: device)
            return events
        }
    }

    private mutating func apply(record: [String: TraceValue], label: String, now: Duration) -> [TraceEvent] {
        var record = record
        record["core"] = nil
        let call: MessagingAPICall
        do throws(MessagingAPICallError) {
            call = try MessagingAPICall(record: record, defaultDevice: manifestDevices.count == 1 ? manifestDevices[0].uuid : nil)
        } catch {
            return [skeleton.malformedRecord(source: label, detail: error.description, now: now)]
        }
        skeleton.countCall()
        if case .bindDevice(let device, let peer) = call { deviceByPeer[peer.uppercased()] = device }
        let (actions, events) = messaging.apply(call, now: now)
        return events + perform(actions, now: now)
    }

    private mutating func perform(_ actions: [MessagingAction], now: Duration) -> [TraceEvent] {
        let timeNs = now.replayNanoseconds
        var events: [TraceEvent] = []
        for action in actions {
            switch action {
            case .write(let device, let bytes):
                // Stored only the first time: writing it back for every packet hashed the UUID twice.
                let channel: String
                if let known = deviceTexts[device] {
                    channel = known
                } else {
                    channel = MessagingTrace.deviceText(device)
                    deviceTexts[device] = channel
                }
                if skeleton.matching == .off {
                    events.append(FrameMatcher.emittedEvent(core: core, channel: channel, bytes: bytes,
                                                            packet: MessagingTrace.describePacket(bytes, from: .phone), timeNs: timeNs))
                } else {
                    events += skeleton.emitted(bytes, channel: channel, now: now)
                }
                if let unanswered = responder?.coreWrote(bytes, device: device, timeNs: timeNs) {
                    events.append(TraceEvent(timeNs: timeNs, core: core, event: .noRecordedAnswer, fields: [
                        "device": .string(channel),
                        "detail": .string("the core sent \(MessagingResponder.commandName(unanswered)) and the recording holds no answer left for it; "
                            + "the core meets its own timeout, as against a watch that stays silent"),
                    ]))
                }
            default:
                events += MessagingTrace.events(for: action, timeNs: timeNs)
            }
        }
        return events
    }

    private func device(for peer: String) -> DeviceID? {
        if let uuid = deviceByPeer[peer] { return MessagingTrace.deviceID(uuid) }
        if deviceByPeer.isEmpty, manifestDevices.count == 1 { return MessagingTrace.deviceID(manifestDevices[0].uuid) }
        return nil
    }

    private static func traceValue(_ value: ManifestValue) -> TraceValue {
        switch value {
        case .null: .null
        case .bool(let b): .bool(b)
        case .int(let i): .int(i)
        case .double(let d): .double(d)
        case .string(let s): .string(s)
        case .array(let a): .array(a.map(traceValue))
        case .object(let o): .object(o.mapValues(traceValue))
        }
    }

    /// A hand-written call's `t_ms` as virtual nanoseconds, saturating: the section's schema
    /// refuses what is not a finite number from 0 to 10¹² ms, and this keeps a value that got past
    /// it (an adapter made in code) from trapping in the conversion.
    static func nanoseconds(ofMilliseconds ms: Double) -> Int64 {
        let ns = (ms * 1_000_000).rounded()
        guard ns.isFinite else { return ns < 0 ? .min : .max }
        if ns >= 9.2e18 { return .max }
        if ns <= -9.2e18 { return .min }
        return Int64(ns)
    }
}
