import MessagingIntegration
import MessagingLive
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

/// `tether live messaging`: MessagingCore against a real BLE stack.
struct LiveMessagingCommand: ParsableCommand {
    @OptionGroup var live: LiveRunOptions

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


    func validate() throws {
        guard !peer.isEmpty else { throw ValidationError("--peer ADDRESS is required, e.g. --peer F0:F0:F0:F0:F0:F0") }
        for address in peer where !LiveCommand.isAddress(address) {
            throw ValidationError("--peer \(address) is not a Bluetooth address; write it as F0:F1:F2:F3:F4:F5.")
        }
        if !device.isEmpty && device.count != peer.count {
            throw ValidationError("give one --device per --peer (\(peer.count) peers, \(device.count) devices), or none.")
        }
        for uuid in device where IQUUID(uuid) == nil {
            throw ValidationError("--device \(uuid) is not a UUID (8-4-4-4-12 hex digits).")
        }
    }

    func run() throws {
        try LiveCommand.run(live, callNames: MessagingLiveHost.scriptCalls) { script, printLine in
            let devices = peer.enumerated().map { index, address in
                let uuid = device.isEmpty ? Self.deviceUUID(for: address) : IQUUID(device[index])!
                return (uuid: uuid, address: address.uppercased(), name: "watch-\(index + 1)", model: "Connect IQ watch (Bumble rig)")
            }
            var options = MessagingLiveHost.Options(transport: hci, devices: devices, script: script, bridgeScript: try LiveCommand.bridgeScript())
            options.bridgeLog = bridgeLog
            options.keySeed = seed
            options.configuration = MessagingAdapter.configuration(
                applying: MessagingOverrides(windowSize: windowSize, firstRetries: firstRetries))
            options.log = printLine
            return try runLiveMessaging(options, recordSet: live.record, title: live.title)
        }
    }

    /// A stable device UUID for an address when none is given: the address in the last 6 bytes of
    /// a fixed prefix, so the same watch gets the same UUID in every run.
    static func deviceUUID(for address: String) -> IQUUID {
        let bytes = address.split(separator: ":").compactMap { UInt8($0, radix: 16) }
        return IQUUID(bytes: [0x7E, 0x7E, 0x7E, 0x7E, 0x00, 0x00, 0x40, 0x00, 0x80, 0x00] + bytes) ?? IQUUID(high: 0, low: 0)
    }

}

