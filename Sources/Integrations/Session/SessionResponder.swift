import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import SessionCore

/// What replay must know about a session-link capture before it starts, for responder mode: every
/// session-link frame of either side, in capture order, with its frame number and virtual time.
public struct SessionCapturePrescan: Sendable {
    /// One frame on the session link.
    public struct LinkFrame: Sendable, Hashable {
        /// Its frame number.
        public var frame: Int
        /// Its virtual time.
        public var timeNs: Int64
        /// `true` for the phone's write, `false` for the watch's notification.
        public var fromPhone: Bool
        /// The ATT value.
        public var bytes: [UInt8]
    }

    /// Every session-link frame, in capture order.
    public var frames: [LinkFrame] = []
    /// The virtual times of the capture's own link drops (Disconnection Complete), in order.
    public var linkDrops: [Int64] = []

    /// An empty prescan.
    public init() {}

    /// Reads the capture once, dissecting its BLE interfaces as replay does.
    public static func scan(capturePath: String, interfaces: [ManifestInterface], gattHandles: [ManifestGATTHandle]) throws(CaptureError) -> SessionCapturePrescan {
        let reader = try CaptureFile.open(path: capturePath)
        let described = Dictionary(interfaces.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        let named = Dictionary(gattHandles.map { ($0.handle, (service: $0.serviceUUID, characteristic: $0.characteristicUUID)) }, uniquingKeysWith: { a, _ in a })
        var dissectors: [Int: FrameDissector] = [:]
        var result = SessionCapturePrescan()
        var firstNs: Int64?
        while let frame = try reader.next() {
            let start = firstNs ?? frame.timestampNs
            firstNs = start
            let timeNs = max(0, frame.timestampNs &- start)
            guard frame.interfaceIndex < reader.interfaces.count else { continue }
            let linkType = reader.interfaces[frame.interfaceIndex].linkType
            if let interface = described[frame.interfaceIndex], let role = interface.role {
                guard role == .bleHCI || role == .bleMonitor else { continue }
            } else {
                guard linkType == .bluetoothHCIH4WithPHDR || linkType == .bluetoothHCIH4 || linkType == .bluetoothLinuxMonitor else { continue }
            }
            let dissected = dissectors[frame.interfaceIndex, default: ReplayEngine.replayDissector(namedHandles: named)].dissect(frame, linkType: linkType)
            if case .disconnected? = dissected.linkChange { result.linkDrops.append(timeNs) }
            for record in dissected.att {
                // Classified as seen by a phone host; direction is not needed to tell the sides apart:
                // writes are the phone's, notifications the watch's.
                switch record.opcode {
                case 0x52, 0x12:
                    guard record.descriptorUUID == nil, record.characteristicUUID == SessionLinkGATT.writeCharacteristic else { break }
                    result.frames.append(LinkFrame(frame: frame.number, timeNs: timeNs, fromPhone: true, bytes: record.value))
                case 0x1B:
                    guard record.characteristicUUID == SessionLinkGATT.notifyCharacteristic else { break }
                    result.frames.append(LinkFrame(frame: frame.number, timeNs: timeNs, fromPhone: false, bytes: record.value))
                default:
                    break
                }
            }
        }
        return result
    }
}

/// Plays the recorded peer of a session-link capture in responder mode (docs/replay-engine.md,
/// "Responders"): the peer answers the core's frames as they come, and resends what the core did
/// not acknowledge.
///
/// - **Answers** (withheld from their captured instants; the adapter feeds none of them): the
///   WELCOME to a HELLO (phone replayed), the ACKs to the core's data frames, the STATUS-ACK to a
///   STATUS (watch replayed), and replies to the core's messages. Each time the core writes what
///   asks for one, the responder takes the next captured answer that fits — the WELCOME echoing the
///   HELLO's nonce, the ACK of the same channel, id and offset the peer's receiving side gives
///   (a model of the link's receiver, docs/session-link.md "Reliability"), the STATUS-ACK of the
///   same sequence, the reply to the same message id — and delivers it after the delay it had after
///   the core's counterpart in the capture, following the faults' decision for the frame it was
///   captured in. When the capture holds none (an ACK of a retransmission, a WELCOME to a HELLO of
///   a new nonce or to a repeated one), the responder makes the protocol's answer and reports it
///   as a `responder_made` event.
/// - **Initiatives** (the peer's own data items, STATUS, ERROR, CANCEL, the phone's HELLO) are fed
///   by the adapter at their captured instants, as in strict mode. The responder follows each peer
///   data item until the core acknowledges it complete: when the frame that asked for an ACK was
///   lost (a fault dropped it, or the link was down) and no ACK came within the peer's
///   retransmission timeout, it resends the item's frames from the acknowledged offset (a window
///   of them, RETRANSMISSION set), as the peer would; after a new binding it sends the durable items
///   the core has not acknowledged again from their start. Resent frames are `responder_made` too.
///   A frame the capture itself resends in that time (the recorded peer's own retransmission) is
///   left to the capture.
/// - **The phone's handshake timer** (watch replayed): when a fault lost the recorded phone's HELLO
///   and the core wrote no WELCOME for its nonce within the phone's handshake timeout, the
///   responder sends that HELLO again under a new control id, every timeout, as the phone does
///   (docs/session-link.md, "Handshake"), until the WELCOME comes or the capture's phone sends a
///   HELLO of its own.
/// - Control ids: every control frame the core gets from the peer passes ``prepare(_:)``, which
///   renumbers one whose id is not above the last one given (a captured answer delivered after a
///   later one, a made one), so none is dropped as a late copy.
struct SessionResponder: Sendable {
    struct ItemKey: Hashable, Sendable, Comparable {
        var channel: UInt8
        var id: UInt32
        static func < (a: Self, b: Self) -> Bool { (a.channel, a.id) < (b.channel, b.id) }
    }

    /// One delivery to the core: bytes (a captured answer, or made), or, with `bytes` nil, only
    /// the note that the peer sent a frame that a fault lost.
    struct Delivery: Sendable {
        var timeNs: Int64
        var order: Int
        var bytes: [UInt8]?
        /// Why the responder made it; `nil` for a captured answer.
        var made: String?
        /// The peer's frame as the peer sent it (also for a lost one), for its retransmission state.
        var sent: SessionFrame?
        /// The capture frame it was taken from, when it is delivered at its captured instant: it
        /// then keeps its capture order among the frames of that instant (``isHeld(_:)``).
        var capturedFrame: Int? = nil
    }

    private struct Answer: Sendable {
        var frame: Int
        var timeNs: Int64
        var bytes: [UInt8]
        /// After the core's counterpart in the capture.
        var delayNs: Int64
    }

    /// A captured WELCOME (phone replayed): its frames (several at ATT MTU 23) and what it says.
    private struct CapturedWelcome: Sendable {
        var frames: [Answer]
        var welcome: SessionHandshake
        var timeNs: Int64 { frames[0].timeNs }
        var delayNs: Int64 { frames[0].delayNs }
    }

    /// A peer data item the peer has sent and the core has not acknowledged complete.
    private struct Outgoing: Sendable {
        var acked: UInt32 = 0
        var deadlineNs: Int64?
        var resends = 0
        var firstSentNs: Int64
        var needsRestart = false
        /// The responder sends this item's frames itself (a frame of it was lost, a captured frame
        /// came past the window the core had opened, it was held back behind an earlier item, or
        /// it restarted after a binding): captured frames past the window are held back, and each
        /// ACK that advances opens the window again.
        var managed = false
    }

    /// What the peer holds of one of the core's items (the receiver model).
    private struct Incoming: Sendable {
        var total: UInt32
        var held: UInt32
    }

    /// A HELLO of the recorded phone (watch replayed): its frames, and whether a fault lost it.
    private struct PeerHello: Sendable {
        var timeNs: Int64
        var nonce: UInt32
        var frames: [[UInt8]]
        var lost: Bool
    }

    /// The phone's HELLO the responder sends again when its handshake timer runs out.
    private struct HelloRetry: Sendable {
        var nonce: UInt32
        var frames: [[UInt8]]
        var dueNs: Int64
        var resends = 0
    }

    let role: SessionRole
    private var faults: PeerFrameFaults
    private let retransmissionNs: Int64
    private let handshakeNs: Int64
    private let peerMessageLimitNs: Int64 = 10_000_000_000
    /// Without faults the capture holds every resend the recorded peer made: the responder makes none.
    private let resendsEnabled: Bool
    /// Resends of one item before the responder gives it up (the real peer never does).
    static let maximumResends = 30

    // The capture.
    private var welcomes: [UInt32: [CapturedWelcome]] = [:]
    /// Every captured WELCOME, in capture order: a made one copies the watch's latest (a capture
    /// of a watch switch holds two watches).
    private var capturedWelcomes: [CapturedWelcome] = []
    /// Capture frames that carry a later fragment of an answer (a WELCOME in pieces): the adapter
    /// skips them with the answer's first frame.
    private var answerFragments: Set<Int> = []
    private var acks: [[UInt32]: [Answer]] = [:]
    private var statusAcks: [UInt32: [Answer]] = [:]
    /// Reply frames by the message id they answer, each with its delay after the core's message
    /// completed in the capture.
    private var replies: [UInt32: [Answer]] = [:]
    /// The peer's data frames that are initiatives, in capture order, for the retransmission state.
    private var initiatives: [(timeNs: Int64, lost: Bool, sent: SessionFrame)] = []
    private var initiativeCursor = 0
    /// The peer's initiatives that reach the core at their captured instant (no fault moved or
    /// lost them), by capture frame number: an answer due at the same instant, captured after one
    /// of them, waits for it (``isHeld(_:)``).
    private var onTimeInitiatives: [(number: Int, timeNs: Int64)] = []
    /// The last capture frame the adapter has handed over.
    private var lastFedFrame = 0
    /// The indices of the initiatives a fault lost, and the first of them not yet followed.
    private var lostInitiatives: [Int] = []
    private var lostCursor = 0
    /// The recorded phone's HELLOs, in capture order (watch replayed).
    private var peerHellos: [PeerHello] = []
    private var peerHelloCursor = 0
    private var helloRetry: HelloRetry?
    /// First copies of every peer data item's frames, by offset (what a resend sends again).
    private var itemFrames: [ItemKey: [UInt32: SessionFrame]] = [:]
    /// Captured instants (faults applied) of each peer data item's frames that reach the core.
    private var itemArrivals: [ItemKey: [(timeNs: Int64, offset: UInt32, end: UInt32)]] = [:]
    /// Peer items held back behind an earlier item of their lane the core has not acknowledged
    /// complete (session-link.md, "One item per lane on the wire").
    private var heldItems: Set<ItemKey> = []
    /// Offsets of captured peer frames held back (the capture will not bring them again): the
    /// responder sends them when the window allows.
    private var heldFrames: [ItemKey: Set<UInt32>] = [:]
    private var windowFrames: Int
    private let madeDelayNs: Int64
    /// The core's side's captured frames (bytes by time) and the capture's link drops: a write the
    /// recorded host never sent before the link dropped never reached the peer.
    private let ownFrames: [(timeNs: Int64, bytes: [UInt8])]
    private let linkDrops: [Int64]
    /// The capture's compact frames completed, for the peer frames the adapter feeds.
    private let capturedFrames: CapturedCompactFrames

    // The run.
    private var answerCursors: [String: Int] = [:]
    private var deliveries: [Delivery] = []
    private var order = 0
    private var lastControlID: UInt32 = 0
    /// The control item being renumbered: its pieces after the first take the first's new id.
    private var renumbering: (from: UInt32, to: UInt32)?
    /// The link's frame length (ATT MTU − 3): a made control item goes in pieces of it.
    private var frameLength = SessionLink.maximumFrameLength
    private var outgoing: [ItemKey: Outgoing] = [:]
    private var incoming: [ItemKey: Incoming] = [:]
    private var completed: Set<ItemKey> = []
    /// The core's control items, reassembled (a HELLO is fragmented on a 23-byte MTU).
    private var coreAssembler = ControlAssembler()
    /// What the peer's receiving side holds of the core's frames (the core's compact frames are
    /// completed from it). Kept across bindings: see ``CapturedCompactFrames``.
    private var coreFrames = SessionFrameContext()
    private var answeredNonces: Set<UInt32> = []
    /// Replies waiting for the reply lane, with when each would go, and the reply on it.
    private var heldReplies: [(atNs: Int64, frames: [Answer])] = []
    private var replyInFlight: UInt32?
    private var linkUp = false
    /// Frames the responder made, for the summary.
    private(set) var made = 0

    /// Asks `faults` about the answers it schedules from now on (a fault sweep's fork). `false`
    /// when they would turn its resends on or off, which it decided when it was made.
    mutating func adopt(_ faults: PeerFrameFaults) -> Bool {
        guard faults.isEmpty != resendsEnabled else { return false }
        self.faults = faults
        return true
    }

    init(prescan: SessionCapturePrescan, role: SessionRole, faults: PeerFrameFaults = .init(), retransmissionTimeout: Duration = .seconds(2),
         handshakeTimeout: Duration = .seconds(3)) {
        self.role = role
        self.faults = faults
        self.retransmissionNs = retransmissionTimeout.replayNanoseconds
        self.handshakeNs = handshakeTimeout.replayNanoseconds
        self.resendsEnabled = !faults.isEmpty
        let phoneIsCore = role == .phone
        var ownFrames: [(timeNs: Int64, frame: SessionFrame)] = []
        var lastHello: [UInt32: Int64] = [:]
        var lastStatus: [UInt32: Int64] = [:]
        var messageCompleted: [UInt32: Int64] = [:]
        var helloWindow: UInt16?
        var welcomeWindow: UInt16?
        var controlBuffers = ControlAssembler()
        var peerControl = ControlAssembler()
        /// The peer's control frames of an item not yet complete, by control id (a HELLO or a
        /// WELCOME in pieces at ATT MTU 23).
        var peerControlFrames: [UInt32: [(frame: Int, timeNs: Int64, bytes: [UInt8])]] = [:]
        var ackDelays: [Int64] = []
        /// The message each reply item answers, from its first frame (reply ids restart with the
        /// peer's process: the latest first frame wins).
        var replyTo: [UInt32: UInt32] = [:]
        var window = SessionLink.windowFrames
        // Compact frames are read as the full frames they stand for (``CapturedCompactFrames``).
        let expanded = CapturedCompactFrames(prescan.frames)
        for captured in expanded.frames {
            guard let frame = Self.decodeFrame(captured.bytes) else { continue }
            let own = captured.fromPhone == phoneIsCore
            if own {
                ownFrames.append((captured.timeNs, frame))
                if frame.channel == .control, let control = controlBuffers.add(frame) {
                    switch control {
                    case .hello(let hello):
                        lastHello[hello.nonce] = captured.timeNs
                        if let stated = hello.window { helloWindow = stated }
                    case .status(let sequence, _):
                        lastStatus[sequence] = captured.timeNs
                    case .welcome(let welcome):
                        if let stated = welcome.window { welcomeWindow = stated }
                    default: break
                    }
                } else if (frame.channel == .message || frame.channel == .messageData), frame.flags.contains(.last) {
                    messageCompleted[frame.id] = messageCompleted[frame.id] ?? captured.timeNs
                }
                continue
            }
            if frame.channel == .control {
                // The peer's control items are followed whole, fragments too: at ATT MTU 23 a HELLO
                // and a WELCOME come in pieces (and the handshake timer resends every piece).
                peerControlFrames[frame.id, default: []].append((captured.frame, captured.timeNs, captured.bytes))
                guard let control = peerControl.add(frame) else { continue }
                let parts = peerControlFrames.removeValue(forKey: frame.id) ?? [(captured.frame, captured.timeNs, captured.bytes)]
                let single = parts.count == 1
                switch control {
                case .hello(let hello) where !phoneIsCore:
                    if let stated = hello.window { helloWindow = stated }
                    let lost = parts.contains { part in
                        faults.deliveries(ofFrame: part.frame, kind: .write, capturedAt: .nanoseconds(part.timeNs)).isEmpty
                    }
                    peerHellos.append(PeerHello(timeNs: captured.timeNs, nonce: hello.nonce, frames: parts.map(\.bytes), lost: lost))
                case .welcome(let welcome) where phoneIsCore:
                    if let stated = welcome.window { welcomeWindow = stated }
                    // The pieces keep their captured spacing after the first.
                    let start = parts[0].timeNs
                    let delay = max(0, lastHello[welcome.nonce].map { start - $0 } ?? 0)
                    let answer = CapturedWelcome(frames: parts.map { part in
                        Answer(frame: part.frame, timeNs: part.timeNs, bytes: part.bytes, delayNs: delay + (part.timeNs - start))
                    }, welcome: welcome)
                    welcomes[welcome.nonce, default: []].append(answer)
                    capturedWelcomes.append(answer)
                    for part in parts.dropFirst() { answerFragments.insert(part.frame) }
                case .ack(let channel, let id, let received) where single:
                    // The core's frame it answers: the latest of the item that ends where it says.
                    let item = ownFrames.last { $0.frame.channel == channel && $0.frame.id == id && Self.end(of: $0.frame) == received }
                        ?? ownFrames.last { $0.frame.channel == channel && $0.frame.id == id }
                        ?? ownFrames.last
                    let delay = max(0, captured.timeNs - (item?.timeNs ?? captured.timeNs))
                    ackDelays.append(delay)
                    acks[[UInt32(channel.rawValue), id, received], default: []].append(
                        Answer(frame: captured.frame, timeNs: captured.timeNs, bytes: captured.bytes, delayNs: delay))
                case .statusAck(let sequence) where single && !phoneIsCore:
                    let delay = lastStatus[sequence].map { captured.timeNs - $0 } ?? 0
                    statusAcks[sequence, default: []].append(Answer(frame: captured.frame, timeNs: captured.timeNs, bytes: captured.bytes, delayNs: max(0, delay)))
                default:
                    break
                }
                continue
            }
            let key = ItemKey(channel: frame.channel.rawValue, id: frame.id)
            if itemFrames[key]?[frame.offset] == nil { itemFrames[key, default: [:]][frame.offset] = frame }
            if frame.channel == .messageReply {
                // A reply answers the message its first frame names; its frames keep their spacing.
                if frame.flags.contains(.first), frame.bytes.count >= 4 { replyTo[frame.id] = Self.u32(frame.bytes, 0) }
                guard let message = replyTo[frame.id] else { continue }
                let delay = messageCompleted[message].map { captured.timeNs - $0 } ?? 0
                replies[message, default: []].append(Answer(frame: captured.frame, timeNs: captured.timeNs, bytes: captured.bytes, delayNs: max(0, delay)))
                continue
            }
            // The peer sent it at its captured instant, whatever the link did with it; a frame late
            // by more than the retransmission timeout counts as lost to the peer (its timer resends
            // it first), and still arrives late.
            let fates = faults.deliveries(ofFrame: captured.frame, kind: .notification, capturedAt: .nanoseconds(captured.timeNs))
            let lateNs = fates.first?.replayNanoseconds ?? 0
            initiatives.append((captured.timeNs, fates.isEmpty || lateNs > retransmissionNs, frame))
            if fates.count == 1, lateNs == 0 { onTimeInitiatives.append((captured.frame, captured.timeNs)) }
            // A copy a fault made late is not the recorded peer resending it.
            if !fates.isEmpty, lateNs == 0 { itemArrivals[key, default: []].append((captured.timeNs, frame.offset, Self.end(of: frame))) }
        }
        initiatives.sort { $0.timeNs < $1.timeNs }
        onTimeInitiatives.sort { $0.number < $1.number }
        var lost: [Int] = []
        for (index, initiative) in initiatives.enumerated() where initiative.lost { lost.append(index) }
        lostInitiatives = lost
        // A phone that states a window states it in every other HELLO of a nonce (session-link.md,
        // "Handshake"): a stated one counts; the link's window is the smaller of the two sides'.
        if let helloWindow, let welcomeWindow { window = Int(min(helloWindow, welcomeWindow)) }
        self.windowFrames = max(1, window)
        self.linkDrops = prescan.linkDrops
        self.ownFrames = prescan.frames.filter { $0.fromPhone == phoneIsCore }.map { ($0.timeNs, $0.bytes) }
        self.capturedFrames = expanded
        self.madeDelayNs = ackDelays.filter { $0 > 0 }.min() ?? 5_000_000
    }

    // MARK: what the adapter asks

    /// The full frame for a peer frame captured in `frame`: a compact one completed as the capture's
    /// order reads it. Every peer frame reaches the core whole in responder mode, since the
    /// responder moves and resends the peer's frames and a compact one would then meet a context
    /// the recorded peer never saw.
    func wholeFrame(_ bytes: [UInt8], capturedIn frame: Int) -> [UInt8] {
        capturedFrames.wholeFrame(bytes, capturedIn: frame)
    }

    /// `true` for a peer frame, captured in frame `captured`, the responder delivers itself (an
    /// answer, or a later piece of one): the adapter skips it.
    func isAnswer(_ bytes: [UInt8], capturedIn captured: Int) -> Bool {
        guard let frame = Self.decodeFrame(bytes) else { return false }
        if frame.channel == .messageReply { return true }
        guard frame.channel == .control else { return false }
        guard frame.flags.contains(.first) else { return answerFragments.contains(captured) }
        guard let op = frame.bytes.first else { return false }
        switch op {
        case 0x02: return role == .phone
        case 0x03: return true
        case 0x07: return role == .watch
        default: return false
        }
    }

    /// A peer frame on its way to the core: a control item whose id is not above the last one
    /// given is renumbered (its copy would be dropped as late), every piece of it alike.
    mutating func prepare(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count >= SessionLink.headerLength, bytes[0] == 0 else { return bytes }
        let id = Self.u32(bytes, 2)
        let newID: UInt32
        if bytes[1] & SessionFrameFlags.first.rawValue != 0 {
            guard id <= lastControlID else {
                lastControlID = id
                renumbering = nil
                return bytes
            }
            lastControlID += 1
            renumbering = (id, lastControlID)
            newID = lastControlID
        } else {
            // A later piece follows its item's first.
            guard let renumbering, renumbering.from == id else { return bytes }
            newID = renumbering.to
        }
        var copy = bytes
        Self.put(newID, into: &copy, at: 2)
        return copy
    }

    /// The link came up, carrying frames of up to `maxPayload` bytes (ATT MTU − 3).
    mutating func linkCameUp(nowNs: Int64, maxPayload: Int = SessionLink.maximumFrameLength) {
        linkUp = true
        frameLength = SessionFrame.clampFrameLength(maxPayload)
        advance(nowNs: nowNs)
    }

    /// The link went down: answers in flight are lost with it; messages and replies are given up;
    /// durable items wait for the next binding.
    mutating func linkWentDown(nowNs: Int64) {
        advance(nowNs: nowNs)
        linkUp = false
        deliveries.removeAll()
        heldReplies.removeAll()
        replyInFlight = nil
        coreAssembler = ControlAssembler()
        for (key, var item) in outgoing {
            if Self.isDurable(key.channel) {
                item.needsRestart = true
                item.deadlineNs = nil
                outgoing[key] = item
            } else {
                outgoing[key] = nil
            }
        }
        incoming = incoming.filter { $0.key.channel == SessionChannel.fileChunk.rawValue }
    }

    /// The core took a handshake: the link is bound. The peer sends its durable items the core has
    /// not acknowledged again from their start.
    mutating func bound(nowNs: Int64) {
        advance(nowNs: nowNs)
        guard resendsEnabled else { return }
        for key in outgoing.keys.sorted() where outgoing[key]?.needsRestart == true {
            outgoing[key]?.needsRestart = false
            outgoing[key]?.acked = 0
            if Self.lane(of: key.channel) != nil {
                // The peer sends the whole item again: every frame past the window waits for an ACK.
                outgoing[key]?.managed = true
                heldFrames[key] = Set(itemFrames[key]?.keys.map { $0 } ?? [])
            }
            guard !captureResends(key, afterNs: nowNs) else { continue }
            resend(key, nowNs: nowNs, retransmission: false, why: "restart_after_binding")
        }
        releaseHeld(nowNs: nowNs)
    }

    /// The core wrote `bytes` at `nowNs`: schedule what the peer answers.
    mutating func coreWrote(_ bytes: [UInt8], nowNs: Int64) {
        advance(nowNs: nowNs)
        guard !neverSent(bytes, nowNs: nowNs), let frame = Self.decodeFrame(bytes, with: &coreFrames) else { return }
        if frame.channel == .control {
            guard let control = coreAssembler.add(frame) else { return }
            coreControl(control, nowNs: nowNs, written: bytes)
            return
        }
        receiveCoreData(frame, nowNs: nowNs, written: bytes)
    }

    /// Whether the core's write at `nowNs` is one the recorded host never sent: the capture's link
    /// drops within a second and the capture has no frame of these bytes from the recorded side
    /// between a second before and the drop (the strict matcher reports it `frame_unsent`). Under
    /// faults the core also writes what the capture never had, so such a write counts as unsent
    /// only when the recorded host sent the same bytes again after the drop (a window it had to
    /// send again after reconnecting).
    private func neverSent(_ bytes: [UInt8], nowNs: Int64) -> Bool {
        guard let drop = capturedDrop(after: nowNs, within: 1_000_000_000),
              !recordedHostWrote(bytes, from: nowNs - 1_000_000_000, through: drop) else { return false }
        return !resendsEnabled || recordedHostWrote(bytes, from: drop + 1, through: .max)
    }

    /// The capture's first link drop at or after `nowNs`, if it comes within `limitNs`.
    private func capturedDrop(after nowNs: Int64, within limitNs: Int64) -> Int64? {
        guard let drop = linkDrops.first(where: { $0 >= nowNs }), drop - nowNs <= limitNs else { return nil }
        return drop
    }

    /// Whether the recorded host wrote exactly `bytes` between `from` and `through` (inclusive).
    private func recordedHostWrote(_ bytes: [UInt8], from: Int64, through: Int64) -> Bool {
        ownFrames.contains { $0.timeNs >= from && $0.timeNs <= through && $0.bytes == bytes }
    }

    /// The adapter has handed over capture frame `number` (and every one before it).
    mutating func frameFed(_ number: Int) {
        lastFedFrame = max(lastFedFrame, number)
    }

    /// Whether `delivery`, due at its captured instant, must wait for a peer initiative captured
    /// before it at that same instant that the adapter has not handed over yet. Without this the
    /// answer, a deadline, would reach the core before the initiative (the engine fires deadlines
    /// before the frames of their instant), which the capture shows the other way round: a reply
    /// and the peer's context read from the controller together reach the core in capture order.
    private func isHeld(_ delivery: Delivery) -> Bool {
        guard let number = delivery.capturedFrame, number > lastFedFrame + 1 else { return false }
        var low = 0
        var high = onTimeInitiatives.count
        while low < high {
            let middle = (low + high) / 2
            if onTimeInitiatives[middle].number <= lastFedFrame { low = middle + 1 } else { high = middle }
        }
        var index = low
        while index < onTimeInitiatives.count, onTimeInitiatives[index].number < number {
            if onTimeInitiatives[index].timeNs == delivery.timeNs { return true }
            if onTimeInitiatives[index].timeNs > delivery.timeNs { return false }
            index += 1
        }
        return false
    }

    /// When the responder wants time next.
    var nextDueNs: Int64? {
        // A delivery held for an initiative of its instant is due again once the adapter has it.
        let delivery = deliveries.first.flatMap { isHeld($0) ? nil : $0.timeNs }
        // A frame a fault lost never reaches the adapter: the responder wakes at its instant to
        // start the peer's timer for it (unless that item's timer already runs: everything else
        // the frame changes waits for the next call, which catches up first).
        guard resendsEnabled else { return delivery }
        let lostInitiative = lostInitiatives[lostCursor...].first { index in
            let sent = initiatives[index].sent
            return outgoing[ItemKey(channel: sent.channel.rawValue, id: sent.id)]?.deadlineNs == nil
        }.map { initiatives[$0].timeNs }
        let lostHello = peerHellos[peerHelloCursor...].first(where: \.lost)?.timeNs
        let deadline = (outgoing.values.compactMap(\.deadlineNs) + [helloRetry?.dueNs, lostInitiative, lostHello].compactMap { $0 }).min()
        switch (delivery, deadline) {
        case let (a?, b?): return min(a, b)
        case let (a?, nil): return a
        case let (nil, b?): return b
        case (nil, nil): return nil
        }
    }

    /// The next delivery due at or before `nowNs` (resends due are made first).
    mutating func popDue(nowNs: Int64) -> Delivery? {
        advance(nowNs: nowNs)
        if let retry = helloRetry, retry.dueNs <= nowNs { resendHello(nowNs: nowNs) }
        for key in outgoing.keys.sorted() {
            guard let item = outgoing[key], let deadline = item.deadlineNs, deadline <= nowNs else { continue }
            outgoing[key]?.deadlineNs = nil
            guard resendsEnabled, linkUp, item.resends < Self.maximumResends else { continue }
            if !Self.isDurable(key.channel), nowNs - item.firstSentNs >= peerMessageLimitNs {
                outgoing[key] = nil
                if key.channel == SessionChannel.messageReply.rawValue, replyInFlight == key.id {
                    replyInFlight = nil
                    releaseReply(nowNs: nowNs)
                }
                continue
            }
            if captureResends(key, afterNs: nowNs - Self.captureLatencyToleranceNs, withinNs: retransmissionNs) { continue }
            outgoing[key]?.resends += 1
            resend(key, nowNs: nowNs, retransmission: true, why: "retransmission")
        }
        while let first = deliveries.first, first.timeNs <= nowNs, !isHeld(first) {
            deliveries.removeFirst()
            if let sent = first.sent { peerSent(sent, atNs: first.timeNs, lost: first.bytes == nil) }
            if first.bytes != nil { return first }
        }
        return nil
    }

    // MARK: the core's frames

    private mutating func coreControl(_ control: SessionControl, nowNs: Int64, written: [UInt8]) {
        switch control {
        case .hello(let hello) where role == .phone:
            answerHello(hello, nowNs: nowNs)
        case .welcome(let welcome) where role == .watch:
            if helloRetry?.nonce == welcome.nonce { helloRetry = nil }
            dropBelowWatermarks(welcome.watermarks)
        case .ack(let channel, let id, let received):
            let key = ItemKey(channel: channel.rawValue, id: id)
            if received == SessionLink.complete, channel == .messageReply, replyInFlight == id {
                replyInFlight = nil
                releaseReply(nowNs: nowNs)
            }
            guard var item = outgoing[key] else { return }
            if received == SessionLink.complete {
                outgoing[key] = nil
                releaseHeld(nowNs: nowNs)
                return
            }
            let advanced = received > item.acked
            if advanced || item.deadlineNs == nil { item.deadlineNs = nowNs + retransmissionNs }
            item.acked = received
            outgoing[key] = item
            if advanced, resendsEnabled { fillWindow(key, nowNs: nowNs) }
        case .error(let channel, let id, _), .cancel(let channel, let id):
            outgoing[ItemKey(channel: channel.rawValue, id: id)] = nil
            releaseHeld(nowNs: nowNs)
            if channel == .messageReply, replyInFlight == id {
                replyInFlight = nil
                releaseReply(nowNs: nowNs)
            }
        case .status(let sequence, _) where role == .watch:
            let made = SessionControl.statusAck(sequence: sequence)
            deliverAnswer(key: "status-ack \(sequence)", captured: statusAcks[sequence], nowNs: nowNs, written: written, make: made, what: "status_ack")
        default:
            break
        }
    }

    private mutating func answerHello(_ hello: SessionHandshake, nowNs: Int64) {
        dropBelowWatermarks(hello.watermarks)
        let cursorKey = "welcome \(hello.nonce)"
        let list = welcomes[hello.nonce] ?? []
        let cursor = answerCursors[cursorKey, default: 0]
        if cursor < list.count {
            answerCursors[cursorKey] = cursor + 1
            answeredNonces.insert(hello.nonce)
            var welcome = list[cursor].welcome
            let frames = list[cursor].frames
            let start = Self.answerTime(capturedNs: frames[0].timeNs, delayNs: frames[0].delayNs, nowNs: nowNs)
            let held = fileResume() ?? (0, 0)
            if resendsEnabled, welcome.fileResumeID != held.0 || welcome.fileResumeOffset != held.1 {
                // A fault changed what the watch holds of the file it would resume (a chunk lost,
                // a transfer that never reached it): the WELCOME says what it holds now, as the
                // real watch's would. It travels as the captured one would, or is lost with it.
                var lateNs: Int64 = 0
                for answer in frames {
                    guard let first = faults.deliveries(ofFrame: answer.frame, kind: .notification, capturedAt: .nanoseconds(answer.timeNs)).first else { return }
                    lateNs = max(lateNs, first.replayNanoseconds)
                }
                welcome.fileResumeID = held.0
                welcome.fileResumeOffset = held.1
                enqueue(made: .welcome(welcome), atNs: start + lateNs, what: "welcome_resume")
                return
            }
            // The recorded peer says what it holds of the file it resumes: the model takes it.
            let key = ItemKey(channel: SessionChannel.fileChunk.rawValue, id: welcome.fileResumeID)
            if welcome.fileResumeID != 0, var item = incoming[key] {
                item.held = welcome.fileResumeOffset
                incoming[key] = item
            }
            schedule(frames, from: start, tracked: false)
            return
        }
        // A HELLO the capture holds no WELCOME for: a repeated one (its WELCOME lost) is answered
        // again unchanged; one of a new nonce (a reconnection) gets the recorded watch's WELCOME
        // with the nonce echoed and the watermarks of what the peer holds now.
        let latest = capturedWelcomes.last { $0.timeNs <= nowNs } ?? capturedWelcomes.first
        guard let base = list.last ?? latest else { return }
        var welcome = base.welcome
        if !answeredNonces.contains(hello.nonce) || list.isEmpty {
            welcome.nonce = hello.nonce
            welcome.watermarks = watermarksHeld(over: welcome.watermarks)
            if let (id, offset) = fileResume() {
                welcome.fileResumeID = id
                welcome.fileResumeOffset = offset
            }
            if hello.window == nil { welcome.window = nil }
            // A watch states compact frames only in answer to a HELLO that stated them.
            if !hello.compactFrames { welcome.compactFrames = false }
        }
        answeredNonces.insert(hello.nonce)
        let what = list.isEmpty ? "welcome" : "welcome_repeated"
        enqueue(made: .welcome(welcome), atNs: nowNs + base.delayNs, what: what)
    }

    /// The peer's receiving side takes one of the core's data frames; the ACK it owes, if any.
    private mutating func receiveCoreData(_ frame: SessionFrame, nowNs: Int64, written: [UInt8]) {
        let key = ItemKey(channel: frame.channel.rawValue, id: frame.id)
        var answer: UInt32?
        if completed.contains(key) {
            answer = SessionLink.complete
        } else {
            if frame.flags.contains(.first), (incoming[key]?.held ?? 0) == 0 {
                incoming[key] = Incoming(total: frame.totalOrOffset, held: 0)
            }
            if var item = incoming[key] {
                let count = UInt32(frame.bytes.count)
                if frame.offset < item.held {
                    answer = item.held
                } else if frame.offset == item.held {
                    item.held += count
                    if item.held >= item.total {
                        incoming[key] = nil
                        completed.insert(key)
                        answer = SessionLink.complete
                        if frame.channel == .message || frame.channel == .messageData { scheduleReply(to: frame.id, nowNs: nowNs) }
                    } else {
                        incoming[key] = item
                        if frame.flags.contains(.needsAck) { answer = item.held }
                    }
                } else if frame.flags.contains(.needsAck) {
                    answer = item.held
                }
            } else {
                // No item under way and no FIRST: the core must start over.
                answer = 0
            }
        }
        guard let received = answer else { return }
        let made = SessionControl.ack(channel: frame.channel, id: frame.id, received: received)
        deliverAnswer(key: "ack \(key.channel) \(key.id) \(received)", captured: acks[[UInt32(key.channel), key.id, received]],
                      nowNs: nowNs, written: written, make: made, what: "ack")
    }

    /// The peer's reply lane carries one reply at a time (session-link.md, "One item per lane on the
    /// wire"): a reply waits until the core has acknowledged the one before it complete.
    private mutating func scheduleReply(to message: UInt32, nowNs: Int64) {
        guard let frames = replies.removeValue(forKey: message), let first = frames.first else { return }
        let at = Self.answerTime(capturedNs: first.timeNs, delayNs: first.delayNs, nowNs: nowNs)
        heldReplies.append((at, frames))
        releaseReply(nowNs: nowNs)
    }

    private mutating func releaseReply(nowNs: Int64) {
        guard replyInFlight == nil, !heldReplies.isEmpty else { return }
        let (at, frames) = heldReplies.removeFirst()
        replyInFlight = frames.first.flatMap { Self.decodeFrame($0.bytes) }?.id
        schedule(frames, from: max(at, nowNs), tracked: true)
    }

    // MARK: answers and resends

    /// Delivers the next captured answer for `key`, else makes `make` — unless the write it answers
    /// (`written`) is a recorded one whose answer the link's drop took.
    private mutating func deliverAnswer(key: String, captured: [Answer]?, nowNs: Int64, written: [UInt8], make: SessionControl, what: String) {
        let cursor = answerCursors[key, default: 0]
        if let captured, cursor < captured.count {
            answerCursors[key] = cursor + 1
            schedule(captured[cursor], nowNs: nowNs)
        } else if !answerLostWithLink(written, nowNs: nowNs) {
            enqueue(made: make, atNs: nowNs + madeDelayNs, what: what)
        }
    }

    /// Whether the answer to the core's write `written` at `nowNs` went down with the link: the
    /// capture has these bytes from the recorded host at about this time (the write is its
    /// recorded counterpart), holds no answer to them (the caller looked), and its link dropped
    /// within a retransmission timeout after. The recorded peer's answer was lost with the link, so
    /// the responder makes none either.
    private func answerLostWithLink(_ written: [UInt8], nowNs: Int64) -> Bool {
        let tolerance = Self.captureLatencyToleranceNs
        guard let drop = capturedDrop(after: nowNs, within: retransmissionNs + tolerance) else { return false }
        return recordedHostWrote(written, from: nowNs - tolerance, through: min(nowNs + tolerance, drop))
    }

    /// A captured answer, after its recorded delay, as the faults decide for its frame.
    private mutating func schedule(_ answer: Answer, nowNs: Int64, sent: SessionFrame? = nil) {
        schedule(answer, atNs: Self.answerTime(capturedNs: answer.timeNs, delayNs: answer.delayNs, nowNs: nowNs), sent: sent)
    }

    /// Captured answers of one item, the first at `start` and the rest keeping their captured
    /// spacing after it; `tracked`: each is a peer data frame whose retransmission state the
    /// responder follows (a reply), not a control piece (a WELCOME).
    private mutating func schedule(_ frames: [Answer], from start: Int64, tracked: Bool) {
        guard let first = frames.first else { return }
        for answer in frames {
            schedule(answer, atNs: start + (answer.timeNs - first.timeNs), sent: tracked ? Self.decodeFrame(answer.bytes) : nil)
        }
    }

    /// A captured answer at `at`, as the faults decide for its frame.
    private mutating func schedule(_ answer: Answer, atNs at: Int64, sent: SessionFrame?) {
        let fates = faults.deliveries(ofFrame: answer.frame, kind: .notification, capturedAt: .nanoseconds(answer.timeNs))
        if fates.isEmpty, let sent {
            // Lost: the peer still sent it (its retransmission timer runs from here).
            append(Delivery(timeNs: at, order: 0, bytes: nil, made: nil, sent: sent))
        }
        for (index, delay) in fates.enumerated() {
            let due = at + delay.replayNanoseconds
            append(Delivery(timeNs: due, order: 0, bytes: answer.bytes, made: nil, sent: index == 0 ? sent : nil,
                            capturedFrame: due == answer.timeNs ? answer.frame : nil))
        }
    }

    /// How far the core's write may come before its captured counterpart and still get the answer
    /// at its captured instant: a live host writes a little after the input that caused it (the
    /// capture shows that latency, replay does not), and answering at write + delay would move
    /// every later answer earlier by the sum of those latencies.
    static let captureLatencyToleranceNs: Int64 = 100_000_000

    /// When a captured answer reaches the core written to at `nowNs`: its captured instant when the
    /// core's write is its captured counterpart's (at most ``captureLatencyToleranceNs`` early);
    /// else the captured delay after the write.
    static func answerTime(capturedNs: Int64, delayNs: Int64, nowNs: Int64) -> Int64 {
        let early = (capturedNs - delayNs) - nowNs
        return early >= 0 && early <= captureLatencyToleranceNs ? capturedNs : nowNs + delayNs
    }

    /// A control item the responder makes, in pieces of the link's frame length (``prepare(_:)``
    /// numbers it).
    private mutating func enqueue(made control: SessionControl, atNs: Int64, what: String) {
        for frame in SessionFrame.fragment(channel: .control, id: 0, payload: control.encode(), maxFrameLength: frameLength) {
            made += 1
            append(Delivery(timeNs: atNs, order: 0, bytes: frame.encode(), made: what, sent: nil))
        }
    }

    private mutating func append(_ delivery: Delivery) {
        var delivery = delivery
        order += 1
        delivery.order = order
        deliveries.append(delivery)
        deliveries.sort { ($0.timeNs, $0.order) < ($1.timeNs, $1.order) }
    }

    /// Sends a window of `key`'s frames again from the acknowledged offset.
    private mutating func resend(_ key: ItemKey, nowNs: Int64, retransmission: Bool, why: String) {
        guard let frames = itemFrames[key], let item = outgoing[key] else { return }
        let from = item.acked
        let window = frames.keys.sorted().filter { offset in
            let frame = frames[offset]!
            return offset >= from || Self.end(of: frame) > from
        }.prefix(windowFrames)
        for offset in window {
            guard var frame = frames[offset] else { continue }
            if retransmission { frame.flags.insert(.retransmission) } else { frame.flags.remove(.retransmission) }
            if offset == window.last { frame.flags.insert(.needsAck) }
            heldFrames[key]?.remove(offset)
            made += 1
            append(Delivery(timeNs: nowNs, order: 0, bytes: frame.encode(), made: why, sent: frame))
        }
    }

    /// The sender's rule on an ACK that advances: the frames of a managed item the window now
    /// allows that the core was not sent yet go out (no RETRANSMISSION: they are first copies).
    private mutating func fillWindow(_ key: ItemKey, nowNs: Int64) {
        guard let frames = itemFrames[key], let item = outgoing[key], item.managed, let held = heldFrames[key], !held.isEmpty else { return }
        let offsets = frames.keys.sorted()
        guard let from = offsets.firstIndex(where: { Self.end(of: frames[$0]!) > item.acked }) else { return }
        let limit = min(offsets.count, from + windowFrames)
        let fresh = offsets[from..<limit].filter { held.contains($0) }
        for offset in fresh {
            guard var frame = frames[offset] else { continue }
            heldFrames[key]?.remove(offset)
            frame.flags.remove(.retransmission)
            if offset == fresh.last, limit < offsets.count || frame.flags.contains(.last) { frame.flags.insert(.needsAck) }
            made += 1
            append(Delivery(timeNs: nowNs, order: 0, bytes: frame.encode(), made: "window", sent: frame))
        }
    }

    /// The lane a durable channel's items queue on (one item in flight each; the context is given
    /// up rather than queued), or `nil`.
    static func lane(of channel: UInt8) -> UInt8? {
        switch channel {
        case 0x05: return 0x05
        case 0x06: return 0x06
        case 0x07, 0x08: return 0x07
        default: return nil
        }
    }

    /// An item's place on its lane: by id, a file's metadata before its chunks.
    static func laneOrder(_ key: ItemKey) -> (UInt32, UInt8) { (key.id, key.channel) }

    /// Whether a captured peer data frame reaches the core now (under faults): `false` holds it
    /// back when the real peer would not have sent it yet — an item behind an unacknowledged one of
    /// its lane, or a frame past the window from the acknowledged offset. The
    /// responder sends what it holds back itself when the peer would.
    mutating func admit(_ bytes: [UInt8], nowNs: Int64) -> Bool {
        guard resendsEnabled, let frame = Self.decodeFrame(bytes), let lane = Self.lane(of: frame.channel.rawValue) else { return true }
        advance(nowNs: nowNs)
        let key = ItemKey(channel: frame.channel.rawValue, id: frame.id)
        if heldItems.contains(key) {
            heldFrames[key, default: []].insert(frame.offset)
            return false
        }
        let order = Self.laneOrder(key)
        let waiting = outgoing.keys.contains { Self.lane(of: $0.channel) == lane && Self.laneOrder($0) < order }
            || heldItems.contains { Self.lane(of: $0.channel) == lane && Self.laneOrder($0) < order }
        if waiting {
            heldItems.insert(key)
            heldFrames[key, default: []].insert(frame.offset)
            outgoing[key] = nil
            return false
        }
        guard let item = outgoing[key] else { return true }
        // Past the window from what the core acknowledged, the real peer would not have sent it
        // yet, whether a frame of the item was lost (the responder already sends it) or only late:
        // a late first chunk delays the core's ACK, and the recorded peer's next chunks, sent when
        // the recorded ACK had come, would reach a core that never opened its window for them. The
        // responder then takes the item over, and each ACK that advances opens the window again.
        if let frames = itemFrames[key] {
            let offsets = frames.keys.sorted()
            if let from = offsets.firstIndex(where: { Self.end(of: frames[$0]!) > item.acked }),
               let at = offsets.firstIndex(of: frame.offset), at >= from + windowFrames {
                heldFrames[key, default: []].insert(frame.offset)
                outgoing[key]?.managed = true
                return false
            }
        }
        heldFrames[key]?.remove(frame.offset)
        return true
    }

    /// On each lane, the first item held back goes out once no earlier item of its lane is
    /// unfinished.
    private mutating func releaseHeld(nowNs: Int64) {
        guard resendsEnabled else { return }
        for lane in Set(heldItems.compactMap { Self.lane(of: $0.channel) }).sorted() {
            guard let next = heldItems.filter({ Self.lane(of: $0.channel) == lane }).min(by: { Self.laneOrder($0) < Self.laneOrder($1) }),
                  !outgoing.keys.contains(where: { Self.lane(of: $0.channel) == lane && Self.laneOrder($0) < Self.laneOrder(next) }) else { continue }
            heldItems.remove(next)
            var item = Outgoing(firstSentNs: nowNs)
            item.managed = true
            outgoing[next] = item
            // The peer sends the whole item now, window by window: frames the capture brought while
            // the link was down never reached the responder, so every frame counts as held.
            heldFrames[next] = Set(itemFrames[next]?.keys.map { $0 } ?? [])
            if linkUp { resend(next, nowNs: nowNs, retransmission: false, why: "held_back") } else { outgoing[next]?.needsRestart = true }
        }
    }

    /// Whether the capture itself brings a frame of `key` to the core after `afterNs`, within a
    /// retransmission timeout of now: the recorded peer resent it on its own.
    private func captureResends(_ key: ItemKey, afterNs: Int64, withinNs: Int64? = nil) -> Bool {
        let within = withinNs ?? 2 * retransmissionNs
        guard let arrivals = itemArrivals[key] else { return false }
        // Only a frame that brings the acknowledged offset counts: later frames of the item do not
        // repair a gap.
        let acked = outgoing[key]?.acked ?? 0
        return arrivals.contains { $0.timeNs > afterNs && $0.timeNs <= afterNs + within && $0.offset <= acked && $0.end > acked }
    }

    /// The peer sent frame `sent` at `atNs` (`lost`: a fault lost it on the way).
    private mutating func peerSent(_ sent: SessionFrame, atNs: Int64, lost: Bool) {
        let key = ItemKey(channel: sent.channel.rawValue, id: sent.id)
        guard sent.channel != .control, !heldItems.contains(key) else { return }
        guard linkUp else {
            // Sent while a fault held the link down: a durable item goes again after the next binding.
            if Self.isDurable(key.channel) { outgoing[key, default: Outgoing(firstSentNs: atNs)].needsRestart = true }
            return
        }
        var item = outgoing[key] ?? Outgoing(firstSentNs: atNs)
        if lost, resendsEnabled, Self.lane(of: key.channel) != nil { item.managed = true }
        if sent.flags.contains(.needsAck) || sent.flags.contains(.last) || lost, item.deadlineNs == nil {
            item.deadlineNs = atNs + retransmissionNs
        }
        outgoing[key] = item
    }

    /// Follows the peer's initiatives the capture sends up to `nowNs`.
    private mutating func advance(nowNs: Int64) {
        while initiativeCursor < initiatives.count, initiatives[initiativeCursor].timeNs <= nowNs {
            let next = initiatives[initiativeCursor]
            initiativeCursor += 1
            peerSent(next.sent, atNs: next.timeNs, lost: next.lost)
        }
        while lostCursor < lostInitiatives.count, lostInitiatives[lostCursor] < initiativeCursor { lostCursor += 1 }
        while peerHelloCursor < peerHellos.count, peerHellos[peerHelloCursor].timeNs <= nowNs {
            let hello = peerHellos[peerHelloCursor]
            peerHelloCursor += 1
            // The phone's timer runs from each HELLO it sends; one that arrives stops the last's.
            helloRetry = hello.lost && resendsEnabled
                ? HelloRetry(nonce: hello.nonce, frames: hello.frames, dueNs: hello.timeNs + handshakeNs)
                : nil
        }
    }

    /// The phone's HELLO again, under a new control id (every piece), as its handshake timer
    /// sends it.
    private mutating func resendHello(nowNs: Int64) {
        guard var retry = helloRetry else { return }
        retry.dueNs = nowNs + handshakeNs
        retry.resends += 1
        helloRetry = retry.resends > Self.maximumResends ? nil : retry
        guard linkUp else { return }
        // ``prepare(_:)`` gives the pieces a new control id as they go.
        for bytes in retry.frames {
            made += 1
            append(Delivery(timeNs: nowNs, order: 0, bytes: bytes, made: "hello_resent", sent: nil))
        }
    }

    private mutating func dropBelowWatermarks(_ marks: SessionWatermarks) {
        for key in Array(outgoing.keys) {
            let mark: UInt32
            switch SessionChannel(rawValue: key.channel) {
            case .applicationContext: mark = marks.applicationContext
            case .userInfo: mark = marks.userInfo
            case .complicationUserInfo: mark = marks.complicationUserInfo
            case .fileMetadata, .fileChunk: mark = marks.file
            default: continue
            }
            if key.id <= mark { outgoing[key] = nil }
        }
        heldItems = heldItems.filter { key in
            switch SessionChannel(rawValue: key.channel) {
            case .userInfo: return key.id > marks.userInfo
            case .complicationUserInfo: return key.id > marks.complicationUserInfo
            case .fileMetadata, .fileChunk: return key.id > marks.file
            default: return true
            }
        }
        // A re-handshake restarts the items in flight: what the peer held of them goes, files excepted.
        incoming = incoming.filter { $0.key.channel == SessionChannel.fileChunk.rawValue }
    }

    private func watermarksHeld(over captured: SessionWatermarks) -> SessionWatermarks {
        func highest(_ channel: SessionChannel, _ base: UInt32) -> UInt32 {
            completed.filter { $0.channel == channel.rawValue }.map(\.id).reduce(base, max)
        }
        return SessionWatermarks(
            applicationContext: highest(.applicationContext, captured.applicationContext),
            userInfo: highest(.userInfo, captured.userInfo),
            complicationUserInfo: highest(.complicationUserInfo, captured.complicationUserInfo),
            file: highest(.fileChunk, captured.file))
    }

    private func fileResume() -> (UInt32, UInt32)? {
        incoming.filter { $0.key.channel == SessionChannel.fileChunk.rawValue && $0.value.held > 0 }
            .max { $0.key.id < $1.key.id }.map { ($0.key.id, $0.value.held) }
    }

    // MARK: bytes

    static func isDurable(_ channel: UInt8) -> Bool { [0x01, 0x05, 0x06, 0x07, 0x08].contains(channel) }

    static func end(of frame: SessionFrame) -> UInt32 {
        frame.flags.contains(.last) ? SessionLink.complete : frame.offset &+ UInt32(frame.bytes.count)
    }

    /// The frame in `bytes`, or `nil` when they are not one (the core reports that itself).
    static func decodeFrame(_ bytes: [UInt8]) -> SessionFrame? {
        do throws(SessionFrameError) {
            return try SessionFrame.decode(bytes)
        } catch {
            return nil
        }
    }

    /// The frame in `bytes` read with a direction's `context` (a compact one completed from it;
    /// ``SessionFrameContext/decode(_:)``), or `nil` when they are not one.
    static func decodeFrame(_ bytes: [UInt8], with context: inout SessionFrameContext) -> SessionFrame? {
        do throws(SessionFrameError) {
            return try context.decode(bytes)
        } catch {
            return nil
        }
    }

    /// A single-frame control item, or `nil` when it does not decode (the core reports that itself).
    static func decodeControl(_ frame: SessionFrame) -> SessionControl? {
        guard frame.channel == .control, frame.flags.contains(.first), frame.flags.contains(.last) else { return nil }
        do throws(SessionFrameError) {
            return try SessionControl.decode(frame.bytes)
        } catch {
            return nil
        }
    }

    static func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
        UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24
    }

    static func put(_ value: UInt32, into bytes: inout [UInt8], at: Int) {
        for i in 0..<4 { bytes[at + i] = UInt8(truncatingIfNeeded: value >> (8 * i)) }
    }

    /// Reassembles a side's control items from their frames (kept by offset).
    struct ControlAssembler: Sendable {
        private var parts: [UInt32: [UInt32: [UInt8]]] = [:]
        private var totals: [UInt32: UInt32] = [:]

        mutating func add(_ frame: SessionFrame) -> SessionControl? {
            if frame.flags.contains(.first) && frame.flags.contains(.last) { return SessionResponder.decodeControl(frame) }
            if let total = frame.total { totals[frame.id] = total }
            parts[frame.id, default: [:]][frame.offset] = frame.bytes
            guard let total = totals[frame.id], let pieces = parts[frame.id] else { return nil }
            var payload: [UInt8] = []
            while UInt32(payload.count) < total, let next = pieces[UInt32(payload.count)] { payload += next }
            guard UInt32(payload.count) == total else { return nil }
            parts[frame.id] = nil
            totals[frame.id] = nil
            return SessionResponder.decodeControl(SessionFrame(channel: .control, flags: [.first, .last], id: frame.id, totalOrOffset: total, bytes: payload))
        }
    }
}
