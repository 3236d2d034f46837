import BehaviourTrace
import CaptureSet
import Foundation
import ReplayKit
import Testing
import TetherIntegrations

/// A sweep that copies each variant from the run without faults gives the answers of one that
/// replays every variant from the first frame (docs/faults.md, "Sweeps").
///
/// Serialized: each case sweeps for a minute or more, synchronously, on a thread of the test
/// pool; run side by side on a two-core machine they took both, and a live-capture test waiting
/// for a pool thread saw none for five minutes.
@Suite(.serialized) struct SweepForkTests {
    static let captures = FaultReplayTests.captures

    /// What a variant showed, without where it started.
    struct Answer: Hashable, CustomStringConvertible {
        var frame: Int
        var faults: [Fault]
        var broken: [BrokenPromise]
        var error: String?

        init(_ variant: SweepVariant) {
            frame = variant.frame
            faults = variant.faults
            broken = variant.broken
            error = variant.error
        }

        var description: String { "frame \(frame): \(error ?? broken.map(\.description).joined(separator: "; "))" }
    }

    /// Both modes of one sweep, and the forked one's result.
    func bothModes(_ set: String, _ kind: SweepKind, only: Set<Int>? = nil, settle: Duration = FaultSweep.defaultSettle)
        throws -> (forked: SweepResult, answers: [Answer], exhaustive: [Answer])
    {
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/\(set)")
        let forked = try FaultSweep.run(loaded, kind: kind, options: .builtInDefaults, only: only, settle: settle)
        let exhaustive = try FaultSweep.run(loaded, kind: kind, options: .builtInDefaults, only: only, settle: settle, forking: false)
        #expect(exhaustive.variants.allSatisfy { $0.forkedAt == nil })
        return (forked, forked.variants.map(Answer.init), exhaustive.variants.map(Answer.init))
    }

    /// Every variant of each sweep kind; for the long sets, a dozen spread along the capture.
    @Test(arguments: [
        ("ciq-clean", false), ("ciq-disconnect-mid", false), ("session-clean", false), ("session-concurrent", false),
        ("widget-broker-drop", false), ("widget-broker-outage", false), ("plugin-faulty", true), ("session-file-resume", true),
    ])
    func forkedVariantsGiveTheVerdictsOfVariantsReplayedFromTheFirstFrame(set: String, long: Bool) throws {
        for kind in [SweepKind.drop, .delay(.seconds(6)), .disconnect(reconnectAfter: .seconds(1))] {
            var only: Set<Int>?
            if long {
                let loaded = try CaptureSetDirectory.load("\(Self.captures)/\(set)")
                let frames = try FaultSweep.plan(loaded, kind: kind, options: .builtInDefaults, forking: false).points.map(\.frame)
                let step = max(1, frames.count / 12)
                only = Set(stride(from: 0, to: frames.count, by: step).map { frames[$0] })
            }
            let (forked, answers, exhaustive) = try bothModes(set, kind, only: only)
            #expect(!answers.isEmpty)
            #expect(answers == exhaustive, "\(set) \(kind): \(zip(answers, exhaustive).filter { $0 != $1 }.prefix(3).map { "forked \($0) / exhaustive \($1)" })")
            #expect(forked.forkRefusal == nil)
            // A frame a responder asked about while it was made (the session responder reads the
            // peer's whole capture ahead) makes its variant replay from the first frame.
            #expect(forked.forked > 0, "\(set) \(kind): none of \(forked.variants.count) forked")
        }
    }

    /// A search's schedules of several faults (``FaultSearch``), copied from the run without
    /// faults where their first fault is first felt and stopped once recovered, give the verdicts
    /// of the same schedules replayed from the first frame.
    @Test(arguments: [("ciq-clean", 180...260), ("session-clean", 1...200), ("widget-broker-drop", 1...400), ("plugin-faulty", 1...160)])
    func forkedSchedulesGiveTheVerdictsOfSchedulesReplayedFromTheFirstFrame(set: String, frames: ClosedRange<Int>) throws {
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/\(set)")
        for kind in [SweepKind.drop, .delay(.seconds(6))] {
            let plan = try FaultSweep.plan(loaded, kind: kind, options: .builtInDefaults, only: Set(frames))
            let schedules = Array(plan.schedules(for: .pairs(window: 2)).prefix(24)) + plan.schedules(for: .random(count: 12, seed: 5))
            var runner = plan.makeRunner(slots: SweepSearch.maxRandomFaults)
            var forked = 0
            for schedule in schedules {
                let copied = runner.variant(schedule: schedule)
                let full = plan.variant(schedule: schedule.map(\.fault))
                if copied.forkedAt != nil { forked += 1 }
                #expect(Answer(copied) == Answer(full), "\(set) \(kind) \(schedule.map(\.fault)): copied \(Answer(copied)) / full \(Answer(full))")
            }
            #expect(forked > 0, "\(set) \(kind): no schedule of \(schedules.count) was copied")
        }
    }

    @Test func failingVariantsFailAlikeInBothModes() throws {
        // Ended as recorded, session-clean's variants near the end break promises
        // (FaultReplayTests.aSweepHoldsTheRecordedEndBack…): the failures must match too.
        let (forked, answers, exhaustive) = try bothModes("session-clean", .drop, settle: .zero)
        #expect(forked.failed > 0)
        #expect(answers == exhaustive)
    }

    @Test func variantsStartWhereTheirFaultIsFirstFeltNotAtTheFirstFrame() throws {
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/ciq-clean")
        let plan = try FaultSweep.plan(loaded, kind: .drop, options: .builtInDefaults)
        let positions = try #require(plan.forkPositions).compactMap { $0 }
        #expect(positions.count == plan.points.count)
        // The engine reads frame N at position N − 1; nothing may be copied later than that.
        for (point, position) in zip(plan.points, positions) {
            #expect(position <= point.frame - 1, "frame \(point.frame) forks at \(position)")
        }
        #expect(positions.reduce(0, +) / positions.count > 100, "the variants start on average at frame \(positions.reduce(0, +) / positions.count)")
        // Run in fork order, a runner's run without faults only moves forward.
        #expect(plan.executionOrder.map { positions[$0] } == positions.sorted())
    }

    @Test func aSweepThatCannotForkSaysSoAndReplaysEveryVariantFromTheFirstFrame() throws {
        // The messaging core behind an adapter that keeps the default: it cannot take faults.
        let options = ReplayOptions(integrations: IntegrationRegistry([FaultsKeepingIntegration(wrapped: MessagingIntegration())]))
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/ciq-clean")
        let result = try FaultSweep.run(loaded, kind: .drop, options: options, only: Set(200...260))
        #expect(!result.variants.isEmpty)
        #expect(result.forked == 0)
        let refusal = try #require(result.forkRefusal)
        #expect(refusal.contains("core messaging's adapter cannot take another variant's faults"))
        #expect(result.report(setPath: "Captures/ciq-clean", tool: "tether").contains("every variant replayed from the first frame"))
        let exhaustive = try FaultSweep.run(loaded, kind: .drop, options: options, only: Set(200...260), forking: false)
        #expect(result.variants == exhaustive.variants)
    }
}

/// An integration whose adapter does not take other faults part way through a run
/// (``CoreAdapter/adoptFaults(_:)``), around a built-in one.
struct FaultsKeepingIntegration: WrappingIntegration {
    var wrapped: any CoreIntegration

    func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        FaultsKeepingAdapter(wrapped: try wrapped.makeAdapter(context))
    }

    /// Every requirement passed on but ``CoreAdapter/adoptFaults(_:)``.
    struct FaultsKeepingAdapter: WrappingAdapter {
        var wrapped: any CoreAdapter

        mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool { false }
    }
}

/// `--sweep-budget`: which variants a budget runs, and that the rest are reported, not passed
/// (docs/faults.md, "Long sweeps").
struct SweepBudgetTests {
    @Test func aVariantBudgetRunsThatManySpreadEvenlyAndReportsTheRestAsNotCovered() throws {
        let loaded = try CaptureSetDirectory.load("\(FaultReplayTests.captures)/session-clean")
        let result = try FaultSweep.run(loaded, kind: .drop, options: .builtInDefaults, budget: .variants(3))
        let whole = try FaultSweep.run(loaded, kind: .drop, options: .builtInDefaults)
        #expect(whole.variants.count == 8)
        // The 0th, 2nd and 5th of 8 (k·8/3): the first, and evenly after it.
        #expect(result.variants.map(\.frame) == [0, 2, 5].map { whole.variants[$0].frame })
        #expect(result.variants == [0, 2, 5].map { whole.variants[$0] }, "the same verdicts as in the whole sweep")
        #expect(result.notCovered.map(\.frame) == [1, 3, 4, 6, 7].map { whole.variants[$0].frame })
        let report = result.report(setPath: "Captures/session-clean", tool: "tether")
        #expect(report.contains("variants 8 (one per peer frame), passed 3, failed 0, not covered 5;"), "\(report)")
        #expect(report.contains("NOT COVERED: 5 variants between frames"))
        let suite = JUnitReport.TestSuite(sweep: result, name: "session-clean", setPath: "Captures/session-clean", tool: "tether")
        #expect(suite.cases.map(\.name) == whole.variants.map(\.fault.description), "every variant has a case, in frame order")
        #expect(suite.skipped == 5)
        #expect(suite.cases.compactMap(\.skipped).allSatisfy { $0 == "not run: left out by --sweep-budget 3" })
    }

    @Test func aTimeBudgetHandsVariantsOutCoarseToFine() throws {
        let loaded = try CaptureSetDirectory.load("\(FaultReplayTests.captures)/plugin-faulty")
        let plan = try FaultSweep.plan(loaded, kind: .drop, options: .builtInDefaults, only: Set(1...300))
        let order = plan.executionOrder(of: nil, budget: .time(.seconds(60)))
        #expect(order.sorted() == Array(plan.points.indices), "every variant, once")
        // Every 64th first (0, 64, 128, …), then those between them, down to the odd ones last.
        let first = order.prefix { $0 % 64 == 0 }
        #expect(Set(first) == Set(stride(from: 0, to: plan.count, by: 64)))
        #expect(order.suffix(plan.count / 2).allSatisfy { $0 % 2 == 1 })
        #expect(plan.executionOrder(of: nil, budget: .variants(plan.count)) == plan.executionOrder)
    }
}
