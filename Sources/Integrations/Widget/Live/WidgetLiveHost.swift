import WidgetIntegration
import ReplayKit
import BehaviourTrace
import LiveHosts
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import LiveCapture
import WidgetCore
import Durations

/// Runs one process of the host-app ↔ widget channel (a ``WidgetCore``, host or widget) in real
/// time: the App Group container is a real folder (writes are atomic by the convention of
/// docs/app-group-link.md; the other process's changes arrive through inotify), the long-lived
/// connection is a real MQTT connection to a broker (docs/widget-mqtt.md), and a script makes the
/// app's calls. It writes the same behaviour trace replay writes (through ``WidgetDriver`` and
/// ``WidgetTraceMapping``).
///
/// One thread does everything, as the other live hosts do: steps until one waits, then polls the
/// MQTT socket and the inotify descriptor together until the earliest of the core's deadline and
/// the step's deadline, feeds what came, and repeats.
public final class WidgetLiveHost {
    /// The calls a widget script's steps may name: every ``WidgetAPICall`` but `start` (the host
    /// makes that one when it launches).
    public static let scriptCalls: Set<String> = Set(WidgetAPICall.names).subtracting(["start"])

    /// What to run and against what.
    public struct Options {
        /// Which process this host is.
        public var role: WidgetRole
        /// The IoT account (the topics' `{account}`).
        public var account: String
        /// The broker's address.
        public var brokerHost: String = "127.0.0.1"
        /// The broker's port.
        public var brokerPort: UInt16
        /// The App Group container folder (both processes use the same one).
        public var container: String
        /// The script.
        public var script: LiveScript
        /// Seed of the core's random numbers (its request ids); `nil` draws one from the system.
        public var seed: UInt64?
        /// WidgetCore's timers and settings (the account is taken from ``account``).
        public var configuration: WidgetConfiguration
        /// How long to keep handling the connection and the container after the last step.
        public var linger: Duration = .milliseconds(500)
        /// Each event as it happens (a line for the terminal).
        public var log: (String) -> Void = { _ in }

        /// Options; see the properties.
        public init(role: WidgetRole, account: String, brokerPort: UInt16, container: String, script: LiveScript) {
            self.role = role
            self.account = account
            self.brokerPort = brokerPort
            self.container = container
            self.script = script
            self.configuration = WidgetConfiguration(account: account)
        }
    }

    /// What a run produced: its trace and the steps that could not run.
    public typealias Result = LiveRunResult

    /// How the host app answers the widget's open-URL requests (the script's `open_url`).
    enum OpenURLPolicy: String {
        case opened, refused, none
    }

    private let options: Options
    private let recording: APICallRecording?
    private var driver: WidgetDriver
    private var watcher: FolderWatcher?
    private var mqtt: MQTTClientConnection?
    private let start = ContinuousClock.now
    private let log: LiveTraceLog
    private var events: [(realtimeNs: Int64, event: TraceEvent)] { log.events }
    private var openURLPolicy: OpenURLPolicy = .opened
    /// Cookies of renames of this process's own temporary files: the `moved_in` that completes one
    /// is its own write, not news from the other process.
    private var ownRenames: Set<UInt32> = []
    /// Files this process removed, not yet reported back by inotify.
    private var ownRemovals: [String: Int] = [:]

    /// A host; nothing starts until ``run()``.
    public init(options: Options, recording: APICallRecording? = nil) {
        self.options = options
        self.log = LiveTraceLog(core: WidgetTraceMapping.core, log: options.log)
        self.recording = recording
        var configuration = options.configuration
        configuration.account = options.account
        self.driver = WidgetDriver(configuration: configuration)
    }

    /// Reads the container, starts the core, runs the script, and closes the connection.
    public func run() throws(LiveHostError) -> Result {
        if case .string(let text)? = options.script.settings["open_url"] {
            guard let policy = OpenURLPolicy(rawValue: text) else {
                throw LiveHostError(target: "script", step: "read open_url", detail: "unknown policy \"\(text)\"", hint: "open_url: opened | refused | none")
            }
            openURLPolicy = policy
        }
        let watcher: FolderWatcher
        do throws(LiveCaptureError) {
            watcher = try FolderWatcher(path: options.container)
        } catch {
            throw LiveHostError(target: options.container, step: "watch the App Group container", detail: error.detail, hint: error.hint)
        }
        self.watcher = watcher
        defer {
            mqtt?.close()
            watcher.close()
        }
        let seed = options.seed ?? UInt64.random(in: 1...UInt64.max)
        try call(.start(role: options.role, account: options.account, seed: seed, container: try readContainer()))

        try LiveStepRunner(steps: options.script.steps, linger: options.linger, start: start).run(LiveStepRunner.Host(
            runStep: { number, name, arguments throws(LiveHostError) in try self.runStep(number: number, name: name, arguments: arguments) },
            service: { timeout throws(LiveHostError) in try self.service(waitingAtMost: timeout) },
            nextDeadline: { self.driver.nextDeadline },
            fireTimers: { () throws(LiveHostError) in try self.perform(self.driver.handleTimeout(now: self.now())) },
            mark: { _ in self.events.count },
            occurred: { event, since in self.events[since...].contains { $0.event.event == event } },
            fail: { step, message in self.fail(step: step, message) }))
        if let state = driver.core?.connectionState, state != .stopped {
            // The app process ends: it closes its long-lived connection, as a record says, so
            // replay sees the close before the connection's FIN.
            try call(.stopConnection)
            try service(waitingAtMost: .milliseconds(100))
        }
        return Result(events: log.events, failedSteps: log.failedSteps)
    }

    // MARK: steps

    private func runStep(number: Int, name: String, arguments: [String: TraceValue]) throws(LiveHostError) {
        var record = arguments
        record["call"] = .string(name)
        if name == "refresh", let budget = record["budget"] {
            // Scripts say `refresh: {budget: 2s}`; the record keeps milliseconds.
            // A number is read as the number it is (its text could be `1e-05`).
            let text: String
            let parsed: Double?
            switch budget {
            case .string(let written): (text, parsed) = (written, DurationText.seconds(written))
            case .int(let number): (text, parsed) = (String(number), Double(number))
            case .double(let number): (text, parsed) = (String(number), number.isFinite ? number : nil)
            default: (text, parsed) = ("", nil)
            }
            guard let seconds = parsed, seconds > 0, seconds < 86_400 else {
                return fail(step: number, "refresh: budget \(text) is not a duration such as 500ms or 2s")
            }
            record["budget"] = nil
            record["budget_ms"] = .int(Int64((seconds * 1000).rounded()))
        }
        let parsed: WidgetAPICall
        do throws(WidgetAPICallError) {
            parsed = try WidgetAPICall(record: record)
        } catch {
            return fail(step: number, error.description)
        }
        try call(parsed, step: (number, name))
    }

    /// Records and applies `call`; `step` is the script step it carries out (`nil` for the host's
    /// own calls), which fails when the core refuses the call.
    /// Link inputs the core has been given, as replay counts them (an MQTT CONNACK, SUBACK or
    /// PUBLISH, the end of a connection, its own close included: replay sees that connection's
    /// FIN): each recorded call carries the count, so replay feeds the core in this order
    /// (docs/replay-engine.md, "Feed order").
    private var linkInputs = 0

    private func call(_ call: WidgetAPICall, step: (number: Int, name: String)? = nil) throws(LiveHostError) {
        let realtime = LiveTrace.realtimeNs()
        try recording?.record(apiCall: call.recordJSON(linkInputs: linkInputs), timestampNs: realtime)
        let (actions, traceEvents) = driver.apply(call, now: now())
        for event in traceEvents { record(event, realtimeNs: realtime) }
        if let step { log.failIfRefused(step: step.number, call: step.name, events: traceEvents) }
        try perform(actions, realtimeNs: realtime)
    }

    private func fail(step: Int, _ message: String) { log.fail(step: step, message) }

    // MARK: the outside world

    /// The container's files at launch: every regular file whose name does not start with `.`
    /// (temporary files of the atomic-write convention are not part of the container's state).
    private func readContainer() throws(LiveHostError) -> [String: [UInt8]] {
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: options.container)
        } catch {
            throw LiveHostError(target: options.container, step: "list the App Group container", detail: "\(error)", hint: "Give an existing folder both processes can read and write.")
        }
        var files: [String: [UInt8]] = [:]
        for name in names where !name.hasPrefix(".") {
            if let bytes = FileManager.default.contents(atPath: path(name)) { files[name] = Array(bytes) }
        }
        return files
    }

    private func path(_ name: String) -> String { (options.container as NSString).appendingPathComponent(name) }

    /// Waits at most `timeout` for the MQTT socket or the container, then feeds all that came.
    private func service(waitingAtMost timeout: Duration) throws(LiveHostError) {
        var descriptors: [pollfd] = []
        if let fd = watcher?.fileDescriptor { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        if let fd = mqtt?.fileDescriptor { descriptors.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
        let milliseconds = Int32(clamping: max(0, (timeout.components.seconds * 1000) + timeout.components.attoseconds / 1_000_000_000_000_000))
        _ = poll(&descriptors, nfds_t(descriptors.count), milliseconds)
        try serviceMQTT()
        try serviceContainer()
    }

    private func serviceMQTT() throws(LiveHostError) {
        guard let connection = mqtt else { return }
        for event in try connection.poll(waitingAtMost: .zero) {
            let realtime = LiveTrace.realtimeNs()
            switch event {
            case .connected:
                linkInputs += 1
                try perform(driver.receive(.mqttConnected, now: now()), realtimeNs: realtime)
            case .subscribed(_, let granted):
                linkInputs += 1
                try perform(driver.receive(.mqttSubscribed(granted), now: now()), realtimeNs: realtime)
            case let .message(topic, payload, _):
                linkInputs += 1
                try perform(driver.receive(.mqttMessage(topic: topic, payload: payload), now: now()), realtimeNs: realtime)
            case .published:
                break
            case .closed(let reason):
                options.log("MQTT connection closed: \(reason)")
                connection.close()
                mqtt = nil
                linkInputs += 1
                try perform(driver.receive(.mqttDisconnected, now: now()), realtimeNs: realtime)
                return
            }
        }
    }

    /// The other process's changes: a completed write (`moved_in`, or `closed_written` of a file
    /// written in place) or a removal, of a name that is not a temporary file.
    private func serviceContainer() throws(LiveHostError) {
        guard let watcher else { return }
        while true {
            let change: FolderChange?
            do throws(LiveCaptureError) {
                change = try watcher.next(timeoutMilliseconds: 0)
            } catch {
                throw LiveHostError(target: options.container, step: "read inotify", detail: error.detail, hint: error.hint)
            }
            guard let change else { return }
            if change.name.hasPrefix(".") {
                if change.kind == .movedOut, change.cookie != 0, change.name.hasSuffix(ownTemporarySuffix) {
                    if ownRenames.count >= 1024 { ownRenames.removeAll() }
                    ownRenames.insert(change.cookie)
                }
                continue
            }
            // This process's own writes and removals come back through inotify too; they are not
            // the other process's news, and recording them would only repeat the core's own actions.
            if change.kind == .movedIn, ownRenames.remove(change.cookie) != nil { continue }
            if change.kind == .deleted, let pending = ownRemovals[change.name] {
                ownRemovals[change.name] = pending > 1 ? pending - 1 : nil
                continue
            }
            switch change.kind {
            case .movedIn, .closedWritten:
                // Gone again before we read it: the removal that follows says so.
                guard let bytes = FileManager.default.contents(atPath: path(change.name)) else { continue }
                try call(.containerChanged(name: change.name, bytes: Array(bytes)))
            case .deleted, .movedOut:
                try call(.containerChanged(name: change.name, bytes: nil))
            case .created, .opened, .closedUnwritten:
                break
            }
        }
    }

    // MARK: core

    private func perform(_ actions: [WidgetAction], realtimeNs: Int64? = nil) throws(LiveHostError) {
        let realtime = realtimeNs ?? LiveTrace.realtimeNs()
        var answers: [WidgetAPICall] = []
        for action in actions {
            for event in WidgetTraceMapping.events(for: action, timeNs: 0) {
                record(event, realtimeNs: realtime, quiet: { if case .event = action { return false } else { return true } }())
            }
            switch action {
            case let .writeFile(name, bytes):
                try writeAtomically(name, bytes)
            case .removeFile(let name):
                if unlink(path(name)) == 0 {
                    ownRemovals[name, default: 0] += 1
                } else if errno != ENOENT {
                    throw LiveHostError(target: path(name), step: "remove", detail: String(cString: strerror(errno)), hint: "Check the container folder's permissions.")
                }
            case .mqttConnect(let clientID):
                if mqtt != nil { linkInputs += 1 }  // replay feeds this connection's end (its FIN)
                mqtt?.close()
                let connection = MQTTClientConnection(host: options.brokerHost, port: options.brokerPort, clientID: clientID)
                do throws(LiveHostError) {
                    try connection.open()
                    mqtt = connection
                } catch {
                    // The core retries on its reconnect timer; a broker that is down is part of the
                    // story. Recorded as a fact: the wire shows a refused SYN without a client id.
                    mqtt = nil
                    try call(.mqttConnectFailed(error.detail))
                }
            case .mqttSubscribe(let topics):
                try mqtt?.subscribe(topics, qos: 1)
            case let .mqttPublish(topic, payload, qos):
                try mqtt?.publish(topic: topic, payload: payload, qos: UInt8(qos.rawValue))
            case .mqttDisconnect:
                if mqtt != nil { linkInputs += 1 }  // replay feeds this connection's end (its FIN)
                mqtt?.close()
                mqtt = nil
            case .event(let event):
                if case .openURLRequested(let request) = event, openURLPolicy != .none {
                    answers.append(.didOpenURL(request.id, opened: openURLPolicy == .opened))
                }
            }
        }
        // The app answers after the callbacks of this input, as a delegate returning would.
        for answer in answers { try call(answer) }
    }

    /// `.tmp-ROLE-PID`: how this process's temporary files end.
    private var ownTemporarySuffix: String { ".tmp-\(options.role.rawValue)-\(getpid())" }

    /// Writes `.NAME.tmp-ROLE-PID`, then renames it over `NAME` (docs/app-group-link.md). Plain
    /// POSIX calls: Foundation's file writing makes a temporary file of its own first, which would
    /// put a second rename of an unrelated name into every recording.
    private func writeAtomically(_ name: String, _ bytes: [UInt8]) throws(LiveHostError) {
        let temporary = path(".\(name)\(ownTemporarySuffix)")
        func failure(_ step: String) -> LiveHostError {
            LiveHostError(target: temporary, step: step, detail: String(cString: strerror(errno)), hint: "Check the container folder's permissions and free space.")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw failure("create") }
        var written = 0
        while written < bytes.count {
            let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                let error = failure("write")
                close(fd)
                throw error
            }
            written += count
        }
        guard close(fd) == 0 else { throw failure("close") }
        guard rename(temporary, path(name)) == 0 else {
            throw LiveHostError(target: path(name), step: "rename", detail: String(cString: strerror(errno)), hint: "Check the container folder's permissions.")
        }
    }

    private func record(_ event: TraceEvent, realtimeNs: Int64? = nil, quiet: Bool = false) {
        log.record(event, realtimeNs: realtimeNs, quiet: quiet)
    }

    private func now() -> Duration { start.duration(to: ContinuousClock.now) }
}
