import ReplayKit
import Testing

/// How `--sweep-budget` is read, and how a sweep says where it is (docs/faults.md, "Long sweeps").
struct SweepProgressTests {
    @Test func aBudgetIsATimeWithItsUnitOrAWholeNumberOfVariants() {
        #expect(SweepBudget("10m") == .time(.seconds(600)))
        #expect(SweepBudget("90s") == .time(.seconds(90)))
        #expect(SweepBudget("1h") == .time(.seconds(3600)))
        #expect(SweepBudget("2500ms") == .time(.milliseconds(2500)))
        #expect(SweepBudget("500") == .variants(500))
        for bad in ["", "0", "-5", "0s", "10x", "m", "1.5", "nan s", "1e30h"] {
            #expect(SweepBudget(bad) == nil, "\(bad)")
        }
        // Written back as the option takes it.
        for text in ["10m", "90s", "1h", "2500ms", "500"] {
            #expect(SweepBudget(text)?.description == text)
            #expect(SweepBudget(text).flatMap { SweepBudget($0.description) } == SweepBudget(text))
        }
    }

    @Test func aCountSpreadsWhatItRunsAndATimeHandsEverythingOutCoarseToFine() {
        #expect(SweepBudget.variants(3).selecting(Array(0..<8)) == [0, 2, 5])
        #expect(SweepBudget.variants(9).selecting(Array(0..<8)) == Array(0..<8))
        let order = SweepBudget.time(.seconds(1)).selecting(Array(0..<200))
        #expect(order.sorted() == Array(0..<200))
        #expect(Array(order.prefix(4)) == [0, 64, 128, 192])
        #expect(Array(order.dropFirst(4).prefix(3)) == [32, 96, 160])
        #expect(order.suffix(100) == Array(stride(from: 1, to: 200, by: 2)))
    }

    @Test func timesAreWholeSecondsUnderAnHourAndWholeMinutesAbove() {
        #expect(SweepProgress.clockText(0) == "0s")
        #expect(SweepProgress.clockText(45.4) == "45s")
        #expect(SweepProgress.clockText(245) == "4m05s")
        #expect(SweepProgress.clockText(3720) == "1h02m")
        #expect(SweepProgress.clockText(.infinity) == "?")
    }

    @Test func theTimeLeftScalesTheTimeSoFarByTheCostLeft() {
        var progress = SweepProgress(total: 4, cost: 400)
        #expect(progress.remainingSeconds == nil)
        // One variant costing 100 of 400 took 10 s: 300 left take 30 s.
        progress.record(variant(passed: true, stopped: true), cost: 100)
        progress.elapsedSeconds = 10
        #expect(progress.remainingSeconds == 30)
        #expect(progress.line(set: "plugin-faulty") == "sweeping plugin-faulty: 1/4 variants (25%), 1 stopped early, 0 failed; 10s, about 30s left")
        progress.record(variant(passed: false, stopped: false), cost: 300)
        progress.elapsedSeconds = 40
        #expect(progress.remainingSeconds == 0, "all the cost done")
        #expect(progress.failed == 1 && progress.stoppedEarly == 1)
    }

    @Test func theTimeLeftIsNoMoreThanTheBudgetLeaves() {
        var progress = SweepProgress(total: 100, cost: 100, budgetSeconds: 60)
        progress.record(variant(passed: true, stopped: false), cost: 1)
        progress.elapsedSeconds = 50
        #expect(progress.remainingSeconds == 10)
        #expect(progress.line(set: "s").hasSuffix("about 10s left (the budget's end)"))
    }

    @Test func inALogALineComesOnceAMinuteNeverInABurst() {
        var cadence = ProgressCadence()
        // Asked after each variant; a variant that took five minutes (120.5 → 420) gives one
        // line, and the next comes a minute after it.
        let asked: [Double] = [0, 59.9, 60, 61, 120.5, 420, 421, 479, 480]
        let due = asked.map { cadence.due(at: $0) }
        #expect(due == [false, false, true, false, true, true, false, false, true])
    }

    func variant(passed: Bool, stopped: Bool) -> SweepVariant {
        let fault = Fault.drop(FrameSelector(frames: 7...7))
        return SweepVariant(frame: 7, fault: fault, faults: [fault],
                            broken: passed ? [] : [BrokenPromise(promise: "p", core: "c", detail: "d")], error: nil,
                            stoppedAt: stopped ? 9 : nil)
    }
}
