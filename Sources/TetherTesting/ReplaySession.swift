import AppLoop
import BehaviourTrace
import CaptureSet
import CentralIntegration
import DequeModule
import Foundation
import ReplayKit
import Synchronization
import TetherIntegrations
import TimelineReport

/// A recording replayed with the app's own code in the loop: the app's SDK calls (through
/// `TetherConnectIQ`, `TetherWatchConnectivity` and — with ``init(replayingPeripheralOf:faults:)``,
/// over any BLE capture — `TetherCoreBluetooth`, bound with ``makeCurrent()``) reach the core
/// at the current virtual instant, and the recorded peer answers what the core actually sends,
/// with its recorded delays (responder frame matching). Callbacks arrive in virtual-time order on
/// the thread that calls ``run()``; nothing waits in real time, and two runs of the same app code
/// give byte-identical traces.
///
/// ```swift
/// import Testing
/// import TetherConnectIQ
/// import TetherTesting
///
/// @Test func workoutIsSentOnce() throws {
///     let session = try ReplaySession(replaying: "Captures/ciq-clean")
///     session.makeCurrent()
///     let sync = WorkoutSync()            // the app's own class, written against ConnectIQ
///     sync.start(url: URL(string: session.deviceSelectionURL!)!)
///     try session.run()
///     #expect(sync.completed == [.success], "\(session.report)")
/// }
/// ```
///
/// What is replaced: the recorded API calls of the messaging and session cores are not delivered
/// (the app makes its own), except the host's facts (which device is at which address, the
/// process starting, Bluetooth state; ``CoreIntegration/hostFactCalls``). Everything else — the
/// link, the watch's own initiatives, faults — comes from the recording as in `tether replay`.
///
/// Drive it from one thread at a time; callbacks run on that thread, inside ``run()`` and
/// ``run(for:)``. A call made from a callback is delivered after the input that caused the
/// callback, at the same virtual instant. App code that awaits (on ``clock``, say) runs at exact
/// instants when started on ``taskExecutor``: `Task(executorPreference: session.taskExecutor) { … }`.
///
/// `@unchecked Sendable`: the mutable state is touched by the thread driving the session (the
/// contract above), except what an app task on Swift's pool may reach while that thread runs on —
/// the virtual instant, the trace, the app's early events, the warnings, the promise checker, and
/// whether calls are held or a run is going (``recordAppEvent(_:fields:)``, ``warn(_:)``,
/// ``now``) — which is under `stateLock`. The app's posted calls (`inboxLock`), the clock's
/// sleepers (`sleepers`), the facades' bindings and the task executor lock for themselves, and
/// tasks on ``taskExecutor`` run on the driving thread.
public final class ReplaySession: AppLoopHost, ClosedLoopInputs, @unchecked Sendable {

    /// The set's name (its folder's last component).
    public let name: String
    /// The cores replaying it, in adapter order.
    public let cores: [String]

    private let set: LoadedCaptureSet
    private let registry: IntegrationRegistry
    private var stepped: SteppedReplay?
    /// Guards the state an app task woken by ``clock`` may touch (see the note above). Never held
    /// while a callback runs: the app's code may call back into the session.
    private let stateLock = NSLock()
    private var nowNs: Int64 = 0
    private var running = false
    /// Where the app's calls made before the first run reach the core: just before the recorded
    /// app's first call, so the app starts where the recorded one did.
    private var appStart: Duration?
    /// Set until the first run has reached ``appStart``: the app's calls wait.
    private var holdingCalls = false
    /// The app's events written before the first run: written when its calls are let through,
    /// as a live host writes them when it has started.
    private var earlyAppEvents: [TraceEvent] = []
    private let inboxLock = NSLock()
    private var inbox = Deque<Posted>()
    private let bindings = AppLoopBindings()
    private var promiseChecker: PromiseChecker
    private var finalSummary: ReplaySummary?
    private var sessionWarnings: [String] = []
    let sleepers = Mutex<[(deadline: Duration, order: Int, wake: CheckedContinuation<Void, any Error>)]>([])
    /// The order sleepers registered in, for ties; and whether the session has finished, after
    /// which no sleeper registers. Both under `sleepers`' lock (read and written only inside it).
    private var sleeperOrder = 0
    private var clockEnded = false

    /// Every trace event written so far: the cores', and the app's own (core `app`: each SDK call
    /// the app made and each callback delivered).
    public var trace: [TraceEvent] { stateLock.withLock { traceStorage } }
    private var traceStorage: [TraceEvent] = []

    private enum Posted {
        case call(core: String, record: [String: TraceValue])
        case work(() -> Void)
    }

    /// Loads the set at `path`, checks its SHA-256, and prepares its replay at virtual time zero
    /// with the app in the loop. Nothing runs until ``run()`` or ``run(for:)``.
    ///
    /// - Parameters:
    ///   - path: The set's folder (relative to the current directory, which `swift test` sets to
    ///     the package's root).
    ///   - faults: Faults in `tether replay --fault`'s syntax (`drop:frame=192`,
    ///     `disconnect:at=4s`; docs/faults.md).
    ///   - settings: `CORE.KEY=VALUE` changes to the manifest's sections, as `tether replay --set`.
    ///   - integrations: The cores that may replay it.
    ///   - appCores: The cores whose recorded calls the app's own replace: by default the two the
    ///     SDK facades drive (`messaging`, `session`); a facade of your own for a core of your own
    ///     adds that core's name.
    /// - Throws: ``TetherTestingError`` naming the file and what to do: the set cannot be loaded,
    ///   a fault or setting is refused, or the set has no recording of a side an SDK facade can
    ///   stand for (a Connect IQ or session link seen from the phone).
    public convenience init(replaying path: String, faults: [String] = [], settings: [String] = [],
                            integrations: IntegrationRegistry = TetherIntegrations.builtIn,
                            appCores: Set<String> = ReplaySession.sdkCores) throws(TetherTestingError) {
        try self.init(path: path, faults: faults, settings: settings, integrations: integrations, appCores: appCores, onlyCores: nil)
    }

    /// Loads the set at `path` and serves the BLE peripheral its capture recorded to the app's own
    /// CoreBluetooth code (`TetherCoreBluetooth`'s `CBCentralManager`, bound with ``makeCurrent()``),
    /// on the virtual clock: the recorded advertising, connection, GATT database, answers,
    /// notifications and disconnection, each at its recorded instant when the app asks as the
    /// recorded central did (docs/corebluetooth.md). Any set with a Bluetooth HCI interface will
    /// do, whatever cores its manifest names: they describe the recorded app, which is replaced.
    ///
    /// ```swift
    /// let session = try ReplaySession(replayingPeripheralOf: "Captures/hr-clean", faults: ["drop:frame=80"])
    /// session.makeCurrent()
    /// let monitor = HeartRateMonitor()   // the app's own class, written against CoreBluetooth
    /// monitor.start()
    /// try session.run()
    /// ```
    /// - Parameter faults: Faults in `tether replay --fault`'s syntax: a dropped notification is
    ///   never delivered, `delay` moves it, `disconnect:at=` drops the link (a connection timeout),
    ///   `att-error` answers a request with that ATT error.
    /// - Throws: ``TetherTestingError`` when the set cannot be loaded, a fault is refused, or the
    ///   capture holds no Bluetooth ATT traffic to build the peripheral from.
    public convenience init(replayingPeripheralOf path: String, faults: [String] = []) throws(TetherTestingError) {
        try self.init(path: path, faults: faults, settings: [], integrations: IntegrationRegistry([CentralIntegration()]),
                      appCores: [CentralIntegration.coreName], onlyCores: [CentralIntegration.coreName])
    }

    init(path: String, faults: [String], settings: [String], integrations: IntegrationRegistry,
         appCores: Set<String>, onlyCores: [String]?) throws(TetherTestingError) {
        self.appCores = appCores
        let overrides = try validatedSettings(settings, integrations: integrations)
        var parsedFaults: [Fault] = []
        do throws(FaultSpecError) {
            try Fault.checkCount(faults)
        } catch {
            throw TetherTestingError(message: "ReplaySession(replaying: \(path)): \(error.description)")
        }
        for text in faults {
            do throws(FaultSpecError) {
                parsedFaults.append(try Fault(parsing: text))
            } catch {
                throw TetherTestingError(message: "ReplaySession(replaying: \(path)): fault \"\(text)\": \(error.description)")
            }
        }
        var options = ReplayOptions(integrations: integrations, verify: true, settings: overrides, frameMatching: .responder)
        options.faults = parsedFaults
        options.replacedCallCores = appCores
        options.onlyCores = onlyCores
        self.registry = integrations
        do throws(ReplayError) {
            set = try loadReplaySet(at: path, options: options)
            let made = try steppedReplay(of: set, options: options, closedLoop: nil)
            stepped = made.run
            cores = made.cores
            sessionWarnings = made.warnings
        } catch {
            throw TetherTestingError(message: error.description)
        }
        name = set.directory.name
        guard cores.contains(where: appCores.contains) else {
            let interfaces = set.manifest.interfaces.map { "\($0.index) (\($0.role?.rawValue ?? "undescribed"))" }.joined(separator: ", ")
            throw TetherTestingError(message: "capture set \(path): it replays only \(cores.joined(separator: ", ")) (interfaces \(interfaces)), "
                + "so no SDK facade can stand in for the app: ReplaySession needs a recording of a core the app drives (\(appCores.sorted().joined(separator: ", "))): "
                + "the phone's side of a Connect IQ link (core messaging) or of the session link (core session). "
                + "Record one with `tether live messaging --record` or `tether live session --role phone --record`. "
                + "For CoreBluetooth code, serve the capture's peripheral with ReplaySession(replayingPeripheralOf:) (docs/corebluetooth.md).")
        }
        var promises: [(core: TraceName, promise: CorePromise)] = []
        var correlations: [TraceName: [TraceCorrelation]] = [:]
        for core in cores {
            guard let integration = integrations.integration(named: core) else { continue }
            promises += integration.promises.map { (TraceName(core), $0) }
            correlations[TraceName(core)] = integration.correlations
        }
        promiseChecker = PromiseChecker(promises: promises, correlations: correlations, plain: nil)
        let hostFacts = Dictionary(appCores.compactMap { core in integrations.integration(named: core).map { (core, $0.hostFactCalls) } },
                                   uniquingKeysWith: { a, _ in a })
        let unlabelled = integrations.integrations.first { $0.takesUnlabelledAPICalls && cores.contains($0.name) }?.name
        if let first = RecordedCalls.firstAppCallInstant(in: set, cores: appCores, unlabelledCore: unlabelled, hostFacts: hostFacts),
           first > .zero {
            appStart = first - .nanoseconds(1)
            holdingCalls = true
        }
        stepped?.setClosedLoop(self)
    }

    /// Loads the set at a file URL (a test bundle's resource folder, say).
    public convenience init(replaying url: URL, faults: [String] = [], settings: [String] = [],
                            integrations: IntegrationRegistry = TetherIntegrations.builtIn) throws(TetherTestingError) {
        try self.init(replaying: url.path, faults: faults, settings: settings, integrations: integrations)
    }

    /// Serves the peripheral of the set at a file URL (see ``init(replayingPeripheralOf:faults:)``).
    public convenience init(replayingPeripheralOf url: URL, faults: [String] = []) throws(TetherTestingError) {
        try self.init(replayingPeripheralOf: url.path, faults: faults)
    }

    /// The cores the SDK facades drive: `messaging` (`TetherConnectIQ`) and `session`
    /// (`TetherWatchConnectivity`).
    public static let sdkCores: Set<String> = ["messaging", "session"]

    /// The cores whose recorded calls the app's own replace.
    public let appCores: Set<String>

    /// Binds `ConnectIQ.sharedInstance()` and `WCSession.default` to this session, on this thread
    /// (tests running beside this one on other threads keep their own; see ``AppLoop``).
    public func makeCurrent() { AppLoop.makeCurrent(self) }

    /// Runs `operation` with this session current for the running task, wherever it resumes: for
    /// async tests, whose code may move between threads.
    public func withCurrent<Result>(_ operation: () throws -> Result) rethrows -> Result {
        try AppLoop.withHost(self, operation: operation)
    }

    // MARK: running

    /// Replays the rest of the recording and its drain (deadlines up to ten minutes past the
    /// last input), delivering every callback on the way; then finishes the cores.
    ///
    /// The calls the app made before the first run reach the core just before the instant the
    /// recorded app made its first call (with a recording made live, when the host had started
    /// and bound its devices), so the app starts where the recorded one did.
    /// - Throws: ``TetherTestingError`` when the capture is damaged, the session is run from
    ///   inside one of its own callbacks, or a core's timers ran away.
    public func run() throws(TetherTestingError) {
        defer { endClock() }
        try drive { run throws(CaptureError) in
            var stepping = run
            // The engine wakes each sleeper of the clock at its deadline on the way, up to the
            // drain past the last input (a task that polls for ever would keep a run going).
            if !stepping.halted { finalSummary = try stepping.finish(emit: emit) }
            return stepping
        }
    }

    /// Replays `duration` of virtual time from ``now`` (from just before the recorded app's first
    /// call, the first time: see ``run()``) (frames, the peer's answers, timeouts,
    /// the app's calls and wake-ups), delivering callbacks on the way, and stops there.
    public func run(for duration: Duration) throws(TetherTestingError) {
        let target = Duration.nanoseconds(nowNs) + max(duration, .zero)
        try drive { run throws(CaptureError) in
            var stepping = run
            try stepping.step(through: target, emit: emit)
            return stepping
        }
    }

    private func drive(_ body: (SteppedReplay) throws(CaptureError) -> SteppedReplay) throws(TetherTestingError) {
        if holdingCalls, let appStart {
            // The recording up to just before the recorded app's first call, then the calls the
            // app made before running the session.
            try advance { run throws(CaptureError) in
                var stepping = run
                try stepping.step(through: appStart, emit: emit)
                return stepping
            }
            stateLock.withLock {
                holdingCalls = false
                for var event in earlyAppEvents {
                    event.timeNs = nowNs
                    traceStorage.append(event)
                    promiseChecker.observe(event)
                }
                earlyAppEvents = []
            }
        }
        try advance(body)
    }

    private func advance(_ body: (SteppedReplay) throws(CaptureError) -> SteppedReplay) throws(TetherTestingError) {
        guard !stateLock.withLock({ running }) else {
            throw TetherTestingError(message: "ReplaySession \(name): run() was called from inside one of its own callbacks; "
                + "make the next call instead (it is delivered at once), or run the session from the test.")
        }
        guard let current = stepped else { return }
        if current.isFinished { return }
        stateLock.withLock { running = true }
        stepped = nil
        defer { stateLock.withLock { running = false } }
        var after: SteppedReplay
        do throws(CaptureError) {
            after = try body(current)
        } catch {
            throw TetherTestingError(message: error.description)
        }
        stateLock.withLock { nowNs = after.now.replayNanoseconds }
        let halted = after.halted
        let summary = after.summarySoFar
        stepped = after
        if halted, let runaway = summary.runawayTimers.first {
            throw TetherTestingError(message: "capture set \(name): replay stopped: \(runaway.description)")
        }
    }

    private func emit(_ event: TraceEvent) {
        stateLock.withLock {
            nowNs = event.timeNs
            traceStorage.append(event)
            // A request the recording cannot answer: the core meets its own timeout, and the app is told why.
            if event.event == .noRecordedAnswer, case .string(let detail)? = event.field("detail") {
                sessionWarnings.append("\(event.core) at \(Self.seconds(event.timeNs)): \(detail)")
            }
            promiseChecker.observe(event)
        }
        bindings.deliver(event)
    }

    // MARK: results

    /// The virtual instant reached: time since the recording's first frame.
    public var now: Duration { .nanoseconds(stateLock.withLock { nowNs }) }

    /// A `Clock` on the session's virtual time, for app code that takes a clock: `sleep` returns
    /// when ``run()`` or ``run(for:)`` reaches its deadline (the engine wakes each sleeper at its
    /// deadline, as one more timer: ``wake(now:)``).
    public var clock: ReplayClock { ReplayClock(session: self) }

    /// Where to start app code that awaits (on ``clock``, or on the app's own continuations) so
    /// that it runs at exact virtual instants: `Task(executorPreference: session.taskExecutor) { … }`.
    /// Its jobs run on the thread driving the session, inside ``run()`` and ``run(for:)``, at the
    /// instant they became ready (``AppTaskExecutor``).
    public let taskExecutor = AppTaskExecutor()

    /// Whether the run kept the cores' promises (every send completes exactly once, every message
    /// ends once, progress never goes back…; docs/faults.md) and its timers did not run away.
    /// The manifest's expectations and baselines describe the recorded app, not yours: they are
    /// not checked here (`replay(_:)` checks them).
    public var passed: Bool {
        var checker = promiseCheckerSnapshot
        return checker.verdict().isEmpty && !(stepped?.halted ?? false)
    }

    /// The promise checker as it stands (a copy: its verdict does not disturb the session's).
    var promiseCheckerSnapshot: PromiseChecker { stateLock.withLock { promiseChecker } }

    /// What a failing `#expect` should show: the promises broken, the warnings, the counts.
    public var report: String {
        var checker = promiseCheckerSnapshot
        let broken = checker.verdict()
        let trace = self.trace
        var lines = ["ReplaySession \(name): \(passed ? "PASS" : "FAIL") at \(Self.seconds(now.replayNanoseconds)) of virtual time, "
            + "\(trace.count) trace events, \(trace.filter { $0.core == "app" && $0.event == "app_call" }.count) app calls, "
            + "\(trace.filter { $0.core == "app" && $0.event == "callback" }.count) callbacks"]
        for promise in broken { lines.append("  broken promise: \(promise.description)") }
        for warning in warnings { lines.append("  warning: \(warning)") }
        return lines.joined(separator: "\n") + "\n"
    }

    /// The session's warnings (calls the recording could not answer, callbacks with no delegate)
    /// and the replay's (an unsealed set, a cut-off tail).
    public var warnings: [String] {
        stateLock.withLock { sessionWarnings } + (finalSummary?.warnings ?? stepped?.summarySoFar.warnings ?? [])
    }

    /// The events of `core` (and, when given, of that name), in trace order.
    public func events(core: TraceName, named event: TraceName? = nil) -> [TraceEvent] {
        trace.filter { $0.core == core && (event == nil || $0.event == event) }
    }

    /// The trace as JSON Lines, as `tether replay --trace` writes it: what `tether diff` compares.
    public var traceJSONLines: String {
        TraceFile.encode(trace)
    }

    /// Writes the run so far as a self-contained timeline page (the one `tether replay --html`
    /// makes), with a lane per core and category — the app's calls (`app · api`) and callbacks
    /// (`app · callbacks`) beside the cores' — and the request → answer slices. Open it in a browser.
    /// - Throws: the file system's error when the page cannot be written.
    public func writeTimeline(to path: String) throws {
        var builder = TimelineBuilder(correlations: registry.correlations)
        for event in trace { builder.observe(event) }
        let report = TimelineSetReport(name: name, title: set.manifest.title, timeline: builder, outcome: nil,
                                       errors: warnings)
        // As every output Tether writes: atomically over a file, through to a device or FIFO.
        try FileIO.writeOutput(TimelineDocument.page(report), to: path)
    }

    /// The URL Garmin Connect Mobile opened the recorded app with (the recorded `device_list`
    /// call), for the app's `parseDeviceSelectionResponse(from:)`; `nil` when the recording has none.
    public var deviceSelectionURL: String? { hostFact("connectiq.device_selection_url") }

    private static func seconds(_ ns: Int64) -> String {
        String(format: "%.3f s", Double(ns) / 1e9)
    }

    // MARK: AppLoopHost

    /// Queues a call for `core` (see ``AppLoopHost/post(core:record:)``).
    public func post(core: String, record: [String: TraceValue]) {
        inboxLock.withLock { inbox.append(.call(core: core, record: record)) }
    }

    /// Queues the facade's own work at the current instant.
    public func post(_ work: @escaping () -> Void) {
        inboxLock.withLock { inbox.append(.work(work)) }
    }

    /// Calls `handler` with each of `core`'s events.
    public func observe(core: TraceName, _ handler: @escaping (TraceEvent) -> Void) {
        bindings.observe(core: core, handler)
    }

    /// Writes an `app` event at ``now``.
    public func recordAppEvent(_ event: TraceName, fields: [String: TraceValue]) {
        stateLock.withLock {
            let made = TraceEvent(timeNs: nowNs, core: .app, event: event, fields: fields)
            if holdingCalls, !running {
                earlyAppEvents.append(made)
                return
            }
            traceStorage.append(made)
            promiseChecker.observe(made)
        }
    }

    /// Keeps `text` among the warnings and writes it as an `app` `warning` event.
    public func warn(_ text: String) {
        stateLock.withLock { sessionWarnings.append(text) }
        recordAppEvent(.appWarning, fields: ["detail": .string(text)])
    }

    /// The session's one facade of `key`.
    public func facade<Facade: AnyObject & Sendable>(_ key: String, make: () -> Facade) -> Facade {
        bindings.facade(key, make: make)
    }

    /// `connectiq.device_selection_url`: the recorded `device_list` call's URL.
    public func hostFact(_ key: String) -> String? {
        guard key == "connectiq.device_selection_url" else { return nil }
        // Read once, when first asked (it reads the capture's API calls), from whichever thread asks.
        return recordedDeviceSelectionURL.withLock { cached in
            if let cached { return cached }
            let url = RecordedCalls.firstDeviceSelectionURL(in: set)
            cached = .some(url)
            return url
        }
    }

    /// The recorded `device_list` call's URL once read (`.some(nil)`: the set has none).
    private let recordedDeviceSelectionURL = Mutex<String??>(nil)

    // MARK: ClosedLoopInputs

    /// The app's next posted call. First the app's tasks on ``taskExecutor`` that became ready
    /// run, and the facade's own work posted before the call.
    public func nextCall(now: Duration) -> ScheduledAPICall? {
        let holding = stateLock.withLock {
            nowNs = now.replayNanoseconds
            return holdingCalls
        }
        if holding { return nil }
        while true {
            // The app's tasks on `taskExecutor` that became ready run first, here and now, until
            // they suspend: what they post is then in the inbox.
            if !taskExecutor.runPendingJobs() {
                warn("app tasks on the session's taskExecutor made \(AppTaskExecutor.jobLimit) jobs at \(Self.seconds(now.replayNanoseconds)) "
                    + "without waiting for virtual time (a loop on Task.yield()?); from here they run on Swift's global executor, "
                    + "and their calls reach the core at whatever instant the session has then")
            }
            guard let posted = inboxLock.withLock({ inbox.popFirst() }) else { return nil }
            switch posted {
            case .call(let core, let record):
                var arguments = record
                arguments["call"] = nil
                guard case .string(let call)? = record["call"] else {
                    warn("a call for core \(core) without a `call` name was not delivered")
                    continue
                }
                return ScheduledAPICall(at: now, core: core, call: call, arguments: arguments)
            case .work(let work):
                work()
            }
        }
    }

    // MARK: the clock's sleepers

    /// The earliest sleeper's deadline: the engine wakes the app there (``ClosedLoopInputs/nextWake``).
    public var nextWake: Duration? {
        sleepers.withLock { $0.map(\.deadline).min() }
    }

    /// Wakes the sleepers due at or before `now`, earliest first (in the order they began their
    /// sleep, for one deadline). A task on ``taskExecutor`` then runs when the engine asks for the
    /// app's calls, right after; one on Swift's pool runs at once, beside the session.
    public func wake(now: Duration) {
        stateLock.withLock { nowNs = now.replayNanoseconds }
        let due = sleepers.withLock { sleepers -> [CheckedContinuation<Void, any Error>] in
            let due = sleepers.filter { $0.deadline <= now }.sorted { ($0.deadline, $0.order) < ($1.deadline, $1.order) }
            sleepers.removeAll { $0.deadline <= now }
            return due.map(\.wake)
        }
        for wake in due { wake.resume() }
    }

    /// Registers a sleeper, or refuses it (`false`) once the session has finished.
    func addSleeper(until deadline: Duration, _ wake: CheckedContinuation<Void, any Error>) -> Bool {
        sleepers.withLock { sleepers in
            guard !clockEnded else { return false }
            sleepers.append((deadline, sleeperOrder, wake))
            sleeperOrder += 1
            return true
        }
    }

    /// After ``run()`` (finished, or stopped for a runaway timer): no virtual time is left.
    /// Sleepers still waiting (due past the drain) end with `CancellationError`, as a sleep on a
    /// real clock does when its task is cancelled, and the app's tasks on ``taskExecutor`` go on
    /// without the session.
    private func endClock() {
        guard stepped.map({ $0.isFinished || $0.halted }) ?? true else { return }
        let left = sleepers.withLock { sleepers -> [CheckedContinuation<Void, any Error>] in
            clockEnded = true
            defer { sleepers.removeAll() }
            return sleepers.sorted { ($0.deadline, $0.order) < ($1.deadline, $1.order) }.map(\.wake)
        }
        for wake in left { wake.resume(throwing: CancellationError()) }
        taskExecutor.passOn()
    }
}

/// A `Clock` on a ``ReplaySession``'s virtual time (``ReplaySession/clock``).
public struct ReplayClock: Clock, Sendable {
    /// An instant of virtual time: time since the recording's first frame.
    public struct Instant: InstantProtocol, Sendable {
        /// Time since the recording's first frame.
        public var offset: Duration
        /// An instant `offset` after the recording's first frame.
        public init(offset: Duration) { self.offset = offset }
        /// The instant `duration` later.
        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        /// The time from this instant to `other`.
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        /// Earlier first.
        public static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }

    let session: ReplaySession

    /// The session's virtual instant.
    public var now: Instant { Instant(offset: session.now) }
    /// One nanosecond, the trace's unit.
    public var minimumResolution: Duration { .nanoseconds(1) }

    /// Suspends until the session's run reaches `deadline`; at once when it has.
    /// - Throws: `CancellationError` when the session's ``ReplaySession/run()`` finished without
    ///   reaching `deadline` (it wakes sleepers up to the drain past the recording's end), or had
    ///   finished already.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        if deadline.offset <= session.now { return }
        try await withCheckedThrowingContinuation { (wake: CheckedContinuation<Void, any Error>) in
            if !session.addSleeper(until: deadline.offset, wake) { wake.resume(throwing: CancellationError()) }
        }
    }
}
