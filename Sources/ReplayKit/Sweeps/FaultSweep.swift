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

    /// Variants that broke no promise.
    public var passed: Int { variants.filter(\.passed).count }
    /// The others.
    public var failed: Int { variants.count - passed }
}

/// Runs a capture set once per peer frame with one fault on that frame, and checks every variant
/// against the promises of its cores (``CoreIntegration/promises``): `tether replay --sweep`.
///
/// First the set is replayed without faults in responder mode, recording its peer frames and the
/// facts the promises compare with; then each variant is replayed the same way with its one
/// fault. Variants are independent, so they run in parallel on the machine's cores; the result
/// is the same whatever the parallelism.
public enum FaultSweep {
    /// Sweeps `set`. `only` limits the variants to these frame numbers; `progress` is called after
    /// each variant with the count done.
    public static func run(
        _ set: LoadedCaptureSet, kind: SweepKind, options: ReplayOptions, only: Set<Int>? = nil,
        parallelism: Int = ProcessInfo.processInfo.activeProcessorCount, progress: @escaping @Sendable (Int, Int) -> Void = { _, _ in }
    ) throws(ReplayError) -> SweepResult {
        let started = DispatchTime.now().uptimeNanoseconds
        var plainOptions = options
        plainOptions.faults = []
        plainOptions.frameMatching = options.frameMatching ?? .responder
        let selected = try options.integrations.select(for: set.manifest, manifestPath: set.directory.manifestPath)
        let promises = selected.flatMap { integration in integration.promises.map { (core: integration.name, promise: $0) } }
        let correlations = options.integrations.correlations

        // The plain run: peer frames, and the facts promises compare with.
        var checker = PromiseChecker(promises: promises, correlations: correlations, plain: nil)
        var peerFrames: [(number: Int, time: Duration)] = []
        // Drops and delays go to what the peer's application sends; a lost ATT response or TCP
        // segment is a lost link (the link layer and TCP retransmit until then), which
        // `disconnect` sweeps. A disconnect goes at every peer frame's instant.
        let everyFrame: Bool
        if case .disconnect = kind { everyFrame = true } else { everyFrame = false }
        let (adapters, interfaces, unlabelled, _) = try replayAdapters(for: set, options: plainOptions)
        do throws(CaptureError) {
            let reader = try CaptureFile.open(path: set.capturePath)
            var engine = ReplayEngine(adapters: adapters, manifestInterfaces: interfaces, gattHandles: set.manifest.gattHandles,
                                      drainHorizon: options.drainHorizon)
            engine.unlabelledAPICallsCore = unlabelled
            engine.peerFrameObserver = { number, time, frameKind in
                if everyFrame || frameKind.isApplicationData { peerFrames.append((number, time)) }
            }
            engine.frameObserver = { checker.currentFrame = $0 }
            _ = try engine.run(reader: reader) { checker.observe($0) }
        } catch {
            throw .capture(error)
        }
        let facts = checker.facts()
        let frames = peerFrames.filter { only?.contains($0.number) ?? true }

        let results = VariantResults(count: frames.count)
        let workers = max(1, min(parallelism, frames.count))
        let next = VariantCounter()
        let variantOptions = plainOptions
        DispatchQueue.concurrentPerform(iterations: workers) { _ in
            while let index = next.take(below: frames.count) {
                let frame = frames[index]
                let fault = kind.fault(frame: frame.number, at: frame.time)
                results.set(index, variant(set, fault: fault, frame: frame.number, options: variantOptions, promises: promises,
                                          correlations: correlations, facts: facts))
                progress(results.done, frames.count)
            }
        }
        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        return SweepResult(set: set.name, kind: kind, promises: promises.map { "\($0.core): \($0.promise.name)" },
                           variants: results.all, elapsedSeconds: elapsed)
    }

    /// One variant replayed and checked.
    static func variant(
        _ set: LoadedCaptureSet, fault: Fault, frame: Int, options: ReplayOptions, promises: [(core: String, promise: CorePromise)],
        correlations: [String: [TraceCorrelation]], facts: PlainRunFacts
    ) -> SweepVariant {
        var options = options
        options.faults = [fault]
        var checker = PromiseChecker(promises: promises, correlations: correlations, plain: facts)
        do throws(ReplayError) {
            _ = try replaySet(set, options: options) { checker.observe($0) }
        } catch {
            return SweepVariant(frame: frame, fault: fault, broken: [], error: error.description)
        }
        return SweepVariant(frame: frame, fault: fault, broken: checker.verdict(), error: nil)
    }
}

/// The variants' results, filled in by parallel workers.
private final class VariantResults: @unchecked Sendable {
    private let lock = NSLock()
    private var variants: [SweepVariant?]
    private(set) var done = 0

    init(count: Int) { variants = Array(repeating: nil, count: count) }

    func set(_ index: Int, _ variant: SweepVariant) {
        lock.lock()
        variants[index] = variant
        done += 1
        lock.unlock()
    }

    var all: [SweepVariant] {
        lock.lock()
        defer { lock.unlock() }
        return variants.compactMap { $0 }
    }
}

/// Hands out variant indices to parallel workers.
private final class VariantCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var next = 0

    func take(below count: Int) -> Int? {
        lock.lock()
        defer { lock.unlock() }
        guard next < count else { return nil }
        next += 1
        return next - 1
    }
}
