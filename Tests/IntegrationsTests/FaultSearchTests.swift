import BehaviourTrace
import CaptureSet
import Foundation
import IngestIntegration
import ReplayKit
import Testing

/// `--search`: schedules of several faults, and each failure shrunk to a minimal schedule
/// (docs/faults.md, "Searching beyond single faults"). No committed core is known to have a gap
/// only two faults together open, so the search is proved on a fixture core that has one:
/// ``PairGapIntegration``.
struct FaultSearchTests {
    static let set = "\(FaultReplayTests.captures)/plugin-clean"

    func plan(_ frames: ClosedRange<Int>) throws -> SweepPlan {
        let options = ReplayOptions(integrations: IntegrationRegistry([PairGapIntegration(first: 101, second: 104)]))
        return try FaultSweep.plan(try CaptureSetDirectory.load(Self.set), kind: .drop, options: options, only: Set(frames))
    }

    @Test func aPairSearchFindsAFailureNoSingleFaultCausesAndShrinksItToItsTwoFaults() throws {
        let plan = try plan(96...110)
        let single = try FaultSweep.run(plan.set, kind: .drop, options: ReplayOptions(integrations: IntegrationRegistry([PairGapIntegration(first: 101, second: 104)])),
                                        only: Set(96...110))
        #expect(single.failed == 0, "no single lost frame breaks a promise: \(single.variants.filter { !$0.passed })")
        let result = FaultSearch.run(plan, search: .pairs(window: 8))
        #expect(result.schedules == plan.schedules(for: .pairs(window: 8)).count)
        #expect(result.ran == result.schedules)
        let finding = try #require(result.findings.first)
        #expect(result.findings.count == 1, "every failing pair holds the same two faults: \(result.findings.map(\.schedule))")
        #expect(finding.schedule == [.drop(FrameSelector(frames: 101...101)), .drop(FrameSelector(frames: 104...104))])
        #expect(finding.minimal)
        #expect(finding.variant.broken.map(\.promise) == ["no point invented, every point of an undropped datagram stored"])
        let report = result.report(setPath: "Captures/plugin-clean", tool: "tether")
        #expect(report.contains("FAIL --fault drop:frame=101 --fault drop:frame=104 (2 faults together: none of them alone breaks it)"), "\(report)")
        #expect(report.contains("rerun it: tether replay Captures/plugin-clean --fault drop:frame=101 --fault drop:frame=104"))
    }

    @Test func aRandomSearchShrinksWhatItFindsToTheTwoFaultsThatMatter() throws {
        let plan = try plan(100...105)
        let result = FaultSearch.run(plan, search: .random(count: 30, seed: 7))
        #expect(result.ran == 30)
        #expect(result.failed > 0)
        #expect(result.findings.map(\.schedule) == [[.drop(FrameSelector(frames: 101...101)), .drop(FrameSelector(frames: 104...104))]])
        let finding = try #require(result.findings.first)
        #expect(finding.found.count >= 2)
        #expect(finding.alike == result.failed - 1, "the other failures hold the same two faults")
    }

    @Test func searchesMakeTheSameSchedulesOnEveryRun() throws {
        let plan = try plan(100...105)
        #expect(plan.schedules(for: .random(count: 20, seed: 3)) == plan.schedules(for: .random(count: 20, seed: 3)))
        #expect(plan.schedules(for: .random(count: 20, seed: 3)) != plan.schedules(for: .random(count: 20, seed: 4)))
        let pairs = plan.schedules(for: .pairs(window: 2)).map { $0.map(\.point) }
        #expect(pairs == [[0, 1], [0, 2], [1, 2], [1, 3], [2, 3], [2, 4], [3, 4], [3, 5], [4, 5]])
        let sample = plan.schedules(for: .samplePairs(count: 5, seed: 1)).map { $0.map(\.point) }
        #expect(sample.count == 5 && Set(sample).count == 5 && sample.allSatisfy { $0[0] < $0[1] })
        // More pairs asked for than there are: every pair, once.
        #expect(plan.schedules(for: .samplePairs(count: 100, seed: 1)).count == 15)
    }

    @Test func shrinkingLeavesOutFaultsMovesThemEarlierAndShortensDelays() throws {
        let plan = try FaultSweep.plan(try CaptureSetDirectory.load(Self.set), kind: .delay(.seconds(6)), options: .builtInDefaults, only: Set(96...110))
        // A made-up failure: any delay of at least 1.5 s at or after the fourth point breaks it.
        func replay(_ schedule: [ScheduledFault]) -> SweepVariant {
            let fails = schedule.contains { scheduled in
                guard case .delay(_, let by) = scheduled.fault else { return false }
                return scheduled.point >= 3 && by >= .milliseconds(1500)
            }
            return plan.variant(schedule: schedule.map(\.fault), broken: fails ? [BrokenPromise(promise: "p", core: "c", detail: "d")] : [], error: nil)
        }
        let start = [1, 6, 9].map { ScheduledFault(point: $0, fault: plan.fault(at: $0)) }
        var shrinker = ScheduleShrinker(start, failed: replay(start), plan: plan)
        shrinker.shrink(replay: replay)
        let point = plan.points[3]
        #expect(shrinker.schedule == [ScheduledFault(point: 3, fault: .delay(FrameSelector(frames: point.frame...point.frame), by: .milliseconds(1500)))])
        #expect(shrinker.minimal)
    }

    @Test func searchesAreReadAsTheOptionWritesThem() {
        #expect(SweepSearch("pairs") == .pairs(window: 8))
        #expect(SweepSearch("pairs:window=16") == .pairs(window: 16))
        #expect(SweepSearch("pairs:sample=500:seed=3") == .samplePairs(count: 500, seed: 3))
        #expect(SweepSearch("random:200:seed=7") == .random(count: 200, seed: 7))
        #expect(SweepSearch("random:200") == .random(count: 200, seed: 1))
        for bad in ["", "pair", "pairs:window=0", "pairs:window=2:sample=3", "pairs:seed=2", "random", "random:0", "random:x:seed=1",
                    "random:5:seed=-1", "random:5:window=2", "pairs:window=3:window=4"] {
            #expect(SweepSearch(bad) == nil, "\(bad)")
        }
        #expect(SweepSearch("pairs:sample=500:seed=3")?.description == "pairs:sample=500:seed=3")
    }
}

/// The ingest integration with a gap only two faults together open: when neither frame `first`
/// nor frame `second` reached it, its adapter invents a point at the end of the run (a stand-in
/// for a core that recovers from either loss alone, through the other, but not from both).
struct PairGapIntegration: WrappingIntegration {
    var wrapped: any CoreIntegration = IngestIntegration()
    var first: Int
    var second: Int

    func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        Adapter(wrapped: try wrapped.makeAdapter(context), watched: [first, second])
    }

    struct Adapter: WrappingAdapter {
        var wrapped: any CoreAdapter
        var watched: Set<Int>
        var arrived = false

        mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent] {
            if watched.contains(frame.number) { arrived = true }
            return wrapped.frame(frame, bytes: bytes, now: now)
        }

        mutating func finish(now: Duration) -> [TraceEvent] {
            let invented = TraceEvent(timeNs: now.replayNanoseconds, core: core, event: "datapoint", fields: [
                "source": .string("pair-gap-fixture"), "name": .string("invented"), "time_ns": .int(0), "value": .int(0),
            ])
            return (arrived ? [] : [invented]) + wrapped.finish(now: now)
        }
    }
}
