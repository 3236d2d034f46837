// The handshake: HELLO and WELCOME bind the link to a peer; STATUS keeps the peer's view of
// this side's flags current while bound.

extension SessionCore {
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

    /// Phone: a fresh HELLO (new nonce) on the current link, restarting everything in flight.
    mutating func startHandshake() {
        guard link != nil else { return }
        let undelivered = SessionError(.notReachable, "the link is handshaking again before the message was delivered")
        let awaitingReply = SessionError(.messageReplyFailed, "the link is handshaking again while the reply was awaited")
        guard let peer = durable.pairedPeer else {
            endBinding(entering: .unpaired, undelivered: undelivered, awaitingReply: awaitingReply)
            return
        }
        let nonce = random.nonZero32()
        let handshake = LinkSession.Handshake(nonce: nonce, deadline: clock + configuration.handshakeTimeout)
        endBinding(entering: .handshaking(handshake), undelivered: undelivered, awaitingReply: awaitingReply)
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
        if let bound = link?.binding, let answer = bound.watch?.welcome, bound.peer == hello.identity, bound.nonce == hello.nonce {
            // The phone missed the WELCOME: answer again, keep everything (the window included,
            // whether or not this copy of the HELLO states one).
            sendControl(.welcome(ownHandshake(for: bound.peer, nonce: bound.nonce, window: answer.window, compactFrames: answer.compactFrames)))
            // The phone takes this WELCOME only if it lost the first: frames from here on start
            // the compact context afresh (a full frame first on each channel), as the phone's does.
            if answer.compactFrames { link?.binding?.sendContext = SessionFrameContext() }
            return
        }
        // A WELCOME states a window only in answer to a HELLO that states one; compact frames
        // likewise.
        let answer = LinkSession.Welcome(window: hello.window == nil ? nil : statedWindow,
                                         compactFrames: hello.compactFrames && configuration.compactFrames)
        let window = LinkSession.Binding.window(own: answer.window, peer: hello.window)
        let binding = LinkSession.Binding(
            peer: hello.identity, nonce: hello.nonce, window: window.frames, windowNegotiated: window.negotiated,
            compactFrames: answer.compactFrames,
            watch: LinkSession.WatchBinding(welcome: answer, announcedStatus: ownStatus))
        if link?.boundPeer != nil {
            endBinding(entering: .bound(binding),
                       undelivered: SessionError(.notReachable, "the phone handshook again before the message was delivered"),
                       awaitingReply: SessionError(.messageReplyFailed, "the phone handshook again while the reply was awaited"))
        } else {
            link?.phase = .bound(binding)
        }
        link?.receiveContext = answer.compactFrames ? SessionFrameContext() : nil
        output.events.append(.handshakeCompleted(peer: hello.identity, peerEpoch: hello.epoch, peerIncarnation: hello.incarnation))
        applyPeerHandshake(hello)
        sendControl(.welcome(ownHandshake(for: hello.identity, nonce: hello.nonce, window: answer.window, compactFrames: answer.compactFrames)))
        cancelStaleResume(hello.fileResumeID)
        reachabilityCheckpoint()
        pump()
    }

    mutating func handleWelcome(_ welcome: SessionHandshake) {
        guard role == .phone else {
            violation(.unexpectedHandshake, "WELCOME from \(welcome.identity) sent to a watch; only phones take WELCOME")
            return
        }
        guard case let .handshaking(handshake) = link?.phase else {
            if link?.binding?.nonce == welcome.nonce { return } // a repeated answer
            violation(.unexpectedHandshake, "WELCOME (nonce \(hex32(welcome.nonce))) while no HELLO is outstanding on this link")
            return
        }
        let nonce = handshake.nonce
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
        // A watch states compact frames only in answer to a HELLO that stated them.
        let compact = configuration.compactFrames && welcome.compactFrames
        let window = LinkSession.Binding.window(own: statedWindow, peer: welcome.window)
        link?.phase = .bound(LinkSession.Binding(peer: paired, nonce: nonce, window: window.frames, windowNegotiated: window.negotiated,
                                                 compactFrames: compact, watch: nil))
        link?.receiveContext = compact ? SessionFrameContext() : nil
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
        link?.binding?.fileResume = handshake.fileResumeID == 0 ? nil
            : LinkSession.FileResume(id: handshake.fileResumeID, offset: Int(handshake.fileResumeOffset))
        link?.binding?.peerStatus = handshake.status
        link?.binding?.peerStatusSequence = 0
        updatePeerStatus(handshake.status, peerIndex: index)
    }

    /// The peer holds part of a file this side no longer sends (cancelled while the link was down):
    /// a CANCEL lets it discard the part.
    mutating func cancelStaleResume(_ id: UInt32) {
        guard id != 0, id < durable.nextFileID, let peer = link?.boundPeer, let index = durable.peerIndex(peer),
              !durable.peers[index].fileQueue.contains(where: { $0.id == id }) else { return }
        link?.binding?.fileResume = nil
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
        guard let session = link, let watch = session.binding?.watch else { return }
        let status = ownStatus
        guard watch.announcedStatus != status else { return }
        let sequence = session.statusSequence &+ 1
        link?.statusSequence = sequence
        let deadline = clock + configuration.retransmissionTimeout
        link?.binding?.watch = LinkSession.WatchBinding(welcome: watch.welcome, announcedStatus: status, statusDeadline: deadline)
        sendControl(.status(sequence: sequence, status: status))
    }
}
