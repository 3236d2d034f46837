/// How a sweep reads and reports: its options' values, its table, its JUnit suite and the line
/// that reruns one variant.
extension FaultSweep {
    /// `--sweep-frames`' `A-B` or `N` as a range of frame numbers (1 ≤ A ≤ B); `nil` for anything else.
    public static func frameRange(_ text: String) -> ClosedRange<Int>? {
        let ends = text.split(separator: "-", omittingEmptySubsequences: false)
        if ends.count == 1, let n = Int(ends[0]), n >= 1 { return n...n }
        guard ends.count == 2, let a = Int(ends[0]), let b = Int(ends[1]), a >= 1, a <= b else { return nil }
        return a...b
    }

    /// `--sweep-settle`'s duration (`0s` allowed), read as a fault's `by=` is; `nil` when it is not one.
    public static func settleDuration(_ text: String) -> Duration? {
        // `0` needs no unit; any other settle is a duration with its unit, at most a fault's day.
        if text.trimmingCharacters(in: .whitespaces) == "0" { return .zero }
        return Fault.duration(parsing: text.trimmingCharacters(in: .whitespaces))
    }
}

extension SweepVariant {
    /// The command that replays this variant alone, with every fault it ran with, as `tool`
    /// (`tether`, or a package's own executable) runs it on the set at `setPath`.
    public func rerunCommand(setPath: String, tool: String) -> String {
        "\(tool) replay \(setPath) " + faults.map { "--fault \($0)" }.joined(separator: " ") + " --trace variant.jsonl"
    }

    /// What broke, in one line (or the error that stopped the variant).
    var problemLine: String { error ?? broken.map(\.description).joined(separator: "; ") }
}

extension SweepResult {
    /// The sweep's table for the set at `setPath`: verdict, counts and speed, the promises
    /// checked, the ending held back, and the first 21 failing variants with the line that
    /// reruns the first.
    public func report(setPath: String, tool: String) -> String {
        var lines: [String] = []
        let rate = elapsedSeconds > 0 ? Double(variants.count) / elapsedSeconds : 0
        lines.append("== sweep \(kind) over \(set)\(part.map { " (\($0.description))" } ?? ""): \(failed == 0 ? "PASS" : "FAIL")")
        let uncovered = notCovered.isEmpty ? "" : ", not covered \(notCovered.count)"
        lines.append("  variants \(variants.count + notCovered.count) (one per peer frame), passed \(passed), failed \(failed)\(uncovered); "
                     + "\(DecimalText.fixed(elapsedSeconds, 2)) s, \(DecimalText.fixed(rate, 1)) variants/s")
        if let budget, let first = notCovered.first, let last = notCovered.last {
            let how = switch budget {
            case .time: "its time was up; those run were handed out coarse to fine, so they are spread along the capture"
            case .variants: "the variants run are spread evenly along the capture"
            }
            lines.append("  NOT COVERED: \(notCovered.count) variants between frames \(first.frame) and \(last.frame), left out by --sweep-budget \(budget) "
                         + "(\(how)); the verdict is about the \(variants.count) run. Cover them with a larger budget, or split the sweep "
                         + "across jobs with --shard I/N")
        }
        if promises.isEmpty {
            lines.append("  promises: none (the set's cores state none; every variant passes trivially)")
        } else {
            lines.append("  promises: " + promises.joined(separator: "; "))
        }
        if let forkRefusal {
            lines.append("  every variant replayed from the first frame: " + forkRefusal)
        } else if forked > 0 {
            lines.append("  \(forked) of \(variants.count) variants copied from the run without faults where their fault is first felt, "
                         + "\(stoppedEarly) stopped early once recovered (--sweep-exhaustive replays each from the first frame to the end)")
        }
        if !heldEnding.isEmpty {
            lines.append("  the recorded end held back in every run: " + heldEnding.map { "--fault \($0)" }.joined(separator: " ")
                         + " (--sweep-settle 0s ends the links as recorded)")
        }
        let failing = variants.filter { !$0.passed }
        if let first = failing.first {
            lines.append("  first failing variant: frame \(first.frame), --fault \(first.fault)")
            lines.append("    " + (first.error ?? first.broken.map(\.description).joined(separator: "\n    ")))
            lines.append("    rerun it: " + first.rerunCommand(setPath: setPath, tool: tool))
            for variant in failing.dropFirst().prefix(20) {
                lines.append("  FAIL frame \(variant.frame): " + variant.problemLine)
            }
            if failing.count > 21 { lines.append("  … and \(failing.count - 21) more failing variants") }
        }
        return lines.joined(separator: "\n") + "\n\n"
    }
}

extension JUnitReport.TestSuite {
    /// A sweep of the set called `name` (at `setPath`) as a suite: one case per variant, named
    /// by its fault, failing with what broke and the line that reruns it.
    /// Variants a budget left out are skipped cases, in their place.
    public init(sweep result: SweepResult, name: String, setPath: String, tool: String) {
        var cases = result.variants.map { variant in
            let failure = variant.passed ? nil : JUnitReport.Failure(
                message: variant.problemLine, type: variant.error == nil ? "promise" : "error",
                details: "rerun: " + variant.rerunCommand(setPath: setPath, tool: tool))
            return (frame: variant.frame, case: JUnitReport.TestCase(name: variant.fault.description, className: "sweep.\(name)", failure: failure))
        }
        let budget = result.budget.map { "--sweep-budget \($0)" } ?? "the budget"
        cases += result.notCovered.map {
            (frame: $0.frame, case: JUnitReport.TestCase(name: $0.fault.description, className: "sweep.\(name)", skipped: "not run: left out by \(budget)"))
        }
        self.init(name: "sweep \(result.kind) \(name)", cases: cases.sorted { $0.frame < $1.frame }.map(\.case))
    }
}

/// Decimal text without Foundation's locale-dependent formatters (output must be the same on
/// every machine).
public enum DecimalText {
    /// `value` with exactly `decimals` digits after the point.
    public static func fixed(_ value: Double, _ decimals: Int) -> String {
        guard value.isFinite else { return String(value) }
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = Int64(scaled / scale)
        let fraction = Int64(scaled - Double(whole) * scale)
        let sign = value < 0 && scaled != 0 ? "-" : ""
        guard decimals > 0 else { return sign + String(whole) }
        var digits = String(fraction)
        while digits.count < decimals { digits = "0" + digits }
        return sign + String(whole) + "." + digits
    }
}

/// One part of a sweep split across CI jobs (`tether replay SET --sweep drop --shard 2/4`): a run of
/// consecutive variants, in point order, whose estimated cost is about a quarter of the sweep's.
/// Consecutive, so that the JUnit suites of the parts, merged in part order
/// (`tether junit merge`), are the suite one job would write.
public struct SweepPart: Sendable, Hashable {
    /// Which part.
    public var shard: ReplayShard
    /// Its variants: indices into the plan's points (empty when there are more parts than variants).
    public var indices: Range<Int>
    /// The variants of the whole sweep.
    public var total: Int
    /// Its share of the sweep's estimated cost, in percent.
    public var share: Double

    /// `part 2/4: variants 34–66 of 132, 25.1% of the estimated work`.
    public var description: String {
        let which = indices.isEmpty ? "no variant (more parts than variants)" : "variants \(indices.lowerBound + 1)–\(indices.upperBound) of \(total)"
        return "part \(shard): \(which), \(DecimalText.fixed(share, 1))% of the estimated work"
    }
}

extension SweepPlan {
    /// A variant's estimated cost, in frames replayed: from where it forks to the end of the
    /// capture (the whole capture when it is replayed from the first frame), and a fixed share for
    /// what every variant does besides (copying the run, checking the promises, finishing).
    func estimatedCost(of index: Int) -> Double {
        let overhead = 64.0
        guard let capture, let positions = forkPositions else { return overhead + 1 }
        let frames = capture.frames.count
        return overhead + Double(frames - (positions[index] ?? 0))
    }

    /// Part `shard` of the sweep: consecutive variants in point order, each part about the same
    /// estimated cost (``estimatedCost(of:)``). Every variant is in exactly one part, and every job
    /// that made the same plan computes the same parts.
    public func part(_ shard: ReplayShard) -> SweepPart {
        let costs = points.indices.map(estimatedCost(of:))
        let total = costs.reduce(0, +)
        // A variant belongs to the part its cost's midpoint falls in: the parts are consecutive
        // and their boundaries do not depend on anything but the plan.
        var start = 0.0
        var first: Int?
        var end = 0
        var mine = 0.0
        for (index, cost) in costs.enumerated() {
            let middle = start + cost / 2
            start += cost
            let part = total > 0 ? min(shard.count - 1, Int(middle * Double(shard.count) / total)) : 0
            if part == shard.index - 1 {
                if first == nil { first = index }
                end = index + 1
                mine += cost
            }
        }
        let indices = first.map { $0..<end } ?? points.count..<points.count
        return SweepPart(shard: shard, indices: indices, total: points.count, share: total > 0 ? mine / total * 100 : 0)
    }
}

extension SearchResult {
    /// Whether no schedule run failed.
    public var passedAll: Bool { failed == 0 }

    /// The search's table for the set at `setPath`: verdict, counts, each failure shrunk with the
    /// line that reruns it, and what a budget left out.
    public func report(setPath: String, tool: String) -> String {
        var lines: [String] = []
        lines.append("== search \(search) of \(kind) over \(set): \(failed == 0 ? "PASS" : "FAIL")")
        lines.append("  schedules \(schedules) (\(search.coverage)), ran \(ran), failed \(failed); \(DecimalText.fixed(elapsedSeconds, 2)) s")
        if ran < schedules {
            let why = budget.map { "left out by --sweep-budget \($0)" } ?? "not run"
            lines.append("  NOT COVERED: \(schedules - ran) schedules \(why); the verdict is about the \(ran) run")
        }
        lines.append(promises.isEmpty ? "  promises: none (the set's cores state none; every schedule passes trivially)" : "  promises: " + promises.joined(separator: "; "))
        if forked > 0 {
            lines.append("  \(forked) of \(ran) schedules copied from the run without faults where their first fault is first felt, \(stoppedEarly) stopped early once recovered")
        }
        if !heldEnding.isEmpty {
            lines.append("  the recorded end held back in every run: " + heldEnding.map { "--fault \($0)" }.joined(separator: " "))
        }
        if !findings.isEmpty {
            lines.append("  \(findings.count) failure\(findings.count == 1 ? "" : "s"), each shrunk to the fewest faults, at the earliest frames, with the smallest delays that still break the same promise:")
        }
        for finding in findings {
            let faults = finding.schedule.map { "--fault \($0)" }.joined(separator: " ")
            var what = "\(finding.schedule.count) fault\(finding.schedule.count == 1 ? "" : "s")"
            if finding.minimal, finding.schedule.count > 1 { what += " together: none of them alone breaks it" }
            if !finding.minimal { what += ", shrinking stopped after \(finding.shrinkReplays) replays" }
            lines.append("  FAIL \(faults) (\(what))")
            lines.append("    " + finding.variant.problemLine)
            let found = finding.found == finding.schedule
                ? "found as shown; \(finding.shrinkReplays) replays found nothing smaller that breaks it"
                : "found as " + finding.found.map { "--fault \($0)" }.joined(separator: " ") + "; shrunk in \(finding.shrinkReplays) replays"
            lines.append("    " + found
                         + (finding.alike > 0 ? "; \(finding.alike) more failing schedules hold it or shrank to it" : ""))
            lines.append("    rerun it: " + finding.variant.rerunCommand(setPath: setPath, tool: tool))
        }
        if unshrunk > 0 {
            lines.append("  … and \(unshrunk) more failing schedules, not shrunk (at most \(FaultSearch.maxShrinkings) are, to at most \(FaultSearch.maxFindings) failures)")
        }
        return lines.joined(separator: "\n") + "\n\n"
    }
}

extension JUnitReport.TestSuite {
    /// A search of the set called `name` (at `setPath`) as a suite: one failing case per failure
    /// found, named by its shrunk schedule, with the line that reruns it; one passing case when
    /// none failed; a skipped case for what a budget left out.
    public init(search result: SearchResult, name: String, setPath: String, tool: String) {
        var cases = result.findings.map { finding in
            JUnitReport.TestCase(name: finding.schedule.map(\.description).joined(separator: " "), className: "search.\(name)",
                                 failure: JUnitReport.Failure(message: finding.variant.problemLine, type: finding.variant.error == nil ? "promise" : "error",
                                                              details: "rerun: " + finding.variant.rerunCommand(setPath: setPath, tool: tool)))
        }
        if result.unshrunk > 0 {
            cases.append(JUnitReport.TestCase(name: "\(result.unshrunk) more failing schedules", className: "search.\(name)",
                                              failure: JUnitReport.Failure(message: "not shrunk: at most \(FaultSearch.maxShrinkings) failing schedules are", type: "promise")))
        }
        if result.findings.isEmpty, result.unshrunk == 0 {
            cases.append(JUnitReport.TestCase(name: "\(result.ran) schedules", className: "search.\(name)"))
        }
        if result.ran < result.schedules {
            cases.append(JUnitReport.TestCase(name: "\(result.schedules - result.ran) schedules not run", className: "search.\(name)",
                                              skipped: "left out by " + (result.budget.map { "--sweep-budget \($0)" } ?? "the budget")))
        }
        self.init(name: "search \(result.search) \(result.kind) \(name)", cases: cases)
    }
}
