import AppLoop
import BehaviourTrace
import CaptureSet
import Foundation
import LiveCapture
import LiveHosts
import MessagingCore
import MessagingIntegration
import MessagingLive
import SessionCore
import SessionLive

/// The app's own code against a real device: the SDK facades (`TetherConnectIQ`,
/// `TetherWatchConnectivity`) bound to a live host instead of a recording, so the code a test
/// replays in CI is the code that recorded the session. With `recordingTo:`, the run is recorded
/// as a new capture set (every HCI packet through an H4 tap, and the app's calls), which
/// `ReplaySession` then replays with the same code.
///
/// ```swift
/// let live = try LiveSession(connectIQ: "tcp-client:127.0.0.1:9002",
///                            watch: .init(address: "F0:F0:F0:F0:F0:F0"), recordingTo: "Captures/mine")
/// live.makeCurrent()
/// let sender = WorkoutSender()
/// sender.start(url: URL(string: live.deviceSelectionURL)!)
/// try live.run(for: .seconds(30), until: { sender.openResult != nil })
/// ```
///
/// The live host runs on the calling thread inside ``run(for:until:)``; callbacks are made there,
/// in the order things happen on the link. App code that awaits runs there too when started on
/// ``taskExecutor``, as it does in `ReplaySession`: `Task(executorPreference: live.taskExecutor) { … }`.
///
/// `@unchecked Sendable`: what the app may reach from any thread while the host runs — the posted
/// calls, the warnings, the app's early events, the running host's clock and trace writer and its
/// thread — is under `lock`;
/// an `app` event written from another thread is handed to the host's thread to write, since the
/// host's trace has no lock. The rest is the host's, touched only inside ``run(for:until:)``.
public final class LiveSession: AppLoopHost, @unchecked Sendable {

    /// A Connect IQ watch the phone talks to.
    public struct ConnectIQWatch: Sendable, Hashable {
        /// The device's UUID, as Garmin Connect Mobile lists it.
        public var uuid: UUID
        /// Its BLE address.
        public var address: String
        /// Its name.
        public var name: String
        /// Its model.
        public var model: String

        /// A watch; the UUID defaults to the one Tether's rigs and `tether live messaging` use.
        public init(uuid: UUID = UUID(uuidString: "7E7E7E7E-0000-4000-8000-F0F0F0F0F0F0")!, address: String,
                    name: String = "watch-1", model: String = "Connect IQ watch (Bumble rig)") {
            self.uuid = uuid
            self.address = address
            self.name = name
            self.model = model
        }
    }

    /// What the session runs: one core's live host.
    private enum Host {
        case connectIQ(MessagingLiveHost.Options, recordSet: String?)
        case watchConnectivity(SessionLiveHost.Options, recordSet: String?)
    }

    private var host: Host
    /// What the facades posted, in order: the app's calls, and work of their own (a refusal's
    /// completion), which runs when the host next takes calls, never inside the app's call.
    private enum Posted {
        case call([String: TraceValue])
        case work(() -> Void)
    }
    /// Guards `posted`, `hostRecord`, `hostElapsed`, `runningThread`, `sessionWarnings` and
    /// `earlyAppEvents`. Never held while the app's code runs.
    private let lock = NSLock()
    private var posted: [Posted] = []
    private let bindings = AppLoopBindings()
    /// The host's ``LiveAppLoop/record`` and ``LiveAppLoop/elapsed``, copied under `lock` once
    /// the host has started (the host sets them on its thread, without a lock) and cleared when
    /// the run ends: what another thread reads of the running host.
    private var hostRecord: ((TraceEvent) -> Void)?
    private var hostElapsed: (() -> Duration)?
    /// The thread inside ``run(for:until:)`` while the host runs: the one that may write to the
    /// host's trace.
    private var runningThread: pthread_t?
    /// The loop of the run under way; read and written on the thread inside ``run(for:until:)``
    /// only (the host calls `started` there).
    private var runningLoop: LiveAppLoop?
    private var sessionWarnings: [String] = []
    /// Whether the host has taken the app's calls at least once in this run: what tells posts it
    /// never took because it never started from posts it took no more because it was stopping.
    private var hostTookCalls = false
    private var ran = false
    /// The app's events written before the host started (`parseDeviceSelectionResponse`, the
    /// registrations): written when it starts, so the trace holds them as replay's does.
    private var earlyAppEvents: [TraceEvent] = []

    /// The trace of the run (after ``run(for:until:)``): the core's events and the app's, with
    /// `t_ns` counted from the recording's first frame when recording, else from the run's start.
    public private(set) var trace: [TraceEvent] = []
    /// The sealed recording, when ``init(connectIQ:watch:recordingTo:bridgeScript:bridgeLog:keySeed:)``
    /// was given a set to record.
    public private(set) var recording: RecordingSummary?

    /// A session against the Connect IQ watch reached through the phone's controller at
    /// `transport` (a Bumble transport: `tcp-client:127.0.0.1:9002`, `usb:0`). Nothing starts
    /// until ``run(for:until:)``.
    /// - Parameters:
    ///   - recordingTo: A new capture set's folder; the transport must then be
    ///     `tcp-client:HOST:PORT` or `serial:PATH` (the H4 tap sits in front of it).
    ///   - bridgeScript: `Harness/rigs/ciq_phone_bridge.py`, relative to the current directory.
    ///   - keySeed: Seed of the encryption keys (`nil`: the system's generator).
    public init(connectIQ transport: String, watch: ConnectIQWatch, recordingTo setPath: String? = nil,
                bridgeScript: String = "Harness/rigs/ciq_phone_bridge.py", bridgeLog: String? = nil, keySeed: UInt64? = nil) {
        let uuid = IQUUID(watch.uuid.uuidString) ?? IQUUID(high: 0, low: 0)
        var options = MessagingLiveHost.Options(
            transport: transport, devices: [(uuid: uuid, address: watch.address.uppercased(), name: watch.name, model: watch.model)],
            script: LiveScript(steps: []), bridgeScript: bridgeScript)
        options.bridgeLog = bridgeLog
        options.keySeed = keySeed
        host = .connectIQ(options, recordSet: setPath)
    }

    /// A session of the phone's WatchConnectivity side against the watch at `watchAddress`,
    /// reached through the phone's controller at `transport` over Tether's session link (the
    /// watch: `tether live session --role watch`, or a watch written from docs/session-link.md).
    /// - Parameters:
    ///   - identity: The phone's session identity; `pairedWatch` the watch's.
    ///   - storePath: The phone's durable session store (SQLite; a new file is made).
    ///   - recordingTo: A new capture set's folder (the transport must be `tcp-client:HOST:PORT`
    ///     or `serial:PATH`).
    ///   - bridgeScript: `Harness/rigs/ciq_phone_bridge.py` (run with `--profile session`).
    ///   - seed: Seed of the core's random numbers (`nil`: the system's generator).
    public init(watchConnectivity transport: String, watchAddress: String, identity: UUID, pairedWatch: UUID, storePath: String,
                recordingTo setPath: String? = nil, bridgeScript: String = "Harness/rigs/ciq_phone_bridge.py",
                bridgeLog: String? = nil, seed: UInt64? = nil) {
        var options = SessionLiveHost.Options(
            role: .phone, identity: Self.sessionID(identity), pairedPeer: Self.sessionID(pairedWatch),
            transport: transport, address: watchAddress.uppercased(), script: LiveScript(steps: []), bridgeScript: bridgeScript,
            storePath: storePath)
        options.bridgeLog = bridgeLog
        options.seed = seed
        host = .watchConnectivity(options, recordSet: setPath)
    }

    /// A UUID as a session identity: the same 16 bytes.
    private static func sessionID(_ uuid: UUID) -> SessionDeviceID {
        // Sixteen bytes always make an identity.
        withUnsafeBytes(of: uuid.uuid) { SessionDeviceID(bytes: Array($0))! }
    }

    /// Binds `ConnectIQ.sharedInstance()` and `WCSession.default` to this session.
    public func makeCurrent() { AppLoop.makeCurrent(self) }

    /// The URL Garmin Connect Mobile would open the app with for this watch, for the app's
    /// `parseDeviceSelectionResponse(from:)`; empty for a WatchConnectivity session.
    public var deviceSelectionURL: String {
        guard case .connectIQ(let options, _) = host else { return "" }
        return MessagingLiveHost.deviceSelectionURL(options.devices)
    }

    /// The core the session runs live: `messaging` or `session`.
    public var core: String {
        switch host {
        case .connectIQ: "messaging"
        case .watchConnectivity: "session"
        }
    }

    /// Runs the link with the app in the loop for at most `duration`, or until `isDone` holds
    /// (then half a second more, so answers in flight land); then disconnects and, when
    /// recording, seals the set. A session runs once.
    /// - Throws: ``LiveSessionError`` naming what failed (the bridge, the tap, the recording).
    public func run(for duration: Duration, until isDone: @escaping () -> Bool = { false }) throws(LiveSessionError) {
        guard !ran else { throw LiveSessionError(description: "a LiveSession runs once; make a new one for another run") }
        ran = true
        let loop = LiveAppLoop(
            duration: duration, isDone: isDone,
            takeCalls: { [weak self] in self?.takePosted() ?? [] },
            observe: { [weak self] event in self?.deliver(event) },
            started: { [weak self] in self?.hostStarted() })
        runningLoop = loop
        lock.withLock { runningThread = pthread_self() }
        defer {
            runningLoop = nil
            let left = lock.withLock { () -> [Posted] in
                hostRecord = nil
                hostElapsed = nil
                runningThread = nil
                defer { posted.removeAll() }
                return posted
            }
            // No host is left to run the app's tasks on: they go on elsewhere.
            taskExecutor.passOn()
            reportUntaken(left)
        }
        do throws(LiveMessagingError) {
            switch host {
            case .connectIQ(var options, let recordSet):
                options.app = loop
                let outcome = try runLiveMessaging(options, recordSet: recordSet, title: "Live Connect IQ session with the app in the loop")
                (trace, recording) = (outcome.trace, outcome.recording)
                lock.withLock { sessionWarnings += outcome.notices }
            case .watchConnectivity(var options, let recordSet):
                options.app = loop
                let outcome = try runLiveSession(options, recordSet: recordSet, title: "Live WatchConnectivity session with the app in the loop")
                (trace, recording) = (outcome.trace, outcome.recording)
                lock.withLock { sessionWarnings += outcome.notices }
            }
        } catch {
            throw LiveSessionError(description: error.description)
        }
    }

    /// On the host's thread, once it has started and set `loop`'s closures: keeps them for other
    /// threads and writes the app's events of before the start.
    private func hostStarted() {
        guard let loop = runningLoop else { return }
        let early = lock.withLock { () -> [TraceEvent] in
            hostRecord = loop.record
            hostElapsed = loop.elapsed
            defer { earlyAppEvents = [] }
            return earlyAppEvents
        }
        guard let record = loop.record else { return }
        for event in early { record(event) }
    }

    /// What the app posted that the host never took: after it took its last calls (while the link
    /// was being closed), or at all (the run failed before the host started). Never applied, so
    /// said in a warning rather than dropped in silence.
    private func reportUntaken(_ left: [Posted]) {
        let calls = left.filter { if case .call = $0 { true } else { false } }.count
        let other = left.count - calls
        guard calls + other > 0 else { return }
        let what = [calls > 0 ? "\(calls) call\(calls == 1 ? "" : "s")" : nil,
                    other > 0 ? "\(other) app event\(other == 1 ? "" : "s") or facade completion\(other == 1 ? "" : "s")" : nil]
            .compactMap { $0 }.joined(separator: " and ")
        lock.withLock {
            sessionWarnings.append(hostTookCalls
                ? "the app posted \(what) after the host had taken its last calls (while the link was being closed); "
                    + "they were not applied and are not in the trace"
                : "the app posted \(what) that the host never took: the run ended before the host started; "
                    + "they were not applied and are not in the trace")
        }
    }

    /// The calls posted since the last time: first the app's tasks on ``taskExecutor`` that became
    /// ready run, here, on the host's thread; then the facades' own work, on the way.
    private func takePosted() -> [[String: TraceValue]] {
        if !taskExecutor.runPendingJobs() {
            warn("app tasks on the session's taskExecutor made \(AppTaskExecutor.jobLimit) jobs in one pass without waiting; "
                + "they run on a global queue from now on, beside the host")
        }
        let taken = lock.withLock { () -> [Posted] in
            hostTookCalls = true
            defer { posted.removeAll() }
            return posted
        }
        var calls: [[String: TraceValue]] = []
        for item in taken {
            switch item {
            case .call(let record): calls.append(record)
            case .work(let work): work()
            }
        }
        return calls
    }

    private func deliver(_ event: TraceEvent) { bindings.deliver(event) }

    /// The warnings of the run: calls the device could not answer, posts the host never took, and
    /// the run's notices (the tap's, the recording's, each recorded interface's drops; ``LiveRunOutcome/notices``).
    public var warnings: [String] { lock.withLock { sessionWarnings } }

    /// Where to start app code that awaits (on ``clock``, or on the app's own continuations) so that
    /// it runs on the host's thread, as callbacks do: `Task(executorPreference: live.taskExecutor) { … }`.
    /// Its jobs run between the host's reads of the link, at least every 20 ms, inside
    /// ``run(for:until:)``; before the run they wait for it, after it they run on a global queue.
    /// The same line works with `ReplaySession`, whose executor runs them at exact virtual instants.
    public let taskExecutor = AppTaskExecutor()

    /// The clock app code sleeps on live: the system's, as on the device. Code that takes
    /// `some Clock<Duration>` runs on this one live and on `ReplaySession.clock` in replay.
    public var clock: ContinuousClock { ContinuousClock() }

    /// The trace as JSON Lines, as `tether replay --trace` writes it.
    public var traceJSONLines: String { TraceFile.encode(trace) }

    // MARK: AppLoopHost

    /// Time since the host started (zero before ``run(for:until:)``).
    public var now: Duration { lock.withLock { hostElapsed }?() ?? .zero }

    /// Queues a call; the host takes it between inputs. A call for a core this session does not
    /// run is not delivered, with a warning.
    public func post(core: String, record: [String: TraceValue]) {
        guard core == self.core else {
            warn("a call for core \(core) was not delivered: this live session runs core \(self.core)")
            return
        }
        lock.withLock { posted.append(.call(record)) }
    }

    /// Queues the facade's own work; the host runs it when it next takes the app's calls.
    public func post(_ work: @escaping () -> Void) {
        lock.withLock { posted.append(.work(work)) }
    }

    /// Calls `handler` with each of `core`'s events.
    public func observe(core: TraceName, _ handler: @escaping (TraceEvent) -> Void) {
        bindings.observe(core: core, handler)
    }

    /// Writes an `app` event into the host's trace, stamped when it is written: at once on the
    /// host's thread; from another thread (a task on Swift's pool) the host writes it when it next
    /// takes the app's calls, since its trace is the host thread's alone. Before the run, it waits
    /// for the host to start.
    public func recordAppEvent(_ event: TraceName, fields: [String: TraceValue]) {
        let made = TraceEvent(timeNs: 0, core: .app, event: event, fields: fields)
        enum Where { case here((TraceEvent) -> Void), hostThread, beforeStart }
        let place = lock.withLock { () -> Where in
            guard let record = hostRecord, let runningThread else {
                earlyAppEvents.append(made)
                return .beforeStart
            }
            if pthread_equal(runningThread, pthread_self()) != 0 { return .here(record) }
            posted.append(.work { record(made) })
            return .hostThread
        }
        if case .here(let record) = place { record(made) }
    }

    /// Keeps `text` among the warnings and writes it as an `app` `warning` event.
    public func warn(_ text: String) {
        lock.withLock { sessionWarnings.append(text) }
        recordAppEvent(.appWarning, fields: ["detail": .string(text)])
    }

    /// The session's one facade of `key`.
    public func facade<Facade: AnyObject & Sendable>(_ key: String, make: () -> Facade) -> Facade {
        bindings.facade(key, make: make)
    }

    /// The one core this session runs live.
    public var cores: [String] { [core] }

    /// `connectiq.device_selection_url`: ``deviceSelectionURL``.
    public func hostFact(_ key: String) -> String? {
        key == "connectiq.device_selection_url" && !deviceSelectionURL.isEmpty ? deviceSelectionURL : nil
    }
}

/// Why a live session could not run: the sentence names what failed and what to do.
public struct LiveSessionError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The sentence.
    public var description: String
}
