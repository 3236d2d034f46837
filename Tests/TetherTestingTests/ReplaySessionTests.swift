import Foundation
import Synchronization
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

    /// App code that sleeps on the session's clock, started on the session's executor: each
    /// wake-up at its deadline exactly, and what it writes there.
    static func ticks(_ session: ReplaySession, at deadlines: [Int]) -> Task<[Duration], any Error> {
        let clock = session.clock
        return Task(executorPreference: session.taskExecutor) {
            var woke: [Duration] = []
            for deadline in deadlines {
                try await clock.sleep(until: .init(offset: .milliseconds(deadline)))
                woke.append(clock.now.offset)
                session.recordAppEvent("tick", fields: ["n": .int(Int64(woke.count))])
            }
            return woke
        }
    }

    @Test func aTaskOnTheSessionsExecutorWakesAtItsDeadlineExactly() async throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        try session.run(for: .seconds(1))
        let ticks = Self.ticks(session, at: [1_500, 2_000, 2_250])
        try session.run(for: .seconds(2))
        #expect(try await ticks.value == [.milliseconds(1_500), .milliseconds(2_000), .milliseconds(2_250)])
        #expect(session.events(core: "app", named: "tick").map(\.timeNs) == [1_500_000_000, 2_000_000_000, 2_250_000_000])
        #expect(session.now == .seconds(3))
    }

    @Test func twoRunsOfATaskOnTheSessionsExecutorWriteTheSameTrace() async throws {
        var traces: [String] = []
        for _ in 0..<2 {
            let session = try ReplaySession(replaying: "Captures/ciq-clean")
            let ticks = Self.ticks(session, at: Array(stride(from: 100, through: 3_000, by: 100)))
            try session.run()
            _ = try await ticks.value
            traces.append(session.traceJSONLines)
        }
        #expect(traces[0] == traces[1])
        #expect(traces[0].components(separatedBy: "\"event\":\"tick\"").count - 1 == 30)
    }

    @Test func aTaskResumedByACallbackWakesAtItsDeadlineExactly() async throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        let clock = session.clock
        let waiting = Mutex<CheckedContinuation<Int64, Never>?>(nil)
        session.observe(core: "messaging") { event in
            guard event.timeNs >= 1_000_000_000, let resume = waiting.withLock({ w in defer { w = nil }; return w }) else { return }
            resume.resume(returning: event.timeNs)
        }
        let task = Task(executorPreference: session.taskExecutor) { () throws -> (told: Int64, woke: Duration) in
            let told = await withCheckedContinuation { resume in waiting.withLock { $0 = resume } }
            try await clock.sleep(until: .init(offset: .nanoseconds(told) + .milliseconds(50)))
            return (told, clock.now.offset)
        }
        try session.run()
        let (told, woke) = try await task.value
        // The engine wakes it as a timer, between the frames around the instant, not at the next one.
        #expect(woke == .nanoseconds(told) + .milliseconds(50))
        #expect(session.trace.contains { $0.timeNs > told && $0.timeNs < told + 50_000_000 }, "no event between the callback and the wake-up: the test shows nothing")
    }

    @Test func aSleepPastTheDrainEndsWithCancellationWhenTheRunFinishes() async throws {
        let session = try ReplaySession(replaying: "Captures/ciq-clean")
        let clock = session.clock
        let poller = Task(executorPreference: session.taskExecutor) { () -> (polls: Int, ended: (any Error)?) in
            var polls = 0
            do {
                while true {
                    try await clock.sleep(for: .seconds(60))
                    polls += 1
                }
            } catch {
                return (polls, error)
            }
        }
        try session.run()
        let (polls, ended) = await poller.value
        // Woken every minute through the recording and the ten-minute drain after it, then ended.
        #expect(polls == 10)
        #expect(ended is CancellationError)
        await #expect(throws: CancellationError.self) { try await clock.sleep(for: .seconds(1)) }
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
