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
struct LinkSession: Sendable {
    enum Phase: Sendable, Equatable {
        /// Watch: waiting for the phone's HELLO.
        case awaitingHello
        /// Phone: no paired watch to ask for.
        case unpaired
        /// Phone: HELLO sent with `nonce`; resent at `deadline`.
        case handshaking(nonce: UInt32, deadline: Duration)
        /// The handshake bound the link to `peer`.
        case bound(peer: SessionDeviceID, nonce: UInt32)
    }

    struct FileResume: Sendable, Equatable {
        var id: UInt32
        var offset: Int
    }

    /// The ATT payload size in use (clamped).
    var frameLength: Int
    var phase: Phase
    var lanes: [LaneProgress?] = Array(repeating: nil, count: Lane.allCases.count)
    var partials: [Reassembly?] = Array(repeating: nil, count: Lane.allCases.count)
    /// Per lane, the highest id started on this link (older ACKs are late, not unexpected).
    var highestStarted: [UInt32] = Array(repeating: 0, count: Lane.allCases.count)
    /// Highest message / reply id completely received on this link (those channels are not durable).
    var messageWatermark: UInt32 = 0
    var replyWatermark: UInt32 = 0
    /// A control item being reassembled, and the id of the last one completed (older ids are late
    /// duplicates).
    var control: ControlAssembly?
    var lastControlID: UInt32 = 0
    /// Where the peer said it holds our file (from its handshake).
    var fileResume: FileResume?
    /// Chunks of the file being received that arrived ahead of a gap: file id, pieces by offset.
    var fileAheadID: UInt32 = 0
    var fileAhead: [Int: AheadPiece] = [:]
    /// The peer's flags and the sequence of the last STATUS applied.
    var peerStatus: SessionPeerStatus = []
    var peerStatusSequence: UInt32 = 0
    /// Our flags as last told to the peer (handshake or STATUS), the STATUS sequence, and when to resend it.
    var announcedStatus: SessionPeerStatus?
    var statusSequence: UInt32 = 0
    var statusDeadline: Duration?
    /// The link was bound before the current handshake began: frames of that binding may still
    /// arrive and are dropped without a violation.
    var wasBound = false
    /// The window of the current binding, in frames: the smaller of the two stated windows when
    /// both HELLO and WELCOME stated one, else ``SessionLink/windowFrames``.
    var window = SessionLink.windowFrames
    /// Both sides stated a window: senders also ask for an ACK every half window.
    var windowNegotiated = false
    /// Watch: the window its WELCOME stated for the HELLO it is bound to (a repeated HELLO gets the
    /// same answer). Phone: HELLOs sent for the outstanding nonce (every second resend states no
    /// window, so a peer of the page before the window option, which refuses the longer HELLO as
    /// `malformed-control`, still binds).
    var welcomeWindow: UInt16?
    var helloCount = 0
    /// Watch: whether the WELCOME for the HELLO it is bound to stated compact frames.
    var welcomeCompact = false
    /// Compact frames in this binding (both HELLO and WELCOME stated them): the context of the
    /// frames this side sends, started empty with each WELCOME the watch sends and when the phone
    /// takes the WELCOME; `nil` when the binding did not negotiate them (or while handshaking).
    var sendContext: SessionFrameContext?
    /// The context of the frames the peer sends, started empty when this side is bound. Kept through
    /// a re-handshake until the next binding, so frames of the old binding still decode (and are
    /// dropped); `nil` when the binding did not negotiate compact frames.
    var receiveContext: SessionFrameContext?

    init(frameLength: Int, phase: Phase) {
        self.frameLength = frameLength
        self.phase = phase
    }

    /// Item bytes per frame: of a compact frame when the binding negotiated them (what windows are
    /// measured in), else of a full frame.
    var room: Int { frameLength - (sendContext != nil ? SessionLink.compactHeaderLength : SessionLink.headerLength) }

    /// The peer the link is bound to.
    var boundPeer: SessionDeviceID? {
        if case .bound(let peer, _) = phase { return peer }
        return nil
    }

    /// Forgets everything about items in flight (a new handshake restarts them). `highestStarted`
    /// stays, so ACKs of the previous binding still in flight are recognised as late.
    mutating func resetTransfers() {
        if boundPeer != nil { wasBound = true }
        lanes = Array(repeating: nil, count: Lane.allCases.count)
        partials = Array(repeating: nil, count: Lane.allCases.count)
        messageWatermark = 0
        replyWatermark = 0
        control = nil
        fileResume = nil
        fileAheadID = 0
        fileAhead = [:]
        peerStatus = []
        peerStatusSequence = 0
        announcedStatus = nil
        statusDeadline = nil
        window = SessionLink.windowFrames
        windowNegotiated = false
        welcomeWindow = nil
        welcomeCompact = false
        sendContext = nil
    }
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
