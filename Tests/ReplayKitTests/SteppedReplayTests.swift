import BehaviourTrace
import CaptureSet
import Testing
import TetherIntegrations
import TetherTestSupport
@testable import ReplayKit

/// A stepped replay with no app in the loop is the plain replay, whatever the steps: the stepping
/// only decides when the caller gets control back.
@Suite struct SteppedReplayTests {
    static let sets = ["Captures/ciq-clean", "Captures/session-clean", "Captures/plugin-faulty", "Captures/widget-property-change",
                       "Captures/session-compact-mtu23"]

    func options() -> ReplayOptions { ReplayOptions(integrations: TetherIntegrations.builtIn) }

    func plainTrace(_ path: String) throws -> [TraceEvent] {
        let set = try loadReplaySet(at: path, options: options())
        var trace: [TraceEvent] = []
        _ = try replaySet(set, options: options()) { trace.append($0) }
        return trace
    }

    @Test(arguments: sets)
    func steppingInUnevenStepsWritesThePlainReplaysTrace(_ path: String) throws {
        let set = try loadReplaySet(at: path, options: options())
        var (run, _, _) = try steppedReplay(of: set, options: options(), closedLoop: nil)
        var trace: [TraceEvent] = []
        var generator = SplitMix64(seed: 7)
        var limit = Duration.zero
        for _ in 0..<40 {
            limit += .milliseconds(Int64(generator.next() % 3_000))
            try run.step(through: limit) { trace.append($0) }
            #expect(run.now == limit)
        }
        _ = try run.finish { trace.append($0) }
        let plain = try plainTrace(path)
        #expect(trace.count == plain.count)
        // The summaries are written when the run ends: at the last instant a step reached.
        #expect(TraceFile.encode(trace.map(Self.untimedSummary)) == TraceFile.encode(plain.map(Self.untimedSummary)))
        let summary = try #require(trace.last { $0.event == "summary" })
        #expect(summary.timeNs >= limit.replayNanoseconds)
    }

    static func untimedSummary(_ event: TraceEvent) -> TraceEvent {
        var event = event
        if event.event == "summary" { event.timeNs = 0 }
        return event
    }

    @Test func aStepBeforeNowOnlyDeliversPendingCallsAndKeepsTheClock() throws {
        let set = try loadReplaySet(at: "Captures/ciq-clean", options: options())
        var (run, _, _) = try steppedReplay(of: set, options: options(), closedLoop: nil)
        try run.step(through: .seconds(1)) { _ in }
        var events = 0
        try run.step(through: .milliseconds(500)) { _ in events += 1 }
        #expect(events == 0)
        #expect(run.now == .seconds(1))
    }

    @Test func aReplacedCoresHostFactsAreStillDelivered() throws {
        var options = options()
        options.replacedCallCores = ["messaging"]
        options.frameMatching = .responder
        let set = try loadReplaySet(at: "Captures/ciq-clean", options: options)
        var trace: [TraceEvent] = []
        let run = try replaySet(set, options: options) { trace.append($0) }
        let calls = trace.filter { $0.event == "api_call" }.compactMap { $0.field("call") }
        #expect(calls.contains(.string("bind_device")))
        #expect(calls.contains(.string("bluetooth_state")))
        #expect(!calls.contains(.string("send")))
        #expect(run.summary.apiCallsReplaced > 0)
    }

    final class Inbox: ClosedLoopInputs {
        var calls: [ScheduledAPICall] = []
        var askedAt: [Duration] = []
        func nextCall(now: Duration) -> ScheduledAPICall? {
            askedAt.append(now)
            return calls.isEmpty ? nil : calls.removeFirst()
        }
    }

    @Test func aClosedLoopCallReachesItsCoreAtTheInstantOfTheInputBeforeIt() throws {
        var options = options()
        options.replacedCallCores = ["messaging"]
        options.frameMatching = .responder
        let set = try loadReplaySet(at: "Captures/ciq-clean", options: options)
        let inbox = Inbox()
        var (run, _, _) = try steppedReplay(of: set, options: options, closedLoop: inbox)
        var trace: [TraceEvent] = []
        try run.step(through: .milliseconds(300)) { trace.append($0) }
        inbox.calls = [ScheduledAPICall(at: .zero, core: "messaging", call: "register_device",
                                        arguments: ["device": .string("7e7e7e7e-0000-4000-8000-f0f0f0f0f0f0")])]
        try run.step(through: .milliseconds(300)) { trace.append($0) }
        // Refused (the device list is the app's to give, and it gave none): the refusal is the core's answer.
        let registered = try #require(trace.last { $0.event.text.hasPrefix("api_") && $0.field("call") == .string("register_device") })
        #expect(registered.timeNs == 300_000_000)
        _ = try run.finish { trace.append($0) }
        #expect(run.summarySoFar.closedLoopCallsDelivered == 1)
    }
}

