import SessionIntegration
import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import LiveHosts
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import MonkeyC
import SessionCore

/// Runs one side of a ``SessionCore`` in real time against a real BLE stack (a Bumble bridge:
/// `ciq_phone_bridge.py --profile session` for the phone, `session_watch_bridge.py` for the watch),
/// driven by a script, with its durable state in a ``SessionStore``, writing the same behaviour
/// trace replay writes (through ``SessionDriver`` and ``SessionTrace``).
///
/// One thread does everything, as ``MessagingLiveHost`` does: steps until one waits, then the
/// bridge, the core's deadline and the step's deadline, whichever is first.
public final class SessionLiveHost {
    /// The calls a session script's steps may name (docs/live-hosts.md): the app's calls, the host's
    /// facts, and link control.
    public static let scriptCalls: Set<String> = [
        "activate", "update_context", "send_message", "send_message_data", "reply", "reply_data",
        "transfer_user_info", "transfer_complication", "cancel_user_info", "transfer_file", "cancel_file",
        "set_app_state", "set_paired", "connect", "disconnect", "crash",
    ]

    /// What to run and against what.
    public struct Options {
        /// Which side this host is.
        public var role: SessionRole
        /// This side's session identity.
        public var identity: SessionDeviceID
        /// The paired counterpart's identity.
        public var pairedPeer: SessionDeviceID
        /// The controller as a Bumble transport.
        public var transport: String
        /// Phone: the watch's BLE address to connect to. Watch: the address to advertise.
        public var address: String
        /// The script.
        public var script: LiveScript
        /// The bridge script for this role.
        public var bridgeScript: String
        /// The bridge's stderr goes here when set.
        public var bridgeLog: String?
        /// The durable store (SQLite).
        public var storePath: String
        /// Seed of the core's random numbers; `nil` draws one from the system.
        public var seed: UInt64?
        /// The largest ATT MTU the bridge asks for (phone) or accepts (watch); `nil`: the bridge's default, 247.
        public var mtu: Int?
        /// SessionCore settings.
        public var configuration: SessionConfiguration = .init()
        /// How long to keep handling the link after the last step.
        public var linger: Duration = .milliseconds(500)
        /// Each event as it happens (a line for the terminal).
        public var log: (String) -> Void = { _ in }
        /// The app's own code in the loop instead of ``script`` (`TetherLive`'s `LiveSession`): it
        /// makes the WatchConnectivity calls and answers messages itself.
        public var app: LiveAppLoop?

        /// Options; see the properties.
        public init(role: SessionRole, identity: SessionDeviceID, pairedPeer: SessionDeviceID, transport: String, address: String,
                    script: LiveScript, bridgeScript: String, storePath: String) {
            self.role = role
            self.identity = identity
            self.pairedPeer = pairedPeer
            self.transport = transport
            self.address = address
            self.script = script
            self.bridgeScript = bridgeScript
            self.storePath = storePath
        }
    }

    /// What a run produced: its trace and the steps that could not run.
    public typealias Result = LiveRunResult

    /// How the host answers messages that expect a reply (the script's top-level `replies`).
    enum ReplyPolicy {
        case none
        case echo
        case value(MonkeyCValue)
    }

    private let options: Options
    private let recording: APICallRecording?
    private var driver: SessionDriver
    private var store: SessionStore?
    private var bridge: BLEBridge?
    private let start = ContinuousClock.now
    private let log: LiveTraceLog
    private var events: [(realtimeNs: Int64, event: TraceEvent)] { log.events }
    /// `link_up` / `link_down`, for `wait_for` only: they are the bridge's facts, not the core's,
    /// so they stay out of the trace (replay sees the link in the capture).
    private var hostEvents: [String] = []
    private var linkUp = false
    /// Link inputs given to the core so far (link up, a peer frame, link down): each recorded call
    /// carries the count, so replay feeds the core in this order (docs/replay-engine.md, "Feed order").
    private var linkInputs = 0
    private var connectTarget: String
    private var replies: ReplyPolicy = .none
    /// While the app is in the loop: applies one of its calls.
    private var appCall: (([String: TraceValue]) throws(LiveHostError) -> Void)?

    /// A host; nothing starts until ``run()``.
    public init(options: Options, recording: APICallRecording? = nil) {
        self.options = options
        self.log = LiveTraceLog(core: SessionTrace.core, log: options.log)
        self.recording = recording
        self.driver = SessionDriver(configuration: options.configuration)
        self.connectTarget = options.address
    }

    /// Opens the store, starts (or restores) the core, starts the bridge, runs the script, and
    /// ends the link.
    public func run() throws(LiveHostError) -> Result {
        replies = try Self.replyPolicy(options.script.settings["replies"])
        let store = try SessionStore(path: options.storePath,
                                     purpose: "tether live session --role \(options.role.rawValue) --identity \(options.identity)")
        self.store = store
        let snapshot = try store.loadSnapshot()
        driver.preload(snapshot: snapshot, outgoingFiles: try store.loadOutgoingFiles())
        var seed = options.seed ?? UInt64.random(in: 1...UInt64.max)
        if options.seed != nil, snapshot != nil {
            // A restarted host must not draw the numbers its first process drew (its nonces).
            seed = seed &+ 0x9E37_79B9_7F4A_7C15
        }
        try call(.start(role: options.role, identity: options.identity, seed: seed, restored: snapshot != nil))
        if snapshot?.pairedPeer != options.pairedPeer {
            try call(.setPaired(options.pairedPeer))
        }
        if options.role == .watch, let state = options.script.settings["app_state"] {
            guard case .object(var fields) = state else {
                throw LiveHostError(target: "script", step: "read app_state", detail: "app_state must be a mapping of installed, complication, foreground", hint: "e.g. `app_state: {foreground: false}`")
            }
            fields["call"] = .string("set_app_state")
            let parsed: SessionAPICall
            do throws(SessionAPICallError) {
                parsed = try SessionAPICall(record: fields)
            } catch {
                throw LiveHostError(target: "script", step: "read app_state", detail: error.description, hint: "e.g. `app_state: {foreground: false}`")
            }
            try call(parsed)
        }

        var arguments: [String] = ["--profile", "session"]
        if options.role == .watch { arguments = ["--address", options.address] }
        if let mtu = options.mtu { arguments += ["--mtu", String(mtu)] }
        let bridge = try BLEBridge(script: options.bridgeScript, transport: options.transport, extraArguments: arguments,
                                         stderrPath: options.bridgeLog)
        self.bridge = bridge
        defer { bridge.shutdown() }
        try bridge.waitForBluetooth(transport: options.transport) { line throws(LiveHostError) in try handleBridge(line) }
        if options.role == .phone { try bridge.send(["op": .string("connect"), "peer": .string(connectTarget)]) }

        if let app = options.app {
            // The app hears of the link going down at the end too: its recorder stays set until then.
            app.record = { [weak self] event in self?.record(event) }
            app.elapsed = { [weak self] in self?.now() ?? .zero }
            appCall = { record throws(LiveHostError) in
                let parsed: SessionAPICall
                do throws(SessionAPICallError) {
                    parsed = try SessionAPICall(record: record)
                } catch {
                    self.record(TraceEvent(timeNs: 0, core: SessionTrace.core, event: .apiRecordMalformed, fields: [
                        "source": .string("the app in the loop"), "detail": .string(error.description),
                    ]))
                    return
                }
                try self.call(parsed)
            }
            defer {
                app.record = nil
                app.elapsed = nil
                appCall = nil
            }
            try app.drive(
                start: start, now: { self.now() }, nextDeadline: { self.driver.nextDeadline },
                service: { timeout throws(LiveHostError) in try self.serviceBridge(bridge, waitingAtMost: timeout) },
                fireTimers: { () throws(LiveHostError) in try self.perform(self.driver.handleTimeout(now: self.now())) },
                apply: { record throws(LiveHostError) in try self.appCall?(record) })
            try endLink(bridge)
            return Result(events: log.events, failedSteps: log.failedSteps)
        }

        try LiveStepRunner(steps: options.script.steps, linger: options.linger, start: start).run(LiveStepRunner.Host(
            runStep: { number, name, arguments throws(LiveHostError) in try self.runStep(number: number, name: name, arguments: arguments) },
            service: { timeout throws(LiveHostError) in try self.serviceBridge(bridge, waitingAtMost: timeout) },
            nextDeadline: { self.driver.nextDeadline },
            fireTimers: { () throws(LiveHostError) in try self.perform(self.driver.handleTimeout(now: self.now())) },
            mark: { event in Self.isHostEvent(event) ? self.hostEvents.count : self.events.count },
            occurred: { event, since in
                Self.isHostEvent(event.text) ? self.hostEvents[since...].contains(event.text) : self.events[since...].contains { $0.event.event == event }
            },
            fail: { step, message in self.fail(step: step, message) }))
        try endLink(bridge)
        return Result(events: log.events, failedSteps: log.failedSteps)
    }

    /// The phone ends the session as an app going away does (the watch leaves it to the phone),
    /// then handles the bridge until the link is down (at most 3 s).
    private func endLink(_ bridge: BLEBridge) throws(LiveHostError) {
        guard linkUp else { return }
        if options.role == .phone { try bridge.send(["op": .string("disconnect"), "peer": .string(connectTarget)]) }
        let deadline = ContinuousClock.now + .seconds(3)
        while linkUp, ContinuousClock.now < deadline {
            try serviceBridge(bridge, waitingAtMost: .milliseconds(100))
        }
    }

    /// `wait_for` names the host's own link events may take besides trace events.
    static func isHostEvent(_ name: String) -> Bool { name == "link_up" || name == "link_down" }

    static func replyPolicy(_ value: TraceValue?) throws(LiveHostError) -> ReplyPolicy {
        switch value {
        case nil, .string("none")?: return .none
        case .string("echo")?: return .echo
        case .object(let object)? where object.count == 1 && object["value"] != nil:
            do throws(MonkeyCJSONError) {
                return .value(try MonkeyCJSON.monkeyCValue(object["value"]!))
            } catch {
                throw LiveHostError(target: "script", step: "read replies", detail: error.description, hint: "replies: none | echo | {value: {…}}")
            }
        default:
            throw LiveHostError(target: "script", step: "read replies", detail: "unknown reply policy", hint: "replies: none | echo | {value: {…}}")
        }
    }

    // MARK: steps

    private func runStep(number: Int, name: String, arguments: [String: TraceValue]) throws(LiveHostError) {
        switch name {
        case "connect":
            guard options.role == .phone else { return fail(step: number, "connect: only the phone connects; the watch advertises") }
            if case .string(let address)? = arguments["address"] { connectTarget = address.uppercased() }
            try bridge?.send(["op": .string("connect"), "peer": .string(connectTarget)])
        case "disconnect":
            if options.role == .phone {
                try bridge?.send(["op": .string("disconnect"), "peer": .string(connectTarget)])
            } else {
                try bridge?.send(["op": .string("disconnect")])
            }
        case "crash":
            // A real `kill -9` of this process: nothing after the last stored snapshot survives.
            options.log("crash: SIGKILL")
            kill(getpid(), SIGKILL)
        default:
            var record = arguments
            record["call"] = .string(name)
            let parsed: SessionAPICall
            do throws(SessionAPICallError) {
                parsed = try SessionAPICall(record: record)
            } catch {
                return fail(step: number, "\(name): \(error.description)")
            }
            try call(parsed, step: (number, name))
        }
    }

    /// Records and applies `call`; `step` is the script step it carries out (`nil` for the host's
    /// own calls), which fails when the core refuses the call.
    private func call(_ call: SessionAPICall, step: (number: Int, name: String)? = nil) throws(LiveHostError) {
        let realtime = Self.realtimeNs()
        try recording?.record(apiCall: call.recordJSON(linkInputs: linkInputs), timestampNs: realtime)
        let (actions, traceEvents) = driver.apply(call, now: now())
        for event in traceEvents { record(event, realtimeNs: realtime) }
        if let step { log.failIfRefused(step: step.number, call: step.name, events: traceEvents) }
        if case .transferFile = call, let store, case .int(let raw)? = traceEvents.first?.fields["file"],
           let id = UInt32(exactly: raw).map(FileTransferID.init(rawValue:)), let bytes = driver.outgoingFiles[id] {
            // Stored before the actions: the snapshot that queues the file must never be without its bytes.
            try store.storeOutgoingFile(id, bytes: bytes)
        }
        try perform(actions, realtimeNs: realtime)
    }

    private func fail(step: Int, _ message: String) { log.fail(step: step, message) }

    // MARK: bridge

    private func serviceBridge(_ bridge: BLEBridge, waitingAtMost timeout: Duration) throws(LiveHostError) {
        guard let lines = bridge.lines(waitingAtMost: timeout) else {
            throw LiveHostError.bridge("the BLE bridge exited during the run" + (options.bridgeLog.map { "; see \($0)" } ?? ""))
        }
        for line in lines {
            try handleBridge(line)
            // The app's calls from this input's callbacks, before the next input (as in replay).
            if let app = options.app, let appCall { try app.takeAll(appCall) }
        }
    }

    private func handleBridge(_ line: [String: TraceValue]) throws(LiveHostError) {
        let realtime = Self.realtimeNs()
        guard case .string(let kind)? = line["ev"] else { return }
        switch kind {
        case "connected":
            var maxWrite = 20
            if case .int(let n)? = line["max_write"] { maxWrite = Int(n) }
            options.log("link up (max write \(maxWrite) bytes)")
            linkUp = true
            linkInputs += 1
            hostEvents.append("link_up")
            try perform(driver.linkUp(maxPayload: maxWrite, now: now()), realtimeNs: realtime)
        case "notify", "write":
            guard case .string(let hex)? = line["hex"], let bytes = MonkeyCJSON.decodeHex(hex) else { return }
            linkInputs += 1
            try perform(driver.receive(bytes, now: now()), realtimeNs: realtime)
        case "disconnected", "unsubscribed":
            guard linkUp else { return }
            options.log("link down")
            linkUp = false
            linkInputs += 1
            hostEvents.append("link_down")
            try perform(driver.linkDown(now: now()), realtimeNs: realtime)
        case "bluetooth":
            break
        case "not_found":
            options.log("bridge: \(JSONLiteral.text(.object(line)))")
            record(TraceEvent(timeNs: 0, core: SessionTrace.core, event: SessionTrace.Names.linkNotFound, fields: ["detail": line["reason"] ?? .null]), realtimeNs: realtime)
        default:
            options.log("bridge: \(JSONLiteral.text(.object(line)))")
        }
    }

    // MARK: core

    private func perform(_ actions: [SessionAction], realtimeNs: Int64? = nil) throws(LiveHostError) {
        let realtime = realtimeNs ?? Self.realtimeNs()
        var answers: [SessionAPICall] = []
        for action in actions {
            switch action {
            case .write(let bytes):
                for event in SessionTrace.events(for: action, timeNs: 0) { record(event, realtimeNs: realtime, quiet: true) }
                if options.role == .phone {
                    try bridge?.send(["op": .string("write"), "peer": .string(connectTarget), "hex": .string(JSONLiteral.hex(bytes))])
                } else {
                    try bridge?.send(["op": .string("notify"), "hex": .string(JSONLiteral.hex(bytes))])
                }
            case .persist(let snapshot):
                try store?.store(snapshot)
            case let .writeIncomingFile(peer, id, offset, bytes):
                for event in SessionTrace.events(for: action, timeNs: 0) { record(event, realtimeNs: realtime, quiet: true) }
                try store?.writeIncoming(peer: peer, id: id, offset: offset, bytes: bytes)
            case let .discardIncomingFile(peer, id):
                for event in SessionTrace.events(for: action, timeNs: 0) { record(event, realtimeNs: realtime) }
                store?.discardIncoming(peer: peer, id: id)
            case .event(let event):
                for traceEvent in SessionTrace.events(for: action, timeNs: 0) { record(traceEvent, realtimeNs: realtime) }
                switch event {
                case .didReceiveFile(let file):
                    if let path = try store?.finishIncoming(peer: file.peer, id: file.id) { options.log("file kept: \(path)") }
                case .fileTransferDidFinish(let id, _):
                    try store?.removeOutgoingFile(id)
                case let .didReceiveMessage(id, value, true):
                    if let answer = reply(to: id, value: value) { answers.append(answer) }
                case let .didReceiveMessageData(id, bytes, true):
                    switch replies {
                    case .none: break
                    case .echo, .value: answers.append(.replyData(id, bytes))
                    }
                default:
                    break
                }
            }
        }
        // The app answers after the callbacks of this input, as a delegate returning would.
        for answer in answers { try call(answer) }
    }

    private func reply(to id: SessionMessageID, value: MonkeyCValue) -> SessionAPICall? {
        switch replies {
        case .none: nil
        case .echo: .reply(id, value)
        case .value(let reply): .reply(id, reply)
        }
    }

    private func record(_ event: TraceEvent, realtimeNs: Int64? = nil, quiet: Bool = false) {
        log.record(event, realtimeNs: realtimeNs, quiet: quiet)
        options.app?.observe(event)
    }

    private func now() -> Duration { start.duration(to: ContinuousClock.now) }

    /// CLOCK_REALTIME in nanoseconds: the clock capture timestamps use.
    public static func realtimeNs() -> Int64 { LiveTrace.realtimeNs() }
}
