import CoreRandom
import Foundation

/// Which fault schedules a search tries beyond a sweep's single faults (`--search`,
/// docs/faults.md, "Searching beyond single faults"). Every schedule is made of the sweep's kind
/// of fault (`--sweep drop|delay=D|disconnect[=R]`) at the sweep's points (its peer frames).
public enum SweepSearch: Sendable, Hashable, CustomStringConvertible {
    /// Every pair of points at most `window` points apart (`pairs`, `pairs:window=16`): a lost
    /// frame and its retry, a lost request and its answer.
    case pairs(window: Int)
    /// `count` pairs drawn at random from every pair of points, however far apart
    /// (`pairs:sample=500:seed=3`).
    case samplePairs(count: Int, seed: UInt64)
    /// `count` random schedules of one to ``maxRandomFaults`` faults at random points
    /// (`random:200:seed=7`); with `delay=D`, each delay one of D/8, D/4, D/2 and D.
    case random(count: Int, seed: UInt64)

    /// How far apart, in points, `pairs` looks unless told.
    public static let defaultWindow = 8
    /// The most faults a random schedule has.
    public static let maxRandomFaults = 4

    /// `pairs`, `pairs:window=W`, `pairs:sample=N[:seed=S]`, `random:N[:seed=S]` (seed 1 unless
    /// given); `nil` for anything else.
    public init?(_ text: String) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
        guard let name = parts.first else { return nil }
        var rest = Array(parts.dropFirst())
        var count: Int?
        if name == "random", let first = rest.first, let n = Int(first) {
            count = n
            rest.removeFirst()
        }
        var values: [String: String] = [:]
        for part in rest {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2, values[pair[0]] == nil else { return nil }
            values[pair[0]] = pair[1]
        }
        func number(_ key: String) -> Int?? {
            guard let text = values.removeValue(forKey: key) else { return .some(nil) }
            guard let n = Int(text), n > 0 else { return nil }
            return .some(n)
        }
        guard let seedValue = number("seed") else { return nil }
        let seed = UInt64(seedValue ?? 1)
        switch name {
        case "pairs":
            guard let window = number("window"), let sample = number("sample"), values.isEmpty else { return nil }
            switch (window, sample) {
            case (let window, nil): self = .pairs(window: window ?? Self.defaultWindow)
            case (nil, let sample?): self = .samplePairs(count: sample, seed: seed)
            default: return nil
            }
            if case .pairs = self, seedValue != nil { return nil }
        case "random":
            guard let count, count > 0, values.isEmpty else { return nil }
            self = .random(count: count, seed: seed)
        default:
            return nil
        }
    }

    /// As `--search` takes it: `pairs:window=8`, `pairs:sample=500:seed=3`, `random:200:seed=7`.
    public var description: String {
        switch self {
        case .pairs(let window): "pairs:window=\(window)"
        case .samplePairs(let count, let seed): "pairs:sample=\(count):seed=\(seed)"
        case .random(let count, let seed): "random:\(count):seed=\(seed)"
        }
    }

    /// What it covers, for the report.
    var coverage: String {
        switch self {
        case .pairs(let window): "every pair of peer frames at most \(window) apart"
        case .samplePairs(let count, _): "\(count) pairs of peer frames drawn at random"
        case .random(let count, _): "\(count) random schedules of 1 to \(Self.maxRandomFaults) faults"
        }
    }
}

/// One fault of a schedule, at one of the sweep's points.
public struct ScheduledFault: Sendable, Hashable {
    /// The point (an index into ``SweepPlan/points``).
    public var point: Int
    /// The fault.
    public var fault: Fault

    /// `fault` at point `point`.
    public init(point: Int, fault: Fault) {
        self.point = point
        self.fault = fault
    }
}

/// A failure a search found, shrunk (``ScheduleShrinker``): the smallest schedule it got to that
/// still breaks the promise the first failing schedule broke.
public struct SearchFinding: Sendable, Hashable {
    /// The shrunk schedule's variant: its faults (the held ending included), what it broke.
    public var variant: SweepVariant
    /// The shrunk schedule.
    public var schedule: [Fault]
    /// The schedule the search tried that failed first, before shrinking.
    public var found: [Fault]
    /// Other failing schedules that broke the same promise and hold this one's faults, or shrank
    /// to it.
    public var alike = 0
    /// Replays the shrinking took.
    public var shrinkReplays = 0
    /// Whether the shrinking finished: then no fault of ``schedule`` can be left out, so a
    /// schedule of two faults is a failure neither causes alone.
    public var minimal = false
    /// ``schedule`` with its points.
    var shrunk: [ScheduledFault] = []
}

/// What a search did: how many schedules it ran, which failed, and each failure shrunk.
public struct SearchResult: Sendable {
    /// The set's name.
    public var set: String
    /// The fault kind.
    public var kind: SweepKind
    /// The search.
    public var search: SweepSearch
    /// The promises checked, with their cores.
    public var promises: [String]
    /// Schedules the search made, and those it ran (fewer under a budget).
    public var schedules: Int
    /// Schedules run.
    public var ran: Int
    /// Schedules that failed.
    public var failed: Int
    /// Schedules run that were copied from the run without faults, and those of them that
    /// stopped early, recovered.
    public var forked = 0
    public var stoppedEarly = 0
    /// The failures, shrunk, in the order they were found.
    public var findings: [SearchFinding]
    /// Failing schedules not shrunk, past ``FaultSearch/maxFindings``.
    public var unshrunk: Int
    /// The budget, if any.
    public var budget: SweepBudget?
    /// The recorded ends held back in every run (``SweepResult/heldEnding``).
    public var heldEnding: [Fault]
    /// Wall time, plan included.
    public var elapsedSeconds: Double
}

/// Shrinks a failing fault schedule to a minimal one that still breaks the same promise: fewest
/// faults, then each as early as it can be, then each delay (or outage) as short as it can be.
/// Greedy and deterministic: each step replays a smaller candidate and keeps it if it still
/// breaks the promise; steps repeat until none helps or ``maxReplays`` are spent. The earliest
/// point and the shortest delay are found by bisection, which assumes nothing: what it keeps
/// always failed.
public struct ScheduleShrinker {
    /// The most replays one shrinking takes.
    public static let maxReplays = 120
    /// The promise to keep broken: the first the schedule broke (`core`, `promise`), or `nil` for
    /// a replay that ended in an error.
    let target: (core: String, promise: String)?
    let plan: SweepPlan
    /// The smallest failing schedule so far, and its variant.
    public private(set) var schedule: [ScheduledFault]
    public private(set) var variant: SweepVariant
    /// Replays taken.
    public private(set) var replays = 0
    /// Whether shrinking ended because no step helped (not because the replays were spent): then
    /// removing any one fault of ``schedule`` leaves the promise kept.
    public private(set) var minimal = false

    /// Shrinks `schedule`, whose replay `variant` failed.
    public init(_ schedule: [ScheduledFault], failed variant: SweepVariant, plan: SweepPlan) {
        self.schedule = schedule
        self.variant = variant
        self.plan = plan
        target = variant.broken.first.map { ($0.core, $0.promise) }
    }

    /// Whether `variant` breaks the promise being kept broken.
    public func breaksTheSamePromise(_ variant: SweepVariant) -> Bool {
        guard let target else { return variant.error != nil }
        return variant.broken.contains { $0.core == target.core && $0.promise == target.promise }
    }

    /// Shrinks with `replay` running a candidate schedule.
    public mutating func shrink(replay: ([ScheduledFault]) -> SweepVariant) {
        var changed = true
        while changed, replays < Self.maxReplays {
            changed = false
            // Fewest faults.
            var i = schedule.count - 1
            while i >= 0, schedule.count > 1, replays < Self.maxReplays {
                var candidate = schedule
                candidate.remove(at: i)
                if keep(candidate, replay) { changed = true }
                i = min(i, schedule.count) - 1
            }
            // Earliest points: each fault as early as it can go, after the one before it.
            for i in schedule.indices where replays < Self.maxReplays {
                var low = i == 0 ? 0 : schedule[i - 1].point + 1
                var high = schedule[i].point
                while low < high, replays < Self.maxReplays {
                    let middle = (low + high) / 2
                    var candidate = schedule
                    candidate[i] = ScheduledFault(point: middle, fault: plan.moved(schedule[i].fault, to: middle))
                    if keep(candidate, replay) { high = middle; changed = true } else { low = middle + 1 }
                }
            }
            // Smallest delays (and shortest outages), to the millisecond.
            for i in schedule.indices where replays < Self.maxReplays {
                guard var high = ScheduleShrinker.milliseconds(of: schedule[i].fault) else { continue }
                var low = 1
                while low < high, replays < Self.maxReplays {
                    let middle = (low + high) / 2
                    var candidate = schedule
                    candidate[i].fault = ScheduleShrinker.fault(schedule[i].fault, milliseconds: middle)
                    if keep(candidate, replay) { high = middle; changed = true } else { low = middle + 1 }
                }
            }
            if !changed { minimal = true }
        }
    }

    /// Replays `candidate` and keeps it when it still breaks the promise.
    private mutating func keep(_ candidate: [ScheduledFault], _ replay: ([ScheduledFault]) -> SweepVariant) -> Bool {
        replays += 1
        let result = replay(candidate)
        guard breaksTheSamePromise(result) else { return false }
        schedule = candidate
        variant = result
        return true
    }

    /// A delay's length, or an outage's, in whole milliseconds; `nil` for other faults.
    static func milliseconds(of fault: Fault) -> Int? {
        switch fault {
        case .delay(_, let by): Int(by.replayNanoseconds / 1_000_000)
        case .disconnect(_, let again?): Int(again.replayNanoseconds / 1_000_000)
        default: nil
        }
    }

    /// `fault` with its delay or outage `milliseconds` long.
    static func fault(_ fault: Fault, milliseconds: Int) -> Fault {
        switch fault {
        case .delay(let selector, _): .delay(selector, by: .milliseconds(milliseconds))
        case .disconnect(let at, _?): .disconnect(at: at, reconnectAfter: .milliseconds(milliseconds))
        default: fault
        }
    }
}

extension SweepPlan {
    /// `fault` (of this sweep's kind) moved to point `index`, its delay or outage kept.
    func moved(_ fault: Fault, to index: Int) -> Fault {
        let point = points[index]
        switch fault {
        case .delay(_, let by): return .delay(FrameSelector(frames: point.frame...point.frame), by: by)
        case .disconnect(_, let again): return .disconnect(at: point.time, reconnectAfter: again)
        default: return kind.fault(frame: point.frame, at: point.time)
        }
    }

    /// The schedules `search` tries, in a fixed order (the same on every run and in every process).
    public func schedules(for search: SweepSearch) -> [[ScheduledFault]] {
        let n = points.count
        func at(_ index: Int) -> ScheduledFault { ScheduledFault(point: index, fault: fault(at: index)) }
        switch search {
        case .pairs(let window):
            var pairs: [[ScheduledFault]] = []
            for i in 0..<n {
                for j in (i + 1)..<min(n, i + window + 1) { pairs.append([at(i), at(j)]) }
            }
            return pairs
        case .samplePairs(let count, let seed):
            let all = n * (n - 1) / 2
            guard count < all else { return schedules(for: .pairs(window: n)) }
            var random = SeededRandom(seed: seed)
            var seen = Set<[Int]>()
            var pairs: [[ScheduledFault]] = []
            while pairs.count < count {
                let i = Int.random(in: 0..<n, using: &random)
                let j = Int.random(in: 0..<n, using: &random)
                guard i != j, seen.insert([min(i, j), max(i, j)]).inserted else { continue }
                pairs.append([at(min(i, j)), at(max(i, j))])
            }
            return pairs
        case .random(let count, let seed):
            guard n > 0 else { return [] }
            var random = SeededRandom(seed: seed)
            // In order of their first fault: a runner's run without faults then mostly moves forward.
            let drawn = (0..<count).map { _ in
                let faults = Int.random(in: 1...min(SweepSearch.maxRandomFaults, n), using: &random)
                var chosen = Set<Int>()
                while chosen.count < faults { chosen.insert(Int.random(in: 0..<n, using: &random)) }
                return chosen.sorted().map { index in
                    var scheduled = at(index)
                    if let full = ScheduleShrinker.milliseconds(of: scheduled.fault) {
                        // One of D/8, D/4, D/2 and D: a late frame is not always very late.
                        let share = [8, 4, 2, 1][Int.random(in: 0..<4, using: &random)]
                        scheduled.fault = ScheduleShrinker.fault(scheduled.fault, milliseconds: max(1, full / share))
                    }
                    return scheduled
                }
            }
            return drawn.enumerated().sorted { ($0.element[0].point, $0.offset) < ($1.element[0].point, $1.offset) }.map(\.element)
        }
    }

    /// `faults` as a schedule at this plan's points; `nil` when one of them is at none (not a
    /// fault this sweep makes).
    public func scheduled(_ faults: [Fault]) -> [ScheduledFault]? {
        var scheduled: [ScheduledFault] = []
        for fault in faults {
            let index: Int?
            switch fault {
            case .drop(let selector), .delay(let selector, _):
                index = selector.frames.flatMap { frames in frames.count == 1 ? points.firstIndex { $0.frame == frames.lowerBound } : nil }
            case .disconnect(let at, _):
                index = points.firstIndex { $0.time == at }
            default:
                index = nil
            }
            guard let index else { return nil }
            scheduled.append(ScheduledFault(point: index, fault: fault))
        }
        return scheduled
    }

    /// `schedule` replayed from the first frame and checked, in this process.
    public func variant(schedule faults: [Fault]) -> SweepVariant {
        guard let first = faults.first else {
            return SweepVariant(frame: 0, fault: FaultSweep.placeholder, faults: heldEnding, broken: [], error: "an empty fault schedule")
        }
        return FaultSweep.variant(set, fault: first, held: Array(faults.dropFirst()) + heldEnding, frame: firstFrame(of: faults),
                                  options: options, promises: promises, correlations: correlations, facts: facts)
    }

    /// The variant of `faults` with what a run in another process broke, or its error.
    public func variant(schedule faults: [Fault], broken: [BrokenPromise], error: String?) -> SweepVariant {
        SweepVariant(frame: firstFrame(of: faults), fault: faults.first ?? FaultSweep.placeholder, faults: faults + heldEnding,
                     broken: broken, error: error)
    }

    /// The variant of `faults`, whose replay ended the process that ran it: it broke "no trap".
    public func trapped(schedule faults: [Fault], detail: String) -> SweepVariant {
        variant(schedule: faults, broken: [noTrapBroken(detail)], error: nil)
    }

    /// The frame a schedule's variant is named by: its first fault's.
    func firstFrame(of faults: [Fault]) -> Int {
        switch faults.first {
        case .drop(let selector)?, .delay(let selector, _)?: return selector.frames?.lowerBound ?? 0
        case .disconnect(let at, _)?: return points.first { $0.time >= at }?.frame ?? points.last?.frame ?? 0
        default: return 0
        }
    }
}

/// Searches fault schedules beyond single faults, and shrinks each failure it finds
/// (`tether replay SET --sweep drop --search pairs`; docs/faults.md).
///
/// A schedule is copied from the run without faults where its first fault is first felt, and
/// stops once recovered, as a sweep's variant does (``SweepRunner/variant(schedule:)``). The search itself is independent of where replays run:
/// ``run(_:search:budget:runAll:replayOne:)`` is given them (worker processes in `tether`, this
/// process in ``run(_:search:budget:parallelism:progress:)``).
public enum FaultSearch {
    /// The most distinct failures a search reports shrunk; the rest are counted.
    public static let maxFindings = 10
    /// The most failing schedules a search shrinks (several may shrink to the same failure):
    /// what bounds a search's shrinking to `maxShrinkings` × ``ScheduleShrinker/maxReplays`` replays.
    public static let maxShrinkings = 20

    /// Whether `schedule` holds every fault of `found`: one at the same point, of the same kind,
    /// its delay or outage no shorter.
    static func holds(_ schedule: [ScheduledFault], _ found: [ScheduledFault]) -> Bool {
        found.allSatisfy { wanted in
            schedule.contains { have in
                guard have.point == wanted.point else { return false }
                switch (have.fault, wanted.fault) {
                case (.drop, .drop): return true
                case (.delay, .delay), (.disconnect, .disconnect):
                    return (ScheduleShrinker.milliseconds(of: have.fault) ?? 0) >= (ScheduleShrinker.milliseconds(of: wanted.fault) ?? 0)
                default: return false
                }
            }
        }
    }

    /// Searches `plan`'s set with `search` within `budget`. `runAll` runs the schedules the queue
    /// hands out (their indices into the list it is given) and sets each result in the queue;
    /// `replayOne` replays one schedule (for shrinking).
    public static func run(
        _ plan: SweepPlan, search: SweepSearch, budget: SweepBudget?,
        runAll: (SweepVariantQueue, [[ScheduledFault]]) -> Void, replayOne: ([Fault]) -> SweepVariant
    ) -> SearchResult {
        let schedules = plan.schedules(for: search)
        let order = budget?.selecting(Array(schedules.indices)) ?? Array(schedules.indices)
        var limit: Duration?
        if case .time(let time) = budget { limit = time }
        let queue = SweepVariantQueue(order: order, timeLimit: limit)
        runAll(queue, schedules)
        let ran = order.sorted().compactMap { index in queue.result(at: index).map { (index, $0) } }
        var findings: [SearchFinding] = []
        var unshrunk = 0
        var failed = 0
        var shrinkings = 0
        for (index, variant) in ran where !variant.passed {
            failed += 1
            let faults = schedules[index]
            var shrinker = ScheduleShrinker(faults, failed: variant, plan: plan)
            // A failing schedule that holds a failure already found (its faults at the same
            // points, none smaller) is that failure again, most likely: counted, not shrunk.
            if let i = findings.firstIndex(where: { finding in
                shrinker.breaksTheSamePromise(finding.variant) && Self.holds(faults, finding.shrunk)
            }) {
                findings[i].alike += 1
                continue
            }
            guard shrinkings < maxShrinkings, findings.count < maxFindings else {
                unshrunk += 1
                continue
            }
            shrinkings += 1
            shrinker.shrink { replayOne($0.map(\.fault)) }
            // Shrunk to a failure already found: the same one, reached from elsewhere.
            if let i = findings.firstIndex(where: { $0.shrunk == shrinker.schedule && shrinker.breaksTheSamePromise($0.variant) }) {
                findings[i].alike += 1
                findings[i].shrinkReplays += shrinker.replays
                continue
            }
            findings.append(SearchFinding(variant: shrinker.variant, schedule: shrinker.schedule.map(\.fault), found: faults.map(\.fault),
                                          shrinkReplays: shrinker.replays, minimal: shrinker.minimal, shrunk: shrinker.schedule))
        }
        var result = SearchResult(set: plan.set.name, kind: plan.kind, search: search, promises: plan.promises.map { "\($0.core): \($0.promise.name)" },
                                  schedules: schedules.count, ran: ran.count, failed: failed, findings: findings, unshrunk: unshrunk, budget: budget,
                                  heldEnding: plan.heldEnding, elapsedSeconds: Double(DispatchTime.now().uptimeNanoseconds - plan.startedNs) / 1e9)
        result.forked = ran.filter { $0.1.forkedAt != nil }.count
        result.stoppedEarly = ran.filter { $0.1.stoppedAt != nil }.count
        return result
    }

    /// Searches in this process, on `parallelism` threads: a core that traps ends it (`tether`
    /// runs the schedules in worker processes).
    public static func run(
        _ plan: SweepPlan, search: SweepSearch, budget: SweepBudget? = nil, parallelism: Int = ProcessInfo.processInfo.activeProcessorCount,
        progress: @escaping @Sendable (SweepProgress) -> Void = { _ in }
    ) -> SearchResult {
        // One runner for the shrinking, so its run without faults is made once, not per replay.
        var shrinking = plan.makeRunner(slots: SweepSearch.maxRandomFaults)
        return run(plan, search: search, budget: budget, runAll: { queue, schedules in
            DispatchQueue.concurrentPerform(iterations: max(1, min(parallelism, queue.count))) { _ in
                var runner = plan.makeRunner(slots: SweepSearch.maxRandomFaults)
                while let index = queue.take() {
                    queue.set(index, runner.variant(schedule: schedules[index]))
                    progress(queue.progress)
                }
            }
        }, replayOne: { faults in
            plan.scheduled(faults).map { shrinking.variant(schedule: $0) } ?? plan.variant(schedule: faults)
        })
    }
}
