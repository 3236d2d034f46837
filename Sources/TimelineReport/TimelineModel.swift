import BehaviourTrace

/// One row of the timeline: an interface's frames, one kind of a core's events, the injected
/// faults, or the baseline differences.
public struct TimelineLane: Sendable {
    /// What a lane holds.
    public enum Kind: String, Sendable, CaseIterable {
        /// The captured frames of one capture interface.
        case interface
        /// One category of one core's trace events (see ``TimelineBuilder/category(of:)``).
        case core
        /// `fault_injected` events, whatever core wrote them.
        case faults
        /// Differences from the set's baselines.
        case baseline
    }

    /// The name shown, e.g. `messaging · api` or `if 0 · ble-hci`.
    public var name: String
    /// What it holds.
    public var kind: Kind
    /// For a core lane, the core; for an interface lane, nil.
    public var core: String?
    /// For a core lane, the category: `api`, `callbacks`, `timers`, `violations`, `frames`.
    public var category: String?
    /// Each item's time, virtual microseconds since the first frame (rounded down), ascending.
    public internal(set) var timesUs: [Int64] = []
    /// Each item's kind (an event name, a frame direction, a difference kind), as an index into
    /// ``kindNames``.
    public internal(set) var kinds: [Int32] = []
    /// Each item's position: its index in the trace (core and faults lanes; baseline differences
    /// of the new trace), its 1-based frame number (interface lanes), or -1 (an event missing
    /// from the new trace).
    public internal(set) var positions: [Int64] = []
    /// The kinds' names.
    public internal(set) var kindNames: [String] = []
    /// How many items of each kind.
    public internal(set) var kindCounts: [Int] = []
    var kindIndex: [String: Int32] = [:]
    var details: [DetailKeeper] = []

    /// How many items the lane holds.
    public var count: Int { timesUs.count }

    init(name: String, kind: Kind, core: String? = nil, category: String? = nil) {
        self.name = name
        self.kind = kind
        self.core = core
        self.category = category
    }

    /// The kind's index, added when new.
    mutating func kind(_ name: String) -> Int32 {
        if let index = kindIndex[name] { return index }
        let index = Int32(kindNames.count)
        kindIndex[name] = index
        kindNames.append(name)
        kindCounts.append(0)
        details.append(DetailKeeper())
        return index
    }

    /// Adds an item; `detail` is asked for only when the item's detail is kept.
    mutating func add(timeNs: Int64, kind name: String, position: Int64, detail: () -> String) {
        add(timeNs: timeNs, kindIndex: kind(name), position: position, detail: detail)
    }

    /// Adds an item of the kind at `k` (``kind(_:)`` gave it).
    mutating func add(timeNs: Int64, kindIndex k: Int32, position: Int64, detail: () -> String) {
        let ordinal = count
        // Times never go back within a lane (a frame stamped before the one before it is shown at
        // that one's instant, as the engine feeds it), so the script can search them.
        let us = timeNs >= 0 ? timeNs / 1000 : -((-timeNs + 999) / 1000)
        timesUs.append(Swift.max(us, timesUs.last ?? us))
        kinds.append(k)
        positions.append(position)
        let kindOrdinal = kindCounts[Int(k)]
        kindCounts[Int(k)] += 1
        details[Int(k)].offer(kindOrdinal: kindOrdinal, laneOrdinal: ordinal, detail)
    }

    /// The details kept, by the item's index in the lane.
    public var keptDetails: [(item: Int, text: String)] {
        var result: [(item: Int, text: String)] = []
        for keeper in details {
            for entry in keeper.kept { result.append((item: entry.laneOrdinal, text: entry.text)) }
        }
        return result.sorted { $0.item < $1.item }
    }

    /// For each kind, one detail kept per this many items (1: all).
    public var detailStrides: [Int] { details.map(\.stride) }
}

/// The details of one kind of a lane: all of them while they are at most
/// ``TimelineBuilder/detailsPerKind``; past that, every second one is dropped and then only every
/// `stride`-th one kept, so the ones kept stay spread evenly over the whole set.
struct DetailKeeper: Sendable {
    static let limit = 20_000
    var stride = 1
    var kept: [(kindOrdinal: Int, laneOrdinal: Int, text: String)] = []

    mutating func offer(kindOrdinal: Int, laneOrdinal: Int, _ detail: () -> String) {
        guard kindOrdinal % stride == 0 else { return }
        kept.append((kindOrdinal, laneOrdinal, detail()))
        if kept.count > Self.limit {
            stride *= 2
            kept.removeAll { $0.kindOrdinal % stride != 0 }
        }
    }
}

/// A series of a plot: points in time order.
public struct TimelineSeries: Sendable {
    /// Shown in the legend, e.g. `127.0.0.1:50123` or `send 3`.
    public var name: String
    /// Each point's time, virtual microseconds.
    public var timesUs: [Int64]
    /// Each point's value.
    public var values: [Double]
    /// Points to draw when the series is a set of points rather than a line.
    public var points: Bool

    /// Creates a series.
    public init(name: String, timesUs: [Int64], values: [Double], points: Bool = false) {
        self.name = name
        self.timesUs = timesUs
        self.values = values
        self.points = points
    }
}

/// A plot drawn under the timeline, on the timeline's time axis.
public struct TimelinePlot: Sendable {
    /// The plot's title, e.g. `ingest rate per stream`.
    public var title: String
    /// The unit of the values, e.g. `events/s`.
    public var unit: String
    /// Its series.
    public var series: [TimelineSeries]

    /// Creates a plot.
    public init(title: String, unit: String, series: [TimelineSeries]) {
        self.title = title
        self.unit = unit
        self.series = series
    }
}

/// Builds a set's timeline while the replay streams: give it every trace event in trace order
/// (``observe(_:)``), and the capture's frames (``frame(interface:timeNs:number:direction:summary:)``)
/// in capture order. Keeps per event a time, a kind and a position (about 20 bytes), and the
/// details of at most ``detailsPerKind`` events of each kind of each lane.
public struct TimelineBuilder: Sendable {
    /// Details (fields, a frame's dissection) are kept for all events of a kind up to this many,
    /// then for an even sample of them.
    public static var detailsPerKind: Int { DetailKeeper.limit }
    /// The ingest-rate plot's resolution.
    static let rateBucketNs: Int64 = 100_000_000

    private(set) var interfaceLanes: [Int: TimelineLane] = [:]
    private var interfaceNames: [Int: String] = [:]
    /// The core lanes, in the order they were first written to.
    private var coreLanes: [TimelineLane] = []
    /// Each core lane's index in ``coreLanes``, by core and category.
    private var coreLaneIndex: [LaneKey: Int] = [:]
    private var coreOrder: [TraceName] = []
    /// Where each core's event of each name goes, found once per name pair: the trace is read by
    /// its interned names, so an event costs a look-up of two words, not the hashing of its texts.
    private var routes: [RouteKey: Route] = [:]
    private(set) var faults = TimelineLane(name: "faults", kind: .faults)
    /// Per core, the trace index of each of its events in order (for baseline differences, whose
    /// positions count a core's events alone).
    private var corePositions: [TraceName: [Int32]] = [:]
    private var position = 0
    private var lastTimeNs: Int64 = 0
    /// Datapoints per source per 100 ms.
    private var rates: [String: [Int32]] = [:]
    private var rateOrder: [String] = []
    /// Plots added from outside.
    public var extraPlots: [TimelinePlot] = []
    /// The request/answer pairs the cores declare (`CoreIntegration.correlations`), for the
    /// latency and progress plots.
    private var correlations: CorrelationTracker

    /// An empty timeline; `interfaces` names the capture's interfaces by index, `correlations`
    /// the pairs to find per core (`IntegrationRegistry.correlations`).
    public init(interfaces: [Int: String] = [:], correlations: [TraceName: [TraceCorrelation]] = [:]) {
        self.correlations = CorrelationTracker(correlations)
        interfaceNames = interfaces
        for (index, name) in interfaces {
            interfaceLanes[index] = TimelineLane(name: name, kind: .interface)
        }
    }

    /// How many trace events it has seen.
    public var events: Int { position }

    /// The category a core's event goes to: `api` (`api_*`, and the app's own `app_call`),
    /// `timers` (`timeout`), `violations` (`violation`, `rejected`, `*_malformed`,
    /// `time_backwards`, `gap`, `step_failed`, `link_not_found`, the app's `warning`,
    /// `no_recorded_answer`), `frames` (`frame_*` but `frame_malformed`), else `callbacks`.
    public static func category(of event: String) -> String {
        switch event {
        case "timeout": return "timers"
        case "violation", "rejected", "time_backwards", "gap", "step_failed", "link_not_found", "warning", "no_recorded_answer": return "violations"
        case "app_call": return "api"
        default:
            if event.hasSuffix("_malformed") { return "violations" }
            if event.hasPrefix("api_") { return "api" }
            if event.hasPrefix("frame_") { return "frames" }
            return "callbacks"
        }
    }

    /// The categories in lane order.
    public static let categories = ["api", "callbacks", "timers", "violations", "frames"]

    /// A core lane: one core's events of one category.
    private struct LaneKey: Hashable {
        var core: TraceName
        var category: String
    }

    /// One core's events of one name.
    private struct RouteKey: Hashable {
        var core: TraceName
        var event: TraceName
    }

    /// Where those events go: their lane and their kind in it.
    private struct Route {
        var lane: Int
        var kind: Int32
    }

    /// The event every core's faults are (``FaultInjector``'s), drawn in the faults lane.
    private static let faultInjected: TraceName = "fault_injected"
    /// The ingest event the rate plot counts.
    private static let dataPoint: TraceName = "datapoint"

    private static func count(_ bucket: Int, in counts: inout [Int32]) {
        if counts.count <= bucket { counts.append(contentsOf: repeatElement(0, count: bucket + 1 - counts.count)) }
        counts[bucket] += 1
    }

    /// The next trace event.
    public mutating func observe(_ event: TraceEvent) {
        let index = position
        position += 1
        correlations.observe(event, index: index)
        lastTimeNs = max(lastTimeNs, event.timeNs)
        corePositions[event.core, default: []].append(Int32(truncatingIfNeeded: index))
        if event.event == Self.faultInjected {
            faults.add(timeNs: event.timeNs, kind: event.core.text, position: Int64(index)) { Self.detail(of: event) }
            return
        }
        let route = route(of: event)
        coreLanes[route.lane].add(timeNs: event.timeNs, kindIndex: route.kind, position: Int64(index)) { Self.detail(of: event) }
        if event.event == Self.dataPoint, case .string(let source)? = event.field("source") {
            let bucket = Int(max(0, event.timeNs) / Self.rateBucketNs)
            if rates[source] == nil { rateOrder.append(source) }
            Self.count(bucket, in: &rates[source, default: []])
        }
    }

    /// The lane and kind of `event`'s core and name, the lane made the first time its core writes
    /// an event of its category.
    private mutating func route(of event: TraceEvent) -> Route {
        let key = RouteKey(core: event.core, event: event.event)
        if let route = routes[key] { return route }
        let category = Self.category(of: event.event.text)
        let laneKey = LaneKey(core: event.core, category: category)
        let lane: Int
        if let existing = coreLaneIndex[laneKey] {
            lane = existing
        } else {
            if !coreOrder.contains(event.core) { coreOrder.append(event.core) }
            lane = coreLanes.count
            coreLanes.append(TimelineLane(name: "\(event.core.text) · \(category)", kind: .core, core: event.core.text, category: category))
            coreLaneIndex[laneKey] = lane
        }
        let route = Route(lane: lane, kind: coreLanes[lane].kind(event.event.text))
        routes[key] = route
        return route
    }

    /// One captured frame: `interface` its interface index, `timeNs` its virtual time, `number` its
    /// 1-based number in the capture, `direction` `sent`/`received`/… or nil, `summary` its
    /// one-line dissection (as `tether inspect --frames` shows it).
    public mutating func frame(interface: Int, timeNs: Int64, number: Int, direction: String?, summary: String) {
        if interfaceLanes[interface] == nil {
            interfaceLanes[interface] = TimelineLane(name: interfaceNames[interface] ?? "if \(interface)", kind: .interface)
        }
        lastTimeNs = max(lastTimeNs, timeNs)
        interfaceLanes[interface]!.add(timeNs: timeNs, kind: direction ?? "frame", position: Int64(number)) {
            (direction.map { $0 + "  " } ?? "") + summary
        }
    }

    /// The lanes in display order: interfaces by index, then each core's categories (cores in the
    /// order they first wrote), then faults.
    public var lanes: [TimelineLane] {
        var result = interfaceLanes.keys.sorted().compactMap { interfaceLanes[$0] }
        for core in coreOrder {
            for category in Self.categories {
                if let lane = coreLaneIndex[LaneKey(core: core, category: category)] { result.append(coreLanes[lane]) }
            }
        }
        result.append(faults)
        return result
    }

    /// The trace index of `core`'s `ordinal`-th event (0-based), nil past its events.
    public func tracePosition(core: String, ordinal: Int) -> Int? {
        // A handful of cores: found by text rather than by making a name for text that may be none.
        guard let list = corePositions.first(where: { $0.key.text == core })?.value, list.indices.contains(ordinal) else { return nil }
        return Int(list[ordinal])
    }

    /// The latest time seen, events or frames, in nanoseconds.
    public var endTimeNs: Int64 { lastTimeNs }

    /// Datapoints per second per `source`, over one-second steps when the set is long enough for
    /// 100 ms steps to be noise (more than 2,000 of them), else over 100 ms steps.
    public var ratePlot: TimelinePlot? {
        guard !rateOrder.isEmpty else { return nil }
        let longest = rates.values.map(\.count).max() ?? 0
        let group = longest > 2000 ? max(1, longest / 2000) : 1
        let seconds = Double(group) * Double(Self.rateBucketNs) / 1e9
        let series = rateOrder.map { source -> TimelineSeries in
            let counts = rates[source] ?? []
            var times: [Int64] = []
            var values: [Double] = []
            var start = 0
            while start < counts.count {
                let end = min(counts.count, start + group)
                let sum = counts[start..<end].reduce(0) { $0 + Int($1) }
                times.append(Int64(start) * Self.rateBucketNs / 1000)
                values.append(Double(sum) / seconds)
                start = end
            }
            return TimelineSeries(name: source, timesUs: times, values: values)
        }
        return TimelinePlot(title: "ingest rate per stream (datapoints)", unit: "events/s", series: series)
    }

    /// The latency of each correlated pair (a point at its request's time, the time to its answer),
    /// one series per correlation; unanswered requests are left out and counted in the series' name.
    public var latencyPlot: TimelinePlot? {
        let pairs = correlations.pairs
        guard !pairs.isEmpty else { return nil }
        var names: [String] = []
        var byName: [String: [CorrelatedPair]] = [:]
        for pair in pairs {
            let name = "\(pair.core): \(pair.name)"
            if byName[name] == nil { names.append(name) }
            byName[name, default: []].append(pair)
        }
        let series = names.map { name -> TimelineSeries in
            let list = byName[name] ?? []
            let answered = list.filter { $0.latencyNs != nil }
            let unanswered = list.count - answered.count
            return TimelineSeries(
                name: name + " (\(answered.count) pairs" + (unanswered > 0 ? ", \(unanswered) unanswered)" : ")"),
                timesUs: answered.map { $0.startNs / 1000 }, values: answered.map { Double($0.latencyNs!) / 1e6 }, points: true)
        }
        return TimelinePlot(title: "latency of correlated pairs (request → answer)", unit: "ms", series: series)
    }

    /// Transfer progress (`done` / `total`, in percent) of each correlated request that reports
    /// it: a line per request while there are at most 12, else points per correlation.
    public var progressPlot: TimelinePlot? {
        let progress = correlations.progress
        guard !progress.isEmpty else { return nil }
        var keys: [String] = []
        var byKey: [String: [CorrelatedProgress]] = [:]
        for point in progress {
            let key = "\(point.core): \(point.name) \(point.key)"
            if byKey[key] == nil { keys.append(key) }
            byKey[key, default: []].append(point)
        }
        func percent(_ p: CorrelatedProgress) -> Double { p.total > 0 ? 100 * p.done / p.total : 0 }
        if keys.count <= 12 {
            return TimelinePlot(title: "transfer progress (sent / total)", unit: "%", series: keys.map { key in
                let points = byKey[key] ?? []
                return TimelineSeries(name: key, timesUs: points.map { $0.timeNs / 1000 }, values: points.map(percent))
            })
        }
        var names: [String] = []
        var byName: [String: [CorrelatedProgress]] = [:]
        for point in progress {
            let name = "\(point.core): \(point.name)"
            if byName[name] == nil { names.append(name) }
            byName[name, default: []].append(point)
        }
        return TimelinePlot(title: "transfer progress (sent / total)", unit: "%", series: names.map { name in
            let points = byName[name] ?? []
            return TimelineSeries(name: "\(name) (\(keys.count) requests)", timesUs: points.map { $0.timeNs / 1000 },
                                  values: points.map(percent), points: true)
        })
    }

    /// A trace event's fields as `key=value`, keys sorted, each value at most 160 characters.
    static func detail(of event: TraceEvent) -> String {
        let fields = event.fields
        var text = "\(event.core) \(event.event)"
        for key in fields.keys.sorted() {
            var value = fields[key]!.compactText
            if value.count > 160 { value = String(value.prefix(160)) + "…" }
            text += "  \(key)=\(value)"
        }
        return text
    }
}
