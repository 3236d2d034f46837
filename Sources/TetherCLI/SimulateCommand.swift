import ArgumentParser
import IngestLive
import LiveHosts
import IngestIntegration
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tether simulate …`: traffic generators that stand in for real devices.
struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Stand-ins for real devices: send the traffic they would send.",
        discussion: """
            Send a minute of Motion plugin traffic to a local ingest server:
              tether simulate plugin --to 127.0.0.1:12345 --duration 60
            """,
        subcommands: [SimulatePluginCommand.self]
    )
}

/// `tether simulate plugin`: a plugin sender like intdash Motion's sample.
struct SimulatePluginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "plugin",
        abstract: "Send UDP datagrams like a Motion plugin: data messages, name messages, an end message.",
        discussion: """
            Like the Motion plugin sample: data messages at --rate Hz, each with six entries \
            v1/1/yaw … v1/1/z of the chosen --types, a name message every 10 s, and an end message \
            at the end. The traffic is a pure function of the options and --seed (sample times \
            start at the current wall clock), so two runs with one seed send the same sequence.

            --malformed injects bad traffic, once each, at positions chosen from the seed: \
            not-json, bad-base64, oversize (10,000 bytes), wrong-payload-length, missing-fields, \
            time-backwards (a valid message stamped one second earlier), stall=SECONDS (the plugin \
            goes quiet; longer than the ingest idle timeout, 15 s, ends its stream), or all (every \
            kind, with a 20 s stall).

            The faulty session committed under Captures/ was sent with:
              tether simulate plugin --duration 60 --malformed all --seed 7
            A clean minute at 50 Hz of mixed payload types:
              tether simulate plugin --rate 50 --duration 60 --types mixed
            """
    )

    @Option(name: .long, help: "Where to send, HOST:PORT.")
    var to: String = "127.0.0.1:12345"

    @Option(name: .long, help: "Data messages per second (more than 0, at most 100000).",
            transform: { try OptionValues.decimal($0, option: "--rate", range: 0...100_000, excludingLowerBound: true) })
    var rate: Double = 20

    @Option(name: .long, help: "How long to send (seconds, or 500ms, 8s, 2m, 1h; at most 24h). The end message goes out after this, plus any stall.",
            transform: { try OptionValues.seconds($0, option: "--duration", range: 0.001...86_400) })
    var duration: Double = 10

    @Option(name: .long, help: "Payload types: float64, int64, vector_3d, string, or mixed (one of each, plus bytes).")
    var types: String = "float64"

    @Option(name: .long, parsing: .upToNextOption, help: "Bad traffic to inject: not-json bad-base64 oversize wrong-payload-length missing-fields time-backwards stall=SECONDS, or all.")
    var malformed: [String] = []

    @Option(name: .long, help: "Seed for the signal phases and fault positions, for repeatable traffic.")
    var seed: UInt64 = 1

    @Option(name: .customLong("plugin-name"), help: "The text of the name messages.")
    var pluginName: String = "Plugin Sample"

    @Flag(name: .customLong("no-end"), help: "Do not send the end message (the stream then ends by idle timeout).")
    var noEnd = false

    func validate() throws {
        guard HostPort.parse(to) != nil else {
            throw ValidationError("--to \(to) is not HOST:PORT. Write e.g. 127.0.0.1:12345 or [::1]:12345.")
        }
        guard rate > 0, rate.isFinite, rate <= 100_000 else {
            throw ValidationError("--rate must be between 0 and 100000 messages per second (got \(rate)).")
        }
        guard duration > 0, duration.isFinite else {
            throw ValidationError("--duration must be a positive number of seconds (got \(duration)).")
        }
        // The schedule is computed up front, one entry per message.
        guard rate * duration <= Self.maximumMessages else {
            throw ValidationError("--rate \(OptionValues.describe(rate)) for --duration \(OptionValues.describe(duration)) s is \(OptionValues.describe((rate * duration).rounded())) messages; at most \(Int(Self.maximumMessages)) are sent in one run. Lower the rate or the duration.")
        }
        guard SimulatedPayloadKind(rawValue: types) != nil else {
            let kinds = SimulatedPayloadKind.allCases.map(\.rawValue).joined(separator: ", ")
            throw ValidationError("--types \(types) is not one of \(kinds).")
        }
        _ = try Self.faults(malformed)
    }

    /// The most data messages one run schedules (its schedule is held in memory).
    static let maximumMessages: Double = 50_000_000

    /// Parse the --malformed words.
    static func faults(_ words: [String]) throws -> [TrafficFault] {
        var faults: [TrafficFault] = []
        for word in words.flatMap({ $0.split(separator: ",").map(String.init) }) {
            switch word {
            case "not-json": faults.append(.notJSON)
            case "bad-base64": faults.append(.badBase64)
            case "oversize": faults.append(.oversize)
            case "wrong-payload-length": faults.append(.wrongPayloadLength)
            case "missing-fields": faults.append(.missingFields)
            case "time-backwards": faults.append(.timeBackwards)
            case "all":
                faults += [.notJSON, .badBase64, .oversize, .wrongPayloadLength, .missingFields, .timeBackwards, .stall(.seconds(20))]
            default:
                if word.hasPrefix("stall=") {
                    let seconds = try OptionValues.seconds(String(word.dropFirst(6)), option: "--malformed stall=", range: 0.001...86_400)
                    faults.append(.stall(.nanoseconds(OptionValues.nanoseconds(seconds))))
                } else {
                    throw ValidationError("--malformed \(word) is not a fault. Use not-json, bad-base64, oversize, wrong-payload-length, missing-fields, time-backwards, stall=SECONDS or all.")
                }
            }
        }
        return faults
    }

    func run() async throws {
        guard let target = HostPort.parse(to), let kind = SimulatedPayloadKind(rawValue: types) else { return }
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let configuration = PluginTrafficConfiguration(
            rate: rate, duration: .nanoseconds(OptionValues.nanoseconds(duration)), payloadKind: kind, seed: seed,
            startWallClockNs: Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec), pluginName: pluginName,
            sendsEndMessage: !noEnd, faults: try Self.faults(malformed))
        let simulator = PluginSimulator(configuration: configuration, host: target.host, port: target.port)
        let schedule = simulator.schedule
        let malformedCount = schedule.filter(\.isMalformed).count
        let span = Format.seconds(schedule.last?.offset.nanosecondsClamped ?? 0)

        // The handlers go in before anything is sent (and before the first line, which callers
        // wait for), so a signal at any moment ends in the summary rather than a killed process.
        let interruption = Mutex<Int32?>(nil)
        let sending = Mutex<Task<PluginSendReport, any Error>?>(nil)
        let signals = InterruptSignals { number in
            interruption.withLock { $0 = number }
            sending.withLock { $0 }?.cancel()
        }
        defer { signals.cancel() }
        StandardOutput.shared.line("Sending \(schedule.count) datagrams (\(malformedCount) malformed) to \(to) over \(span) s")
        StandardOutput.shared.flush()
        let task = Task { try await simulator.run(clock: ContinuousClock()) }
        sending.withLock { $0 = task }
        // A signal that came before the task existed had nothing to cancel yet.
        if interruption.withLock({ $0 }) != nil { task.cancel() }
        let report = try await task.value
        let signal = interruption.withLock { $0 }
        StandardOutput.shared.line(Self.summary(report, scheduled: schedule.count, interruptedBy: signal))
        if let signal {
            // The conventional status of a process ended by a signal: 128 + its number (130 for
            // SIGINT, 143 for SIGTERM, 129 for SIGHUP), so a calling script sees the interruption.
            let what = !report.cancelled ? "every datagram had been sent"
                : noEnd ? "the rest of the schedule was not sent" : "the plugin stopped without its end message"
            throw CommandFailure(message: "interrupted by \(InterruptSignals.name(of: signal)); \(what)", exitCode: 128 + signal)
        }
        if report.failed > 0 {
            throw CommandFailure.failed("\(report.failed) datagrams were refused by the kernel; is a server listening on \(to)? Start one with `tether serve ingest`.")
        }
    }

    /// The closing line, the same at a normal end and after a signal (which it names):
    /// `Sent 1207 datagrams (682301 bytes) in 60.050 s; latest send 0.21 ms behind schedule`.
    /// Scripts read the count as the second word.
    static func summary(_ report: PluginSendReport, scheduled: Int, interruptedBy signal: Int32?) -> String {
        var line = "Sent \(report.sent) datagrams (\(report.bytesSent) bytes) in \(Format.fixed(Double(report.elapsed.nanosecondsClamped) / 1e9, 3)) s"
        if report.failed > 0 { line += ", \(report.failed) refused (\(report.firstFailure ?? "unknown reason"))" }
        if let signal {
            line += report.cancelled
                ? "; interrupted by \(InterruptSignals.name(of: signal)): \(report.unsent) of \(scheduled) scheduled datagrams not sent"
                : "; interrupted by \(InterruptSignals.name(of: signal)) after the last datagram"
        }
        line += "; latest send \(Format.duration(report.maxLateness.nanosecondsClamped)) behind schedule"
        return line
    }
}

extension Duration {
    /// The duration in whole nanoseconds (saturating).
    var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return product &+ attoseconds / 1_000_000_000
    }
}
