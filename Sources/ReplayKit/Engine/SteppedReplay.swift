import BehaviourTrace
import CaptureKit
import CaptureSet

/// Where an app running in the loop puts the calls it makes: the engine asks after every input an
/// adapter handles (a frame, a timeout, a scheduled or earlier app call), and at the start of each
/// step, and delivers each call to its core's adapter at the current virtual instant.
///
/// The engine owns the cores, so a call made from inside a callback (which runs inside an
/// adapter's `frame` or `timeout`) cannot reach the core there and then: it waits until that input
/// has been handled, and no virtual time passes meanwhile. That is how the SDKs behave too: a
/// call returns at once and its results come later, on the delegate's queue.
public protocol ClosedLoopInputs: AnyObject {
    /// The app's next call, or `nil` when it has made none since the last question. `now` is the
    /// instant it will reach the core at.
    func nextCall(now: Duration) -> ScheduledAPICall?
    /// The earliest instant the app waits for (a sleep on the session's clock), or `nil`. The
    /// engine treats it as one more deadline: at that instant, after the cores' deadlines of the
    /// same instant, it calls ``wake(now:)`` and then asks for the app's calls. Defaults to `nil`.
    var nextWake: Duration? { get }
    /// Virtual time reached ``nextWake``: wake what waited for `now` or earlier.
    func wake(now: Duration)
}

extension ClosedLoopInputs {
    /// No wake-up instant.
    public var nextWake: Duration? { nil }
    /// Nothing to wake.
    public func wake(now: Duration) {}
}

/// A replay that advances in steps of virtual time, so an app in the loop can act between them:
/// ``step(through:emit:)`` handles every input up to an instant and stops, and ``finish(emit:)``
/// replays the rest of the recording and its drain.
///
/// Inputs are handled exactly as ``ReplayEngine/run(reader:emit:)`` handles them (the same
/// process, advance and drain code), so a stepped replay with no app calls writes the same trace
/// as a plain one, whatever the steps — but for the time of the final events (`summary`): the
/// adapters finish at the last instant reached, which a step may have taken past the last frame.
public struct SteppedReplay {
    /// The engine, with its adapters as the steps have left them.
    public private(set) var engine: ReplayEngine
    private let reader: any CaptureReader
    private var state: RunState
    private var summary = ReplaySummary()
    /// A frame read past the last step's limit, kept until a step reaches it.
    private var held: HeldFrame?
    private var readerExhausted = false
    /// Set once ``finish(emit:)`` ran: the adapters are finished.
    public private(set) var isFinished = false

    private struct HeldFrame {
        var header: FrameHeader
        var virtualNs: Int64
        var bytes: [UInt8]
    }

    /// A stepped run of `engine` over `reader`, at virtual time zero.
    public init(engine: ReplayEngine, reader: any CaptureReader) {
        self.engine = engine
        self.reader = reader
        state = engine.makeRunState()
    }

    /// Sets where the app in the loop puts its calls (``ReplayEngine/closedLoop``).
    public mutating func setClosedLoop(_ inputs: (any ClosedLoopInputs)?) {
        engine.closedLoop = inputs
    }

    /// The virtual instant reached.
    public var now: Duration { state.clock }

    /// Whether every recorded frame has been handed over (what remains is the drain).
    public var recordingConsumed: Bool { readerExhausted && held == nil }

    /// The run's counts so far (final once finished).
    public var summarySoFar: ReplaySummary { summary }

    /// Whether an adapter's timers ran away and the run stopped (``ReplaySummary/runawayTimers``).
    public var halted: Bool { state.halted }

    /// Handles every input up to and including `limit` (frames, deadlines, faults' timers, the
    /// app's wake-ups and calls), then sets the clock to `limit`. A `limit` before ``now`` only
    /// delivers the app's pending calls.
    /// - Throws: ``CaptureError`` when the capture is damaged other than at its tail.
    public mutating func step(through limit: Duration, emit: (TraceEvent) -> Void) throws(CaptureError) {
        guard !isFinished else { return }
        engine.deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit)
        while !state.halted {
            if let frame = held {
                guard Duration.nanoseconds(frame.virtualNs) <= limit else { break }
                held = nil
                frame.bytes.withUnsafeBytes { bytes in
                    engine.process(frame.header, bytes: bytes, reader: reader, state: &state, summary: &summary, emit: emit)
                }
                continue
            }
            if readerExhausted { break }
            var passedLimit = false
            let read = try ReplayEngine.readFrame(from: reader, framesRead: summary.framesRead) { header, bytes in
                let first = summary.firstTimestampNs ?? header.timestampNs
                let virtualNs = max(ReplayEngine.difference(header.timestampNs, first), state.clock.replayNanoseconds)
                if Duration.nanoseconds(virtualNs) > limit {
                    // Kept for a later step (the one copy a step makes); its instant is computed
                    // again when it is processed.
                    held = HeldFrame(header: header, virtualNs: virtualNs, bytes: Array(bytes))
                    passedLimit = true
                    return
                }
                engine.process(header, bytes: bytes, reader: reader, state: &state, summary: &summary, emit: emit)
            }
            if !read { readerExhausted = true }
            if passedLimit || !read { break }
        }
        guard !state.halted, limit > state.clock else { return }
        engine.advance(through: limit, state: &state, summary: &summary, emit: emit)
        if !state.halted { state.clock = max(state.clock, limit) }
    }

    /// Replays the rest of the recording, then the drain (deadlines up to the engine's drain
    /// horizon past the last input), then finishes every adapter. Returns the run's summary.
    /// - Throws: ``CaptureError`` when the capture is damaged other than at its tail.
    public mutating func finish(emit: (TraceEvent) -> Void) throws(CaptureError) -> ReplaySummary {
        guard !isFinished else { return summary }
        engine.deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit)
        // The rest as a plain run reads it: borrowed, no frame copied, no step boundaries.
        if let frame = held, !state.halted {
            held = nil
            frame.bytes.withUnsafeBytes { bytes in
                engine.process(frame.header, bytes: bytes, reader: reader, state: &state, summary: &summary, emit: emit)
            }
        }
        while !state.halted, !readerExhausted {
            let read = try ReplayEngine.readFrame(from: reader, framesRead: summary.framesRead) { header, bytes in
                engine.process(header, bytes: bytes, reader: reader, state: &state, summary: &summary, emit: emit)
            }
            if !read { readerExhausted = true }
        }
        engine.deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit)
        engine.finishRun(reader: reader, state: &state, summary: &summary, emit: emit)
        isFinished = true
        return summary
    }
}
