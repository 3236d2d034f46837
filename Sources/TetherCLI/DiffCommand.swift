import CaptureKit
import ReplayKit
import BehaviourTrace
import ArgumentParser
import CaptureSet
import Foundation

/// `tether diff A B`: two behaviour traces compared as event sequences.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two behaviour traces (or two capture sets' baselines) as event sequences.",
        discussion: """
            Each side is a trace file (JSON Lines, as written by `tether replay --trace`) or a \
            capture set folder, whose baseline traces (manifest `baselines`, one per core) are \
            compared core by core. A trace file against a set uses the set's baseline for the \
            trace's core. Events are aligned as sequences, so the report names missing (-), \
            extra (+), moved (~) and changed (!) events, and events whose time moved by more than \
            the tolerance (@).

            Both traces are read as they are compared, in memory bounded by --window: the report \
            is exact whenever, from the first difference on, neither trace has more than WINDOW \
            events left; past that, an event moved further than about WINDOW events is reported \
            as missing and extra (docs/replay-engine.md, "Memory").

            Exit status: 0 when the traces behave the same, 1 when they differ, 2 when a side \
            cannot be read.

            Two live runs start at different instants (connection set-up varies), so their times \
            differ by a constant: --align-on SELECTOR shifts the second trace so that the first \
            event each trace has of SELECTOR happens at the same time, and compares times from there.

            Compare an accepted baseline with a new replay's trace, allowing 5 ms of slack:
              tether diff baseline/ingest.jsonl /tmp/ingest.jsonl --tolerance-ms 5

            Compare two live runs of the same app, timed from the watch's connection:
              tether diff run1.jsonl run2.jsonl --align-on device_status,status=Connected --tolerance-ms 50
            """
    )

    @Argument(help: "The reference side: a trace file (.jsonl) or a capture set folder.")
    var a: String

    @Argument(help: "The side compared with it: a trace file (.jsonl) or a capture set folder.")
    var b: String

    @Option(name: .customLong("tolerance-ms"), help: "Report an aligned event only when its time moved by more than this many milliseconds (0 to 3600000).",
            transform: { try OptionValues.decimal($0, option: "--tolerance-ms", range: 0...3_600_000) })
    var toleranceMs: Double = 0

    @Option(name: .customLong("ignore-field"), help: "A field to leave out of the comparison (repeatable), e.g. a wall-clock stamp.")
    var ignoreFields: [String] = []

    @Option(name: .customLong("ignore-event"), help: "An event name to leave out of both sides (repeatable), e.g. frame_matched when comparing a live trace with a replayed one.")
    var ignoreEvents: [String] = []

    @Option(name: .customLong("align-on"), help: ArgumentHelp(
        "Shift the second trace's times so that both traces' first event of this selector coincide: [CORE:]EVENT[,FIELD=VALUE…], e.g. messaging:device_status,status=Connected.",
        valueName: "selector"),
            transform: { try DiffAlignment.parseSelector($0) })
    var alignOn: Expectation.Selector?

    @Option(name: .customLong("max-lines"), help: "The longest report to print, in lines (2 to 1000000).",
            transform: { try OptionValues.integer($0, option: "--max-lines", range: 2...1_000_000) })
    var maxLines: Int = 40

    @Option(name: .customLong("window"), help: "Events kept per side from the first difference on before a stretch of differences is settled (64 to 10000000); larger is exact for longer stretches and uses more memory.",
            transform: { try OptionValues.integer($0, option: "--window", range: 64...10_000_000) })
    var window: Int = 65_536

    func validate() throws {
        guard toleranceMs >= 0, toleranceMs.isFinite else {
            throw ValidationError("--tolerance-ms must be 0 or more (got \(toleranceMs)); 0 reports any timing change.")
        }
        guard maxLines >= 2 else {
            throw ValidationError("--max-lines must be at least 2 (got \(maxLines)).")
        }
        for side in [a, b] where !FileIO.exists(side) {
            throw ValidationError("\(side) does not exist. Give a trace file written by `tether replay --trace FILE` or a capture set folder.")
        }
    }

    func run() throws {
        for side in [a, b] {
            if FileIO.isDirectory(side) && !CaptureSetDirectory.isCaptureSet(side) {
                throw CommandFailure(message: "\(side) is a folder but not a capture set (no manifest.yaml). Give a trace file (.jsonl, "
                    + "as written by `tether replay --trace FILE`) or a capture set folder such as Captures/<name>.", exitCode: 2)
            }
            if !FileIO.isDirectory(side), let kind = RegularFile.otherKind(of: side) {
                throw CommandFailure(message: "\(side) is \(kind), not a trace file. Give a trace file (.jsonl, as written by "
                    + "`tether replay --trace FILE`) or a capture set folder such as Captures/<name>.", exitCode: 2)
            }
            if !FileIO.isDirectory(side) && FileIO.size(side) == 0 {
                throw CommandFailure(message: "\(side) is empty, so it is not a trace (a trace has one JSON event per line). "
                    + "Write one with `tether replay SET --trace FILE`, or check that the file was not truncated.", exitCode: 2)
            }
        }
        let pairs: [TracePair]
        do {
            pairs = try TracePair.resolve(a, b)
        } catch {
            throw CommandFailure(message: "\(error)", exitCode: 2)
        }
        let tolerance = Int64((toleranceMs * 1_000_000).rounded())
        var differ = false
        let ignoredEvents = Set(ignoreEvents.map { TraceName($0) })
        for pair in pairs {
            if pairs.count > 1 || pair.a == nil || pair.b == nil {
                StandardOutput.shared.line("== \(pair.label)")
            }
            do {
                guard let pathA = pair.a, let pathB = pair.b else {
                    differ = true
                    let reader = try TraceFileReader(path: pair.a ?? pair.b ?? "")
                    var only = 0
                    while let event = try reader.next() { if !ignoredEvents.contains(event.event) { only += 1 } }
                    StandardOutput.shared.line("only \(pair.a == nil ? b : a) has a trace for this core (\(only) events)")
                    continue
                }
                // A is read alongside B as a baseline is read alongside a replay.
                let comparison = try StreamingBaselineComparison(
                    name: pair.label, baselinePath: pathA, timingToleranceNs: tolerance, ignoringFields: Set(ignoreFields),
                    ignoringEvents: ignoredEvents, window: window, lineBudget: maxLines)
                var shiftNs: Int64 = 0
                if let alignOn {
                    shiftNs = try DiffAlignment.shift(aligning: alignOn, reference: pathA, other: pathB)
                    StandardOutput.shared.line("aligned on the first \(alignOn.summary): \(pathB) shifted by \(DiffAlignment.text(shiftNs))")
                }
                let sideB = try TraceFileReader(path: pathB)
                while var event = try sideB.next() {
                    if shiftNs != 0 {
                        let (shifted, overflow) = event.timeNs.addingReportingOverflow(shiftNs)
                        guard !overflow else {
                            throw CommandFailure(message: "--align-on: \(pathB) has an event at t_ns \(event.timeNs), which shifted by "
                                + "\(shiftNs) ns falls outside what a t_ns holds; compare without --align-on.", exitCode: 2)
                        }
                        event.timeNs = shifted
                    }
                    comparison.replayed(event)
                }
                let report = try comparison.finish()
                if !report.isEmpty { differ = true }
                StandardOutput.shared.line(report.render(maxLines: maxLines))
            } catch {
                StandardOutput.shared.flush()
                throw CommandFailure(message: "\(error)", exitCode: 2)
            }
        }
        StandardOutput.shared.flush()
        if differ { throw CommandFailure(message: "", exitCode: 1) }
    }
}

/// The two trace files to compare for one core (`nil` where one side has none).
struct TracePair {
    var label: String
    var a: String?
    var b: String?

    /// Turn the two command-line sides into trace file pairs.
    static func resolve(_ a: String, _ b: String) throws -> [TracePair] {
        switch (CaptureSetDirectory.isCaptureSet(a), CaptureSetDirectory.isCaptureSet(b)) {
        case (false, false):
            return [TracePair(label: "\(a) vs \(b)", a: a, b: b)]
        case (true, true):
            let baselinesA = try baselines(of: a)
            let baselinesB = try baselines(of: b)
            let cores = Set(baselinesA.keys).union(baselinesB.keys).sorted()
            guard !cores.isEmpty else {
                throw CommandFailure.failed("neither \(a) nor \(b) has a baseline trace. Make one with `tether replay SET --update-baseline`.")
            }
            return cores.map { TracePair(label: "core \($0)", a: baselinesA[$0], b: baselinesB[$0]) }
        case (true, false):
            return [TracePair(label: "\(a) vs \(b)", a: try baseline(of: a, matching: b), b: b)]
        case (false, true):
            return [TracePair(label: "\(a) vs \(b)", a: a, b: try baseline(of: b, matching: a))]
        }
    }

    /// core → full path of the set's baseline trace.
    static func baselines(of set: String) throws -> [String: String] {
        let manifest = try CaptureSetDirectory.readManifest(at: set)
        let directory = CaptureSetDirectory(path: set)
        var result: [String: String] = [:]
        for (core, relative) in manifest.baselines {
            result[core] = try directory.resolve(relative, field: "baselines.\(core)")
        }
        return result
    }

    /// The set's baseline for the core the trace file's first event names.
    static func baseline(of set: String, matching traceFile: String) throws -> String {
        let all = try baselines(of: set)
        // Only the first event is needed: its core names the baseline.
        guard let first = try TraceFileReader(path: traceFile).next() else {
            throw CommandFailure.failed("\(traceFile) holds no events, so it is not a trace. Write one with `tether replay SET --trace FILE`.")
        }
        if let path = all[first.core.text] { return path }
        if all.count == 1, let only = all.values.first { return only }
        let cores = all.keys.sorted().joined(separator: ", ")
        throw CommandFailure.failed("\(set) has no baseline for the core of \(traceFile) (its baselines: \(cores.isEmpty ? "none" : cores)). Give two trace files instead.")
    }
}

/// `--align-on`: the constant by which the second trace's times are shifted.
enum DiffAlignment {
    /// `[CORE:]EVENT[,FIELD=VALUE…]` as a selector; values read as `true`/`false`, an integer, a
    /// number, else text.
    static func parseSelector(_ text: String) throws -> Expectation.Selector {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false).map { String($0).trimmingCharacters(in: .whitespaces) }
        guard let head = parts.first, !head.isEmpty else {
            throw ValidationError("--align-on takes [CORE:]EVENT[,FIELD=VALUE…], e.g. messaging:device_status,status=Connected; got \"\(text)\".")
        }
        var core: String?
        var event = head
        if let colon = head.firstIndex(of: ":") {
            core = String(head[..<colon])
            event = String(head[head.index(after: colon)...])
        }
        guard !event.isEmpty, core.map({ !$0.isEmpty }) ?? true else {
            throw ValidationError("--align-on \(text): the event name is missing; write [CORE:]EVENT[,FIELD=VALUE…].")
        }
        var conditions: [String: Expectation.Value] = [:]
        for condition in parts.dropFirst() {
            guard let equals = condition.firstIndex(of: "="), equals != condition.startIndex else {
                throw ValidationError("--align-on \(text): \"\(condition)\" is not FIELD=VALUE.")
            }
            let key = String(condition[..<equals])
            let value = String(condition[condition.index(after: equals)...])
            conditions[key] = if value == "true" { .bool(true) } else if value == "false" { .bool(false) }
                else if let int = Int64(value) { .int(int) } else if let double = Double(value), double.isFinite { .double(double) }
                else { .string(value) }
        }
        return Expectation.Selector(core: core, event: event, where: conditions)
    }

    /// How much to add to `other`'s times so that its first `selector` event coincides with
    /// `reference`'s.
    /// - Throws: naming the file when a trace has no such event.
    static func shift(aligning selector: Expectation.Selector, reference: String, other: String) throws -> Int64 {
        func first(_ path: String) throws -> Int64 {
            let reader = try TraceFileReader(path: path)
            while let event = try reader.next() {
                if selector.matches(event) { return event.timeNs }
            }
            throw CommandFailure(message: "\(path) has no \(selector.summary) event to align on; pick an event both traces have "
                + "(a connection, the first call), or leave --align-on out.", exitCode: 2)
        }
        let (target, source) = (try first(reference), try first(other))
        let (difference, overflow) = target.subtractingReportingOverflow(source)
        guard !overflow else {
            throw CommandFailure(message: "--align-on \(selector.summary): \(reference) has it at t_ns \(target) and \(other) at t_ns \(source), "
                + "\(TraceTimeDifference(from: source, to: target)) apart: a shift that large does not fit a t_ns. Align on an event "
                + "nearer in time, or compare without --align-on.", exitCode: 2)
        }
        return difference
    }

    /// `+0.731 s`.
    static func text(_ ns: Int64) -> String {
        (ns >= 0 ? "+" : "-") + String(format: "%.6f s", Double(ns.magnitude) / 1e9)
    }
}
