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

/// `tether live`: a core in real time against real peers.
struct LiveCommand: ParsableCommand {
    /// The checks every live host's `--record` and `--trace` get: a new set folder, a trace file
    /// that can be written and does not go inside the set.
    static func checkOutputs(record: String?, trace: String?) throws {
        if let record, FileManager.default.fileExists(atPath: record) {
            throw ValidationError("--record \(record) exists already; name a new capture set folder.")
        }
        if let record { try OutputFile.refuseNewSetInsideSet(record, option: "--record") }
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

/// The options every `tether live` subcommand takes: the script, and where the run goes.
struct LiveRunOptions: ParsableArguments {
    @Option(name: .long, help: "The script of the app's actions (YAML, docs/live-hosts.md).")
    var script: String

    @Option(name: .long, help: "Record into this new capture set (the link's traffic and the app's API calls).")
    var record: String?

    @Option(name: .long, help: "Write the behaviour trace (JSON Lines) here: the trace `tether replay` writes for the recording.")
    var trace: String?

    @Option(name: .long, help: "Title of the recorded set.")
    var title: String?

    /// A new set folder, a trace file that can be written and does not go inside the set.
    func validate() throws {
        try LiveCommand.checkOutputs(record: record, trace: trace)
    }

    /// The script, or exit 64 saying which step of which file is wrong.
    func loadScript(callNames: Set<String>) throws -> LiveScript {
        try LiveCommand.loadScript(script, callNames: callNames)
    }
}

extension LiveCommand {
    /// The skeleton every live subcommand runs: load the script, run the core's host (`body`,
    /// which gets the script and a line printer), and report: write the trace, name the
    /// recording, warn of notices (the tap's, the recording's, each interface's drops) and failed
    /// steps; exit 1 when a step failed.
    static func run(_ options: LiveRunOptions, callNames: Set<String>, body: (LiveScript, @escaping (String) -> Void) throws -> LiveRunOutcome) throws {
        let script = try options.loadScript(callNames: callNames)
        let printLine: (String) -> Void = { line in
            StandardOutput.shared.line(line)
            StandardOutput.shared.flush()
        }
        let result: LiveRunOutcome
        do {
            result = try body(script, printLine)
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure.failed("\(error)")
        }
        if let trace = options.trace { try OutputFile.write(bytes: TraceFile.encodeBytes(result.trace), to: trace) }
        if let recording = result.recording {
            StandardOutput.shared.line("recorded \(recording.frames) frames into \(recording.setPath) (sha256 \(recording.sha256))")
        }
        for notice in result.notices { Terminal.warn("tether: notice: \(notice)") }
        for failure in result.failedSteps { Terminal.warn("tether: \(failure)") }
        StandardOutput.shared.flush()
        if !result.failedSteps.isEmpty { throw CommandFailure(message: "", exitCode: 1) }
    }

    /// Whether `text` is a Bluetooth address written F0:F1:F2:F3:F4:F5.
    static func isAddress(_ text: String) -> Bool {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        return parts.count == 6 && parts.allSatisfy { $0.count == 2 && UInt8($0, radix: 16) != nil }
    }

    /// `Harness/rigs/ciq_phone_bridge.py`, named by `TETHER_BRIDGE`, else found as
    /// ``RigScripts`` finds rigs.
    static func bridgeScript(rigs: String? = nil) throws -> String {
        if let path = ProcessInfo.processInfo.environment["TETHER_BRIDGE"] {
            Terminal.warn("tether: BLE bridge \(path) (from TETHER_BRIDGE)")
            return path
        }
        return try rigScript("ciq_phone_bridge.py", rigs: rigs)
    }

    /// `Harness/rigs/NAME` as ``RigScripts/locate(_:option:environment:binary:)`` finds it, said
    /// on stderr with how it was found.
    static func rigScript(_ name: String, rigs: String? = nil) throws -> String {
        let located = try RigScripts.locate(name, option: rigs)
        Terminal.warn("tether: rig \(located.path) (\(located.source))")
        return located.path
    }
}
