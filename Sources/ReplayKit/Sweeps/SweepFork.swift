import BehaviourTrace
import CaptureKit
import CaptureSet

// Forking a fault sweep's variants from the run without their fault.
//
// A variant with one fault on peer frame F is, up to the first moment anything asks about F's
// fate, the same run as one without that fault: same frames fed, same timers fired, same events.
// So instead of replaying each variant from frame 1, the sweep keeps a *source run* (the set
// replayed with a placeholder fault that selects no frame, in the variant's place, and the held
// ending), copies it at that moment, gives the copy the variant's fault and lets it run on. Every
// state a run has is a value (engine, adapters, cores, dissectors, the promise checker), so the
// copy is a copy; the frames are read once into memory, so the copy can read on from any frame.
//
// Where the moment is comes from a *probe run* of the source, which notes, for every frame, the
// position at which it was first asked about (`FaultQueryProbe`): the engine asks when it reads
// the frame, a responder earlier when it schedules the captured answer. A `disconnect` at instant
// T is first felt when the engine advances to a frame at or after T.

/// A capture read once into memory, so that a sweep's copies of a run can each read on from any
/// frame. Immutable, shared by every copy.
final class RecordedCapture: Sendable {
    /// One frame as the engine reads it.
    struct Frame: Sendable {
        var header: FrameHeader
        var bytes: [UInt8]
        /// The reader's ``CaptureReader/bytesRead`` after this frame.
        var bytesReadAfter: UInt64
    }

    let path: String
    let format: CaptureFormat
    let interfaces: [CaptureInterface]
    let warnings: [CaptureWarning]
    let frames: [Frame]
    /// Frame number → index in ``frames``.
    let indexOfFrame: [Int: Int]

    /// Reads the whole capture at `path`.
    /// - Throws: ``CaptureError`` as a replay of the file would.
    init(path: String) throws(CaptureError) {
        let reader = try CaptureFile.open(path: path)
        var frames: [Frame] = []
        while true {
            let frame: CaptureFrame?
            frame = try reader.next()
            guard let frame else { break }
            frames.append(Frame(
                header: FrameHeader(number: frame.number, interfaceIndex: frame.interfaceIndex, timestampNs: frame.timestampNs, flags: frame.flags),
                bytes: frame.data, bytesReadAfter: reader.bytesRead))
        }
        self.path = reader.path
        format = reader.format
        interfaces = reader.interfaces
        warnings = reader.warnings
        self.frames = frames
        indexOfFrame = Dictionary(frames.enumerated().map { ($0.element.header.number, $0.offset) }, uniquingKeysWith: { first, _ in first })
    }
}

/// Reads a ``RecordedCapture`` from a chosen frame on. Interfaces are all known from the start,
/// as a streaming reader knows each by the time its first frame comes, which is when the engine
/// asks.
final class RecordedCaptureReader: CaptureReader {
    let capture: RecordedCapture
    /// The index of the next frame to read.
    var position: Int

    init(_ capture: RecordedCapture, at position: Int) {
        self.capture = capture
        self.position = position
    }

    var format: CaptureFormat { capture.format }
    var path: String { capture.path }
    var interfaces: [CaptureInterface] { capture.interfaces }
    var warnings: [CaptureWarning] { capture.warnings }
    var bytesRead: UInt64 { position == 0 ? 0 : capture.frames[min(position, capture.frames.count) - 1].bytesReadAfter }

    func next() throws(CaptureError) -> CaptureFrame? {
        guard position < capture.frames.count else { return nil }
        let frame = capture.frames[position]
        position += 1
        return CaptureFrame(number: frame.header.number, interfaceIndex: frame.header.interfaceIndex, timestampNs: frame.header.timestampNs,
                            originalLength: frame.bytes.count, data: frame.bytes, flags: frame.header.flags)
    }

    func withNextFrame(_ body: (FrameView) throws -> Void) throws -> Bool {
        guard position < capture.frames.count else { return false }
        let frame = capture.frames[position]
        position += 1
        try frame.bytes.withUnsafeBytes { bytes in
            try body(FrameView(number: frame.header.number, interfaceIndex: frame.header.interfaceIndex, timestampNs: frame.header.timestampNs,
                               originalLength: bytes.count, data: bytes, flags: frame.header.flags))
        }
        return true
    }
}

/// The source run of a sweep, stopped between two frames: what a variant is copied from.
struct SweepCursor {
    var engine: ReplayEngine
    var state: RunState
    var summary = ReplaySummary()
    var checker: PromiseChecker
    /// Frames handed to the engine so far: the index of the next one.
    private(set) var position = 0
    let reader: RecordedCaptureReader

    /// The source run of `plan` at its first frame.
    /// The source run of `plan` with `slots` placeholder faults, one for each fault a variant may
    /// have (a search's schedules have several).
    init(_ plan: SweepPlan, capture: RecordedCapture, slots: Int = 1) throws(ReplayError) {
        var options = plan.options
        options.faults = Array(repeating: FaultSweep.placeholder, count: slots) + plan.heldEnding
        (engine, _) = try replayEngine(for: plan.set, options: options)
        state = engine.makeRunState()
        checker = PromiseChecker(promises: plan.promises, correlations: plan.correlations, plain: plan.facts)
        checker.startTakingOffAsItReads()
        reader = RecordedCaptureReader(capture, at: 0)
    }

    /// How many frames past the point its fault settled a variant is compared with the run without
    /// faults before it is left to run to the end alone.
    static let shadowFrames = 1024

    /// Hands frames to the engine until `target` have been (or the run halted).
    mutating func advance(to target: Int) {
        Self.run(&engine, &state, &summary, reader: reader, from: &position, to: target, checker: &checker)
    }

    /// Hands `reader`'s frames from `position` up to `target` to `engine`, telling `checker` each
    /// frame read (``PromiseChecker/reading(frame:)``) and each event.
    static func run(_ engine: inout ReplayEngine, _ state: inout RunState, _ summary: inout ReplaySummary, reader: RecordedCaptureReader,
                    from position: inout Int, to target: Int, checker: inout PromiseChecker) {
        let frames = reader.capture.frames
        let end = min(target, frames.count)
        while position < end, !state.halted {
            let frame = frames[position]
            position += 1
            reader.position = position
            checker.reading(frame: frame.header.number)
            frame.bytes.withUnsafeBytes { bytes in
                engine.process(frame.header, bytes: bytes, reader: reader, state: &state, summary: &summary) { checker.observe($0) }
            }
        }
    }

    /// A copy of the run from here, with `fault` in the placeholder's place, replayed and
    /// checked; `nil` when an adapter or the fault injector cannot take the fault
    /// (``CoreAdapter/adoptFaults(_:)``): the variant is then replayed in full.
    ///
    /// With `recovery`, a copy of the source run goes along frame by frame (the *shadow*), and
    /// from `settled` on, when the fault can no longer act, the two are compared now and then:
    /// once the variant is in the shadow's state (``ReplayEngine/hasSameFuture(as:state:otherState:)``)
    /// the rest of it would be the rest of the source run, so it stops, and its checker is
    /// completed with what the source run's saw after that point
    /// (``PromiseChecker/composed(shadow:sourceEnd:)``).
    func fork(_ schedule: [Fault], plan: SweepPlan, settled: Int?, sourceEnd: PromiseChecker?) -> SweepVariant.Outcome? {
        var engine = engine
        var state = state
        var summary = summary
        var checker = checker
        // The schedule in the placeholders' places; placeholders left over select no frame.
        guard var injector = state.injector, schedule.count <= engine.faults.count - plan.heldEnding.count else { return nil }
        for (slot, fault) in schedule.enumerated() {
            // (Refused once a timer is scheduled: a second `disconnect` replays in full.)
            guard injector.replaceFault(at: slot, with: fault) else { return nil }
        }
        state.injector = injector
        var faults = engine.faults
        faults.replaceSubrange(0..<schedule.count, with: schedule)
        engine.faults = faults
        let view = PeerFrameFaults(faults)
        for i in engine.adapters.indices {
            guard engine.adapters[i].adoptFaults(view) else { return nil }
        }
        let reader = RecordedCaptureReader(self.reader.capture, at: position)
        var at = position
        if let settled, let sourceEnd {
            var shadow = self
            let shadowReader = RecordedCaptureReader(self.reader.capture, at: position)
            var shadowAt = position
            // Compared at `settled`, then further and further apart: a variant that recovers at
            // all mostly does so soon, and a comparison costs little where the states share
            // storage (the copies start from one state), but is not free.
            var check = max(settled, position)
            var gap = 1
            let count = reader.capture.frames.count
            // The shadow doubles the work while it goes along; a variant not back in step this
            // long after its fault settled is left to run on alone.
            let giveUp = check + Self.shadowFrames
            while at < count, !state.halted, check <= giveUp {
                let target = min(count, check)
                Self.run(&engine, &state, &summary, reader: reader, from: &at, to: target, checker: &checker)
                Self.run(&shadow.engine, &shadow.state, &shadow.summary, reader: shadowReader, from: &shadowAt, to: target, checker: &shadow.checker)
                if at == target, shadowAt == target, !state.halted, !shadow.state.halted,
                   engine.hasSameFuture(as: shadow.engine, state: state, otherState: shadow.state),
                   let end = checker.composed(shadow: shadow.checker, sourceEnd: sourceEnd) {
                    var end = end
                    return SweepVariant.Outcome(broken: end.verdict(), error: nil, stoppedAt: at)
                }
                check = target + gap
                gap = min(gap * 2, 64)
            }
        }
        Self.run(&engine, &state, &summary, reader: reader, from: &at, to: .max, checker: &checker)
        engine.finishRun(reader: reader, state: &state, summary: &summary) { checker.observe($0) }
        if let error = runawayError(summary, set: plan.set, options: plan.options) {
            return SweepVariant.Outcome(broken: [], error: error.description, stoppedAt: nil)
        }
        return SweepVariant.Outcome(broken: checker.verdict(), error: nil, stoppedAt: nil)
    }
}

/// Runs a plan's variants one after another on one thread, each forked from the source run where
/// the plan says it may be (``SweepPlan/forkPositions``), else replayed in full. Hand it the
/// variants in ``SweepPlan/executionOrder``: its source run then only ever moves forward, so the
/// whole sweep reads the capture once per runner besides the variants' own frames.
public struct SweepRunner {
    /// The plan it runs.
    public let plan: SweepPlan
    private var cursor: SweepCursor?
    /// Set when the source run could not be made: every variant is then replayed in full.
    private var cursorFailed = false
    /// Variants compared with the run without faults, and those of them that stopped early. When
    /// the first ``attemptsBeforeGivingUp`` all ran to the end, the runner stops comparing: its
    /// core's variants do not come back in step in this capture (a Connect IQ retransmission
    /// shifts every later exchange), and comparing only doubles their work. The verdicts are the
    /// same either way.
    private var compared = 0
    private var recovered = 0
    static let attemptsBeforeGivingUp = 16
    /// The faults a variant may have and still be copied from the source run.
    let slots: Int

    init(plan: SweepPlan, slots: Int) {
        self.plan = plan
        self.slots = max(1, slots)
    }

    /// Variant `index` (in point order) replayed and checked.
    public mutating func variant(at index: Int) -> SweepVariant {
        let fault = plan.fault(at: index)
        guard let positions = plan.forkPositions, let target = positions[index],
              let outcome = forked([fault], at: target, settled: plan.recovery?.settled[index]) else {
            return plan.variant(at: index)
        }
        return plan.variant(at: index, broken: outcome.broken, error: outcome.error, forkedAt: target, stoppedAt: outcome.stoppedAt)
    }

    /// A search's schedule (``FaultSearch``) replayed and checked: copied from the source run
    /// where its first fault is first felt, when every fault's point may be forked and the runner
    /// has a placeholder for each (``SweepPlan/makeRunner(slots:)``); else replayed from the first
    /// frame. Its recovery is compared once every fault of it has settled.
    public mutating func variant(schedule: [ScheduledFault]) -> SweepVariant {
        let faults = schedule.map(\.fault)
        guard let positions = plan.forkPositions, !schedule.isEmpty, schedule.count <= slots else { return plan.variant(schedule: faults) }
        let targets = schedule.compactMap { positions.indices.contains($0.point) ? positions[$0.point] : nil }
        let settled = plan.recovery.map { recovery in schedule.map { recovery.settled[$0.point] }.max() ?? 0 }
        guard targets.count == schedule.count, let target = targets.min(), let outcome = forked(faults, at: target, settled: settled) else {
            return plan.variant(schedule: faults)
        }
        var variant = plan.variant(schedule: faults, broken: outcome.broken, error: outcome.error)
        variant.forkedAt = target
        variant.stoppedAt = outcome.stoppedAt
        return variant
    }

    /// `faults` copied from the source run at `target` (the source run moved there first, or made
    /// again when it is already past it); `nil` when it cannot be (the variant is then replayed in
    /// full).
    private mutating func forked(_ faults: [Fault], at target: Int, settled: Int?) -> SweepVariant.Outcome? {
        guard let capture = plan.capture, !cursorFailed else { return nil }
        if cursor == nil || cursor!.position > target {
            do throws(ReplayError) {
                cursor = try SweepCursor(plan, capture: capture, slots: slots)
            } catch {
                cursorFailed = true
                cursor = nil
                return nil
            }
        }
        guard var source = cursor else { return nil }
        cursor = nil // the one copy of its state, so that advancing it copies nothing
        source.advance(to: target)
        let compares = compared < Self.attemptsBeforeGivingUp || recovered > 0
        let recovery = compares ? plan.recovery : nil
        let outcome = source.fork(faults, plan: plan, settled: recovery == nil ? nil : settled, sourceEnd: recovery?.sourceEnd)
        cursor = source
        if recovery != nil, let outcome {
            compared += 1
            if outcome.stoppedAt != nil { recovered += 1 }
        }
        return outcome
    }
}

/// The error a run whose timers ran away ends with, as ``replaySet(_:options:peerFrameObserver:frameObserver:emit:)``
/// throws it; `nil` when they did not.
func runawayError(_ summary: ReplaySummary, set: LoadedCaptureSet, options: ReplayOptions) -> ReplayError? {
    guard let runaway = summary.runawayTimers.first else { return nil }
    return .runawayTimers(set: set.directory.path, runaway, settings: timerSettings(of: runaway.core, in: set, options: options))
}
