import MessagingIntegration
import WidgetLive
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

/// `tether live widget`: one process of the host-app ↔ widget channel, live.
struct LiveWidgetCommand: ParsableCommand {
    @OptionGroup var live: LiveRunOptions

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




    @Option(name: .long, help: "Seed for the core's random numbers (default: random).",
            transform: { try OptionValues.integer($0, option: "--seed", range: UInt64(1)...UInt64.max) })
    var seed: UInt64?

    @Option(name: .customLong("request-timeout"), help: "A cloud request's time limit (default 10s; 1ms-1h).",
            transform: { try OptionValues.seconds($0, option: "--request-timeout", range: 0.001...3600) })
    var requestTimeout: Double?


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
    }

    func run() throws {
        let role = WidgetRole(rawValue: role)!
        let (host, port) = Self.parseBroker(broker)!
        try LiveCommand.run(live, callNames: WidgetLiveHost.scriptCalls) { script, printLine in
            var options = WidgetLiveHost.Options(role: role, account: account, brokerPort: port, container: container, script: script)
            options.brokerHost = host
            options.seed = seed
            if let requestTimeout { options.configuration.requestTimeout = .milliseconds(Int64((requestTimeout * 1000).rounded())) }
            options.log = printLine
            return try runLiveWidget(options, recordSet: live.record, title: live.title)
        }
    }
}
