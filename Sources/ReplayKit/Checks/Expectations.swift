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

    /// Creates a result.
    public init(expectation: Expectation, passed: Bool, measured: String, message: String) {
        self.expectation = expectation
        self.passed = passed
        self.measured = measured
        self.message = message
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
        guard event.event == self.event else { return false }
        if let core, event.core != core { return false }
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

