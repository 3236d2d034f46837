import BehaviourTrace
import ArgumentParser
import Redaction
import CaptureSet
import Dispatch
import Foundation
import LiveCapture
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `tether record --udp IFACE[:PORT] --ble SPEC --out Captures/<name>`: live capture into a capture set.
struct RecordCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "record",
        abstract: "Record live BLE (H4 tap or BlueZ) and UDP (libpcap) traffic into a new capture set.",
        discussion: """
            --udp IFACE:PORT captures UDP to or from PORT on IFACE (BPF filter `udp port PORT`, \
            immediate mode, nanosecond timestamps, a 32 MiB buffer) and records PORT in the \
            manifest as the ingest port, so `tether replay` feeds IngestCore from it with no \
            further flags. Without :PORT, all UDP on IFACE is recorded and replay assumes 12345. \
            Capturing UDP needs root or CAP_NET_RAW.

            --ble tcp:HOST:PORT puts an H4 tap between a host stack and the controller served at \
            HOST:PORT (Bumble's virtual controllers: `python3 Harness/rigs/ciq_controllers.py \
            tcp-server:127.0.0.1:9001 tcp-server:127.0.0.1:9002`). The tap listens on --ble-listen HOST:PORT \
            (default 127.0.0.1:0, any free port; the port is printed) and forwards bytes both \
            ways unchanged and at once; point the host stack at it instead of at the controller \
            (Bumble: transport tcp-client:127.0.0.1:PORT). Every HCI packet is recorded with its \
            direction (LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR, role ble-hci). One host at a time; \
            when it disconnects the tap waits for the next. A --ble-listen address beyond loopback \
            (0.0.0.0, a LAN address) lets any host on the network connect: tether warns on stderr, \
            and the tap then serves exactly one host, the first to connect, and refuses and reports \
            every later connection without recording what it sends. --ble serial:/dev/ttyUSB0[,BAUD][,rtscts] \
            taps a UART controller instead (default 1000000 baud, no flow control).

            --ble hci0 (or bluez:hci0) records adapter hci0 from the BlueZ monitor channel, and \
            --ble bluez every adapter (LINKTYPE_BLUETOOTH_LINUX_MONITOR, role ble-monitor). It \
            needs a kernel with Bluetooth and CAP_NET_RAW; without kernel Bluetooth it fails and \
            says to use the H4 tap. --udp and --ble together record one set: one timeline, one \
            interface each.

            The capture file is flushed at least every second: a killed recorder leaves a set that \
            loses at most the last second (it loads with an "unsealed" warning). The recording \
            ends after --duration seconds, or on SIGINT (Ctrl-C) or SIGTERM; either way the set is \
            sealed (status complete, SHA-256 of the capture) and libpcap's drop counts are written \
            to the file (an Interface Statistics Block) and printed. On a terminal a live frame \
            counter is shown on stderr.

            --mark-stdin turns each line read from stdin into an annotation: a packet comment on the \
            next frame recorded and a manifest entry. Type a line and press Enter while recording, \
            or pipe lines in from a script.

            Record a plugin session on loopback for a minute:
              tether record --udp lo:12345 --out Captures/plugin-clean --duration 60
            Record a Bumble host through the H4 tap; its transport becomes
            tcp-client:127.0.0.1:9101 instead of tcp-client:127.0.0.1:9001:
              tether record --ble tcp:127.0.0.1:9001 --ble-listen 127.0.0.1:9101 \\
                --out Captures/bumble-pair
            Record BLE and the plugin's UDP on one timeline, marking moments:
              tether record --ble tcp:127.0.0.1:9001 --ble-listen 127.0.0.1:9101 \\
                --udp lo:12345 --out Captures/watch-walk --mark-stdin
            --tcp IFACE:PORT captures TCP to or from PORT on IFACE (BPF filter `tcp port PORT`), \
            role mqtt-tcp with PORT as the manifest's broker_port: `tether inspect` reassembles \
            the streams and lists the MQTT packets. Record the widget's broker traffic:
              tether record --tcp lo:1883 --out Captures/widget-broker --duration 30
            --app-group FOLDER records the changes of an App Group container folder from inotify: \
            each create, open, close (written or not), rename and delete of its files is one frame \
            (LINKTYPE_USER1, role app-group, docs/app-group-link.md), with the content of each \
            completed write, on the same timeline as the other interfaces:
              tether record --tcp lo:1883 --app-group /tmp/demo-group --out Captures/widget-run
            Record adapter hci0 on a machine with BlueZ:
              tether record --ble hci0 --out Captures/phone-hci0 --duration 60

            With --redact, --out gets a redacted copy (tether redact: addresses, names, keys, MQTT \
            credentials replaced) and the unredacted recording is removed:
              tether record --ble tcp:127.0.0.1:9001 --out Captures/shared-run --duration 30 --redact
            """
    )

    @Option(name: .long, help: "Capture UDP on this interface, optionally with the ingest port: lo:12345, any:12345, eth0.")
    var udp: String?

    @Option(name: .long, help: "Capture TCP to and from an MQTT broker: IFACE:PORT, e.g. lo:1883 (inspect reads it as MQTT).")
    var tcp: String?

    @Option(name: .customLong("app-group"), help: "Record an App Group container folder's changes (inotify), e.g. /tmp/demo-group.")
    var appGroup: String?

    @Option(name: .long, help: "Record BLE: tcp:HOST:PORT or serial:/dev/ttyUSB0[,BAUD][,rtscts] (H4 tap in front of that controller), hci0 / bluez:hci0 / bluez (BlueZ monitor channel).")
    var ble: String?

    @Option(name: .customLong("ble-listen"), help: "Where the H4 tap listens for the host stack, HOST:PORT (default 127.0.0.1:0: any free port, printed at start). Beyond loopback (e.g. 0.0.0.0): a warning, and exactly one host is served.")
    var bleListen: String?

    @Option(name: .long, help: "The capture set folder to create, e.g. Captures/<name>. It must not exist yet.")
    var out: String

    @Option(name: .long, help: "Stop after this long: seconds, or 500ms, 8s, 2m, 1h (default: until SIGINT, SIGTERM or SIGHUP).",
            transform: { try OptionValues.seconds($0, option: "--duration", range: 0.001...31_536_000) })
    var duration: Double?

    @Flag(name: .customLong("mark-stdin"), help: "Read annotation lines from stdin while recording.")
    var markStdin = false

    @Option(name: .long, help: "One line saying what is recorded (the manifest title).")
    var title: String?

    @Option(name: .long, help: "Free text for the manifest's description.")
    var description: String?

    @Option(name: .long, help: "A BPF filter to use instead of `udp port PORT` (for --udp).")
    var filter: String?

    @Flag(name: .long, help: "Redact the finished recording (as `tether redact`): --out gets the redacted set; the unredacted one is recorded beside it in a hidden folder and removed once the redaction succeeded.")
    var redact = false

    /// Where the recorder writes: `--out`, or with `--redact` a hidden folder beside it that only
    /// the redaction reads.
    var recordingPath: String {
        guard redact else { return out }
        let trimmed = out.hasSuffix("/") ? String(out.dropLast()) : out
        let slash = trimmed.lastIndex(of: "/")
        let parent = slash.map { String(trimmed[...$0]) } ?? ""
        let name = slash.map { String(trimmed[trimmed.index(after: $0)...]) } ?? trimmed
        return parent + "." + name + ".unredacted"
    }

    /// What `--ble` asks for.
    enum BLESource: Equatable {
        /// An H4 tap in front of this controller.
        case tap(H4ControllerAddress)
        /// The BlueZ monitor channel, one adapter or (nil) all.
        case bluez(adapter: UInt16?)
    }

    /// The default of `--ble-listen`.
    static let defaultListen = "127.0.0.1:0"

    /// `IFACE[:PORT]` split.
    static func parseUDP(_ text: String) -> (interface: String, port: UInt16?)? {
        guard let colon = text.lastIndex(of: ":") else { return text.isEmpty ? nil : (text, nil) }
        let interface = String(text[..<colon])
        guard !interface.isEmpty, let port = UInt16(text[text.index(after: colon)...]), port > 0 else { return nil }
        return (interface, port)
    }

    /// `--ble` parsed, or a message saying what to write instead.
    static func parseBLE(_ text: String) -> Result<BLESource, ValidationError> {
        if text == "bluez" { return .success(.bluez(adapter: nil)) }
        let adapterName = text.hasPrefix("bluez:") ? String(text.dropFirst(6)) : text
        if let index = MonitorAdapterFilter.adapterIndex(adapterName) { return .success(.bluez(adapter: index)) }
        if text.hasPrefix("bluez:") {
            return .failure(ValidationError("--ble \(text): expected bluez:hciN (an adapter such as hci0), or bluez for every adapter."))
        }
        do throws(LiveCaptureError) {
            return .success(.tap(try H4ControllerAddress(parsing: text)))
        } catch {
            return .failure(ValidationError(
                "--ble \(text): \(error.detail). Write tcp:HOST:PORT or serial:/dev/ttyUSB0[,BAUD][,rtscts] for an H4 tap in front of a controller, "
                    + "or hci0 / bluez:hci0 / bluez for the BlueZ monitor channel."))
        }
    }

    func validate() throws {
        guard udp != nil || ble != nil || tcp != nil || appGroup != nil else {
            throw ValidationError("Nothing to record: give --udp IFACE[:PORT] (e.g. lo:12345), --tcp IFACE:PORT (e.g. lo:1883), --app-group FOLDER, --ble SPEC (e.g. tcp:127.0.0.1:9001), or several.")
        }
        if let appGroup, !FileIO.isDirectory(appGroup) {
            throw ValidationError("--app-group \(appGroup) is not a folder. Give the App Group container folder both processes use (create it first).")
        }
        if let tcp, Self.parseUDP(tcp)?.port == nil {
            throw ValidationError("--tcp \(tcp) is not IFACE:PORT. Write e.g. lo:1883 (the MQTT broker on loopback).")
        }
        if let udp, Self.parseUDP(udp) == nil {
            throw ValidationError("--udp \(udp) is not IFACE or IFACE:PORT. Write e.g. lo:12345 (loopback, the ingest port).")
        }
        var bleSource: BLESource?
        if let ble { bleSource = try Self.parseBLE(ble).get() }
        if let bleListen {
            guard case .tap? = bleSource else {
                throw ValidationError("--ble-listen is where the H4 tap listens; it needs --ble tcp:HOST:PORT or --ble serial:PATH.")
            }
            do throws(LiveCaptureError) {
                _ = try H4ListenAddress(parsing: bleListen)
            } catch {
                throw ValidationError("--ble-listen \(bleListen): \(error.detail).")
            }
        }
        if filter != nil, udp == nil {
            throw ValidationError("--filter applies to the UDP capture; give --udp as well, or leave --filter out.")
        }
        guard !FileIO.exists(out) else {
            throw ValidationError("\(out) already exists. Choose a new set name under Captures/, or remove the old set.")
        }
        if redact, FileIO.exists(recordingPath) {
            throw ValidationError("\(recordingPath) (where --redact records before redacting) already exists: an earlier recording that was not redacted? Redact it with `tether redact \(recordingPath) --out NEW` or remove it.")
        }
        try OutputFile.refuseNewSetInsideSet(out, option: "--out")
        if let duration, !(duration > 0 && duration.isFinite) {
            throw ValidationError("--duration must be a positive number of seconds (got \(duration)); leave it out to record until Ctrl-C.")
        }
    }

    /// The request this command line makes.
    func request() throws -> RecordingRequest {
        var request = RecordingRequest(setPath: recordingPath)
        request.title = title
        request.description = description
        if let udp, let (device, port) = Self.parseUDP(udp) { request.udp = (device, port, filter) }
        if let tcp, let parsed = Self.parseUDP(tcp), let port = parsed.port { request.mqttTCP = (parsed.interface, port) }
        request.appGroup = appGroup
        if let ble {
            switch try Self.parseBLE(ble).get() {
            case .bluez(let adapter): request.ble = .bluez(adapter: adapter)
            case .tap(let controller): request.ble = .tap(controller, listen: try H4ListenAddress(parsing: bleListen ?? Self.defaultListen))
            }
        }
        return request
    }

    func run() async throws {
        let session = try RecordingSession(try request())
        // Before anything is recorded, so the user can stop a recording they did not mean to expose.
        for warning in session.warnings { Terminal.warn("tether: \(warning)") }
        try session.start()
        for notice in session.notices { Terminal.warn("tether: note: \(notice)") }

        let status = StatusLine()
        let queue = DispatchQueue(label: "tether.record.ui")
        // Host connected or gone, framing errors: said as they happen, on the status line's queue.
        session.tap?.onNotice { text in
            queue.async {
                status.clear()
                Terminal.writeStderr("tether: note: \(text)\n")
            }
        }
        // The handlers go in before the line below: a script that stops the recording as soon as
        // it reads the line must not have its signal ignored while they are being set up (the
        // recording would then never end) or kill the process before it seals the set.
        let signals = InterruptSignals(queue: queue) { _ in session.stop() }
        // Scripts (and the end-to-end tests) wait for this line before sending traffic.
        StandardOutput.shared.line("Recording \(session.parts.joined(separator: " and ")) into \(out)\(duration.map { " for \(Format.fixed($0, 1)) s" } ?? ""). Stop with Ctrl-C.")
        if let tap = session.tap {
            let address = H4ListenAddress(host: tap.listenAddress?.host ?? "127.0.0.1", port: tap.port)
            StandardOutput.shared.line("Point the host stack at \(address) instead of the controller (Bumble transport: tcp-client:\(address)).")
        }
        StandardOutput.shared.flush()

        let clock = ContinuousClock()
        let started = clock.now
        // The live counter exists only on a terminal.
        var ticker: (any DispatchSourceTimer)?
        if Terminal.stderrIsTerminal {
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.schedule(deadline: .now(), repeating: .milliseconds(250))
            let setName = out
            timer.setEventHandler {
                let elapsed = started.duration(to: clock.now).nanosecondsClamped
                status.update(force: true) { "recording \(setName): \(session.framesRecorded) frames, \(Format.fixed(Double(elapsed) / 1e9, 1)) s" }
            }
            timer.resume()
            ticker = timer
        }
        var stopper: DispatchWorkItem?
        if let duration {
            let item = DispatchWorkItem { session.stop() }
            queue.asyncAfter(deadline: .now() + .nanoseconds(Int(duration * 1e9)), execute: item)
            stopper = item
        }
        if markStdin { Self.readMarks(into: session) }

        let summary: RecordingSummary
        do {
            summary = try await session.run()
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
            if let tap = session.tap, interface.index == session.tapInput {
                let counts = tap.statistics
                line += "  host→controller \(counts.sentPackets) packets (\(counts.sentBytes) bytes), controller→host \(counts.receivedPackets) packets (\(counts.receivedBytes) bytes)"
                line += ", host connections \(counts.hostConnections), framing errors \(counts.framingErrors)"
            } else if let statistics = interface.statistics {
                line += "  dropped \(statistics.totalDropped)"
                if let received = statistics.received { line += " of \(received) received" }
            } else if interface.linkType == .bluetoothLinuxMonitor {
                line += "  drops unknown (the monitor channel reports none)"
            } else {
                line += "  drops unknown (libpcap gave no statistics)"
            }
            out.line(line)
        }
        out.line("Dropped in total: \(summary.totalDropped)")
        if !summary.annotations.isEmpty { out.line("Annotations: \(summary.annotations.count)") }
        for notice in summary.notices { out.line("Note: \(notice)") }
        if redact {
            let report: RedactionReport
            do {
                report = try SetRedactor.redact(set: summary.setPath, to: self.out)
            } catch {
                throw CommandFailure.failed("the recording is in \(summary.setPath), but redacting it failed: \(error) Run `tether redact \(summary.setPath) --out \(self.out)` once the cause is fixed (with --allow-survivors when the last search found original values you accept to keep; it lists them).")
            }
            for warning in report.warnings { Terminal.warn("tether: warning: \(warning)") }
            for line in report.lines { out.line(line) }
            do {
                try FileManager.default.removeItem(atPath: summary.setPath)
            } catch {
                throw CommandFailure.failed("redacted into \(self.out), but the unredacted recording \(summary.setPath) could not be removed (\(error.localizedDescription)): remove it by hand before sharing the folder.")
            }
        }
        let finalPath = redact ? self.out : summary.setPath
        out.line("Next: tether inspect \(finalPath) --frames, then tether replay \(finalPath) --update-baseline")
        if let failure = session.tap?.recordingFailure {
            throw CommandFailure.failed("the H4 tap stopped recording part-way: \(failure) The set holds the packets before that.")
        }
    }

    /// Each stdin line becomes a mark, on a thread of its own (a blocking read must not hold up
    /// the recorder); end of input just ends the marks.
    static func readMarks(into recorder: RecordingSession) {
        let thread = Thread {
            while let line = readLine(strippingNewline: true) {
                let text = line.trimmingCharacters(in: .whitespaces)
                guard !text.isEmpty else { continue }
                recorder.mark(text)
                Terminal.writeStderr((Terminal.stderrIsTerminal ? "\r\u{1B}[K" : "") + "marked: \(text.escapingControlCharactersForReport())\n")
            }
        }
        thread.start()
    }
}
