import Testing
import TetherConnectIQ
import TetherTesting
import TetherTestSupport

@Suite("TetherConnectIQ in the loop")
struct ConnectIQClosedLoopTests {
    @Test func theAppsOwnCallsAreAnsweredByTheRecordedWatch() throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        session.makeCurrent()
        let sender = WorkoutSender()
        sender.start(url: URL(string: try #require(session.deviceSelectionURL))!)
        try session.run()
        #expect(sender.statuses.contains(.connected))
        #expect(sender.installed == true)
        #expect(sender.results == [.success], "\(session.report)")
        #expect(!sender.progress.isEmpty)
        let echo = try #require(sender.received.first as? [Any])
        #expect(echo.first as? String == "hello pi")
        #expect(sender.openResult == .success)
        #expect(session.passed, "\(session.report)")
    }

    @Test func twoRunsOfTheSameAppCodeWriteByteIdenticalTraces() throws {
        func traceOfOneRun() throws -> String {
            let session = try ReplaySession(replaying: "Captures/ciq-clean")
            session.makeCurrent()
            let sender = WorkoutSender()
            sender.start(url: URL(string: try #require(session.deviceSelectionURL))!)
            try session.run()
            return session.traceJSONLines
        }
        let first = try traceOfOneRun()
        #expect(!first.isEmpty)
        #expect(try traceOfOneRun() == first)
    }

    @Test func theTraceHoldsEveryCallAndCallbackOfTheApp() throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        session.makeCurrent()
        let sender = WorkoutSender()
        sender.start(url: URL(string: try #require(session.deviceSelectionURL))!)
        try session.run()
        let calls = session.events(core: "app", named: "app_call").compactMap { $0.field("api") }
        #expect(calls.contains(.string("sendMessage(_:to:progress:completion:)")))
        #expect(calls.contains(.string("getAppStatus(_:completion:)")))
        let callbacks = session.events(core: "app", named: "callback").compactMap { $0.field("api") }
        #expect(callbacks.contains(.string("deviceStatusChanged(_:status:)")))
        #expect(callbacks.contains(.string("sendMessage completion")))
        #expect(callbacks.contains(.string("receivedMessage(_:from:)")))
    }

    @Test func aLostAckGivesTheAppFailureTimeoutAtTheCoresLimitAndItsRetrySucceeds() throws {
        // Frame 83 is the watch's ack of the first send's `last` packet. The recorded link drops
        // 2.7 s in, so the step timeout is shortened to 1 s for the timeout to come first.
        let session = try ReplaySession(replaying: "Captures/ciq-clean", faults: ["drop:frame=83"],
                                        settings: ["messaging.settings.step_timeout_ms=1s"])
        session.makeCurrent()
        let sender = WorkoutSender(retryLimit: 1)
        sender.start(url: URL(string: try #require(session.deviceSelectionURL))!)
        try session.run()
        #expect(sender.results == [.failure_Timeout, .success], "\(session.report)")
        let completions = session.events(core: "app", named: "callback").filter { $0.field("api") == .string("sendMessage completion") }
        let sends = session.events(core: "app", named: "app_call").filter { $0.field("api") == .string("sendMessage(_:to:progress:completion:)") }
        try #require(completions.count == 2 && sends.count == 2)
        // MessagingCore's step timeout after the unacknowledged `last` (sent about 0.34 s after
        // the call), on the virtual clock, not a real-time wait.
        let waited = Double(completions[0].timeNs - sends[0].timeNs) / 1e9
        #expect(waited > 1 && waited < 1.5, "the timeout came \(waited) s after the send")
        #expect(sends[1].timeNs == completions[0].timeNs, "the retry is made from inside the completion, at its instant")
    }

    @Test func aFaultSpellingTheCommandLineRefusesIsReported() {
        #expect(throws: TetherTestingError.self) {
            _ = try ReplaySession(replaying: "Captures/ciq-clean", faults: ["drop:frame=banana"])
        }
    }

    @Test func aSetWithoutAConnectIQOrSessionLinkIsRefusedNamingWhatToRecord() {
        do {
            _ = try ReplaySession(replaying: "Captures/plugin-clean")
            Issue.record("a plugin set has no side an SDK facade can stand for")
        } catch {
            #expect(error.message.contains("tether live messaging --record"), "\(error.message)")
            #expect(error.message.contains("plugin-clean"))
        }
    }

    @Test func anAppThatTheWatchNeverHadGetsTheCoresOwnFailureAndAWarning() throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        session.makeCurrent()
        let sender = WorkoutSender()
        sender.start(url: URL(string: try #require(session.deviceSelectionURL))!)
        var second: IQAppStatus??
        try session.run(for: .seconds(1))
        let stranger = try #require(IQApp(uuid: UUID(uuidString: "11111111-2222-4333-8444-555555555555"), store: nil, device: sender.app?.device))
        ConnectIQ.sharedInstance().getAppStatus(stranger) { second = .some($0) }
        ConnectIQ.sharedInstance().getAppStatus(stranger) { second = .some($0) }
        try session.run()
        #expect(second != nil, "the completion came")
        #expect(session.warnings.contains { $0.contains("no answer left") }, "\(session.report)")
    }

    @Test func theTimelinePageShowsTheAppsCallsAndCallbacksInLanesOfTheirOwn() throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        session.makeCurrent()
        let sender = WorkoutSender()
        sender.start(url: URL(string: try #require(session.deviceSelectionURL))!)
        try session.run()
        let page = FileManager.default.temporaryDirectory.appendingPathComponent("ciq-app-\(UUID().uuidString).html")
        defer { try? FileManager.default.removeItem(at: page) }
        try session.writeTimeline(to: page.path)
        let html = try String(contentsOf: page, encoding: .utf8)
        #expect(html.contains("app · api"))
        #expect(html.contains("app · callbacks"))
        #expect(html.contains("sendMessage(_:to:progress:completion:)"))
    }

    @Test func aMessageOfATypeMonkeyCCannotCarryCompletesWithUnsupportedType() throws {
        final class Opaque {}
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        session.makeCurrent()
        let devices = ConnectIQ.sharedInstance().parseDeviceSelectionResponse(from: URL(string: try #require(session.deviceSelectionURL))!) as? [IQDevice]
        let device = try #require(devices?.first)
        let app = try #require(IQApp(uuid: UUID(), store: UUID(), device: device))
        var results: [IQSendMessageResult] = []
        ConnectIQ.sharedInstance().sendMessage(["workout": Opaque()], to: app, progress: { _, _ in }, completion: { results.append($0) })
        #expect(results.isEmpty, "the completion comes later, as on the phone")
        try session.run(for: .milliseconds(1))
        #expect(results == [.failure_UnsupportedType])
        #expect(NSStringFromSendMessageResult(results[0]) == "Failure_UnsupportedType")
    }
}
