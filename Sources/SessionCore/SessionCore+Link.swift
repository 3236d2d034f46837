// The host's inputs: pairing, the watch app's state, the link, frames, time. And the handshake.

extension SessionCore {
    // MARK: - Host inputs

    /// The system's paired counterpart changed (phone: the active watch, e.g. Auto Switch; watch:
    /// its phone). On an activated phone this starts the watch switch: `sessionDidBecomeInactive`,
    /// every message under way fails with 7016, messages waiting for this side's reply are refused
    /// (ERROR 7011), and no new transfers start; content still arriving from the old watch is
    /// delivered until its link goes down, then `sessionDidDeactivate` (at once when the link is
    /// not bound to the old watch). Queued background transfers stay in the old watch's storage and
    /// resume when the phone is bound to it again. On a watch the session stays activated.
    public mutating func setPairedDevice(_ peer: SessionDeviceID?, now: Duration) -> [SessionAction] {
        begin(now)
        guard peer != durable.pairedPeer else { return finish() }
        durable.pairedPeer = peer
        output.dirty = true
        switch role {
        case .phone:
            if state == .activated {
                beginWatchSwitch()
            } else if state == .notActivated, link != nil {
                startHandshake()
            }
        case .watch:
            if let session = link, session.boundPeer != nil {
                resetLinkTransfers(undelivered: SessionError(.notReachable, "the paired phone changed before delivery"),
                                   awaitingReply: SessionError(.messageReplyFailed, "the paired phone changed while the reply was awaited"))
                link?.phase = .awaitingHello
            }
            announceStatusIfChanged()
            reachabilityCheckpoint()
        }
        return finish()
    }

    /// The watch app's state changed (watch only): installed, complication enabled, foreground.
    /// Reachability follows the foreground flag; the phone hears of the change in a STATUS.
    /// - Throws: 7002 on the phone (it learns the watch's state from the handshake and STATUS).
    public mutating func setWatchAppState(_ newState: WatchAppState, now: Duration) throws(SessionError) -> [SessionAction] {
        guard role == .watch else {
            throw SessionError(.sessionNotSupported, "setWatchAppState is a watch-side input; the phone learns the watch app's state from the handshake and STATUS")
        }
        begin(now)
        appState = newState
        reachabilityCheckpoint()
        announceStatusIfChanged()
        return finish()
    }

    /// The host connected to the session service (phone: discovered it and enabled notifications;
    /// watch: the phone subscribed). `maxPayload` is ATT MTU − 3, clamped to 20...512. The phone
    /// starts the handshake at once (when a watch is paired). A link already up is taken down first.
    public mutating func linkUp(maxPayload: Int, now: Duration) -> [SessionAction] {
        begin(now)
        if link != nil { takeLinkDown() }
        link = LinkSession(frameLength: SessionFrame.clampFrameLength(maxPayload), phase: role == .watch ? .awaitingHello : .unpaired)
        if role == .phone { startHandshake() }
        return finish()
    }

    /// The link went down: reachability is lost, messages not yet delivered fail with 7007, messages
    /// waiting for a reply with 7011, replies owed are dropped, partly received items other than
    /// files are forgotten. Queued transfers wait for the next link. A phone switching watches
    /// deactivates now.
    public mutating func linkDown(now: Duration) -> [SessionAction] {
        begin(now)
        takeLinkDown()
        return finish()
    }

    /// One frame from the peer (phone: a notification; watch: a write).
    public mutating func receive(_ bytes: [UInt8], now: Duration) -> [SessionAction] {
        begin(now)
        guard link != nil else {
            violation(.frameWhileLinkDown, "\(bytes.count)-byte frame while the link is down; call linkUp(maxPayload:now:) when the link comes up")
            return finish()
        }
        if link?.receiveContext == nil, link?.boundPeer == nil, configuration.compactFrames,
           let first = bytes.first, first & SessionLink.compactMarker != 0 {
            // A compact frame of a binding this side has not taken (its WELCOME was lost, or it is
            // still handshaking): it cannot be read without the binding's context.
            if link?.wasBound != true {
                violation(.frameBeforeHandshake, "\(bytes.count)-byte compact frame before the handshake bound the link; it is ignored")
            }
            return finish()
        }
        let frame: SessionFrame
        do {
            if link?.receiveContext != nil {
                frame = try link!.receiveContext!.decode(bytes)
            } else {
                frame = try SessionFrame.decode(bytes)
            }
        } catch {
            violation(.malformedFrame, "\(error)")
            return finish()
        }
        if let problem = flagProblem(frame) {
            violation(.invalidFlags, "\(frame): \(problem)")
        } else if frame.channel == .control {
            receiveControlFrame(frame)
        } else if !frame.channel.isKnown {
            violation(.unknownChannel, "\(frame): channels 0x00–0x08 are defined; the frame is ignored")
        } else if let peer = link?.boundPeer {
            receiveDataFrame(frame, peerIndex: durable.ensurePeer(peer))
        } else if link?.wasBound != true {
            violation(.frameBeforeHandshake, "\(frame) before the handshake bound the link; it is ignored")
        }
        return finish()
    }

    /// Fires every wait whose deadline is at or before `now`, earliest first (ties: handshake,
    /// STATUS, the lanes in priority order, parts of a message and of a reply being received, then
    /// messages by id). A call before ``nextDeadline``
    /// does nothing.
    public mutating func handleTimeout(now: Duration) -> [SessionAction] {
        begin(now)
        return finish()
    }

    // MARK: - Link state changes

    mutating func takeLinkDown() {
        guard link != nil else { return }
        link = nil
        reachabilityCheckpoint()
        failUndeliveredMessages(SessionError(.notReachable, "the link dropped before the message was delivered"))
        failAwaitingMessages(SessionError(.messageReplyFailed, "the link dropped while the reply was awaited"))
        incomingAwaitingReply = [:]
        replies = []
        if role == .phone, state == .inactive { completeDeactivation() }
    }

    /// Ends everything tied to the current binding of the link, keeping the link up.
    mutating func resetLinkTransfers(undelivered: SessionError, awaitingReply: SessionError) {
        link?.resetTransfers()
        failUndeliveredMessages(undelivered)
        failAwaitingMessages(awaitingReply)
        incomingAwaitingReply = [:]
        replies = []
        reachabilityCheckpoint()
    }

    mutating func beginWatchSwitch() {
        state = .inactive
        output.events.append(.sessionDidBecomeInactive)
        let inactive = SessionError(.sessionInactive, "the session became inactive (the phone is switching watches)")
        failUndeliveredMessages(inactive)
        failAwaitingMessages(inactive)
        let refusals = incomingAwaitingReply.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            + replies.map { ($0.inReplyTo, $0.isData) }
        for (message, isData) in refusals.sorted(by: { $0.0 < $1.0 }) {
            sendControl(.error(channel: isData ? .messageData : .message, id: message, code: UInt16(SessionErrorCode.messageReplyFailed.rawValue)))
        }
        incomingAwaitingReply = [:]
        replies = []
        link?.lanes[Lane.reply.rawValue] = nil
        reachabilityCheckpoint()
        if link?.boundPeer == nil || link?.boundPeer != boundPeer { completeDeactivation() }
    }

    mutating func completeDeactivation() {
        if let peer = boundPeer { flushPending(of: peer) }
        output.events.append(.sessionDidDeactivate)
        state = .notActivated
        boundPeer = nil
        epoch = 0
        reachabilityCheckpoint()
    }

    /// Reports a change of ``isReachable``; losing it fails the messages not yet delivered (7007).
    mutating func reachabilityCheckpoint() {
        let reachable = isReachable
        guard reachable != reportedReachable else { return }
        reportedReachable = reachable
        output.events.append(.reachabilityDidChange(reachable))
        if !reachable {
            failUndeliveredMessages(SessionError(.notReachable, "the counterpart stopped being reachable before the message was delivered"))
        }
    }

    mutating func failUndeliveredMessages(_ error: SessionError) {
        while let index = messages.firstIndex(where: { !$0.delivered }) {
            failMessage(at: index, error)
        }
    }

    mutating func failAwaitingMessages(_ error: SessionError) {
        while let index = messages.firstIndex(where: { $0.delivered }) {
            failMessage(at: index, error)
        }
    }

    /// Ends a message with an error; if it is on the wire, a CANCEL tells the peer to drop it.
    mutating func failMessage(at index: Int, _ error: SessionError) {
        let message = messages.remove(at: index)
        if let progress = link?.lanes[Lane.message.rawValue], progress.id == message.id.rawValue {
            link?.lanes[Lane.message.rawValue] = nil
            if link?.boundPeer != nil { sendControl(.cancel(channel: progress.channel, id: progress.id)) }
        }
        output.events.append(.messageFailed(message.id, error))
    }

    /// Hands content received while not activated to the delegate, in arrival order.
    mutating func flushPending(of peer: SessionDeviceID) {
        guard let index = durable.peerIndex(peer), !durable.peers[index].pending.isEmpty else { return }
        let pending = durable.peers[index].pending
        durable.peers[index].pending = []
        output.dirty = true
        for delivery in pending { deliverNow(delivery, peerIndex: index) }
    }

    // MARK: - Handshake

    /// This side's flags.
    var ownStatus: SessionPeerStatus {
        var status: SessionPeerStatus = durable.pairedPeer == nil ? [] : .paired
        switch role {
        case .phone:
            status.insert(.appInstalled)
            if state == .activated { status.formUnion([.activated, .reachable]) }
        case .watch:
            if appState.installed { status.insert(.appInstalled) }
            if appState.complicationEnabled { status.insert(.complicationEnabled) }
            if state == .activated {
                status.insert(.activated)
                if appState.foreground { status.insert(.reachable) }
            }
        }
        return status
    }

    /// This side's handshake towards `peer`: its watermarks and partial file for that peer, and the
    /// window it states (`nil`: none).
    func ownHandshake(for peer: SessionDeviceID, nonce: UInt32, window: UInt16? = nil, compactFrames: Bool = false) -> SessionHandshake {
        let record = peerRecord(peer)
        return SessionHandshake(
            identity: identity,
            incarnation: durable.incarnation,
            epoch: epoch,
            nonce: nonce,
            status: ownStatus,
            watermarks: record?.watermarks ?? SessionWatermarks(),
            fileResumeID: record?.inboundFile?.id ?? 0,
            fileResumeOffset: UInt32(record?.inboundFile?.received ?? 0),
            window: window,
            compactFrames: compactFrames)
    }

    /// The window this side states in a HELLO or WELCOME: its configured one, if any.
    var statedWindow: UInt16? { configuration.windowFrames.map { UInt16(clamping: $0) } }

    /// The window of a binding: the smaller stated one when both sides stated one, else 8.
    mutating func bindWindow(own: UInt16?, peer: UInt16?) {
        if let own, let peer {
            link?.window = Int(min(own, peer))
            link?.windowNegotiated = true
        } else {
            link?.window = SessionLink.windowFrames
            link?.windowNegotiated = false
        }
    }

    /// Phone: a fresh HELLO (new nonce) on the current link, restarting everything in flight.
    mutating func startHandshake() {
        guard link != nil else { return }
        resetLinkTransfers(undelivered: SessionError(.notReachable, "the link is handshaking again before the message was delivered"),
                           awaitingReply: SessionError(.messageReplyFailed, "the link is handshaking again while the reply was awaited"))
        guard let peer = durable.pairedPeer else {
            link?.phase = .unpaired
            return
        }
        let nonce = random.nonZero32()
        let deadline = clock + configuration.handshakeTimeout
        link?.phase = .handshaking(nonce: nonce, deadline: deadline)
        link?.helloCount = 1
        sendControl(.hello(ownHandshake(for: peer, nonce: nonce, window: statedWindow, compactFrames: configuration.compactFrames)))
    }

    mutating func handleHello(_ hello: SessionHandshake) {
        guard role == .watch else {
            violation(.unexpectedHandshake, "HELLO from \(hello.identity) sent to a phone; only watches answer HELLO")
            return
        }
        guard hello.version == SessionLink.version else {
            violation(.versionMismatch, "HELLO of protocol version \(hello.version); this side speaks version \(SessionLink.version), so it does not answer")
            return
        }
        guard let paired = durable.pairedPeer, hello.identity == paired else {
            violation(.wrongPeer, "HELLO from \(hello.identity), but the paired phone is \(durable.pairedPeer.map(\.description) ?? "none"); not answered")
            return
        }
        if case let .bound(peer, nonce) = link?.phase, peer == hello.identity, nonce == hello.nonce {
            // The phone missed the WELCOME: answer again, keep everything (the window included,
            // whether or not this copy of the HELLO states one).
            let compact = link?.welcomeCompact ?? false
            sendControl(.welcome(ownHandshake(for: peer, nonce: nonce, window: link?.welcomeWindow, compactFrames: compact)))
            // The phone takes this WELCOME only if it lost the first: frames from here on start
            // the compact context afresh (a full frame first on each channel), as the phone's does.
            if compact { link?.sendContext = SessionFrameContext() }
            return
        }
        if link?.boundPeer != nil {
            resetLinkTransfers(undelivered: SessionError(.notReachable, "the phone handshook again before the message was delivered"),
                               awaitingReply: SessionError(.messageReplyFailed, "the phone handshook again while the reply was awaited"))
        }
        link?.phase = .bound(peer: hello.identity, nonce: hello.nonce)
        output.events.append(.handshakeCompleted(peer: hello.identity, peerEpoch: hello.epoch, peerIncarnation: hello.incarnation))
        applyPeerHandshake(hello)
        // A WELCOME states a window only in answer to a HELLO that states one.
        let window = hello.window == nil ? nil : statedWindow
        link?.welcomeWindow = window
        bindWindow(own: window, peer: hello.window)
        // Compact frames likewise: stated only in answer to a HELLO that states them.
        let compact = hello.compactFrames && configuration.compactFrames
        link?.welcomeCompact = compact
        let welcome = ownHandshake(for: hello.identity, nonce: hello.nonce, window: window, compactFrames: compact)
        link?.announcedStatus = welcome.status
        sendControl(.welcome(welcome))
        link?.sendContext = compact ? SessionFrameContext() : nil
        link?.receiveContext = compact ? SessionFrameContext() : nil
        cancelStaleResume(hello.fileResumeID)
        reachabilityCheckpoint()
        pump()
    }

    mutating func handleWelcome(_ welcome: SessionHandshake) {
        guard role == .phone else {
            violation(.unexpectedHandshake, "WELCOME from \(welcome.identity) sent to a watch; only phones take WELCOME")
            return
        }
        guard case let .handshaking(nonce, _) = link?.phase else {
            if case let .bound(_, nonce) = link?.phase, nonce == welcome.nonce { return } // a repeated answer
            violation(.unexpectedHandshake, "WELCOME (nonce \(hex32(welcome.nonce))) while no HELLO is outstanding on this link")
            return
        }
        guard welcome.nonce == nonce else {
            violation(.unexpectedHandshake, "WELCOME answers nonce \(hex32(welcome.nonce)), but this link's HELLO carried \(hex32(nonce))")
            return
        }
        guard welcome.version == SessionLink.version else {
            violation(.versionMismatch, "WELCOME of protocol version \(welcome.version); this side speaks version \(SessionLink.version)")
            return
        }
        guard let paired = durable.pairedPeer, welcome.identity == paired else {
            violation(.wrongPeer, "WELCOME from \(welcome.identity), but the paired watch is \(durable.pairedPeer.map(\.description) ?? "none"); the link stays unbound")
            return
        }
        link?.phase = .bound(peer: paired, nonce: nonce)
        bindWindow(own: statedWindow, peer: welcome.window)
        // A watch states compact frames only in answer to a HELLO that stated them.
        let compact = configuration.compactFrames && welcome.compactFrames
        link?.sendContext = compact ? SessionFrameContext() : nil
        link?.receiveContext = compact ? SessionFrameContext() : nil
        let announced = ownStatus
        link?.announcedStatus = announced
        output.events.append(.handshakeCompleted(peer: paired, peerEpoch: welcome.epoch, peerIncarnation: welcome.incarnation))
        applyPeerHandshake(welcome)
        cancelStaleResume(welcome.fileResumeID)
        reachabilityCheckpoint()
        pump()
    }

    /// Takes in the peer's handshake: a changed incarnation resets what was received from it; the
    /// queued items it already has are finished; its file resume point and flags are noted.
    mutating func applyPeerHandshake(_ handshake: SessionHandshake) {
        let index = durable.ensurePeer(handshake.identity)
        if let old = durable.peers[index].incarnation, old != handshake.incarnation {
            output.events.append(.peerReinstalled(handshake.identity))
            durable.peers[index].watermarks = SessionWatermarks()
            if let file = durable.peers[index].inboundFile {
                output.fileOperations.append(.discardIncomingFile(handshake.identity, FileTransferID(rawValue: file.id)))
                durable.peers[index].inboundFile = nil
            }
            output.dirty = true
        }
        if durable.peers[index].incarnation != handshake.incarnation {
            durable.peers[index].incarnation = handshake.incarnation
            output.dirty = true
        }
        let marks = handshake.watermarks
        if let context = durable.peers[index].pendingContext, context.id <= marks.applicationContext {
            durable.peers[index].pendingContext = nil
            output.dirty = true
        }
        var finished: [UInt32] = []
        finished += durable.peers[index].userInfoQueue.filter { $0.id <= marks.userInfo }.map(\.id)
        finished += durable.peers[index].complicationQueue.filter { $0.id <= marks.complicationUserInfo }.map(\.id)
        if !finished.isEmpty {
            durable.peers[index].userInfoQueue.removeAll { $0.id <= marks.userInfo }
            durable.peers[index].complicationQueue.removeAll { $0.id <= marks.complicationUserInfo }
            output.dirty = true
            for id in finished.sorted() {
                output.events.append(.userInfoTransferDidFinish(UserInfoTransferID(rawValue: id), error: nil))
            }
        }
        for file in durable.peers[index].fileQueue where file.id <= marks.file {
            completeOutgoingFile(file.id, size: file.size, peerIndex: index)
        }
        link?.fileResume = handshake.fileResumeID == 0 ? nil
            : LinkSession.FileResume(id: handshake.fileResumeID, offset: Int(handshake.fileResumeOffset))
        link?.peerStatus = handshake.status
        link?.peerStatusSequence = 0
        updatePeerStatus(handshake.status, peerIndex: index)
    }

    /// The peer holds part of a file this side no longer sends (cancelled while the link was down):
    /// a CANCEL lets it discard the part.
    mutating func cancelStaleResume(_ id: UInt32) {
        guard id != 0, id < durable.nextFileID, let peer = link?.boundPeer, let index = durable.peerIndex(peer),
              !durable.peers[index].fileQueue.contains(where: { $0.id == id }) else { return }
        link?.fileResume = nil
        sendControl(.cancel(channel: .fileChunk, id: id))
    }

    /// Stores the peer's flags; the phone tells the app when paired / installed / complication changed.
    mutating func updatePeerStatus(_ status: SessionPeerStatus, peerIndex index: Int) {
        let before = durable.peers[index].status
        guard before != status else { return }
        durable.peers[index].status = status
        output.dirty = true
        let watched: SessionPeerStatus = [.paired, .appInstalled, .complicationEnabled]
        if role == .phone, state == .activated, durable.peers[index].identity == boundPeer,
           before.intersection(watched) != status.intersection(watched) {
            output.events.append(.watchStateDidChange(
                isPaired: durable.pairedPeer != nil,
                isWatchAppInstalled: status.contains(.appInstalled),
                isComplicationEnabled: status.contains(.complicationEnabled)))
        }
    }

    /// Watch: sends STATUS when its flags differ from those last told to the bound phone.
    mutating func announceStatusIfChanged() {
        guard role == .watch, let session = link, session.boundPeer != nil else { return }
        let status = ownStatus
        guard session.announcedStatus != status else { return }
        let sequence = session.statusSequence &+ 1
        link?.statusSequence = sequence
        link?.announcedStatus = status
        let deadline = clock + configuration.retransmissionTimeout
        link?.statusDeadline = deadline
        sendControl(.status(sequence: sequence, status: status))
    }

    // MARK: - Control items

    mutating func sendControl(_ control: SessionControl) {
        guard let session = link else { return }
        let id = takeID(&nextControlID)
        for frame in SessionFrame.fragment(channel: .control, id: id, payload: control.encode(), maxFrameLength: session.frameLength) {
            output.writes.append(frame.encode())
        }
    }

    mutating func sendAck(_ channel: SessionChannel, _ id: UInt32, received: UInt32) {
        if channel == .fileChunk { output.dirty = true } // the resume offset goes into the snapshot before the ACK
        sendControl(.ack(channel: channel, id: id, received: received))
    }

    func flagProblem(_ frame: SessionFrame) -> String? {
        if !frame.flags.intersection(.reserved).isEmpty { return "reserved flag bits 0xC0 are set" }
        if frame.channel == .control, !frame.flags.subtracting([.first, .last]).isEmpty {
            return "control frames carry only FIRST and LAST"
        }
        if frame.flags.contains(.expectsReply), frame.channel != .message, frame.channel != .messageData {
            return "EXPECTS-REPLY belongs only on message channels"
        }
        if frame.flags.contains(.currentComplication), frame.channel != .userInfo, frame.channel != .complicationUserInfo {
            return "CURRENT-COMPLICATION belongs only on user info channels"
        }
        return nil
    }

    mutating func receiveControlFrame(_ frame: SessionFrame) {
        guard let session = link, frame.id > session.lastControlID else { return } // a late copy of a finished item
        var assembly = session.control.flatMap { $0.id == frame.id ? $0 : nil } ?? ControlAssembly(id: frame.id)
        if let current = session.control, frame.id < current.id { return } // late, a newer item is under way
        let offset = Int(frame.offset)
        let end = offset + frame.bytes.count
        guard end <= SessionLink.maximumControlLength, frame.total.map({ Int($0) <= SessionLink.maximumControlLength }) ?? true else {
            violation(.itemTooLarge, "\(frame): control items are at most \(SessionLink.maximumControlLength) bytes")
            link?.control = nil
            return
        }
        if let total = frame.total { assembly.total = Int(total) }
        if let total = assembly.total, end > total || (frame.flags.contains(.last) && end != total) {
            violation(.inconsistentFragment, "\(frame) does not fit control item #\(frame.id) of \(total) bytes")
            link?.control = nil
            return
        }
        assembly.pieces[offset] = frame.bytes
        guard let bytes = assembly.assembled() else {
            link?.control = assembly
            return
        }
        link?.control = nil
        link?.lastControlID = frame.id
        let item = Reassembly(channel: .control, id: frame.id, total: bytes.count, flags: [.first, .last], bytes: bytes)
        let control: SessionControl
        do {
            control = try SessionControl.decode(item.bytes)
        } catch {
            violation(.malformedControl, "\(error)")
            return
        }
        switch control {
        case .hello(let hello): handleHello(hello)
        case .welcome(let welcome): handleWelcome(welcome)
        case .unknown(let op, _):
            violation(.unknownControl, "control op 0x\(SessionDeviceID.hexDigits(op)); ops 0x01–0x07 are defined, it is ignored")
        default:
            guard let peer = link?.boundPeer else {
                if link?.wasBound != true {
                    violation(.frameBeforeHandshake, "\(control) before the handshake bound the link; it is ignored")
                }
                return
            }
            let index = durable.ensurePeer(peer)
            switch control {
            case let .ack(channel, id, received): handleAck(channel: channel, id: id, received: received)
            case let .error(channel, id, code): handlePeerError(channel: channel, id: id, code: code)
            case let .cancel(channel, id): handlePeerCancel(channel: channel, id: id, peerIndex: index)
            case let .status(sequence, status):
                if sequence > (link?.peerStatusSequence ?? 0) {
                    link?.peerStatusSequence = sequence
                    link?.peerStatus = status
                    updatePeerStatus(status, peerIndex: index)
                    reachabilityCheckpoint()
                }
                sendControl(.statusAck(sequence: sequence))
            case .statusAck(let sequence):
                if link?.statusDeadline != nil, sequence == link?.statusSequence {
                    link?.statusDeadline = nil
                } else if sequence > (link?.statusSequence ?? 0) {
                    violation(.unexpectedStatusAck, "STATUS-ACK #\(sequence), but the last STATUS sent was #\(link?.statusSequence ?? 0)")
                }
            default:
                break
            }
        }
    }

    mutating func violation(_ kind: SessionViolationKind, _ detail: String) {
        output.events.append(.violation(kind, detail: detail))
    }

    // MARK: - Timers

    /// Every armed wait, in tie-break order.
    func dueTimers() -> [(deadline: Duration, timer: DueTimer)] {
        var timers: [(deadline: Duration, timer: DueTimer)] = []
        if let session = link {
            if case let .handshaking(_, deadline) = session.phase { timers.append((deadline, .handshake)) }
            if let deadline = session.statusDeadline { timers.append((deadline, .status)) }
            for lane in Lane.priorityOrder {
                if let deadline = session.lanes[lane.rawValue]?.deadline { timers.append((deadline, .lane(lane))) }
            }
            for lane in [Lane.message, .reply] {
                if let deadline = session.partials[lane.rawValue]?.deadline { timers.append((deadline, .partial(lane))) }
            }
        }
        for message in messages { timers.append((message.deadline, .message(message.id))) }
        return timers
    }

    mutating func fireDueTimers() {
        while true {
            var earliest: (deadline: Duration, timer: DueTimer)?
            for candidate in dueTimers() where candidate.deadline <= clock {
                if earliest == nil || candidate.deadline < earliest!.deadline { earliest = candidate }
            }
            guard let (deadline, timer) = earliest else { return }
            fire(timer, deadline: deadline)
        }
    }

    mutating func fire(_ timer: DueTimer, deadline: Duration) {
        switch timer {
        case .handshake:
            guard case let .handshaking(nonce, _) = link?.phase else { return }
            guard let peer = durable.pairedPeer else {
                link?.phase = .unpaired // unpaired meanwhile: nobody to ask
                return
            }
            output.events.append(.timeout(.handshake, deadline: deadline))
            let next = clock + configuration.handshakeTimeout
            link?.phase = .handshaking(nonce: nonce, deadline: next)
            // Every second HELLO states no option: a watch of a page before the options it states
            // refuses the longer HELLO (`malformed-control`), and answers the plain one.
            let count = (link?.helloCount ?? 0) + 1
            link?.helloCount = count
            let options = count % 2 == 1
            sendControl(.hello(ownHandshake(for: peer, nonce: nonce, window: options ? statedWindow : nil,
                                            compactFrames: options && configuration.compactFrames)))
        case .status:
            guard let session = link, let status = session.announcedStatus else {
                link?.statusDeadline = nil
                return
            }
            output.events.append(.timeout(.status(sequence: session.statusSequence), deadline: deadline))
            let next = clock + configuration.retransmissionTimeout
            link?.statusDeadline = next
            sendControl(.status(sequence: session.statusSequence, status: status))
        case .lane(let lane):
            guard var progress = link?.lanes[lane.rawValue] else { return }
            output.events.append(.timeout(.retransmission(progress.channel, id: progress.id), deadline: deadline))
            if progress.acked >= progress.payload.count {
                // All acknowledged but no "complete": resend the final byte to ask again.
                progress.next = max(0, progress.payload.count - 1)
                if progress.payload.isEmpty { progress.firstSent = false }
            } else {
                progress.next = progress.acked
                if progress.acked == 0 { progress.firstSent = false }
            }
            progress.deadline = nil
            link?.lanes[lane.rawValue] = progress
            pump()
        case .partial(let lane):
            guard let item = link?.partials[lane.rawValue] else { return }
            link?.partials[lane.rawValue] = nil
            output.events.append(.timeout(.incompleteItem(item.channel, id: item.id), deadline: deadline))
        case .message(let id):
            guard let index = messages.firstIndex(where: { $0.id == id }) else { return }
            let message = messages[index]
            output.events.append(.timeout(.messageReply(id), deadline: deadline))
            let limit = configuration.messageReplyTimeout
            let error: SessionError
            if message.delivered {
                error = SessionError(.messageReplyTimedOut, "\(id) was delivered but no reply came within \(limit)")
            } else if message.expectsReply {
                error = SessionError(.messageReplyTimedOut, "\(id) was not delivered, let alone answered, within \(limit)")
            } else {
                error = SessionError(.deliveryFailed, "\(id) was not delivered within \(limit)")
            }
            failMessage(at: index, error)
            pump()
        }
    }
}
