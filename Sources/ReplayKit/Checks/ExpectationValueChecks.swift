import BehaviourTrace
#if canImport(CaptureSet)
import CaptureSet
#endif

// The expectation kinds that read a field's values as the trace streams by (range, equals,
// monotonic, once_per, latency); the kinds that count and time events are in
// ExpectationChecks.swift.
//
// The checks' stored `var`s are `@exclusivity(unchecked)`, as ``ExpectationCheck`` says: each check
// belongs to one evaluator, which shows it one event at a time, and no check calls back into itself
// while changing a field, so no two accesses overlap; the runtime checks cost a tenth of the checking.

final class RangeCheck: ExpectationCheck {
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
final class EqualsCheck: ExpectationCheck {
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
final class MonotonicCheck: ExpectationCheck {
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
final class OncePerCheck: ExpectationCheck {
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
final class LatencyCheck: ExpectationCheck {
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
