// The host's inputs: pairing, the watch app's state, the link, frames, time; control items and timers
// (the handshake is in SessionCore+Handshake.swift).

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
            if link?.boundPeer != nil {
                endBinding(entering: .awaitingHello,
                           undelivered: SessionError(.notReachable, "the paired phone changed before delivery"),
                           awaitingReply: SessionError(.messageReplyFailed, "the paired phone changed while the reply was awaited"))
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

    /// Ends everything tied to the current binding of the link (or the handshake under way),
    /// keeping the link up, and enters `next`: the binding's transfers go with its value, messages
    /// under way fail, replies owed are dropped.
    mutating func endBinding(entering next: LinkSession.Phase, undelivered: SessionError, awaitingReply: SessionError) {
        link?.enter(next)
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
        link?.binding?.lanes[Lane.reply.rawValue] = nil
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
        if let progress = link?.binding?.lanes[Lane.message.rawValue], progress.id == message.id.rawValue {
            link?.binding?.lanes[Lane.message.rawValue] = nil
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
                if sequence > (link?.binding?.peerStatusSequence ?? 0) {
                    link?.binding?.peerStatusSequence = sequence
                    link?.binding?.peerStatus = status
                    updatePeerStatus(status, peerIndex: index)
                    reachabilityCheckpoint()
                }
                sendControl(.statusAck(sequence: sequence))
            case .statusAck(let sequence):
                if link?.statusDeadline != nil, sequence == link?.statusSequence {
                    link?.binding?.watch?.statusDeadline = nil
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
            if case let .handshaking(handshake) = session.phase { timers.append((handshake.deadline, .handshake)) }
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
            guard case var .handshaking(handshake) = link?.phase else { return }
            guard let peer = durable.pairedPeer else {
                // Unpaired meanwhile: nobody to ask. No binding ends here, so a control item
                // half put together stays (unlike `endBinding`).
                link?.phase = .unpaired
                return
            }
            output.events.append(.timeout(.handshake, deadline: deadline))
            handshake.deadline = clock + configuration.handshakeTimeout
            // Every second HELLO states no option: a watch of a page before the options it states
            // refuses the longer HELLO (`malformed-control`), and answers the plain one.
            handshake.hellosSent += 1
            link?.phase = .handshaking(handshake)
            let options = handshake.hellosSent % 2 == 1
            let nonce = handshake.nonce
            sendControl(.hello(ownHandshake(for: peer, nonce: nonce, window: options ? statedWindow : nil,
                                            compactFrames: options && configuration.compactFrames)))
        case .status:
            guard let session = link, let status = session.binding?.watch?.announcedStatus else { return }
            output.events.append(.timeout(.status(sequence: session.statusSequence), deadline: deadline))
            let next = clock + configuration.retransmissionTimeout
            link?.binding?.watch?.statusDeadline = next
            sendControl(.status(sequence: session.statusSequence, status: status))
        case .lane(let lane):
            guard var progress = link?.binding?.lanes[lane.rawValue] else { return }
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
            link?.binding?.lanes[lane.rawValue] = progress
            pump()
        case .partial(let lane):
            guard let item = link?.binding?.partials[lane.rawValue] else { return }
            link?.binding?.partials[lane.rawValue] = nil
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
