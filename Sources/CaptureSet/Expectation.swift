// The expectations a capture set's manifest asks replay to check (docs/expectations.md).
//
// Modelled on OpenHTF's measurement validators: a small closed vocabulary, each entry a named
// check on the behaviour trace. This file depends on nothing but the standard library so it
// compiles inside CaptureSet (which decodes the manifest) and is evaluated by Replay, for every
// core alike.

/// Another name for `Expectation`, for files that also import Swift Testing (whose own
/// `Expectation` type makes the bare name ambiguous there).
public typealias TraceExpectation = Expectation

/// One check that replay runs against a behaviour trace.
///
/// In YAML (snake_case keys), every expectation has a `type`, an optional `name`, and (except
/// `order`) a selector given inline as `core` (optional), `event` and `where`:
/// ```yaml
/// - type: count
///   name: every yaw sample arrives
///   core: ingest
///   event: datapoint
///   where: {name: v1/1/yaw}
///   equals: 1200
/// ```
public struct Expectation: Sendable, Hashable, Codable {
    /// A human name shown in reports; when absent the report uses `summary`.
    public var name: String?
    /// What is checked.
    public var kind: Kind

    /// Creates an expectation.
    public init(name: String? = nil, _ kind: Kind) {
        self.name = name
        self.kind = kind
    }

    /// The checks of the vocabulary.
    public enum Kind: Sendable, Hashable {
        /// The number of matching events is within `bounds`.
        case count(Selector, CountBounds)
        /// Events matching each selector occur in this order (as a subsequence; others may lie
        /// between them). At least two selectors.
        case order([Selector])
        /// The largest time between consecutive matching events is at most `maxMs`. With `start`
        /// and/or `end`, the window runs from the first event matching `start` to the first event
        /// matching `end` after it, and the gaps from the window's edges to the first and last
        /// matching events count too.
        case maxGap(Selector, maxMs: Double, start: Selector?, end: Selector?)
        /// Matching events per second, `(count - 1) / (last - first)`, is within `hz` ±
        /// `tolerancePercent` percent.
        case rate(Selector, hz: Double, tolerancePercent: Double)
        /// Some matching event occurs at `tMs` ± `toleranceMs` (virtual time since capture start).
        case at(Selector, tMs: Double, toleranceMs: Double)
        /// The numeric `field` of every matching event lies in `[min, max]` (either bound may be
        /// absent, not both); fails when nothing matches.
        case range(Selector, field: String, min: Double?, max: Double?)
        /// `field` of the first, last or every matching event equals `value`; fails when nothing
        /// matches.
        case equals(Selector, field: String, value: Value, which: Which)
        /// No event matches (shorthand for a count that equals 0).
        case absent(Selector)
        /// The numeric `field` of matching events never decreases, separately for each value of
        /// `per` (every event together when nil), and each group's last value equals `endsAt`, or
        /// that last event's own `endsAtField` (progress `sent` ending at its `total`). Fails when
        /// nothing matches.
        case monotonic(Selector, field: String, per: String?, endsAt: Double?, endsAtField: String?)
        /// For every distinct value of `key` among the events matching `of` (the sends called),
        /// exactly one event matches the selector with that value (one completion each), and none
        /// matches with a value `of` never had.
        case oncePer(Selector, key: String, of: Selector)
        /// For every event matching `from`, the first later event matching `to` with the same
        /// `key` value comes within `[minMs, maxMs]` of it (either bound may be absent, not both).
        /// Fails when a `from` event has no such `to` event, or nothing matches `from`.
        case latency(from: Selector, to: Selector, key: String, minMs: Double?, maxMs: Double?)
    }

    /// Every selector of the expectation, in the order written.
    public var selectors: [Selector] {
        switch kind {
        case .count(let s, _), .rate(let s, _, _), .at(let s, _, _), .range(let s, _, _, _), .equals(let s, _, _, _), .absent(let s),
             .monotonic(let s, _, _, _, _):
            return [s]
        case .order(let sequence): return sequence
        case .maxGap(let s, _, let start, let end): return [s] + [start, end].compactMap { $0 }
        case .oncePer(let s, _, let of): return [s, of]
        case .latency(let from, let to, _, _, _): return [from, to]
        }
    }

    /// Which events an expectation looks at: `event` of `core` (any core when nil) whose fields
    /// equal every entry of `where`.
    public struct Selector: Sendable, Hashable, Codable {
        /// `ingest`, `messaging` or `session`; nil matches any core.
        public var core: String?
        /// The event name, e.g. `datapoint`.
        public var event: String
        /// Field equalities that must all hold. A number matches an int or double field of the same
        /// numeric value; otherwise values are compared by their text.
        public var `where`: [String: Value]

        /// Creates a selector.
        public init(core: String? = nil, event: String, where conditions: [String: Value] = [:]) {
            self.core = core
            self.event = event
            self.where = conditions
        }

        enum CodingKeys: String, CodingKey {
            case core, event
            case `where` = "where"
        }

        /// Decodes `{core?, event, where?}`.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            try Expectation.rejectUnknownKeys(in: decoder, allowed: ["core", "event", "where"], what: "a selector")
            core = try container.decodeIfPresent(String.self, forKey: .core)
            event = try container.decode(String.self, forKey: .event)
            self.where = try container.decodeIfPresent([String: Value].self, forKey: .where) ?? [:]
        }

        /// Encodes `{core?, event, where?}`, leaving out what is empty.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(core, forKey: .core)
            try container.encode(event, forKey: .event)
            if !self.where.isEmpty {
                var conditions = container.nestedContainer(keyedBy: Expectation.Key.self, forKey: .where)
                try Expectation.encodeSorted(self.where, into: &conditions)
            }
        }

        /// `ingest:datapoint where name=v1/1/yaw, source=imu`: used in report messages.
        public var summary: String { eventSummary + conditionsSummary }

        /// `ingest:datapoint`, or `datapoint` when any core matches.
        var eventSummary: String { core.map { "\($0):\(event)" } ?? event }

        /// ` where name=v1/1/yaw, source=imu`, or empty without conditions.
        var conditionsSummary: String {
            guard !self.where.isEmpty else { return "" }
            return " where " + self.where.keys.sorted()
                .map { "\($0)=\(self.where[$0]?.description ?? "")" }
                .joined(separator: ", ")
        }
    }

    /// Bounds on a count: any combination of `equals`, `min`, `max`, at least one.
    public struct CountBounds: Sendable, Hashable {
        /// The exact count required.
        public var equals: Int?
        /// The smallest count allowed.
        public var min: Int?
        /// The largest count allowed.
        public var max: Int?

        /// Creates bounds.
        public init(equals: Int? = nil, min: Int? = nil, max: Int? = nil) {
            self.equals = equals
            self.min = min
            self.max = max
        }

        /// Whether `count` satisfies every bound given.
        public func contains(_ count: Int) -> Bool {
            if let equals, count != equals { return false }
            if let min, count < min { return false }
            if let max, count > max { return false }
            return true
        }

        /// `1200`, `at least 10`, `between 10 and 20`, ...
        public var summary: String {
            var parts: [String] = []
            if let equals { parts.append("\(equals)") }
            if let min, let max { parts.append("between \(min) and \(max)") } else {
                if let min { parts.append("at least \(min)") }
                if let max { parts.append("at most \(max)") }
            }
            return parts.joined(separator: " and ")
        }
    }

    /// Which matching event an `equals` expectation looks at.
    public enum Which: String, Sendable, Hashable, Codable, CaseIterable {
        /// The first matching event.
        case first
        /// The last matching event.
        case last
        /// Every matching event.
        case every
    }

    /// A scalar from the manifest: what a `where` condition or an `equals` expectation compares.
    public enum Value: Sendable, Hashable, Codable, CustomStringConvertible {
        /// Text.
        case string(String)
        /// An integer.
        case int(Int64)
        /// A number with a fraction.
        case double(Double)
        /// `true` or `false`.
        case bool(Bool)
        /// YAML `null` / `~`.
        case null

        /// Decodes a YAML scalar, trying bool, integer, number, then text, so `12` is an integer
        /// and `v1/1/yaw` is text.
        public init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let bool = try? container.decode(Bool.self) {
                self = .bool(bool)
            } else if let int = try? container.decode(Int64.self) {
                self = .int(int)
            } else if let double = try? container.decode(Double.self) {
                self = .double(double)
            } else if let string = try? container.decode(String.self) {
                self = .string(string)
            } else {
                throw DecodingError.dataCorruptedError(
                    in: container,
                    debugDescription: "expected a scalar (text, number, true/false or null), not a list or mapping"
                )
            }
        }

        /// Encodes the scalar as itself.
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .string(let s): try container.encode(s)
            case .int(let i): try container.encode(i)
            case .double(let d):
                if let whole = Expectation.wholeNumber(d) { try container.encode(whole) } else { try container.encode(d) }
            case .bool(let b): try container.encode(b)
            case .null: try container.encodeNil()
            }
        }

        /// The value as written in a report.
        public var description: String {
            switch self {
            case .string(let s): return s
            case .int(let i): return String(i)
            case .double(let d): return d.description
            case .bool(let b): return b ? "true" : "false"
            case .null: return "null"
            }
        }
    }

    /// The `type` names of the vocabulary, in documentation order.
    public static let knownTypes = ["count", "order", "max_gap", "rate", "at", "range", "equals", "absent", "monotonic", "once_per", "latency"]

    /// The YAML `type` of this expectation.
    public var typeName: String {
        switch kind {
        case .count: return "count"
        case .order: return "order"
        case .maxGap: return "max_gap"
        case .rate: return "rate"
        case .at: return "at"
        case .range: return "range"
        case .equals: return "equals"
        case .absent: return "absent"
        case .monotonic: return "monotonic"
        case .oncePer: return "once_per"
        case .latency: return "latency"
        }
    }

    /// A one-line description used when the expectation has no name, e.g.
    /// `count(datapoint where name=v1/1/yaw)`, `range(datapoint.value where name=v1/1/yaw)`.
    public var summary: String {
        switch kind {
        case .count(let s, _), .maxGap(let s, _, _, _), .rate(let s, _, _), .at(let s, _, _),
             .absent(let s):
            return "\(typeName)(\(s.summary))"
        case .range(let s, let field, _, _), .equals(let s, let field, _, _):
            return "\(typeName)(\(s.eventSummary).\(field)\(s.conditionsSummary))"
        case .order(let selectors):
            return "order(\(selectors.map(\.summary).joined(separator: " → ")))"
        case .monotonic(let s, let field, let per, _, _):
            return "monotonic(\(s.eventSummary).\(field)\(per.map { " per \($0)" } ?? "")\(s.conditionsSummary))"
        case .oncePer(let s, let key, let of):
            return "once_per(\(s.summary) per \(key) of \(of.summary))"
        case .latency(let from, let to, let key, _, _):
            return "latency(\(from.summary) → \(to.summary) by \(key))"
        }
    }

    /// The name if given, otherwise `summary`.
    public var displayName: String { name ?? summary }

    // MARK: Codable

    /// Writes `where` conditions in key order: a Dictionary's own order changes from run to run,
    /// and a manifest must come out the same for the same content.
    static func encodeSorted(_ conditions: [String: Value], into container: inout KeyedEncodingContainer<Key>) throws {
        for (key, value) in conditions.sorted(by: { $0.key < $1.key }) {
            try container.encode(value, forKey: Key(key))
        }
    }

    /// `d` as an integer when it is one exactly: YAML encoders write every Double in exponent form
    /// (`1.8e+2`), which would turn a hand-written `max: 180` into noise on the next rewrite.
    static func wholeNumber(_ d: Double) -> Int64? {
        guard d.isFinite, d.rounded() == d, abs(d) < 9_007_199_254_740_992 else { return nil }
        return Int64(d)
    }

    static func encodeNumber(_ d: Double, forKey key: Key, in container: inout KeyedEncodingContainer<Key>) throws {
        if let whole = wholeNumber(d) { try container.encode(whole, forKey: key) } else { try container.encode(d, forKey: key) }
    }

    struct Key: CodingKey, Hashable {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ string: String) { stringValue = string }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let selectorKeys: Set<String> = ["core", "event", "where"]

    private static func allowedKeys(for type: String) -> Set<String> {
        let common: Set<String> = ["type", "name"]
        switch type {
        case "count": return common.union(selectorKeys).union(["equals", "min", "max"])
        case "order": return common.union(["sequence"])
        case "max_gap": return common.union(selectorKeys).union(["max_ms", "start", "end"])
        case "rate": return common.union(selectorKeys).union(["hz", "tolerance_percent"])
        case "at": return common.union(selectorKeys).union(["t_ms", "tolerance_ms"])
        case "range": return common.union(selectorKeys).union(["field", "min", "max"])
        case "equals": return common.union(selectorKeys).union(["field", "value", "which"])
        case "absent": return common.union(selectorKeys)
        case "monotonic": return common.union(selectorKeys).union(["field", "per", "ends_at", "ends_at_field"])
        case "once_per": return common.union(selectorKeys).union(["key", "of"])
        case "latency": return common.union(["from", "to", "key", "min_ms", "max_ms"])
        default: return common
        }
    }

    /// `expectation 3` when decoding inside a list, so errors point at the entry to fix.
    static func position(of decoder: any Decoder) -> String {
        if let index = decoder.codingPath.last(where: { $0.intValue != nil })?.intValue {
            return "expectation \(index)"
        }
        return "expectation"
    }

    /// A typo such as `max_msec` would otherwise be ignored silently and the check would not run.
    static func rejectUnknownKeys(in decoder: any Decoder, allowed: Set<String>, what: String) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let unknown = container.allKeys.map(\.stringValue).filter { !allowed.contains($0) }.sorted()
        if let first = unknown.first {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath + [Key(first)],
                debugDescription: "\(position(of: decoder)): unknown key '\(first)' in \(what); "
                    + "allowed keys: \(allowed.sorted().joined(separator: ", "))"
            ))
        }
    }

    /// Decodes one entry of the manifest's `expectations` list.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let here = Self.position(of: decoder)
        let type = try container.decode(String.self, forKey: Key("type"))
        guard Self.knownTypes.contains(type) else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath + [Key("type")],
                debugDescription: "\(here): unknown type '\(type)'; known types: "
                    + Self.knownTypes.joined(separator: ", ")
            ))
        }
        try Self.rejectUnknownKeys(in: decoder, allowed: Self.allowedKeys(for: type), what: "a '\(type)' expectation")
        name = try container.decodeIfPresent(String.self, forKey: Key("name"))

        func invalid(_ message: String) -> DecodingError {
            DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: decoder.codingPath, debugDescription: "\(here) (\(type)): \(message)"
            ))
        }
        func selector() throws -> Selector {
            Selector(
                core: try container.decodeIfPresent(String.self, forKey: Key("core")),
                event: try container.decode(String.self, forKey: Key("event")),
                where: try container.decodeIfPresent([String: Value].self, forKey: Key("where")) ?? [:]
            )
        }
        // Numbers are finite and counts not negative: `.nan` or `min: -5` would otherwise give a
        // verdict that never names the field.
        func double(_ key: String) throws -> Double? {
            guard let value = try container.decodeIfPresent(Double.self, forKey: Key(key)) else { return nil }
            guard value.isFinite else { throw invalid("\(key) must be a finite number, found \(value)") }
            return value
        }
        func nonNegative(_ key: String) throws -> Double? {
            guard let value = try double(key) else { return nil }
            guard value >= 0 else { throw invalid("\(key) must be 0 or more, found \(value)") }
            return value
        }
        func int(_ key: String) throws -> Int? {
            guard let value = try container.decodeIfPresent(Int.self, forKey: Key(key)) else { return nil }
            guard value >= 0 else { throw invalid("\(key) is a count of events and must be 0 or more, found \(value)") }
            return value
        }

        switch type {
        case "count":
            let bounds = CountBounds(equals: try int("equals"), min: try int("min"), max: try int("max"))
            guard bounds.equals != nil || bounds.min != nil || bounds.max != nil else {
                throw invalid("give at least one of equals, min, max")
            }
            if let min = bounds.min, let max = bounds.max, min > max { throw invalid("min (\(min)) is more than max (\(max)): no count passes") }
            kind = .count(try selector(), bounds)
        case "order":
            let sequence = try container.decode([Selector].self, forKey: Key("sequence"))
            guard sequence.count >= 2 else { throw invalid("sequence needs at least two selectors") }
            kind = .order(sequence)
        case "max_gap":
            guard let maxMs = try nonNegative("max_ms") else { throw invalid("max_ms is required") }
            kind = .maxGap(
                try selector(), maxMs: maxMs,
                start: try container.decodeIfPresent(Selector.self, forKey: Key("start")),
                end: try container.decodeIfPresent(Selector.self, forKey: Key("end"))
            )
        case "rate":
            guard let hz = try double("hz"), hz > 0 else { throw invalid("hz is required and must be > 0") }
            let tolerance = try nonNegative("tolerance_percent") ?? 5
            kind = .rate(try selector(), hz: hz, tolerancePercent: tolerance)
        case "at":
            guard let tMs = try nonNegative("t_ms") else { throw invalid("t_ms is required") }
            kind = .at(try selector(), tMs: tMs, toleranceMs: try nonNegative("tolerance_ms") ?? 0)
        case "range":
            guard let field = try container.decodeIfPresent(String.self, forKey: Key("field")) else {
                throw invalid("field is required")
            }
            let min = try double("min"), max = try double("max")
            guard min != nil || max != nil else { throw invalid("give min, max or both") }
            if let min, let max, min > max { throw invalid("min (\(min)) is more than max (\(max)): no value passes") }
            kind = .range(try selector(), field: field, min: min, max: max)
        case "equals":
            guard let field = try container.decodeIfPresent(String.self, forKey: Key("field")) else {
                throw invalid("field is required")
            }
            guard container.contains(Key("value")) else { throw invalid("value is required") }
            let value = try container.decode(Value.self, forKey: Key("value"))
            let whichText = try container.decodeIfPresent(String.self, forKey: Key("which")) ?? "every"
            guard let which = Which(rawValue: whichText) else {
                throw invalid("which must be one of first, last, every (got '\(whichText)')")
            }
            kind = .equals(try selector(), field: field, value: value, which: which)
        case "monotonic":
            guard let field = try container.decodeIfPresent(String.self, forKey: Key("field")) else {
                throw invalid("field is required")
            }
            let endsAt = try double("ends_at")
            let endsAtField = try container.decodeIfPresent(String.self, forKey: Key("ends_at_field"))
            guard endsAt == nil || endsAtField == nil else { throw invalid("give ends_at or ends_at_field, not both") }
            kind = .monotonic(try selector(), field: field, per: try container.decodeIfPresent(String.self, forKey: Key("per")),
                              endsAt: endsAt, endsAtField: endsAtField)
        case "once_per":
            guard let key = try container.decodeIfPresent(String.self, forKey: Key("key")) else { throw invalid("key is required") }
            guard let of = try container.decodeIfPresent(Selector.self, forKey: Key("of")) else {
                throw invalid("of is required: the events whose `key` values must each be matched once, e.g. {event: api_call, where: {call: send}}")
            }
            kind = .oncePer(try selector(), key: key, of: of)
        case "latency":
            guard let from = try container.decodeIfPresent(Selector.self, forKey: Key("from")),
                  let to = try container.decodeIfPresent(Selector.self, forKey: Key("to")) else {
                throw invalid("from and to are required selectors")
            }
            guard let key = try container.decodeIfPresent(String.self, forKey: Key("key")) else { throw invalid("key is required") }
            let minMs = try double("min_ms"), maxMs = try double("max_ms")
            guard minMs != nil || maxMs != nil else { throw invalid("give min_ms, max_ms or both") }
            kind = .latency(from: from, to: to, key: key, minMs: minMs, maxMs: maxMs)
        default:  // "absent": the type was checked against knownTypes above.
            kind = .absent(try selector())
        }
    }

    /// Encodes back to the manifest form that `init(from:)` reads.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(typeName, forKey: Key("type"))
        try container.encodeIfPresent(name, forKey: Key("name"))
        func put(_ selector: Selector) throws {
            try container.encodeIfPresent(selector.core, forKey: Key("core"))
            try container.encode(selector.event, forKey: Key("event"))
            if !selector.where.isEmpty {
                var conditions = container.nestedContainer(keyedBy: Key.self, forKey: Key("where"))
                try Expectation.encodeSorted(selector.where, into: &conditions)
            }
        }
        switch kind {
        case .count(let s, let bounds):
            try put(s)
            try container.encodeIfPresent(bounds.equals, forKey: Key("equals"))
            try container.encodeIfPresent(bounds.min, forKey: Key("min"))
            try container.encodeIfPresent(bounds.max, forKey: Key("max"))
        case .order(let sequence):
            try container.encode(sequence, forKey: Key("sequence"))
        case .maxGap(let s, let maxMs, let start, let end):
            try put(s)
            try Expectation.encodeNumber(maxMs, forKey: Key("max_ms"), in: &container)
            try container.encodeIfPresent(start, forKey: Key("start"))
            try container.encodeIfPresent(end, forKey: Key("end"))
        case .rate(let s, let hz, let tolerance):
            try put(s)
            try Expectation.encodeNumber(hz, forKey: Key("hz"), in: &container)
            try Expectation.encodeNumber(tolerance, forKey: Key("tolerance_percent"), in: &container)
        case .at(let s, let tMs, let toleranceMs):
            try put(s)
            try Expectation.encodeNumber(tMs, forKey: Key("t_ms"), in: &container)
            try Expectation.encodeNumber(toleranceMs, forKey: Key("tolerance_ms"), in: &container)
        case .range(let s, let field, let min, let max):
            try put(s)
            try container.encode(field, forKey: Key("field"))
            if let min { try Expectation.encodeNumber(min, forKey: Key("min"), in: &container) }
            if let max { try Expectation.encodeNumber(max, forKey: Key("max"), in: &container) }
        case .equals(let s, let field, let value, let which):
            try put(s)
            try container.encode(field, forKey: Key("field"))
            try container.encode(value, forKey: Key("value"))
            try container.encode(which.rawValue, forKey: Key("which"))
        case .absent(let s):
            try put(s)
        case .monotonic(let s, let field, let per, let endsAt, let endsAtField):
            try put(s)
            try container.encode(field, forKey: Key("field"))
            try container.encodeIfPresent(per, forKey: Key("per"))
            if let endsAt { try Expectation.encodeNumber(endsAt, forKey: Key("ends_at"), in: &container) }
            try container.encodeIfPresent(endsAtField, forKey: Key("ends_at_field"))
        case .oncePer(let s, let key, let of):
            try put(s)
            try container.encode(key, forKey: Key("key"))
            try container.encode(of, forKey: Key("of"))
        case .latency(let from, let to, let key, let minMs, let maxMs):
            try container.encode(from, forKey: Key("from"))
            try container.encode(to, forKey: Key("to"))
            try container.encode(key, forKey: Key("key"))
            if let minMs { try Expectation.encodeNumber(minMs, forKey: Key("min_ms"), in: &container) }
            if let maxMs { try Expectation.encodeNumber(maxMs, forKey: Key("max_ms"), in: &container) }
        }
    }
}
