import ArgumentParser
import Foundation
import LiveCapture
import LiveHosts
import CaptureSet
import MessagingCore
import Replay
import SessionCore
import WidgetCore

/// `tether live`: a core in real time against real peers.
struct LiveCommand: ParsableCommand {
    /// The checks every live host's `--record` and `--trace` get: a new set folder, a trace file
    /// that can be written and does not go inside the set.
    static func checkOutputs(record: String?, trace: String?) throws {
        if let record, FileManager.default.fileExists(atPath: record) {
            throw ValidationError("--record \(record) exists already; name a new capture set folder.")
        }
        if let trace {
            try OutputFile.check(trace, option: "--trace")
            if let record { try OutputFile.refuseInside(trace, option: "--trace", set: record) }
        }
    }

    /// A live host's script, or exit 64 saying which step of which file is wrong.
    static func loadScript(_ path: String, callNames: Set<String>) throws -> LiveScript {
        do {
            return try LiveScript.load(path, callNames: callNames)
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: ExitCode.validationFailure.rawValue)
        }
    }

    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "Run a protocol core in real time against a real peer, scripted, writing the trace replay writes.",
        discussion: """
            Run MessagingCore against a Connect IQ watch reached through a Bumble controller, and record it:
              tether live messaging --hci tcp-client:127.0.0.1:9002 --peer F0:F0:F0:F0:F0:F0 \\
                --script Harness/scenarios/ciq/clean.yaml --record Captures/ciq-clean --trace /tmp/live.jsonl
            """,
        subcommands: [LiveMessagingCommand.self, LiveSessionCommand.self, LiveWidgetCommand.self]
    )
}

/// `tether live messaging`: MessagingCore against a real BLE stack.
struct LiveMessagingCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "messaging",
        abstract: "Run MessagingCore (the Connect IQ companion side) live against a watch over BLE.",
        discussion: """
            The phone's BLE stack is Bumble (Harness/rigs/ciq_phone_bridge.py), started on the \
            controller named by --hci with a Bumble transport name. The host registers for the \
            watch's events when the script first registers an app, connects to --peer, raises the \
            MTU, discovers the Connect IQ service, subscribes, and then runs the script's steps, \
            printing each callback as it happens. A step that cannot run (an unknown app, a \
            malformed message) is a `step_failed` trace event, not a crash. Script format: \
            docs/live-hosts.md.

            --record SET puts an H4 tap between the bridge and the controller and records every \
            HCI packet (link type 201) and every API call (link type 147) on one timeline into a \
            new capture set; `tether replay SET` then replays it, and `tether diff` of --trace \
            against the replayed trace shows whether replay reproduced what happened.

            Two Bumble controllers on one virtual radio, a watch on one (see docs/ble-rigs.md):
              python3 Harness/rigs/ciq_controllers.py --ports 9001,9002 &
              python3 Harness/rigs/ciq_watch.py --hci tcp-client:127.0.0.1:9001 \\
                --address F0:F0:F0:F0:F0:F0 --app 0180E520-5F7E-11E4-9803-0800200C9A66:echo &
              tether live messaging --hci tcp-client:127.0.0.1:9002 --peer F0:F0:F0:F0:F0:F0 \\
                --script Harness/scenarios/ciq/clean.yaml --record Captures/ciq-clean --trace /tmp/live.jsonl
            """
    )

    @Option(name: .long, help: "The phone's controller as a Bumble transport: tcp-client:HOST:PORT, serial:PATH, usb:0.")
    var hci: String

    @Option(name: .long, help: "The watch's BLE address, F0:F1:F2:F3:F4:F5. Repeat for several watches.")
    var peer: [String]

    @Option(name: .long, help: "The watch's Connect IQ device UUID (one per --peer, in order; default: derived from the address).")
    var device: [String] = []

    @Option(name: .long, help: "The script of the app's actions (YAML, docs/live-hosts.md).")
    var script: String

    @Option(name: .long, help: "Record into this new capture set (H4 tap + API calls).")
    var record: String?

    @Option(name: .long, help: "Write the behaviour trace (JSON Lines) here.")
    var trace: String?

    @Option(name: .customLong("bridge-log"), help: "Keep the BLE bridge's log in this file.")
    var bridgeLog: String?

    @Option(name: .long, help: "Seed for the encryption keys (default: random).",
            transform: { try OptionValues.integer($0, option: "--seed", range: UInt64.min...UInt64.max) })
    var seed: UInt64?

    @Option(name: .customLong("window-size"), help: "Data packets per acknowledged window (1-15; default 15).",
            transform: { try OptionValues.integer($0, option: "--window-size", range: 1...15) })
    var windowSize: Int?

    @Option(name: .customLong("first-retries"), help: "How often `first` is resent after `transfer not started` (0-10; default 2).",
            transform: { try OptionValues.integer($0, option: "--first-retries", range: 0...10) })
    var firstRetries: Int?

    @Option(name: .long, help: "Title of the recorded set.")
    var title: String?

    func validate() throws {
        guard !peer.isEmpty else { throw ValidationError("--peer ADDRESS is required, e.g. --peer F0:F0:F0:F0:F0:F0") }
        for address in peer where !Self.isAddress(address) {
            throw ValidationError("--peer \(address) is not a Bluetooth address; write it as F0:F1:F2:F3:F4:F5.")
        }
        if !device.isEmpty && device.count != peer.count {
            throw ValidationError("give one --device per --peer (\(peer.count) peers, \(device.count) devices), or none.")
        }
        for uuid in device where IQUUID(uuid) == nil {
            throw ValidationError("--device \(uuid) is not a UUID (8-4-4-4-12 hex digits).")
        }
        try LiveCommand.checkOutputs(record: record, trace: trace)
    }

    func run() throws {
        let script = try LiveCommand.loadScript(self.script, callNames: MessagingLiveHost.scriptCalls)
        let devices = peer.enumerated().map { index, address in
            let uuid = device.isEmpty ? Self.deviceUUID(for: address) : IQUUID(device[index])!
            return (uuid: uuid, address: address.uppercased(), name: "watch-\(index + 1)", model: "Connect IQ watch (Bumble rig)")
        }
        var request = LiveMessagingRequest(transport: hci, devices: devices, script: script, bridgeScript: Self.bridgeScript())
        request.recordSet = record
        request.bridgeLog = bridgeLog
        request.keySeed = seed
        if let title { request.title = title }
        request.configuration = MessagingAdapter.configuration(
            applying: MessagingOverrides(windowSize: windowSize, firstRetries: firstRetries))
        request.log = { line in StandardOutput.shared.line(line); StandardOutput.shared.flush() }
        let outcome: LiveMessagingOutcome
        do {
            outcome = try runLiveMessaging(request)
        } catch {
            throw CommandFailure.failed("\(error)")
        }
        try LiveMessagingCommand.report(trace: outcome.trace, to: trace, recording: outcome.recording,
                                        notices: outcome.notices, failedSteps: outcome.failedSteps)
    }

    /// What every live command prints at the end: writes the trace, names the recording, warns of
    /// the tap's notices and failed steps; exits 1 when a step failed.
    static func report(trace events: [TraceEvent], to trace: String?, recording: RecordingSummary?, notices: [String], failedSteps: [String]) throws {
        if let trace { try OutputFile.write(bytes: TraceFile.encodeBytes(events), to: trace) }
        if let recording {
            StandardOutput.shared.line("recorded \(recording.frames) frames into \(recording.setPath) (sha256 \(recording.sha256))")
        }
        for notice in notices { Terminal.warn("tether: notice: \(notice)") }
        for failure in failedSteps { Terminal.warn("tether: \(failure)") }
        StandardOutput.shared.flush()
        if !failedSteps.isEmpty { throw CommandFailure(message: "", exitCode: 1) }
    }

    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && UInt8($0, radix: 16) != nil }
    }

    /// A stable device UUID for an address when none is given: the address in the last 6 bytes of
    /// a fixed prefix, so the same watch gets the same UUID in every run.
    static func deviceUUID(for address: String) -> IQUUID {
        let bytes = address.split(separator: ":").compactMap { UInt8($0, radix: 16) }
        return IQUUID(bytes: [0x7E, 0x7E, 0x7E, 0x7E, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00] + bytes) ?? IQUUID(high: 0, low: 0)
    }

    /// `Harness/rigs/ciq_phone_bridge.py`, found beside the repository the binary was built in, or
    /// named by `TETHER_BRIDGE`.
    static func bridgeScript() -> String {
        if let path = ProcessInfo.processInfo.environment["TETHER_BRIDGE"] { return path }
        return rigScript("ciq_phone_bridge.py")
    }

    /// `Harness/rigs/NAME`, found beside the repository the binary was built in (else relative to
    /// the working directory).
    static func rigScript(_ name: String) -> String {
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        for _ in 0..<5 {
            let candidate = url.appendingPathComponent("Harness/rigs/\(name)").path
            if FileManager.default.fileExists(atPath: candidate) { return candidate }
            url.deleteLastPathComponent()
        }
        return "Harness/rigs/\(name)"
    }
}

/// `tether live session`: one side of SessionCore against a real BLE stack.
struct LiveSessionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "session",
        abstract: "Run one side of SessionCore (WatchConnectivity semantics) live over the session link.",
        discussion: """
            The phone side is a GATT client (Harness/rigs/ciq_phone_bridge.py --profile session) that \
            connects to --peer; the watch side a GATT server (Harness/rigs/session_watch_bridge.py) \
            advertising at --address. Each runs its script (docs/live-hosts.md), keeps its durable \
            state in --store (SQLite; a host restarted on the same store resumes its queues, as after \
            a crash), prints each callback as it happens, and with --record records its own HCI and \
            API calls into a new capture set that `tether replay` replays against this side.

            Two Bumble controllers on one virtual radio, the watch on one, the phone on the other:
              python3 Harness/rigs/ciq_controllers.py --ports 9001,9002 &
              tether live session --role watch --hci tcp-client:127.0.0.1:9001 --address F0:F0:F0:F0:F0:A1 \\
                --script Harness/scenarios/session/clean.watch.yaml --store /tmp/watch.sqlite &
              tether live session --role phone --hci tcp-client:127.0.0.1:9002 --peer F0:F0:F0:F0:F0:A1 \\
                --script Harness/scenarios/session/clean.phone.yaml --store /tmp/phone.sqlite \\
                --record Captures/session-clean --trace /tmp/phone.jsonl
            """
    )

    @Option(name: .long, help: "Which side to run: phone or watch.")
    var role: String

    @Option(name: .long, help: "The controller as a Bumble transport: tcp-client:HOST:PORT, serial:PATH, usb:0.")
    var hci: String

    @Option(name: .long, help: "Phone: the watch's BLE address to connect to.")
    var peer: String?

    @Option(name: .long, help: "Watch: the static random address to advertise (default F0:F0:F0:F0:F0:A1).")
    var address: String?

    @Option(name: .long, help: "This side's session identity (default: the doc's phone …0001 or watch …00a1).")
    var identity: String?

    @Option(name: .customLong("paired"), help: "The paired counterpart's identity (default: the doc's other side).")
    var paired: String?

    @Option(name: .long, help: "The script (YAML, docs/live-hosts.md).")
    var script: String

    @Option(name: .long, help: "The durable store (SQLite file); reuse it to resume after a crash.")
    var store: String

    @Option(name: .long, help: "Record into this new capture set (H4 tap + API calls).")
    var record: String?

    @Option(name: .long, help: "Write the behaviour trace (JSON Lines) here.")
    var trace: String?

    @Option(name: .customLong("bridge-log"), help: "Keep the BLE bridge's log in this file.")
    var bridgeLog: String?

    @Option(name: .long, help: "Seed for the core's random numbers (default: random).",
            transform: { try OptionValues.integer($0, option: "--seed", range: UInt64(1)...UInt64.max) })
    var seed: UInt64?

    @Option(name: .customLong("message-reply-timeout"), help: "A message's time limit for its reply (default 10s; 1ms-1h).",
            transform: { try OptionValues.seconds($0, option: "--message-reply-timeout", range: 0.001...3600) })
    var messageReplyTimeout: Double?

    @Option(name: .customLong("complication-budget"), help: "Complication transfers per day (default 50; 0-1000).",
            transform: { try OptionValues.integer($0, option: "--complication-budget", range: 0...1000) })
    var complicationBudget: Int?

    @Option(name: .long, help: "Title of the recorded set.")
    var title: String?

    static let defaultPhone = "0ff1ce00-0000-4000-8000-000000000001"
    static let defaultWatch = "0ff1ce00-0000-4000-8000-0000000000a1"

    func validate() throws {
        guard let role = SessionRole(rawValue: role) else { throw ValidationError("--role must be phone or watch, got \(role).") }
        if role == .phone {
            guard let peer else { throw ValidationError("--role phone needs --peer ADDRESS (the watch's), e.g. --peer F0:F0:F0:F0:F0:A1") }
            guard LiveMessagingCommand.isAddress(peer) else { throw ValidationError("--peer \(peer) is not a Bluetooth address; write it as F0:F1:F2:F3:F4:F5.") }
        } else if let address, !LiveMessagingCommand.isAddress(address) {
            throw ValidationError("--address \(address) is not a Bluetooth address; write it as F0:F1:F2:F3:F4:F5.")
        }
        for (option, value) in [("--identity", identity), ("--paired", paired)] {
            if let value, SessionDeviceID(value) == nil { throw ValidationError("\(option) \(value) is not a UUID (8-4-4-4-12 hex digits).") }
        }
        try LiveCommand.checkOutputs(record: record, trace: trace)
    }

    func run() throws {
        let role = SessionRole(rawValue: role)!
        let script = try LiveCommand.loadScript(self.script, callNames: SessionLiveHost.scriptCalls)
        let identity = SessionDeviceID(self.identity ?? (role == .phone ? Self.defaultPhone : Self.defaultWatch))!
        let paired = SessionDeviceID(self.paired ?? (role == .phone ? Self.defaultWatch : Self.defaultPhone))!
        let address = (role == .phone ? peer : address ?? "F0:F0:F0:F0:F0:A1")!.uppercased()
        let bridge = role == .phone ? LiveMessagingCommand.bridgeScript() : LiveMessagingCommand.rigScript("session_watch_bridge.py")
        var options = SessionLiveHost.Options(role: role, identity: identity, pairedPeer: paired, transport: hci, address: address,
                                              script: script, bridgeScript: bridge, storePath: store)
        options.bridgeLog = bridgeLog
        options.seed = seed
        let overrides = SessionOverrides(
            messageReplyTimeoutMs: messageReplyTimeout.map { Int(($0 * 1000).rounded()) },
            complicationTransfersPerWindow: complicationBudget)
        options.configuration = SessionAdapter.configuration(applying: overrides)
        options.log = { line in StandardOutput.shared.line(line); StandardOutput.shared.flush() }
        let outcome: LiveSessionOutcome
        do {
            outcome = try runLiveSession(options, recordSet: record, title: title,
                                         settings: overrides == SessionOverrides() ? nil : overrides)
        } catch {
            throw CommandFailure.failed("\(error)")
        }
        try LiveMessagingCommand.report(trace: outcome.trace, to: trace, recording: outcome.recording,
                                        notices: outcome.notices, failedSteps: outcome.failedSteps)
    }
}

/// `tether live widget`: one process of the host-app ↔ widget channel, live.
struct LiveWidgetCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "widget",
        abstract: "Run the host app or the widget of the widget channel live: an App Group folder and MQTT to a broker.",
        discussion: """
            Each process runs WidgetCore (docs/widget-core.md) with its script (docs/live-hosts.md): \
            the App Group container is --container, a folder both processes share (writes are atomic: \
            a temporary file, then a rename; the other process's changes arrive through inotify), and \
            the long-lived connection is MQTT to --broker (docs/widget-mqtt.md). Each callback is \
            printed as it happens; --trace writes the trace replay writes; --record records the \
            broker's TCP traffic, the container's changes and this process's calls into a new set.

            A broker, the IoT cloud simulator, the host app and the widget on one container:
              python3 Harness/rigs/mqtt_broker.py --port 1883 &
              python3 Harness/rigs/iot_cloud.py --port 1883 &
              mkdir -p /tmp/demo-group
              tether live widget --role host --container /tmp/demo-group \\
                --script Harness/scenarios/widget/property-change.host.yaml &
              tether live widget --role widget --container /tmp/demo-group \\
                --script Harness/scenarios/widget/property-change.widget.yaml \\
                --record Captures/widget-mine --trace /tmp/widget.jsonl
            Script settings: `open_url: opened | refused | none` (how the host app answers the widget).
            """
    )

    @Option(name: .long, help: "Which process to run: host or widget.")
    var role: String

    @Option(name: .long, help: "The App Group container folder both processes share (it must exist).")
    var container: String

    @Option(name: .long, help: "The MQTT broker, HOST:PORT (default 127.0.0.1:1883).")
    var broker: String = "127.0.0.1:1883"

    @Option(name: .long, help: "The IoT account: the topics' {account} (default demo).")
    var account: String = "demo"

    @Option(name: .long, help: "The script (YAML, docs/live-hosts.md).")
    var script: String

    @Option(name: .long, help: "Record into this new capture set (broker TCP on lo, the container, API calls).")
    var record: String?

    @Option(name: .long, help: "Write the behaviour trace (JSON Lines) here.")
    var trace: String?

    @Option(name: .long, help: "Seed for the core's random numbers (default: random).",
            transform: { try OptionValues.integer($0, option: "--seed", range: UInt64(1)...UInt64.max) })
    var seed: UInt64?

    @Option(name: .customLong("request-timeout"), help: "A cloud request's time limit (default 10s; 1ms-1h).",
            transform: { try OptionValues.seconds($0, option: "--request-timeout", range: 0.001...3600) })
    var requestTimeout: Double?

    @Option(name: .long, help: "Title of the recorded set.")
    var title: String?

    /// `HOST:PORT` split.
    static func parseBroker(_ text: String) -> (host: String, port: UInt16)? {
        guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        let host = String(text[..<colon])
        return host.isEmpty ? nil : (host, port)
    }

    func validate() throws {
        guard WidgetRole(rawValue: role) != nil else { throw ValidationError("--role must be host or widget, got \(role).") }
        guard FileIO.isDirectory(container) else {
            throw ValidationError("--container \(container) is not a folder. Create it first (mkdir -p \(container)); both processes must use the same one.")
        }
        guard Self.parseBroker(broker) != nil else { throw ValidationError("--broker \(broker) is not HOST:PORT, e.g. 127.0.0.1:1883.") }
        try LiveCommand.checkOutputs(record: record, trace: trace)
    }

    func run() throws {
        let role = WidgetRole(rawValue: role)!
        let script = try LiveCommand.loadScript(self.script, callNames: WidgetLiveHost.scriptCalls)
        let (host, port) = Self.parseBroker(broker)!
        var options = WidgetLiveHost.Options(role: role, account: account, brokerPort: port, container: container, script: script)
        options.brokerHost = host
        options.seed = seed
        if let requestTimeout { options.configuration.requestTimeout = .milliseconds(Int64((requestTimeout * 1000).rounded())) }
        options.log = { line in StandardOutput.shared.line(line); StandardOutput.shared.flush() }
        let outcome: LiveWidgetOutcome
        do {
            outcome = try runLiveWidget(options, recordSet: record, title: title)
        } catch {
            throw CommandFailure.failed("\(error)")
        }
        try LiveMessagingCommand.report(trace: outcome.trace, to: trace, recording: outcome.recording, notices: [], failedSteps: outcome.failedSteps)
    }
}
