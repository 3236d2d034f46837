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
    /// Where it started: the number of frames the run without its fault had handed over when it
    /// was copied (``FaultSweep``); `nil` when it was replayed from the first frame.
    public var forkedAt: Int?
    /// Where it stopped early, recovered: the number of frames handed over when its whole state
    /// was the run without its fault's (``FaultSweep``); `nil` when it ran to the end.
    public var stoppedAt: Int?

    /// No promise broken and no error.
    public var passed: Bool { broken.isEmpty && error == nil }

    /// A variant's result: its frame and fault, every fault it ran with, what it broke or the
    /// error that stopped it, and where it was copied from the run without faults and stopped.
    public init(frame: Int, fault: Fault, faults: [Fault], broken: [BrokenPromise], error: String?, forkedAt: Int? = nil, stoppedAt: Int? = nil) {
        self.frame = frame
        self.fault = fault
        self.faults = faults
        self.broken = broken
        self.error = error
        self.forkedAt = forkedAt
        self.stoppedAt = stoppedAt
    }

    /// What a replay of a variant showed.
    struct Outcome {
        var broken: [BrokenPromise]
        var error: String?
        var stoppedAt: Int?
    }
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
    /// Why no variant was copied from the run without faults, when the sweep was to fork them and
    /// none was (``SweepPlan/forkRefusal``).
    public var forkRefusal: String?
    /// The part of the sweep this result holds, when the sweep was split across jobs
    /// (``SweepPlan/part(_:)``); `nil` for the whole sweep.
    public var part: SweepPart?
    /// The budget the sweep ran within (`--sweep-budget`), if any.
    public var budget: SweepBudget?
    /// The variants the budget left out, in frame order: not run, and neither passed nor failed.
    public var notCovered: [NotCovered] = []

    /// A variant a budget left out.
    public struct NotCovered: Sendable, Hashable {
        /// Its frame.
        public var frame: Int
        /// Its fault.
        public var fault: Fault
    }

    /// Variants copied from the run without faults rather than replayed from the first frame.
    public var forked: Int { variants.filter { $0.forkedAt != nil }.count }
    /// Variants stopped early because they had recovered.
    public var stoppedEarly: Int { variants.filter { $0.stoppedAt != nil }.count }
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
/// replayed the same way with its one fault. Variants are independent, so they run in parallel on
/// the machine's cores; the result is the same whatever the parallelism.
///
/// A variant is not replayed from the first frame: up to the first moment anything asks about its
/// fault's frame it is the run without the fault, so it starts from a copy of that run taken there
/// (SweepFork.swift says how the moment is found). `forking: false` (`--sweep-exhaustive`) replays
/// every variant from the first frame, for checking that both give the same answers.
public enum FaultSweep {
    /// How long a sweep holds back the recorded end of each link, unless told otherwise: longer
    /// than the session link's 3 s handshake and 2 s retransmission timers together, and the
    /// Connect IQ 5 s transfer timeout.
    public static let defaultSettle: Duration = .seconds(10)

    /// Sweeps `set`. `only` limits the variants to these frame numbers, `part` to one part of them
    /// and `budget` to so many or so long (``SweepBudget``); `progress` is called after each
    /// variant with where the sweep is. `settle` is how long the recorded end of each link is
    /// held back (``SweepResult/heldEnding``); zero ends the links as recorded. The variants run
    /// in this process: a core that traps ends it (`tether replay --sweep` runs them in worker
    /// processes instead, and reports a trap as the variant's broken promise).
    public static func run(
        _ set: LoadedCaptureSet, kind: SweepKind, options: ReplayOptions, only: Set<Int>? = nil, settle: Duration = defaultSettle,
        forking: Bool = true, part shard: ReplayShard? = nil, budget: SweepBudget? = nil,
        parallelism: Int = ProcessInfo.processInfo.activeProcessorCount, progress: @escaping @Sendable (SweepProgress) -> Void = { _ in }
    ) throws(ReplayError) -> SweepResult {
        let plan = try self.plan(set, kind: kind, options: options, only: only, settle: settle, forking: forking)
        let part = shard.map(plan.part)
        let results = SweepVariantQueue(plan: plan, part: part, budget: budget)
        let workers = max(1, min(parallelism, results.count))
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            var runner = plan.makeRunner()
            while let index = results.take() {
                results.set(index, runner.variant(at: index))
                progress(results.progress)
            }
        }
        return plan.result(results.all, part: part, budget: budget)
    }

    /// The fault a sweep's source run has in the variant's place: it selects no frame (frame
    /// numbers start at 1), so the source run is the run without the variant's fault, with the same
    /// number of faults (an adapter may behave differently with none at all).
    static let placeholder = Fault.drop(FrameSelector(frames: Int.min...Int.min))

    /// Makes a sweep of `set` ready: replays it without faults (twice when its links end in the
    /// capture) for the peer frames, where the links end, and the facts promises compare with.
    /// `only` limits the variants to these frame numbers. With `forking`, a probe run finds where
    /// each variant may be copied from the run without its fault (``SweepPlan/forkPositions``).
    public static func plan(
        _ set: LoadedCaptureSet, kind: SweepKind, options: ReplayOptions, only: Set<Int>? = nil, settle: Duration = defaultSettle,
        forking: Bool = true
    ) throws(ReplayError) -> SweepPlan {
        let started = DispatchTime.now().uptimeNanoseconds
        var plainOptions = options
        plainOptions.faults = []
        plainOptions.frameMatching = options.frameMatching ?? .responder
        let selected = try options.integrations.select(for: set.manifest, manifestPath: set.directory.manifestPath)
        let promises = selected.flatMap { integration in integration.promises.map { (core: TraceName(integration.name), promise: $0) } }
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
        var fork = SweepPlan.Fork.exhaustive
        if forking, !points.isEmpty {
            fork = try forkPlan(set, kind: kind, points: points, options: plainOptions, heldEnding: heldEnding,
                                checker: PromiseChecker(promises: promises, correlations: correlations, plain: facts))
        }
        return SweepPlan(set: set, kind: kind, points: points, heldEnding: heldEnding, options: plainOptions, promises: promises,
                         correlations: correlations, facts: facts, fork: fork, startedNs: started)
    }

    /// The probe run (SweepFork.swift): the source run once through, noting when each frame is
    /// first asked about and each frame's instant; from them, where each point's variant may be
    /// copied from.
    static func forkPlan(
        _ set: LoadedCaptureSet, kind: SweepKind, points: [SweepPlan.Point], options: ReplayOptions, heldEnding: [Fault],
        checker: PromiseChecker
    ) throws(ReplayError) -> SweepPlan.Fork {
        let capture: RecordedCapture
        do throws(CaptureError) { capture = try RecordedCapture(path: set.capturePath) } catch { throw .capture(error) }
        let probe = FaultQueryProbe()
        var sourceOptions = options
        sourceOptions.faults = [placeholder] + heldEnding
        var (engine, _) = try replayEngine(for: set, options: sourceOptions, probe: probe)
        let view = PeerFrameFaults(sourceOptions.faults)
        for adapter in engine.adapters {
            var copy = adapter
            guard copy.adoptFaults(view) else {
                return .refused("core \(copy.core)'s adapter cannot take another variant's faults part way through a run (CoreAdapter.adoptFaults), so every variant was replayed from the first frame")
            }
        }
        var state = engine.makeRunState()
        var summary = ReplaySummary()
        let reader = RecordedCaptureReader(capture, at: 0)
        // Each frame's instant as the engine advanced to it: a `disconnect` at T is first felt by
        // the first frame at or after T.
        var instants: [Int64] = []
        instants.reserveCapacity(capture.frames.count)
        var position = 0
        var checker = checker
        checker.startTakingOffAsItReads()
        while position < capture.frames.count, !state.halted {
            probe.position = position
            let next = position + 1
            SweepCursor.run(&engine, &state, &summary, reader: reader, from: &position, to: next, checker: &checker)
            instants.append(summary.lastFrameTimeNs)
        }
        probe.position = capture.frames.count
        engine.finishRun(reader: reader, state: &state, summary: &summary) { checker.observe($0) }
        let positions = points.map { point -> Int? in
            switch kind {
            case .drop, .delay:
                let read = capture.indexOfFrame[point.frame] ?? capture.frames.count
                let first = min(read, probe.firstAsked[point.frame] ?? read)
                // Asked about while the adapters were made (a responder reading the capture
                // ahead): no run without the fault ever equals the variant's.
                return first < 0 ? nil : first
            case .disconnect:
                let at = point.time.replayNanoseconds
                return instants.firstIndex { $0 >= at } ?? instants.count
            }
        }
        // A variant is compared with the run without its fault only once its fault can no longer
        // act: after its frame was read and last asked about, or, for a disconnection, once its
        // timers are behind it (the fault injector's state, compared, holds them until then).
        let settled = points.indices.map { index -> Int in
            let point = points[index]
            switch kind {
            case .drop, .delay:
                let read = capture.indexOfFrame[point.frame] ?? capture.frames.count
                return max(read, probe.lastAsked[point.frame] ?? read) + 1
            case .disconnect:
                return (positions[index] ?? 0) + 1
            }
        }
        // A source run whose timers ran away ends differently from any variant that stops early;
        // and where an adapter cannot tell its state from another's (the default of
        // ``CoreAdapter/hasSameState(as:)``), comparing would only double each variant's work.
        let comparable = engine.adapters.allSatisfy { $0.hasSameState(as: $0) }
        let recovery = summary.runawayTimers.isEmpty && comparable ? SweepPlan.Recovery(settled: settled, sourceEnd: checker) : nil
        return .forked(capture: capture, positions: positions, recovery: recovery)
    }

    /// Replays `set` without the sweep's faults (only `options.faults`), recording the facts the
    /// promises compare with; `peerFrames` is told each peer frame's number, virtual instant, kind
    /// and interface.
    static func plainRun(
        _ set: LoadedCaptureSet, options: ReplayOptions, promises: [(core: TraceName, promise: CorePromise)],
        correlations: [TraceName: [TraceCorrelation]], peerFrames: ((Int, Duration, PeerFrameKind, Int) -> Void)?
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
        promises: [(core: TraceName, promise: CorePromise)], correlations: [TraceName: [TraceCorrelation]], facts: PlainRunFacts
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
    let promises: [(core: TraceName, promise: CorePromise)]
    let correlations: [TraceName: [TraceCorrelation]]
    let facts: PlainRunFacts
    let fork: Fork
    let startedNs: UInt64

    /// Whether and from where variants are copied from the run without faults.
    enum Fork: Sendable {
        /// Every variant from the first frame (`--sweep-exhaustive`, or no variant at all).
        case exhaustive
        /// Forking was asked for and could not be done; the reason, for the report.
        case refused(String)
        /// The capture in memory; per point the number of frames handed over before its variant
        /// is copied (`nil`: replayed from the first frame, its frame having been asked about
        /// while the adapters were made); ``Recovery`` when variants may stop early.
        case forked(capture: RecordedCapture, positions: [Int?], recovery: Recovery?)
    }

    /// What a variant that has recovered needs to end without replaying the rest.
    struct Recovery: Sendable {
        /// Per point, the first position from which its fault can no longer act: the frame and
        /// every question about it behind (``FaultQueryProbe/lastAsked``), its timers in the state.
        var settled: [Int]
        /// The source run's promise checker at its end (``PromiseChecker/composed(shadow:sourceEnd:)``).
        var sourceEnd: PromiseChecker
    }

    /// How many variants.
    public var count: Int { points.count }

    /// Per point, the frames the run without faults hands over before its variant is copied from
    /// it, or `nil` for a variant replayed from the first frame (its frame was asked about while
    /// the adapters were made: a responder reading the capture ahead); `nil` when every variant is
    /// replayed from the first frame.
    public var forkPositions: [Int?]? {
        if case .forked(_, let positions, _) = fork { return positions }
        return nil
    }

    /// Why variants are replayed from the first frame though forking was asked for; `nil` when
    /// they are forked, or forking was not asked for.
    public var forkRefusal: String? {
        if case .refused(let why) = fork { return why }
        return nil
    }

    var capture: RecordedCapture? {
        if case .forked(let capture, _, _) = fork { return capture }
        return nil
    }

    var recovery: Recovery? {
        if case .forked(_, _, let recovery) = fork { return recovery }
        return nil
    }

    /// The order to run the variants in (indices into ``points``): by where they fork, so that a
    /// ``SweepRunner`` handed them in this order only ever moves its run forward.
    public var executionOrder: [Int] {
        guard let positions = forkPositions else { return Array(points.indices) }
        return points.indices.sorted { (positions[$0] ?? -1, $0) < (positions[$1] ?? -1, $1) }
    }

    /// ``executionOrder`` of the variants of `part` alone (all of them when `nil`).
    public func executionOrder(of part: SweepPart?) -> [Int] {
        guard let part else { return executionOrder }
        return executionOrder.filter(part.indices.contains)
    }

    /// A runner of this plan's variants on one thread.
    /// `slots`: the most faults a variant it runs may have and still be copied from the run
    /// without faults (1 for a sweep; ``SweepSearch/maxRandomFaults`` for a search).
    public func makeRunner(slots: Int = 1) -> SweepRunner { SweepRunner(plan: self, slots: slots) }

    /// The fault of variant `index`.
    public func fault(at index: Int) -> Fault {
        kind.fault(frame: points[index].frame, at: points[index].time)
    }

    /// Variant `index` replayed from the first frame and checked, in this process.
    public func variant(at index: Int) -> SweepVariant {
        FaultSweep.variant(set, fault: fault(at: index), held: heldEnding, frame: points[index].frame, options: options,
                           promises: promises, correlations: correlations, facts: facts)
    }

    /// Variant `index` with the promises a run in another process broke (`broken`) or the error
    /// that stopped it.
    public func variant(at index: Int, broken: [BrokenPromise], error: String?, forkedAt: Int? = nil, stoppedAt: Int? = nil) -> SweepVariant {
        let fault = fault(at: index)
        return SweepVariant(frame: points[index].frame, fault: fault, faults: [fault] + heldEnding, broken: broken, error: error,
                            forkedAt: forkedAt, stoppedAt: stoppedAt)
    }

    /// Variant `index`, whose replay ended the process that ran it (a core trapped): it broke the
    /// promise every core makes, not to trap. `detail` says how the process ended.
    public func trapped(at index: Int, detail: String) -> SweepVariant {
        variant(at: index, broken: [noTrapBroken(detail)], error: nil)
    }

    /// The promise every core makes, not to trap, broken as `detail` says: named after the set's
    /// cores (any of them may have trapped).
    func noTrapBroken(_ detail: String) -> BrokenPromise {
        let cores = Array(Set(promises.map(\.core.text))).sorted()
        return BrokenPromise(promise: "no trap", core: cores.isEmpty ? "replay" : cores.joined(separator: "+"), detail: detail)
    }

    /// The sweep's result from its variants (in point order): all of them, or those of `part`;
    /// with a `budget`, those it ran, the rest of them reported as not covered.
    public func result(_ variants: [SweepVariant], part: SweepPart? = nil, budget: SweepBudget? = nil) -> SweepResult {
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - startedNs) / 1e9
        var result = SweepResult(set: set.name, kind: kind, promises: promises.map { "\($0.core): \($0.promise.name)" },
                                 variants: variants, elapsedSeconds: elapsed, heldEnding: heldEnding, forkRefusal: forkRefusal, part: part,
                                 budget: budget)
        let ran = Set(variants.map(\.frame))
        let mine = part?.indices ?? points.indices
        result.notCovered = mine.filter { !ran.contains(points[$0].frame) }.map { SweepResult.NotCovered(frame: points[$0].frame, fault: fault(at: $0)) }
        return result
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
