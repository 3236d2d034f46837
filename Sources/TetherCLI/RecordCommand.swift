import ArgumentParser
import CaptureSet
import Dispatch
import Foundation
import LiveCapture
#if canImport(Glibc)
import Glibc
#endif

/// `tether record --udp IFACE[:PORT] --out Captures/<name>`: live capture into a capture set.
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record live UDP traffic with libpcap into a new capture set.",
        discussion: """
            --udp IFACE:PORT captures UDP to or from PORT on IFACE (BPF filter `udp port PORT`, \
            immediate mode, nanosecond timestamps, a 32 MiB buffer) and records PORT in the \
            manifest as the ingest port, so `tether replay` feeds IngestCore from it with no \
            further flags. Without :PORT, all UDP on IFACE is recorded and replay assumes 12345. \
            The capture file is flushed at least every second: a killed recorder leaves a set that \
            loses at most the last second (it loads with an "unsealed" warning).

            The recording ends after --duration seconds, or on SIGINT (Ctrl-C) or SIGTERM; either \
            way the set is sealed (status complete, SHA-256 of the capture) and libpcap's drop \
            counts are written to the file (an Interface Statistics Block) and printed. On a \
            terminal a live frame counter is shown on stderr.

            --mark-stdin turns each line read from stdin into an annotation: a packet comment on the \
            next frame recorded and a manifest entry. Type a line and press Enter while recording, \
            or pipe lines in from a script. Capturing needs root or CAP_NET_RAW.

            Record a plugin session on loopback for a minute:
              tether record --udp lo:12345 --out Captures/plugin-clean --duration 60
            Record until Ctrl-C, marking moments from the keyboard:
              tether record --udp lo:12345 --out Captures/bench-walk --mark-stdin
            """
    )

    @Option(name: .long, help: "The interface to capture UDP on, optionally with the ingest port: lo:12345, any:12345, eth0.")
    var udp: String

    @Option(name: .long, help: "The capture set folder to create, e.g. Captures/<name>. It must not exist yet.")
    var out: String

    @Option(name: .long, help: "Stop after this many seconds (default: until SIGINT or SIGTERM).")
    var duration: Double?

    @Flag(name: .customLong("mark-stdin"), help: "Read annotation lines from stdin while recording.")
    var markStdin = false

    @Option(name: .long, help: "One line saying what is recorded (the manifest title).")
    var title: String?

    @Option(name: .long, help: "Free text for the manifest's description.")
    var description: String?

    @Option(name: .long, help: "A BPF filter to use instead of `udp port PORT`.")
    var filter: String?

    /// `IFACE[:PORT]` split.
    static func parseUDP(_ text: String) -> (interface: String, port: UInt16?)? {
        guard let colon = text.lastIndex(of: ":") else { return text.isEmpty ? nil : (text, nil) }
        let interface = String(text[..<colon])
        guard !interface.isEmpty, let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        return (interface, port)
    }

    func validate() throws {
        guard Self.parseUDP(udp) != nil else {
            throw ValidationError("--udp \(udp) is not IFACE or IFACE:PORT. Write e.g. lo:12345 (loopback, the ingest port).")
        }
        guard !FileSystem.exists(out) else {
            throw ValidationError("\(out) already exists. Choose a new set name under Captures/, or remove the old set.")
        }
        if let duration, !(duration > 0 && duration.isFinite) {
            throw ValidationError("--duration must be a positive number of seconds (got \(duration)); leave it out to record until Ctrl-C.")
        }
    }

    func run() async throws {
        guard let (device, port) = Self.parseUDP(udp) else { return }
        var options = port.map { PcapLiveSource.Options.udpPort($0) } ?? PcapLiveSource.Options(filter: "udp")
        if let filter { options.filter = filter }
        let source = try PcapLiveSource(device: device, options: options)
        let input = RecorderInput(source: source, role: .ingestUDP, ingestPort: port)
        let recorder = Recorder(
            setPath: out, title: title ?? "UDP on \(device)\(port.map { ":\($0)" } ?? "")",
            description: description, inputs: [input])
        try recorder.start()
        for notice in recorder.notices { Terminal.warn("tether: note: \(notice)") }
        // Scripts (and the end-to-end test) wait for this line before sending traffic.
        StandardOutput.shared.line("Recording UDP on \(udp) into \(out)\(duration.map { " for \(Format.fixed($0, 1)) s" } ?? ""). Stop with Ctrl-C.")
        StandardOutput.shared.flush()

        let status = StatusLine()
        let clock = ContinuousClock()
        let started = clock.now
        let queue = DispatchQueue(label: "tether.record.ui")
        // The live counter exists only on a terminal.
        var ticker: (any DispatchSourceTimer)?
        if Terminal.stderrIsTerminal {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: .milliseconds(250))
            let setName = out
            timer.setEventHandler {
                let elapsed = started.duration(to: clock.now).nanosecondsClamped
                status.update(force: true) { "recording \(setName): \(recorder.framesRecorded) frames, \(Format.fixed(Double(elapsed) / 1e9, 1)) s" }
            }
            timer.resume()
            ticker = timer
        }
        let signals = InterruptSignals(queue: queue) { _ in recorder.stop() }
        var stopper: DispatchWorkItem?
        if let duration {
            let item = DispatchWorkItem { recorder.stop() }
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(duration * 1e9)), execute: item)
            stopper = item
        }
        if markStdin { Self.readMarks(into: recorder) }

        let summary: RecordingSummary
        do {
            summary = try await recorder.run()
        } catch {
            ticker?.cancel()
            signals.cancel()
            status.clear()
            throw error
        }
        stopper?.cancel()
        signals.cancel()
        ticker?.cancel()
        status.clear()

        let out = StandardOutput.shared
        out.line("Recorded \(summary.frames) frames into \(summary.setPath) (sealed, sha256 \(summary.sha256.prefix(16))…)")
        for interface in summary.interfaces {
            var line = "  #\(interface.index)  \(interface.name ?? "?")  \(interface.linkType)  \(interface.frames) frames"
            if let statistics = interface.statistics {
                line += "  dropped \(statistics.totalDropped)"
                if let received = statistics.received { line += " of \(received) received" }
            } else {
                line += "  drops unknown (libpcap gave no statistics)"
            }
            out.line(line)
        }
        out.line("Dropped in total: \(summary.totalDropped)")
        if !summary.annotations.isEmpty { out.line("Annotations: \(summary.annotations.count)") }
        for notice in summary.notices { out.line("Note: \(notice)") }
        out.line("Next: tether inspect \(summary.setPath) --frames, then tether replay \(summary.setPath) --update-baseline")
    }

    /// Each stdin line becomes a mark, on a thread of its own (a blocking read must not hold up
    /// the recorder); end of input just ends the marks.
    static func readMarks(into recorder: Recorder) {
        let thread = Thread {
            while let line = readLine(strippingNewline: true) {
                let text = line.trimmingCharacters(in: .whitespaces)
                guard !text.isEmpty else { continue }
                recorder.mark(text)
                Terminal.writeStderr((Terminal.stderrIsTerminal ? "\r\u{1B}[K" : "") + "marked: \(text.replacingControlCharacters())\n")
            }
        }
        thread.start()
    }
}
