import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors

/// Runs captured frames through core adapters on a virtual clock.
///
/// Virtual time is a frame's timestamp minus the first frame's. The loop is
/// "advance to min(next frame time, earliest adapter deadline)": every deadline fires at its exact
/// virtual instant, before any frame with a later timestamp. Nothing sleeps and nothing reads a
/// clock, so the same capture gives the same trace on every run and every machine.
///
/// Ordering rules, which make the trace deterministic:
/// - **Tie:** a deadline at exactly a frame's virtual time fires *before* that frame: a timer that
///   expires at T has expired when a frame arrives at T (as NIO's scheduler and quinn's `poll_timeout`
///   treat `deadline <= now`).
/// - Several adapters due at the same instant fire in the order the adapters were given.
/// - A frame goes to the adapters in the order they were given.
/// - A frame stamped earlier than the frame before it is fed at the earlier frame's instant
///   (counted in ``ReplaySummary/framesOutOfOrder``).
/// - After the last frame, deadlines keep firing up to `drainHorizon` past it, so idle timeouts
///   that follow the end of a capture appear in the trace; then every adapter is finished at the
///   last instant reached. A timer still set then is reported (``ReplaySummary/timersLeftSet``,
///   and a warning).
/// - An adapter that, right after a timeout at T, still asks for a deadline at or before T would
///   loop for ever, and one whose timer fires every nanosecond nearly so: the engine stops the
///   replay and reports it in ``ReplaySummary/runawayTimers`` (``RunawayTimers``).
///
/// An engine runs once: its adapters keep their cores' state. Make a new engine with fresh
/// adapters for another run.
public struct ReplayEngine {
    /// The adapters, in the order they are called.
    public var adapters: [any CoreAdapter]
    /// What the manifest says about the capture's interfaces.
    public var manifestInterfaces: [ManifestInterface]
    /// How long past the last frame deadlines may still fire.
    public var drainHorizon: Duration
    /// ATT handles the manifest names, for captures without GATT discovery.
    public var gattHandles: [ManifestGATTHandle] = []
    /// Called every `progressEvery` frames.
    public var progress: ((ReplayProgress) -> Void)?
    /// Frames between two `progress` calls.
    public var progressEvery: Int = 65_536
    /// The core whose adapter takes `api-calls` records that name no core (`nil`: every adapter
    /// that wants the interface gets them).
    public var unlabelledAPICallsCore: String?
    /// API calls to deliver at chosen virtual instants, as if the app had made them then (a test
    /// driving a core: `TetherTesting`'s `replay(_:calls:)`). Delivered after the deadlines due
    /// at their instant and before a frame of that instant.
    public var scheduledCalls: [ScheduledAPICall] = [] {
        didSet { scheduledCalls = Self.stablySorted(scheduledCalls) }
    }
    /// Cores whose captured `api-calls` records are not delivered (``scheduledCalls`` drive them
    /// instead).
    public var replacedCallCores: Set<String> = []
    /// Per replaced core, the recorded calls that are still delivered: host facts, which the
    /// app does not make (``CoreIntegration/hostFactCalls``: a device bound to an address, the
    /// process started).
    public var keptCallsOfReplacedCores: [String: Set<String>] = [:]
    /// Faults applied between the capture and the cores (docs/faults.md): lost, late, repeated,
    /// reordered or altered peer frames, and links that drop. Empty: the capture as recorded.
    public var faults: [Fault] = []
    /// Called with each peer frame (``PeerFrameClassifier``) as it is read: its number, virtual
    /// instant, kind and interface index. What a fault sweep enumerates its variants from.
    public var peerFrameObserver: ((Int, Duration, PeerFrameKind, Int) -> Void)?
    /// Called with a frame's number just before it is handed to the adapters: the events that
    /// follow, up to the next call, are that frame's doing.
    public var frameObserver: ((Int) -> Void)?
    /// The calls an app makes while it runs in the loop (``ClosedLoopInputs``): asked after every
    /// input an adapter handles, so a call made from inside a callback reaches its core at the
    /// instant of the input that caused it. `nil`: a plain replay.
    public var closedLoop: (any ClosedLoopInputs)?

    /// An engine over `adapters`; `manifestInterfaces` give interfaces their roles.
    public init(adapters: [any CoreAdapter], manifestInterfaces: [ManifestInterface] = [], gattHandles: [ManifestGATTHandle] = [], drainHorizon: Duration = .seconds(600)) {
        self.adapters = adapters
        self.gattHandles = gattHandles
        self.manifestInterfaces = manifestInterfaces
        self.drainHorizon = drainHorizon
    }

    /// Replays every frame of `reader`, streaming: each trace event goes to `emit` as it is made,
    /// and frames are read one at a time, so memory does not grow with the capture.
    /// - Throws: ``CaptureError`` when the capture is damaged other than at its tail.
    public mutating func run(reader: any CaptureReader, emit: (TraceEvent) -> Void) throws(CaptureError) -> ReplaySummary {
        var state = makeRunState()
        var summary = ReplaySummary()
        while !state.halted, try Self.readFrame(from: reader, framesRead: summary.framesRead, { header, bytes in
            process(header, bytes: bytes, reader: reader, state: &state, summary: &summary, emit: emit)
        }) {}
        finishRun(reader: reader, state: &state, summary: &summary, emit: emit)
        return summary
    }

    /// A run's state at virtual time zero: the manifest's handles and interfaces, the faults.
    func makeRunState() -> RunState {
        var state = RunState(adapterCount: adapters.count)
        state.namedHandles = GATTHandleName.table(gattHandles.map(\.nameTexts))
        state.manifestInterfaces = Dictionary(manifestInterfaces.map { ($0.index, $0) }, uniquingKeysWith: { first, _ in first })
        if !faults.isEmpty { state.injector = FaultInjector(faults: faults) }
        return state
    }

    /// Reads the next frame of `reader` and hands its header and bytes to `body`; `false` at the
    /// end of the capture. The bytes are borrowed from the reader, never copied: the view carries
    /// `epb_flags` (HCI direction on LINKTYPE 187) for the dissectors, which read them too.
    /// - Throws: ``CaptureError``, a reader's own or one naming the frame after `framesRead`.
    static func readFrame(from reader: any CaptureReader, framesRead: Int,
                          _ body: (FrameHeader, UnsafeRawBufferPointer) -> Void) throws(CaptureError) -> Bool {
        try reader.withNextFrameView(framesRead: framesRead) { view in
            body(FrameHeader(number: view.number, interfaceIndex: view.interfaceIndex, timestampNs: view.timestampNs, flags: view.flags), view.data)
        }
    }

    /// After the last frame: the drain (deadlines up to ``drainHorizon`` past the last input),
    /// the warnings, and every adapter's `finish`.
    mutating func finishRun(reader: any CaptureReader, state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        // The drain runs on past the last frame, and past the last scheduled call.
        let lastCall = scheduledCalls.last.map { max($0.at, state.clock) } ?? state.clock
        // …and past the last frame a fault made late.
        let lastLate = state.pending.compactMap(\.at).max() ?? state.clock
        let lastInput = max(lastCall, lastLate, state.clock).replayNanoseconds
        let (sum, overflow) = lastInput.addingReportingOverflow(drainHorizon.replayNanoseconds)
        let horizon = overflow ? Int64.max : sum
        advance(through: .nanoseconds(horizon), state: &state, summary: &summary, emit: emit)
        if !state.halted {
            // A timer still set is finished without firing: said, so a trace that lacks its
            // effect (an idle timeout longer than the horizon) is not taken for the core's.
            for i in adapters.indices {
                guard let due = adapters[i].nextDeadlineInPlace() else { continue }
                let left = TimerLeftSet(core: adapters[i].core.text, dueNs: due.replayNanoseconds, drainEndNs: horizon,
                                        horizonNs: horizon - lastInput, timeoutsSinceLastInput: state.consecutiveTimeouts[i])
                summary.timersLeftSet.append(left)
                summary.warnings.append(left.description)
            }
        }
        if state.nextCall < scheduledCalls.count {
            summary.warnings.append("\(scheduledCalls.count - state.nextCall) scheduled call(s) fell after the drain horizon and were not delivered.")
        }
        for core in Set(scheduledCalls.map(\.core)) where !adapters.contains(where: { $0.core.text == core }) {
            summary.warnings.append("scheduled calls for core \(core) were not delivered: this replay does not run that core.")
        }
        if !state.pending.isEmpty {
            summary.warnings.append("\(state.pending.count) frame(s) a fault made late fell after the drain horizon and were not delivered.")
        }
        // A set from disk cannot carry such a name (it is refused when it loads); one built in
        // code can, and names no handle.
        for (i, named) in gattHandles.enumerated() {
            for problem in named.uuidTextProblems {
                summary.warnings.append("gatt_handles[\(i)].\(problem.key) (handle \(named.handle)): \(problem.problem); the handle was left unnamed.")
            }
        }
        summary.faultsApplied = state.injector?.applied ?? 0
        summary.endTimeNs = state.clock.replayNanoseconds
        for i in adapters.indices {
            for event in adapters[i].finish(now: state.clock) { emit(event) }
        }
        summary.bytesRead = reader.bytesRead
        summary.warnings = reader.warnings.map(\.description) + summary.warnings
        if summary.framesOutOfOrder > 0 {
            summary.warnings.append("\(summary.framesOutOfOrder) frame(s) were stamped earlier than the frame before them; "
                + "each was replayed at the earlier frame's instant.")
        }
    }

    /// Replays every frame of `reader`, writing each trace event to `sink` as it is made.
    public mutating func run(reader: any CaptureReader, into sink: inout some TraceSink) throws(CaptureError) -> ReplaySummary {
        try run(reader: reader) { sink.write($0) }
    }

    /// Replays every frame of `reader` and returns the whole trace with the summary.
    public mutating func run(reader: any CaptureReader) throws(CaptureError) -> (trace: [TraceEvent], summary: ReplaySummary) {
        var trace: [TraceEvent] = []
        let summary = try run(reader: reader, into: &trace)
        return (trace, summary)
    }

    /// Delivers the calls the app in the loop has made, each to its core's adapter at the current
    /// instant, until it has none left (a call's own callbacks may make more).
    mutating func deliverClosedLoopCalls(state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        guard let inputs = closedLoop else { return }
        while !state.halted, let call = inputs.nextCall(now: state.clock) {
            guard let i = adapters.firstIndex(where: { $0.core.text == call.core }) else {
                summary.warnings.append("the app's \(call.call) call for core \(call.core) was not delivered: this replay does not run that core.")
                continue
            }
            deliver(call, toAdapter: i, from: "app-in-the-loop", state: &state, emit: emit)
            summary.closedLoopCallsDelivered += 1
        }
    }

    /// Hands one call to adapter `i` at the current instant, as an `api-calls` record on an
    /// interface named `source` that no capture has.
    private mutating func deliver(_ call: ScheduledAPICall, toAdapter i: Int, from source: String, state: inout RunState, emit: (TraceEvent) -> Void) {
        let interface = ReplayInterface(index: -1, linkType: .user0, name: source, role: .apiCalls)
        let frame = ReplayFrame(
            number: 0, virtualTimeNs: state.clock.replayNanoseconds, timestampNs: state.clock.replayNanoseconds,
            interface: interface, apiCall: .parsed(call.record))
        adapters[i].frame(frame, bytes: RawSpan(), now: state.clock, emit: emit)
        state.consecutiveTimeouts[i] = 0
    }

    /// One frame: fire what is due before it, then hand it to every adapter that wants it.
    mutating func process(
        _ header: FrameHeader, bytes: UnsafeRawBufferPointer, reader: any CaptureReader,
        state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void
    ) {
        summary.framesRead += 1
        let first = summary.firstTimestampNs ?? header.timestampNs
        summary.firstTimestampNs = first
        var virtualNs = Self.difference(header.timestampNs, first)
        let clockNs = state.clock.replayNanoseconds
        if virtualNs < clockNs {
            summary.framesOutOfOrder += 1
            virtualNs = clockNs
        }
        // Multiplied in the native 128-bit integer: `.nanoseconds` uses a software one (the same value).
        let frameTime = Duration(attoseconds: Int128(virtualNs) * 1_000_000_000)
        advance(through: frameTime, state: &state, summary: &summary, emit: emit)
        if state.halted { return }
        state.clock = frameTime
        summary.lastFrameTimeNs = virtualNs

        let index = header.interfaceIndex
        let route = state.route(for: index) { described in
            let fileInterface = reader.interfaces.indices.contains(index) ? reader.interfaces[index] : nil
            let interface = ReplayInterface(
                index: index,
                linkType: fileInterface?.linkType ?? described?.captureLinkType ?? LinkType(rawValue: UInt32.max),
                name: fileInterface?.name, manifest: described)
            // A described interface goes to its core's adapter alone; an undescribed one, and the
            // API-call records (split below by their `core`), to every adapter that wants them.
            let owner = interface.role == .apiCalls ? nil : interface.core
            return InterfaceRoute(interface: interface, inputs: adapters.map { adapter in
                if let owner, adapter.core.text != owner { return .ignore }
                return adapter.input(for: interface)
            })
        }
        if let progress, progressEvery > 0, summary.framesRead % progressEvery == 0 {
            progress(ReplayProgress(framesRead: summary.framesRead, bytesRead: reader.bytesRead))
        }
        let wanted = route.wanted
        guard wanted != .ignore else { return }

        var dissected: DissectedFrame?
        let faulted = state.injector != nil && !route.carriesAPICalls
        let observed = peerFrameObserver != nil && !route.carriesAPICalls
        if wanted == .dissected || faulted || observed {
            dissected = state.dissect(bytes, flags: header.flags, interface: route.interface)
        }
        if observed, let kind = PeerFrameClassifier.classify(bytes, dissected: dissected, interface: route.interface) {
            peerFrameObserver?(header.number, frameTime, kind, index)
        }
        if faulted, var injector = state.injector {
            let decision = injector.decide(number: header.number, at: frameTime, bytes: bytes, flags: header.flags,
                                           dissected: dissected, interface: route.interface, emit: emit)
            let releases = decision.held == nil ? [] : injector.fullBlocks(at: frameTime)
            state.injector = injector
            if !decision.untouched {
                let given = wanted == .dissected ? dissected : nil
                for delivery in decision.deliveries {
                    state.enqueue(PendingFrame(
                        at: decision.held == nil ? frameTime + delivery.delay : nil, extraDelay: delivery.delay, ticket: decision.held,
                        number: header.number, timestampNs: header.timestampNs, interfaceIndex: index,
                        bytes: delivery.replacement?.bytes ?? Array(bytes), flags: delivery.replacement?.flags ?? header.flags,
                        redissect: delivery.replacement != nil, dissected: given))
                }
                for release in releases { state.release(release) }
                // What is due now (a duplicate, an undelayed copy) goes at once, after this frame's instant.
                deliverPending(through: frameTime, state: &state, summary: &summary, emit: emit)
                return
            }
        }
        var apiCall: APICallRecord?
        var recipient: String?
        if route.carriesAPICalls {
            apiCall = APICallRecord(parsing: RawSpan(_unsafeBytes: bytes), frame: header.number)
            recipient = apiCall?.core ?? unlabelledAPICallsCore
            if let name = recipient, replacedCallCores.contains(name), !Self.isKept(apiCall, among: keptCallsOfReplacedCores[name]) {
                summary.apiCallsReplaced += 1
                return
            }
            if let name = recipient, !adapters.contains(where: { $0.core.text == name }) {
                // A record for a core this replay does not run: nobody's input.
                summary.apiCallsForOtherCores += 1
                return
            }
        }
        // The dissection is moved into the frame, not copied: a copy retains and releases each of
        // its texts and arrays once more per frame. The bytes become a span with the standard
        // library's `RawSpan(_unsafeBytes:)`, which back-deploys with the span types to every
        // release the package supports; the public `UnsafeRawBufferPointer.bytes` needs macOS and
        // iOS 26. The span lives no longer than `bytes`, which the reader lends for this call.
        let frame = ReplayFrame(
            number: header.number, virtualTimeNs: virtualNs, timestampNs: header.timestampNs,
            interface: route.interface, dissected: wanted == .dissected ? dissected.take() : nil, apiCall: apiCall
        )
        feed(frame, bytes: RawSpan(_unsafeBytes: bytes), route: route, recipient: recipient, state: &state, summary: &summary, emit: emit)
    }

    /// Hands one frame to every adapter its route names (only `recipient`'s, when given).
    private mutating func feed(_ frame: ReplayFrame, bytes: RawSpan, route: InterfaceRoute, recipient: String?, state: inout RunState,
                               summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        frameObserver?(frame.number)
        for i in adapters.indices where route.inputs[i] != .ignore {
            if let recipient, adapters[i].core.text != recipient { continue }
            adapters[i].frame(frame, bytes: bytes, now: state.clock, emit: emit)
            state.consecutiveTimeouts[i] = 0
        }
        summary.framesFed += 1
        state.consecutiveWakeUps = 0
        if closedLoop != nil { deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit) }
    }

    /// Delivers the frames faults made late (or repeated, or altered) that are due at or before
    /// `limit`, in time order, each after the deadlines due at its instant.
    private mutating func deliverPending(through limit: Duration, state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        while !state.halted, let first = state.pending.first, let at = first.at, at <= limit {
            state.pending.removeFirst()
            fireDeadlines(through: at, state: &state, summary: &summary, emit: emit)
            if state.halted { return }
            state.clock = max(state.clock, at)
            deliver(first, state: &state, summary: &summary, emit: emit)
        }
    }

    /// One late or altered captured frame, or a frame a fault put on a link, to the adapters of its
    /// interface.
    private mutating func deliver(_ pending: PendingFrame, state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        guard let route = state.knownRoute(pending.interfaceIndex) else { return }
        let wanted = route.wanted
        guard wanted != .ignore else { return }
        pending.bytes.withUnsafeBytes { bytes in
            var dissected = pending.dissected
            if pending.redissect, wanted == .dissected {
                state.dissectedOtherFrames = true
                dissected = state.dissect(bytes, flags: pending.flags, interface: route.interface)
            }
            let frame = ReplayFrame(
                number: pending.number, virtualTimeNs: state.clock.replayNanoseconds, timestampNs: pending.timestampNs,
                interface: route.interface, dissected: dissected, apiCall: nil)
            feed(frame, bytes: RawSpan(_unsafeBytes: bytes), route: route, recipient: nil, state: &state, summary: &summary, emit: emit)
        }
    }

    /// Fires every deadline and delivers every scheduled call at or before `limit`, in time order;
    /// at one instant, deadlines first.
    mutating func advance(through limit: Duration, state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        // A plain replay (no faults, nothing held, no scheduled call left) has the adapters'
        // deadlines alone: gathering the other three sources below cost two arrays per frame.
        if state.injector == nil, state.pending.isEmpty, state.nextCall >= scheduledCalls.count {
            return fireDeadlines(through: limit, state: &state, summary: &summary, emit: emit)
        }
        while !state.halted {
            // Three sources besides the adapters' own deadlines, each fired after the deadlines of
            // its instant: the faults' timers (a link drops, a reorder block closes), the frames
            // faults made late, then the scheduled calls.
            let faultAt = state.injector?.nextDeadline.map { max($0, state.clock) }
            let pendingAt = state.pending.first?.at.map { max($0, state.clock) }
            let callAt = state.nextCall < scheduledCalls.count ? max(scheduledCalls[state.nextCall].at, state.clock) : nil
            guard let next = [faultAt, pendingAt, callAt].compactMap({ $0 }).min(), next <= limit else { break }
            fireDeadlines(through: next, state: &state, summary: &summary, emit: emit)
            if state.halted { break }
            state.clock = max(state.clock, next)
            if faultAt == next, var injector = state.injector {
                let (frames, releases) = injector.fire(now: next, emit: emit)
                state.injector = injector
                for release in releases { state.release(release) }
                for linkFrame in frames {
                    deliver(PendingFrame(at: next, extraDelay: .zero, ticket: nil, number: 0, timestampNs: 0, interfaceIndex: linkFrame.interfaceIndex,
                                         bytes: linkFrame.frame.bytes, flags: linkFrame.frame.flags, redissect: true, dissected: nil),
                            state: &state, summary: &summary, emit: emit)
                }
                continue
            }
            if pendingAt == next {
                deliverPending(through: next, state: &state, summary: &summary, emit: emit)
                continue
            }
            let call = scheduledCalls[state.nextCall]
            state.nextCall += 1
            guard let i = adapters.firstIndex(where: { $0.core.text == call.core }) else { continue }
            deliver(call, toAdapter: i, from: "scheduled-calls", state: &state, emit: emit)
            summary.scheduledCallsDelivered += 1
            if closedLoop != nil { deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit) }
        }
        fireDeadlines(through: limit, state: &state, summary: &summary, emit: emit)
    }

    /// Whether a replaced core's recorded record is one of the calls still delivered.
    static func isKept(_ record: APICallRecord?, among kept: Set<String>?) -> Bool {
        guard let kept, case .parsed(let members)? = record, case .string(let call)? = members["call"] else { return false }
        return kept.contains(call)
    }

    /// Sorted by instant, keeping the given order among calls of one instant.
    static func stablySorted(_ calls: [ScheduledAPICall]) -> [ScheduledAPICall] {
        calls.enumerated().sorted { ($0.element.at, $0.offset) < ($1.element.at, $1.offset) }.map(\.element)
    }

    /// Fires every adapter deadline at or before `limit`, earliest first, ties in adapter order;
    /// and wakes the app in the loop at each instant it waits for (``ClosedLoopInputs/nextWake``),
    /// after the deadlines of that instant.
    private mutating func fireDeadlines(through limit: Duration, state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        while !state.halted {
            var chosen: (index: Int, deadline: Duration)?
            for i in adapters.indices {
                guard let deadline = adapters[i].nextDeadlineInPlace() else { continue }
                if let earliest = chosen, earliest.deadline <= deadline { continue }
                chosen = (i, deadline)
            }
            if let app = closedLoop, let wake = app.nextWake, wake <= limit, chosen.map({ wake < $0.deadline }) ?? true {
                wakeApp(app, at: wake, state: &state, summary: &summary, emit: emit)
                continue
            }
            guard let (i, deadline) = chosen, deadline <= limit else { return }
            let now = max(deadline, state.clock)
            state.clock = now
            adapters[i].timeout(now: now, emit: emit)
            summary.timeoutsFired += 1
            if closedLoop != nil { deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit) }
            if state.consecutiveTimeouts[i] == 0 { state.firstTimeout[i] = now }
            state.consecutiveTimeouts[i] += 1
            let stuck = adapters[i].nextDeadlineInPlace().map { $0 <= now } ?? false
            if let runaway = RunawayTimers(core: adapters[i].core.text, inARow: state.consecutiveTimeouts[i], from: state.firstTimeout[i],
                                           to: now, deadlineDidNotAdvance: stuck) {
                summary.runawayTimers.append(runaway)
                state.halted = true
            }
        }
    }

    /// Wakes the app in the loop at `wake` (a sleep on its clock), then delivers the calls it made.
    /// Its wake-ups are held to a core's dense-timer rule: 100,000 in a row with no frame between
    /// them, under 1 µs apart on average, stop the replay. Not to the rule of a deadline that does
    /// not advance: an app task on Swift's pool may begin a sleep at an instant the replay has
    /// already passed, and is woken late, not stuck. An app whose `wake(now:)` never clears the
    /// instant is caught by the dense rule, its wake-ups all at one instant.
    @inline(never)  // off the path of a replay without an app: fireDeadlines stays as small as it was
    private mutating func wakeApp(_ app: any ClosedLoopInputs, at wake: Duration, state: inout RunState,
                                  summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        let now = max(wake, state.clock)
        state.clock = now
        app.wake(now: now)
        summary.appWakeUps += 1
        deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit)
        if state.consecutiveWakeUps == 0 { state.firstWakeUp = now }
        state.consecutiveWakeUps += 1
        if let runaway = RunawayTimers(core: "app", inARow: state.consecutiveWakeUps, from: state.firstWakeUp, to: now,
                                       deadlineDidNotAdvance: false) {
            summary.runawayTimers.append(runaway)
            state.halted = true
        }
    }

    /// Whether this engine in `state`, reading the same frames from here on, goes on exactly as
    /// `other` in `otherState` does: every adapter in the same state as its counterpart
    /// (``CoreAdapter/hasSameState(as:)``), and the engine's own state the same
    /// (``RunState/hasSameFuture(as:)``).
    func hasSameFuture(as other: ReplayEngine, state: RunState, otherState: RunState) -> Bool {
        guard adapters.count == other.adapters.count, state.hasSameFuture(as: otherState) else { return false }
        return adapters.indices.allSatisfy { adapters[$0].hasSameState(as: other.adapters[$0]) }
    }

    /// The dissector the engine runs per interface: records, links and datagrams, no one-line
    /// summaries, no kept TCP payload. An adapter that prescans a capture uses the same, so it sees
    /// what replay will feed it.
    public static func replayDissector(namedHandles: [UInt16: GATTHandleName]) -> FrameDissector {
        RunState.replayDissector(namedHandles)
    }

    /// `a - b` saturating at the ends of Int64 (timestamps come from the file and may be anything).
    static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (d, overflow) = a.subtractingReportingOverflow(b)
        if overflow { return a < b ? .min : .max }
        return d
    }
}
