import BehaviourTrace
#if canImport(CaptureSet)
import CaptureSet
#endif

/// Checks manifest expectations as a trace streams by, without holding the trace
/// (docs/expectations.md): feed every event, in trace order, to ``observe(_:)``; then
/// ``results()`` gives one result per expectation, in manifest order, exactly what
/// ``Expectations/evaluate(_:trace:)`` gives for the whole trace.
///
/// Each expectation keeps only its own state: a count, first and last times, the next selector
/// of an `order`, the largest gap so far, a value per group (`monotonic`), per key (`once_per`), or
/// the `from` events still waiting for their answer (`latency`). So memory does not grow with the
/// trace, only with the number of groups or keys an expectation names, or with the `latency`
/// starts still waiting for their answers.
public struct ExpectationEvaluator {
    /// The expectations checked, in manifest order.
    public let expectations: [Expectation]
    private let checks: [ExpectationCheck]
    /// The selectors the checks name, each matched once per event.
    private let selectors: SharedSelectors
    /// What each event name is dispatched to: the other checks cannot be moved by an event of that
    /// name (whatever a check does with an event, a selector naming it must match first), so they
    /// are not shown it.
    private let byEvent: [String: Dispatch]
    /// The event name of the latest event observed, and its dispatch: a trace is mostly runs of
    /// one event name, so most events are dispatched without a lookup.
    private var lastEvent: String?
    private var last = Dispatch()
    /// The position in the trace of the next event.
    private var position = 0

    /// The checks and the selectors an event name concerns. The checks are unmanaged because
    /// ``checks`` holds them, and a retain and a release per check per event cost more than the
    /// checking.
    private struct Dispatch {
        var checks: [Unmanaged<ExpectationCheck>] = []
        var selectors: [Int] = []
    }

    /// An evaluator for `expectations` that has seen no event yet.
    public init(_ expectations: [Expectation]) {
        self.expectations = expectations
        let selectors = SharedSelectors()
        let checks = expectations.map { Self.makeCheck($0, selectors) }
        var byEvent: [String: Dispatch] = [:]
        for check in checks {
            for name in Set(check.namedSelectors.map(\.event)) { byEvent[name, default: Dispatch()].checks.append(Unmanaged.passUnretained(check)) }
        }
        for (name, ids) in selectors.idsByEvent() { byEvent[name, default: Dispatch()].selectors = ids }
        self.selectors = selectors
        self.checks = checks
        self.byEvent = byEvent
    }

    /// The next event of the trace.
    public mutating func observe(_ event: TraceEvent) {
        if lastEvent != event.event {
            selectors.clear(last.selectors)
            lastEvent = event.event
            last = byEvent[event.event] ?? Dispatch()
        }
        last.selectors.withUnsafeBufferPointer { selectors.observe(event, selectors: $0) }
        let at = position
        for check in last.checks {
            check._withUnsafeGuaranteedRef { $0.observe(event, at: at) }
        }
        position += 1
    }

    /// One result per expectation, in manifest order, for the events observed so far.
    public func results() -> [ExpectationResult] {
        zip(expectations, checks).map { expectation, check in
            let label = expectation.displayName
            let (passed, expected, measured) = check.verdict()
            let (evidence, omitted) = check.evidence(passed: passed)
            return ExpectationResult(
                expectation: expectation, passed: passed, measured: measured,
                message: "\(label): expected \(expected), measured \(measured)",
                evidence: evidence, evidenceOmitted: omitted)
        }
    }

    private static func makeCheck(_ expectation: Expectation, _ table: SharedSelectors) -> ExpectationCheck {
        func shared(_ selector: Expectation.Selector) -> SharedSelector { table.share(selector) }
        switch expectation.kind {
        case .count(let selector, let bounds): return CountCheck(shared(selector), bounds)
        case .absent(let selector): return AbsentCheck(shared(selector))
        case .order(let selectors): return OrderCheck(selectors.map(shared))
        case .maxGap(let selector, let maxMs, let start, let end):
            return MaxGapCheck(shared(selector), maxMs: maxMs, start: start.map(shared), end: end.map(shared))
        case .rate(let selector, let hz, let tolerancePercent): return RateCheck(shared(selector), hz: hz, tolerancePercent: tolerancePercent)
        case .at(let selector, let tMs, let toleranceMs): return AtCheck(shared(selector), tMs: tMs, toleranceMs: toleranceMs)
        case .range(let selector, let field, let min, let max): return RangeCheck(shared(selector), field: field, min: min, max: max)
        case .equals(let selector, let field, let value, let which): return EqualsCheck(shared(selector), field: field, value: value, which: which)
        case .monotonic(let selector, let field, let per, let endsAt, let endsAtField):
            return MonotonicCheck(shared(selector), field: field, per: per, endsAt: endsAt, endsAtField: endsAtField)
        case .oncePer(let selector, let key, let of): return OncePerCheck(shared(selector), key: key, of: shared(of))
        case .latency(let from, let to, let key, let minMs, let maxMs):
            return LatencyCheck(from: shared(from), to: shared(to), key: key, minMs: minMs, maxMs: maxMs)
        }
    }
}

/// One expectation's running state. A class, so that the state is updated in place (an enum's
/// payload would be copied out and back on every event). The subclasses' stored state is
/// `@exclusivity(unchecked)`: one evaluator owns its checks and shows them one event at a time,
/// so no two accesses overlap, and checking that on every access cost a tenth of the checking.
class ExpectationCheck {
    /// Every selector it matches events with.
    var namedSelectors: [SharedSelector] { [] }
    /// The next event of the trace, at `index` in it.
    func observe(_ event: TraceEvent, at index: Int) {}
    /// Whether it held, what was expected, what was measured.
    func verdict() -> (passed: Bool, expected: String, measured: String) { (false, "", "") }
    /// The events that decide the verdict, in trace order, and how many measured events were not kept.
    func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) { ([], 0) }
}

/// The first and the last events of a run of matches, at most ``ExpectationEvidence/limit`` in all
/// (half each), and how many there were.
struct EvidenceSample {
    private(set) var head: [ExpectationEvidence] = []
    private var tail: [ExpectationEvidence] = []
    private var tailStart = 0
    private(set) var seen = 0
    let half: Int

    init(limit: Int = ExpectationEvidence.limit) { half = max(1, limit / 2) }

    mutating func add(_ index: Int, _ timeNs: Int64, _ role: ExpectationEvidence.Role = .matched) {
        let item = ExpectationEvidence(index: index, timeNs: timeNs, role: role)
        seen += 1
        if head.count < half {
            head.append(item)
        } else if tail.count < half {
            tail.append(item)
        } else {
            tail[tailStart] = item
            tailStart = (tailStart + 1) % half
        }
    }

    /// Everything kept, in trace order.
    var kept: [ExpectationEvidence] {
        var result = head
        result += tail[tailStart...]
        result += tail[..<tailStart]
        return result
    }
    /// How many were seen and not kept.
    var omitted: Int { seen - head.count - tail.count }
}

/// `items` sorted by trace position, one per position (an event kept in two roles keeps the one
/// that says more: offending, a gap's end, a pair's side… before window edge, before matched), with
/// the sample's count of the others.
private func sortedEvidence(_ items: [ExpectationEvidence], omitted: Int = 0) -> (kept: [ExpectationEvidence], omitted: Int) {
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

private func formatTime(_ ns: Int64) -> String { Expectations.formatTime(ns) }
private func formatNumber(_ value: Double) -> String { Expectations.formatNumber(value) }

private final class CountCheck: ExpectationCheck {
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

private final class AbsentCheck: ExpectationCheck {
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
private final class OrderCheck: ExpectationCheck {
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
private final class MaxGapCheck: ExpectationCheck {
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

private final class RateCheck: ExpectationCheck {
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
private final class AtCheck: ExpectationCheck {
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

private final class RangeCheck: ExpectationCheck {
    let selector: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector] }
    let field: String
    let min: Double?
    let max: Double?
    @exclusivity(unchecked) var count = 0
    @exclusivity(unchecked) var low = Double.infinity
    @exclusivity(unchecked) var high = -Double.infinity
    @exclusivity(unchecked) var firstOutside: (timeNs: Int64, value: String)?
    @exclusivity(unchecked) var offending: ExpectationEvidence?
    @exclusivity(unchecked) var sample = EvidenceSample()

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) {
        sortedEvidence(sample.kept + (offending.map { [$0] } ?? []), omitted: sample.omitted)
    }

    init(_ selector: SharedSelector, field: String, min: Double?, max: Double?) {
        self.selector = selector
        self.field = field
        self.min = min
        self.max = max
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        guard selector.matches(event) else { return }
        count += 1
        sample.add(index, event.timeNs)
        guard let number = event.field(field)?.numericValue else {
            if firstOutside == nil {
                firstOutside = (event.timeNs, event.field(field).map { "non-numeric \($0.compactText)" } ?? "missing")
                offending = ExpectationEvidence(index: index, timeNs: event.timeNs, role: .offending)
            }
            return
        }
        low = Swift.min(low, number)
        high = Swift.max(high, number)
        let inside = (min.map { number >= $0 } ?? true) && (max.map { number <= $0 } ?? true)
        if !inside && firstOutside == nil {
            firstOutside = (event.timeNs, formatNumber(number))
            offending = ExpectationEvidence(index: index, timeNs: event.timeNs, role: .offending)
        }
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "\(field) in [\(min.map(formatNumber) ?? "-∞"), \(max.map(formatNumber) ?? "+∞")]"
        guard count > 0 else { return (false, expected, "no matching events") }
        var measured = low <= high ? "[\(formatNumber(low)), \(formatNumber(high))] over \(count) events"
            : "no numeric values over \(count) events"
        if let (timeNs, value) = firstOutside {
            measured += "; first outside: \(value) at \(formatTime(timeNs))"
        }
        return (firstOutside == nil, expected, measured)
    }
}

/// `first` keeps the first matching event's field, `last` the latest one's, `every` counts the
/// events checked and those that differ and keeps the first that differs.
private final class EqualsCheck: ExpectationCheck {
    let selector: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector] }
    let field: String
    let value: Expectation.Value
    let which: Expectation.Which
    @exclusivity(unchecked) var checked = 0
    @exclusivity(unchecked) var failures = 0
    @exclusivity(unchecked) var firstFailure: (timeNs: Int64, got: TraceValue?)?
    @exclusivity(unchecked) var offending: ExpectationEvidence?
    @exclusivity(unchecked) var sample = EvidenceSample()

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) {
        sortedEvidence(sample.kept + (offending.map { [$0] } ?? []), omitted: sample.omitted)
    }

    init(_ selector: SharedSelector, field: String, value: Expectation.Value, which: Expectation.Which) {
        self.selector = selector
        self.field = field
        self.value = value
        self.which = which
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        guard selector.matches(event) else { return }
        switch which {
        case .first:
            guard checked == 0 else { return }
        case .last:
            // Only the latest matching event counts: forget what the one before it showed.
            checked = 0
            failures = 0
            firstFailure = nil
            offending = nil
            sample = EvidenceSample()
        case .every:
            break
        }
        checked += 1
        sample.add(index, event.timeNs)
        let got = event.field(field)
        if !value.matches(got) {
            failures += 1
            if firstFailure == nil {
                firstFailure = (event.timeNs, got)
                offending = ExpectationEvidence(index: index, timeNs: event.timeNs, role: .offending)
            }
        }
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "\(which.rawValue) \(field) = \(value.description)"
        guard checked > 0 else { return (false, expected, "no matching events") }
        if let firstFailure {
            let got = firstFailure.got?.compactText ?? "missing"
            let prefix = which == .every ? "\(failures) of \(checked) differ; first " : ""
            return (false, expected, "\(prefix)\(got) at \(formatTime(firstFailure.timeNs))")
        }
        let suffix = which == .every ? " (all \(checked))" : ""
        return (true, expected, value.description + suffix)
    }
}

/// The latest value per group (and, for `ends_at_field`, that event's other field); the first
/// event that breaks the rule decides the result.
private final class MonotonicCheck: ExpectationCheck {
    /// One group's state: its latest value (and, for `ends_at_field`, that event's other field)
    /// and its latest event.
    struct Group {
        let name: String
        var value: Double
        var endsAtValue: Double?
        var lastEvent: ExpectationEvidence
    }

    /// Groups are found by a scan while there are at most this many: a handful of entry names
    /// compare faster than they hash, three times per event.
    static let scannedGroups = 16

    let selector: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector] }
    let field: String
    let per: String?
    let endsAt: Double?
    let endsAtField: String?
    /// In first-seen order.
    @exclusivity(unchecked) var groups: [Group] = []
    /// Where each group is in ``groups``, once there are more than ``scannedGroups``.
    @exclusivity(unchecked) var groupIndex: [String: Int] = [:]
    /// The group of the latest event: entries come round in the same order, so the one after it is
    /// tried first (equal texts compare at once; unequal ones take longer).
    @exclusivity(unchecked) var latest = -1
    @exclusivity(unchecked) var failure: String?
    /// The failing event and the one before it in its group.
    @exclusivity(unchecked) var failureEvidence: [ExpectationEvidence] = []

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) {
        if !failureEvidence.isEmpty { return sortedEvidence(failureEvidence) }
        // Each group's last event (the one whose value must reach the end), the first groups only.
        let lasts = groups.prefix(ExpectationEvidence.limit).map(\.lastEvent)
        return sortedEvidence(lasts, omitted: Swift.max(0, groups.count - ExpectationEvidence.limit))
    }

    init(_ selector: SharedSelector, field: String, per: String?, endsAt: Double?, endsAtField: String?) {
        self.selector = selector
        self.field = field
        self.per = per
        self.endsAt = endsAt
        self.endsAtField = endsAtField
    }

    /// Where the group named `name` is in ``groups``, if it is there yet.
    private func position(of name: String) -> Int? {
        if !groups.isEmpty {
            let next = latest + 1 < groups.count ? latest + 1 : 0
            if groups[next].name == name { latest = next; return next }
        }
        let found: Int?
        if groups.count > Self.scannedGroups {
            found = groupIndex[name]
        } else {
            found = groups.indices.first { groups[$0].name == name }
        }
        if let found { latest = found }
        return found
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        guard failure == nil, selector.matches(event) else { return }
        let group = per.map { event.field($0)?.compactText ?? "missing" } ?? ""
        let here = ExpectationEvidence(index: index, timeNs: event.timeNs, role: .matched)
        guard let value = event.field(field)?.numericValue else {
            failure = "\(field) missing or not a number at \(formatTime(event.timeNs))"
            failureEvidence = [ExpectationEvidence(index: index, timeNs: event.timeNs, role: .offending)]
            return
        }
        let endsAtValue = endsAtField.flatMap { event.field($0)?.numericValue }
        guard let at = position(of: group) else {
            groups.append(Group(name: group, value: value, endsAtValue: endsAtValue, lastEvent: here))
            latest = groups.count - 1
            if groups.count > Self.scannedGroups {
                if groupIndex.isEmpty {
                    for (i, known) in groups.enumerated() { groupIndex[known.name] = i }
                } else {
                    groupIndex[group] = groups.count - 1
                }
            }
            return
        }
        let previous = groups[at]
        if value < previous.value {
            failureEvidence = [previous.lastEvent, ExpectationEvidence(index: index, timeNs: event.timeNs, role: .offending)]
            failure = "\(field) fell from \(formatNumber(previous.value)) to \(formatNumber(value)) at \(formatTime(event.timeNs))\(per.map { " (\($0) \(group))" } ?? "")"
            return
        }
        groups[at].value = value
        groups[at].endsAtValue = endsAtValue
        groups[at].lastEvent = here
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "\(field) never decreasing\(per.map { " per \($0)" } ?? "")"
            + (endsAt.map { ", ending at \(formatNumber($0))" } ?? "") + (endsAtField.map { ", ending at its \($0)" } ?? "")
        if let failure { return (false, expected, failure) }
        guard !groups.isEmpty else { return (false, expected, "no matching events") }
        for group in groups {
            let target = endsAt ?? (endsAtField != nil ? group.endsAtValue : nil)
            if let endsAtField, target == nil {
                return (false, expected, "the last event\(per.map { " of \($0) \(group.name)" } ?? "") has no numeric \(endsAtField)")
            }
            if let target, group.value != target {
                return (false, expected, "ended at \(formatNumber(group.value)), not \(formatNumber(target))\(per.map { " (\($0) \(group.name))" } ?? "")")
            }
        }
        return (true, expected, "non-decreasing in \(groups.count) group(s)" + (endsAt != nil || endsAtField != nil ? ", each ending as expected" : ""))
    }
}

/// The keys `of` events named, in first-seen order, and how often the selector's events named each.
private final class OncePerCheck: ExpectationCheck {
    let selector: SharedSelector
    let key: String
    let of: SharedSelector
    override var namedSelectors: [SharedSelector] { [selector, of] }
    @exclusivity(unchecked) var expectedKeys: [String] = []
    @exclusivity(unchecked) var seenExpected: Set<String> = []
    @exclusivity(unchecked) var counts: [String: Int] = [:]
    /// The first events of each kind, with their key, to pick the problem keys' events from.
    @exclusivity(unchecked) var ofEvents = EvidenceSample(limit: 2 * ExpectationEvidence.limit)
    @exclusivity(unchecked) var ofKeys: [Int: String] = [:]
    @exclusivity(unchecked) var matchedEvents = EvidenceSample(limit: 2 * ExpectationEvidence.limit)
    @exclusivity(unchecked) var matchedKeys: [Int: String] = [:]

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) {
        let all = ofEvents.kept.map { ($0, ofKeys[$0.index] ?? "") } + matchedEvents.kept.map { ($0, matchedKeys[$0.index] ?? "") }
        let chosen = passed ? all : all.filter { counts[$0.1, default: 0] != 1 || !seenExpected.contains($0.1) }
        let items = chosen.prefix(ExpectationEvidence.limit).map { $0.0 }
        return sortedEvidence(Array(items), omitted: ofEvents.seen + matchedEvents.seen - items.count)
    }

    init(_ selector: SharedSelector, key: String, of: SharedSelector) {
        self.selector = selector
        self.key = key
        self.of = of
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        if of.matches(event) {
            let k = event.field(key)?.compactText ?? "missing"
            if seenExpected.insert(k).inserted { expectedKeys.append(k) }
            if ofEvents.seen < ofEvents.half { ofKeys[index] = k }
            ofEvents.add(index, event.timeNs, .from)
        }
        if selector.matches(event) {
            let k = event.field(key)?.compactText ?? "missing"
            counts[k, default: 0] += 1
            if matchedEvents.seen < matchedEvents.half { matchedKeys[index] = k }
            matchedEvents.add(index, event.timeNs)
        }
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "exactly one \(selector.summary) per \(key) of \(of.summary)"
        guard !expectedKeys.isEmpty else { return (false, expected, "no \(of.summary) events") }
        var problems: [String] = []
        for k in expectedKeys where counts[k, default: 0] != 1 { problems.append("\(key) \(k): \(counts[k, default: 0])") }
        for k in counts.keys.sorted() where !seenExpected.contains(k) { problems.append("\(key) \(k): \(counts[k]!) without a matching \(of.event)") }
        if problems.isEmpty { return (true, expected, "one each for \(expectedKeys.count) \(key) value(s)") }
        return (false, expected, problems.prefix(5).joined(separator: "; ") + (problems.count > 5 ? "; …" : ""))
    }
}

/// Each `from` event waits (by its key's value) for the first later `to` event with the same
/// value. The result is decided by the earliest `from` that fails — unanswered, or answered
/// outside the bounds — so `from` events after a known failure need not wait.
private final class LatencyCheck: ExpectationCheck {
    let from: SharedSelector
    let to: SharedSelector
    override var namedSelectors: [SharedSelector] { [from, to] }
    let key: String
    let minMs: Double?
    let maxMs: Double?
    /// `from` events not answered yet, by their key's value: (ordinal among `from` events, time).
    @exclusivity(unchecked) var waiting: [TraceValue?: [(ordinal: Int, timeNs: Int64, key: TraceValue?, index: Int)]] = [:]
    /// The pair (or lone start) behind ``failure``; the first pairs measured within the bounds.
    @exclusivity(unchecked) var failureEvidence: [ExpectationEvidence] = []
    @exclusivity(unchecked) var pairs = EvidenceSample()

    override func evidence(passed: Bool) -> (kept: [ExpectationEvidence], omitted: Int) {
        if !passed {
            // As in verdict(): the earliest failing start decides, answered out of bounds or unanswered.
            var best: (ordinal: Int, items: [ExpectationEvidence])?
            if let failure { best = (ordinal: failure.ordinal, items: failureEvidence) }
            for starts in waiting.values {
                for start in starts where best.map({ start.ordinal < $0.ordinal }) ?? true {
                    best = (ordinal: start.ordinal, items: [ExpectationEvidence(index: start.index, timeNs: start.timeNs, role: .from)])
                }
            }
            return sortedEvidence(best?.items ?? [])
        }
        return sortedEvidence(pairs.kept, omitted: pairs.omitted)
    }

    @exclusivity(unchecked) var froms = 0
    @exclusivity(unchecked) var measured = 0
    @exclusivity(unchecked) var low = Double.infinity
    @exclusivity(unchecked) var high = -Double.infinity
    @exclusivity(unchecked) var failure: (ordinal: Int, measured: String)?

    init(from: SharedSelector, to: SharedSelector, key: String, minMs: Double?, maxMs: Double?) {
        self.from = from
        self.to = to
        self.key = key
        self.minMs = minMs
        self.maxMs = maxMs
    }

    private func fail(_ ordinal: Int, _ measured: String, _ pair: [ExpectationEvidence]) {
        if let failure, failure.ordinal < ordinal { return }
        failure = (ordinal, measured)
        failureEvidence = pair
    }

    override func observe(_ event: TraceEvent, at index: Int) {
        if to.matches(event) {
            if let starts = waiting.removeValue(forKey: event.field(key)) {
                for start in starts {
                    let ms = (Double(event.timeNs) - Double(start.timeNs)) / 1e6  // in Double: t_ns spans all of Int64
                    let pair = [ExpectationEvidence(index: start.index, timeNs: start.timeNs, role: .from),
                                ExpectationEvidence(index: index, timeNs: event.timeNs, role: .to)]
                    if let minMs, ms < minMs {
                        fail(start.ordinal, "\(formatNumber(ms)) ms for \(key) \(start.key?.compactText ?? "missing")", pair)
                    } else if let maxMs, ms > maxMs {
                        fail(start.ordinal, "\(formatNumber(ms)) ms for \(key) \(start.key?.compactText ?? "missing")", pair)
                    } else {
                        pairs.add(start.index, start.timeNs, .from)
                        pairs.add(index, event.timeNs, .to)
                        measured += 1
                        low = Swift.min(low, ms)
                        high = Swift.max(high, ms)
                    }
                }
            }
        }
        if from.matches(event) {
            let ordinal = froms
            froms += 1
            if let failure, failure.ordinal < ordinal { return }
            let k = event.field(key)
            waiting[k, default: []].append((ordinal, event.timeNs, k, index))
        }
    }

    override func verdict() -> (passed: Bool, expected: String, measured: String) {
        let expected = "\(to.summary) \(minMs.map { "≥ \(formatNumber($0)) ms" } ?? "")\(minMs != nil && maxMs != nil ? " and " : "")\(maxMs.map { "≤ \(formatNumber($0)) ms" } ?? "") after each \(from.summary) with the same \(key)"
        var failure = self.failure
        for starts in waiting.values {
            for start in starts where failure.map({ start.ordinal < $0.ordinal }) ?? true {
                failure = (start.ordinal, "no \(to.event) for \(key) \(start.key?.compactText ?? "missing") (from at \(formatTime(start.timeNs)))")
            }
        }
        if let failure { return (false, expected, failure.measured) }
        guard measured > 0 else { return (false, expected, "no \(from.summary) events") }
        return (true, expected, "\(measured) pair(s), \(formatNumber(low))–\(formatNumber(high)) ms")
    }
}
