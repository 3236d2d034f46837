import ReplayKit
import ArgumentParser
import BehaviourTrace
import CaptureKit
import CaptureSet
import TraceExport

/// `tether trace …`: work with behaviour traces as files.
struct TraceCommand: ParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(
        commandName: "trace",
        abstract: "Work with behaviour traces: export one for a trace viewer.",
        subcommands: [TraceExportCommand.self]
    ) }
}

/// `tether trace export TRACE… --format perfetto --out FILE`.
struct TraceExportCommand: ParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(
        commandName: "export",
        abstract: "Write a behaviour trace as Chrome trace-event JSON, for Perfetto and chrome://tracing.",
        discussion: """
            Each argument is a trace file (JSON Lines, as `tether replay --trace` and `live … \
            --trace` write it) or a capture set, which stands for its baselines (every core's) and \
            its captured frames. Several traces are merged by time.

            The output opens in Perfetto's UI (https://ui.perfetto.dev, "Open trace file") and in \
            chrome://tracing: a track per core with an instant per event; a track per request \
            kind a core declares (send → completion, message → reply, refresh → result) with a \
            slice from each request to its answer, async slices where requests overlap, and a \
            progress counter where the core reports one; with a capture set (or --capture), a \
            track per interface with an instant per frame, named as `tether inspect --frames` \
            names it. docs/trace-export.md describes every track.

            A set's baselines and frames:
              tether trace export Captures/ciq-clean --format perfetto --out ciq-clean.json
            One replay's trace, with the frames of the set it came from:
              tether replay Captures/session-file-resume --trace t.jsonl
              tether trace export t.jsonl --capture Captures/session-file-resume --format perfetto --out t.json
            """
    ) }

    /// The formats written.
    enum ExportFormat: String, ExpressibleByArgument, CaseIterable {
        case perfetto
    }

    @Argument(help: "Trace files (.jsonl) or capture sets (their baselines and frames).")
    var inputs: [String]

    @Option(name: .long, help: "The output format: perfetto (Chrome trace-event JSON, which Perfetto and chrome://tracing open).")
    var format: ExportFormat

    @Option(name: .long, help: "Where to write the JSON.")
    var out: String

    @Option(name: .long, help: "A capture set whose frames are added as a track per interface.")
    var capture: String?

    func validate() throws {
        guard !inputs.isEmpty else {
            throw ValidationError("Give a trace file or a capture set, e.g. `tether trace export Captures/ciq-clean --format perfetto --out ciq.json`.")
        }
        try OutputFile.check(out, option: "--out")
        if let capture, !CaptureSetDirectory.isCaptureSet(capture) {
            throw ValidationError("--capture \(capture) is not a capture set (no manifest.yaml in it). Give a set folder such as Captures/ciq-clean.")
        }
        let sets = inputs.filter { CaptureSetDirectory.isCaptureSet($0) }
        if capture != nil, !sets.isEmpty {
            throw ValidationError("--capture adds a set's frames to trace files; \(sets[0]) is a set already, so leave --capture out.")
        }
        if sets.count > 1 {
            throw ValidationError("give at most one capture set (got \(sets.joined(separator: ", "))); export each set on its own.")
        }
    }

    func run() throws {
        var traceFiles: [String] = []
        var framesFrom = capture
        for input in inputs {
            if CaptureSetDirectory.isCaptureSet(input) {
                let manifest = try CaptureSetDirectory.readManifest(at: input)
                for core in manifest.baselines.keys.sorted() {
                    traceFiles.append(try CaptureSetDirectory(path: input).resolve(manifest.baselines[core, default: ""], field: "baselines.\(core)"))
                }
                framesFrom = input
            } else if FileIO.isDirectory(input) {
                throw CommandFailure.failed("\(input) is a folder but not a capture set (no manifest.yaml). Give a trace file (.jsonl) or a set folder.")
            } else {
                traceFiles.append(input)
            }
        }
        for path in traceFiles { try OutputFile.refuseOverwriting(out, option: "--out", protected: [path], reading: "a trace it reads") }

        var events: [TraceEvent] = []
        let status = StatusLine()
        do {
            for path in traceFiles {
                let reader = try TraceFileReader(path: path)
                while let event = try reader.next() {
                    events.append(event)
                    status.update { "reading \(FileIO.split(path).base): \(events.count) events" }
                }
            }
        } catch {
            status.clear()
            throw CommandFailure.failed("\(error)")
        }
        status.clear()
        // Several cores' traces are merged by time; the sort is stable, so one file's order holds.
        if traceFiles.count > 1 {
            events = events.enumerated().sorted { ($0.element.timeNs, $0.offset) < ($1.element.timeNs, $1.offset) }.map(\.element)
        }
        var writer = ChromeTraceWriter(correlations: CLIIntegrations.registry.correlations)
        for event in events { writer.add(event) }
        var frames = 0
        if let framesFrom { frames = try addFrames(of: framesFrom, to: &writer) }
        let document = writer.finish()
        for warning in writer.warnings { Terminal.warn("tether: warning: \(warning).") }
        try OutputFile.write(bytes: document, to: out)
        StandardOutput.shared.line("Wrote \(out): \(events.count) events from \(traceFiles.count) trace file(s)"
                                   + (framesFrom.map { ", \(frames) frames of \($0)" } ?? "") + ", \(Format.bytes(UInt64(document.count))).")
        StandardOutput.shared.line("Open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing.")
        StandardOutput.shared.flush()
    }

    /// Every frame of the set's capture, on the trace's clock (nanoseconds since its first frame).
    private func addFrames(of set: String, to writer: inout ChromeTraceWriter) throws -> Int {
        let loaded = try CaptureSetDirectory.load(set, verify: false)
        let reader = try CaptureFile.open(path: loaded.capturePath)
        var dissector = AnnotatingFrameDissector(registry: CLIIntegrations.registry, set: loaded)
        var firstNs: Int64?
        var count = 0
        let status = StatusLine()
        defer { status.clear() }
        while let frame = try reader.next() {
            status.update { "dissecting \(FileIO.split(loaded.capturePath).base): \(count) frames" }
            let interface = reader.interfaces[frame.interfaceIndex]
            let first = firstNs ?? frame.timestampNs
            firstNs = first
            let dissected = dissector.dissect(frame, interface: interface)
            writer.addFrame(interface: frame.interfaceIndex, timeNs: frame.timestampNs &- first, summary: dissected.summary,
                            length: frame.data.count, interfaceName: interface.name ?? interface.linkType.name)
            count += 1
        }
        for warning in reader.warnings where warning.kind != .skippedUnknown {
            Terminal.warn("tether: warning: \(warning)")
        }
        return count
    }
}
