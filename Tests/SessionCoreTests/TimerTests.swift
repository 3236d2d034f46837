import MonkeyC
@testable import SessionCore
import Testing

/// A phone core with its link bound by a hand-made WELCOME at `start`; the watch side is silent.
func boundPhone(at start: Duration, maxPayload: Int = 20) throws -> SessionCore {
    var core = SessionCore(role: .phone, identity: phoneID, randomSource: SeededSessionRandom(seed: 3))
    _ = core.setPairedDevice(watchID, now: start)
    _ = try core.activate(now: start)
    let hello = try helloIn(core.linkUp(maxPayload: maxPayload, now: start))
    let welcome = SessionHandshake(identity: watchID, incarnation: 77, epoch: 5, nonce: hello.nonce,
                                   status: [.paired, .appInstalled, .reachable, .activated])
    for frame in SessionFrame.fragment(channel: .control, id: 1, payload: SessionControl.welcome(welcome).encode(), maxFrameLength: maxPayload) {
        _ = core.receive(frame.encode(), now: start)
    }
    #expect(core.linkPeer == watchID)
    return core
}

/// The HELLO among a call's writes.
func helloIn(_ actions: [SessionAction]) throws -> SessionHandshake {
    let frames = actions.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
    guard case .control(.hello(let hello)) = try SessionReassembledItem.decodeItem(frames).item else {
        throw SessionError(.genericError, "no HELLO in \(actions)")
    }
    return hello
}

func writes(_ actions: [SessionAction]) -> [[UInt8]] {
    actions.compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
}

func events(_ actions: [SessionAction]) -> [SessionEvent] {
    actions.compactMap { if case .event(let event) = $0 { event } else { nil } }
}

@Suite struct TimerTests {
    static let start: Duration = .seconds(100)

    @Test func handshakeIsResentAtItsDeadlineAndNotBefore() throws {
        var core = SessionCore(role: .phone, identity: phoneID, randomSource: SeededSessionRandom(seed: 3))
        _ = core.setPairedDevice(watchID, now: Self.start)
        let hello = try helloIn(core.linkUp(maxPayload: 20, now: Self.start))
        let deadline = Self.start + .seconds(3)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        let fired = core.handleTimeout(now: deadline)
        #expect(events(fired) == [.timeout(.handshake, deadline: deadline)])
        #expect(try helloIn(fired) == hello)
        #expect(core.nextDeadline == deadline + .seconds(3))
    }

    @Test func retransmissionGoesBackAtItsDeadlineAndNotBefore() throws {
        var core = try boundPhone(at: Self.start)
        let (id, actions) = try core.transferUserInfo(numbered(1, size: 200), now: Self.start)
        let first = try writes(actions).map(SessionFrame.decode)
        #expect(first.count == 8) // one window
        #expect(first.allSatisfy { !$0.flags.contains(.retransmission) })
        let deadline = Self.start + .seconds(2)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        let fired = core.handleTimeout(now: deadline)
        #expect(events(fired) == [.timeout(.retransmission(.userInfo, id: id.rawValue), deadline: deadline)])
        let again = try writes(fired).map(SessionFrame.decode)
        #expect(again == first.map { frame in
            var resent = frame
            resent.flags.insert(.retransmission)
            return resent
        })
        #expect(core.nextDeadline == deadline + .seconds(2))
    }

    @Test func anAckThatAdvancesPushesTheRetransmissionDeadlineBack() throws {
        var core = try boundPhone(at: Self.start)
        let (id, _) = try core.transferUserInfo(numbered(1, size: 200), now: Self.start)
        let ack = SessionFrame.fragment(channel: .control, id: 9, payload: SessionControl.ack(channel: .userInfo, id: id.rawValue, received: 80).encode(), maxFrameLength: 20)
        let actions = core.receive(ack[0].encode(), now: Self.start + .seconds(1))
        #expect(try writes(actions).map(SessionFrame.decode).first?.offset == 80)
        #expect(core.nextDeadline == Self.start + .seconds(3))
    }

    @Test func replyTimeoutFailsTheMessageAtItsDeadlineAndNotBefore() throws {
        var core = try boundPhone(at: Self.start)
        let (id, _) = try core.sendMessage(numbered(1), expectsReply: true, now: Self.start)
        // The watch takes the message (complete ACK) but never replies.
        let ack = SessionFrame.fragment(channel: .control, id: 9, payload: SessionControl.ack(channel: .message, id: id.rawValue, received: SessionLink.complete).encode(), maxFrameLength: 20)
        _ = core.receive(ack[0].encode(), now: Self.start + .milliseconds(50))
        let deadline = Self.start + .seconds(10)
        #expect(core.nextDeadline == deadline)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        let fired = core.handleTimeout(now: deadline)
        guard case let .messageFailed(failed, error) = events(fired).last else {
            Issue.record("expected messageFailed, got \(fired)")
            return
        }
        #expect(events(fired).first == .timeout(.messageReply(id), deadline: deadline))
        #expect(failed == id)
        #expect(error.code == .messageReplyTimedOut)
        #expect(core.nextDeadline == nil)
        #expect(!core.hasPendingWork)
    }

    @Test func partOfAMessageIsDroppedAtItsDeadlineAndNotBefore() throws {
        var core = try boundPhone(at: Self.start)
        let part = SessionFrame(channel: .message, flags: [.first], id: 4, totalOrOffset: 40, bytes: Array(repeating: 1, count: 10))
        _ = core.receive(part.encode(), now: Self.start)
        let deadline = Self.start + .seconds(10)
        #expect(core.nextDeadline == deadline)
        #expect(core.hasPendingWork)
        #expect(core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        #expect(core.handleTimeout(now: deadline) == [.event(.timeout(.incompleteItem(.message, id: 4), deadline: deadline))])
        #expect(!core.hasPendingWork)
        #expect(core.nextDeadline == nil)
    }

    @Test func statusIsResentAtItsDeadlineUntilAcknowledged() throws {
        var pair = Pair(seed: 9)
        pair.linkIsUp = false // the phone hears nothing from now on
        try pair.act(.watch) { core, now throws(SessionError) in
            try core.setWatchAppState(WatchAppState(installed: true, complicationEnabled: true, foreground: true), now: now)
        }
        let deadline = pair.now + .seconds(2)
        #expect(pair.watch.core.nextDeadline == deadline)
        #expect(pair.watch.core.handleTimeout(now: deadline - .nanoseconds(1)) == [])
        let fired = pair.watch.core.handleTimeout(now: deadline)
        #expect(events(fired) == [.timeout(.status(sequence: 1), deadline: deadline)])
        let resent = try SessionReassembledItem.decodeItem(writes(fired)).item
        #expect(resent == .control(.status(sequence: 1, status: [.paired, .appInstalled, .complicationEnabled, .reachable, .activated])))
    }

    @Test func aLateCallFiresEverythingDueInDeadlineOrder() throws {
        var core = try boundPhone(at: Self.start)
        let (message, _) = try core.sendMessage(numbered(1), expectsReply: true, now: Self.start)
        let (info, _) = try core.transferUserInfo(numbered(2), now: Self.start + .seconds(1))
        let fired = events(core.handleTimeout(now: Self.start + .seconds(11)))
        let timeouts = fired.compactMap { if case let .timeout(timer, deadline) = $0 { "\(timer)@\(deadline)" } else { nil } }
        #expect(timeouts == [
            "retransmission message #\(message.rawValue)@\(Self.start + .seconds(2))",
            "retransmission user-info #\(info.rawValue)@\(Self.start + .seconds(3))",
            // The retransmission timers were re-armed from the late call's time, so only the reply timer remains due.
            "message-reply \(message)@\(Self.start + .seconds(10))",
        ])
    }
}
