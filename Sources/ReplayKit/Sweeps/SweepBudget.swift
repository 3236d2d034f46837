import Durations
import Foundation

/// How much of a sweep to run (`tether replay SET --sweep drop --sweep-budget 10m`): at most so
/// long, or at most so many variants. What a budget leaves out is reported, never passed off as
/// covered (``SweepResult/notCovered``).
public enum SweepBudget: Sendable, Hashable, CustomStringConvertible {
    /// Hand out no variant after this long (variants under way finish). The variants are handed
    /// out coarse to fine (``SweepPlan/executionOrder(of:budget:)``), so what ran when the time
    /// is up is spread along the whole capture, not its beginning.
    case time(Duration)
    /// Run at most this many variants, spread evenly along the capture. The same variants on every
    /// run, so the JUnit report is as reproducible as a full sweep's.
    case variants(Int)

    /// `10m`, `90s`, `1h`, `2500ms` (a time, in any unit of ``DurationText``), or a whole number
    /// (variants); `nil` for anything else (a zero or negative budget included).
    public init?(_ text: String) {
        let text = text.trimmingCharacters(in: .whitespaces)
        if !text.isEmpty, text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            guard let count = Int(text), count > 0 else { return nil }
            self = .variants(count)
            return
        }
        // A bare number is a count of variants, so a time takes its unit.
        guard let ns = DurationText.nanoseconds(text, bareNumber: .refused), ns > 0, ns < 1e18 else { return nil }
        self = .time(.nanoseconds(Int64(ns)))
    }

    /// As `--sweep-budget` takes it, in the largest unit that is whole: `10m`, `90s`, `2500ms`, `500`.
    public var description: String {
        switch self {
        case .variants(let count):
            return String(count)
        case .time(let limit):
            let ns = limit.replayNanoseconds
            for (unit, scale) in [("h", Int64(3_600_000_000_000)), ("m", 60_000_000_000), ("s", 1_000_000_000)] where ns % scale == 0 {
                return "\(ns / scale)\(unit)"
            }
            return "\(max(1, ns / 1_000_000))ms"
        }
    }

    /// The limit in seconds, for a time budget.
    var seconds: Double? {
        if case .time(let limit) = self { return Double(limit.replayNanoseconds) / 1e9 }
        return nil
    }
}

extension SweepPlan {
    /// The variants to run (indices into ``points``) and the order to run them in, for the
    /// variants of `part` (all when `nil`) within `budget`:
    /// - without a budget, every variant, by where it forks (``executionOrder``);
    /// - with ``SweepBudget/variants(_:)``, that many spread evenly along the capture, by where
    ///   they fork;
    /// - with ``SweepBudget/time(_:)``, every variant, coarse to fine: every 64th first, then the
    ///   32nd between them, and so on to the odd ones, each round by where it forks. A runner's
    ///   run without faults starts again at each round (one plain replay's cost per round and
    ///   runner), which is what it costs for the time to cut a sweep anywhere and leave the capture
    ///   covered evenly.
    public func executionOrder(of part: SweepPart?, budget: SweepBudget?) -> [Int] {
        let order = executionOrder(of: part)
        guard let budget else { return order }
        let rank = Dictionary(uniqueKeysWithValues: order.enumerated().map { ($0.element, $0.offset) })
        switch budget {
        case .variants:
            return budget.selecting(order.sorted()).sorted { rank[$0]! < rank[$1]! }
        case .time:
            // Each round by where it forks.
            let place = Dictionary(uniqueKeysWithValues: order.sorted().enumerated().map { ($0.element, $0.offset) })
            let round = { (index: Int) in SweepBudget.round(ofPlace: place[index]!) }
            return order.sorted { (round($0), rank[$0]!) < (round($1), rank[$1]!) }
        }
    }
}

extension SweepBudget {
    /// Of `items` (in capture order), those this budget runs, in the order to hand them out:
    /// for a count, that many spread evenly (the k-th of N is the item at k·n/N); for a time,
    /// every item, coarse to fine: every 64th first, then the 32nd between them, and so on down to
    /// every other one, each round in capture order.
    public func selecting<Item>(_ items: [Item]) -> [Item] {
        switch self {
        case .variants(let count):
            guard count < items.count else { return items }
            return (0..<count).map { items[$0 * items.count / count] }
        case .time:
            return items.indices.sorted { (Self.round(ofPlace: $0), $0) < (Self.round(ofPlace: $1), $1) }.map { items[$0] }
        }
    }

    /// The coarse-to-fine round of the item at `place`: 0 for every 64th, 1 for the 32nd between
    /// them, … 6 for the odd places.
    static func round(ofPlace place: Int) -> Int {
        let rounds = 6
        return place == 0 ? 0 : rounds - min(place.trailingZeroBitCount, rounds)
    }
}

/// Where a sweep is: variants done of those to run, how many stopped early and how many failed,
/// and an estimate of the time left. A value, so that whoever shows it (a status line on a
/// terminal, a line a minute in CI) reads one consistent snapshot.
public struct SweepProgress: Sendable, Hashable {
    /// Variants to run (after the budget's selection).
    public var total: Int
    /// Variants done.
    public var done = 0
    /// Of them, those that stopped early, recovered.
    public var stoppedEarly = 0
    /// Of them, those that broke a promise or could not be replayed.
    public var failed = 0
    /// Seconds since the variants started.
    public var elapsedSeconds = 0.0
    /// The time budget in seconds, if there is one.
    public var budgetSeconds: Double?
    /// Estimated cost (frames to replay) of the variants done, and of all to run: the time left is
    /// the time so far scaled by the cost left, so a variant replayed from the first frame weighs
    /// more than one forked near the end.
    var costDone = 0.0
    var costTotal: Double

    /// Nothing done yet of `total` variants costing `cost` in all.
    public init(total: Int, cost: Double, budgetSeconds: Double? = nil) {
        self.total = total
        costTotal = cost
        self.budgetSeconds = budgetSeconds
    }

    /// One more variant done, of estimated cost `cost`.
    public mutating func record(_ variant: SweepVariant, cost: Double) {
        done += 1
        costDone += cost
        if variant.stoppedAt != nil { stoppedEarly += 1 }
        if !variant.passed { failed += 1 }
    }

    /// Seconds left, estimated from the rate so far; no more than the budget leaves; `nil` before
    /// the first variant is done.
    public var remainingSeconds: Double? {
        guard done > 0, costDone > 0 else { return nil }
        var left = done >= total ? 0 : elapsedSeconds * max(0, costTotal - costDone) / costDone
        if let budgetSeconds { left = min(left, max(0, budgetSeconds - elapsedSeconds)) }
        return left
    }

    /// `sweeping plugin-faulty: 412/1213 variants (34%), 120 stopped early, 3 failed; 2m10s, about 4m05s left`;
    /// a search's says `searching` and counts `schedules`.
    public func line(set: String, searching: Bool = false) -> String {
        let percent = total > 0 ? done * 100 / total : 100
        var text = searching
            ? "searching \(set): \(done)/\(total) schedules (\(percent)%), \(failed) failed; "
            : "sweeping \(set): \(done)/\(total) variants (\(percent)%), \(stoppedEarly) stopped early, \(failed) failed; "
            + Self.clockText(elapsedSeconds)
        if let left = remainingSeconds {
            text += ", about \(Self.clockText(left)) left"
            if let budgetSeconds, elapsedSeconds + left >= budgetSeconds - 0.5, done < total { text += " (the budget's end)" }
        }
        return text
    }

    /// `45s`, `4m05s`, `1h02m`: whole seconds under an hour, whole minutes above.
    public static func clockText(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0 else { return "?" }
        let whole = Int(seconds.rounded())
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }
        if whole < 60 { return "\(whole)s" }
        if whole < 3600 { return "\(whole / 60)m\(two(whole % 60))s" }
        let minutes = whole / 60
        return "\(minutes / 60)h\(two(minutes % 60))m"
    }
}

/// When a sweep that is not on a terminal (a CI log) says where it is: the first time a minute has
/// passed, then once a minute, so a long sweep's log shows it alive without a line per variant.
public struct ProgressCadence: Sendable, Hashable {
    /// Seconds between two lines.
    public var interval: Double
    private var next: Double

    /// A line every `interval` seconds, the first after one interval.
    public init(interval: Double = 60) {
        self.interval = interval
        next = interval
    }

    /// Whether a line is due at `elapsed` seconds; when it is, the next is due one interval later
    /// (one interval from now when it fell further behind: never a burst).
    public mutating func due(at elapsed: Double) -> Bool {
        guard elapsed >= next else { return false }
        next += interval
        if next <= elapsed { next = elapsed + interval }
        return true
    }
}
