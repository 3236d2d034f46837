import BehaviourTrace
import CaptureSet
import Dissectors
import Emulation
import Foundation
import LiveCapture
import LiveHosts

/// `tether emulate`'s live side: serves a recorded peripheral on a BLE controller through a Bumble
/// bridge (`Harness/rigs/emulate_bridge.py`), asking the sans-I/O ``Emulator`` what to answer to
/// each request the connected central makes.
///
/// One thread: read the bridge's lines, answer each request at once (the bridge holds the ATT
/// response until the answer arrives, then sends the recorded notifications at their delays).
public final class EmulationHost {
    /// What to serve and how.
    public struct Options {
        /// The controller as a Bumble transport.
        public var transport: String
        /// The bridge script.
        public var bridgeScript: String
        /// The address to advertise (static random).
        public var address: String
        /// The local name to advertise.
        public var name: String
        /// Service UUIDs to advertise.
        public var advertisedServices: [BluetoothUUID]
        /// The bridge's stderr goes here when set.
        public var bridgeLog: String?
        /// Record the central's traffic into a new capture set here.
        public var recordSet: String?
        /// Stop after this long (`nil`: until ``shouldStop`` says so).
        public var duration: Duration?
        /// Polled between bridge reads; `true` ends the emulation (a signal).
        public var shouldStop: () -> Bool = { false }
        /// Each event as a line for the terminal.
        public var log: (String) -> Void = { _ in }
        /// Print every request (off: only the unanswered ones and the link's events).
        public var verbose = false
        /// More arguments for the bridge (`--latency-log FILE` for CI/bench/emulate-latency).
        public var bridgeArguments: [String] = []

        /// Options; see the properties.
        public init(transport: String, bridgeScript: String, address: String, name: String, advertisedServices: [BluetoothUUID]) {
            self.transport = transport
            self.bridgeScript = bridgeScript
            self.address = address
            self.name = name
            self.advertisedServices = advertisedServices
        }
    }

    /// How the emulation went.
    public struct Outcome: Sendable {
        /// The counts of answers by source.
        public var tally: EmulationTally
        /// Connections served.
        public var connections: Int
        /// Why it ended (`stopped`, `duration`, `on-unknown end`, `bridge exited`).
        public var endReason: String
        /// Notices from the recorder, if recording.
        public var notices: [String]
    }

    private var emulator: Emulator
    private let options: Options
    private let serveMessage: [String: TraceValue]

    /// A host serving `database`, answering with `emulator`, and with the Connect IQ responder on
    /// `connectIQ`'s handles when given. `pairing` is what the bridge offers a central that pairs
    /// (``EmulationPlan/pairing``).
    public init(emulator: Emulator, options: Options, serverMTU: Int?, peripheralRequestedMTU: Int?, connectIQ: ConnectIQLink? = nil,
                pairing: PairingOffer = .acceptAnything) {
        self.emulator = emulator
        self.options = options
        var serve = Self.serve(emulator.database, options: options, mtu: serverMTU, requestMTU: peripheralRequestedMTU)
        serve["pairing"] = .object([
            "sc": .bool(pairing.kind == .secureConnections), "io_capability": .int(Int64(pairing.ioCapability)),
            "bonding": .bool(pairing.bonding), "mitm": .bool(pairing.mitm), "recorded": .bool(pairing != .acceptAnything),
        ])
        if let connectIQ {
            var responder: [String: TraceValue] = [
                "kind": .string("connectiq"), "write": .int(Int64(connectIQ.writeHandle)), "notify": .int(Int64(connectIQ.notifyHandle)),
                "recorded": .array(connectIQ.recorded.map { .array([.bool($0.fromPhone), .string(Self.hex($0.bytes))]) }),
            ]
            if let cccd = connectIQ.cccdHandle { responder["cccd"] = .int(Int64(cccd)) }
            serve["responder"] = .object(responder)
        }
        self.serveMessage = serve
    }

    /// Starts the bridge, serves until stopped, and returns the counts.
    public func run() throws(LiveHostError) -> Outcome {
        var recording: LiveTapRecording?
        var transport = options.transport
        if let set = options.recordSet {
            do throws(LiveCaptureError) {
                let tap = try LiveTapRecording(setPath: set, title: "tether emulate: \(options.name)",
                                               description: "What a central did against tether emulate (\(options.name) at \(options.address))",
                                               transport: options.transport, apiDescription: "unused by tether emulate")
                recording = tap
                transport = tap.hostTransport
            } catch {
                throw LiveHostError(target: set, step: "start recording", detail: error.description, hint: "--record needs a tcp-client: or serial: transport and a new folder.")
            }
        }
        let bridge: BLEBridge
        do throws(LiveHostError) {
            bridge = try BLEBridge(script: options.bridgeScript, transport: transport,
                                   extraArguments: ["--address", options.address] + options.bridgeArguments, stderrPath: options.bridgeLog)
        } catch {
            if let recording { _ = recording.abandon() }
            throw error
        }
        defer { bridge.shutdown() }
        var endReason = "stopped"
        do throws(LiveHostError) {
            // Only a request can end an emulation, and none comes before the controller is up and
            // serving: what `handle` says while waiting is always "go on".
            try bridge.waitForBluetooth(transport: options.transport) { line throws(LiveHostError) in _ = try self.handle(line, bridge: bridge) }
            try bridge.send(serveMessage)
            let start = ContinuousClock.now
            loop: while true {
                if options.shouldStop() { endReason = "stopped"; break }
                if let duration = options.duration, ContinuousClock.now - start >= duration { endReason = "duration"; break }
                guard let lines = bridge.lines(waitingAtMost: .milliseconds(100)) else { endReason = "bridge exited"; break }
                for line in lines {
                    if try handle(line, bridge: bridge) { endReason = "on-unknown end"; break loop }
                }
            }
        } catch {
            if let recording { options.log(recording.abandon()) }
            throw error
        }
        var notices: [String] = []
        if let recording {
            bridge.shutdown()
            do throws(LiveMessagingError) {
                let finished = try recording.finish { _ in }
                notices = recording.notices + finished.summary.noticesAndDrops
                notices.append("recorded \(finished.summary.capturePath)")
            } catch {
                notices.append("recording failed: \(error.description)")
            }
        }
        return Outcome(tally: emulator.tally, connections: emulator.connections, endReason: endReason, notices: notices)
    }

    /// Handles one bridge line; returns `true` when the emulation must end.
    private func handle(_ line: [String: TraceValue], bridge: BLEBridge) throws(LiveHostError) -> Bool {
        guard case .string(let event)? = line["ev"] else { return false }
        switch event {
        case "bluetooth":
            options.log("controller up on \(options.transport)")
        case "serving":
            options.log("advertising as \(options.name) at \(options.address): \(line["attributes"].map(Self.text) ?? "?") attributes at their recorded handles")
        case "connected":
            let answers = emulator.connect()
            options.log("central \(line["peer"].map(Self.text) ?? "?") connected (connection \(emulator.connections))")
            if !answers.isEmpty {
                try bridge.send(["op": .string("send"), "answers": .array(answers.map(Self.answer))])
            }
            if let initiate = Self.initiate(emulator.initiative, connection: line["handle"]) {
                try bridge.send(initiate)
            }
        case "security_request":
            emulator.countSecurityRequest()
            options.log("Security Request sent to \(line["peer"].map(Self.text) ?? "?") (AuthReq \(line["auth_req"].map(Self.text) ?? "?")), as the recorded peripheral did")
        case "discovered":
            var requests = 0
            if case .int(let n)? = line["requests"] { requests = Int(n) }
            emulator.countCentralDiscovery(requests: requests)
            options.log("discovered the database of central \(line["peer"].map(Self.text) ?? "?"), as the recorded peripheral did: "
                + "\(line["services"].map(Self.text) ?? "?") services, \(line["characteristics"].map(Self.text) ?? "?") characteristics, "
                + "\(line["descriptors"].map(Self.text) ?? "?") descriptors in \(requests) requests")
        case "disconnected":
            options.log("central \(line["peer"].map(Self.text) ?? "?") disconnected, reason \(line["reason"].map(Self.text) ?? "?")")
        case "mtu":
            emulator.countResponderAnswer()
            options.log("ATT MTU \(line["mtu"].map(Self.text) ?? "?")")
        case "pairing":
            if case .string(let result)? = line["result"], result.hasPrefix("paired") { emulator.countPairing() }
            options.log("pairing with \(line["peer"].map(Self.text) ?? "?"): \(line["result"].map(Self.text) ?? "?")")
        case "request":
            guard case .int(let id)? = line["id"], case .int(let handle)? = line["handle"], case .string(let kind)? = line["op"],
                  let handle16 = UInt16(exactly: handle) else {
                options.log("bridge sent a malformed request: \(JSONLiteral.text(.object(line)))")
                return false
            }
            let outcome: EmulatorOutcome
            if kind == "write" {
                guard case .string(let hex)? = line["hex"], let bytes = Self.bytes(hex) else {
                    options.log("bridge sent a write without hex: \(JSONLiteral.text(.object(line)))")
                    return false
                }
                outcome = emulator.write(handle: handle16, value: bytes)
            } else {
                var offset = 0
                if case .int(let o)? = line["offset"] { offset = Int(o) }
                outcome = emulator.read(handle: handle16, offset: offset)
            }
            try bridge.send(Self.answer(id: id, outcome))
            if options.verbose || outcome.source == .unanswered {
                options.log("\(kind) 0x\(String(handle16, radix: 16)) → \(outcome.source.rawValue): \(outcome.note), \(outcome.answers.count) notification(s)")
            }
            return outcome.endsEmulation
        case "responder":
            options.log("Connect IQ responder on the watch's link: apps \(line["apps"].map(Self.text) ?? "?")")
            if case .array(let notes)? = line["notes"] { for note in notes { options.log("note: \(Self.text(note))") } }
        case "responded":
            emulator.countResponderAnswer()
        case "error":
            options.log("bridge: \(line["message"].map(Self.text) ?? JSONLiteral.text(.object(line)))")
        default:
            break
        }
        return false
    }

    /// The `initiate` command: what the recorded peripheral did unasked on this connection, each at
    /// its recorded delay after the connection came up; `nil` when it did nothing.
    static func initiate(_ initiative: PeripheralInitiative, connection: TraceValue?) -> [String: TraceValue]? {
        guard !initiative.isEmpty else { return nil }
        var message: [String: TraceValue] = ["op": .string("initiate")]
        if let connection { message["handle"] = connection }
        if let request = initiative.securityRequest {
            message["security_request"] = .object(["delay_ns": .int(request.delayNs), "auth_req": .int(Int64(request.authReq)), "frame": .int(Int64(request.frame))])
        }
        if let discovery = initiative.centralDiscovery {
            message["discover"] = .object([
                "delay_ns": .int(discovery.delayNs), "frame": .int(Int64(discovery.frame)), "requests": .int(Int64(discovery.requestCount)),
                "services": .bool(discovery.services), "characteristics": .bool(discovery.characteristics), "descriptors": .bool(discovery.descriptors),
            ])
        }
        return message
    }

    static func text(_ value: TraceValue) -> String {
        if case .string(let s) = value { return s }
        return JSONLiteral.text(value)
    }

    static func answer(_ answer: RecordedAnswer) -> TraceValue {
        .object([
            "handle": .int(Int64(answer.handle)), "hex": .string(hex(answer.value)),
            "delay_ns": .int(answer.delayNs), "indicate": .bool(answer.isIndication),
        ])
    }

    static func answer(id: Int64, _ outcome: EmulatorOutcome) -> [String: TraceValue] {
        var message: [String: TraceValue] = ["op": .string("answer"), "id": .int(id), "answers": .array(outcome.answers.map(answer))]
        switch outcome.reply {
        case .accept: message["reply"] = .string("accept")
        case .value(let bytes):
            message["reply"] = .string("value")
            message["hex"] = .string(hex(bytes))
        case .error(let code):
            message["reply"] = .string("error")
            message["code"] = .int(Int64(code))
        }
        return message
    }

    /// The `serve` command: the database with every attribute at its recorded handle.
    static func serve(_ database: EmulatedDatabase, options: Options, mtu: Int?, requestMTU: Int?) -> [String: TraceValue] {
        let services: [TraceValue] = database.services.map { service in
            .object([
                "uuid": .string(uuidText(service.uuid)), "start": .int(Int64(service.startHandle)), "end": .int(Int64(service.endHandle)),
                "primary": .bool(service.isPrimary),
                "characteristics": .array(service.characteristics.map { c in
                    .object([
                        "uuid": .string(uuidText(c.uuid)), "declaration": .int(Int64(c.declarationHandle)), "value": .int(Int64(c.valueHandle)),
                        "properties": .int(Int64(c.properties)),
                        "descriptors": .array(c.descriptors.map { .object(["handle": .int(Int64($0.handle)), "uuid": .string(uuidText($0.uuid))]) }),
                    ])
                }),
            ])
        }
        return [
            "op": .string("serve"), "name": .string(options.name),
            "services": .array(options.advertisedServices.map { .string(uuidText($0)) }),
            "mtu": mtu.map { .int(Int64($0)) } ?? .null, "request_mtu": requestMTU.map { .int(Int64($0)) } ?? .null,
            "database": .array(services),
        ]
    }

    /// `180D` for a UUID in the Bluetooth base, else the full form: what Bumble's `UUID` reads.
    static func uuidText(_ uuid: BluetoothUUID) -> String {
        if let short = uuid.shortValue, short <= 0xFFFF {
            let text = String(short, radix: 16, uppercase: true)
            return String(repeating: "0", count: 4 - text.count) + text
        }
        return uuid.description
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func bytes(_ hex: String) -> [UInt8]? {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            out.append(high << 4 | low)
            index += 2
        }
        return out
    }

    static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
}
