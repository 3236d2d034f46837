import BehaviourTrace
import CaptureKit
import CaptureSet
import Foundation

/// Which single fault a sweep puts on each peer frame in turn.
public enum SweepKind: Sendable, Hashable, CustomStringConvertible {
    /// `--sweep drop`: the frame is lost.
    case drop
    /// `--sweep delay=6s`: the frame arrives this much later.
    case delay(Duration)
    /// `--sweep disconnect`: the link drops at the frame's instant (BLE links come back
    /// `reconnectAfter` later, with their recorded setup).
    case disconnect(reconnectAfter: Duration)

    /// Reads `drop`, `delay=6s`, `disconnect` or `disconnect=2s` (the reconnection delay, 1 s by
    /// default).
    public init?(_ text: String) {
        if text == "drop" { self = .drop; return }
        if text == "disconnect" { self = .disconnect(reconnectAfter: .seconds(1)); return }
        if text.hasPrefix("delay="), let fault = try? Fault(parsing: "delay:frame=1:by=\(text.dropFirst(6))"), case .delay(_, let by) = fault {
            self = .delay(by)
            return
        }
        if text.hasPrefix("disconnect="), let fault = try? Fault(parsing: "disconnect:at=0s:reconnect=\(text.dropFirst(11))"),
           case .disconnect(_, let again?) = fault {
            self = .disconnect(reconnectAfter: again)
            return
        }
        return nil
    }

    /// The fault of the variant for peer frame `number` captured at `time`.
    public func fault(frame number: Int, at time: Duration) -> Fault {
        switch self {
        case .drop: .drop(FrameSelector(frames: number...number))
        case .delay(let by): .delay(FrameSelector(frames: number...number), by: by)
        case .disconnect(let again): .disconnect(at: time, reconnectAfter: again)
        }
    }

    /// `drop`, `delay=6s`, `disconnect=1s`.
    public var description: String {
        switch self {
        case .drop: "drop"
        case .delay(let by): "delay=\(FaultText.duration(by))"
        case .disconnect(let again): "disconnect=\(FaultText.duration(again))"
        }
    }
}

/// One variant of a sweep and what it showed.
public struct SweepVariant: Sendable, Hashable {
    /// The peer frame it is about.
    public var frame: Int
    /// Its fault, as `--fault` takes it.
    public var fault: Fault
    /// Every fault the variant ran with: ``fault``, then the sweep's hold on the recorded end
    /// (``SweepResult/heldEnding``), as `--fault` options rerun it alone.
    public var faults: [Fault]
    /// The promises it broke; empty when it passed.
    public var broken: [BrokenPromise]
    /// Why it could not be replayed, if it could not.
    public var error: String?

    /// No promise broken and no error.
    public var passed: Bool { broken.isEmpty && error == nil }
}

/// What a sweep of one set showed.
public struct SweepResult: Sendable {
    /// The set's name.
    public var set: String
    /// The sweep.
    public var kind: SweepKind
    /// The promises checked, with their cores.
    public var promises: [String]
    /// Every variant, in frame order.
    public var variants: [SweepVariant]
    /// Wall time of the whole sweep, plain run included.
    public var elapsedSeconds: Double
    /// The recorded ends of links the sweep held back (the plain run and every variant ran with
    /// them), so that a fault near the end of the capture has the time to be recovered from that
    /// the protocol's timers need: `delay:frame=N:kind=disconnection:by=SETTLE`. Empty when the
    /// capture ends with its links up, or the settle time is zero.
    public var heldEnding: [Fault]

    /// Variants that broke no promise.
    public var passed: Int { variants.filter(\.passed).count }
    /// The others.
    public var failed: Int { variants.count - passed }
}

/// Runs a capture set once per peer frame with one fault on that frame, and checks every variant
/// against the promises of its cores (``CoreIntegration/promises``): `tether replay --sweep`.
///
/// First the set is replayed without faults in responder mode, recording its peer frames, where
/// its links end, and the facts the promises compare with (from a second run with the links'
/// recorded ends held back by the settle time, as every variant's are); then each variant is
/// replayed the same way with its one fault. Variants are independent, so they run in parallel on the machine's cores; the result
/// is the same whatever the parallelism.
public enum FaultSweep {
    /// How long a sweep holds back the recorded end of each link, unless told otherwise: longer
    /// than the session link's 3 s handshake and 2 s retransmission timers together, and the
    /// Connect IQ 5 s transfer timeout.
    public static let defaultSettle: Duration = .seconds(10)

    /// Sweeps `set`. `only` limits the variants to these frame numbers; `progress` is called after
    /// each variant with the count done. `settle` is how long the recorded end of each link is
    /// held back (``SweepResult/heldEnding``); zero ends the links as recorded. The variants run
    /// in this process: a core that traps ends it (`tether replay --sweep` runs them in worker
    /// processes instead, and reports a trap as the variant's broken promise).
    public static func run(
        _ set: LoadedCaptureSet, kind: SweepKind, options: ReplayOptions, only: Set<Int>? = nil, settle: Duration = defaultSettle,
        parallelism: Int = ProcessInfo.processInfo.activeProcessorCount, progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }
    ) throws(ReplayError) -> SweepResult {
        let plan = try self.plan(set, kind: kind, options: options, only: only, settle: settle)
        let results = SweepVariantQueue(count: plan.count)
        let workers = max(1, min(parallelism, plan.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while let index = results.take() {
                results.set(index, plan.variant(at: index))
                progress(results.done, plan.count)
            }
        }
        return plan.result(results.all)
    }

    /// Makes a sweep of `set` ready: replays it without faults (twice when its links end in the
    /// capture) for the peer frames, where the links end, and the facts promises compare with.
    /// `only` limits the variants to these frame numbers.
    public static func plan(
        _ set: LoadedCaptureSet, kind: SweepKind, options: ReplayOptions, only: Set<Int>? = nil, settle: Duration = defaultSettle
    ) throws(ReplayError) -> SweepPlan {
        let started = DispatchTime.now().uptimeNanoseconds
        var plainOptions = options
        plainOptions.faults = []
        plainOptions.frameMatching = options.frameMatching ?? .responder
        let selected = try options.integrations.select(for: set.manifest, manifestPath: set.directory.manifestPath)
        let promises = selected.flatMap { integration in integration.promises.map { (core: integration.name, promise: $0) } }
        let correlations = options.integrations.correlations

        // A pass over the peer frames: what the variants go to, and where the links end.
        var peerFrames: [SweepPlan.Point] = []
        var ending = RecordedEnding()
        // Drops and delays go to what the peer's application sends; a lost ATT response or TCP
        // segment is a lost link (the link layer and TCP retransmit until then), which
        // `disconnect` sweeps. A disconnect goes at every peer frame's instant.
        let everyFrame: Bool
        if case .disconnect = kind { everyFrame = true } else { everyFrame = false }
        var facts = try plainRun(set, options: plainOptions, promises: promises, correlations: correlations) { number, time, frameKind, interface in
            ending.observe(number: number, kind: frameKind, interface: interface)
            if frameKind == .disconnection { return }
            if everyFrame || frameKind.isApplicationData { peerFrames.append(SweepPlan.Point(frame: number, time: time)) }
        }
        let heldEnding = settle > .zero
            ? ending.frames.map { Fault.delay(FrameSelector(frames: $0...$0, kind: .disconnection), by: settle) }
            : []
        if !heldEnding.isEmpty {
            // The facts promises compare with come from a run with the end held like every variant's.
            plainOptions.faults = heldEnding
            facts = try plainRun(set, options: plainOptions, promises: promises, correlations: correlations, peerFrames: nil)
        }
        let points = peerFrames.filter { only?.contains($0.frame) ?? true }
        if let only, points.isEmpty, let low = only.min(), let high = only.max() {
            throw .sweepSelectsNothing(set: set.directory.name, selected: low...high, peerFrames: peerFrames.count,
                                       first: peerFrames.first?.frame, last: peerFrames.last?.frame)
        }
        return SweepPlan(set: set, kind: kind, points: points, heldEnding: heldEnding,
                         options: plainOptions, promises: promises, correlations: correlations, facts: facts, startedNs: started)
    }

    /// Replays `set` without the sweep's faults (only `options.faults`), recording the facts the
    /// promises compare with; `peerFrames` is told each peer frame's number, virtual instant, kind
    /// and interface.
    static func plainRun(
        _ set: LoadedCaptureSet, options: ReplayOptions, promises: [(core: String, promise: CorePromise)],
        correlations: [String: [TraceCorrelation]], peerFrames: ((Int, Duration, PeerFrameKind, Int) -> Void)?
    ) throws(ReplayError) -> PlainRunFacts {
        var checker = PromiseChecker(promises: promises, correlations: correlations, plain: nil)
        _ = try replaySet(set, options: options, peerFrameObserver: peerFrames, frameObserver: { checker.currentFrame = $0 }) {
            checker.observe($0)
        }
        return checker.facts()
    }

    /// One variant replayed and checked.
    static func variant(
        _ set: LoadedCaptureSet, fault: Fault, held: [Fault], frame: Int, options: ReplayOptions,
        promises: [(core: String, promise: CorePromise)], correlations: [String: [TraceCorrelation]], facts: PlainRunFacts
    ) -> SweepVariant {
        var options = options
        options.faults = [fault] + held
        var checker = PromiseChecker(promises: promises, correlations: correlations, plain: facts)
        do throws(ReplayError) {
            _ = try replaySet(set, options: options) { checker.observe($0) }
        } catch {
            return SweepVariant(frame: frame, fault: fault, faults: options.faults, broken: [], error: error.description)
        }
        return SweepVariant(frame: frame, fault: fault, faults: options.faults, broken: checker.verdict(), error: nil)
    }
}

/// A sweep made ready (``FaultSweep/plan(_:kind:options:only:settle:)``): its variants, one per
/// point, and what each is checked against. Running a variant needs nothing else, so variants can
/// run in any order, on any thread, or in another process that made the same plan.
public struct SweepPlan: Sendable {
    /// A peer frame a variant puts its fault on.
    public struct Point: Sendable, Hashable {
        /// The frame's number in the capture.
        public var frame: Int
        /// Its virtual instant (where a `disconnect` goes).
        public var time: Duration
    }

    /// The set swept.
    public let set: LoadedCaptureSet
    /// The sweep.
    public let kind: SweepKind
    /// One point per variant, in frame order.
    public let points: [Point]
    /// The recorded ends held back in every run (``SweepResult/heldEnding``).
    public let heldEnding: [Fault]
    let options: ReplayOptions
    let promises: [(core: String, promise: CorePromise)]
    let correlations: [String: [TraceCorrelation]]
    let facts: PlainRunFacts
    let startedNs: UInt64

    /// How many variants.
    public var count: Int { points.count }

    /// The fault of variant `index`.
    public func fault(at index: Int) -> Fault {
        kind.fault(frame: points[index].frame, at: points[index].time)
    }

    /// Variant `index` replayed and checked, in this process.
    public func variant(at index: Int) -> SweepVariant {
        FaultSweep.variant(set, fault: fault(at: index), held: heldEnding, frame: points[index].frame, options: options,
                           promises: promises, correlations: correlations, facts: facts)
    }

    /// Variant `index` with the promises a run in another process broke (`broken`) or the error
    /// that stopped it.
    public func variant(at index: Int, broken: [BrokenPromise], error: String?) -> SweepVariant {
        let fault = fault(at: index)
        return SweepVariant(frame: points[index].frame, fault: fault, faults: [fault] + heldEnding, broken: broken, error: error)
    }

    /// Variant `index`, whose replay ended the process that ran it (a core trapped): it broke the
    /// promise every core makes, not to trap. `detail` says how the process ended.
    public func trapped(at index: Int, detail: String) -> SweepVariant {
        let cores = Array(Set(promises.map(\.core))).sorted()
        let core = cores.isEmpty ? "replay" : cores.joined(separator: "+")
        return variant(at: index, broken: [BrokenPromise(promise: "no trap", core: core, detail: detail)], error: nil)
    }

    /// The sweep's result from its variants (in point order).
    public func result(_ variants: [SweepVariant]) -> SweepResult {
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - startedNs) / 1e9
        return SweepResult(set: set.name, kind: kind, promises: promises.map { "\($0.core): \($0.promise.name)" },
                           variants: variants, elapsedSeconds: elapsed, heldEnding: heldEnding)
    }
}

/// Where a capture's links end for good: on each BLE interface, the last Disconnection Complete
/// with no peer frame after it (a link that came back is not ended).
struct RecordedEnding {
    private var last: [Int: Int] = [:]

    mutating func observe(number: Int, kind: PeerFrameKind, interface: Int) {
        if kind == .disconnection {
            last[interface] = number
        } else if PeerFrameKind.ble.covers(kind) {
            last[interface] = nil
        }
    }

    /// The frame numbers of the final Disconnection Completes, in capture order.
    var frames: [Int] { last.values.sorted() }
}

/// A sweep's variants handed out to parallel runners and their results gathered, in point order:
/// what ``FaultSweep/run(_:kind:options:only:settle:parallelism:progress:)`` and a tool's own
/// runners (worker processes) share.
public final class SweepVariantQueue: @unchecked Sendable {
    private let lock = NSLock()
    private var variants: [SweepVariant?]
    private var next = 0
    private var finished = 0

    /// A queue of `count` variants, none handed out yet.
    public init(count: Int) { variants = Array(repeating: nil, count: count) }

    /// The next variant's index to run, or `nil` when every one has been handed out.
    public func take() -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard next < variants.count else { return nil }
        next += 1
        return next - 1
    }

    /// Variant `index`'s result.
    public func set(_ index: Int, _ variant: SweepVariant) {
        lock.lock()
        variants[index] = variant
        finished += 1
        lock.unlock()
    }

    /// How many results are in.
    public var done: Int {
        lock.lock()
        defer { lock.unlock() }
        return finished
    }

    /// Every result in, in point order.
    public var all: [SweepVariant] {
        lock.lock()
        defer { lock.unlock() }
        return variants.compactMap { $0 }
    }
}
