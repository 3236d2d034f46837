import ArgumentParser
import CaptureKit
import CaptureSet
import Dissectors
import Replay

/// `tether replay SET_OR_FOLDER…`: virtual-clock replay with checks, or `--realtime` re-sending.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Replay capture sets on a virtual clock and check expectations and baselines (or re-send them in real time).",
        discussion: """
            Each argument is a capture set folder or a folder holding sets (searched below, as \
            Captures/ is). For every set, the captured frames are fed to the protocol cores at \
            their captured instants on a virtual clock: every datagram addressed to the manifest's \
            ingest port goes to IngestCore, and the cores' timers fire at their exact virtual \
            instants. Nothing sleeps, so an hour of traffic replays in well under a second, and two \
            replays of one set give byte-identical traces.

            The behaviour trace (JSON Lines, docs/trace-format.md) is then checked against the \
            manifest's expectations and against each baseline trace (baseline/<core>.jsonl), \
            compared as events. The report is printed; the exit status is 1 when any check \
            failed or any set could not be replayed. --update-baseline accepts this run's trace as \
            the new baseline (the baseline check is then not made).

            --realtime instead sends the set's captured ingest datagrams over real UDP to --to, at \
            their recorded pace scaled by --speed, and reports how far the sent gaps strayed from \
            the recorded ones (p50, p99, max) and the total drift.

            Replay every committed set, as CI does, keeping a JUnit report:
              tether replay Captures --junit .build/replay-junit.xml
            Keep one set's trace and try a shorter idle timeout:
              tether replay Captures/plugin-faulty --trace t.jsonl --ingest-idle-timeout 5
            Re-send a recording to a live server at twice its pace:
              tether replay --realtime --speed 2 --to 127.0.0.1:12345 Captures/clean
            """
    )

    @Argument(help: "Capture set folders, or folders searched for capture sets (e.g. Captures).")
    var paths: [String]

    @Option(name: .long, help: "Write the behaviour trace (JSON Lines) to this file (one set only).")
    var trace: String?

    @Option(name: .long, help: "Write a JUnit XML report to this file.")
    var junit: String?

    @Flag(name: .customLong("update-baseline"), help: "Accept this run's traces as the sets' baselines (writes baseline/<core>.jsonl and the manifest).")
    var updateBaseline = false

    @Option(name: .customLong("ingest-idle-timeout"), help: "IngestCore's stream idle timeout (seconds, or 500ms, 8s, 2m, 1h; at most 24h), overriding the manifest.",
            transform: { try OptionValues.seconds($0, option: "--ingest-idle-timeout", range: 0.001...86_400) })
    var ingestIdleTimeout: Double?

    @Option(name: .customLong("ingest-port"), help: "Feed IngestCore the datagrams to this UDP port, whatever the manifest says.",
            transform: { try OptionValues.integer($0, option: "--ingest-port", range: 1...UInt16.max) })
    var ingestPort: UInt16?

    @Option(name: .customLong("messaging-window-size"), help: "MessagingCore's data packets per window (1-15), overriding the manifest.",
            transform: { try OptionValues.integer($0, option: "--messaging-window-size", range: 1...15) })
    var messagingWindowSize: Int?

    @Option(name: .customLong("messaging-first-retries"), help: "How often MessagingCore resends `first` after `transfer not started` (0-10), overriding the manifest.",
            transform: { try OptionValues.integer($0, option: "--messaging-first-retries", range: 0...10) })
    var messagingFirstRetries: Int?

    @Option(name: .customLong("messaging-step-timeout"), help: "MessagingCore's wait for each transfer acknowledgement (seconds, or 500ms, 2m; at most 1h), overriding the manifest.",
            transform: { try OptionValues.seconds($0, option: "--messaging-step-timeout", range: 0.001...3600) })
    var messagingStepTimeout: Double?

    @Option(name: .customLong("session-message-reply-timeout"), help: "SessionCore's message time limit (seconds, or 500ms, 2m; at most 1h), overriding the manifest.",
            transform: { try OptionValues.seconds($0, option: "--session-message-reply-timeout", range: 0.001...3600) })
    var sessionMessageReplyTimeout: Double?

    @Option(name: .customLong("frame-matching"), help: "How the BLE cores' emitted frames are checked: strict, responder or off (default: the manifest's, else strict).")
    var frameMatching: FrameMatchingMode?

    @Option(name: .customLong("tolerance-ms"), help: "Timing slack for the baseline comparison, in milliseconds (0 to 3600000).",
            transform: { try OptionValues.decimal($0, option: "--tolerance-ms", range: 0...3_600_000) })
    var toleranceMs: Double = 0

    @Flag(name: .customLong("no-verify"), help: "Do not check the capture file's SHA-256 against the manifest.")
    var noVerify = false

    @Option(name: .customLong("max-diff-lines"), help: "The most lines of baseline differences shown per set (1 to 1000000).",
            transform: { try OptionValues.integer($0, option: "--max-diff-lines", range: 1...1_000_000) })
    var maxDiffLines: Int = 40

    @Flag(name: .long, help: "Send the captured ingest datagrams over real UDP at their recorded pace instead.")
    var realtime = false

    @Option(name: .long, help: "With --realtime: the pace factor (2 sends twice as fast as recorded; 0.001 to 1000).",
            transform: { try OptionValues.decimal($0, option: "--speed", range: 0.001...1000) })
    var speed: Double = 1

    @Option(name: .long, help: "With --realtime: where to send, HOST:PORT (e.g. 127.0.0.1:12345 or [::1]:12345).")
    var to: String?

    func validate() throws {
        guard !paths.isEmpty else {
            throw ValidationError("Give a capture set or a folder of sets, e.g. `tether replay Captures`.")
        }
        if let messagingWindowSize, !(1...15).contains(messagingWindowSize) {
            throw ValidationError("--messaging-window-size must be 1 to 15 (got \(messagingWindowSize)).")
        }
        if let messagingFirstRetries, !(0...10).contains(messagingFirstRetries) {
            throw ValidationError("--messaging-first-retries must be 0 to 10 (got \(messagingFirstRetries)).")
        }
        if let messagingStepTimeout, !(messagingStepTimeout > 0 && messagingStepTimeout <= 3600) {
            throw ValidationError("--messaging-step-timeout must be more than 0 and at most 3600 seconds (got \(messagingStepTimeout)).")
        }
        if let ingestIdleTimeout, !(ingestIdleTimeout > 0 && ingestIdleTimeout.isFinite) {
            throw ValidationError("--ingest-idle-timeout must be a positive number of seconds (got \(ingestIdleTimeout)).")
        }
        guard toleranceMs >= 0, toleranceMs.isFinite else {
            throw ValidationError("--tolerance-ms must be 0 or more (got \(toleranceMs)).")
        }
        if realtime {
            guard let to else {
                throw ValidationError("--realtime needs --to HOST:PORT, e.g. --to 127.0.0.1:12345 (start `tether serve ingest` there first).")
            }
            guard HostPort.parse(to) != nil else {
                throw ValidationError("--to \(to) is not HOST:PORT. Write e.g. 127.0.0.1:12345 or [::1]:12345.")
            }
            guard speed > 0, speed.isFinite else {
                throw ValidationError("--speed must be a positive factor (got \(speed)); 1 is the recorded pace.")
            }
            guard paths.count == 1, CaptureSetDirectory.isCaptureSet(paths[0]) else {
                throw ValidationError("--realtime replays one capture set; give its folder, e.g. Captures/plugin-clean.")
            }
            if trace != nil || junit != nil || updateBaseline {
                throw ValidationError("--trace, --junit and --update-baseline belong to virtual replay; leave them out with --realtime.")
            }
        } else {
            if to != nil || speed != 1 {
                throw ValidationError("--to and --speed only apply with --realtime.")
            }
        }
        for path in paths where !FileIO.isDirectory(path) {
            throw ValidationError("\(path) is not a folder. Give a capture set folder (with manifest.yaml) or a folder holding sets, such as Captures.")
        }
        if let trace { try OutputFile.check(trace, option: "--trace") }
        if let junit { try OutputFile.check(junit, option: "--junit") }
    }

    func run() throws {
        if realtime {
            try runRealtime()
            return
        }
        var sets: [String] = []
        for path in paths {
            if CaptureSetDirectory.isCaptureSet(path) {
                sets.append(path)
            } else {
                let found = try CaptureSetDirectory.findSets(under: path)
                if found.isEmpty {
                    throw CommandFailure.failed("\(path) holds no capture set (no folder with a manifest.yaml). Record one with `tether record` or make one with `tether import`.")
                }
                sets += found
            }
        }
        if trace != nil && sets.count != 1 {
            throw CommandFailure(message: "--trace writes one set's trace, and \(sets.count) sets were found; name one set.", exitCode: ExitCode.validationFailure.rawValue)
        }
        do {
            for set in sets {
                if let trace { try OutputFile.refuseInside(trace, option: "--trace", set: set) }
                if let junit { try OutputFile.refuseInside(junit, option: "--junit", set: set) }
            }
        } catch let error as ValidationError {
            throw CommandFailure(message: error.message, exitCode: ExitCode.validationFailure.rawValue)
        }

        var options = ReplayOptions(verify: !noVerify, ingestPort: ingestPort, frameMatching: frameMatching)
        if messagingWindowSize != nil || messagingFirstRetries != nil || messagingStepTimeout != nil {
            options.messaging = MessagingOverrides(
                stepTimeoutMs: messagingStepTimeout.map { Int(($0 * 1000).rounded()) },
                windowSize: messagingWindowSize, firstRetries: messagingFirstRetries)
        }
        if let sessionMessageReplyTimeout {
            options.session = SessionOverrides(messageReplyTimeoutMs: Int((sessionMessageReplyTimeout * 1000).rounded()))
        }
        if let ingestIdleTimeout {
            options.ingest = IngestOverrides(idleTimeoutMs: Int((ingestIdleTimeout * 1000).rounded()))
        }
        let tolerance = Int64((toleranceMs * 1_000_000).rounded())
        var outcomes: [CaptureSetOutcome] = []
        var errors: [(name: String, message: String)] = []
        let status = StatusLine()
        for (index, set) in sets.enumerated() {
            let name = CaptureSetDirectory(path: set).name
            status.update(force: true) { "replaying \(name) (\(index + 1)/\(sets.count))" }
            let checked: CheckedReplay
            // The set's own warnings (unsealed, a link type the manifest contradicts) also come
            // out when the replay or the --trace file fails: they may be why.
            var loadWarnings: [String] = []
            do {
                checked = try checkSet(at: set, options: options, tolerance: tolerance, loadWarnings: &loadWarnings)
            } catch let error as ReplayError {
                status.clear()
                for warning in loadWarnings { Terminal.warn("tether: warning: \(name): \(warning)") }
                errors.append((name, error.description))
                Terminal.warn("tether: \(name): \(error)")
                continue
            } catch {
                status.clear()
                for warning in loadWarnings { Terminal.warn("tether: warning: \(name): \(warning)") }
                throw error
            }
            status.clear()
            for warning in checked.run.warnings { Terminal.warn("tether: warning: \(name): \(warning)") }
            var baselines: [BaselineComparison] = []
            if let writers = checked.baselineWriters {
                try writers.accept()
            } else {
                for (core, comparison) in checked.comparisons {
                    do {
                        baselines.append(BaselineComparison(name: core, diff: try comparison.get().finish()))
                    } catch {
                        errors.append((name, "baseline \(core): \(error)"))
                    }
                }
            }
            outcomes.append(CaptureSetOutcome(name: name, expectations: checked.expectations, baselines: baselines))
        }

        StandardOutput.shared.write(Self.report(outcomes, errors: errors, setCount: sets.count, maxDiffLines: maxDiffLines))
        if updateBaseline {
            StandardOutput.shared.line("Baselines updated for \(outcomes.count) set(s); review them with `git diff` before committing.")
        }
        if let junit {
            var report = JUnitReport(outcomes: outcomes, maxDiffLines: maxDiffLines)
            for error in errors {
                report.suites.append(JUnitReport.TestSuite(name: error.name, cases: [
                    JUnitReport.TestCase(name: "replay", className: "replay." + error.name,
                                         failure: JUnitReport.Failure(message: error.message, type: "error")),
                ]))
            }
            try report.write(to: junit)
        }
        StandardOutput.shared.flush()
        if !errors.isEmpty || outcomes.contains(where: { !$0.passed }) {
            throw CommandFailure(message: "", exitCode: 1)
        }
    }

    /// The replay report with errors listed and counted in its headline: a set that could not be
    /// replayed (or whose baseline could not be read) is a failed set, not a missing line.
    static func report(_ outcomes: [CaptureSetOutcome], errors: [(name: String, message: String)], setCount: Int, maxDiffLines: Int) -> String {
        var text = ReplayReport.render(outcomes, maxDiffLines: maxDiffLines)
        guard !errors.isEmpty else { return text }
        // The renderer's last line is its headline over the sets it saw; it is replaced by one over all.
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        if lines.last == "" { lines.removeLast() }
        if let last = lines.last, last.hasPrefix("PASS: ") || last.hasPrefix("FAIL: ") { lines.removeLast() }
        for error in errors { lines.append("ERROR \(error.name): \(error.message)") }
        let erroredSets = Set(errors.map(\.name))
        let checkFailures = outcomes.filter { !$0.passed && !erroredSets.contains($0.name) }.count
        let failed = checkFailures + erroredSets.count
        let unreadable = errors.filter { error in !outcomes.contains { $0.name == error.name } }.count
        lines.append("FAIL: \(failed) of \(setCount) capture set(s) failed (\(unreadable) could not be replayed, "
                     + "\(errors.count - unreadable) baseline(s) could not be read, \(checkFailures) failed their checks)")
        text = lines.joined(separator: "\n") + "\n"
        return text
    }

    /// One set replayed with its checks made as the trace streamed by.
    struct CheckedReplay {
        var run: ReplayRun
        var expectations: [ExpectationResult]
        /// Per baseline the manifest names, in core order: the comparison, still to be finished,
        /// or why its baseline could not be read.
        var comparisons: [(core: String, comparison: Result<StreamingBaselineComparison, any Error>)]
        /// With --update-baseline: this run's trace per core, still to be put in place.
        var baselineWriters: BaselineWriters?
    }

    /// Replays one set with nothing of its trace kept: each event, as the engine makes it, goes
    /// to the --trace file (buffered), the expectation evaluator, the baseline comparison of its
    /// core (which reads the baseline file alongside) or, with --update-baseline, the new
    /// baseline file of its core. So memory does not grow with the capture.
    /// - Throws: ``ReplayError`` when the set cannot be loaded or replayed (the set's error);
    ///   anything else when the --trace file cannot be written (the command's error).
    func checkSet(at set: String, options: ReplayOptions, tolerance: Int64, loadWarnings: inout [String]) throws -> CheckedReplay {
        let loaded = try loadReplaySet(at: set, options: options)
        loadWarnings = loaded.warnings
        let manifest = loaded.manifest
        var evaluator = ExpectationEvaluator(manifest.expectations)
        var comparisons: [(core: String, comparison: Result<StreamingBaselineComparison, any Error>)] = []
        var comparing: [String: StreamingBaselineComparison] = [:]
        let writers = updateBaseline ? BaselineWriters(set: set, manifest: manifest) : nil
        if !updateBaseline {
            for core in manifest.baselines.keys.sorted() {
                do {
                    let path = try CaptureSetDirectory(path: set).resolve(manifest.baselines[core, default: ""], field: "baselines.\(core)")
                    let comparison = try StreamingBaselineComparison(
                        name: core, baselinePath: path, timingToleranceNs: tolerance, lineBudget: maxDiffLines)
                    comparing[core] = comparison
                    comparisons.append((core, .success(comparison)))
                } catch {
                    comparisons.append((core, .failure(error)))
                }
            }
        }
        func replay(writingTo traceFile: TraceFileWriter?) throws(ReplayError) -> ReplayRun {
            try replaySet(loaded, options: options) { event in
                traceFile?.write(event)
                evaluator.observe(event)
                if !comparing.isEmpty { comparing[event.core]?.replayed(event) }
                writers?.write(event)
            }
        }
        let run: ReplayRun
        if let trace {
            run = try OutputFile.write(to: trace) { temporary in
                let writer: TraceFileWriter
                do throws(TraceFileError) {
                    writer = try TraceFileWriter(path: temporary)
                } catch {
                    throw CommandFailure.failed("cannot create \(temporary) to write \(trace): \(error.reason). Check the folder is writable.")
                }
                let run: ReplayRun
                do {
                    run = try replay(writingTo: writer)
                } catch {
                    writer.discard()
                    throw error
                }
                do throws(TraceFileError) {
                    try writer.close()
                } catch {
                    throw CommandFailure.failed("cannot write \(trace): \(error.reason). Check free disk space.")
                }
                return run
            }
        } else {
            run = try replay(writingTo: nil)
        }
        return CheckedReplay(run: run, expectations: evaluator.results(), comparisons: comparisons, baselineWriters: writers)
    }

    /// --update-baseline: this run's trace written as the set's baselines, one file per core, as
    /// the replay streams; ``accept()`` then puts each in place and records them in the manifest.
    /// A core the manifest already names keeps its path; an empty trace is written too, so "this
    /// core did nothing" is itself checked next time.
    final class BaselineWriters {
        let set: String
        let manifest: CaptureSetManifest
        private var writers: [String: Result<TraceFileWriter, any Error>] = [:]
        private var lastCore = ""
        private var lastWriter: TraceFileWriter?

        init(set: String, manifest: CaptureSetManifest) {
            self.set = set
            self.manifest = manifest
        }

        func relativePath(_ core: String) -> String {
            manifest.baselines[core] ?? CaptureSetDirectory.defaultBaselinePath(core: core)
        }

        func write(_ event: TraceEvent) {
            if event.core != lastCore || lastWriter == nil {
                if writers[event.core] == nil {
                    writers[event.core] = Result {
                        let path = try CaptureSetDirectory(path: set).resolve(relativePath(event.core), field: "baselines.\(event.core)")
                        return try TraceFileWriter.replacing(path)
                    }
                }
                lastCore = event.core
                lastWriter = try? writers[event.core]?.get()
            }
            lastWriter?.write(event)
        }

        /// Puts every core's new baseline in place, in core order, and saves the manifest when it
        /// changed. The first failure stops it (the files not yet in place are removed).
        func accept() throws {
            var manifest = self.manifest
            let cores = Set(writers.keys).union(manifest.baselines.keys)
            for core in cores.sorted() {
                let relative = relativePath(core)
                let path = try CaptureSetDirectory(path: set).resolve(relative, field: "baselines.\(core)")
                if let writer = writers[core] {
                    try writer.get().commit()
                } else {
                    try CaptureSetDirectory.writeAtomically([], to: path)
                }
                manifest.baselines[core] = relative
            }
            if manifest != self.manifest {
                try CaptureSetDirectory.saveManifest(manifest, to: set)
            }
        }
    }

    // MARK: realtime

    private func runRealtime() throws {
        guard let to, let target = HostPort.parse(to) else { return }
        let set = paths[0]
        let loaded = try CaptureSetDirectory.load(set, verify: !noVerify)
        for warning in loaded.warnings { Terminal.warn("tether: warning: \(warning)") }
        let datagrams = try Self.ingestDatagrams(of: loaded, portOverride: ingestPort)
        guard !datagrams.isEmpty else {
            throw CommandFailure.failed("\(set) has no captured datagrams to the ingest port; nothing to send. `tether inspect \(set) --frames` shows what it holds.")
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

    /// The set's captured datagrams to the ingest port, in capture order, with their offsets from
    /// the first one. Interfaces the manifest marks `ingest-udp` are used; when none is marked,
    /// every interface libpcap-style link types can carry UDP on.
    static func ingestDatagrams(of set: LoadedCaptureSet, portOverride: UInt16?) throws -> [PacedDatagram] {
        let reader = try CaptureFile.open(path: set.capturePath)
        let marked = set.manifest.interfaces.filter { $0.role == .ingestUDP }
        var ports: [Int: UInt16] = [:]
        for interface in marked { ports[interface.index] = portOverride ?? interface.ingestPort ?? 12345 }
        var extractor = UDPExtractor()
        var result: [PacedDatagram] = []
        var firstNs: Int64?
        while let frame = try reader.next() {
            let linkType = reader.interfaces[frame.interfaceIndex].linkType
            let port: UInt16
            if marked.isEmpty {
                guard UDPExtractor.handles(linkType) else { continue }
                port = portOverride ?? 12345
            } else {
                guard let marked = ports[frame.interfaceIndex] else { continue }
                port = marked
            }
            let extraction = frame.data.withUnsafeBytes { extractor.datagram(from: $0, linkType: linkType) }
            guard case .datagram(let datagram) = extraction, datagram.destinationPort == port else { continue }
            let first = firstNs ?? frame.timestampNs
            firstNs = first
            result.append(PacedDatagram(offsetNs: frame.timestampNs &- first, payload: datagram.payload))
        }
        for warning in reader.warnings where warning.kind != .skippedUnknown {
            Terminal.warn("tether: warning: \(warning)")
        }
        return result
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

extension FrameMatchingMode: ExpressibleByArgument {}
