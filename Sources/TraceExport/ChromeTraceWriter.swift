import BehaviourTrace
import JSONBytes

/// A behaviour trace (and, when given, the capture's frames) as Chrome trace-event JSON: the
/// format Perfetto's UI (ui.perfetto.dev) and `chrome://tracing` open.
///
/// What becomes what:
/// - process 1, "cores": a track per core with an instant per event (an `api_call` is named after
///   its `call`), every field in the instant's `args`;
/// - a track per declared ``TraceCorrelation`` of a core: a slice from request to answer (`X`
///   events, named by the key), or, when pairs of that correlation overlap in time, async slices
///   (`b`/`e`, one row each as Perfetto lays them out); an unanswered request is a slice to the
///   trace's end with `"answered": false`;
/// - a counter track per correlation with progress: percent done per key;
/// - process 2, "interfaces": a track per capture interface with an instant per frame, named by
///   its one-line dissection.
///
/// Timestamps are the trace's virtual nanoseconds written as microseconds with three decimals, so
/// no precision is lost. Feed events with ``add(_:)`` and frames with ``addFrame(interface:timeNs:summary:length:)``
/// in any interleaving, then take the document from ``finish()``.
public struct ChromeTraceWriter {
    /// The correlations drawn as slices, per core.
    public let correlations: [TraceName: [TraceCorrelation]]
    private var out: [UInt8] = []
    private var first = true
    private var tracker: CorrelationTracker
    private var coreThreads: [TraceName: Int] = [:]
    private var interfaceThreads: Set<Int> = []
    private var eventCount = 0
    private var lastNs: Int64 = 0
    /// Times and integer fields past ±2⁵³ (see ``warnings``), and answers earlier than their
    /// requests, counted for the warnings.
    private var inexactTimes = 0
    private var inexactIntegers = 0
    private var answersBeforeRequests = 0
    private var unrepresentableLatencies = 0

    /// The largest magnitude a JSON number keeps exactly in a reader that holds numbers as
    /// doubles, as Perfetto's JSON importer and `chrome://tracing` do.
    public static let exactIntegerLimit: UInt64 = 1 << 53

    /// Process ids of the two groups of tracks.
    static let coresProcess = 1
    static let interfacesProcess = 2

    /// A writer drawing `correlations` (``IntegrationRegistry/correlations`` gives every
    /// registered core's) as slices.
    public init(correlations: [TraceName: [TraceCorrelation]]) {
        self.correlations = correlations
        tracker = CorrelationTracker(correlations)
        literal(#"{"displayTimeUnit":"ms","traceEvents":["#)
        metadata("process_name", pid: Self.coresProcess, tid: 0, value: "cores")
        metadata("process_sort_index", pid: Self.coresProcess, tid: 0, number: 1)
    }

    /// Events of the trace so far.
    public var events: Int { eventCount }

    /// The next event of the trace, in trace order.
    public mutating func add(_ event: TraceEvent) {
        tracker.observe(event, index: eventCount)
        eventCount += 1
        lastNs = max(lastNs, event.timeNs)
        if event.timeNs.magnitude > Self.exactIntegerLimit { inexactTimes += 1 }
        for value in event.fields.values { inexactIntegers += Self.inexactIntegers(in: value) }
        let tid = thread(forCore: event.core)
        var name = event.event.text
        if event.event == .apiCall, case .string(let call)? = event.field("call") { name = "call " + call }
        beginInstant(pid: Self.coresProcess, tid: tid, timeNs: event.timeNs)
        literal(#","cat":"#)
        JSONStringEscaping.append(event.core.text, to: &out)
        literal(#","name":"#)
        JSONStringEscaping.append(name, to: &out)
        literal(#","args":"#)
        event.appendFieldsJSON(to: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// One captured frame of interface `interface` at `timeNs` (on the trace's clock: nanoseconds
    /// since the capture's first frame), named by its one-line dissection.
    public mutating func addFrame(interface: Int, timeNs: Int64, summary: String, length: Int, interfaceName: String) {
        lastNs = max(lastNs, timeNs)
        if timeNs.magnitude > Self.exactIntegerLimit { inexactTimes += 1 }
        let tid = interface + 1
        if interfaceThreads.isEmpty {
            metadata("process_name", pid: Self.interfacesProcess, tid: 0, value: "interfaces")
            metadata("process_sort_index", pid: Self.interfacesProcess, tid: 0, number: 2)
        }
        if interfaceThreads.insert(tid).inserted {
            metadata("thread_name", pid: Self.interfacesProcess, tid: tid, value: "interface \(interface) (\(interfaceName))")
            metadata("thread_sort_index", pid: Self.interfacesProcess, tid: tid, number: tid)
        }
        beginInstant(pid: Self.interfacesProcess, tid: tid, timeNs: timeNs)
        literal(#","cat":"frame","name":"#)
        JSONStringEscaping.append(summary.isEmpty ? "frame" : summary, to: &out)
        literal(#","args":{"length":"#)
        appendInt(length)
        literal("}}")
    }

    /// The whole document: the instants written so far, then every pair's slice and every progress
    /// counter.
    public mutating func finish() -> [UInt8] {
        writePairs()
        writeProgress()
        literal("]}\n")
        return out
    }

    /// What the document cannot show exactly, one sentence each, for the command to print: times
    /// past 2⁵³ ns (about 104 days) and integer fields past ±2⁵³, which are written exactly but
    /// which a reader holding numbers as doubles rounds; and answers earlier than their request
    /// (a trace not in time order), drawn as slices of duration 0 at the request.
    /// Complete after ``finish()``.
    public var warnings: [String] {
        var lines: [String] = []
        if inexactTimes > 0 {
            lines.append("\(inexactTimes) event(s) or frame(s) lie more than 2^53 ns (about 104 days) from the trace's start; "
                + "the file has their exact times, but Perfetto reads them as doubles and rounds them")
        }
        if inexactIntegers > 0 {
            lines.append("\(inexactIntegers) integer field(s) are beyond ±2^53; the file has them exactly, but Perfetto's args show them rounded")
        }
        if unrepresentableLatencies > 0 {
            lines.append("\(unrepresentableLatencies) answer(s) come 2^63 ns or more after or before their request; their latency_ns does not fit a JSON integer Tether writes and is left out")
        }
        if answersBeforeRequests > 0 {
            lines.append("\(answersBeforeRequests) answer(s) come earlier than their request (the trace is not in time order); "
                + "each is drawn as a slice of duration 0 at its request")
        }
        return lines
    }

    private static func inexactIntegers(in value: TraceValue) -> Int {
        switch value {
        case .int(let n): return n.magnitude > exactIntegerLimit ? 1 : 0
        case .array(let items): return items.reduce(0) { $0 + inexactIntegers(in: $1) }
        case .object(let fields): return fields.values.reduce(0) { $0 + inexactIntegers(in: $1) }
        case .string, .double, .bool, .null: return 0
        }
    }

    // MARK: pairs

    private mutating func writePairs() {
        var groups: [String: [CorrelatedPair]] = [:]
        var order: [String] = []
        for pair in tracker.pairs {
            let group = pair.core.text + ": " + pair.name
            if groups[group] == nil { order.append(group) }
            groups[group, default: []].append(pair)
        }
        var asyncID = 0
        for group in order {
            let pairs = groups[group, default: []]
            let core = pairs[0].core.text
            let overlapping = zip(pairs, pairs.dropFirst()).contains { earlier, later in
                (earlier.endNs ?? lastNs) > later.startNs
            }
            if overlapping {
                for pair in pairs {
                    asyncID += 1
                    slice(pair, core: core, group: group, phase: .async(id: asyncID))
                }
            } else {
                let tid = nextThread(named: group)
                for pair in pairs { slice(pair, core: core, group: group, phase: .complete(tid: tid)) }
            }
        }
    }

    private enum SlicePhase {
        case complete(tid: Int)
        case async(id: Int)
    }

    private mutating func slice(_ pair: CorrelatedPair, core: String, group: String, phase: SlicePhase) {
        // A slice never ends before it starts (a negative `dur`, or an `e` before its `b`, breaks
        // the format): an answer earlier than its request ends the slice at the request.
        if let end = pair.endNs, end < pair.startNs { answersBeforeRequests += 1 }
        let endNs = max(pair.endNs ?? lastNs, pair.startNs)
        var args: [String: TraceValue] = [
            "key": .string(pair.key), "answered": .bool(pair.endNs != nil), "start_index": .int(Int64(pair.startIndex)),
        ]
        if let end = pair.endEvent { args["end"] = .string(end.text) }
        if let index = pair.endIndex { args["end_index"] = .int(Int64(index)) }
        if let latency = pair.latency {
            // A latency past Int64 (instants 2⁶³ ns apart) is left out, and counted for the warning.
            if latency.saturatingNanoseconds.magnitude == latency.magnitude {
                args["latency_ns"] = .int(latency.saturatingNanoseconds)
            } else {
                unrepresentableLatencies += 1
            }
        }
        let name = "\(pair.name) \(pair.key)"
        switch phase {
        case .complete(let tid):
            begin()
            literal(#"{"ph":"X","pid":"#)
            appendInt(Self.coresProcess)
            literal(#","tid":"#)
            appendInt(tid)
            literal(#","ts":"#)
            appendMicroseconds(pair.startNs)
            literal(#","dur":"#)
            let duration = TraceTimeDifference(from: pair.startNs, to: endNs)
            appendMicroseconds(negative: false, magnitude: duration.magnitude)
            appendNameCategoryArgs(name: name, category: core, args: args)
        case .async(let id):
            for (ph, ts) in [("b", pair.startNs), ("e", endNs)] {
                begin()
                literal(#"{"ph":""#)
                out.append(contentsOf: ph.utf8)
                literal(#"","pid":"#)
                appendInt(Self.coresProcess)
                literal(#","tid":0,"id":"#)
                appendInt(id)
                literal(#","ts":"#)
                appendMicroseconds(ts)
                // Perfetto groups async slices into one track per name: the group's name, with
                // the key in the args, keeps one correlation on one track.
                appendNameCategoryArgs(name: group, category: core, args: ph == "b" ? args.merging(["pair": .string(name)]) { a, _ in a } : [:])
            }
        }
    }

    private mutating func writeProgress() {
        for point in tracker.progress where point.total > 0 {
            begin()
            literal(#"{"ph":"C","pid":"#)
            appendInt(Self.coresProcess)
            literal(#","tid":0,"ts":"#)
            appendMicroseconds(point.timeNs)
            let percent = (point.done / point.total * 100_000).rounded() / 1000
            appendNameCategoryArgs(name: "\(point.core): \(point.name) progress %", category: point.core.text,
                                   args: [point.key: percent.isFinite ? .double(percent) : .null])
        }
    }

    // MARK: tracks

    private var threadCount = 0

    private mutating func thread(forCore core: TraceName) -> Int {
        if let tid = coreThreads[core] { return tid }
        let tid = nextThread(named: core.text)
        coreThreads[core] = tid
        return tid
    }

    private mutating func nextThread(named name: String) -> Int {
        threadCount += 1
        metadata("thread_name", pid: Self.coresProcess, tid: threadCount, value: name)
        metadata("thread_sort_index", pid: Self.coresProcess, tid: threadCount, number: threadCount)
        return threadCount
    }

    // MARK: JSON

    /// `{"ph":"i","s":"t","pid":…,"tid":…,"ts":…` of a thread-scoped instant; the caller writes the rest.
    private mutating func beginInstant(pid: Int, tid: Int, timeNs: Int64) {
        begin()
        literal(#"{"ph":"i","s":"t","pid":"#)
        appendInt(pid)
        literal(#","tid":"#)
        appendInt(tid)
        literal(#","ts":"#)
        appendMicroseconds(timeNs)
    }

    private mutating func begin() {
        if first { first = false } else { out.append(UInt8(ascii: ",")) }
        out.append(UInt8(ascii: "\n"))
    }

    /// A metadata event: a track's `name` (text) or its `sort_index` (number).
    private mutating func metadata(_ name: String, pid: Int, tid: Int, value: String) {
        metadata(name, pid: pid, tid: tid, args: ["name": .string(value)])
    }

    private mutating func metadata(_ name: String, pid: Int, tid: Int, number: Int) {
        metadata(name, pid: pid, tid: tid, args: ["sort_index": .int(Int64(number))])
    }

    private mutating func metadata(_ name: String, pid: Int, tid: Int, args: [String: TraceValue]) {
        begin()
        literal(#"{"ph":"M","pid":"#)
        appendInt(pid)
        literal(#","tid":"#)
        appendInt(tid)
        literal(#","name":"#)
        JSONStringEscaping.append(name, to: &out)
        literal(#","args":"#)
        out.append(contentsOf: JSONLiteral.value(.object(args)).utf8)
        out.append(UInt8(ascii: "}"))
    }

    private mutating func appendNameCategoryArgs(name: String, category: String, args: [String: TraceValue]) {
        literal(#","cat":"#)
        JSONStringEscaping.append(category, to: &out)
        literal(#","name":"#)
        JSONStringEscaping.append(name, to: &out)
        literal(#","args":"#)
        out.append(contentsOf: JSONLiteral.value(.object(args)).utf8)
        out.append(UInt8(ascii: "}"))
    }

    private mutating func literal(_ text: StaticString) {
        text.withUTF8Buffer { out.append(contentsOf: $0) }
    }

    private mutating func appendInt(_ value: Int) {
        out.append(contentsOf: String(value).utf8)
    }

    /// Nanoseconds as microseconds with exactly three decimals (`1234.567`), negative ones too.
    private mutating func appendMicroseconds(_ ns: Int64) {
        appendMicroseconds(negative: ns < 0, magnitude: ns.magnitude)
    }

    /// A sign and a magnitude in nanoseconds as microseconds with exactly three decimals: a
    /// duration can be up to 2⁶⁴ − 1 ns, past `Int64`.
    private mutating func appendMicroseconds(negative: Bool, magnitude: UInt64) {
        if negative { out.append(UInt8(ascii: "-")) }
        out.append(contentsOf: String(magnitude / 1000).utf8)
        let fraction = magnitude % 1000
        out.append(UInt8(ascii: "."))
        out.append(UInt8(ascii: "0") + UInt8(fraction / 100))
        out.append(UInt8(ascii: "0") + UInt8(fraction / 10 % 10))
        out.append(UInt8(ascii: "0") + UInt8(fraction % 10))
    }
}
