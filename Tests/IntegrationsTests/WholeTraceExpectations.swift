@testable import ReplayKit
import BehaviourTrace

#if canImport(CaptureSet)
import CaptureSet
#endif

// The whole-trace evaluation `Expectations.evaluate` used before expectations were checked as the
// trace streams by (`ExpectationEvaluator`), kept verbatim as the reference the streaming
// evaluator is compared with (StreamingChecksTests). Not used by Tether itself.

/// Evaluates manifest expectations against a behaviour trace (docs/expectations.md).
enum WholeTraceExpectations {
    /// Checks every expectation against `trace` (events in trace order) and returns one result
    /// each, in the same order. Pure: the same inputs always give the same results.
    static func evaluate(_ expectations: [Expectation], trace: [TraceEvent]) -> [ExpectationResult] {
        expectations.map { evaluate($0, trace: trace) }
    }

    /// Checks one expectation against `trace`.
    static func evaluate(_ expectation: Expectation, trace: [TraceEvent]) -> ExpectationResult {
        let label = expectation.displayName
        func result(_ passed: Bool, expected: String, measured: String) -> ExpectationResult {
            ExpectationResult(
                expectation: expectation, passed: passed, measured: measured,
                message: "\(label): expected \(expected), measured \(measured)"
            )
        }

        switch expectation.kind {
        case .count(let selector, let bounds):
            let n = trace.lazy.filter { selector.matches($0) }.count
            return result(bounds.contains(n), expected: bounds.summary, measured: "\(n)")

        case .absent(let selector):
            guard let first = trace.first(where: { selector.matches($0) }) else {
                return result(true, expected: "none", measured: "0")
            }
            let n = trace.lazy.filter { selector.matches($0) }.count
            return result(false, expected: "none", measured: "\(n) (first at \(Expectations.formatTime(first.timeNs)))")

        case .order(let selectors):
            var index = 0
            var found: [Int64] = []
            for selector in selectors {
                guard let hit = trace[index...].firstIndex(where: { selector.matches($0) }) else { break }
                found.append(trace[hit].timeNs)
                index = hit + 1
            }
            let expected = "in order: " + selectors.map(\.summary).joined(separator: " → ")
            if found.count == selectors.count {
                return result(true, expected: expected,
                              measured: "all \(selectors.count) in order at " + found.map(Expectations.formatTime).joined(separator: ", "))
            }
            let missing = selectors[found.count].summary
            let after = found.last.map { " after \(Expectations.formatTime($0))" } ?? ""
            return result(false, expected: expected,
                          measured: "\(found.count) of \(selectors.count) in order; no \(missing)\(after)")

        case .maxGap(let selector, let maxMs, let startSelector, let endSelector):
            return evaluateMaxGap(expectation, selector, maxMs, startSelector, endSelector, trace, result)

        case .rate(let selector, let hz, let tolerancePercent):
            let matches = trace.filter { selector.matches($0) }
            let expected = "\(Expectations.formatNumber(hz)) Hz ± \(Expectations.formatNumber(tolerancePercent))%"
            guard let first = matches.first, let last = matches.last, matches.count >= 2,
                  last.timeNs > first.timeNs
            else {
                return result(false, expected: expected,
                              measured: "\(matches.count) event(s) over no time span; a rate needs two at different times")
            }
            let seconds = (Double(last.timeNs) - Double(first.timeNs)) / 1e9
            let measuredHz = Double(matches.count - 1) / seconds
            let allowed = hz * tolerancePercent / 100
            return result(abs(measuredHz - hz) <= allowed, expected: expected,
                          measured: "\(Expectations.formatNumber(measuredHz)) Hz (\(matches.count) events over \(Expectations.formatNumber(seconds)) s)")

        case .at(let selector, let tMs, let toleranceMs):
            let target = tMs * 1e6
            let expected = "one at \(Expectations.formatNumber(tMs)) ms ± \(Expectations.formatNumber(toleranceMs)) ms"
            let nearest = trace.lazy.filter { selector.matches($0) }
                .min { abs(Double($0.timeNs) - target) < abs(Double($1.timeNs) - target) }
            guard let nearest else { return result(false, expected: expected, measured: "none matched") }
            let offMs = (Double(nearest.timeNs) - target) / 1e6
            return result(abs(offMs) <= toleranceMs, expected: expected,
                          measured: "nearest at \(Expectations.formatTime(nearest.timeNs)) (\(signed(offMs)) ms)")

        case .range(let selector, let field, let min, let max):
            let expected = "\(field) in [\(min.map(Expectations.formatNumber) ?? "-∞"), \(max.map(Expectations.formatNumber) ?? "+∞")]"
            var count = 0
            var low = Double.infinity, high = -Double.infinity
            var firstOutside: (TraceEvent, String)?
            for event in trace where selector.matches(event) {
                count += 1
                guard let number = event.fields[field]?.numericValue else {
                    if firstOutside == nil {
                        firstOutside = (event, event.fields[field].map { "non-numeric \($0.compactText)" } ?? "missing")
                    }
                    continue
                }
                low = Swift.min(low, number)
                high = Swift.max(high, number)
                let inside = (min.map { number >= $0 } ?? true) && (max.map { number <= $0 } ?? true)
                if !inside && firstOutside == nil { firstOutside = (event, Expectations.formatNumber(number)) }
            }
            guard count > 0 else { return result(false, expected: expected, measured: "no matching events") }
            var measured = low <= high ? "[\(Expectations.formatNumber(low)), \(Expectations.formatNumber(high))] over \(count) events"
                : "no numeric values over \(count) events"
            if let (event, value) = firstOutside {
                measured += "; first outside: \(value) at \(Expectations.formatTime(event.timeNs))"
            }
            return result(firstOutside == nil, expected: expected, measured: measured)

        case .equals(let selector, let field, let value, let which):
            let expected = "\(which.rawValue) \(field) = \(value.description)"
            let matches = trace.filter { selector.matches($0) }
            guard !matches.isEmpty else { return result(false, expected: expected, measured: "no matching events") }
            let checked: [TraceEvent]
            switch which {
            case .first: checked = Array(matches.prefix(1))
            case .last: checked = Array(matches.suffix(1))
            case .every: checked = matches
            }
            let failures = checked.filter { !value.matches($0.fields[field]) }
            if let firstFailure = failures.first {
                let got = firstFailure.fields[field]?.compactText ?? "missing"
                let prefix = which == .every ? "\(failures.count) of \(checked.count) differ; first " : ""
                return result(false, expected: expected,
                              measured: "\(prefix)\(got) at \(Expectations.formatTime(firstFailure.timeNs))")
            }
            let suffix = which == .every ? " (all \(checked.count))" : ""
            return result(true, expected: expected, measured: value.description + suffix)

        case .monotonic(let selector, let field, let per, let endsAt, let endsAtField):
            return evaluateMonotonic(selector, field: field, per: per, endsAt: endsAt, endsAtField: endsAtField, trace, result)

        case .oncePer(let selector, let key, let of):
            var expectedKeys: [String] = []
            var seenExpected: Set<String> = []
            for event in trace where of.matches(event) {
                let k = event.fields[key]?.compactText ?? "missing"
                if seenExpected.insert(k).inserted { expectedKeys.append(k) }
            }
            var counts: [String: Int] = [:]
            for event in trace where selector.matches(event) {
                counts[event.fields[key]?.compactText ?? "missing", default: 0] += 1
            }
            let expected = "exactly one \(selector.summary) per \(key) of \(of.summary)"
            guard !expectedKeys.isEmpty else { return result(false, expected: expected, measured: "no \(of.summary) events") }
            var problems: [String] = []
            for k in expectedKeys where counts[k, default: 0] != 1 { problems.append("\(key) \(k): \(counts[k, default: 0])") }
            for k in counts.keys.sorted() where !seenExpected.contains(k) { problems.append("\(key) \(k): \(counts[k]!) without a matching \(of.event)") }
            if problems.isEmpty { return result(true, expected: expected, measured: "one each for \(expectedKeys.count) \(key) value(s)") }
            return result(false, expected: expected, measured: problems.prefix(5).joined(separator: "; ") + (problems.count > 5 ? "; …" : ""))

        case .latency(let from, let to, let key, let minMs, let maxMs):
            let expected = "\(to.summary) \(minMs.map { "≥ \(Expectations.formatNumber($0)) ms" } ?? "")\(minMs != nil && maxMs != nil ? " and " : "")\(maxMs.map { "≤ \(Expectations.formatNumber($0)) ms" } ?? "") after each \(from.summary) with the same \(key)"
            var measuredMs: [Double] = []
            for (index, event) in trace.enumerated() where from.matches(event) {
                let k = event.fields[key]
                guard let answer = trace[(index + 1)...].first(where: { to.matches($0) && $0.fields[key] == k }) else {
                    return result(false, expected: expected, measured: "no \(to.event) for \(key) \(k?.compactText ?? "missing") (from at \(Expectations.formatTime(event.timeNs)))")
                }
                let ms = Double(answer.timeNs - event.timeNs) / 1e6
                if let minMs, ms < minMs { return result(false, expected: expected, measured: "\(Expectations.formatNumber(ms)) ms for \(key) \(k?.compactText ?? "missing")") }
                if let maxMs, ms > maxMs { return result(false, expected: expected, measured: "\(Expectations.formatNumber(ms)) ms for \(key) \(k?.compactText ?? "missing")") }
                measuredMs.append(ms)
            }
            guard let low = measuredMs.min(), let high = measuredMs.max() else { return result(false, expected: expected, measured: "no \(from.summary) events") }
            return result(true, expected: expected, measured: "\(measuredMs.count) pair(s), \(Expectations.formatNumber(low))–\(Expectations.formatNumber(high)) ms")
        }
    }

    static func evaluateMonotonic(
        _ selector: Expectation.Selector, field: String, per: String?, endsAt: Double?, endsAtField: String?, _ trace: [TraceEvent],
        _ result: (Bool, String, String) -> ExpectationResult
    ) -> ExpectationResult {
        let expected = "\(field) never decreasing\(per.map { " per \($0)" } ?? "")"
            + (endsAt.map { ", ending at \(Expectations.formatNumber($0))" } ?? "") + (endsAtField.map { ", ending at its \($0)" } ?? "")
        var last: [String: (value: Double, event: TraceEvent)] = [:]
        var order: [String] = []
        for event in trace where selector.matches(event) {
            let group = per.map { event.fields[$0]?.compactText ?? "missing" } ?? ""
            guard let value = event.fields[field]?.numericValue else {
                return result(false, expected, "\(field) missing or not a number at \(Expectations.formatTime(event.timeNs))")
            }
            if let previous = last[group], value < previous.value {
                return result(false, expected, "\(field) fell from \(Expectations.formatNumber(previous.value)) to \(Expectations.formatNumber(value)) at \(Expectations.formatTime(event.timeNs))\(per.map { " (\($0) \(group))" } ?? "")")
            }
            if last[group] == nil { order.append(group) }
            last[group] = (value, event)
        }
        guard !order.isEmpty else { return result(false, expected, "no matching events") }
        for group in order {
            let (value, event) = last[group]!
            let target = endsAt ?? endsAtField.flatMap { event.fields[$0]?.numericValue }
            if endsAtField != nil && target == nil {
                return result(false, expected, "the last event\(per.map { " of \($0) \(group)" } ?? "") has no numeric \(endsAtField!)")
            }
            if let target, value != target {
                return result(false, expected, "ended at \(Expectations.formatNumber(value)), not \(Expectations.formatNumber(target))\(per.map { " (\($0) \(group))" } ?? "")")
            }
        }
        return result(true, expected, "non-decreasing in \(order.count) group(s)" + (endsAt != nil || endsAtField != nil ? ", each ending as expected" : ""))
    }

    static func evaluateMaxGap(
        _ expectation: Expectation, _ selector: Expectation.Selector, _ maxMs: Double,
        _ startSelector: Expectation.Selector?, _ endSelector: Expectation.Selector?, _ trace: [TraceEvent],
        _ result: (Bool, String, String) -> ExpectationResult
    ) -> ExpectationResult {
        var expected = "gaps ≤ \(Expectations.formatNumber(maxMs)) ms"
        var lower = trace.startIndex
        var upper = trace.endIndex
        var windowStart: Int64?
        var windowEnd: Int64?
        if let startSelector {
            expected += " from \(startSelector.summary)"
            guard let hit = trace.firstIndex(where: { startSelector.matches($0) }) else {
                return result(false, expected, "no \(startSelector.summary) to start the window")
            }
            windowStart = trace[hit].timeNs
            lower = hit + 1
        }
        if let endSelector {
            expected += " until \(endSelector.summary)"
            guard let hit = trace[lower...].firstIndex(where: { endSelector.matches($0) }) else {
                return result(false, expected, "no \(endSelector.summary) to end the window")
            }
            windowEnd = trace[hit].timeNs
            upper = hit
        }
        var times: [Int64] = []
        if let windowStart { times.append(windowStart) }
        for event in trace[lower..<upper] where selector.matches(event) { times.append(event.timeNs) }
        if let windowEnd { times.append(windowEnd) }
        guard times.count >= 2 else {
            return result(false, expected, "fewer than two matching events; no gap to measure")
        }
        var largest: Int64 = 0
        var largestAt: Int64 = times[0]
        for (previous, next) in zip(times, times.dropFirst()) where next &- previous > largest {
            largest = next &- previous
            largestAt = previous
        }
        let largestMs = Double(largest) / 1e6
        return result(largestMs <= maxMs, expected,
                      "max gap \(Expectations.formatNumber(largestMs)) ms after \(Expectations.formatTime(largestAt))")
    }

    private static func signed(_ value: Double) -> String {
        (value >= 0 ? "+" : "") + Expectations.formatNumber(value)
    }
}
