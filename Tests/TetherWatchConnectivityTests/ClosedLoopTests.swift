import BehaviourTrace
import Testing
import TetherTesting
import TetherTestSupport
import TetherWatchConnectivity

@Suite("TetherWatchConnectivity in the loop")
struct WatchConnectivityClosedLoopTests {
    /// A replay of the clean phone-side recording made current, and `WCSession.default`, as an
    /// app reaches it. The app's calls made before the first run reach the core just before the
    /// recorded app's first call (after the recorded process start and pairing).
    func replay(_ faults: [String] = []) throws -> (ReplaySession, WCSession) {
        let replay = try ReplaySession(replaying: "Captures/session-clean", faults: faults)
        replay.makeCurrent()
        return (replay, WCSession.default)
    }

    @Test func theRecordedWatchRepliesToTheAppsOwnMessage() throws {
        let (replay, session) = try replay()
        let link = WorkoutLink(session: session)
        link.start()
        try replay.run()
        #expect(link.errors.isEmpty, "\(link.errors) \(replay.report)")
        let reply = try #require(link.reply, "\(replay.report)")
        #expect(reply["hr"] as? Int == 72)
        #expect(reply["unit"] as? String == "bpm")
    }

    @Test func theMessageDataReplyLeadsToAUserInfoThatFinishesWithoutError() throws {
        let (replay, session) = try replay()
        let link = WorkoutLink(session: session)
        link.start()
        try replay.run()
        #expect(link.replyData == Data([0xca, 0xfe, 0x01, 0x02]), "\(replay.report)")
        let finished = try #require(link.userInfoFinished.first, "\(replay.report)")
        #expect(link.userInfoFinished.count == 1)
        #expect(finished.error == nil)
        #expect(finished.transfer.userInfo["kcal"] as? Int == 312)
        #expect(!finished.transfer.isTransferring)
        #expect(session.outstandingUserInfoTransfers.isEmpty)
        #expect(replay.passed, "\(replay.report)")
    }

    @Test func activationAndReachabilityAreReadableBeforeTheirCallbacks() throws {
        let (replay, session) = try replay()
        let link = WorkoutLink(session: session)
        link.start()
        try replay.run()
        #expect(link.activation.first?.0 == .activated)
        #expect(link.activation.first.map { $0.1 == nil } == true)
        // The first reachability callback saw `isReachable` already true.
        #expect(link.reachabilitySeen.first == true, "\(replay.report)")
        #expect(session.isPaired)
        #expect(session.isWatchAppInstalled)
    }

    @Test func theWatchsContextIsInTheSessionBeforeTheCallback() throws {
        let (replay, session) = try replay()
        let link = WorkoutLink(session: session)
        link.start()
        try replay.run()
        #expect(link.receivedContexts.count == 1, "\(replay.report)")
        #expect(link.receivedContexts.first?["seen"] as? String == "run")
        #expect(link.contextMatchedPropertyWhenCalled == true)
        #expect(link.contextError == nil)
        #expect(session.applicationContext["mode"] as? String == "run")
    }

    @Test func twoRunsOfTheSameAppCodeWriteByteIdenticalTraces() throws {
        func traceOfOneRun() throws -> String {
            let (replay, session) = try replay()
            let link = WorkoutLink(session: session)
            link.start()
            try replay.run()
            return replay.traceJSONLines
        }
        let first = try traceOfOneRun()
        let second = try traceOfOneRun()
        #expect(!first.isEmpty)
        #expect(first.contains("\"app_call\""))
        #expect(first == second)
    }

    @Test func everyCallAndCallbackIsInTheTrace() throws {
        let (replay, session) = try replay()
        let link = WorkoutLink(session: session)
        link.start()
        try replay.run()
        let calls = replay.events(core: "app", named: "app_call").compactMap { event -> String? in
            if case .string(let api)? = event.field("api") { return api }
            return nil
        }
        #expect(calls == [
            "activate()", "updateApplicationContext(_:)", "sendMessage(_:replyHandler:errorHandler:)",
            "sendMessageData(_:replyHandler:errorHandler:)", "transferUserInfo(_:)",
        ], "\(replay.report)")
        let callbacks = replay.events(core: "app", named: "callback").compactMap { event -> String? in
            if case .string(let api)? = event.field("api") { return api }
            return nil
        }
        #expect(callbacks.contains("session(_:activationDidCompleteWith:error:)"))
        #expect(callbacks.filter { $0 == "replyHandler" }.count == 2)
        #expect(callbacks.contains("session(_:didFinish:error:)"))
    }

    @Test func aLateReplyFailsTheMessageWithReplyTimedOutAtTheCoresLimit() throws {
        // The set's reply-past-the-limit scenario: frame 82 carries the watch's reply to
        // message 1, held back 11 s (past the 10 s limit); the recorded end of the link is held
        // back 20 s so the limit passes first. (A `drop:frame=N` of the reply does not fail the
        // message: the session link is reliable, and the recorded watch's link layer resends
        // what its peer did not acknowledge, as the real one does.)
        let (replay, session) = try replay(["delay:frame=82:by=11s", "delay:frame=105:kind=disconnection:by=20s"])
        let link = WorkoutLink(session: session)
        link.start()
        try replay.run()
        #expect(link.reply == nil)
        let error = try #require(link.errors.first as? WCError, "\(replay.report)")
        #expect(error.code == .messageReplyTimedOut)
        #expect((error as NSError).code == 7012)
        // The error handler is called at the core's own deadline: 10 s after the send.
        let sent = try #require(replay.events(core: "session", named: "api_call").first { $0.field("call") == .string("send_message") })
        let failed = try #require(replay.events(core: "app", named: "callback").first { $0.field("api") == .string("errorHandler") })
        #expect(failed.timeNs - sent.timeNs == 10_000_000_000)
    }

    @Test func aValueThatIsNotAPropertyListIsRefusedByUpdateApplicationContext() throws {
        final class Workout {}
        final class Refuser: WCSessionDelegate {
            var thrown: (any Error)?
            func session(_ session: WCSession, activationDidCompleteWith activationState: WCSessionActivationState, error: (any Error)?) {
                do {
                    try session.updateApplicationContext(["workout": Workout()])
                } catch {
                    thrown = error
                }
            }
            func sessionDidBecomeInactive(_ session: WCSession) {}
            func sessionDidDeactivate(_ session: WCSession) {}
        }
        let (replay, session) = try replay()
        let refuser = Refuser()
        session.delegate = refuser
        session.activate()
        try replay.run(for: .seconds(2))
        let error = try #require(refuser.thrown as? WCError, "\(replay.report)")
        #expect(error.code == .payloadUnsupportedTypes)
        #expect(replay.events(core: "session", named: "api_call").allSatisfy { $0.field("call") != .string("update_context") })
    }

    @Test func sendMessageBeforeActivationGetsSessionNotActivatedAfterItReturns() throws {
        let (replay, session) = try replay()
        var errors: [any Error] = []
        session.sendMessage(["hr": 72], replyHandler: nil, errorHandler: { errors.append($0) })
        #expect(errors.isEmpty)
        try replay.run(for: .milliseconds(1))
        #expect((errors.first as? WCError)?.code == .sessionNotActivated, "\(replay.report)")
    }

    @Test func defaultIsTheCurrentHostsOneSession() throws {
        let replay = try ReplaySession(replaying: "Captures/session-clean")
        replay.makeCurrent()
        let first = WCSession.default
        let second = WCSession.default
        #expect(first === second)
    }
}

/// The complication budget and files, on the sets recorded for them, driven by the app's own calls.
@Suite("TetherWatchConnectivity budgets and files")
struct WatchConnectivityBudgetAndFileTests {
    /// A replay of `set` made current, `WCSession.default` with a ``Delegate``, activated and run
    /// until the watch is reachable.
    static func reachable(_ set: String) throws -> (ReplaySession, WCSession, Delegate) {
        let replay = try ReplaySession(replaying: set)
        replay.makeCurrent()
        let session = WCSession.default
        let delegate = Delegate()
        session.delegate = delegate
        session.activate()
        try runUntilReachable(replay, session: session)
        return (replay, session, delegate)
    }

    /// Waits for the session to be activated and reachable, running the replay in steps.
    static func runUntilReachable(_ replay: ReplaySession, session: WCSession, limit: Duration = .seconds(20)) throws {
        while !(session.activationState == .activated && session.isReachable), replay.now < limit {
            try replay.run(for: .milliseconds(50))
        }
    }

    final class Delegate: WCSessionDelegate {
        var finished: [(userInfo: [String: Any], complication: Bool, error: (any Error)?)] = []
        var fileFinished: [(any Error)?] = []
        func session(_ session: WCSession, activationDidCompleteWith activationState: WCSessionActivationState, error: (any Error)?) {}
        func sessionDidBecomeInactive(_ session: WCSession) {}
        func sessionDidDeactivate(_ session: WCSession) {}
        func session(_ session: WCSession, didFinish userInfoTransfer: WCSessionUserInfoTransfer, error: (any Error)?) {
            finished.append((userInfoTransfer.userInfo, userInfoTransfer.isCurrentComplicationInfo, error))
        }
        func session(_ session: WCSession, didFinish fileTransfer: WCSessionFileTransfer, error: (any Error)?) {
            fileFinished.append(error)
        }
    }

    @Test func fiftyTwoComplicationTransfersUseTheBudgetThenGoAsUserInfoAndAllFinishOnce() throws {
        let (replay, session, delegate) = try Self.reachable("Captures/session-complication-budget")
        try #require(session.isReachable, "\(replay.report)")
        for n in 1...52 { _ = session.transferCurrentComplicationUserInfo(["n": n]) }
        try replay.run()
        #expect(delegate.finished.count == 52, "\(replay.report)")
        #expect(delegate.finished.allSatisfy { $0.error == nil }, "\(delegate.finished.compactMap(\.error))")
        #expect(Set(delegate.finished.compactMap { $0.userInfo["n"] as? Int }) == Set(1...52))
        #expect(session.remainingComplicationUserInfoTransfers == 0)
        #expect(session.outstandingUserInfoTransfers.isEmpty)
    }

    @Test func aFileTheAppTransfersReportsProgressAndFinishesAcrossTheRecordedReconnection() throws {
        let (replay, session, delegate) = try Self.reachable("Captures/session-file-resume")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("run-\(UUID().uuidString).fit")
        defer { try? FileManager.default.removeItem(at: file) }
        // The file the recorded app sent (`{size: 120000}`: byte i is i × 31 + 7). With other bytes
        // the responder cannot tell the core's frames for their recorded counterparts, and the
        // resumed transfer does not finish before the recorded link ends (see the closing note of
        // the stop that added this test).
        try Data((0..<120_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }).write(to: file)
        let transfer = session.transferFile(file, metadata: ["name": "run.fit"])
        #expect(transfer.isTransferring)
        var progress: [Int64] = []
        while transfer.isTransferring, replay.now < .seconds(60) {
            try replay.run(for: .milliseconds(100))
            if progress.last != transfer.progress.completedUnitCount { progress.append(transfer.progress.completedUnitCount) }
        }
        try replay.run()
        #expect(delegate.fileFinished.count == 1, "\(replay.report)")
        #expect(delegate.fileFinished.first.map { $0 == nil } == true, "\(String(describing: delegate.fileFinished.first))")
        #expect(transfer.progress.totalUnitCount == 120_000)
        #expect(transfer.progress.completedUnitCount == 120_000)
        #expect(progress == progress.sorted(), "progress never goes back: \(progress)")
        #expect(progress.count > 2, "\(progress)")
    }
}
