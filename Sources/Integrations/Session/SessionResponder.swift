import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import SessionCore

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
///
/// The type is split by job over four files: this one (what it learnt from the capture, what the
/// adapter asks), SessionResponderResends.swift (answering the core's frames, and the peer's
/// resends and timers), SessionResponderBytes.swift (the link's frame bytes), and
/// SessionCapturePrescan.swift (the capture read before replay). Its members are internal rather
/// than private so the files can share them; the type itself is internal to the module.
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

    struct Answer: Sendable {
        var frame: Int
        var timeNs: Int64
        var bytes: [UInt8]
        /// After the core's counterpart in the capture.
        var delayNs: Int64
    }

    /// A captured WELCOME (phone replayed): its frames (several at ATT MTU 23) and what it says.
    struct CapturedWelcome: Sendable {
        var frames: [Answer]
        var welcome: SessionHandshake
        var timeNs: Int64 { frames[0].timeNs }
        var delayNs: Int64 { frames[0].delayNs }
    }

    /// A peer data item the peer has sent and the core has not acknowledged complete.
    struct Outgoing: Sendable {
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
    struct Incoming: Sendable {
        var total: UInt32
        var held: UInt32
    }

    /// A HELLO of the recorded phone (watch replayed): its frames, and whether a fault lost it.
    struct PeerHello: Sendable {
        var timeNs: Int64
        var nonce: UInt32
        var frames: [[UInt8]]
        var lost: Bool
    }

    /// The phone's HELLO the responder sends again when its handshake timer runs out.
    struct HelloRetry: Sendable {
        var nonce: UInt32
        var frames: [[UInt8]]
        var dueNs: Int64
        var resends = 0
    }

    let role: SessionRole
    var faults: PeerFrameFaults
    let retransmissionNs: Int64
    let handshakeNs: Int64
    let peerMessageLimitNs: Int64 = 10_000_000_000
    /// Without faults the capture holds every resend the recorded peer made: the responder makes none.
    let resendsEnabled: Bool
    /// Resends of one item before the responder gives it up (the real peer never does).
    static let maximumResends = 30

    // The capture.
    var welcomes: [UInt32: [CapturedWelcome]] = [:]
    /// Every captured WELCOME, in capture order: a made one copies the watch's latest (a capture
    /// of a watch switch holds two watches).
    var capturedWelcomes: [CapturedWelcome] = []
    /// Capture frames that carry a later fragment of an answer (a WELCOME in pieces): the adapter
    /// skips them with the answer's first frame.
    var answerFragments: Set<Int> = []
    var acks: [[UInt32]: [Answer]] = [:]
    var statusAcks: [UInt32: [Answer]] = [:]
    /// Reply frames by the message id they answer, each with its delay after the core's message
    /// completed in the capture.
    var replies: [UInt32: [Answer]] = [:]
    /// The peer's data frames that are initiatives, in capture order, for the retransmission state.
    var initiatives: [(timeNs: Int64, lost: Bool, sent: SessionFrame)] = []
    var initiativeCursor = 0
    /// The peer's initiatives that reach the core at their captured instant (no fault moved or
    /// lost them), by capture frame number: an answer due at the same instant, captured after one
    /// of them, waits for it (``isHeld(_:)``).
    var onTimeInitiatives: [(number: Int, timeNs: Int64)] = []
    /// The last capture frame the adapter has handed over.
    var lastFedFrame = 0
    /// The indices of the initiatives a fault lost, and the first of them not yet followed.
    var lostInitiatives: [Int] = []
    var lostCursor = 0
    /// The recorded phone's HELLOs, in capture order (watch replayed).
    var peerHellos: [PeerHello] = []
    var peerHelloCursor = 0
    var helloRetry: HelloRetry?
    /// First copies of every peer data item's frames, by offset (what a resend sends again).
    var itemFrames: [ItemKey: [UInt32: SessionFrame]] = [:]
    /// Captured instants (faults applied) of each peer data item's frames that reach the core.
    var itemArrivals: [ItemKey: [(timeNs: Int64, offset: UInt32, end: UInt32)]] = [:]
    /// Peer items held back behind an earlier item of their lane the core has not acknowledged
    /// complete (session-link.md, "One item per lane on the wire").
    var heldItems: Set<ItemKey> = []
    /// Offsets of captured peer frames held back (the capture will not bring them again): the
    /// responder sends them when the window allows.
    var heldFrames: [ItemKey: Set<UInt32>] = [:]
    var windowFrames: Int
    let madeDelayNs: Int64
    /// The core's side's captured frames (bytes by time) and the capture's link drops: a write the
    /// recorded host never sent before the link dropped never reached the peer.
    let ownFrames: [(timeNs: Int64, bytes: [UInt8])]
    let linkDrops: [Int64]
    /// The capture's compact frames completed, for the peer frames the adapter feeds.
    let capturedFrames: CapturedCompactFrames

    // The run.
    var answerCursors: [String: Int] = [:]
    var deliveries: [Delivery] = []
    var order = 0
    var lastControlID: UInt32 = 0
    /// The control item being renumbered: its pieces after the first take the first's new id.
    var renumbering: (from: UInt32, to: UInt32)?
    /// The link's frame length (ATT MTU − 3): a made control item goes in pieces of it.
    var frameLength = SessionLink.maximumFrameLength
    var outgoing: [ItemKey: Outgoing] = [:]
    var incoming: [ItemKey: Incoming] = [:]
    var completed: Set<ItemKey> = []
    /// The core's control items, reassembled (a HELLO is fragmented on a 23-byte MTU).
    var coreAssembler = ControlAssembler()
    /// What the peer's receiving side holds of the core's frames (the core's compact frames are
    /// completed from it). Kept across bindings: see ``CapturedCompactFrames``.
    var coreFrames = SessionFrameContext()
    var answeredNonces: Set<UInt32> = []
    /// Replies waiting for the reply lane, with when each would go, and the reply on it.
    var heldReplies: [(atNs: Int64, frames: [Answer])] = []
    var replyInFlight: UInt32?
    var linkUp = false
    /// Frames the responder made, for the summary.
    var made = 0

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
    func neverSent(_ bytes: [UInt8], nowNs: Int64) -> Bool {
        guard let drop = capturedDrop(after: nowNs, within: 1_000_000_000),
              !recordedHostWrote(bytes, from: nowNs - 1_000_000_000, through: drop) else { return false }
        return !resendsEnabled || recordedHostWrote(bytes, from: drop + 1, through: .max)
    }

    /// The capture's first link drop at or after `nowNs`, if it comes within `limitNs`.
    func capturedDrop(after nowNs: Int64, within limitNs: Int64) -> Int64? {
        guard let drop = linkDrops.first(where: { $0 >= nowNs }), drop - nowNs <= limitNs else { return nil }
        return drop
    }

    /// Whether the recorded host wrote exactly `bytes` between `from` and `through` (inclusive).
    func recordedHostWrote(_ bytes: [UInt8], from: Int64, through: Int64) -> Bool {
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
    func isHeld(_ delivery: Delivery) -> Bool {
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
}
