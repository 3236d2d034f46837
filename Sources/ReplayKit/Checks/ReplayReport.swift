import BehaviourTrace
#if canImport(CaptureSet)
import CaptureSet
#endif

/// One core's trace compared against its accepted baseline (`baseline/<core>.jsonl`).
public struct BaselineComparison: Sendable, Hashable {
    /// What was compared, usually the core name, e.g. `ingest`.
    public var name: String
    /// The differences, baseline as A and the new trace as B.
    public var diff: TraceDiffReport

    /// Creates a comparison.
    public init(name: String, diff: TraceDiffReport) {
        self.name = name
        self.diff = diff
    }

    /// A baseline comparison passes when nothing differs beyond the tolerance.
    public var passed: Bool { diff.isEmpty }
}

/// Everything replay checked for one capture set: the input of `ReplayReport` and `JUnitReport`.
public struct CaptureSetOutcome: Sendable, Hashable {
    /// The capture set's name (its folder name).
    public var name: String
    /// The manifest's expectations, evaluated.
    public var expectations: [ExpectationResult]
    /// One entry per baseline trace compared; empty when the set has no baseline yet.
    public var baselines: [BaselineComparison]
    /// The faults the run carried (docs/faults.md), as `--fault` takes them; empty for a plain run.
    public var faults: [String] = []
    /// How many times they changed what reached the cores (`fault_injected` events).
    public var faultsApplied: Int = 0

    /// Creates an outcome.
    public init(name: String, expectations: [ExpectationResult], baselines: [BaselineComparison]) {
        self.name = name
        self.expectations = expectations
        self.baselines = baselines
    }

    /// Every expectation held and every baseline comparison was empty. A set with no baseline and
    /// no expectations passes: it checked nothing, which the report says.
    public var passed: Bool {
        expectations.allSatisfy(\.passed) && baselines.allSatisfy(\.passed)
    }
}

/// The human-readable replay report printed by `tether replay` and kept as a CI artifact.
public enum ReplayReport {
    /// A set or scenario that could not be replayed, or whose baseline could not be read.
    public struct RunError: Sendable, Hashable {
        /// The set's name, or `SET / SCENARIO`.
        public var name: String
        /// Why, in words.
        public var message: String

        /// An error of the run called `name`.
        public init(name: String, message: String) {
            self.name = name
            self.message = message
        }
    }

    /// The replay report with errors listed and counted in its headline: a set that could not be
    /// replayed (or whose baseline could not be read) is a failed set, not a missing line.
    public static func render(_ outcomes: [CaptureSetOutcome], errors: [RunError], setCount: Int, maxDiffLines: Int) -> String {
        var text = render(outcomes, maxDiffLines: maxDiffLines)
        guard !errors.isEmpty else { return text }
        // The renderer's last line is its headline over the sets it saw; it is replaced by one over all.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        if let last = lines.last, last.hasPrefix("PASS: ") || last.hasPrefix("FAIL: ") { lines.removeLast() }
        for error in errors { lines.append("ERROR \(error.name): \(error.message)") }
        let erroredSets = Set(errors.map(\.name))
        let checkFailures = outcomes.filter { !$0.passed && !erroredSets.contains($0.name) }.count
        let failedNames = erroredSets.union(outcomes.filter { !$0.passed }.map(\.name))
        let failedScenarios = failedNames.filter(FaultScenarios.isScenarioName).count
        let scenarios = Set(outcomes.map(\.name) + errors.map(\.name)).filter(FaultScenarios.isScenarioName).count
        let unreadable = errors.filter { error in !outcomes.contains { $0.name == error.name } }.count
        let runs = failedRuns(failedSets: failedNames.count - failedScenarios, sets: setCount,
                                           failedScenarios: failedScenarios, scenarios: scenarios)
        lines.append("FAIL: \(runs) failed (\(unreadable) could not be replayed, "
                     + "\(errors.count - unreadable) baseline(s) could not be read, \(checkFailures) failed their checks)")
        text = lines.joined(separator: "\n") + "\n"
        return text
    }


    /// Renders the report for one or more capture sets.
    ///
    /// For each set: a heading, each expectation as `PASS`/`FAIL` with its message (what was
    /// expected, what was measured), each baseline comparison as `PASS`/`FAIL` with the counts and,
    /// when it failed, up to `maxDiffLines` lines of `TraceDiffReport.render`. Then one closing
    /// line: `PASS: N capture sets, E expectations, B baselines` or
    /// `FAIL: F of N capture sets failed (...)`. Output is deterministic for equal input.
    ///
    /// - Parameters:
    ///   - outcomes: one entry per capture set, in the order to show them.
    ///   - maxDiffLines: the line budget for each failed baseline diff.
    public static func render(_ outcomes: [CaptureSetOutcome], maxDiffLines: Int = 40) -> String {
        var lines: [String] = []
        var expectationCount = 0, expectationFailures = 0
        var baselineCount = 0, baselineFailures = 0
        for outcome in outcomes {
            let failed = outcome.expectations.filter { !$0.passed }.count
            lines.append("== \(outcome.name): \(outcome.passed ? "PASS" : "FAIL") "
                         + "(\(outcome.expectations.count - failed)/\(outcome.expectations.count) expectations passed)")
            if !outcome.faults.isEmpty {
                lines.append("  faults: \(outcome.faults.joined(separator: ", ")) (applied \(outcome.faultsApplied) time(s))")
            }
            if outcome.expectations.isEmpty {
                lines.append("  expectations: none in the manifest")
            }
            for result in outcome.expectations {
                lines.append("  \(result.passed ? "PASS" : "FAIL") \(result.message.escapingControlCharactersForReport())")
            }
            if outcome.baselines.isEmpty {
                lines.append("  baseline: none (accept a run as the baseline to start comparing)")
            }
            for comparison in outcome.baselines {
                lines.append("  \(comparison.passed ? "PASS" : "FAIL") baseline \(comparison.name): "
                             + "\(comparison.diff.eventsA) baseline vs \(comparison.diff.eventsB) replayed events; "
                             + comparison.diff.countsLine)
                if !comparison.passed {
                    // The diff's own header repeats the counts just printed, so skip it.
                    let body = comparison.diff.render(maxLines: maxDiffLines + 1).split(separator: "\n").dropFirst()
                    lines += body.map { "    " + $0 }
                }
            }
            expectationCount += outcome.expectations.count
            expectationFailures += failed
            baselineCount += outcome.baselines.count
            baselineFailures += outcome.baselines.filter { !$0.passed }.count
            lines.append("")
        }
        let sets = outcomes.filter { !FaultScenarios.isScenarioName($0.name) }
        let scenarios = outcomes.count - sets.count
        let failedSets = sets.filter { !$0.passed }.count
        let failedScenarios = outcomes.filter { !$0.passed }.count - failedSets
        if failedSets + failedScenarios == 0 {
            lines.append("PASS: \(sets.count) capture set(s)\(scenarios > 0 ? " and \(scenarios) scenario(s)" : ""), \(expectationCount) expectation(s), "
                         + "\(baselineCount) baseline(s)")
        } else {
            lines.append("FAIL: \(failedRuns(failedSets: failedSets, sets: sets.count, failedScenarios: failedScenarios, scenarios: scenarios)) failed "
                         + "(\(expectationFailures) of \(expectationCount) expectation(s), "
                         + "\(baselineFailures) of \(baselineCount) baseline(s))")
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `1 of 2 capture set(s)`, or with scenarios `0 of 1 capture set(s) and 4 of 4 scenario(s)`:
    /// a scenario is counted as a scenario, never as another set.
    public static func failedRuns(failedSets: Int, sets: Int, failedScenarios: Int, scenarios: Int) -> String {
        "\(failedSets) of \(sets) capture set(s)" + (scenarios > 0 ? " and \(failedScenarios) of \(scenarios) scenario(s)" : "")
    }
}
