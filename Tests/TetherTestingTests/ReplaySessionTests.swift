import Foundation
import Testing
@testable import TetherTesting

/// ReplaySession as test code drives it directly, without an SDK facade.
@Suite struct ReplaySessionTests {
    @Test func runForStopsAtTheInstantAskedAndRunFinishesTheRecording() throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        try session.run(for: .milliseconds(500))
        #expect(session.now == .milliseconds(500))
        let halfway = session.trace.count
        try session.run()
        #expect(session.trace.count > halfway)
        #expect(session.events(core: "messaging", named: "summary").count == 1)
        #expect(session.passed, "\(session.report)")
    }

    @Test func aSetLoadsFromAFileURL() throws {
        let url = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).appendingPathComponent("Captures/session-clean")
        let session = try ReplaySession(replaying: url)
        #expect(session.cores == ["session"])
    }

    @Test func theRecordedAppsCallsAreReplacedButTheHostsFactsAreNot() throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        try session.run()
        let calls = session.events(core: "messaging", named: "api_call").compactMap { event -> String? in
            if case .string(let call)? = event.field("call") { return call }
            return nil
        }
        #expect(calls.sorted() == ["bind_device", "bluetooth_state"])
    }

    @Test func theClockSleepsUntilTheRunReachesItsDeadline() async throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        let clock = session.clock
        let sleeper = Task { () throws -> Duration in
            try await clock.sleep(for: .seconds(2))
            return clock.now.offset
        }
        // The task registers its sleep on the session before the run passes its deadline.
        while session.sleepers.withLock({ $0.isEmpty }) { await Task.yield() }
        try session.run(for: .seconds(3))
        let woke = try await sleeper.value
        #expect(woke >= .seconds(2))
        #expect(session.now == .seconds(3))
    }

    @Test func runningTheSessionFromItsOwnCallbackIsRefused() throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        var refusal: TetherTestingError?
        session.observe(core: "messaging") { _ in
            guard refusal == nil else { return }
            do throws(TetherTestingError) { try session.run(for: .seconds(1)) } catch { refusal = error }
        }
        try session.run()
        #expect(refusal?.message.contains("from inside one of its own callbacks") == true)
    }
}
