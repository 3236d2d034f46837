import BehaviourTrace
#if canImport(CaptureSet)
import CaptureSet
#endif

/// The outcome of one expectation against one trace.
public struct ExpectationResult: Sendable, Hashable {
    /// The expectation checked.
    public var expectation: Expectation
    /// Whether it held.
    public var passed: Bool
    /// What was measured, short, e.g. `1188` or `max gap 312.5 ms at t=12.000 s`.
    public var measured: String
    /// One line saying what was expected and what was measured, e.g.
    /// `count(datapoint where name=v1/1/yaw): expected 1200, measured 1188`.
    public var message: String
    /// The events it measured that decide the verdict, in trace order, at most
    /// ``ExpectationEvidence/limit``: the offending event of an `absent`, the two ends of a
    /// `max_gap`'s largest gap, the pair of a `latency` that broke its bound, the steps an `order`
    /// found… (``ExpectationEvidence`` lists what each type keeps). What the timeline report links
    /// an expectation to.
    public var evidence: [ExpectationEvidence]
    /// How many more events it measured than ``evidence`` keeps (0 when it keeps them all).
    public var evidenceOmitted: Int

    /// Creates a result.
    public init(expectation: Expectation, passed: Bool, measured: String, message: String,
                evidence: [ExpectationEvidence] = [], evidenceOmitted: Int = 0) {
        self.expectation = expectation
        self.passed = passed
        self.measured = measured
        self.message = message
        self.evidence = evidence
        self.evidenceOmitted = evidenceOmitted
    }
}

/// One trace event an expectation measured: its position in the trace and what it was to the
/// check.
///
/// What each type keeps: `count`, `rate`, `range` and `equals` (every) the first and last
/// matching events (up to half ``limit`` each), plus for `range`/`equals` the first event that
/// broke the rule; `absent` the matching events (the first is the offending one); `order` the
/// step each selector matched; `max_gap` the two ends of the largest gap (and the window's
/// start and end events); `at` the nearest event; `monotonic` the event that fell and the one
/// before it in its group; `once_per` the events of the keys that were not exactly once; `latency`
/// the pair that broke the bound or the start that was never answered (otherwise the pairs
/// measured).
public struct ExpectationEvidence: Sendable, Hashable {
    /// At most this many events are kept per expectation.
    public static let limit = 256

    /// What the event was to the check.
    public enum Role: String, Sendable, Hashable, CaseIterable {
        /// An event the selector matched.
        case matched
        /// The event that broke the expectation (the first outside a range, an `absent` match…).
        case offending
        /// The earlier end of the largest gap.
        case gapStart = "gap_start"
        /// The later end of the largest gap.
        case gapEnd = "gap_end"
        /// The event that opened or closed a `max_gap` window.
        case window
        /// A correlated pair's start (`latency`, `once_per`'s `of`).
        case from
        /// A correlated pair's end.
        case to
        /// The matching event nearest an `at`'s instant.
        case nearest
    }

    /// The event's position in the trace, 0-based, counting every event of every core.
    public var index: Int
    /// The event's `t_ns`.
    public var timeNs: Int64
    /// What it was to the check.
    public var role: Role

    /// Creates a piece of evidence.
    public init(index: Int, timeNs: Int64, role: Role) {
        self.index = index
        self.timeNs = timeNs
        self.role = role
    }
}

/// Evaluates manifest expectations against a behaviour trace (docs/expectations.md).
public enum Expectations {
    /// Checks every expectation against `trace` (events in trace order) and returns one result
    /// each, in the same order. Pure: the same inputs always give the same results. The same as
    /// feeding every event to an ``ExpectationEvaluator``, which is how `tether replay` checks a
    /// trace without holding it.
    public static func evaluate(_ expectations: [Expectation], trace: [TraceEvent]) -> [ExpectationResult] {
        var evaluator = ExpectationEvaluator(expectations)
        for event in trace { evaluator.observe(event) }
        return evaluator.results()
    }

    /// Checks one expectation against `trace`.
    public static func evaluate(_ expectation: Expectation, trace: [TraceEvent]) -> ExpectationResult {
        evaluate([expectation], trace: trace)[0]
    }

    /// Virtual time for messages: `12.345678 s`, exact to the microsecond.
    static func formatTime(_ ns: Int64) -> String {
        "t=" + formatNumber(Double(ns) / 1e9) + " s"
    }

    /// At most six decimals, trailing zeros dropped: `1200`, `99.5`, `0.333333`.
    static func formatNumber(_ value: Double) -> String {
        guard value.isFinite else { return value.description }
        let scaled = (value * 1e6).rounded()
        guard abs(scaled) < 9e18 else { return value.description }
        let micro = Int64(scaled)
        let sign = micro < 0 ? "-" : ""
        let magnitude = micro.magnitude
        let whole = magnitude / 1_000_000
        var fraction = String(magnitude % 1_000_000)
        if fraction == "0" { return sign + String(whole) }
        fraction = String(repeating: "0", count: 6 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(sign)\(whole).\(fraction)"
    }

    static func signed(_ value: Double) -> String {
        (value >= 0 ? "+" : "") + formatNumber(value)
    }
}

extension Expectation.Selector {
    /// Whether `event` is one this selector chooses.
    public func matches(_ event: TraceEvent) -> Bool {
        guard event.event.text == self.event else { return false }
        if let core, event.core.text != core { return false }
        for (key, wanted) in self.where where !wanted.matches(event.field(key)) {
            return false
        }
        return true
    }
}

extension Expectation.Value {
    /// Manifest values come from YAML, where `12` may be meant for a string field "12" or an int
    /// field 12, so numbers compare numerically and everything else by text.
    public func matches(_ field: TraceValue?) -> Bool {
        guard let field else { return false }
        switch (self, field) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.bool(let a), .bool(let b)): return a == b
        case (.int(let a), .int(let b)): return a == b
        case (.int, _), (.double, _):
            if let mine = numericValue, let theirs = field.numericValue { return mine == theirs }
            if case .string(let s) = field { return s == description }
            return false
        case (.string(let s), .string(let t)): return s == t
        case (.string(let s), _): return s == field.compactText
        case (.bool, _): return false
        }
    }

    var numericValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }
}

