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
///
/// One evaluator per trace: its checks are objects (``ExpectationCheck``), so a copy of the
/// evaluator shares them with the original, and events shown to either reach both. Nothing in
/// Tether copies one (a fault sweep's forked runs check promises, not expectations).
public struct ExpectationEvaluator {
    /// The expectations checked, in manifest order.
    public let expectations: [Expectation]
    private let checks: [ExpectationCheck]
    /// The selectors the checks name, each matched once per event.
    private let selectors: SharedSelectors
    /// What each event name is dispatched to: the other checks cannot be moved by an event of that
    /// name (whatever a check does with an event, a selector naming it must match first), so they
    /// are not shown it.
    private let byEvent: [TraceName: Dispatch]
    /// The event name of the latest event observed, and its dispatch: a trace is mostly runs of
    /// one event name, so most events are dispatched without a lookup.
    private var lastEvent: TraceName?
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
        var byEvent: [TraceName: Dispatch] = [:]
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
