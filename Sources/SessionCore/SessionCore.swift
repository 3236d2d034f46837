import DequeModule
import MonkeyC

/// A WatchConnectivity-style session over Tether's session link, sans-I/O, for either side
/// (docs/session-semantics.md; docs/session-core.md; the wire: docs/session-link.md).
///
/// A value-type state machine: give it one input — an app API call, a host event (pairing, the
/// watch app's state, link up or down, a received frame) or "time is now T" — carry out every
/// returned ``SessionAction`` in order, then ask ``nextDeadline`` and call ``handleTimeout(now:)``
/// when it comes. `now` is the time since any fixed origin and never decreases. The core owns no
/// socket, timer, clock, file or thread; random numbers come from the injected ``SessionRandomSource``.
///
/// In each call's actions, file writes come first, then the events in the order they happened,
/// then at most one ``SessionAction/persist(_:)``, then the frames: so a frame never announces
/// anything (an ACK, a queued item) the stored snapshot does not hold, and a crash between two
/// actions loses nothing that was acknowledged.
///
/// Two kinds of error: the app or host misusing the API gets a typed ``SessionError`` with the
/// state unchanged; the peer misbehaving gets a ``SessionEvent/violation(_:detail:)`` event, and
/// the core carries on.
public struct SessionCore: Sendable {
    /// Which side this core plays.
    public let role: SessionRole
    /// This device's identity on the link.
    public let identity: SessionDeviceID
    /// The limits and timers in force.
    public let configuration: SessionConfiguration

    var random: any SessionRandomSource
    /// The durable state, exactly as ``SessionAction/persist(_:)`` hands it out.
    var durable: SessionSnapshot
    var state: SessionActivationState = .notActivated
    var epoch: UInt32 = 0
    /// Phone: the watch the current activation is bound to (while activated or inactive).
    var boundPeer: SessionDeviceID?
    /// Watch: the app's own state.
    var appState = WatchAppState()
    var link: LinkSession?
    var messages: [OutgoingMessage] = []
    var nextMessageID: UInt32 = 1
    var replies: [OutgoingReply] = []
    var nextReplyID: UInt32 = 1
    var nextControlID: UInt32 = 1
    /// Received messages waiting for the app's reply: id → sent as data.
    var incomingAwaitingReply: [UInt32: Bool] = [:]
    /// Bytes of files being sent (not in snapshots).
    var outgoingFileBytes: [UInt32: [UInt8]] = [:]
    var reportedFileProgress: [UInt32: Int] = [:]
    var clock: Duration = .zero
    var reportedReachable = false
    /// Events and a persist owed from `init(restoring:)`, handed out by the next call.
    var deferredEvents: [SessionEvent] = []
    var deferredPersist = false
    var output = CallOutput()

    /// A new core without history: draws its incarnation from `randomSource`.
    /// - Parameters:
    ///   - role: phone or watch.
    ///   - identity: this device's identity (stable across launches: it keys the peer's storage).
    ///   - configuration: timers and limits.
    ///   - randomSource: ``SeededSessionRandom`` in tests and replay, ``SystemSessionRandom`` live.
    public init(
        role: SessionRole,
        identity: SessionDeviceID,
        configuration: SessionConfiguration = .init(),
        randomSource: some SessionRandomSource
    ) {
        var random: any SessionRandomSource = randomSource
        let incarnation = random.nonZero32()
        self.role = role
        self.identity = identity
        self.configuration = configuration
        self.random = random
        self.durable = SessionSnapshot(role: role, identity: identity, incarnation: incarnation)
    }

    /// Rebuilds a core from the last snapshot it persisted (after a crash or a relaunch). The session
    /// starts not activated with the link down, as after any launch; queued transfers, received
    /// watermarks and partial files carry on once the link is up again.
    ///
    /// `outgoingFiles` gives back the bytes of the files still queued (the host kept the files). A
    /// queued file missing from it, or of another size, fails: the next call reports
    /// `fileTransferDidFinish(id, 7013 fileAccessDenied)` and persists without it.
    /// - Throws: ``SessionError`` `invalidParameter` when the snapshot has another layout version.
    public init(
        restoring snapshot: SessionSnapshot,
        configuration: SessionConfiguration = .init(),
        randomSource: some SessionRandomSource,
        outgoingFiles: [FileTransferID: [UInt8]] = [:]
    ) throws(SessionError) {
        guard snapshot.version == SessionSnapshot.currentVersion else {
            throw SessionError(.invalidParameter,
                "snapshot layout version \(snapshot.version); this core reads version \(SessionSnapshot.currentVersion) — restore with the Tether version that wrote it")
        }
        self.role = snapshot.role
        self.identity = snapshot.identity
        self.configuration = configuration
        self.random = randomSource
        self.durable = snapshot
        for index in durable.peers.indices {
            var kept: Deque<OutgoingFile> = []
            for file in durable.peers[index].fileQueue {
                if let bytes = outgoingFiles[FileTransferID(rawValue: file.id)], bytes.count == file.size {
                    outgoingFileBytes[file.id] = bytes
                    kept.append(file)
                } else {
                    let found = outgoingFiles[FileTransferID(rawValue: file.id)].map { "\($0.count) bytes" } ?? "no bytes"
                    deferredEvents.append(.fileTransferDidFinish(FileTransferID(rawValue: file.id), error: SessionError(.fileAccessDenied,
                        "file \(file.id) of \(file.size) bytes was queued before the restart but the host gave back \(found); transfer it again")))
                    deferredPersist = true
                }
            }
            durable.peers[index].fileQueue = kept
        }
    }

    // MARK: - Read-only state

    /// `activationState`: always valid.
    public var activationState: SessionActivationState { state }

    /// The device paired with this one as the host last said (``setPairedDevice(_:now:)``).
    public var pairedDevice: SessionDeviceID? { durable.pairedPeer }

    /// `isPaired`: a counterpart is paired. Meaningful only while activated (false otherwise).
    public var isPaired: Bool { state == .activated && sessionPeer != nil }

    /// `isWatchAppInstalled`. Phone: as the bound watch last reported (false before any handshake
    /// with it); watch: the app's own state. False while not activated.
    public var isWatchAppInstalled: Bool {
        guard state == .activated else { return false }
        switch role {
        case .watch: return appState.installed
        case .phone: return peerRecord(sessionPeer)?.status.contains(.appInstalled) ?? false
        }
    }

    /// `isComplicationEnabled`, sourced like ``isWatchAppInstalled``. False while not activated.
    public var isComplicationEnabled: Bool {
        guard state == .activated else { return false }
        switch role {
        case .watch: return appState.complicationEnabled
        case .phone: return peerRecord(sessionPeer)?.status.contains(.complicationEnabled) ?? false
        }
    }

    /// `watchDirectoryURL`'s role (phone): a storage key of the bound watch, `watch-` and its
    /// identity in 32 hex digits, separate per watch. `nil` on the watch and while not activated.
    public var watchStorageKey: String? {
        guard role == .phone, state == .activated, let peer = boundPeer else { return nil }
        return "watch-" + peer.compactHex
    }

    /// `isReachable`: activated, the link bound by a handshake, and the watch app in the foreground
    /// (the watch knows its own state; the phone knows it from the handshake and STATUS).
    public var isReachable: Bool {
        guard state == .activated, let binding = link?.binding else { return false }
        switch role {
        case .watch: return appState.foreground
        case .phone: return binding.peer == boundPeer && binding.peerStatus.contains(.reachable)
        }
    }

    /// `applicationContext`: the dictionary last given to ``updateApplicationContext(_:now:)`` for
    /// the current counterpart (an empty dictionary before any).
    public var applicationContext: MonkeyCValue {
        decodedOrEmpty(peerRecord(contentPeer)?.sentApplicationContext)
    }

    /// `receivedApplicationContext`: the dictionary last delivered from the current counterpart.
    public var receivedApplicationContext: MonkeyCValue {
        decodedOrEmpty(peerRecord(contentPeer)?.receivedApplicationContext)
    }

    /// `outstandingUserInfoTransfers`, oldest first (empty while not activated).
    public var outstandingUserInfoTransfers: [UserInfoTransfer] {
        guard state == .activated, let record = peerRecord(sessionPeer) else { return [] }
        let onWire = [link?.binding?.lanes[Lane.userInfo.rawValue]?.id, link?.binding?.lanes[Lane.complication.rawValue]?.id]
        let plain = record.userInfoQueue.map { ($0, false) }
        let urgent = record.complicationQueue.map { ($0, true) }
        return (plain + urgent).sorted { $0.0.id < $1.0.id }.map { item, highPriority in
            UserInfoTransfer(id: UserInfoTransferID(rawValue: item.id), userInfo: decodedOrEmpty(item.payload),
                             isCurrentComplicationInfo: item.isCurrentComplication, isHighPriority: highPriority,
                             isTransferring: onWire[highPriority ? 1 : 0] == item.id && link?.boundPeer == record.identity)
        }
    }

    /// `outstandingFileTransfers`, oldest first (empty while not activated).
    public var outstandingFileTransfers: [FileTransfer] {
        guard state == .activated, let record = peerRecord(sessionPeer) else { return [] }
        let onWire = link?.boundPeer == record.identity ? link?.binding?.lanes[Lane.file.rawValue] : nil
        return record.fileQueue.map { file in
            var metadata: MonkeyCValue?
            if file.metadataPayload.count > 4 { metadata = try? MonkeyCSerialization.decode(file.metadataPayload.dropFirst(4)) }
            return FileTransfer(id: FileTransferID(rawValue: file.id), size: file.size, metadata: metadata,
                                completedBytes: reportedFileProgress[file.id] ?? 0, isTransferring: onWire?.id == file.id)
        }
    }

    /// `remainingComplicationUserInfoTransfers` (phone) as of the latest `now` given to the core:
    /// the budget less the high-priority transfers made within the window before it. 0 on the watch
    /// and while not activated.
    public var remainingComplicationUserInfoTransfers: Int {
        guard role == .phone, state == .activated, let record = peerRecord(sessionPeer) else { return 0 }
        let used = record.complicationTransferTimes.filter { clock - $0 < configuration.complicationBudgetWindow }.count
        return max(0, configuration.complicationTransfersPerWindow - used)
    }

    /// `hasContentPending`: content received while not activated, not yet handed to the delegate
    /// (``activate(now:)`` hands it over).
    public var hasContentPending: Bool {
        !(peerRecord(contentPeer)?.pending.isEmpty ?? true)
    }

    /// Received messages the app still has to answer (`replyToMessage` / `replyToMessageData`).
    public var messagesAwaitingReply: [SessionMessageID] {
        incomingAwaitingReply.keys.sorted().map(SessionMessageID.init(rawValue:))
    }

    /// The device the link is bound to by a handshake, if any.
    public var linkPeer: SessionDeviceID? { link?.boundPeer }

    /// The durable state as it stands (what the last `persist` carried, or would carry now).
    public var snapshot: SessionSnapshot { durable }

    /// Whether anything is under way: a handshake, a STATUS, an item on the wire or being
    /// received, a message or reply, a queued transfer or partial file of the current counterpart,
    /// content pending. Tests end by checking it is false.
    public var hasPendingWork: Bool {
        if !messages.isEmpty || !replies.isEmpty || !incomingAwaitingReply.isEmpty { return true }
        if let session = link {
            if case .handshaking = session.phase { return true }
            if session.statusDeadline != nil || session.control != nil { return true }
            if session.lanes.contains(where: { $0 != nil }) || session.partials.contains(where: { $0 != nil }) { return true }
        }
        if let record = peerRecord(contentPeer) {
            if record.pendingContext != nil || !record.userInfoQueue.isEmpty || !record.complicationQueue.isEmpty
                || !record.fileQueue.isEmpty || record.inboundFile != nil || !record.pending.isEmpty {
                return true
            }
        }
        return false
    }

    /// When ``handleTimeout(now:)`` should be called next; `nil` when nothing waits.
    public var nextDeadline: Duration? {
        dueTimers().map(\.deadline).min()
    }

    // MARK: - The app's API

    /// `activate()`. Completes at once with `activationDidComplete(.activated, nil)`, then hands over
    /// content received while not activated, then reports reachability. The phone binds the session
    /// to the paired watch (a new epoch) and, with the link up, handshakes again so the watch sees
    /// the binding. Activating an activated session does nothing.
    /// - Throws: `sessionInactive` (7016) while the phone is switching watches: wait for
    ///   `sessionDidDeactivate`.
    public mutating func activate(now: Duration) throws(SessionError) -> [SessionAction] {
        guard state != .inactive else {
            throw SessionError(.sessionInactive, "activate() while the session is inactive (a watch switch is under way); call it after sessionDidDeactivate")
        }
        begin(now)
        guard state == .notActivated else { return finish() }
        state = .activated
        epoch = random.nonZero32()
        if role == .phone { boundPeer = durable.pairedPeer }
        output.events.append(.activationDidComplete(.activated, error: nil))
        if let peer = contentPeer { flushPending(of: peer) }
        if role == .phone, link != nil { startHandshake() } else { announceStatusIfChanged() }
        reachabilityCheckpoint()
        pump()
        return finish()
    }

    /// `updateApplicationContext(_:)`: latest state wins. The dictionary replaces any context not yet
    /// delivered (only the newest is sent); one equal to the last given is not sent again
    /// (`applicationContextUnchanged`). Works while unreachable: it goes when the link is up.
    /// - Throws: 7004 not activated, 7016 inactive, 7005 not paired, 7006 watch app not installed
    ///   (phone), 7010 not a property-list dictionary, 7009 over ``SessionConfiguration/maximumApplicationContextBytes``.
    public mutating func updateApplicationContext(_ context: MonkeyCValue, now: Duration) throws(SessionError) -> [SessionAction] {
        let peer = try requireSession("updateApplicationContext")
        let payload = try serializeDictionary(context, limit: configuration.maximumApplicationContextBytes, what: "application context")
        begin(now)
        let index = durable.ensurePeer(peer)
        if durable.peers[index].sentApplicationContext == payload {
            output.events.append(.applicationContextUnchanged)
            return finish()
        }
        let id = takeID(&durable.nextApplicationContextID)
        durable.peers[index].sentApplicationContext = payload
        durable.peers[index].pendingContext = OutgoingItem(id: id, payload: payload)
        output.dirty = true
        if link?.boundPeer == peer, let progress = link?.binding?.lanes[Lane.applicationContext.rawValue], progress.id != id {
            // The older context is given up; the receiver drops its part when the newer id arrives.
            link?.binding?.lanes[Lane.applicationContext.rawValue] = nil
        }
        pump()
        return finish()
    }

    /// `sendMessage(_:replyHandler:errorHandler:)`: `expectsReply` says whether a reply handler was
    /// given. Exactly one of `didReceiveReply` (or, without a reply handler, `messageDelivered`) or
    /// `messageFailed` follows: `notReachable` at once when not reachable now or when reachability
    /// is lost before delivery, `messageReplyTimedOut` after ``SessionConfiguration/messageReplyTimeout``,
    /// `messageReplyFailed` when the link drops while the reply is awaited, `sessionInactive` on a
    /// watch switch, or the peer's refusal.
    /// - Throws: 7004, 7016, 7005, 7006 (phone), 7010, 7009 over ``SessionConfiguration/maximumMessageBytes``.
    public mutating func sendMessage(_ message: MonkeyCValue, expectsReply: Bool, now: Duration) throws(SessionError) -> (SessionMessageID, [SessionAction]) {
        _ = try requireSession("sendMessage")
        let payload = try serializeDictionary(message, limit: configuration.maximumMessageBytes, what: "message")
        return startMessage(payload, isData: false, expectsReply: expectsReply, now: now)
    }

    /// `sendMessageData(_:replyHandler:errorHandler:)`; as ``sendMessage(_:expectsReply:now:)`` with bytes.
    /// - Throws: 7004, 7016, 7005, 7006 (phone), 7009 over ``SessionConfiguration/maximumMessageBytes``.
    public mutating func sendMessageData(_ data: [UInt8], expectsReply: Bool, now: Duration) throws(SessionError) -> (SessionMessageID, [SessionAction]) {
        _ = try requireSession("sendMessageData")
        guard data.count <= configuration.maximumMessageBytes else {
            throw SessionError(.payloadTooLarge, "message data of \(data.count) bytes; at most \(configuration.maximumMessageBytes) go in one message — send a file instead")
        }
        return startMessage(data, isData: true, expectsReply: expectsReply, now: now)
    }

    /// The reply handler of a received message (`didReceiveMessage(_, _, expectsReply: true)`) runs
    /// with `reply`. Queued on the reply channel at once.
    /// - Throws: 7008 when no received message `id` awaits a reply (answered already, sent without a
    ///   reply handler, its link dropped, or it was sent as data), 7010, 7009.
    public mutating func replyToMessage(_ id: SessionMessageID, with reply: MonkeyCValue, now: Duration) throws(SessionError) -> [SessionAction] {
        try requireAwaitingReply(id, isData: false)
        let payload = try serializeDictionary(reply, limit: configuration.maximumMessageBytes, what: "reply")
        begin(now)
        queueReply(to: id.rawValue, isData: false, body: payload)
        return finish()
    }

    /// The reply handler of a received data message runs with `reply`.
    /// - Throws: 7008 as ``replyToMessage(_:with:now:)``, 7009.
    public mutating func replyToMessageData(_ id: SessionMessageID, with reply: [UInt8], now: Duration) throws(SessionError) -> [SessionAction] {
        try requireAwaitingReply(id, isData: true)
        guard reply.count <= configuration.maximumMessageBytes else {
            throw SessionError(.payloadTooLarge, "reply data of \(reply.count) bytes; at most \(configuration.maximumMessageBytes)")
        }
        begin(now)
        queueReply(to: id.rawValue, isData: true, body: reply)
        return finish()
    }

    /// `transferUserInfo(_:)`: queued durably, delivered in order, exactly once, also across crashes
    /// of either side; `userInfoTransferDidFinish` when the peer has it.
    /// - Throws: 7004, 7016, 7005, 7006 (phone), 7010, 7009 over ``SessionConfiguration/maximumUserInfoBytes``.
    public mutating func transferUserInfo(_ userInfo: MonkeyCValue, now: Duration) throws(SessionError) -> (UserInfoTransferID, [SessionAction]) {
        let peer = try requireSession("transferUserInfo")
        let payload = try serializeDictionary(userInfo, limit: configuration.maximumUserInfoBytes, what: "user info")
        begin(now)
        let index = durable.ensurePeer(peer)
        let id = takeID(&durable.nextUserInfoID)
        durable.peers[index].userInfoQueue.append(OutgoingUserInfo(id: id, payload: payload, isCurrentComplication: false))
        output.dirty = true
        pump()
        return (UserInfoTransferID(rawValue: id), finish())
    }

    /// `transferCurrentComplicationUserInfo(_:)` (phone): while the budget lasts
    /// (``remainingComplicationUserInfoTransfers``), high priority on the complication channel; at 0,
    /// queued as plain user info behind the others. Either way it is the current complication info
    /// (older ones still outstanding lose the tag) and is delivered exactly once.
    /// - Throws: 7002 on the watch, then as ``transferUserInfo(_:now:)``.
    public mutating func transferCurrentComplicationUserInfo(_ userInfo: MonkeyCValue, now: Duration) throws(SessionError) -> (UserInfoTransferID, [SessionAction]) {
        guard role == .phone else {
            throw SessionError(.sessionNotSupported, "transferCurrentComplicationUserInfo is a phone API; the watch sends plain user info")
        }
        let peer = try requireSession("transferCurrentComplicationUserInfo")
        let payload = try serializeDictionary(userInfo, limit: configuration.maximumUserInfoBytes, what: "complication user info")
        begin(now)
        let index = durable.ensurePeer(peer)
        let window = configuration.complicationBudgetWindow
        durable.peers[index].complicationTransferTimes.removeAll { clock - $0 >= window }
        for position in durable.peers[index].userInfoQueue.indices { durable.peers[index].userInfoQueue[position].isCurrentComplication = false }
        for position in durable.peers[index].complicationQueue.indices { durable.peers[index].complicationQueue[position].isCurrentComplication = false }
        let id = takeID(&durable.nextUserInfoID)
        let item = OutgoingUserInfo(id: id, payload: payload, isCurrentComplication: true)
        if durable.peers[index].complicationTransferTimes.count < configuration.complicationTransfersPerWindow {
            durable.peers[index].complicationTransferTimes.append(clock)
            durable.peers[index].complicationQueue.append(item)
        } else {
            durable.peers[index].userInfoQueue.append(item)
        }
        output.dirty = true
        pump()
        return (UserInfoTransferID(rawValue: id), finish())
    }

    /// Cancels an outstanding user info transfer (`WCSessionUserInfoTransfer.cancel()`): it leaves
    /// the queue; if its frames are on the wire a CANCEL tells the peer to drop them. No
    /// `userInfoTransferDidFinish` follows. A transfer whose last frame already reached the peer may
    /// still be delivered (the race WatchConnectivity has too). The complication budget is not refunded.
    /// - Throws: 7004, 7016, 7005; 7008 when `id` is not outstanding.
    public mutating func cancelUserInfoTransfer(_ id: UserInfoTransferID, now: Duration) throws(SessionError) -> [SessionAction] {
        let peer = try requireActivatedPeer("cancelUserInfoTransfer")
        guard let index = durable.peerIndex(peer),
              durable.peers[index].userInfoQueue.contains(where: { $0.id == id.rawValue })
                || durable.peers[index].complicationQueue.contains(where: { $0.id == id.rawValue }) else {
            throw SessionError(.invalidParameter, "\(id) is not outstanding: it finished, was cancelled, or belongs to another watch")
        }
        begin(now)
        durable.peers[index].userInfoQueue.removeAll { $0.id == id.rawValue }
        durable.peers[index].complicationQueue.removeAll { $0.id == id.rawValue }
        output.dirty = true
        for lane in [Lane.userInfo, .complication] where link?.boundPeer == peer {
            if let progress = link?.binding?.lanes[lane.rawValue], progress.id == id.rawValue {
                link?.binding?.lanes[lane.rawValue] = nil
                sendControl(.cancel(channel: progress.channel, id: progress.id))
            }
        }
        pump()
        return finish()
    }

    /// `transferFile(_:metadata:)`: the file's bytes (the host read the file) and an optional
    /// property-list dictionary. Sent in the background after the other channels; progress as
    /// `fileTransferProgress`; resumes where the receiver says after a link drop or a crash;
    /// `fileTransferDidFinish` at the end. The host keeps the file until then (see
    /// ``init(restoring:configuration:randomSource:outgoingFiles:)``).
    /// - Throws: 7004, 7016, 7005, 7006 (phone), 7009 over ``SessionConfiguration/maximumFileBytes``
    ///   or metadata over ``SessionConfiguration/maximumUserInfoBytes``, 7010 for metadata.
    public mutating func transferFile(_ bytes: [UInt8], metadata: MonkeyCValue?, now: Duration) throws(SessionError) -> (FileTransferID, [SessionAction]) {
        let peer = try requireSession("transferFile")
        guard bytes.count <= configuration.maximumFileBytes else {
            throw SessionError(.payloadTooLarge, "a file of \(bytes.count) bytes; at most \(configuration.maximumFileBytes) go in one transfer — split it")
        }
        var metadataPayload: [UInt8] = []
        appendLittleEndian(UInt32(bytes.count), to: &metadataPayload)
        if let metadata {
            metadataPayload += try serializeDictionary(metadata, limit: configuration.maximumUserInfoBytes, what: "file metadata")
        }
        begin(now)
        let index = durable.ensurePeer(peer)
        let id = takeID(&durable.nextFileID)
        durable.peers[index].fileQueue.append(OutgoingFile(id: id, size: bytes.count, metadataPayload: metadataPayload))
        outgoingFileBytes[id] = bytes
        output.dirty = true
        pump()
        return (FileTransferID(rawValue: id), finish())
    }

    /// Cancels an outstanding file transfer (`WCSessionFileTransfer.cancel()`): it leaves the queue,
    /// a CANCEL tells the peer to discard the partial file; no `fileTransferDidFinish` follows.
    /// - Throws: 7004, 7016, 7005; 7008 when `id` is not outstanding.
    public mutating func cancelFileTransfer(_ id: FileTransferID, now: Duration) throws(SessionError) -> [SessionAction] {
        let peer = try requireActivatedPeer("cancelFileTransfer")
        guard let index = durable.peerIndex(peer), durable.peers[index].fileQueue.contains(where: { $0.id == id.rawValue }) else {
            throw SessionError(.invalidParameter, "\(id) is not outstanding: it finished, was cancelled, or belongs to another watch")
        }
        begin(now)
        durable.peers[index].fileQueue.removeAll { $0.id == id.rawValue }
        outgoingFileBytes[id.rawValue] = nil
        reportedFileProgress[id.rawValue] = nil
        output.dirty = true
        if link?.boundPeer == peer, let progress = link?.binding?.lanes[Lane.file.rawValue], progress.id == id.rawValue {
            link?.binding?.lanes[Lane.file.rawValue] = nil
            sendControl(.cancel(channel: progress.channel, id: progress.id))
        }
        pump()
        return finish()
    }

    // MARK: - Shared helpers

    /// Phone: the bound watch; watch: the paired phone.
    var sessionPeer: SessionDeviceID? {
        role == .phone ? boundPeer : durable.pairedPeer
    }

    /// Whose received content and contexts the app sees: the session's peer, else (phone, not
    /// activated) the paired watch.
    var contentPeer: SessionDeviceID? {
        sessionPeer ?? durable.pairedPeer
    }

    func peerRecord(_ peer: SessionDeviceID?) -> PeerRecord? {
        guard let peer, let index = durable.peerIndex(peer) else { return nil }
        return durable.peers[index]
    }

    /// Decodes stored property-list bytes. They were checked when they arrived (undecodable items
    /// are refused with a violation before being stored) or made by this core's own encoder, so
    /// a failure here cannot come from the peer; an empty dictionary keeps the accessor total.
    func decodedOrEmpty(_ bytes: [UInt8]?) -> MonkeyCValue {
        guard let bytes, let value = try? MonkeyCSerialization.decode(bytes) else { return .dictionary([]) }
        return value
    }

    /// The checks every sending API makes, in the order WatchConnectivity reports them.
    func requireSession(_ api: String) throws(SessionError) -> SessionDeviceID {
        let peer = try requireActivatedPeer(api)
        if role == .phone, !(peerRecord(peer)?.status.contains(.appInstalled) ?? false) {
            throw SessionError(.watchAppNotInstalled,
                "\(api): the watch app is not installed on watch \(peer), as its last handshake said (or it never handshook); install it and bring the link up")
        }
        return peer
    }

    func requireActivatedPeer(_ api: String) throws(SessionError) -> SessionDeviceID {
        switch state {
        case .notActivated:
            throw SessionError(.sessionNotActivated, "\(api) before the session is activated; call activate() first")
        case .inactive:
            throw SessionError(.sessionInactive, "\(api) while the session is inactive (switching watches); no new transfers until activate() after sessionDidDeactivate")
        case .activated:
            break
        }
        guard let peer = sessionPeer else {
            throw SessionError(.deviceNotPaired, role == .phone
                ? "\(api): no watch is paired with this phone; pair one (setPairedDevice) and activate again"
                : "\(api): no phone is paired with this watch; pair one (setPairedDevice)")
        }
        return peer
    }

    func requireAwaitingReply(_ id: SessionMessageID, isData: Bool) throws(SessionError) {
        guard let sentAsData = incomingAwaitingReply[id.rawValue] else {
            throw SessionError(.invalidParameter,
                "no received \(id) waits for a reply: it was answered already, sent without a reply handler, or its link dropped (its sender got messageReplyFailed)")
        }
        guard sentAsData == isData else {
            throw SessionError(.invalidParameter, sentAsData
                ? "\(id) came from sendMessageData; answer it with replyToMessageData"
                : "\(id) came from sendMessage; answer it with replyToMessage")
        }
    }

    /// Serializes a property-list dictionary, checking its types and size.
    func serializeDictionary(_ value: MonkeyCValue, limit: Int, what: String) throws(SessionError) -> [UInt8] {
        let bytes: [UInt8]
        do {
            bytes = try MonkeyCSerialization.encode(value)
        } catch {
            switch error {
            case .nestingTooDeep:
                throw SessionError(.payloadUnsupportedTypes, "the \(what) cannot be serialized: \(error)")
            default:
                throw SessionError(.payloadTooLarge, "the \(what) cannot be serialized: \(error)")
            }
        }
        if let reason = SessionPropertyList.problem(in: value) {
            throw SessionError(.payloadUnsupportedTypes, "the \(what) is not a property-list dictionary: \(reason)")
        }
        guard bytes.count <= limit else {
            throw SessionError(.payloadTooLarge, "the \(what) serializes to \(bytes.count) bytes; at most \(limit) are allowed — send less, or use transferFile")
        }
        return bytes
    }

    /// Hands out the next id of a durable counter (ids never reuse 0, which means "none").
    func takeID(_ counter: inout UInt32) -> UInt32 {
        let id = counter
        counter = counter == .max ? 1 : counter + 1
        return id
    }

    mutating func startMessage(_ payload: [UInt8], isData: Bool, expectsReply: Bool, now: Duration) -> (SessionMessageID, [SessionAction]) {
        begin(now)
        let id = SessionMessageID(rawValue: takeID(&nextMessageID))
        guard isReachable else {
            output.events.append(.messageFailed(id, SessionError(.notReachable,
                "\(id) was not sent: the counterpart is not reachable now (link down, not bound, or its app not in the foreground); use transferUserInfo for background delivery")))
            return (id, finish())
        }
        messages.append(OutgoingMessage(id: id, isData: isData, payload: payload, expectsReply: expectsReply,
                                        deadline: clock + configuration.messageReplyTimeout))
        pump()
        return (id, finish())
    }

    mutating func queueReply(to message: UInt32, isData: Bool, body: [UInt8]) {
        incomingAwaitingReply[message] = nil
        var payload: [UInt8] = []
        appendLittleEndian(message, to: &payload)
        payload += body
        replies.append(OutgoingReply(id: takeID(&nextReplyID), inReplyTo: message, isData: isData, payload: payload))
        pump()
    }

    /// Starts a call: takes `now`, hands out what `init(restoring:)` owed, fires every due timer.
    mutating func begin(_ now: Duration) {
        output = CallOutput()
        clock = max(clock, now)
        if !deferredEvents.isEmpty {
            output.events += deferredEvents
            deferredEvents = []
        }
        if deferredPersist {
            output.dirty = true
            deferredPersist = false
        }
        fireDueTimers()
    }

    /// Ends a call: file writes, events, the snapshot when it changed, frames.
    mutating func finish() -> [SessionAction] {
        var actions = output.fileOperations
        actions += output.events.map(SessionAction.event)
        if output.dirty { actions.append(.persist(durable)) }
        actions += output.writes.map(SessionAction.write)
        output = CallOutput()
        return actions
    }
}
