import MessagingIntegration
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
import MessagingCore
import MonkeyC

/// Runs ``MessagingCore`` in real time against a real BLE stack (the Bumble bridge), driven by a
/// script, and writes the same behaviour trace replay writes.
///
/// One thread does everything: it runs script steps until one waits, then polls the bridge socket
/// until the earliest of the core's deadline, the step's deadline and the bridge's next line, feeds
/// what came, and repeats. Time for the core is the monotonic clock since start; trace times are
/// CLOCK_REALTIME readings, taken once per input and shared with the recording, made relative at the
/// end to ``Options/traceZeroNs`` (the recording's first frame) so the live trace and the trace of
/// replaying the recording have the same time base.
public final class MessagingLiveHost {
    /// The calls a messaging script's steps may name (docs/live-hosts.md).
    public static let scriptCalls: Set<String> = [
        "register", "unregister", "register_device", "unregister_device", "unregister_all_devices",
        "app_status", "send", "open_app", "device_list",
    ]

    /// What to run and against what.
    public struct Options {
        /// The Bumble transport of the phone's controller (`tcp-client:127.0.0.1:9002`, `usb:0`).
        public var transport: String
        /// The watches: device UUID → BLE address.
        public var devices: [(uuid: IQUUID, address: String, name: String, model: String)]
        /// The script.
        public var script: LiveScript
        /// `Harness/rigs/ciq_phone_bridge.py`.
        public var bridgeScript: String
        /// The bridge's stderr goes here when set.
        public var bridgeLog: String?
        /// MessagingCore settings.
        public var configuration: MessagingConfiguration = .init()
        /// Seed for the encryption keys; `nil` draws them from the system's generator.
        public var keySeed: UInt64?
        /// How long to keep handling the link after the last step.
        public var linger: Duration = .milliseconds(500)
        /// Each event as it happens (a line for the terminal).
        public var log: (String) -> Void = { _ in }
        /// The app's own code in the loop instead of ``script`` (`TetherLive`'s `LiveSession`): it
        /// makes the SDK calls, including the device list from ``deviceSelectionURL(_:)``.
        public var app: LiveAppLoop?

        /// Options; see the properties.
        public init(transport: String, devices: [(uuid: IQUUID, address: String, name: String, model: String)], script: LiveScript, bridgeScript: String) {
            self.transport = transport
            self.devices = devices
            self.script = script
            self.bridgeScript = bridgeScript
        }
    }

    /// What a run produced: its trace and the steps that could not run.
    public typealias Result = LiveRunResult

    private let options: Options
    private var core: MessagingCore
    private let recording: APICallRecording?
    private var bridge: BLEBridge?
    private let start = ContinuousClock.now
    private let log: LiveTraceLog
    private var events: [(realtimeNs: Int64, event: TraceEvent)] { log.events }
    private var registeredDevices: Set<IQUUID> = []
    private var connectRequested: Set<IQUUID> = []
    /// Link inputs given to the core so far (a link up, a notification, the down of a link that was
    /// up): each recorded call carries the count, so replay feeds the core in this order
    /// (docs/replay-engine.md, "Feed order").
    private var linkInputs = 0
    private var linkedDevices: Set<IQUUID> = []

    /// A host; nothing starts until ``run()``.
    public init(options: Options, recording: APICallRecording? = nil) {
        self.options = options
        self.log = LiveTraceLog(core: MessagingTrace.core, log: options.log)
        self.recording = recording
        let keys: any EncryptionKeySource = options.keySeed.map { SeededKeySource(seed: $0) } ?? SystemKeySource()
        self.core = MessagingCore(configuration: options.configuration, keySource: keys)
    }

    /// Starts the bridge, runs the script to its end (then lingers), stops the bridge.
    public func run() throws(LiveHostError) -> Result {
        let bridge = try BLEBridge(script: options.bridgeScript, transport: options.transport, stderrPath: options.bridgeLog)
        self.bridge = bridge
        defer { bridge.shutdown() }
        try bridge.waitForBluetooth(transport: options.transport) { line throws(LiveHostError) in try handleBridge(line) }

        // The device list as Garmin Connect Mobile would hand it over (the app in the loop hands
        // it over itself), and which address is which device.
        if options.app == nil { try call(.deviceList(url: MessagingLiveHost.deviceSelectionURL(options.devices))) }
        for device in options.devices {
            try call(.bindDevice(device: device.uuid.description, peer: device.address))
        }

        let closed = "the BLE bridge exited during the run" + (options.bridgeLog.map { "; see \($0)" } ?? "")
        if let app = options.app {
            // The app hears of the links going down at the end too: its recorder stays set until then.
            defer {
                app.record = nil
                app.elapsed = nil
            }
            try runApp(app, bridge: bridge, closed: closed)
            try disconnectAll(bridge)
            return Result(events: log.events, failedSteps: log.failedSteps)
        }
        try LiveStepRunner(steps: options.script.steps, linger: options.linger, start: start).run(LiveStepRunner.Host(
            runStep: { number, name, arguments throws(LiveHostError) in try self.runStep(number: number, name: name, arguments: arguments) },
            service: { timeout throws(LiveHostError) in _ = try self.serviceBridge(bridge, waitingAtMost: timeout, closed: closed) },
            nextDeadline: { self.core.nextDeadline },
            fireTimers: { () throws(LiveHostError) in try self.perform(self.core.handleTimeout(now: self.now())) },
            mark: { _ in self.events.count },
            occurred: { event, since in self.events[since...].contains { $0.event.event == event } },
            fail: { step, message in self.fail(step: step, message) }))
        try disconnectAll(bridge)
        return Result(events: log.events, failedSteps: log.failedSteps)
    }

    /// The app in the loop (``LiveAppLoop/drive(start:now:nextDeadline:service:fireTimers:apply:)``):
    /// its records read as ``MessagingAPICall``s, a record that is not one traced as
    /// `api_record_malformed`.
    private func runApp(_ app: LiveAppLoop, bridge: BLEBridge, closed: String) throws(LiveHostError) {
        app.record = { [weak self] event in self?.record(event) }
        app.elapsed = { [weak self] in self?.now() ?? .zero }
        appCall = { record throws(LiveHostError) in
            let parsed: MessagingAPICall
            do throws(MessagingAPICallError) {
                parsed = try MessagingAPICall(record: record)
            } catch {
                self.record(TraceEvent(timeNs: 0, core: MessagingTrace.core, event: .apiRecordMalformed, fields: [
                    "source": .string("the app in the loop"), "detail": .string(error.description),
                ]))
                return
            }
            try self.call(parsed)
        }
        defer { appCall = nil }
        try app.drive(
            start: start, now: { self.now() }, nextDeadline: { self.core.nextDeadline },
            service: { timeout throws(LiveHostError) in _ = try self.serviceBridge(bridge, waitingAtMost: timeout, closed: closed) },
            fireTimers: { () throws(LiveHostError) in try self.perform(self.core.handleTimeout(now: self.now())) },
            apply: { record throws(LiveHostError) in try self.appCall?(record) })
    }

    /// While the app is in the loop: applies one of its calls.
    private var appCall: (([String: TraceValue]) throws(LiveHostError) -> Void)?

    /// Ends the session as an app going away does: disconnects every link and handles what the
    /// bridge reports until the links are down (at most 3 s), so the trace ends as the capture does.
    private func disconnectAll(_ bridge: BLEBridge) throws(LiveHostError) {
        let connected = options.devices.filter { core.status(of: $0.uuid) == .connected }
        guard !connected.isEmpty else { return }
        for device in connected {
            try bridge.send(["op": .string("disconnect"), "peer": .string(device.address)])
        }
        let deadline = ContinuousClock.now + .seconds(3)
        while ContinuousClock.now < deadline, connected.contains(where: { core.status(of: $0.uuid) == .connected }) {
            _ = try serviceBridge(bridge, waitingAtMost: .milliseconds(100), closed: "the BLE bridge exited while disconnecting at the end")
        }
    }

    /// The query string Garmin Connect Mobile opens a companion app with, for these devices.
    public static func deviceSelectionURL(_ devices: [(uuid: IQUUID, address: String, name: String, model: String)]) -> String {
        DeviceSelectionURL.make(scheme: "tether-ciq", devices: devices.map { IQDevice(uuid: $0.uuid, modelName: $0.model, friendlyName: $0.name) })
    }

    // MARK: steps

    private func runStep(number: Int, name: String, arguments: [String: TraceValue]) throws(LiveHostError) {
        var record = arguments
        let onlyDevice = options.devices.count == 1 ? options.devices[0].uuid.description : nil
        if record["device"] == nil, let onlyDevice { record["device"] = .string(onlyDevice) }
        var calls: [MessagingAPICall] = []
        do throws(MessagingAPICallError) {
            switch name {
            case "register":
                record["call"] = .string("register_app")
                let app = try MessagingAPICall(record: record)
                if case .registerApp(_, let device, _) = app, let uuid = IQUUID(device), !registeredDevices.contains(uuid) {
                    calls.append(.registerDevice(device: device))
                }
                calls.append(app)
            case "unregister":
                record["call"] = .string("unregister_app")
                calls.append(try MessagingAPICall(record: record))
            default:
                record["call"] = .string(name)
                calls.append(try MessagingAPICall(record: record))
            }
        } catch {
            fail(step: number, "\(name): \(error.description)")
            return
        }
        for call in calls { try self.call(call, step: (number, name)) }
    }

    /// Records and applies `call`; `step` is the script step it carries out (`nil` for the host's
    /// own calls), which fails when the core refuses the call.
    private func call(_ call: MessagingAPICall, step: (number: Int, name: String)? = nil) throws(LiveHostError) {
        let realtime = Self.realtimeNs()
        try recording?.record(apiCall: call.recordJSON(linkInputs: linkInputs), timestampNs: realtime)
        let (actions, traceEvents) = MessagingDriver.apply(call, to: &core, now: now())
        for event in traceEvents { record(event, realtimeNs: realtime) }
        if let step { log.failIfRefused(step: step.number, call: step.name, events: traceEvents) }
        try perform(actions, realtimeNs: realtime)
        if case .registerDevice(let device) = call, let uuid = IQUUID(device) {
            registeredDevices.insert(uuid)
            try connectIfNeeded(uuid)
        }
    }

    private func connectIfNeeded(_ device: IQUUID) throws(LiveHostError) {
        guard !connectRequested.contains(device), let entry = options.devices.first(where: { $0.uuid == device }) else { return }
        connectRequested.insert(device)
        try bridge?.send(["op": .string("connect"), "peer": .string(entry.address)])
    }

    private func fail(step: Int, _ message: String) { log.fail(step: step, message) }

    // MARK: bridge

    /// Waits up to `timeout` for the bridge, then handles every line it sent, in order.
    /// - Returns: the lines handled; none when it stayed quiet.
    /// - Throws: `closed` as a ``LiveHostError`` when the bridge closed its socket.
    private func serviceBridge(_ bridge: BLEBridge, waitingAtMost timeout: Duration, closed: String) throws(LiveHostError) -> [[String: TraceValue]] {
        guard let lines = bridge.lines(waitingAtMost: timeout) else { throw LiveHostError.bridge(closed) }
        for line in lines {
            try handleBridge(line)
            // The app's calls from this input's callbacks, before the next input (as in replay).
            if let app = options.app, let appCall { try app.takeAll(appCall) }
        }
        return lines
    }

    private func handleBridge(_ line: [String: TraceValue]) throws(LiveHostError) {
        let realtime = Self.realtimeNs()
        guard case .string(let kind)? = line["ev"] else { return }
        let peer: String? = { if case .string(let p)? = line["peer"] { return p.uppercased() } else { return nil } }()
        let device = peer.flatMap { p in options.devices.first { $0.address.uppercased() == p }?.uuid }
        switch kind {
        case "connected":
            guard let device else { return }
            var maxWrite = 20
            if case .int(let n)? = line["max_write"] { maxWrite = Int(n) }
            options.log("link up: \(peer ?? "?") (max write \(maxWrite) bytes)")
            linkInputs += 1
            linkedDevices.insert(device)
            try perform(core.linkConnected(device, maxWriteLength: maxWrite, now: now()), realtimeNs: realtime)
        case "notify":
            guard let device, case .string(let hex)? = line["hex"], let bytes = MonkeyCJSON.decodeHex(hex) else { return }
            linkInputs += 1
            try perform(core.receive(bytes, from: device, now: now()), realtimeNs: realtime)
        case "disconnected":
            guard let device else { return }
            options.log("link down: \(peer ?? "?")")
            connectRequested.remove(device)
            if linkedDevices.remove(device) != nil { linkInputs += 1 }
            try perform(core.linkDisconnected(device, now: now()), realtimeNs: realtime)
        case "not_found":
            guard let device else { return }
            connectRequested.remove(device)
            try perform(core.linkNotFound(device, now: now()), realtimeNs: realtime)
        case "bluetooth":
            var ready = true
            if case .bool(let flag)? = line["ready"] { ready = flag }
            try call(.bluetoothState(ready: ready))
        default:
            options.log("bridge: \(JSONLiteral.text(.object(line)))")
        }
    }

    // MARK: core

    private func perform(_ actions: [MessagingAction], realtimeNs: Int64? = nil) throws(LiveHostError) {
        let realtime = realtimeNs ?? Self.realtimeNs()
        for action in actions {
            switch action {
            case .write(let device, let bytes):
                guard let entry = options.devices.first(where: { $0.uuid == device }) else { continue }
                for event in MessagingTrace.events(for: action, timeNs: 0) { record(event, realtimeNs: realtime, quiet: true) }
                try bridge?.send(["op": .string("write"), "peer": .string(entry.address), "hex": .string(JSONLiteral.hex(bytes))])
            default:
                for event in MessagingTrace.events(for: action, timeNs: 0) { record(event, realtimeNs: realtime) }
            }
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
