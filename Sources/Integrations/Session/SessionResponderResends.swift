import ReplayKit
import SessionCore

/// The session responder's model of the recorded peer (docs/replay-engine.md, "Responders"): what
/// each frame the core writes asks of the peer, which captured answer goes out and when, what the
/// peer resends when the core did not acknowledge, the frames held back until the real peer would
/// have sent them, and the phone's handshake timer. What it learnt from the capture is in
/// SessionResponder.swift.
extension SessionResponder {
    // MARK: the core's frames

    mutating func coreControl(_ control: SessionControl, nowNs: Int64, written: [UInt8]) {
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

    mutating func answerHello(_ hello: SessionHandshake, nowNs: Int64) {
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
    mutating func receiveCoreData(_ frame: SessionFrame, nowNs: Int64, written: [UInt8]) {
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
    mutating func scheduleReply(to message: UInt32, nowNs: Int64) {
        guard let frames = replies.removeValue(forKey: message), let first = frames.first else { return }
        let at = Self.answerTime(capturedNs: first.timeNs, delayNs: first.delayNs, nowNs: nowNs)
        heldReplies.append((at, frames))
        releaseReply(nowNs: nowNs)
    }

    mutating func releaseReply(nowNs: Int64) {
        guard replyInFlight == nil, !heldReplies.isEmpty else { return }
        let (at, frames) = heldReplies.removeFirst()
        replyInFlight = frames.first.flatMap { Self.decodeFrame($0.bytes) }?.id
        schedule(frames, from: max(at, nowNs), tracked: true)
    }

    // MARK: answers and resends


    /// Delivers the next captured answer for `key`, else makes `make` — unless the write it answers
    /// (`written`) is a recorded one whose answer the link's drop took.
    mutating func deliverAnswer(key: String, captured: [Answer]?, nowNs: Int64, written: [UInt8], make: SessionControl, what: String) {
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
    func answerLostWithLink(_ written: [UInt8], nowNs: Int64) -> Bool {
        let tolerance = Self.captureLatencyToleranceNs
        guard let drop = capturedDrop(after: nowNs, within: retransmissionNs + tolerance) else { return false }
        return recordedHostWrote(written, from: nowNs - tolerance, through: min(nowNs + tolerance, drop))
    }

    /// A captured answer, after its recorded delay, as the faults decide for its frame.
    mutating func schedule(_ answer: Answer, nowNs: Int64, sent: SessionFrame? = nil) {
        schedule(answer, atNs: Self.answerTime(capturedNs: answer.timeNs, delayNs: answer.delayNs, nowNs: nowNs), sent: sent)
    }

    /// Captured answers of one item, the first at `start` and the rest keeping their captured
    /// spacing after it; `tracked`: each is a peer data frame whose retransmission state the
    /// responder follows (a reply), not a control piece (a WELCOME).
    mutating func schedule(_ frames: [Answer], from start: Int64, tracked: Bool) {
        guard let first = frames.first else { return }
        for answer in frames {
            schedule(answer, atNs: start + (answer.timeNs - first.timeNs), sent: tracked ? Self.decodeFrame(answer.bytes) : nil)
        }
    }

    /// A captured answer at `at`, as the faults decide for its frame.
    mutating func schedule(_ answer: Answer, atNs at: Int64, sent: SessionFrame?) {
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
    mutating func enqueue(made control: SessionControl, atNs: Int64, what: String) {
        for frame in SessionFrame.fragment(channel: .control, id: 0, payload: control.encode(), maxFrameLength: frameLength) {
            made += 1
            append(Delivery(timeNs: atNs, order: 0, bytes: frame.encode(), made: what, sent: nil))
        }
    }

    mutating func append(_ delivery: Delivery) {
        var delivery = delivery
        order += 1
        delivery.order = order
        deliveries.append(delivery)
        deliveries.sort { ($0.timeNs, $0.order) < ($1.timeNs, $1.order) }
    }

    /// Sends a window of `key`'s frames again from the acknowledged offset.
    mutating func resend(_ key: ItemKey, nowNs: Int64, retransmission: Bool, why: String) {
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
    mutating func fillWindow(_ key: ItemKey, nowNs: Int64) {
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
    mutating func releaseHeld(nowNs: Int64) {
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
    func captureResends(_ key: ItemKey, afterNs: Int64, withinNs: Int64? = nil) -> Bool {
        let within = withinNs ?? 2 * retransmissionNs
        guard let arrivals = itemArrivals[key] else { return false }
        // Only a frame that brings the acknowledged offset counts: later frames of the item do not
        // repair a gap.
        let acked = outgoing[key]?.acked ?? 0
        return arrivals.contains { $0.timeNs > afterNs && $0.timeNs <= afterNs + within && $0.offset <= acked && $0.end > acked }
    }

    /// The peer sent frame `sent` at `atNs` (`lost`: a fault lost it on the way).
    mutating func peerSent(_ sent: SessionFrame, atNs: Int64, lost: Bool) {
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
    mutating func advance(nowNs: Int64) {
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
    mutating func resendHello(nowNs: Int64) {
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

    mutating func dropBelowWatermarks(_ marks: SessionWatermarks) {
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

    func watermarksHeld(over captured: SessionWatermarks) -> SessionWatermarks {
        func highest(_ channel: SessionChannel, _ base: UInt32) -> UInt32 {
            completed.filter { $0.channel == channel.rawValue }.map(\.id).reduce(base, max)
        }
        return SessionWatermarks(
            applicationContext: highest(.applicationContext, captured.applicationContext),
            userInfo: highest(.userInfo, captured.userInfo),
            complicationUserInfo: highest(.complicationUserInfo, captured.complicationUserInfo),
            file: highest(.fileChunk, captured.file))
    }

    func fileResume() -> (UInt32, UInt32)? {
        incoming.filter { $0.key.channel == SessionChannel.fileChunk.rawValue && $0.value.held > 0 }
            .max { $0.key.id < $1.key.id }.map { ($0.key.id, $0.value.held) }
    }
}
