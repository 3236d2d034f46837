/// The differences between two traces; see `TraceDiff.compare`.
public struct TraceDiffReport: Sendable, Hashable {
    /// An event present on one side only.
    public struct Unpaired: Sendable, Hashable {
        /// Its 0-based position in its trace.
        public var index: Int
        /// The event.
        public var event: TraceEvent

        /// Creates an entry.
        public init(index: Int, event: TraceEvent) {
            self.index = index
            self.event = event
        }
    }

    /// Two events paired across the traces: moved, changed or shifted in time.
    public struct Paired: Sendable, Hashable {
        /// Position in A.
        public var indexA: Int
        /// Position in B.
        public var indexB: Int
        /// The event in A.
        public var a: TraceEvent
        /// The event in B.
        public var b: TraceEvent
        /// For changed events: the fields that differ, sorted. Empty otherwise.
        public var fields: [String] = []
        /// For timing: `b.timeNs - a.timeNs`, saturated at the ends of `Int64`
        /// (``TraceTimeDifference`` has it exactly). Zero otherwise.
        public var deltaNs: Int64 = 0

        /// Creates an entry.
        public init(indexA: Int, indexB: Int, a: TraceEvent, b: TraceEvent, fields: [String] = [], deltaNs: Int64 = 0) {
            self.indexA = indexA
            self.indexB = indexB
            self.a = a
            self.b = b
            self.fields = fields
            self.deltaNs = deltaNs
        }
    }

    /// Number of events in A.
    public var eventsA: Int
    /// Number of events in B.
    public var eventsB: Int
    /// The tolerance the comparison used.
    public var timingToleranceNs: Int64
    /// Events aligned unchanged (their timing may still differ).
    public var matched = 0
    /// In A, not in B.
    public var missing: [Unpaired] = []
    /// In B, not in A.
    public var extra: [Unpaired] = []
    /// The same event at another place in the sequence.
    public var moved: [Paired] = []
    /// The same event (core, event, key fields) with other fields different.
    public var changed: [Paired] = []
    /// Aligned events whose time moved by more than the tolerance.
    public var timing: [Paired] = []

    /// Creates an empty report.
    public init(eventsA: Int, eventsB: Int, timingToleranceNs: Int64) {
        self.eventsA = eventsA
        self.eventsB = eventsB
        self.timingToleranceNs = timingToleranceNs
    }

    /// True when the traces behave the same within the tolerance.
    public var isEmpty: Bool {
        if let digest { return digest.total == 0 }
        return missing.isEmpty && extra.isEmpty && moved.isEmpty && changed.isEmpty && timing.isEmpty
    }

    /// Set when the report was made in bounded memory (``StreamingTraceDiff`` found more
    /// differences than it keeps): the exact count of each kind and the lines ``render(maxLines:)``
    /// shows. The arrays then hold only the first differences found.
    public internal(set) var digest: Digest?

    /// What a report made in bounded memory keeps of differences too many to keep: counts, and
    /// the first lines of the rendered report.
    public struct Digest: Sendable, Hashable {
        /// How many of each kind there are.
        public internal(set) var missing = 0, extra = 0, moved = 0, changed = 0, timing = 0
        /// The rendered lines in report order, at most `lineBudget` of them.
        var lines: [Line] = []
        /// How many lines the whole report has.
        var totalLines = 0
        /// How many lines are kept: ``render(maxLines:)`` is exact up to `maxLines` = this + 1.
        public internal(set) var lineBudget = 0

        var total: Int { missing + extra + moved + changed + timing }
    }

    /// The number of missing events (all of them, also when only the first are kept).
    public var missingCount: Int { digest?.missing ?? missing.count }
    /// The number of extra events.
    public var extraCount: Int { digest?.extra ?? extra.count }
    /// The number of moved events.
    public var movedCount: Int { digest?.moved ?? moved.count }
    /// The number of changed events.
    public var changedCount: Int { digest?.changed ?? changed.count }
    /// The number of timing differences.
    public var timingCount: Int { digest?.timing ?? timing.count }

    /// `3 missing, 1 extra, 0 moved, 2 changed, 5 timing` — the counts on one line.
    public var countsLine: String {
        "\(missingCount) missing, \(extraCount) extra, \(movedCount) moved, \(changedCount) changed, "
            + "\(timingCount) timing beyond \(timingToleranceNs) ns"
    }

    /// A report short enough for a CI log, at most `maxLines` lines (at least 2): a header with the
    /// counts, then the differences in time order (the baseline's time for all but extra events),
    /// one line each, then `... and K more`.
    ///
    /// Line prefixes: `-` missing, `+` extra, `~` moved, `!` changed, `@` timing. Three or more
    /// like differences in a row (same core and event; for changes, the same fields) are one line:
    /// `! changed ×236 ingest chunk [sequence] t_ns=…: first sequence: 1 → 213; last …`.
    public func render(maxLines: Int = 40) -> String {
        let header = "trace diff: \(eventsA) vs \(eventsB) events, \(matched) aligned; " + countsLine
        if isEmpty { return header + "\nno differences" }
        let lines: [Line], total: Int
        if let digest {
            (lines, total) = (digest.lines, digest.totalLines)
        } else {
            var collector = LineCollector(keeping: .max)
            for entry in missing.sorted(by: { $0.index < $1.index }) { collector.add(missing: entry) }
            for entry in extra.sorted(by: { $0.index < $1.index }) { collector.add(extra: entry) }
            for entry in moved { collector.add(moved: entry) }
            for entry in changed.sorted(by: { $0.indexA < $1.indexA }) { collector.add(changed: entry) }
            for entry in timing.sorted(by: { $0.indexA < $1.indexA }) { collector.add(timing: entry) }
            (lines, total) = collector.finish()
        }
        let budget = Swift.max(maxLines, 2) - 1  // the header takes one line
        var out = [header]
        if total <= budget {
            out += lines.map(\.text)
        } else {
            out += lines.prefix(budget - 1).map(\.text)
            out.append("... and \(total - (budget - 1)) more")
        }
        return out.joined(separator: "\n")
    }

    /// One rendered line and where it sorts.
    struct Line: Sendable, Hashable {
        var timeNs: Int64
        var order: Int
        var index: Int
        var text: String

        static func < (x: Line, y: Line) -> Bool { (x.timeNs, x.order, x.index) < (y.timeNs, y.order, y.index) }
    }

    /// One difference before runs are collapsed.
    struct Item {
        var timeNs: Int64
        var index: Int
        /// Differences with equal `group` that follow one another form a run.
        var group: String
        var text: String
        /// For changed and timing entries: what changed, shown for a run's first and last member.
        var detail: String
    }

    /// Runs of at least `collapseRun` like differences become one line, so a behaviour change
    /// that renumbers hundreds of chunks reads as one line in a CI log, not hundreds.
    static let collapseRun = 3

    /// Turns one kind's differences, given in order of their position, into lines, a run of
    /// `collapseRun` or more like ones into one line. Holds only the run being read.
    struct Collapser {
        let order: Int
        let prefix: String
        private var first: Item?
        private var second: Item?
        private var last: Item?
        private var count = 0

        init(order: Int, prefix: String) {
            self.order = order
            self.prefix = prefix
        }

        /// The next difference; returns the lines of the run it closed, if any.
        mutating func add(_ item: Item) -> [Line] {
            if let first, first.group == item.group {
                count += 1
                if count == 2 { second = item }
                last = item
                return []
            }
            let closed = flush()
            first = item
            last = item
            count = 1
            return closed
        }

        /// The lines of the run being read (at the end).
        mutating func flush() -> [Line] {
            defer {
                first = nil
                second = nil
                last = nil
                count = 0
            }
            guard let first, let last else { return [] }
            if count >= TraceDiffReport.collapseRun {
                var text = "\(prefix) ×\(count) \(first.group) t_ns=\(first.timeNs)…\(last.timeNs)"
                if !first.detail.isEmpty { text += ": first \(first.detail); last \(last.detail)" }
                return [Line(timeNs: first.timeNs, order: order, index: first.index, text: text)]
            }
            return ([first] + (second.map { [$0] } ?? [])).map { Line(timeNs: $0.timeNs, order: order, index: $0.index, text: $0.text) }
        }
    }

    /// The report's lines from its differences, each kind given in order of position: counts
    /// every line, keeps the first `keeping` in report order.
    struct LineCollector {
        let keeping: Int
        private var missing = Collapser(order: 0, prefix: "- missing")
        private var extra = Collapser(order: 1, prefix: "+ extra  ")
        private var changed = Collapser(order: 3, prefix: "! changed")
        private var timing = Collapser(order: 4, prefix: "@ timing ")
        private var lines: [Line] = []
        private var total = 0

        init(keeping: Int) { self.keeping = keeping }

        mutating func add(missing entry: Unpaired) {
            keep(missing.add(Item(timeNs: entry.event.timeNs, index: entry.index, group: "\(entry.event.core) \(entry.event.event)",
                                  text: "- missing t_ns=\(entry.event.timeNs) \(TraceDiffReport.describe(entry.event))", detail: "")))
        }

        mutating func add(extra entry: Unpaired) {
            keep(extra.add(Item(timeNs: entry.event.timeNs, index: entry.index, group: "\(entry.event.core) \(entry.event.event)",
                                text: "+ extra   t_ns=\(entry.event.timeNs) \(TraceDiffReport.describe(entry.event))", detail: "")))
        }

        mutating func add(moved entry: Paired) {
            keep([Line(timeNs: entry.a.timeNs, order: 2, index: entry.indexA,
                       text: "~ moved   t_ns=\(entry.a.timeNs) → \(entry.b.timeNs) (#\(entry.indexA) → #\(entry.indexB)) \(TraceDiffReport.describe(entry.a))")])
        }

        mutating func add(changed entry: Paired) {
            let changes = entry.fields.map { field in
                "\(field): \(TraceDiffReport.short(entry.a.fields[field])) → \(TraceDiffReport.short(entry.b.fields[field]))"
            }.joined(separator: ", ")
            keep(changed.add(Item(timeNs: entry.a.timeNs, index: entry.indexA,
                                  group: "\(entry.a.core) \(entry.a.event) [\(entry.fields.joined(separator: ","))]",
                                  text: "! changed t_ns=\(entry.a.timeNs) \(TraceDiffReport.describe(entry.a, fieldsLimit: 0)) \(changes)", detail: changes)))
        }

        mutating func add(timing entry: Paired) {
            // Exact, not the saturated deltaNs; "+5 ns" and "-5 ns" as before.
            let delta = TraceTimeDifference(from: entry.a.timeNs, to: entry.b.timeNs)
            keep(timing.add(Item(timeNs: entry.a.timeNs, index: entry.indexA, group: "\(entry.a.core) \(entry.a.event)",
                                 text: "@ timing  t_ns=\(entry.a.timeNs) → \(entry.b.timeNs) (\(delta)) \(TraceDiffReport.describe(entry.a, fieldsLimit: 0))",
                                 detail: "\(delta)")))
        }

        private mutating func keep(_ new: [Line]) {
            guard !new.isEmpty else { return }
            total += new.count
            lines += new
            if keeping < .max / 2, lines.count > 2 * Swift.max(keeping, 64) { trim() }
        }

        private mutating func trim() {
            lines.sort(by: <)
            if lines.count > keeping { lines.removeLast(lines.count - keeping) }
        }

        /// Every line counted; the first `keeping` in report order.
        mutating func finish() -> (lines: [Line], total: Int) {
            keep(missing.flush())
            keep(extra.flush())
            keep(changed.flush())
            keep(timing.flush())
            trim()
            return (lines, total)
        }
    }

    /// `ingest datapoint source=imu name=v1/1/yaw` plus up to `fieldsLimit` other fields.
    static func describe(_ e: TraceEvent, fieldsLimit: Int = 3) -> String {
        var parts = ["\(e.core) \(e.event)"]
        var used = Set<String>()
        for key in TraceDiff.defaultKeyFields {
            if let value = e.field(key) {
                parts.append("\(key)=\(short(value))")
                used.insert(key)
            }
        }
        let others = e.fields.keys.filter { !used.contains($0) }.sorted(by: TraceJSONWriter.keyOrder)
        for key in others.prefix(fieldsLimit) {
            parts.append("\(key)=\(short(e.field(key)))")
        }
        if others.count > fieldsLimit && fieldsLimit > 0 { parts.append("…") }
        return parts.joined(separator: " ")
    }

    /// A field value cut to 40 characters so one difference stays one readable line.
    static func short(_ value: TraceValue?) -> String {
        guard let value else { return "(absent)" }
        var text = value.compactText
        text = text.escapingControlCharactersForReport()
        if text.count > 40 { text = String(text.prefix(39)) + "…" }
        return text
    }
}
