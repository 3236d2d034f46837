import MonkeyC
@testable import SessionCore
import Testing

@Suite struct ActivationTests {
    @Test func activationCompletesAtOnceAndPropertiesAreValidOnlyWhileActivated() throws {
        var pair = Pair(seed: 30, activate: false)
        #expect(pair.phone.core.activationState == .notActivated)
        #expect(!pair.phone.core.isPaired && !pair.phone.core.isWatchAppInstalled && pair.phone.core.watchStorageKey == nil)
        try pair.act(.phone) { core, now throws(SessionError) in try core.activate(now: now) }
        pair.settle()
        #expect(pair.phone.appEvents.contains(.activationDidComplete(.activated, error: nil)))
        #expect(pair.phone.core.isPaired)
        #expect(pair.phone.core.isWatchAppInstalled)
        #expect(pair.phone.core.watchStorageKey == "watch-0ff1ce000000400080000000000000a1")
    }

    @Test func reachabilityIsReportedOnBothSidesAndFollowsTheWatchApp() throws {
        var pair = Pair(seed: 31)
        #expect(pair.phone.appEvents.contains(.reachabilityDidChange(true)))
        #expect(pair.watch.appEvents.contains(.reachabilityDidChange(true)))
        try pair.act(.watch) { core, now throws(SessionError) in try core.setWatchAppState(WatchAppState(foreground: false), now: now) }
        pair.settle()
        #expect(pair.watch.appEvents.last == .reachabilityDidChange(false))
        #expect(pair.phone.appEvents.last == .reachabilityDidChange(false))
        #expect(!pair.phone.core.isReachable && !pair.watch.core.isReachable)
        pair.dropLink()
        try pair.act(.watch) { core, now throws(SessionError) in try core.setWatchAppState(WatchAppState(foreground: true), now: now) }
        #expect(!pair.watch.core.isReachable)
        pair.raiseLink()
        pair.settle()
        #expect(pair.phone.core.isReachable && pair.watch.core.isReachable)
    }

    @Test func watchStateChangesReachThePhone() throws {
        var pair = Pair(seed: 32)
        try pair.act(.watch) { core, now throws(SessionError) in
            try core.setWatchAppState(WatchAppState(installed: true, complicationEnabled: true, foreground: true), now: now)
        }
        pair.settle()
        #expect(pair.phone.appEvents.last == .watchStateDidChange(isPaired: true, isWatchAppInstalled: true, isComplicationEnabled: true))
        #expect(pair.phone.core.isComplicationEnabled)
    }

    @Test func contentReceivedBeforeActivationIsPendingUntilActivate() throws {
        var pair = Pair(seed: 33, activate: false)
        try pair.act(.phone) { core, now throws(SessionError) in try core.activate(now: now) }
        pair.settle()
        pair.transferUserInfo(numbered(5), from: .phone)
        try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(numbered(6), now: now) }
        try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(numbered(7), now: now) }
        pair.settle()
        #expect(pair.receivedUserInfo(.watch).isEmpty)
        #expect(pair.watch.core.hasContentPending)
        #expect(pair.finishedUserInfo(.phone) == [1]) // acknowledged: it is durable on the watch
        let seen = pair.watch.appEvents.count
        try pair.act(.watch) { core, now throws(SessionError) in try core.activate(now: now) }
        #expect(Array(pair.watch.appEvents.dropFirst(seen).prefix(3)) == [
            .activationDidComplete(.activated, error: nil),
            .didReceiveUserInfo(1, numbered(5), isCurrentComplicationInfo: false),
            .didReceiveApplicationContext(numbered(7)),
        ])
        #expect(!pair.watch.core.hasContentPending)
    }

    @Test func watchSwitchGoesInactiveDeliversWhatArrivesThenDeactivates() throws {
        var pair = Pair(seed: 34)
        pair.watchAutoReplies = false
        let message = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(numbered(1), expectsReply: true, now: now) }
        pair.settle(limit: .seconds(1))
        // The phone switches to watch B while the old watch still has a user info on its way.
        pair.transferUserInfo(numbered(42), from: .watch)
        let incoming = try #require(pair.watch.core.messagesAwaitingReply.first)
        pair.phone.allEvents = []
        pair.apply(pair.phone.core.setPairedDevice(watchBID, now: pair.now), to: .phone)
        #expect(pair.phone.core.activationState == .inactive)
        #expect(pair.phone.allEvents.prefix(2) == [
            .sessionDidBecomeInactive,
            .messageFailed(message, SessionError(.sessionInactive, "the session became inactive (the phone is switching watches)")),
        ])
        #expect(throws: SessionError.self) { try pair.phone.core.transferUserInfo(numbered(2), now: pair.now) }
        pair.settle(limit: .seconds(1))
        // Data already on its way from the old watch is still delivered while inactive.
        #expect(pair.receivedUserInfo(.phone) == [42])
        #expect(pair.phone.core.activationState == .inactive)
        // The watch may still answer the phone's earlier message; the phone drops the late reply.
        try pair.act(.watch) { core, now throws(SessionError) in try core.replyToMessage(incoming, with: ["late": true], now: now) }
        pair.settle(limit: .seconds(1))
        #expect(pair.phone.allEvents.contains(.lateReplyDiscarded(message)))
        pair.dropLink()
        #expect(pair.phone.allEvents.last == .sessionDidDeactivate)
        #expect(pair.phone.core.activationState == .notActivated)
        #expect(!pair.phone.core.isPaired)

        // Watch B comes up; the phone activates again and is bound to it.
        var watchB = SessionCore(role: .watch, identity: watchBID, randomSource: SeededSessionRandom(seed: 77))
        _ = watchB.setPairedDevice(phoneID, now: pair.now)
        _ = try watchB.activate(now: pair.now)
        pair.watch = Host(core: watchB)
        pair.raiseLink()
        pair.settle()
        try pair.act(.phone) { core, now throws(SessionError) in try core.activate(now: now) }
        pair.settle()
        #expect(pair.phone.core.activationState == .activated)
        #expect(pair.phone.core.linkPeer == watchBID)
        #expect(pair.phone.core.watchStorageKey == "watch-" + watchBID.compactHex)
        #expect(pair.phone.core.snapshot.peerIdentities == [watchID, watchBID])
        pair.transferUserInfo(numbered(3), from: .phone)
        pair.settle()
        #expect(pair.receivedUserInfo(.watch) == [3])
    }

    @Test func transfersQueuedForTheOldWatchWaitInItsStorage() throws {
        var pair = Pair(seed: 35)
        pair.dropLink()
        pair.transferUserInfo(numbered(8), from: .phone)
        pair.apply(pair.phone.core.setPairedDevice(watchBID, now: pair.now), to: .phone)
        #expect(pair.phone.core.activationState == .notActivated)
        let record = try #require(pair.phone.core.snapshot.peers.first { $0.identity == watchID })
        #expect(record.userInfoQueue.map(\.id) == [1])
        try pair.act(.phone) { core, now throws(SessionError) in try core.activate(now: now) }
        #expect(pair.phone.core.outstandingUserInfoTransfers.isEmpty)
    }
}

@Suite struct ChannelTests {
    @Test func newerContextReplacesAnUndeliveredOlderOne() throws {
        var pair = Pair(seed: 40)
        pair.dropLink()
        for n in 1...3 {
            try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(numbered(n), now: now) }
        }
        pair.raiseLink()
        pair.settle()
        #expect(pair.watch.appEvents.filter { if case .didReceiveApplicationContext = $0 { true } else { false } }
                == [.didReceiveApplicationContext(numbered(3))])
    }

    @Test func identicalContextIsNotSentAgain() throws {
        var pair = Pair(seed: 41)
        try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(["mode": "run", "v": 1], now: now) }
        pair.settle()
        pair.phone.writes = []
        try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(["v": 1, "mode": "run"], now: now) }
        #expect(pair.phone.writes.isEmpty)
        #expect(pair.phone.appEvents.last == .applicationContextUnchanged)
    }

    @Test func contextUpdatedWhileUnreachableArrivesWhenTheLinkIsBack() throws {
        var pair = Pair(seed: 42)
        pair.dropLink()
        try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(numbered(4), now: now) }
        pair.run(until: pair.now + .seconds(60))
        pair.raiseLink()
        pair.settle()
        #expect(number(of: pair.watch.core.receivedApplicationContext) == 4)
    }

    @Test func highPriorityMessageOvertakesAQueuedBackgroundTransfer() throws {
        var pair = Pair(seed: 43)
        for n in 0..<3 { pair.transferUserInfo(numbered(n, size: 2_000), from: .phone) }
        try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(numbered(99), expectsReply: false, now: now) }
        pair.settle()
        let order = pair.watch.appEvents.compactMap { event -> Int? in
            switch event {
            case .didReceiveMessage(_, let value, _), .didReceiveUserInfo(_, let value, _): number(of: value)
            default: nil
            }
        }
        #expect(order == [99, 0, 1, 2])
    }

    @Test func messageWithoutReplyHandlerReportsDeliveryOnce() throws {
        var pair = Pair(seed: 44)
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessageData([1, 2, 3], expectsReply: false, now: now) }
        pair.settle()
        #expect(pair.phone.appEvents.filter { $0 == .messageDelivered(id) }.count == 1)
        #expect(pair.watch.appEvents.contains(.didReceiveMessageData(id, [1, 2, 3], expectsReply: false)))
    }

    @Test func cancelledUserInfoIsNotDeliveredAndLeavesTheOutstandingList() throws {
        var pair = Pair(seed: 45)
        pair.dropLink()
        let transferred = pair.transferUserInfo(numbered(1), from: .phone)
        let first = try #require(transferred)
        pair.transferUserInfo(numbered(2), from: .phone)
        #expect(pair.phone.core.outstandingUserInfoTransfers.map(\.id) == [1, 2])
        try pair.act(.phone) { core, now throws(SessionError) in try core.cancelUserInfoTransfer(first, now: now) }
        #expect(pair.phone.core.outstandingUserInfoTransfers.map(\.id) == [2])
        pair.raiseLink()
        pair.settle()
        #expect(pair.receivedUserInfo(.watch) == [2])
        #expect(pair.finishedUserInfo(.phone) == [2])
    }

    @Test func cancelledFileMidTransferIsDiscardedByTheReceiver() throws {
        var pair = Pair(seed: 46)
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.transferFile(Array(repeating: 7, count: 3_000), metadata: nil, now: now) }
        while pair.watch.files[Host.fileKey(phoneID, id)] == nil { pair.step() }
        try pair.act(.phone) { core, now throws(SessionError) in try core.cancelFileTransfer(id, now: now) }
        pair.settle()
        #expect(pair.watch.files[Host.fileKey(phoneID, id)] == nil)
        #expect(pair.phone.core.outstandingFileTransfers.isEmpty)
        #expect(!pair.phone.appEvents.contains { if case .fileTransferDidFinish = $0 { true } else { false } })
        #expect(!pair.watch.core.hasPendingWork)
    }

    @Test func emptyFileArrives() throws {
        var pair = Pair(seed: 47)
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.transferFile([], metadata: nil, now: now) }
        pair.settle()
        #expect(pair.watch.appEvents.contains(.didReceiveFile(SessionFile(peer: phoneID, id: id, size: 0, metadata: nil))))
        #expect(pair.watch.files[Host.fileKey(phoneID, id)] == [])
        #expect(pair.phone.appEvents.last == .fileTransferDidFinish(id, error: nil))
    }
}

@Suite struct ComplicationTests {
    /// 50 high-priority transfers at 1 s intervals from `t0`, on a link that stays down so they queue.
    func spendBudget() throws -> (pair: Pair, t0: Duration) {
        var pair = Pair(seed: 50)
        pair.dropLink()
        let t0 = pair.now
        for n in 0..<50 {
            pair.run(until: t0 + .seconds(Int64(n)))
            #expect(pair.phone.core.remainingComplicationUserInfoTransfers == 50 - n)
            pair.transferUserInfo(numbered(n), from: .phone, complication: true)
        }
        return (pair, t0)
    }

    @Test func budgetRunsOutAtExactlyFifty() throws {
        let (pair, _) = try spendBudget()
        #expect(pair.phone.core.remainingComplicationUserInfoTransfers == 0)
        let outstanding = pair.phone.core.outstandingUserInfoTransfers
        #expect(outstanding.count == 50)
        #expect(outstanding.allSatisfy { $0.isHighPriority })
        #expect(outstanding.filter(\.isCurrentComplicationInfo).map(\.id) == [50])
    }

    @Test func overBudgetComplicationInfoQueuesBehindPlainUserInfo() throws {
        var (pair, _) = try spendBudget()
        pair.transferUserInfo(numbered(100), from: .phone)
        let transferred = pair.transferUserInfo(numbered(101), from: .phone, complication: true)
        let extra = try #require(transferred)
        let record = try #require(pair.phone.core.outstandingUserInfoTransfers.first { $0.id == extra })
        #expect(!record.isHighPriority && record.isCurrentComplicationInfo)
        pair.raiseLink()
        pair.phone.writes = []
        pair.settle()
        let channels = try pair.phone.writes.map(SessionFrame.decode).filter { $0.id == extra.rawValue && $0.flags.contains(.first) }.map(\.channel)
        #expect(Set(channels) == [.userInfo])
        // The complication channel and the user info queue run side by side; over budget, 101 waits
        // behind 100 like any user info.
        let order = pair.receivedUserInfo(.watch)
        #expect(order.filter { $0 < 50 } == Array(0..<50))
        #expect(order.filter { $0 >= 100 } == [100, 101])
    }

    @Test func budgetRefillsOneWindowAfterEachTransfer() throws {
        var (pair, t0) = try spendBudget()
        let window: Duration = .seconds(86_400)
        _ = pair.phone.core.handleTimeout(now: t0 + window - .nanoseconds(1))
        #expect(pair.phone.core.remainingComplicationUserInfoTransfers == 0)
        _ = pair.phone.core.handleTimeout(now: t0 + window)
        #expect(pair.phone.core.remainingComplicationUserInfoTransfers == 1)
        _ = pair.phone.core.handleTimeout(now: t0 + window + .seconds(49))
        #expect(pair.phone.core.remainingComplicationUserInfoTransfers == 50)
    }

    @Test func complicationInfoOvertakesQueuedUserInfo() throws {
        var pair = Pair(seed: 51)
        for n in 0..<3 { pair.transferUserInfo(numbered(n, size: 1_000), from: .phone) }
        pair.transferUserInfo(numbered(9), from: .phone, complication: true)
        pair.settle()
        #expect(pair.receivedUserInfo(.watch) == [9, 0, 1, 2])
    }
}

@Suite struct ErrorTests {
    /// Every API that needs an activated session, with a way to call it.
    ///
    /// `nonisolated(unsafe)` because the closures are not `@Sendable`: the array is a `let`,
    /// immutable once Swift's one-time static initialisation has run, and each closure captures
    /// nothing, only changing the `SessionCore` passed to it (a fresh one per call).
    nonisolated(unsafe) static let calls: [(String, (inout SessionCore) throws(SessionError) -> Void)] = [
        ("updateApplicationContext", { core throws(SessionError) in _ = try core.updateApplicationContext(["a": 1], now: .zero) }),
        ("sendMessage", { core throws(SessionError) in _ = try core.sendMessage(["a": 1], expectsReply: true, now: .zero) }),
        ("sendMessageData", { core throws(SessionError) in _ = try core.sendMessageData([1], expectsReply: false, now: .zero) }),
        ("transferUserInfo", { core throws(SessionError) in _ = try core.transferUserInfo(["a": 1], now: .zero) }),
        ("transferCurrentComplicationUserInfo", { core throws(SessionError) in _ = try core.transferCurrentComplicationUserInfo(["a": 1], now: .zero) }),
        ("transferFile", { core throws(SessionError) in _ = try core.transferFile([1], metadata: nil, now: .zero) }),
        ("cancelUserInfoTransfer", { core throws(SessionError) in _ = try core.cancelUserInfoTransfer(1, now: .zero) }),
        ("cancelFileTransfer", { core throws(SessionError) in _ = try core.cancelFileTransfer(1, now: .zero) }),
    ]

    @Test func everySendingCallBeforeActivationThrows7004AndChangesNothing() {
        for (name, call) in Self.calls {
            var core = SessionCore(role: .phone, identity: phoneID, randomSource: SeededSessionRandom(seed: 1))
            _ = core.setPairedDevice(watchID, now: .zero)
            let before = core.snapshot
            do {
                try call(&core)
                Issue.record("\(name) did not throw")
            } catch {
                #expect(error.code == .sessionNotActivated, "\(name)")
            }
            #expect(core.snapshot == before, "\(name) changed the state")
            #expect(core.nextDeadline == nil)
        }
    }

    @Test func phoneWithoutAPairedWatchThrows7005() throws {
        var core = SessionCore(role: .phone, identity: phoneID, randomSource: SeededSessionRandom(seed: 1))
        _ = try core.activate(now: .zero)
        #expect(!core.isPaired)
        #expect(throws: SessionError.self) { try core.transferUserInfo(["a": 1], now: .zero) }
        do { _ = try core.transferUserInfo(["a": 1], now: .zero) } catch { #expect(error.code == .deviceNotPaired) }
    }

    @Test func phoneThrows7006WhenTheWatchAppIsNotInstalled() throws {
        var pair = Pair(seed: 60, connect: false)
        _ = try pair.watch.core.setWatchAppState(WatchAppState(installed: false), now: .zero)
        pair.raiseLink()
        pair.settle()
        #expect(!pair.phone.core.isWatchAppInstalled)
        do {
            _ = try pair.phone.core.updateApplicationContext(["a": 1], now: pair.now)
            Issue.record("expected 7006")
        } catch {
            #expect(error.code == .watchAppNotInstalled)
        }
    }

    @Test func messageToAnUnreachableWatchFailsAtOnceWith7007() throws {
        var pair = Pair(seed: 61)
        try pair.act(.watch) { core, now throws(SessionError) in try core.setWatchAppState(WatchAppState(foreground: false), now: now) }
        pair.settle()
        pair.phone.writes = []
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(["a": 1], expectsReply: true, now: now) }
        guard case let .messageFailed(failed, error) = pair.phone.appEvents.last else {
            Issue.record("no messageFailed")
            return
        }
        #expect(failed == id && error.code == .notReachable)
        #expect(pair.phone.writes.isEmpty)
    }

    @Test func messageLosingReachabilityBeforeDeliveryFailsWith7007() throws {
        var pair = Pair(seed: 62)
        pair.linkIsUp = false // frames vanish: the message cannot be delivered
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(["a": 1], expectsReply: true, now: now) }
        pair.apply(pair.phone.core.linkDown(now: pair.now), to: .phone)
        #expect(pair.phone.appEvents.suffix(2) == [
            .reachabilityDidChange(false),
            .messageFailed(id, SessionError(.notReachable, "the counterpart stopped being reachable before the message was delivered")),
        ])
    }

    @Test func awaitedReplyFailsWith7011WhenTheLinkDrops() throws {
        var pair = Pair(seed: 63)
        pair.watchAutoReplies = false
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(["a": 1], expectsReply: true, now: now) }
        pair.settle(limit: .seconds(1))
        pair.dropLink()
        #expect(pair.phone.appEvents.last == .messageFailed(id, SessionError(.messageReplyFailed, "the link dropped while the reply was awaited")))
    }

    @Test func payloadsOverTheLimitThrow7009() throws {
        var core = try boundPhone(at: .zero)
        let big = MonkeyCValue.object(["blob": .byteArray(Array(repeating: 0, count: 65_536))])
        let before = core.snapshot
        do {
            _ = try core.sendMessage(big, expectsReply: false, now: .zero)
            Issue.record("sendMessage took \(65_536 + 20) bytes")
        } catch {
            #expect(error.code == .payloadTooLarge)
        }
        do {
            _ = try core.sendMessageData(Array(repeating: 0, count: 65_537), expectsReply: false, now: .zero)
            Issue.record("sendMessageData took 65,537 bytes")
        } catch {
            #expect(error.code == .payloadTooLarge)
        }
        do {
            _ = try core.transferUserInfo(big, now: .zero)
            Issue.record("transferUserInfo took \(65_536 + 20) bytes")
        } catch {
            #expect(error.code == .payloadTooLarge)
        }
        #expect(core.snapshot == before)
        // Exactly at the limit is accepted.
        _ = try core.sendMessageData(Array(repeating: 0, count: 65_536), expectsReply: false, now: .zero)
    }

    @Test func nonPropertyListValuesThrow7010() throws {
        var core = try boundPhone(at: .zero)
        for value: MonkeyCValue in [[1, 2], ["k": nil], [5: "v"], ["k": .char(9)]] {
            do {
                _ = try core.transferUserInfo(value, now: .zero)
                Issue.record("no throw for \(value)")
            } catch {
                #expect(error.code == .payloadUnsupportedTypes)
            }
        }
    }

    @Test func replyTimesOutWith7012OverThePair() throws {
        var pair = Pair(seed: 64)
        pair.watchAutoReplies = false
        let start = pair.now
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(["a": 1], expectsReply: true, now: now) }
        pair.settle()
        #expect(pair.phone.appEvents.suffix(2) == [
            .timeout(.messageReply(id), deadline: start + .seconds(10)),
            .messageFailed(id, SessionError(.messageReplyTimedOut, "\(id) was delivered but no reply came within 10.0 seconds")),
        ])
    }

    @Test func lateReplyIsDiscardedNotDeliveredTwice() throws {
        var pair = Pair(seed: 65)
        pair.watchAutoReplies = false
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(["a": 1], expectsReply: true, now: now) }
        pair.run(until: pair.now + .seconds(11))
        try pair.act(.watch) { core, now throws(SessionError) in try core.replyToMessage(id, with: ["r": 1], now: now) }
        pair.settle()
        #expect(pair.phone.appEvents.last == .lateReplyDiscarded(id))
        #expect(!pair.phone.appEvents.contains { if case .didReceiveReply = $0 { true } else { false } })
    }

    @Test func replyingTwiceThrows7008() throws {
        var pair = Pair(seed: 66)
        pair.watchAutoReplies = false
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(["a": 1], expectsReply: true, now: now) }
        pair.settle(limit: .seconds(1))
        try pair.act(.watch) { core, now throws(SessionError) in try core.replyToMessage(id, with: ["r": 1], now: now) }
        do {
            _ = try pair.watch.core.replyToMessage(id, with: ["r": 2], now: pair.now)
            Issue.record("second reply accepted")
        } catch {
            #expect(error.code == .invalidParameter)
        }
        pair.settle()
        #expect(pair.phone.appEvents.last == .didReceiveReply(id, ["r": 1]))
    }

    @Test func watchCannotSendComplicationInfoAndPhoneCannotSetWatchState() throws {
        var pair = Pair(seed: 67)
        do { _ = try pair.watch.core.transferCurrentComplicationUserInfo(["a": 1], now: pair.now); Issue.record("no throw") } catch {
            #expect(error.code == .sessionNotSupported)
        }
        do { _ = try pair.phone.core.setWatchAppState(WatchAppState(), now: pair.now); Issue.record("no throw") } catch {
            #expect(error.code == .sessionNotSupported)
        }
    }

    @Test func activateWhileInactiveThrows7016() throws {
        var pair = Pair(seed: 68)
        pair.apply(pair.phone.core.setPairedDevice(watchBID, now: pair.now), to: .phone)
        #expect(pair.phone.core.activationState == .inactive)
        do { _ = try pair.phone.core.activate(now: pair.now); Issue.record("no throw") } catch {
            #expect(error.code == .sessionInactive)
        }
    }
}

@Suite struct ViolationTests {
    func violations(_ actions: [SessionAction]) -> [SessionViolationKind] {
        events(actions).compactMap { if case .violation(let kind, _) = $0 { kind } else { nil } }
    }

    @Test func garbageIsAMalformedFrame() throws {
        var core = try boundPhone(at: .zero)
        #expect(violations(core.receive([1, 2, 3], now: .zero)) == [.malformedFrame])
    }

    @Test func unknownChannelIsReported() throws {
        var core = try boundPhone(at: .zero)
        #expect(violations(core.receive(hex("42 03 01000000 01000000 00"), now: .zero)) == [.unknownChannel])
    }

    @Test func reservedOrMisplacedFlagsAreReported() throws {
        var core = try boundPhone(at: .zero)
        #expect(violations(core.receive(hex("05 43 01000000 01000000 00"), now: .zero)) == [.invalidFlags])
        #expect(violations(core.receive(hex("05 13 01000000 01000000 00"), now: .zero)) == [.invalidFlags])
        #expect(violations(core.receive(hex("00 07 01000000 01000000 00"), now: .zero)) == [.invalidFlags])
    }

    @Test func dataBeforeTheHandshakeIsReported() {
        var core = SessionCore(role: .watch, identity: watchID, randomSource: SeededSessionRandom(seed: 1))
        _ = core.setPairedDevice(phoneID, now: .zero)
        _ = core.linkUp(maxPayload: 20, now: .zero)
        #expect(violations(core.receive(hex("05 03 01000000 01000000 00"), now: .zero)) == [.frameBeforeHandshake])
    }

    @Test func frameWhileTheLinkIsDownIsReported() {
        var core = SessionCore(role: .watch, identity: watchID, randomSource: SeededSessionRandom(seed: 1))
        #expect(violations(core.receive(hex("05 03 01000000 01000000 00"), now: .zero)) == [.frameWhileLinkDown])
    }

    @Test func helloFromAStrangerIsNotAnswered() {
        var core = SessionCore(role: .watch, identity: watchID, randomSource: SeededSessionRandom(seed: 1))
        _ = core.setPairedDevice(phoneID, now: .zero)
        _ = core.linkUp(maxPayload: 244, now: .zero)
        let hello = SessionHandshake(identity: strangerID, incarnation: 1, epoch: 1, nonce: 1, status: .paired)
        let frame = SessionFrame.fragment(channel: .control, id: 1, payload: SessionControl.hello(hello).encode(), maxFrameLength: 244)[0]
        let actions = core.receive(frame.encode(), now: .zero)
        #expect(violations(actions) == [.wrongPeer])
        #expect(writes(actions).isEmpty)
    }

    @Test func duplicateWithoutRetransmissionFlagIsReportedAndAcknowledgedAgain() throws {
        var pair = Pair(seed: 70)
        pair.phone.writes = []
        pair.transferUserInfo(numbered(1), from: .phone)
        let frames = pair.phone.writes
        pair.settle()
        let actions = pair.watch.core.receive(frames[0], now: pair.now)
        #expect(violations(actions) == [.duplicateFrame])
        let ack = try SessionReassembledItem.decodeItem(writes(actions)).item
        #expect(ack == .control(.ack(channel: .userInfo, id: 1, received: SessionLink.complete)))
        var resent = try SessionFrame.decode(frames[0])
        resent.flags.insert(.retransmission)
        #expect(violations(pair.watch.core.receive(resent.encode(), now: pair.now)).isEmpty)
    }

    @Test func frameBeyondTheWindowIsReported() throws {
        var pair = Pair(seed: 71)
        let start = SessionFrame(channel: .userInfo, flags: [.first], id: 1, totalOrOffset: 500, bytes: Array(repeating: 1, count: 10))
        _ = pair.watch.core.receive(start.encode(), now: pair.now)
        let ahead = SessionFrame(channel: .userInfo, flags: [], id: 1, totalOrOffset: 10 + 8 * 10, bytes: Array(repeating: 1, count: 10))
        let actions = pair.watch.core.receive(ahead.encode(), now: pair.now)
        #expect(violations(actions) == [.outOfWindow])
        #expect(try SessionReassembledItem.decodeItem(writes(actions)).item == .control(.ack(channel: .userInfo, id: 1, received: 10)))
        let inWindow = SessionFrame(channel: .userInfo, flags: [], id: 1, totalOrOffset: 10 + 7 * 10, bytes: Array(repeating: 1, count: 10))
        #expect(violations(pair.watch.core.receive(inWindow.encode(), now: pair.now)).isEmpty)
    }

    @Test func fragmentThatDoesNotFitItsItemIsReported() throws {
        var pair = Pair(seed: 72)
        _ = pair.watch.core.receive(SessionFrame(channel: .userInfo, flags: [.first], id: 1, totalOrOffset: 30, bytes: Array(repeating: 1, count: 10)).encode(), now: pair.now)
        // Past the total.
        let past = SessionFrame(channel: .userInfo, flags: [.last], id: 1, totalOrOffset: 10, bytes: Array(repeating: 1, count: 25))
        #expect(violations(pair.watch.core.receive(past.encode(), now: pair.now)) == [.inconsistentFragment])
        // Another channel of the same lane (message vs message data) in one item.
        _ = pair.watch.core.receive(SessionFrame(channel: .message, flags: [.first], id: 1, totalOrOffset: 30, bytes: Array(repeating: 1, count: 10)).encode(), now: pair.now)
        let other = SessionFrame(channel: .messageData, flags: [], id: 1, totalOrOffset: 10, bytes: Array(repeating: 1, count: 10))
        #expect(violations(pair.watch.core.receive(other.encode(), now: pair.now)) == [.inconsistentFragment])
    }

    @Test func itemOverItsLimitIsRefusedWith7009() throws {
        var pair = Pair(seed: 73)
        let frame = SessionFrame(channel: .userInfo, flags: [.first], id: 1, totalOrOffset: 65_537, bytes: Array(repeating: 1, count: 10))
        let actions = pair.watch.core.receive(frame.encode(), now: pair.now)
        #expect(violations(actions) == [.itemTooLarge])
        #expect(try SessionReassembledItem.decodeItem(writes(actions)).item == .control(.error(channel: .userInfo, id: 1, code: 7009)))
    }

    @Test func undecodablePayloadIsRefusedWith7010AndTheSenderHearsIt() throws {
        var pair = Pair(seed: 74)
        // A user info whose bytes are not Monkey C, straight from the watch's link.
        let frame = SessionFrame(channel: .userInfo, flags: [.first, .last], id: 1, totalOrOffset: 4, bytes: [1, 2, 3, 4])
        let actions = pair.phone.core.receive(frame.encode(), now: pair.now)
        #expect(violations(actions) == [.undecodablePayload])
        #expect(try SessionReassembledItem.decodeItem(writes(actions)).item == .control(.error(channel: .userInfo, id: 1, code: 7010)))
        #expect(pair.phone.core.snapshot.peers.first?.watermarks.userInfo == 0)
    }

    @Test func ackForNothingAndReplyToNothingAreReported() throws {
        var core = try boundPhone(at: .zero)
        let ack = SessionFrame.fragment(channel: .control, id: 4, payload: SessionControl.ack(channel: .userInfo, id: 9, received: 3).encode(), maxFrameLength: 20)[0]
        #expect(violations(core.receive(ack.encode(), now: .zero)) == [.unexpectedAck])
        let reply = SessionFrame(channel: .messageReply, flags: [.first, .last], id: 1, totalOrOffset: 4, bytes: [9, 0, 0, 0])
        #expect(violations(core.receive(reply.encode(), now: .zero)) == [.unexpectedReply])
    }

    @Test func fileChunkBeforeItsMetadataIsReported() throws {
        var core = try boundPhone(at: .zero)
        let chunk = SessionFrame(channel: .fileChunk, flags: [.first, .last], id: 1, totalOrOffset: 1, bytes: [1])
        #expect(violations(core.receive(chunk.encode(), now: .zero)) == [.unexpectedFileChunk])
    }
}

@Suite struct SnapshotTests {
    @Test func receivingOrdersEventsThenPersistThenTheAck() throws {
        var pair = Pair(seed: 80)
        pair.watch.actions = []
        pair.transferUserInfo(numbered(1), from: .phone)
        pair.settle()
        let kinds = pair.watch.actions.map { action -> String in
            switch action {
            case .event(.didReceiveUserInfo): "deliver"
            case .event: "event"
            case .persist: "persist"
            case .write: "write"
            case .writeIncomingFile, .discardIncomingFile: "file"
            }
        }
        #expect(kinds == ["deliver", "persist", "write"])
    }

    @Test func sendingPersistsTheQueueBeforeAnyFrame() throws {
        var pair = Pair(seed: 81)
        pair.phone.actions = []
        pair.transferUserInfo(numbered(1), from: .phone)
        guard case .persist(let snapshot) = pair.phone.actions.first else {
            Issue.record("first action is not persist: \(pair.phone.actions)")
            return
        }
        #expect(snapshot.peers.first?.userInfoQueue.map(\.id) == [1])
        #expect(pair.phone.actions.dropFirst().allSatisfy { if case .write = $0 { true } else { false } })
    }

    @Test func restoreWithoutAQueuedFileReportsFileAccessDenied() throws {
        var pair = Pair(seed: 83)
        pair.dropLink()
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.transferFile([1, 2, 3], metadata: nil, now: now) }
        var restored = try SessionCore(restoring: pair.phone.core.snapshot, randomSource: SeededSessionRandom(seed: 9), outgoingFiles: [:])
        let actions = restored.handleTimeout(now: pair.now)
        #expect(events(actions).count == 1)
        guard case let .fileTransferDidFinish(failed, error?) = events(actions).first else {
            Issue.record("expected a failed file transfer, got \(actions)")
            return
        }
        #expect(failed == id && error.code == .fileAccessDenied)
        #expect(actions.contains { if case .persist(let s) = $0 { s.peers.allSatisfy { $0.fileQueue.isEmpty } } else { false } })
    }

    @Test func restoreRefusesAnotherLayoutVersion() throws {
        var snapshot = SessionCore(role: .watch, identity: watchID, randomSource: SeededSessionRandom(seed: 1)).snapshot
        snapshot.version = 99
        #expect(throws: SessionError.self) { try SessionCore(restoring: snapshot, randomSource: SeededSessionRandom(seed: 1)) }
    }

    @Test func reinstalledPeerIsDetectedByItsIncarnation() throws {
        var pair = Pair(seed: 84)
        pair.transferUserInfo(numbered(1), from: .phone)
        pair.settle()
        // The watch loses everything (a fresh core with a new incarnation).
        pair.watch.lastSnapshot = nil
        pair.crash(.watch)
        pair.recover(.watch)
        pair.settle()
        #expect(pair.phone.allEvents.contains(.peerReinstalled(watchID)))
        pair.transferUserInfo(numbered(2), from: .phone)
        pair.settle()
        #expect(pair.receivedUserInfo(.watch).last == 2)
    }
}
