import ArgumentParser
import CaptureSet
import LiveHosts
import ReplayKit

/// `tether replay --realtime`: a set's recorded traffic re-sent over real sockets at its recorded pace.
extension ReplayCommand {
    func runRealtime(set: String) throws {
        guard let to, let target = HostPort.parse(to) else { return }
        let loaded = try CaptureSetDirectory.load(set, verify: !noVerify)
        for warning in loaded.warnings { Terminal.warn("tether: warning: \(warning)") }
        // Each core says what of its traffic is re-sent (the ingest core: its datagrams, to its port).
        let settings = try parsedSettings()
        var traffic: [RealtimeTraffic] = []
        for integration in CLIIntegrations.registry.integrations {
            if let own = try integration.realtimeTraffic(of: loaded, settings: settings) { traffic.append(own) }
        }
        for warning in traffic.flatMap(\.warnings) { Terminal.warn("tether: warning: \(warning)") }
        let datagrams = traffic.flatMap(\.datagrams)
        guard !datagrams.isEmpty else {
            let what = traffic.isEmpty ? "no registered core re-sends traffic in real time" : "it has no captured " + traffic.map(\.description).joined(separator: " or ")
            throw CommandFailure.failed("\(set): \(what); nothing to send. `tether inspect \(set) --frames` shows what it holds.")
        }
        let sender = try PacedUDPSender(host: target.host, port: target.port)
        let recordedSpanNs = datagrams[datagrams.count - 1].offsetNs
        StandardOutput.shared.line("Sending \(datagrams.count) datagrams from \(loaded.directory.name) to \(to) at \(Format.fixed(speed, 2))× (\(Format.seconds(Int64(exactly: (Double(recordedSpanNs) / speed).rounded()) ?? .max)) s)")
        StandardOutput.shared.flush()
        let status = StatusLine()
        let report = sender.run(datagrams, speed: speed) { sent in
            status.update { "sent \(sent)/\(datagrams.count)" }
        }
        status.clear()
        StandardOutput.shared.line("Sent \(report.sent) datagrams in \(Format.seconds(report.elapsedNs)) s" + (report.failed > 0 ? " (\(report.failed) refused by the kernel)" : ""))
        StandardOutput.shared.line("Scheduling: \(report.scheduling)")
        StandardOutput.shared.line("Gap error: p50 \(Format.duration(report.gapErrorQuantile(0.5))), p99 \(Format.duration(report.gapErrorQuantile(0.99))), max \(Format.duration(report.gapErrorsNs.last ?? 0)); total drift \(report.totalDriftNs >= 0 ? "+" : "")\(Format.duration(report.totalDriftNs))")
        // One stable key=value line for scripts (CI/bench parses it).
        StandardOutput.shared.line("pacing sent=\(report.sent) failed=\(report.failed) p50_ns=\(report.gapErrorQuantile(0.5)) p99_ns=\(report.gapErrorQuantile(0.99)) max_ns=\(report.gapErrorsNs.last ?? 0) drift_ns=\(report.totalDriftNs) speed=\(speed)")
        StandardOutput.shared.flush()
        if report.failed > 0 {
            throw CommandFailure.failed("\(report.failed) datagrams could not be sent to \(to); is a server listening there (`tether serve ingest`)?")
        }
    }
}

/// `HOST:PORT`, `[IPv6]:PORT`.
struct HostPort: Equatable {
    var host: String
    var port: UInt16

    static func parse(_ text: String) -> HostPort? {
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            let host = String(text[text.index(after: text.startIndex)..<close])
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":"), let port = UInt16(rest.dropFirst()), !host.isEmpty else { return nil }
            return HostPort(host: host, port: port)
        }
        guard let colon = text.lastIndex(of: ":") else { return nil }
        let host = String(text[..<colon])
        guard !host.isEmpty, !host.contains(":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
        return HostPort(host: host, port: port)
    }
}
