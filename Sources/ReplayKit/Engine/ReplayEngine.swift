import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors

/// What a replay run did, besides its trace.
public struct ReplaySummary: Sendable, Hashable {
    /// Frames read from the capture file.
    public var framesRead: Int = 0
    /// Frames handed to at least one adapter.
    public var framesFed: Int = 0
    /// `timeout(now:)` calls made.
    public var timeoutsFired: Int = 0
    /// Frames whose timestamp was earlier than the frame before them; they were fed at the
    /// earlier frame's instant, because virtual time never goes backwards.
    public var framesOutOfOrder: Int = 0
    /// Capture timestamp of the first frame (ns since the Unix epoch): virtual time zero.
    public var firstTimestampNs: Int64?
    /// Virtual time of the last frame.
    public var lastFrameTimeNs: Int64 = 0
    /// Virtual time at which the adapters were finished (the last frame, or the last deadline
    /// fired after it).
    public var endTimeNs: Int64 = 0
    /// Bytes of the capture file consumed.
    public var bytesRead: UInt64 = 0
    /// The reader's warnings (a cut-off tail, skipped blocks) and the engine's own.
    public var warnings: [String] = []
    /// `api-calls` records addressed to a core this replay does not run.
    public var apiCallsForOtherCores: Int = 0
    /// Captured `api-calls` records not delivered because scheduled calls replace them.
    public var apiCallsReplaced: Int = 0
    /// Scheduled calls delivered.
    public var scheduledCallsDelivered: Int = 0
    /// Cores the engine stopped because their timers ran away; the replay stopped with them.
    public var runawayTimers: [RunawayTimers] = []
    /// Calls an app in the loop made (``ReplayEngine/closedLoop``), delivered.
    public var closedLoopCallsDelivered: Int = 0
    /// `fault_injected` events written: how many times the run's faults changed what reached
    /// the cores (docs/faults.md).
    public var faultsApplied: Int = 0

    /// An empty summary.
    public init() {}
}

/// A core whose deadlines fired without end: asked again for the instant it had just been given
/// (a deadline that does not advance), or fired ``consecutiveLimit`` timeouts in a row with no
/// input between them, less than ``minimumAverageSpacing`` apart on average (a timer of a
/// nanosecond, from a timeout setting of 0). Either would keep replay busy for hours at flat
/// memory, so the engine stops the replay and says which core did it. A busy core is not a
/// runaway: a millisecond timer may fire for as long as the capture lasts.
public struct RunawayTimers: Sendable, Hashable, CustomStringConvertible {
    /// How many timeouts in a row, with no input between them, are allowed within ``spanLimit``.
    public static let consecutiveLimit = 100_000
    /// The average time between those timeouts below which they count as a runaway.
    public static let minimumAverageSpacing = Duration.microseconds(1)

    /// The core.
    public var core: String
    /// Timeouts fired in a row with no input between them.
    public var timeouts: Int
    /// Virtual time of the first of them.
    public var fromNs: Int64
    /// Virtual time of the last.
    public var toNs: Int64
    /// `true` when the core asked again for the very instant it had just handled.
    public var deadlineDidNotAdvance: Bool

    /// What happened, in one sentence.
    public var description: String {
        if deadlineDidNotAdvance {
            return "core \(core) asked for a deadline no later than the timeout it had just handled at \(fromNs) ns, so its clock would never advance"
        }
        return "core \(core) fired \(timeouts) timeouts in a row with no input, from \(fromNs) ns to \(toNs) ns of virtual time "
            + "(\((toNs - fromNs) / Int64(max(timeouts - 1, 1))) ns apart on average)"
    }
}

/// How far a long replay has got, for a progress display.
public struct ReplayProgress: Sendable, Hashable {
    /// Frames read so far.
    public var framesRead: Int
    /// Bytes of the capture file consumed so far.
    public var bytesRead: UInt64
}

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
///   last instant reached.
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
        state.namedHandles = Dictionary(gattHandles.map { ($0.handle, (service: $0.serviceUUID, characteristic: $0.characteristicUUID)) },
                                        uniquingKeysWith: { first, _ in first })
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
        do {
            return try reader.withNextFrame { view in
                body(FrameHeader(number: view.number, interfaceIndex: view.interfaceIndex, timestampNs: view.timestampNs, flags: view.flags), view.data)
            }
        } catch let error as CaptureError {
            throw error
        } catch {
            throw CaptureError(
                kind: .io, file: reader.path, offset: reader.bytesRead, recordNumber: framesRead + 1,
                expected: "a readable frame", found: "\(error)", hint: "Check the file with `tether inspect`.")
        }
    }

    /// After the last frame: the drain (deadlines up to ``drainHorizon`` past the last input),
    /// the warnings, and every adapter's `finish`.
    mutating func finishRun(reader: any CaptureReader, state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        // The drain runs on past the last frame, and past the last scheduled call.
        let lastCall = scheduledCalls.last.map { max($0.at, state.clock) } ?? state.clock
        // …and past the last frame a fault made late.
        let lastLate = state.pending.compactMap(\.at).max() ?? state.clock
        let (horizon, overflow) = max(lastCall, lastLate, state.clock).replayNanoseconds.addingReportingOverflow(drainHorizon.replayNanoseconds)
        advance(through: .nanoseconds(overflow ? Int64.max : horizon), state: &state, summary: &summary, emit: emit)
        if state.nextCall < scheduledCalls.count {
            summary.warnings.append("\(scheduledCalls.count - state.nextCall) scheduled call(s) fell after the drain horizon and were not delivered.")
        }
        for core in Set(scheduledCalls.map(\.core)) where !adapters.contains(where: { $0.core == core }) {
            summary.warnings.append("scheduled calls for core \(core) were not delivered: this replay does not run that core.")
        }
        if !state.pending.isEmpty {
            summary.warnings.append("\(state.pending.count) frame(s) a fault made late fell after the drain horizon and were not delivered.")
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
            guard let i = adapters.firstIndex(where: { $0.core == call.core }) else {
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
            interface: interface, bytes: UnsafeRawBufferPointer(start: nil, count: 0), apiCall: .parsed(call.record))
        adapters[i].frame(frame, now: state.clock, emit: emit)
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
                if let owner, adapter.core != owner { return .ignore }
                return adapter.input(for: interface)
            })
        }
        if let progress, progressEvery > 0, summary.framesRead % progressEvery == 0 {
            progress(ReplayProgress(framesRead: summary.framesRead, bytesRead: reader.bytesRead))
        }
        guard let wanted = route.inputs.max(), wanted != .ignore else { return }

        var dissected: DissectedFrame?
        let faulted = state.injector != nil && !route.interface.carriesAPICalls
        let observed = peerFrameObserver != nil && !route.interface.carriesAPICalls
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
        if route.interface.carriesAPICalls {
            do throws(TraceFormatError) {
                apiCall = .parsed(try JSONLiteral.parseObject(bytes, label: "frame \(header.number)"))
            } catch {
                apiCall = .malformed(error.description)
            }
            recipient = apiCall?.core ?? unlabelledAPICallsCore
            if let name = recipient, replacedCallCores.contains(name), !Self.isKept(apiCall, among: keptCallsOfReplacedCores[name]) {
                summary.apiCallsReplaced += 1
                return
            }
            if let name = recipient, !adapters.contains(where: { $0.core == name }) {
                // A record for a core this replay does not run: nobody's input.
                summary.apiCallsForOtherCores += 1
                return
            }
        }
        // The dissection is moved into the frame, not copied: a copy retains and releases each of
        // its texts and arrays once more per frame.
        let frame = ReplayFrame(
            number: header.number, virtualTimeNs: virtualNs, timestampNs: header.timestampNs,
            interface: route.interface, bytes: bytes, dissected: wanted == .dissected ? dissected.take() : nil, apiCall: apiCall
        )
        feed(frame, route: route, recipient: recipient, state: &state, summary: &summary, emit: emit)
    }

    /// Hands one frame to every adapter its route names (only `recipient`'s, when given).
    private mutating func feed(_ frame: ReplayFrame, route: InterfaceRoute, recipient: String?, state: inout RunState,
                               summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        frameObserver?(frame.number)
        for i in adapters.indices where route.inputs[i] != .ignore {
            if let recipient, adapters[i].core != recipient { continue }
            adapters[i].frame(frame, now: state.clock, emit: emit)
            state.consecutiveTimeouts[i] = 0
        }
        summary.framesFed += 1
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
        guard let wanted = route.inputs.max(), wanted != .ignore else { return }
        pending.bytes.withUnsafeBytes { bytes in
            var dissected = pending.dissected
            if pending.redissect, wanted == .dissected {
                state.dissectedOtherFrames = true
                dissected = state.dissect(bytes, flags: pending.flags, interface: route.interface)
            }
            let frame = ReplayFrame(
                number: pending.number, virtualTimeNs: state.clock.replayNanoseconds, timestampNs: pending.timestampNs,
                interface: route.interface, bytes: bytes, dissected: dissected, apiCall: nil)
            feed(frame, route: route, recipient: nil, state: &state, summary: &summary, emit: emit)
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
            guard let i = adapters.firstIndex(where: { $0.core == call.core }) else { continue }
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

    /// Fires every adapter deadline at or before `limit`, earliest first, ties in adapter order.
    private mutating func fireDeadlines(through limit: Duration, state: inout RunState, summary: inout ReplaySummary, emit: (TraceEvent) -> Void) {
        while !state.halted {
            var chosen: (index: Int, deadline: Duration)?
            for i in adapters.indices {
                guard let deadline = adapters[i].nextDeadlineInPlace() else { continue }
                if let earliest = chosen, earliest.deadline <= deadline { continue }
                chosen = (i, deadline)
            }
            guard let (i, deadline) = chosen, deadline <= limit else { return }
            let now = max(deadline, state.clock)
            state.clock = now
            adapters[i].timeout(now: now, emit: emit)
            summary.timeoutsFired += 1
            if closedLoop != nil { deliverClosedLoopCalls(state: &state, summary: &summary, emit: emit) }
            if state.consecutiveTimeouts[i] == 0 { state.firstTimeout[i] = now }
            state.consecutiveTimeouts[i] += 1
            let count = state.consecutiveTimeouts[i]
            let stuck = adapters[i].nextDeadlineInPlace().map { $0 <= now } ?? false
            let dense = count >= RunawayTimers.consecutiveLimit
                && now - state.firstTimeout[i] < RunawayTimers.minimumAverageSpacing * (count - 1)
            if stuck || dense {
                summary.runawayTimers.append(RunawayTimers(
                    core: adapters[i].core, timeouts: count, fromNs: (stuck ? now : state.firstTimeout[i]).replayNanoseconds,
                    toNs: now.replayNanoseconds, deadlineDidNotAdvance: stuck))
                state.halted = true
            }
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
    public static func replayDissector(namedHandles: [UInt16: (service: String?, characteristic: String)]) -> FrameDissector {
        RunState.replayDissector(namedHandles)
    }

    /// `a - b` saturating at the ends of Int64 (timestamps come from the file and may be anything).
    static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (d, overflow) = a.subtractingReportingOverflow(b)
        if overflow { return a < b ? .min : .max }
        return d
    }
}

extension CoreAdapter {
    /// ``nextDeadline``, asked through a mutating call, though it changes nothing: on an adapter
    /// in the engine's array a non-mutating call copied the adapter out (its box retained and
    /// released) for every question, one per frame and two per timeout; a mutating one reaches
    /// the adapter in place.
    fileprivate mutating func nextDeadlineInPlace() -> Duration? { nextDeadline }
}

/// The parts of a frame's header the engine uses.
struct FrameHeader {
    var number: Int
    var interfaceIndex: Int
    var timestampNs: Int64
    /// The pcapng `epb_flags`, when the block has them.
    var flags: UInt32?
}

/// A frame a fault made late, repeated, altered or held back, copied out of the reader's buffer.
struct PendingFrame {
    /// When it reaches the cores; `nil` while a reorder block holds it.
    var at: Duration?
    /// The delay faults added on top of a reorder block's release.
    var extraDelay: Duration
    /// The reorder ticket holding it.
    var ticket: Int?
    var number: Int
    var timestampNs: Int64
    var interfaceIndex: Int
    var bytes: [UInt8]
    var flags: UInt32?
    /// The bytes are not the captured ones: dissect them when delivered.
    var redissect: Bool
    var dissected: DissectedFrame?
    var order = 0

    /// The same frame, due at the same instant, whatever its place in the queue's numbering
    /// (``RunState/hasSameFuture(as:)``).
    func isSameDelivery(as other: PendingFrame) -> Bool {
        at == other.at && extraDelay == other.extraDelay && ticket == other.ticket && number == other.number
            && timestampNs == other.timestampNs && interfaceIndex == other.interfaceIndex && bytes == other.bytes
            && flags == other.flags && redissect == other.redissect && dissected == other.dissected
    }

    static func precedes(_ a: PendingFrame, _ b: PendingFrame) -> Bool {
        switch (a.at, b.at) {
        case let (x?, y?): return (x, a.order) < (y, b.order)
        case (_?, nil): return true
        case (nil, _?): return false
        case (nil, nil): return a.order < b.order
        }
    }
}

/// Which adapters want an interface's frames, decided once per interface.
struct InterfaceRoute {
    var interface: ReplayInterface
    var inputs: [ReplayInput]
}

/// The engine's mutable state during one run.
struct RunState {
    var clock: Duration = .zero
    /// The next of the engine's scheduled calls to deliver.
    var nextCall = 0
    /// Per adapter: timeouts fired since its last input, and when the first of them fired.
    var consecutiveTimeouts: [Int]
    var firstTimeout: [Duration]
    /// Set when an adapter's timers ran away: no frame is read and no deadline fired after it.
    var halted = false
    /// Indexed by interface index; grows as interfaces appear.
    var routes: [InterfaceRoute?] = []
    /// One dissector per interface, because ACL reassembly state belongs to one link.
    var dissectors: [Int: FrameDissector] = [:]
    /// The manifest's `gatt_handles`, given to every interface's dissector.
    var namedHandles: [UInt16: (service: String?, characteristic: String)] = [:]
    /// The run's faults, when it has any.
    var injector: FaultInjector?
    /// Frames faults made late, repeated or altered, by instant (held reorder frames, without
    /// one, last).
    var pending: [PendingFrame] = []
    private var pendingOrder = 0
    /// Set once a frame the capture does not hold (one a fault put on a link, or altered bytes)
    /// went through a dissector: from then on the dissectors' state is not a function of the
    /// captured frames read alone (``hasSameFuture(as:)``).
    var dissectedOtherFrames = false

    /// Whether a run in this state, reading the same frames from here on, goes on exactly as a run
    /// in `other` does, its adapters aside (``ReplayEngine/hasSameFuture(as:state:otherState:)``):
    /// what a fault sweep asks of a variant and the run without its fault at the same frame.
    ///
    /// The routes and the dissectors are not compared: both are a function of the captured frames
    /// read so far, the same in both runs (every captured frame is dissected as it is read, before
    /// any fault decides its fate), unless a frame the capture does not hold was dissected
    /// (``dissectedOtherFrames``), and then the answer is `false`. The queue's numbering of late
    /// frames is left out (only their order matters), as are the summary's counts.
    func hasSameFuture(as other: RunState) -> Bool {
        // An adapter's first timeout in a row counts only while it has a row (after an input the
        // next timeout sets it afresh).
        guard !dissectedOtherFrames, !other.dissectedOtherFrames, clock == other.clock, nextCall == other.nextCall,
              halted == other.halted, consecutiveTimeouts == other.consecutiveTimeouts,
              consecutiveTimeouts.indices.allSatisfy({ consecutiveTimeouts[$0] == 0 || firstTimeout[$0] == other.firstTimeout[$0] }),
              pending.count == other.pending.count, zip(pending, other.pending).allSatisfy({ $0.isSameDelivery(as: $1) })
        else { return false }
        switch (injector, other.injector) {
        case (nil, nil): return true
        case let (a?, b?): return a.hasSameState(as: b)
        default: return false
        }
    }

    /// Queues a frame, keeping `pending` sorted by instant and, within one, by arrival.
    mutating func enqueue(_ frame: PendingFrame) {
        var frame = frame
        pendingOrder += 1
        frame.order = pendingOrder
        let index = pending.firstIndex { PendingFrame.precedes(frame, $0) } ?? pending.endIndex
        pending.insert(frame, at: index)
    }

    /// A reorder block let go: its held frames get the release instant, in the block's order.
    mutating func release(_ release: FaultInjector.Release) {
        for ticket in release.tickets {
            guard let index = pending.firstIndex(where: { $0.ticket == ticket }) else { continue }
            var frame = pending.remove(at: index)
            frame.at = release.at + frame.extraDelay
            frame.ticket = nil
            enqueue(frame)
        }
    }

    /// The route of an interface that has had a frame.
    func knownRoute(_ index: Int) -> InterfaceRoute? {
        index >= 0 && index < routes.count ? routes[index] : nil
    }

    init(adapterCount: Int) {
        consecutiveTimeouts = Array(repeating: 0, count: adapterCount)
        firstTimeout = Array(repeating: .zero, count: adapterCount)
    }

    /// The manifest's interfaces by index.
    var manifestInterfaces: [Int: ManifestInterface] = [:]

    mutating func route(for index: Int, make: (ManifestInterface?) -> InterfaceRoute) -> InterfaceRoute {
        if index >= 0, index < routes.count, let route = routes[index] { return route }
        let route = make(manifestInterfaces[index])
        // Interface indices come from the file; a wild one is routed each time rather than
        // growing an array to its size.
        if index >= 0, index < 4096 {
            if index >= routes.count { routes.append(contentsOf: repeatElement(nil, count: index + 1 - routes.count)) }
            routes[index] = route
        }
        return route
    }

    mutating func dissect(_ bytes: UnsafeRawBufferPointer, flags: UInt32?, interface: ReplayInterface) -> DissectedFrame {
        // Mutated in place: a copy taken out of the dictionary would copy the dissector's state
        // (reassembly buffers, GATT databases) on every frame. Looked up by index, not compared
        // with `nil`: `dissectors[i] == nil` copied the whole dissector out (a retain and release
        // of each of its buffers and tables) for every frame.
        let slot: Dictionary<Int, FrameDissector>.Index
        if let found = dissectors.index(forKey: interface.index) {
            slot = found
        } else {
            var dissector = Self.replayDissector(namedHandles)
            // A TCP interface's `broker_port` tells the dissector which connections are MQTT.
            if let port = interface.parameter("broker_port", as: UInt16.self) { dissector.mqttPorts.insert(port) }
            dissectors[interface.index] = dissector
            slot = dissectors.index(forKey: interface.index)!
        }
        return dissectors.values[slot].dissect(bytes: bytes, flags: flags, linkType: interface.linkType)
    }

    /// Adapters read records, links and datagrams, never the one-line summaries.
    static func replayDissector(_ namedHandles: [UInt16: (service: String?, characteristic: String)]) -> FrameDissector {
        var dissector = FrameDissector(namedHandles: namedHandles)
        dissector.producesSummaries = false
        dissector.retainsTCPPayload = false
        return dissector
    }
}
