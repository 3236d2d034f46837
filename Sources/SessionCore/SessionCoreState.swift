// The transient state of a SessionCore: what lives only as long as a link (or a call).

/// A sequence of ids, one per channel family, each with at most one item on the wire at a time
/// (docs/session-link.md, "Reliability"). Raw values index the per-lane arrays.
enum Lane: Int, CaseIterable, Sendable {
    case applicationContext = 0
    case message = 1
    case reply = 2
    case userInfo = 3
    case complication = 4
    case file = 5

    /// The order frames are produced in: replies and messages first, then complication info,
    /// then the background channels.
    static let priorityOrder: [Lane] = [.reply, .message, .complication, .applicationContext, .userInfo, .file]

    /// The lane of a data channel; `nil` for control and unknown channels.
    init?(channel: SessionChannel) {
        switch channel {
        case .applicationContext: self = .applicationContext
        case .message, .messageData: self = .message
        case .messageReply: self = .reply
        case .userInfo: self = .userInfo
        case .complicationUserInfo: self = .complication
        case .fileMetadata, .fileChunk: self = .file
        default: return nil
        }
    }
}

/// The item a lane is sending on the current link.
struct LaneProgress: Sendable {
    var id: UInt32
    var channel: SessionChannel
    var payload: [UInt8]
    /// Flags every frame of the item carries (expects-reply, current-complication).
    var extraFlags: SessionFrameFlags
    /// Bytes the receiver acknowledged.
    var acked: Int
    /// The next byte to send.
    var next: Int
    /// The FIRST frame went out since the last go-back to offset 0.
    var firstSent: Bool
    /// The end of the furthest frame sent on this link (−1: none): frames ending at or before it
    /// are retransmissions.
    var highestSent = -1
    /// When to go back to ``acked`` if the ACK has not advanced.
    var deadline: Duration?

    init(id: UInt32, channel: SessionChannel, payload: [UInt8], extraFlags: SessionFrameFlags = [], startingAt offset: Int = 0) {
        self.id = id
        self.channel = channel
        self.payload = payload
        self.extraFlags = extraFlags
        self.acked = offset
        self.next = offset
        self.firstSent = offset > 0
    }
}

/// An item being received (every channel but file chunks, which go straight to the host).
struct Reassembly: Sendable {
    var channel: SessionChannel
    var id: UInt32
    var total: Int
    /// The FIRST frame's flags.
    var flags: SessionFrameFlags
    var bytes: [UInt8] = []
    /// Messages and replies only: when to drop the part if no frame of it came (its sender has
    /// given it up by then).
    var deadline: Duration?
    /// Frames that arrived ahead of a gap, within the window, by offset: taken in when the gap fills.
    var ahead: [Int: AheadPiece] = [:]
}

/// A frame's bytes that arrived before the frames in front of it.
struct AheadPiece: Sendable {
    var bytes: [UInt8]
    var needsAck: Bool
}

/// A control item being put together. Control items are small and not acknowledged, so their
/// frames are kept by offset and may arrive in any order.
struct ControlAssembly: Sendable {
    var id: UInt32
    var total: Int?
    var pieces: [Int: [UInt8]] = [:]

    /// The whole item once the pieces cover `0..<total` end to end.
    func assembled() -> [UInt8]? {
        guard let total else { return nil }
        var bytes: [UInt8] = []
        var offset = 0
        while offset < total {
            guard let piece = pieces[offset], !piece.isEmpty else { return nil }
            bytes += piece
            offset += piece.count
        }
        return offset == total ? bytes : nil
    }
}

/// The link from link-up to link-down.
///
/// What lasts as long as the link lives here; what lasts as long as one phase lives in that
/// phase's case of ``Phase``, so a value cannot, say, hold a window while handshaking or a HELLO
/// deadline while bound. Ending a binding is replacing the phase: nothing is reset field by field.
struct LinkSession: Sendable {
    enum Phase: Sendable {
        /// Watch: waiting for the phone's HELLO.
        case awaitingHello
        /// Phone: no paired watch to ask for.
        case unpaired
        /// Phone: a HELLO is outstanding.
        case handshaking(Handshake)
        /// The handshake bound the link to a peer.
        case bound(Binding)
    }

    /// Phone: the outstanding HELLO.
    struct Handshake: Sendable, Equatable {
        var nonce: UInt32
        /// When the HELLO is sent again.
        var deadline: Duration
        /// HELLOs sent for this nonce: every second resend states no option, so a peer of a page
        /// before the options, which refuses the longer HELLO as `malformed-control`, still binds.
        var hellosSent = 1
    }

    /// Where the peer said it holds our file (from its handshake).
    struct FileResume: Sendable, Equatable {
        var id: UInt32
        var offset: Int
    }

    /// Chunks of the file being received that arrived ahead of a gap.
    struct FileAhead: Sendable {
        var id: UInt32
        var pieces: [Int: AheadPiece] = [:]
    }

    /// What the watch answered the HELLO it is bound to with: a repeated HELLO gets the same answer.
    struct Welcome: Sendable, Equatable {
        /// The window the WELCOME stated (`nil`: none).
        var window: UInt16?
        /// The WELCOME stated compact frames.
        var compactFrames: Bool
    }

    /// Watch: its side of a binding. The phone has none: it answers no HELLO and sends no STATUS.
    struct WatchBinding: Sendable {
        var welcome: Welcome
        /// Our flags as last told to the phone (WELCOME or STATUS).
        var announcedStatus: SessionPeerStatus
        /// When to resend the outstanding STATUS (`nil`: none outstanding).
        var statusDeadline: Duration?
    }

    /// One binding: from the handshake that made it to the next handshake, an unpairing or the
    /// link going down. Everything in it starts afresh with each binding (items in flight restart,
    /// the peer restates its flags and resume point), which is why it is one value.
    struct Binding: Sendable {
        let peer: SessionDeviceID
        let nonce: UInt32
        /// The window, in frames: the smaller of the two stated windows when both HELLO and
        /// WELCOME stated one, else ``SessionLink/windowFrames``.
        let window: Int
        /// Both sides stated a window: senders also ask for an ACK every half window.
        let windowNegotiated: Bool
        /// Compact frames in this binding (both HELLO and WELCOME stated them): the context of the
        /// frames this side sends; `nil` when the binding did not negotiate them.
        var sendContext: SessionFrameContext?
        /// Watch only (`nil` on the phone).
        var watch: WatchBinding?
        var lanes: [LaneProgress?] = Array(repeating: nil, count: Lane.allCases.count)
        var partials: [Reassembly?] = Array(repeating: nil, count: Lane.allCases.count)
        /// Highest message / reply id completely received in this binding (those channels are not durable).
        var messageWatermark: UInt32 = 0
        var replyWatermark: UInt32 = 0
        /// Where the peer holds our file, from its handshake.
        var fileResume: FileResume?
        var fileAhead: FileAhead?
        /// The peer's flags and the sequence of the last STATUS applied.
        var peerStatus: SessionPeerStatus = []
        var peerStatusSequence: UInt32 = 0

        init(peer: SessionDeviceID, nonce: UInt32, window: Int, windowNegotiated: Bool, compactFrames: Bool, watch: WatchBinding?) {
            self.peer = peer
            self.nonce = nonce
            self.window = window
            self.windowNegotiated = windowNegotiated
            self.sendContext = compactFrames ? SessionFrameContext() : nil
            self.watch = watch
        }

        /// The window of a binding from the windows HELLO and WELCOME stated: the smaller when
        /// both stated one, else ``SessionLink/windowFrames``.
        static func window(own: UInt16?, peer: UInt16?) -> (frames: Int, negotiated: Bool) {
            guard let own, let peer else { return (SessionLink.windowFrames, false) }
            return (Int(min(own, peer)), true)
        }
    }

    /// The ATT payload size in use (clamped); a new MTU comes with a new link.
    let frameLength: Int
    var phase: Phase
    /// Per lane, the highest id started on this link. Kept across bindings: ACKs of an earlier
    /// binding still in flight are late, not unexpected.
    var highestStarted: [UInt32] = Array(repeating: 0, count: Lane.allCases.count)
    /// A control item being reassembled (in any phase: HELLO and WELCOME are control items).
    /// Dropped when a binding ends or a handshake starts, with the transfers.
    var control: ControlAssembly?
    /// The id of the last control item completed (older ids are late duplicates). Kept across
    /// bindings: the peer's control ids keep counting.
    var lastControlID: UInt32 = 0
    /// Watch: the sequence of the last STATUS sent. Kept across bindings, so a late STATUS-ACK of
    /// an earlier binding cannot match a STATUS of this one. Always 0 on the phone.
    var statusSequence: UInt32 = 0
    /// The link was bound before the current handshake began: frames of that binding may still
    /// arrive and are dropped without a violation.
    var wasBound = false
    /// The context of the frames the peer sends, started empty when this side is bound with
    /// compact frames. Kept through a re-handshake until the next binding, so frames of the old
    /// binding still decode (and are dropped); `nil` when the binding did not negotiate them.
    var receiveContext: SessionFrameContext?

    init(frameLength: Int, phase: Phase) {
        self.frameLength = frameLength
        self.phase = phase
    }

    /// The current binding, if bound. Modifying it in place keeps its arrays uniquely referenced
    /// (no copy per frame); through optional chaining a change while not bound does nothing.
    var binding: Binding? {
        get {
            if case .bound(let binding) = phase { return binding }
            return nil
        }
        _modify {
            guard case .bound(let current) = phase else {
                var none: Binding?
                yield &none
                precondition(none == nil, "a binding cannot be set while the link is not bound; set `phase`")
                return
            }
            phase = .awaitingHello // released while borrowed; put back below
            var value: Binding? = consume current
            yield &value
            guard let value else { preconditionFailure("the binding cannot be removed in place; set `phase`") }
            phase = .bound(value)
        }
    }

    /// The peer the link is bound to.
    var boundPeer: SessionDeviceID? { binding?.peer }

    /// Ends whatever the link was doing for a new phase: the binding's transfers, and any control
    /// item half put together, go with it; only link-long state stays.
    mutating func enter(_ next: Phase) {
        if case .bound = phase { wasBound = true }
        control = nil
        phase = next
    }

    /// Item bytes per frame: of a compact frame when the binding negotiated them (what windows are
    /// measured in), else of a full frame.
    var room: Int { frameLength - (binding?.sendContext != nil ? SessionLink.compactHeaderLength : SessionLink.headerLength) }

    // Read-only views of the binding, with the values an unbound link behaves as having.

    /// The items this side is sending (none while not bound).
    var lanes: [LaneProgress?] { binding?.lanes ?? Array(repeating: nil, count: Lane.allCases.count) }
    /// The items being received (none while not bound).
    var partials: [Reassembly?] { binding?.partials ?? Array(repeating: nil, count: Lane.allCases.count) }
    /// The binding's window (``SessionLink/windowFrames`` while not bound).
    var window: Int { binding?.window ?? SessionLink.windowFrames }
    /// The binding's send context (`nil` while not bound).
    var sendContext: SessionFrameContext? { binding?.sendContext }
    /// The watch's outstanding STATUS deadline.
    var statusDeadline: Duration? { binding?.watch?.statusDeadline }
}

/// A message this side sent, until its reply, error or delivery.
struct OutgoingMessage: Sendable {
    var id: SessionMessageID
    var isData: Bool
    var payload: [UInt8]
    var expectsReply: Bool
    var deadline: Duration
    /// The peer acknowledged it completely (waiting for the reply now).
    var delivered = false
}

/// A reply this side owes, queued on the reply lane.
struct OutgoingReply: Sendable {
    var id: UInt32
    var inReplyTo: UInt32
    var isData: Bool
    var payload: [UInt8]
}

/// What one call produces, put in order by ``SessionCore/finish()``.
struct CallOutput: Sendable {
    var fileOperations: [SessionAction] = []
    var events: [SessionEvent] = []
    var writes: [[UInt8]] = []
    var dirty = false
}

/// A wait that can run out.
enum DueTimer: Sendable, Equatable {
    case handshake
    case status
    case lane(Lane)
    case partial(Lane)
    case message(SessionMessageID)
}
