import ArgumentParser
import CaptureSet
import Dissectors
import Emulation
import EmulationLive
import Foundation
import Synchronization

/// `tether emulate SET --hci TRANSPORT`: stand in for the recorded peripheral on a BLE controller.
struct EmulateCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "emulate",
        abstract: "Serve a recorded peripheral live on a BLE controller: its GATT database and its recorded answers.",
        discussion: """
            Rebuilds the peripheral's GATT database from the capture set (every attribute at its \
            recorded handle; from the capture's discovery, else from the handles it uses and the \
            manifest's gatt_handles), advertises as the recorded device, and answers a connected \
            central: reads with the recorded values in recorded order per handle; writes with the \
            notifications and indications that followed the matching write in the capture, after \
            the recorded delay (matched by handle and bytes, falling back to handle and position). \
            A request the capture cannot answer gets what --on-unknown says. Where the database \
            serves the Connect IQ link, a protocol-aware responder speaks it instead (the phone's \
            keys are new each session), with the apps as the capture shows them. What the recorded \
            peripheral did unasked is done again at its recorded delay after each connection: a \
            Security Request, a discovery of the central's own GATT database. Pairing is offered \
            as recorded (legacy pairing when the recording paired that way, else LE Secure \
            Connections, Just Works) and each pairing is logged. Runs until SIGINT or \
            SIGTERM (or --duration), then prints how many requests were answered from the \
            capture, by a responder, or not at all. docs/emulate.md has the details.

            Two Bumble controllers on one virtual radio; the emulated device on one:
              python3 Harness/rigs/ciq_controllers.py --ports 9001,9002 &
              tether emulate Captures/gatt-sensor --hci tcp-client:127.0.0.1:9001 &
              python3 Harness/emulate_central.py --hci tcp-client:127.0.0.1:9002 --set Captures/gatt-sensor \\
                --peer F0:5E:00:00:00:01
              kill -INT %2    # prints the counts and ends
            """
    )

    @Argument(help: "The capture set of the peripheral to emulate, e.g. Captures/gatt-sensor.")
    var set: String

    @Option(name: .long, help: "The controller as a Bumble transport: tcp-client:HOST:PORT, serial:PATH, usb:0, android-netsim:.")
    var hci: String

    @Option(name: .long, help: "The local name to advertise (default: the recorded one).")
    var name: String?

    @Option(name: .long, help: "The static random address to advertise (default: the recorded peripheral's, else F0:E0:00:00:00:01).")
    var address: String?

    @Option(name: .customLong("on-unknown"), help: "A request the capture cannot answer: ignore, att-error or end.")
    var onUnknown: String = UnknownRequestPolicy.ignore.rawValue

    @Flag(name: .customLong("reset-per-connection"), help: "Start each connection from the capture's beginning (default: run on, as the recording did).")
    var resetPerConnection = false

    @Option(name: .long, help: "Record what the central did into a new capture set (needs tcp-client: or serial:).")
    var record: String?

    @Option(name: .long, help: "Stop after this many seconds (default: run until SIGINT or SIGTERM).",
            transform: { try OptionValues.seconds($0, option: "--duration", range: 0.1...86_400) })
    var duration: Double?

    @Option(name: .customLong("bridge-log"), help: "Keep the BLE bridge's log in this file.")
    var bridgeLog: String?

    @Option(name: .long, help: ArgumentHelp("The folder holding Tether's rigs (emulate_bridge.py); default: TETHER_RIGS, else Harness/rigs beside the tether binary. Never the working directory.", valueName: "dir"))
    var rigs: String?

    @Flag(name: .customLong("generic-only"), help: "Play recorded bytes back everywhere, even where a protocol-aware responder (Connect IQ) would answer.")
    var genericOnly = false

    @Flag(name: .long, help: "Print every request and how it was answered.")
    var verbose = false

    @Flag(name: .customLong("no-verify"), help: "Do not check the capture's SHA-256 first.")
    var noVerify = false

    func validate() throws {
        guard CaptureSetDirectory.isCaptureSet(set) else {
            throw ValidationError("\(set) has no manifest.yaml, so it is not a capture set. Give a folder such as Captures/<name>, or import a capture first with `tether import FILE --out Captures/<name>`.")
        }
        guard UnknownRequestPolicy(rawValue: onUnknown) != nil else {
            throw ValidationError("--on-unknown must be ignore, att-error or end, got \(onUnknown).")
        }
        if let address, !LiveCommand.isAddress(address) {
            throw ValidationError("--address \(address) is not a Bluetooth address; write it as F0:F1:F2:F3:F4:F5.")
        }
    }

    func run() throws {
        let plan: EmulationPlan
        do throws(EmulationError) {
            plan = try EmulationPlan(setPath: set, verify: !noVerify, useResponders: !genericOnly)
        } catch {
            throw CommandFailure.failed(error.description)
        }
        let printLine: (String) -> Void = { line in
            StandardOutput.shared.line(line)
            StandardOutput.shared.flush()
        }
        for note in plan.notes { printLine("note: \(note)") }
        for warning in plan.warnings { Terminal.warn("tether: warning: \(set): the recorded GATT database: \(warning)") }
        let deviceName = name ?? plan.peripheral.name ?? CaptureSetDirectory(path: set).name
        let deviceAddress = (address ?? plan.staticAddress ?? "F0:E0:00:00:00:01").uppercased()
        printLine("emulating \(set): \(plan.summary)")
        let stop = Mutex(false)
        let signals = InterruptSignals { number in
            Terminal.writeStderr("tether: \(InterruptSignals.name(of: number)): ending the emulation…\n")
            stop.withLock { $0 = true }
        }
        defer { signals.cancel() }
        let bridgeScript = try LiveCommand.rigScript("emulate_bridge.py", rigs: rigs)
        var options = EmulationHost.Options(transport: hci, bridgeScript: bridgeScript,
                                            address: deviceAddress, name: deviceName, advertisedServices: plan.advertisedServices)
        options.bridgeLog = bridgeLog
        options.recordSet = record
        options.duration = duration.map { .milliseconds(Int64(($0 * 1000).rounded())) }
        options.shouldStop = { stop.withLock { $0 } }
        options.log = printLine
        options.verbose = verbose
        // CI/bench/emulate-latency: the bridge logs when each request arrived and its answers left.
        if let latencyLog = ProcessInfo.processInfo.environment["TETHER_EMULATE_LATENCY_LOG"] { options.bridgeArguments = ["--latency-log", latencyLog] }
        let emulator = Emulator(script: plan.script, database: plan.database, policy: UnknownRequestPolicy(rawValue: onUnknown)!,
                                resetPerConnection: resetPerConnection, sessionLink: plan.sessionLink, initiatives: plan.peripheral.initiatives)
        if plan.sessionLink != nil { printLine("session-link responder on the watch's link: HELLOs matched without their random fields, WELCOMEs echo the live nonce") }
        let host = EmulationHost(emulator: emulator, options: options, serverMTU: plan.script.serverMTU,
                                 peripheralRequestedMTU: plan.script.peripheralRequestedMTU, connectIQ: plan.connectIQ,
                                 pairing: plan.pairing)
        let outcome = try host.run()
        for notice in outcome.notices { Terminal.warn("tether: note: \(notice)") }
        let t = outcome.tally
        printLine("emulation ended (\(outcome.endReason)) after \(outcome.connections) connection\(outcome.connections == 1 ? "" : "s"): "
            + "\(t.fromCapture) request\(t.fromCapture == 1 ? "" : "s") answered from the capture (\(t.matchedByPosition) by position), "
            + "\(t.byResponder) by a responder, \(t.unanswered) unanswered"
            + (t.securityRequestsSent + t.pairings + t.centralDiscoveries > 0
                ? "; \(t.securityRequestsSent) Security Request\(t.securityRequestsSent == 1 ? "" : "s") sent, \(t.pairings) pairing\(t.pairings == 1 ? "" : "s"), "
                    + "\(t.centralDiscoveries) discover\(t.centralDiscoveries == 1 ? "y" : "ies") of the central's database (\(t.centralDiscoveryRequests) requests)"
                : ""))
        if outcome.endReason == "on-unknown end" { throw CommandFailure(message: "", exitCode: 1) }
        if outcome.endReason == "bridge exited" {
            throw CommandFailure.failed("the BLE bridge (\(bridgeScript)) exited during the emulation; rerun with --bridge-log FILE to keep its log")
        }
    }
}
