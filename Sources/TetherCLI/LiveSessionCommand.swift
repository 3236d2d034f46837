import MessagingIntegration
import SessionLive
import SessionIntegration
import WidgetIntegration
import IngestIntegration
import ReplayKit
import BehaviourTrace
import ArgumentParser
import Foundation
import LiveCapture
import LiveHosts
import CaptureSet
import MessagingCore
import SessionCore
import WidgetCore

/// `tether live session`: one side of SessionCore against a real BLE stack.
struct LiveSessionCommand: ParsableCommand {
    @OptionGroup var live: LiveRunOptions

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


    @Option(name: .long, help: "The durable store (SQLite file); reuse it to resume after a crash.")
    var store: String



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

    @Option(name: .long, help: "Frames this side accepts ahead of its acknowledged offset, stated in its handshake (1-4096; default: none stated, the link keeps 8).",
            transform: { try OptionValues.integer($0, option: "--window", range: 1...4096) })
    var window: Int?

    @Flag(name: .customLong("compact-frames"),
          help: "State compact frames in the handshake: with a peer that states them too, continuation frames carry a 4-byte header instead of 10.")
    var compactFrames = false

    @Option(name: .long, help: "The largest ATT MTU the BLE bridge asks for (phone) or accepts (watch) (23-517; default 247).",
            transform: { try OptionValues.integer($0, option: "--mtu", range: 23...517) })
    var mtu: Int?


    static let defaultPhone = "0ff1ce00-0000-4000-8000-000000000001"
    static let defaultWatch = "0ff1ce00-0000-4000-8000-0000000000a1"

    func validate() throws {
        guard let role = SessionRole(rawValue: role) else { throw ValidationError("--role must be phone or watch, got \(role).") }
        if role == .phone {
            guard let peer else { throw ValidationError("--role phone needs --peer ADDRESS (the watch's), e.g. --peer F0:F0:F0:F0:F0:A1") }
            guard LiveCommand.isAddress(peer) else { throw ValidationError("--peer \(peer) is not a Bluetooth address; write it as F0:F1:F2:F3:F4:F5.") }
        } else if let address, !LiveCommand.isAddress(address) {
            throw ValidationError("--address \(address) is not a Bluetooth address; write it as F0:F1:F2:F3:F4:F5.")
        }
        for (option, value) in [("--identity", identity), ("--paired", paired)] {
            if let value, SessionDeviceID(value) == nil { throw ValidationError("\(option) \(value) is not a UUID (8-4-4-4-12 hex digits).") }
        }
    }

    func run() throws {
        let role = SessionRole(rawValue: role)!
        try LiveCommand.run(live, callNames: SessionLiveHost.scriptCalls) { script, printLine in
            let identity = SessionDeviceID(self.identity ?? (role == .phone ? Self.defaultPhone : Self.defaultWatch))!
            let paired = SessionDeviceID(self.paired ?? (role == .phone ? Self.defaultWatch : Self.defaultPhone))!
            let address = (role == .phone ? peer : address ?? "F0:F0:F0:F0:F0:A1")!.uppercased()
            let bridge = role == .phone ? try LiveCommand.bridgeScript() : try LiveCommand.rigScript("session_watch_bridge.py")
            var options = SessionLiveHost.Options(role: role, identity: identity, pairedPeer: paired, transport: hci, address: address,
                                                  script: script, bridgeScript: bridge, storePath: store)
            options.bridgeLog = bridgeLog
            options.seed = seed
            options.mtu = mtu
            let overrides = SessionOverrides(
                messageReplyTimeoutMs: messageReplyTimeout.map { Int(($0 * 1000).rounded()) },
                complicationTransfersPerWindow: complicationBudget,
                windowFrames: window,
                compactFrames: compactFrames ? true : nil)
            options.configuration = SessionAdapter.configuration(applying: overrides)
            options.log = printLine
            return try runLiveSession(options, recordSet: live.record, title: live.title,
                                      settings: overrides == SessionOverrides() ? nil : overrides)
        }
    }
}
