/// Two kinds of trace event a core says belong together: a request and what answered it (a send
/// and its completion, a message and its reply, a refresh and its result), joined by one field.
///
/// Each integration declares its own (`CoreIntegration.correlations`), so the timeline report,
/// the Perfetto export and anything else that draws "call → completion" learn them from the core,
/// not from a list kept beside the renderer; a user's own core gets its slices by declaring them.
public struct TraceCorrelation: Sendable, Hashable {
    /// Which events a side of the pair is: an event name, optionally with one field equal to a
    /// text (`api_call` with `call` = `send`).
    public struct EventPattern: Sendable, Hashable, CustomStringConvertible {
        /// The event name.
        public var event: TraceName
        /// A field that must hold ``value``, `nil` for any event of that name.
        public var field: String?
        /// The text the field must hold (a string's text, or a number or boolean written as JSON).
        public var value: String?

        /// Events named `event`, and with `field` equal to `value` when both are given.
        public init(_ event: TraceName, where field: String? = nil, is value: String? = nil) {
            self.event = event
            self.field = field
            self.value = value
        }

        /// Whether `event` is one of these events.
        public func matches(_ event: TraceEvent) -> Bool {
            guard event.event == self.event else { return false }
            guard let field, let value else { return true }
            return event.field(field).map { TraceCorrelation.keyText($0) == value } ?? false
        }

        /// `api_call[call=send]`, or the bare event name.
        public var description: String {
            guard let field, let value else { return event.text }
            return "\(event)[\(field)=\(value)]"
        }
    }

    /// Fields of an event that reports how far a correlated request has got (`progress` with
    /// `sent` of `total`).
    public struct ProgressFields: Sendable, Hashable {
        /// The event that carries the progress.
        public var event: TraceName
        /// The field with the amount done so far.
        public var done: String
        /// The field with the whole amount.
        public var total: String

        /// Progress carried by `event` as `done` of `total`.
        public init(event: TraceName, done: String, total: String) {
            self.event = event
            self.done = done
            self.total = total
        }
    }

    /// A short name for the pair, shown on tracks and plots: `send → completion`.
    public var name: String
    /// The events that open a pair (several when kinds of request share one key counter, as a
    /// user info and a complication transfer do).
    public var starts: [EventPattern]
    /// The events that close it; the first one with the same key closes it.
    public var ends: [EventPattern]
    /// The field whose value joins a start to its end (and to its progress events): `send`,
    /// `id`, `refresh`. The start's field and the end's field have this same name.
    public var key: String
    /// The end event's field to name the end key by when it differs from ``key`` (`nil`: the same).
    public var endKey: String?
    /// Progress events of an open pair, joined by the same key; `nil` when the core reports none.
    public var progress: ProgressFields?

    /// A correlation named `name`: any of `starts` opens a pair, the first of `ends` with the
    /// same `key` closes it, and `progress` events with that key report how far it got.
    public init(_ name: String, starts: [EventPattern], ends: [EventPattern], key: String, endKey: String? = nil,
                progress: ProgressFields? = nil) {
        self.name = name
        self.starts = starts
        self.ends = ends
        self.key = key
        self.endKey = endKey
        self.progress = progress
    }

    /// A correlation named `name` whose pairs `start` opens.
    public init(_ name: String, start: EventPattern, ends: [EventPattern], key: String, endKey: String? = nil,
                progress: ProgressFields? = nil) {
        self.init(name, starts: [start], ends: ends, key: key, endKey: endKey, progress: progress)
    }

    /// The text a key value is compared by: a string as it is, anything else as JSON writes it.
    public static func keyText(_ value: TraceValue) -> String {
        value.compactText
    }

    /// The ``keyText(_:)`` of `count` values, `value(i)` giving the i-th (`nil` for one that is
    /// missing, written `-`), joined by `|`: what identifies an event by several fields. Written
    /// into one buffer: a fault sweep keys every data point of every variant by it, and building
    /// each part as a string of its own and joining them cost a third of a sweep's time.
    public static func joinedKeyText(count: Int, _ value: (Int) -> TraceValue?) -> String {
        var out = TraceJSONBytes()
        out.bytes.reserveCapacity(16 * count)
        for i in 0..<count {
            if i > 0 { out.bytes.append(UInt8(ascii: "|")) }
            switch value(i) {
            case nil: out.bytes.append(UInt8(ascii: "-"))
            case .string(let s)?: out.write(s)
            case let other?: out.appendValue(other)
            }
        }
        return String(decoding: out.bytes, as: UTF8.self)
    }
}

/// One request and what answered it, found in a trace by a ``TraceCorrelation``.
public struct CorrelatedPair: Sendable, Hashable {
    /// The correlation's ``TraceCorrelation/name``.
    public var name: String
    /// The core whose events these are.
    public var core: TraceName
    /// The key that joined them, as text.
    public var key: String
    /// When the request was made, in virtual nanoseconds.
    public var startNs: Int64
    /// The start event's position in the trace (0-based, in trace order).
    public var startIndex: Int
    /// When it was answered; `nil` when the trace ended first.
    public var endNs: Int64?
    /// The end event's position in the trace.
    public var endIndex: Int?
    /// The end event's name (`completion`, `message_failed`), `nil` while unanswered.
    public var endEvent: TraceName?

    /// How long the answer took, `nil` while unanswered; saturated at the ends of `Int64` when the
    /// two instants are further apart than it holds (``latency`` has it exactly).
    public var latencyNs: Int64? { latency?.saturatingNanoseconds }

    /// How long the answer took, exactly (it can need 65 bits); `nil` while unanswered.
    public var latency: TraceTimeDifference? { endNs.map { TraceTimeDifference(from: startNs, to: $0) } }
}

/// One progress report of an open pair: `done` of `total` at `timeNs`.
public struct CorrelatedProgress: Sendable, Hashable {
    /// The correlation's name.
    public var name: String
    /// The core whose event it is.
    public var core: TraceName
    /// The key of the pair it belongs to.
    public var key: String
    /// When it was reported.
    public var timeNs: Int64
    /// The event's position in the trace.
    public var index: Int
    /// The amount done.
    public var done: Double
    /// The whole amount.
    public var total: Double
}

/// Finds the pairs of a trace as it streams by: feed every event in trace order to
/// ``observe(_:index:)``, then read ``pairs`` (in the order their requests were made) and
/// ``progress``.
///
/// A start whose key is already open replaces it (the open one is kept as unanswered): a core that
/// reuses a key before answering has said the first request will not be answered under it.
/// Memory grows with the pairs found, which is what a caller asked for; open requests are kept
/// per (core, correlation, key).
public struct CorrelationTracker: Sendable {
    /// The correlations looked for, per core name.
    public let correlations: [TraceName: [TraceCorrelation]]
    /// Every pair found so far, in the order its request was made; unanswered ones have no end.
    public private(set) var pairs: [CorrelatedPair] = []
    /// Every progress report of a pair, in trace order.
    public private(set) var progress: [CorrelatedProgress] = []
    private var open: [OpenKey: Int] = [:]

    private struct OpenKey: Hashable {
        var core: TraceName
        var correlation: Int
        var key: String
    }

    /// A tracker looking for `correlations[core]` in the events of each core.
    public init(_ correlations: [TraceName: [TraceCorrelation]]) {
        self.correlations = correlations
    }

    /// The next event of the trace, at position `index`.
    public mutating func observe(_ event: TraceEvent, index: Int) {
        guard let declared = correlations[event.core] else { return }
        for (number, correlation) in declared.enumerated() {
            if correlation.starts.contains(where: { $0.matches(event) }), let key = event.field(correlation.key).map(TraceCorrelation.keyText) {
                let slot = OpenKey(core: event.core, correlation: number, key: key)
                open[slot] = pairs.count
                pairs.append(CorrelatedPair(name: correlation.name, core: event.core, key: key,
                                            startNs: event.timeNs, startIndex: index))
                continue
            }
            if let fields = correlation.progress, event.event == fields.event,
               let key = event.field(correlation.key).map(TraceCorrelation.keyText),
               open[OpenKey(core: event.core, correlation: number, key: key)] != nil,
               let done = event.field(fields.done)?.numericValue, let total = event.field(fields.total)?.numericValue {
                progress.append(CorrelatedProgress(name: correlation.name, core: event.core, key: key, timeNs: event.timeNs,
                                                   index: index, done: done, total: total))
            }
            if correlation.ends.contains(where: { $0.matches(event) }),
               let key = event.field(correlation.endKey ?? correlation.key).map(TraceCorrelation.keyText) {
                let slot = OpenKey(core: event.core, correlation: number, key: key)
                if let position = open.removeValue(forKey: slot) {
                    pairs[position].endNs = event.timeNs
                    pairs[position].endIndex = index
                    pairs[position].endEvent = event.event
                }
            }
        }
    }

    /// Every pair of `trace` (a whole trace held in memory).
    public static func pairs(in trace: [TraceEvent], correlations: [TraceName: [TraceCorrelation]]) -> CorrelationTracker {
        var tracker = CorrelationTracker(correlations)
        for (index, event) in trace.enumerated() { tracker.observe(event, index: index) }
        return tracker
    }
}
