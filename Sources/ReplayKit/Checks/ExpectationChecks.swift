import BehaviourTrace
#if canImport(CaptureSet)
import CaptureSet
#endif

// One class per expectation kind (docs/expectations.md), each keeping only the state its verdict
// needs as the trace streams by; ``ExpectationEvaluator`` makes them and shows them the events.
// Here the kinds that count and time events (count, absent, order, max_gap, rate, at); the kinds
// that read a field's values are in ExpectationValueChecks.swift.
//
// The checks' stored `var`s are `@exclusivity(unchecked)`, as ``ExpectationCheck`` says: each check
// belongs to one evaluator, which shows it one event at a time, and no check calls back into itself
// while changing a field, so no two accesses overlap; the runtime checks cost a tenth of the checking.

/// `items` sorted by trace position, one per position (an event kept in two roles keeps the one
/// that says more: offending, a gap's end, a pair's side… before window edge, before matched), with
/// the sample's count of the others.
func sortedEvidence(_ items: [ExpectationEvidence], omitted: Int = 0) -> (kept: [ExpectationEvidence], omitted: Int) {
    func rank(_ role: ExpectationEvidence.Role) -> Int {
        switch role {
        case .matched: 2
        case .window: 1
        default: 0
        }
    }
    var seen = Set<Int>()
    let sorted = items.sorted { ($0.index, rank($0.role)) < ($1.index, rank($1.role)) }.filter { seen.insert($0.index).inserted }
    return (sorted, omitted)
}

func formatTime(_ ns: Int64) -> String { Expectations.formatTime(ns) }
func formatNumber(_ value: Double) -> String { Expectations.formatNumber(value) }

final class CountCheck: ExpectationCheck {
    let selector: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector] }
    let bounds: Expectation.CountBounds
    @exclusivity(unchecked) var n = 0
    @exclusivity(unchecked) var sample = EvidenceSample()

    init(_ selector: SharedSelector, _ bounds: Expectation.CountBounds) {
        self.selector = selector
        self.bounds = bounds
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        if selector.matches(event) {
            n += 1
            sample.add(index, event.timeNs)
        }
    }

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) { (sample.kept, sample.omitted) }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        (bounds.contains(n), bounds.summary, "\(n)")
    }
}

final class AbsentCheck: ExpectationCheck {
    let selector: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector] }
    @exclusivity(unchecked) var n = 0
    @exclusivity(unchecked) var firstNs: Int64 = 0
    @exclusivity(unchecked) var sample = EvidenceSample()

    init(_ selector: SharedSelector) { self.selector = selector }

    override func observe(_ event: TraceEvent, at index: Int) {
        guard selector.matches(event) else { return }
        if n == 0 { firstNs = event.timeNs }
        n += 1
        sample.add(index, event.timeNs, .offending)
    }

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) { (sample.kept, sample.omitted) }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        n == 0 ? (true, "none", "0") : (false, "none", "\(n) (first at \(formatTime(firstNs)))")
    }
}

/// Each selector is looked for after the event that matched the one before it.
final class OrderCheck: ExpectationCheck {
    let selectors: [SharedSelector]
    override var namedSelectors: [SharedSelector] { selectors }
    @exclusivity(unchecked) var found: [Int64] = []
    @exclusivity(unchecked) var steps: [ExpectationEvidence] = []

    init(_ selectors: [SharedSelector]) { self.selectors = selectors }

    override func observe(_ event: TraceEvent, at index: Int) {
        if found.count < selectors.count, selectors[found.count].matches(event) {
            found.append(event.timeNs)
            steps.append(ExpectationEvidence(index: index, timeNs: event.timeNs, role: .matched))
        }
    }

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) { (steps, 0) }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "in order: " + selectors.map(\.summary).joined(separator: " → ")
        if found.count == selectors.count {
            return (true, expected, "all \(selectors.count) in order at " + found.map(formatTime).joined(separator: ", "))
        }
        let missing = selectors[found.count].summary
        let after = found.last.map { " after \(formatTime($0))" } ?? ""
        return (false, expected, "\(found.count) of \(selectors.count) in order; no \(missing)\(after)")
    }
}

/// The window opens at the first `start` event (which counts as a time, not as a match) and
/// closes at the first `end` event after it (likewise); without them, the trace's ends.
final class MaxGapCheck: ExpectationCheck {
    enum Phase { case waitingForStart, inWindow, closed }
    let selector: SharedSelector
    let maxMs: Double
    let start: SharedSelector?
    let end: SharedSelector?
    override var namedSelectors: [SharedSelector] { [selector] + [start, end].compactMap { $0 } }
    @exclusivity(unchecked) var phase: Phase
    @exclusivity(unchecked) var times = 0
    @exclusivity(unchecked) var previous: Int64 = 0
    @exclusivity(unchecked) var largest: Int64 = 0
    @exclusivity(unchecked) var largestAt: Int64 = 0
    @exclusivity(unchecked) var previousEvidence: ExpectationEvidence?
    @exclusivity(unchecked) var gapEnds: (ExpectationEvidence, ExpectationEvidence)?
    @exclusivity(unchecked) var windowEdges: [ExpectationEvidence] = []

    init(_ selector: SharedSelector, maxMs: Double, start: SharedSelector?, end: SharedSelector?) {
        self.selector = selector
        self.maxMs = maxMs
        self.start = start
        self.end = end
        phase = start == nil ? .inWindow : .waitingForStart
    }

    private func add(_ t: Int64, index: Int) {
        let here = ExpectationEvidence(index: index, timeNs: t, role: .matched)
        if times == 0 {
            largestAt = t
        } else if t &- previous > largest {
            largest = t &- previous
            largestAt = previous
            if let previousEvidence { gapEnds = (previousEvidence, here) }
        }
        previous = t
        previousEvidence = here
        times += 1
    }

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) {
        var items = windowEdges
        if let ends = gapEnds {
            var start = ends.0, end = ends.1
            start.role = .gapStart
            end.role = .gapEnd
            items += [start, end]
        } else if let previousEvidence {
            items.append(previousEvidence)
        }
        return sortedEvidence(items)
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        switch phase {
        case .waitingForStart:
            if start?.matches(event) == true {
                add(event.timeNs, index: index)
                windowEdges.append(ExpectationEvidence(index: index, timeNs: event.timeNs, role: .window))
                phase = .inWindow
            }
        case .inWindow:
            if let end, end.matches(event) {
                add(event.timeNs, index: index)
                windowEdges.append(ExpectationEvidence(index: index, timeNs: event.timeNs, role: .window))
                phase = .closed
            } else if selector.matches(event) {
                add(event.timeNs, index: index)
            }
        case .closed:
            break
        }
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        var expected = "gaps ≤ \(formatNumber(maxMs)) ms"
        if let start {
            expected += " from \(start.summary)"
            if phase == .waitingForStart { return (false, expected, "no \(start.summary) to start the window") }
        }
        if let end {
            expected += " until \(end.summary)"
            if phase != .closed { return (false, expected, "no \(end.summary) to end the window") }
        }
        guard times >= 2 else { return (false, expected, "fewer than two matching events; no gap to measure") }
        let largestMs = Double(largest) / 1e6
        return (largestMs <= maxMs, expected, "max gap \(formatNumber(largestMs)) ms after \(formatTime(largestAt))")
    }
}

final class RateCheck: ExpectationCheck {
    let selector: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector] }
    let hz: Double
    let tolerancePercent: Double
    @exclusivity(unchecked) var n = 0
    @exclusivity(unchecked) var firstNs: Int64 = 0
    @exclusivity(unchecked) var lastNs: Int64 = 0
    @exclusivity(unchecked) var sample = EvidenceSample()

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) { (sample.kept, sample.omitted) }

    init(_ selector: SharedSelector, hz: Double, tolerancePercent: Double) {
        self.selector = selector
        self.hz = hz
        self.tolerancePercent = tolerancePercent
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        guard selector.matches(event) else { return }
        if n == 0 { firstNs = event.timeNs }
        lastNs = event.timeNs
        n += 1
        sample.add(index, event.timeNs)
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "\(formatNumber(hz)) Hz ± \(formatNumber(tolerancePercent))%"
        guard n >= 2, lastNs > firstNs else {
            return (false, expected, "\(n) event(s) over no time span; a rate needs two at different times")
        }
        let seconds = (Double(lastNs) - Double(firstNs)) / 1e9
        let measuredHz = Double(n - 1) / seconds
        let allowed = hz * tolerancePercent / 100
        return (abs(measuredHz - hz) <= allowed, expected,
                "\(formatNumber(measuredHz)) Hz (\(n) events over \(formatNumber(seconds)) s)")
    }
}

/// The matching event nearest the target instant; the first of equally near ones.
final class AtCheck: ExpectationCheck {
    let selector: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector] }
    let tMs: Double
    let toleranceMs: Double
    let target: Double
    @exclusivity(unchecked) var nearest: Int64?
    @exclusivity(unchecked) var nearestIndex = 0

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) {
        guard let nearest else { return ([], 0) }
        return ([ExpectationEvidence(index: nearestIndex, timeNs: nearest, role: .nearest)], 0)
    }

    init(_ selector: SharedSelector, tMs: Double, toleranceMs: Double) {
        self.selector = selector
        self.tMs = tMs
        self.toleranceMs = toleranceMs
        target = tMs * 1e6
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        guard selector.matches(event) else { return }
        if let nearest, !(abs(Double(event.timeNs) - target) < abs(Double(nearest) - target)) { return }
        nearest = event.timeNs
        nearestIndex = index
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "one at \(formatNumber(tMs)) ms ± \(formatNumber(toleranceMs)) ms"
        guard let nearest else { return (false, expected, "none matched") }
        let offMs = (Double(nearest) - target) / 1e6
        return (abs(offMs) <= toleranceMs, expected, "nearest at \(formatTime(nearest)) (\(Expectations.signed(offMs)) ms)")
    }
}
