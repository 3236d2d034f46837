import BehaviourTrace

/// Something a core promises whatever the link does to it: what a fault sweep checks every
/// variant against (docs/faults.md). Each integration states its promises once
/// (``CoreIntegration/promises``); a set's own expectations are not applied to variants, because
/// a lost ack is meant to change the outcome.
public struct CorePromise: Sendable, Hashable {
    /// One sentence: `every send completes exactly once`.
    public var name: String
    /// How it is checked.
    public var rule: Rule

    /// A promise.
    public init(_ name: String, _ rule: Rule) {
        self.name = name
        self.rule = rule
    }

    /// The checks a promise can make on a variant's trace, some against the trace of the set
    /// replayed without faults (the *plain* run).
    public enum Rule: Sendable, Hashable {
        /// Every request of `correlation` (the integration's ``CoreIntegration/correlations``, by
        /// name) gets exactly one of its ends: none twice, and none missing when the run is over,
        /// unless one of the events `unlessAfter` names came after the request (what the core
        /// documents as leaving it waiting: a user info queued for a watch the phone switched away
        /// from waits for that watch).
        case exactlyOneEnd(correlation: String, unlessAfter: [TraceName] = [])
        /// The progress of each request of `correlation` never goes back.
        case progressNeverGoesBack(correlation: String)
        /// The `key` values of `event` arrive exactly as in the plain run: each once, in the same
        /// order (user infos, files).
        case exactlyOnceInOrder(event: TraceName, key: String)
        /// The last `event`'s `field` equals the plain run's last (the latest context wins).
        case lastAsInPlainRun(event: TraceName, field: String)
        /// `field` of `event` never decreases.
        case neverDecreases(event: TraceName, field: String)
        /// Every `event` of the variant is one of the plain run's (compared by `identity`
        /// fields), and every one of the plain run's is in the variant unless the frame that made
        /// it was lost to a fault: no point invented, none lost beyond what was dropped.
        case preservedExceptDropped(event: TraceName, identity: [String])
    }
}

/// A promise broken by one variant: which, and the first evidence.
public struct BrokenPromise: Sendable, Hashable, CustomStringConvertible {
    /// The promise's name.
    public var promise: String
    /// The core that made it.
    public var core: String
    /// What happened, naming events by their virtual time.
    public var detail: String

    /// A broken promise: its name, its core, and what happened.
    public init(promise: String, core: String, detail: String) {
        self.promise = promise
        self.core = core
        self.detail = detail
    }

    /// `messaging: every send completes exactly once — send 2 completed twice (…)`.
    public var description: String { "\(core): \(promise) — \(detail)" }
}

/// The plain run's facts a variant is compared with: per promise, what it saw; and which frame
/// made each event of a ``CorePromise/Rule/preservedExceptDropped(event:identity:)`` promise.
public struct PlainRunFacts: Sendable {
    var sequences: [String: [String]] = [:]
    var lastValues: [String: String] = [:]
    /// Identity text → how many times the plain run made it, per frame.
    var preserved: [String: [Int: [String: Int]]] = [:]

    /// No facts: a variant checked against them meets only the promises that need none.
    public init() {}

    init(sequences: [String: [String]], lastValues: [String: String], preserved: [String: [Int: [String: Int]]]) {
        self.sequences = sequences
        self.lastValues = lastValues
        self.preserved = preserved
    }
}

/// Checks a stream of trace events against promises, as a variant's replay streams.
public struct PromiseChecker: Sendable {
    let promises: [(core: TraceName, promise: CorePromise)]
    let correlations: [TraceName: [TraceCorrelation]]
    let plain: PlainRunFacts?
    /// The frame being fed when an event was made (the plain run records it; a variant uses it for
    /// nothing).
    var currentFrame = 0

    private var starts: [String: [String: Int]] = [:]
    /// Requests an `unlessAfter` event followed, by promise.
    private var excused: [String: Set<String>] = [:]
    private var ends: [String: [String: Int]] = [:]
    private var progress: [String: [String: Double]] = [:]
    private var sequences: [String: [String]] = [:]
    private var lastValues: [String: String] = [:]
    private var highest: [String: (value: Double, timeNs: Int64)] = [:]
    private var preserved: [String: [Int: [String: Int]]] = [:]
    /// Per promise, for each identity, how many more of its events this run made than the plain
    /// run did: sparse (an identity whose counts agree has no entry), so a fault sweep's copies of
    /// it cost little. The plain run's counts are taken off frame by frame as a forked run reads
    /// its frames (``startTakingOffAsItReads()``), else all at once at the ``verdict()``.
    private var preservedDifference: [String: [String: Int]] = [:]
    /// Whether the plain run's counts are taken off as frames are read (``reading(frame:)``).
    private var takesOffAsItReads = false
    private var broken: [BrokenPromise] = []
    private var droppedFrames: Set<Int> = []

    /// A checker of `promises` (each with its core) with the cores' correlations; `plain` is the
    /// plain run's facts, `nil` while recording them.
    public init(promises: [(core: TraceName, promise: CorePromise)], correlations: [TraceName: [TraceCorrelation]], plain: PlainRunFacts?) {
        self.promises = promises
        self.correlations = correlations
        self.plain = plain
    }

    private func correlation(_ core: TraceName, _ name: String) -> TraceCorrelation? {
        correlations[core]?.first { $0.name == name }
    }

    private mutating func breakPromise(_ index: Int, _ detail: String) {
        let (core, promise) = promises[index]
        guard !broken.contains(where: { $0.core == core.text && $0.promise == promise.name }) else { return }
        broken.append(BrokenPromise(promise: promise.name, core: core.text, detail: detail))
    }

    private static func identity(_ event: TraceEvent, _ fields: [String]) -> String {
        TraceCorrelation.joinedKeyText(count: fields.count) { event.field(fields[$0]) }
    }

    /// The next event of the run.
    public mutating func observe(_ event: TraceEvent) {
        if event.core == FaultInjector.core, event.event == FaultInjector.faultInjected, case .string("dropped")? = event.field("action"),
           case .int(let frame)? = event.field("frame") {
            droppedFrames.insert(Int(frame))
            return
        }
        for (index, entry) in promises.enumerated() where entry.core == event.core {
            let slot = "\(index)"
            switch entry.promise.rule {
            case .exactlyOneEnd(let name, let unlessAfter):
                guard let c = correlation(entry.core, name) else { continue }
                if unlessAfter.contains(event.event) {
                    for (key, _) in starts[slot] ?? [:] where (ends[slot]?[key] ?? 0) == 0 { excused[slot, default: []].insert(key) }
                    continue
                }
                if c.starts.contains(where: { $0.matches(event) }), let key = event.field(c.key).map(TraceCorrelation.keyText) {
                    starts[slot, default: [:]][key, default: 0] += 1
                    if starts[slot]?[key] == 2 { breakPromise(index, "\(name) \(key) was requested twice (at \(event.timeNs) ns)") }
                } else if c.ends.contains(where: { $0.matches(event) }), let key = event.field(c.endKey ?? c.key).map(TraceCorrelation.keyText) {
                    ends[slot, default: [:]][key, default: 0] += 1
                    if ends[slot]?[key] == 2 { breakPromise(index, "\(name) \(key) ended twice (the second \(event.event) at \(event.timeNs) ns)") }
                    if starts[slot]?[key] == nil { breakPromise(index, "\(name) \(key) ended (\(event.event) at \(event.timeNs) ns) without having started") }
                }
            case .progressNeverGoesBack(let name):
                guard let c = correlation(entry.core, name), let fields = c.progress, event.event == fields.event,
                      let key = event.field(c.key).map(TraceCorrelation.keyText), let done = event.field(fields.done)?.numberValue else { continue }
                if let before = progress[slot]?[key], done < before {
                    breakPromise(index, "\(name) \(key) went back from \(before) to \(done) at \(event.timeNs) ns")
                }
                progress[slot, default: [:]][key] = done
            case .exactlyOnceInOrder(let name, let key):
                guard event.event == name, let value = event.field(key).map(TraceCorrelation.keyText) else { continue }
                sequences[slot, default: []].append(value)
            case .lastAsInPlainRun(let name, let field):
                guard event.event == name, let value = event.field(field).map(TraceCorrelation.keyText) else { continue }
                lastValues[slot] = value
            case .neverDecreases(let name, let field):
                guard event.event == name, let value = event.field(field)?.numberValue else { continue }
                if let before = highest[slot], value < before.value {
                    breakPromise(index, "\(name).\(field) went from \(before.value) (at \(before.timeNs) ns) back to \(value) at \(event.timeNs) ns")
                }
                if value >= (highest[slot]?.value ?? -.infinity) { highest[slot] = (value, event.timeNs) }
            case .preservedExceptDropped(let name, let fields):
                guard event.event == name else { continue }
                let identity = Self.identity(event, fields)
                if plain == nil {
                    preserved[slot, default: [:]][currentFrame, default: [:]][identity, default: 0] += 1
                } else {
                    Self.add(1, to: identity, in: &preservedDifference[slot, default: [:]])
                }
            }
        }
    }

    /// This checker at the end of its run, composed without replaying the rest: at some point its
    /// run was in the same state as the source run's (``ReplayEngine/hasSameFuture(as:state:otherState:)``),
    /// whose checker was then `shadow`; `sourceEnd` is the source run's checker at its end. The rest
    /// of this run is the rest of the source run, event for event, so what the source run's checker
    /// saw after `shadow` is what this one would have seen.
    ///
    /// Exact, or `nil`: whatever decides what an event does to a checker (requests open and ended,
    /// progress, the highest value, the last value) must be the same as `shadow`'s, and every
    /// promise `shadow` has broken this one must have broken too (the source run's later breaks are
    /// then this one's, but for those it already has). What only adds up (the events a sequence
    /// promise collects, the counts of preserved events) takes the source run's additions.
    func composed(shadow: PromiseChecker, sourceEnd: PromiseChecker) -> PromiseChecker? {
        guard plain != nil, starts == shadow.starts, ends == shadow.ends, excused == shadow.excused, progress == shadow.progress,
              lastValues == shadow.lastValues, highest.count == shadow.highest.count,
              highest.allSatisfy({ key, value in shadow.highest[key].map { $0.value == value.value && $0.timeNs == value.timeNs } ?? false }),
              sourceEnd.droppedFrames == shadow.droppedFrames,
              shadow.broken.allSatisfy({ b in broken.contains { $0.core == b.core && $0.promise == b.promise } }),
              sourceEnd.broken.count >= shadow.broken.count
        else { return nil }
        var end = self
        end.starts = sourceEnd.starts
        end.ends = sourceEnd.ends
        end.excused = sourceEnd.excused
        end.progress = sourceEnd.progress
        end.lastValues = sourceEnd.lastValues
        end.highest = sourceEnd.highest
        for (slot, all) in sourceEnd.sequences {
            let before = shadow.sequences[slot]?.count ?? 0
            guard all.count >= before else { return nil }
            end.sequences[slot, default: []] += all[before...]
        }
        // What the source run made after that point, less the plain run's: its difference at
        // its end less its difference then (the same frames having been read by both runs).
        guard takesOffAsItReads, shadow.takesOffAsItReads, sourceEnd.takesOffAsItReads else { return nil }
        for (slot, counts) in sourceEnd.preservedDifference {
            for (identity, count) in counts { Self.add(count, to: identity, in: &end.preservedDifference[slot, default: [:]]) }
        }
        for (slot, counts) in shadow.preservedDifference {
            for (identity, count) in counts { Self.add(-count, to: identity, in: &end.preservedDifference[slot, default: [:]]) }
        }
        for later in sourceEnd.broken[shadow.broken.count...]
        where !end.broken.contains(where: { $0.core == later.core && $0.promise == later.promise }) {
            end.broken.append(later)
        }
        return end
    }

    /// Adds `count` to `identity`'s entry of a sparse difference, dropping the entry at zero.
    private static func add(_ count: Int, to identity: String, in difference: inout [String: Int]) {
        // One hash of the identity where the entry exists (a sweep's every data point meets the
        // plain run's: an entry made by one side is mostly ended by the other).
        guard count != 0 else { return }
        guard let index = difference.index(forKey: identity) else {
            difference[identity] = count
            return
        }
        let sum = difference.values[index] + count
        if sum == 0 { difference.remove(at: index) } else { difference.values[index] = sum }
    }

    /// From now on, the plain run's preserved events are taken off frame by frame as the run reads
    /// each frame (``reading(frame:)``), starting with those it made before its first frame: what
    /// a fault sweep's source run and its forks do, to keep ``preservedDifference`` small.
    mutating func startTakingOffAsItReads() {
        guard let plain, !takesOffAsItReads else { return }
        takesOffAsItReads = true
        for (slot, frames) in plain.preserved {
            for (identity, count) in frames[0] ?? [:] { Self.add(-count, to: identity, in: &preservedDifference[slot, default: [:]]) }
        }
    }

    /// The run reads frame `number`: the plain run's preserved events of that frame are taken off.
    mutating func reading(frame number: Int) {
        guard takesOffAsItReads, let plain else { return }
        for (slot, frames) in plain.preserved {
            guard let counts = frames[number] else { continue }
            for (identity, count) in counts { Self.add(-count, to: identity, in: &preservedDifference[slot, default: [:]]) }
        }
    }

    /// The plain run's facts, after its last event.
    public func facts() -> PlainRunFacts {
        PlainRunFacts(sequences: sequences, lastValues: lastValues, preserved: preserved)
    }

    /// The promises broken, after the variant's last event.
    public mutating func verdict() -> [BrokenPromise] {
        for (index, entry) in promises.enumerated() {
            let slot = "\(index)"
            switch entry.promise.rule {
            case .exactlyOneEnd(let name, _):
                for (key, _) in (starts[slot] ?? [:]).sorted(by: { $0.key < $1.key })
                where (ends[slot]?[key] ?? 0) == 0 && !(excused[slot]?.contains(key) ?? false) {
                    breakPromise(index, "\(name) \(key) never ended")
                    break
                }
            case .exactlyOnceInOrder(let name, _):
                guard let plain else { continue }
                let expected = plain.sequences[slot] ?? []
                let got = sequences[slot] ?? []
                if got != expected {
                    breakPromise(index, "\(name) arrived as [\(got.joined(separator: ", "))] where the run without faults had [\(expected.joined(separator: ", "))]")
                }
            case .lastAsInPlainRun(let name, let field):
                guard let plain, plain.lastValues[slot] != lastValues[slot] else { continue }
                breakPromise(index, "the last \(name) has \(field) \(lastValues[slot] ?? "none") where the run without faults ended with \(plain.lastValues[slot] ?? "none")")
            case .preservedExceptDropped(let name, _):
                guard let plain else { continue }
                var difference = preservedDifference[slot] ?? [:]
                if !takesOffAsItReads {
                    for (_, counts) in plain.preserved[slot] ?? [:] {
                        for (identity, count) in counts { Self.add(-count, to: identity, in: &difference) }
                    }
                }
                // The plain run's events of a dropped frame may be missing.
                var mayLack: [String: Int] = [:]
                for frame in droppedFrames {
                    for (identity, count) in plain.preserved[slot]?[frame] ?? [:] { mayLack[identity, default: 0] += count }
                }
                let identities = difference.keys.sorted()
                if let invented = identities.first(where: { difference[$0, default: 0] > 0 }) {
                    breakPromise(index, "a \(name) the run without faults never made: \(invented)")
                } else if let lost = identities.first(where: { difference[$0, default: 0] < -mayLack[$0, default: 0] }) {
                    breakPromise(index, "a \(name) of a frame that was not dropped is missing: \(lost)")
                }
            case .progressNeverGoesBack, .neverDecreases:
                continue
            }
        }
        return broken
    }
}

extension TraceValue {
    /// The value as a number, when it is one.
    var numberValue: Double? {
        switch self {
        case .int(let i): Double(i)
        case .double(let d): d
        default: nil
        }
    }
}
