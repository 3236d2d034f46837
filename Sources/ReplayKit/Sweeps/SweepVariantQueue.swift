import BehaviourTrace
import Foundation

/// A sweep's variants handed out to parallel runners and their results gathered, in point order:
/// what ``FaultSweep/run(_:kind:options:only:settle:forking:part:budget:parallelism:progress:)``
/// and a tool's own runners (worker processes) share. It keeps the sweep's ``SweepProgress`` and,
/// with a time budget, stops handing out variants when the time is up.
///
/// `@unchecked Sendable`: every `var` is read and written under `lock` only; the `let`s never
/// change after `init`.
public final class SweepVariantQueue: @unchecked Sendable {
    private let lock = NSLock()
    private var variants: [SweepVariant?]
    private let order: [Int]
    private let costs: [Int: Double]
    private var next = 0
    private var finished = 0
    private var tally: SweepProgress
    private let startedNs: UInt64
    private let deadlineNs: UInt64?
    private var ranOutOfTime = false

    /// A queue of `count` variants, none handed out yet, handed out in point order.
    public convenience init(count: Int) { self.init(order: Array(0..<count)) }

    /// A queue handing out the variants in `order` (indices into the plan's points, each once:
    /// ``SweepPlan/executionOrder``), each of estimated cost `cost(index)` (for the time left),
    /// and none after `timeLimit` from now.
    public init(order: [Int], cost: (Int) -> Double = { _ in 1 }, timeLimit: Duration? = nil) {
        self.order = order
        variants = Array(repeating: nil, count: (order.max() ?? -1) + 1)
        let costs = Dictionary(uniqueKeysWithValues: order.map { ($0, cost($0)) })
        self.costs = costs
        tally = SweepProgress(total: order.count, cost: costs.values.reduce(0, +),
                              budgetSeconds: timeLimit.map { Double($0.replayNanoseconds) / 1e9 })
        let started = DispatchTime.now().uptimeNanoseconds
        startedNs = started
        deadlineNs = timeLimit.map { started &+ UInt64(max(0, $0.replayNanoseconds)) }
    }

    /// The queue for `plan`'s variants of `part` within `budget`.
    public convenience init(plan: SweepPlan, part: SweepPart?, budget: SweepBudget?) {
        var limit: Duration?
        if case .time(let time) = budget { limit = time }
        self.init(order: plan.executionOrder(of: part, budget: budget), cost: plan.estimatedCost(of:), timeLimit: limit)
    }

    /// The next variant's index to run, or `nil` when every one has been handed out or the time
    /// budget is spent.
    public func take() -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard next < order.count else { return nil }
        if let deadlineNs, DispatchTime.now().uptimeNanoseconds >= deadlineNs {
            ranOutOfTime = true
            return nil
        }
        next += 1
        return order[next - 1]
    }

    /// Variant `index`'s result.
    public func set(_ index: Int, _ variant: SweepVariant) {
        lock.lock()
        variants[index] = variant
        finished += 1
        tally.record(variant, cost: costs[index] ?? 1)
        lock.unlock()
    }

    /// How many variants it hands out.
    public var count: Int { order.count }

    /// How many results are in.
    public var done: Int {
        lock.lock()
        defer { lock.unlock() }
        return finished
    }

    /// Where the sweep is now.
    public var progress: SweepProgress {
        lock.lock()
        defer { lock.unlock() }
        var now = tally
        now.elapsedSeconds = Double(DispatchTime.now().uptimeNanoseconds - startedNs) / 1e9
        return now
    }

    /// Variant `index`'s result, if it is in.
    public func result(at index: Int) -> SweepVariant? {
        lock.lock()
        defer { lock.unlock() }
        return variants.indices.contains(index) ? variants[index] : nil
    }

    /// Every result in, in point order.
    public var all: [SweepVariant] {
        lock.lock()
        defer { lock.unlock() }
        return variants.compactMap { $0 }
    }

    /// The variants of its order that have no result: those the time budget left out (and, were
    /// a runner to stop early, its own), in point order.
    public var notRun: [Int] {
        lock.lock()
        defer { lock.unlock() }
        return order.filter { variants[$0] == nil }.sorted()
    }
}
