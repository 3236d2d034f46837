import DequeModule

/// Everything a ``SessionCore`` must not lose in a crash: what it still has to send (the user info,
/// complication and file queues, the undelivered application context), what it has received (per
/// peer and durable channel, the highest id completely received; the partial file and its resume
/// offset; content received while not activated), the complication budget, and the id counters.
///
/// The core hands out a new snapshot as ``SessionAction/persist(_:)`` whenever any of it changes,
/// after the events and before the frames of the same call; ``SessionCore/init(restoring:configuration:randomSource:outgoingFiles:)``
/// rebuilds a core from the last one stored. Not in it: interactive messages and replies (they fail
/// with the link), the link itself, partly received items other than files, timers, and the bytes
/// of files being sent (the host keeps the file and gives its bytes back at restore).
///
/// `Codable` (store it with any encoder) and a plain value; its fields are internal on purpose.
public struct SessionSnapshot: Sendable, Hashable, Codable {
    /// The layout version this core writes and reads.
    public static let currentVersion = 1

    /// The layout version of this snapshot.
    public internal(set) var version: Int
    /// The role of the core that wrote it.
    public internal(set) var role: SessionRole
    /// The identity of the core that wrote it.
    public internal(set) var identity: SessionDeviceID
    /// The core's incarnation (see ``SessionHandshake/incarnation``).
    public internal(set) var incarnation: UInt32
    /// The paired device: the phone's active watch, the watch's phone.
    public internal(set) var pairedPeer: SessionDeviceID?

    var nextApplicationContextID: UInt32 = 1
    var nextUserInfoID: UInt32 = 1
    var nextFileID: UInt32 = 1
    /// One record per peer ever bound, sorted by identity.
    var peers: [PeerRecord] = []

    init(role: SessionRole, identity: SessionDeviceID, incarnation: UInt32) {
        self.version = SessionSnapshot.currentVersion
        self.role = role
        self.identity = identity
        self.incarnation = incarnation
    }

    /// The identities this snapshot keeps storage for (the phone: one per watch it was bound to).
    public var peerIdentities: [SessionDeviceID] { peers.map(\.identity) }

    func peerIndex(_ identity: SessionDeviceID) -> Int? {
        peers.firstIndex { $0.identity == identity }
    }

    /// The record of `identity`, created (in sorted position) when missing.
    mutating func ensurePeer(_ identity: SessionDeviceID) -> Int {
        if let index = peerIndex(identity) { return index }
        let index = peers.firstIndex { identity < $0.identity } ?? peers.count
        peers.insert(PeerRecord(identity: identity), at: index)
        return index
    }
}

/// The durable state kept for one peer (the phone's per-watch storage).
struct PeerRecord: Sendable, Hashable, Codable {
    var identity: SessionDeviceID
    /// The peer's incarnation from its last handshake.
    var incarnation: UInt32?
    /// The peer's flags from its last handshake or STATUS.
    var status: SessionPeerStatus = []

    // Outgoing.
    /// The serialized application context last given to `updateApplicationContext` (`applicationContext`).
    var sentApplicationContext: [UInt8]?
    /// The context not yet acknowledged by the peer.
    var pendingContext: OutgoingItem?
    var userInfoQueue: [OutgoingUserInfo] = []
    var complicationQueue: [OutgoingUserInfo] = []
    var fileQueue: Deque<OutgoingFile> = []
    /// When each high-priority complication transfer was made (pruned to the budget window).
    var complicationTransferTimes: [Duration] = []

    // Incoming.
    var watermarks = SessionWatermarks()
    /// The serialized application context last delivered (`receivedApplicationContext`).
    var receivedApplicationContext: [UInt8]?
    var inboundFile: InboundFile?
    /// Content received while the session was not activated, in arrival order.
    var pending: [PendingDelivery] = []

    init(identity: SessionDeviceID) {
        self.identity = identity
    }
}

struct OutgoingItem: Sendable, Hashable, Codable {
    var id: UInt32
    var payload: [UInt8]
}

struct OutgoingUserInfo: Sendable, Hashable, Codable {
    var id: UInt32
    var payload: [UInt8]
    var isCurrentComplication: Bool
}

struct OutgoingFile: Sendable, Hashable, Codable {
    var id: UInt32
    var size: Int
    /// The metadata item's payload: `size u32` then the serialized dictionary, if any.
    var metadataPayload: [UInt8]
}

struct InboundFile: Sendable, Hashable, Codable {
    var id: UInt32
    var size: Int
    /// The serialized metadata dictionary, if any.
    var metadata: [UInt8]?
    /// Bytes held contiguously from offset 0 (the resume offset).
    var received: Int
}

enum PendingDelivery: Sendable, Hashable, Codable {
    case applicationContext([UInt8])
    case userInfo(id: UInt32, payload: [UInt8], isCurrentComplication: Bool)
    case file(id: UInt32, size: Int, metadata: [UInt8]?)
}
