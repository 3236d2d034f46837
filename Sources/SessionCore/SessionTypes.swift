import MonkeyC

/// Which side of the session a core plays.
public enum SessionRole: String, Sendable, Hashable, Codable, CustomStringConvertible {
    /// The iPhone side: GATT client; writes frames, receives notifications; can switch watches.
    case phone
    /// The watch side: GATT server; notifies frames, receives writes; stays activated throughout.
    case watch

    /// `phone` or `watch`.
    public var description: String { rawValue }
}

/// `WCSessionActivationState`, with its raw values.
public enum SessionActivationState: Int, Sendable, Hashable, Codable, CustomStringConvertible {
    /// 0: not activated; transfers cannot start.
    case notActivated = 0
    /// 1: the phone is switching watches: no new transfers, data already received still delivered.
    case inactive = 1
    /// 2: activated.
    case activated = 2

    /// `notActivated`, `inactive`, `activated`.
    public var description: String {
        switch self {
        case .notActivated: "notActivated"
        case .inactive: "inactive"
        case .activated: "activated"
        }
    }
}

/// The watch app's own state, given by the watch host (``SessionCore/setWatchAppState(_:now:)``).
public struct WatchAppState: Sendable, Hashable {
    /// Whether the watch app is installed. A watch without it still answers the handshake (its
    /// system does), so the phone can learn `isWatchAppInstalled == false`.
    public var installed: Bool
    /// Whether the app's complication is on the active watch face.
    public var complicationEnabled: Bool
    /// Whether the app is in the foreground (or running at high priority): with the session
    /// activated and the link up, that makes both sides reachable.
    public var foreground: Bool

    /// Creates an app state; by default installed, no complication, in the foreground.
    public init(installed: Bool = true, complicationEnabled: Bool = false, foreground: Bool = true) {
        self.installed = installed
        self.complicationEnabled = complicationEnabled
        self.foreground = foreground
    }
}

/// Limits and timers of a ``SessionCore``. Apple documents none of the numbers; the defaults are
/// the observed limits of docs/session-semantics.md and Tether's choices (docs/session-core.md).
public struct SessionConfiguration: Sendable, Hashable {
    /// The phone resends HELLO when no WELCOME came within this time (default 3 s).
    public var handshakeTimeout: Duration
    /// A sender goes back to the acknowledged offset and resends when an item's ACK has not
    /// advanced within this time (default 2 s). Also the resend time of STATUS.
    public var retransmissionTimeout: Duration
    /// How long a sent message waits for its reply (or, without a reply handler, for delivery)
    /// before `messageReplyTimedOut` (default 10 s, Tether's choice).
    public var messageReplyTimeout: Duration
    /// High-priority complication user info transfers allowed within one ``complicationBudgetWindow`` (default 50).
    public var complicationTransfersPerWindow: Int
    /// The budget's sliding window (default 86,400 s): a transfer made at `t` counts against every
    /// instant in `[t, t + window)`.
    public var complicationBudgetWindow: Duration
    /// Largest serialized message or message data, and largest reply (default 65,536 bytes).
    public var maximumMessageBytes: Int
    /// Largest serialized user info, and largest serialized file metadata (default 65,536 bytes).
    public var maximumUserInfoBytes: Int
    /// Largest serialized application context (default 262,144 bytes).
    public var maximumApplicationContextBytes: Int
    /// Largest file (default and upper limit 4,294,967,294 bytes: offsets are u32 and
    /// `0xFFFFFFFF` is the ACK's "complete").
    public var maximumFileBytes: Int
    /// The window this side states in its handshake: how many frames it accepts ahead of its
    /// acknowledged offset on one lane (1…``SessionLink/maximumWindowFrames``). The link uses the
    /// smaller of the two stated windows, and acknowledges every half window, when both sides state
    /// one; `nil` (the default) states none, so the link keeps today's 8 frames and its HELLO and
    /// WELCOME are byte for byte those of link version 1 without options (docs/session-link.md, "Window").
    public var windowFrames: Int?
    /// Whether this side states the compact frames option in its handshake (page version 3): when
    /// both sides state it, continuation frames go out with a 4-byte header instead of 10
    /// (``SessionFrameContext``), which at ATT MTU 23 carries 16 item bytes a frame instead of 10.
    /// `false` (the default) states nothing, so the HELLO and WELCOME stay those of page version 2.
    public var compactFrames: Bool

    /// Creates a configuration; every value has the default named on its property. Timers shorter
    /// than 1 ns are taken as 1 ns; limits are clamped to what the wire can carry.
    public init(
        handshakeTimeout: Duration = .seconds(3),
        retransmissionTimeout: Duration = .seconds(2),
        messageReplyTimeout: Duration = .seconds(10),
        complicationTransfersPerWindow: Int = 50,
        complicationBudgetWindow: Duration = .seconds(86_400),
        maximumMessageBytes: Int = 65_536,
        maximumUserInfoBytes: Int = 65_536,
        maximumApplicationContextBytes: Int = 262_144,
        maximumFileBytes: Int = 4_294_967_294,
        windowFrames: Int? = nil,
        compactFrames: Bool = false
    ) {
        let tick = Duration.nanoseconds(1)
        self.handshakeTimeout = max(handshakeTimeout, tick)
        self.retransmissionTimeout = max(retransmissionTimeout, tick)
        self.messageReplyTimeout = max(messageReplyTimeout, tick)
        self.complicationTransfersPerWindow = max(0, complicationTransfersPerWindow)
        self.complicationBudgetWindow = max(complicationBudgetWindow, tick)
        let wireLimit = 4_294_967_294 - 4
        self.maximumMessageBytes = min(max(0, maximumMessageBytes), wireLimit)
        self.maximumUserInfoBytes = min(max(0, maximumUserInfoBytes), wireLimit)
        self.maximumApplicationContextBytes = min(max(0, maximumApplicationContextBytes), wireLimit)
        self.maximumFileBytes = min(max(0, maximumFileBytes), 4_294_967_294)
        self.windowFrames = windowFrames.map { min(max(1, $0), SessionLink.maximumWindowFrames) }
        self.compactFrames = compactFrames
    }
}

/// One outstanding user info transfer (`WCSessionUserInfoTransfer`).
public struct UserInfoTransfer: Sendable, Hashable {
    /// The transfer's id.
    public var id: UserInfoTransferID
    /// The dictionary being transferred.
    public var userInfo: MonkeyCValue
    /// Whether it is the current complication user info (only the newest one is).
    public var isCurrentComplicationInfo: Bool
    /// Whether it travels on the high-priority complication channel (within the budget) rather than
    /// the user info queue.
    public var isHighPriority: Bool
    /// Whether its frames are on the wire now.
    public var isTransferring: Bool

    /// Creates a record.
    public init(id: UserInfoTransferID, userInfo: MonkeyCValue, isCurrentComplicationInfo: Bool, isHighPriority: Bool, isTransferring: Bool) {
        self.id = id
        self.userInfo = userInfo
        self.isCurrentComplicationInfo = isCurrentComplicationInfo
        self.isHighPriority = isHighPriority
        self.isTransferring = isTransferring
    }
}

/// One outstanding file transfer (`WCSessionFileTransfer`).
public struct FileTransfer: Sendable, Hashable {
    /// The transfer's id.
    public var id: FileTransferID
    /// The file's size in bytes.
    public var size: Int
    /// The metadata dictionary, if any.
    public var metadata: MonkeyCValue?
    /// Bytes the receiver has acknowledged.
    public var completedBytes: Int
    /// Whether its frames are on the wire now.
    public var isTransferring: Bool

    /// Creates a record.
    public init(id: FileTransferID, size: Int, metadata: MonkeyCValue?, completedBytes: Int, isTransferring: Bool) {
        self.id = id
        self.size = size
        self.metadata = metadata
        self.completedBytes = completedBytes
        self.isTransferring = isTransferring
    }
}

/// A file received (`WCSessionFile`). Its bytes are what the host stored through
/// ``SessionAction/writeIncomingFile(_:_:offset:bytes:)`` for `(peer, id)`; the host must move them
/// before it handles the next action.
public struct SessionFile: Sendable, Hashable {
    /// Who sent it.
    public var peer: SessionDeviceID
    /// The sender's transfer id.
    public var id: FileTransferID
    /// Its size in bytes.
    public var size: Int
    /// The metadata dictionary, if any.
    public var metadata: MonkeyCValue?

    /// Creates a record.
    public init(peer: SessionDeviceID, id: FileTransferID, size: Int, metadata: MonkeyCValue?) {
        self.peer = peer
        self.id = id
        self.size = size
        self.metadata = metadata
    }
}

/// A wait of the core that ran out.
public enum SessionTimer: Sendable, Hashable, CustomStringConvertible {
    /// No WELCOME within ``SessionConfiguration/handshakeTimeout``: HELLO is sent again.
    case handshake
    /// No STATUS-ACK within ``SessionConfiguration/retransmissionTimeout``: STATUS is sent again.
    case status(sequence: UInt32)
    /// The ACK of item `id` on `channel` did not advance within the retransmission timeout: the
    /// sender goes back to the acknowledged offset.
    case retransmission(SessionChannel, id: UInt32)
    /// No reply (or, without a reply handler, no delivery) within ``SessionConfiguration/messageReplyTimeout``.
    case messageReply(SessionMessageID)
    /// Receiver: no frame of a partly received message or reply `id` on `channel` within
    /// ``SessionConfiguration/messageReplyTimeout``: the part is dropped (its sender gave it up; its
    /// CANCEL was lost).
    case incompleteItem(SessionChannel, id: UInt32)

    /// `handshake`, `status #N`, `retransmission user-info #3`, `message-reply message 2`, `incomplete message #4`.
    public var description: String {
        switch self {
        case .handshake: "handshake"
        case .status(let sequence): "status #\(sequence)"
        case let .retransmission(channel, id): "retransmission \(channel) #\(id)"
        case .messageReply(let id): "message-reply \(id)"
        case let .incompleteItem(channel, id): "incomplete \(channel) #\(id)"
        }
    }
}

/// What the peer (or the link) did wrong. The core drops what it cannot use and carries on.
public enum SessionViolationKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// A frame arrived while the link is down (a host bug: call `linkUp` first).
    case frameWhileLinkDown = "frame-while-link-down"
    /// Bytes that are not a frame (``SessionFrame/decode(_:)`` failed).
    case malformedFrame = "malformed-frame"
    /// Reserved flag bits, or a flag that does not belong on the frame's channel.
    case invalidFlags = "invalid-flags"
    /// A channel this version does not define.
    case unknownChannel = "unknown-channel"
    /// A complete control item or handshake that does not decode.
    case malformedControl = "malformed-control"
    /// A control op this version does not define.
    case unknownControl = "unknown-control"
    /// A data or control frame (other than HELLO/WELCOME) before the handshake bound the link.
    case frameBeforeHandshake = "frame-before-handshake"
    /// HELLO sent to a phone, WELCOME sent to a watch, or a WELCOME that answers no HELLO of this link.
    case unexpectedHandshake = "unexpected-handshake"
    /// A handshake of another protocol version.
    case versionMismatch = "version-mismatch"
    /// A handshake from a device other than the paired one.
    case wrongPeer = "wrong-peer"
    /// A frame whose bytes were already received, without the retransmission flag.
    case duplicateFrame = "duplicate-frame"
    /// A frame further ahead of the acknowledged offset than the window allows.
    case outOfWindow = "out-of-window"
    /// A frame that does not fit its item: another channel or total than the item's first frame,
    /// bytes past the total, LAST where the item does not end (or missing where it does).
    case inconsistentFragment = "inconsistent-fragment"
    /// An item larger than its channel allows (refused with ERROR 7009).
    case itemTooLarge = "item-too-large"
    /// A complete item whose payload does not decode or is not a property list (refused with ERROR 7010).
    case undecodablePayload = "undecodable-payload"
    /// An ACK for an item that is not on the wire, or beyond its length.
    case unexpectedAck = "unexpected-ack"
    /// An ERROR for an item or message nothing waits for.
    case unexpectedError = "unexpected-error"
    /// An ERROR whose code is not a WCError code (taken as 7001 genericError).
    case unknownErrorCode = "unknown-error-code"
    /// A reply to a message this side never sent, or that expected no reply.
    case unexpectedReply = "unexpected-reply"
    /// A file chunk before the file's metadata was received.
    case unexpectedFileChunk = "unexpected-file-chunk"
    /// A STATUS-ACK for a STATUS never sent.
    case unexpectedStatusAck = "unexpected-status-ack"
}

/// What the app's delegate (or a trace) hears. Events come in the order they happen; the host
/// hands them to the delegate one at a time, in order (never re-entrantly).
public enum SessionEvent: Sendable, Hashable {
    /// `session(_:activationDidCompleteWith:error:)`.
    case activationDidComplete(SessionActivationState, error: SessionError?)
    /// `sessionDidBecomeInactive(_:)` (phone): a watch switch began.
    case sessionDidBecomeInactive
    /// `sessionDidDeactivate(_:)` (phone): everything received from the old watch was delivered;
    /// call `activate()` to bind to the new one.
    case sessionDidDeactivate
    /// `sessionWatchStateDidChange(_:)` (phone): paired / installed / complication changed.
    case watchStateDidChange(isPaired: Bool, isWatchAppInstalled: Bool, isComplicationEnabled: Bool)
    /// `sessionReachabilityDidChange(_:)`, with the new value.
    case reachabilityDidChange(Bool)
    /// The handshake bound the link to `peer` (trace only): its epoch and incarnation.
    case handshakeCompleted(peer: SessionDeviceID, peerEpoch: UInt32, peerIncarnation: UInt32)
    /// The peer's incarnation changed: it lost its durable state, so this side forgot what it had
    /// received from it (trace only).
    case peerReinstalled(SessionDeviceID)
    /// `session(_:didReceiveApplicationContext:)`.
    case didReceiveApplicationContext(MonkeyCValue)
    /// `updateApplicationContext` was given the dictionary last sent: nothing is sent (trace only).
    case applicationContextUnchanged
    /// The peer refused the application context (it has no callback in WatchConnectivity).
    case applicationContextFailed(SessionError)
    /// `session(_:didReceiveMessage:)` / `…replyHandler:` (`expectsReply`); answer with `replyToMessage`.
    case didReceiveMessage(SessionMessageID, MonkeyCValue, expectsReply: Bool)
    /// `session(_:didReceiveMessageData:)` / `…replyHandler:`; answer with `replyToMessageData`.
    case didReceiveMessageData(SessionMessageID, [UInt8], expectsReply: Bool)
    /// A message sent without a reply handler reached the peer's session (trace; the "no error" outcome).
    case messageDelivered(SessionMessageID)
    /// The reply handler of `sendMessage` runs with the reply.
    case didReceiveReply(SessionMessageID, MonkeyCValue)
    /// The reply handler of `sendMessageData` runs with the reply.
    case didReceiveReplyData(SessionMessageID, [UInt8])
    /// The error handler of `sendMessage` / `sendMessageData` runs. Exactly one of this,
    /// `didReceiveReply(Data)` or `messageDelivered` per message.
    case messageFailed(SessionMessageID, SessionError)
    /// A reply came after its message had already failed; it is dropped (trace only).
    case lateReplyDiscarded(SessionMessageID)
    /// `session(_:didReceiveUserInfo:)`; `isCurrentComplicationInfo` for complication user info.
    case didReceiveUserInfo(UserInfoTransferID, MonkeyCValue, isCurrentComplicationInfo: Bool)
    /// `session(_:didFinish:error:)` for a user info transfer (not for a cancelled one).
    case userInfoTransferDidFinish(UserInfoTransferID, error: SessionError?)
    /// `session(_:didReceive:)`: a whole file arrived; its bytes are in the host's store.
    case didReceiveFile(SessionFile)
    /// A file transfer's progress: bytes the receiver holds, of `total`. Never decreases.
    case fileTransferProgress(FileTransferID, completed: Int, total: Int)
    /// `session(_:didFinish:error:)` for a file transfer (not for a cancelled one).
    case fileTransferDidFinish(FileTransferID, error: SessionError?)
    /// A wait ran out at `deadline`; what it caused follows as its own events.
    case timeout(SessionTimer, deadline: Duration)
    /// The peer or the link misbehaved; the core dropped what it could not use.
    case violation(SessionViolationKind, detail: String)
}

/// What the host must do after a call, in order.
public enum SessionAction: Sendable, Hashable {
    /// Store `bytes` at `offset` of the partial file `(peer, id)` (write at the offset, not append:
    /// after a crash some bytes may come again).
    case writeIncomingFile(SessionDeviceID, FileTransferID, offset: Int, bytes: [UInt8])
    /// Delete the partial file `(peer, id)`: the sender cancelled it or lost its state.
    case discardIncomingFile(SessionDeviceID, FileTransferID)
    /// Hand to the delegate.
    case event(SessionEvent)
    /// Store this snapshot durably, replacing the previous one, before carrying out the actions after it.
    case persist(SessionSnapshot)
    /// Send one frame: the phone writes it (without response) to the write characteristic, the
    /// watch notifies it on the notify characteristic.
    case write([UInt8])
}
