import ReplayKit
import BehaviourTrace
import ArgumentParser
import CaptureKit
import CaptureSet
import Dissectors
import LiveHosts
import TimelineReport

/// `tether replay SET_OR_FOLDER…`: virtual-clock replay with checks, or `--realtime` re-sending.
struct ReplayCommand: ParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(
        commandName: "replay",
        abstract: "Replay capture sets on a virtual clock and check expectations and baselines (or re-send them in real time).",
        discussion: """
            Each argument is a capture set folder or a folder holding sets (searched below, as \
            Captures/ is). For every set, the captured frames are fed to the protocol cores its \
            manifest calls for, at their captured instants on a virtual clock, and the cores' \
            timers fire at their exact virtual instants. Nothing sleeps, so an hour of traffic \
            replays in well under a second, and two replays of one set give byte-identical traces. \
            Which core takes which interface comes from the manifest (docs/replay-engine.md); the \
            registered cores are listed below.

            The behaviour trace (JSON Lines, docs/trace-format.md) is then checked against the \
            manifest's expectations and against each baseline trace (baseline/<core>.jsonl), \
            compared as events. The report is printed; the exit status is 1 when any check \
            failed or any set could not be replayed. --update-baseline accepts this run's trace as \
            the new baseline (the baseline check is then not made).

            A manifest's scenarios (faults with their own expectations and baselines) are replayed \
            after their set, each reported as SET / SCENARIO; --fault applies faults to the whole \
            run instead, and --sweep replays each set once per peer frame with one fault on it \
            (docs/faults.md).

            --realtime instead sends the set's captured ingest datagrams over real UDP to --to, at \
            their recorded pace scaled by --speed, and reports how far the sent gaps strayed from \
            the recorded ones (p50, p99, max) and the total drift.

            --html DIR writes a timeline report into DIR (created when missing): index.html lists \
            the sets with their verdicts and durations, and each set's page shows its frames and \
            trace events on a zoomable timeline, its expectations linked to the events they \
            measured, its baseline differences and plots. Pages are self-contained and fetch \
            nothing (docs/timeline-report.md).

            After the last frame the cores' timers go on firing for --drain-horizon of virtual time \
            (ten minutes unless told), so an idle timeout after the end of a recording is replayed; \
            a timer still set when the drain ends is named in a warning.

            Replay every committed set, as CI does, keeping a JUnit report:
              tether replay Captures --junit .build/replay-junit.xml
            See a failing run in the browser (open .build/report/index.html):
              tether replay Captures/ciq-clean --messaging-window-size 4 --frame-matching off --html .build/report
            Had the plugin's end message been lost, would a 20-minute idle timeout end its stream? \
            (the default ten-minute drain ends first, with a warning naming the timer):
              tether replay Captures/plugin-clean --fault drop:frame=1207 --set ingest.idle_timeout_ms=20m --drain-horizon 30m --trace t.jsonl
            Keep one set's trace and try a shorter idle timeout:
              tether replay Captures/plugin-faulty --trace t.jsonl --set ingest.idle_timeout_ms=5s
            The same with the core's own option:
              tether replay Captures/plugin-faulty --trace t.jsonl --ingest-idle-timeout 5
            Replay the second of four parts of every set, as one job of a CI matrix (docs/ci-sharding.md):
              tether replay Captures --shard 2/4 --junit out/replay-2.xml
            What if the watch's ack in frame 192 had been lost (docs/faults.md)?
              tether replay Captures/ciq-clean --fault drop:frame=192 --trace lost-ack.jsonl
            The link drops 1 s in and comes back 200 ms later:
              tether replay Captures/ciq-clean --fault disconnect:at=1s:reconnect=200ms
            Drop each peer frame in turn and check every core's promises:
              tether replay Captures/ciq-clean --sweep drop --junit sweep.xml
            The same sweep as the second of three CI jobs (merge the parts with `tether junit merge`):
              tether replay Captures/ciq-clean --sweep drop --shard 2/3 --junit sweep-2.xml
            Every pair of lost frames at most 8 apart, each failure shrunk to a rerunnable --fault line:
              tether replay Captures/plugin-clean --sweep drop --search pairs --sweep-frames 90-130
            A long recording's sweep, at most ten minutes, spread along the capture:
              tether replay Captures/plugin-faulty --sweep drop --sweep-budget 10m --junit sweep.xml
            Replay a Connect IQ session with a smaller window (its frames then differ from the capture):
              tether replay Captures/ciq-clean --messaging-window-size 4 --frame-matching off
            Re-send a recording to a live server at twice its pace:
              tether replay --realtime --speed 2 --to 127.0.0.1:12345 Captures/plugin-clean

            \(CLIIntegrations.settingsHelp())
            """
    ) }

    /// The paths and the registered cores' own options: every argument the parser does not know,
    /// in order, read against the registry by ``CoreOptionArguments`` (the cores declare their
    /// options at run time, so the parser cannot).
    @Argument(parsing: .allUnrecognized, help: ArgumentHelp(
        "Capture set folders, or folders searched for capture sets (e.g. Captures); and the registered cores' own options listed below (e.g. --messaging-window-size 4).",
        valueName: "set-or-folder"))
    var arguments: [String] = []

    /// The paths and core options of ``arguments``, read (``validate()`` has refused what cannot be).
    private var coreArguments: CoreOptionArguments {
        get throws {
            switch CoreOptionArguments.parse(arguments, registry: CLIIntegrations.registry) {
            case .success(let read): return read
            case .failure(let error): throw ValidationError(error.message)
            }
        }
    }

    /// The capture set folders and folders of sets given.
    private var paths: [String] {
        get throws { try coreArguments.paths }
    }

    @Option(name: .long, help: "Write the behaviour trace (JSON Lines) to this file (one set only).")
    var trace: String?

    @Option(name: .long, help: "Write a JUnit XML report to this file.")
    var junit: String?

    @Option(name: .long, help: ArgumentHelp(
        "Write a self-contained HTML timeline report into this folder (index.html and a page per set).",
        valueName: "dir"))
    var html: String?

    @Flag(name: .customLong("update-baseline"), help: "Accept this run's traces as the sets' baselines (writes baseline/<core>.jsonl, its index baseline/<core>.jsonl.index, and the manifest).")
    var updateBaseline = false

    @Option(name: .customLong("set"), help: ArgumentHelp(
        "Change one setting of a core's manifest section for this replay, CORE.KEY=VALUE (repeatable; the settings are listed below).",
        valueName: "core.key=value"))
    var settings: [String] = []

    @Option(name: .customLong("frame-matching"), help: "How the BLE cores' emitted frames are checked: strict, responder or off (default: the manifest's, else strict).")
    var frameMatching: FrameMatchingMode?

    @Option(name: .customLong("tolerance-ms"), help: "Timing slack for the baseline comparison, in milliseconds (0 to 3600000).",
            transform: { try OptionValues.decimal($0, option: "--tolerance-ms", range: 0...3_600_000) })
    var toleranceMs: Double = 0

    @Option(name: .customLong("drain-horizon"), help: ArgumentHelp(
        "How long the cores' timers go on firing after the last frame, in virtual time (default 10m; seconds or 500ms, 90s, 30m, 2h; 0 to 24h). A timer still set after it is named in a warning.",
        valueName: "duration"),
            transform: { try OptionValues.seconds($0, option: "--drain-horizon", range: 0...86_400, allowZero: true) })
    var drainHorizonSeconds: Double = 600

    @Flag(name: .customLong("no-verify"), help: "Do not check the capture file's SHA-256 against the manifest.")
    var noVerify = false

    @Option(name: .customLong("max-diff-lines"), help: "The most lines of baseline differences shown per set (1 to 1000000).",
            transform: { try OptionValues.integer($0, option: "--max-diff-lines", range: 1...1_000_000) })
    var maxDiffLines: Int = 40

    @Option(name: .long, help: ArgumentHelp(
        "Replay only part I of N of the sets found, e.g. 2/4 (CI jobs in parallel; the N parts are disjoint, together every set, balanced by estimated replay cost). With --sweep: part I of N of each set's variants instead.",
        valueName: "i/n"))
    var shard: String?

    @Option(name: .customLong("fault"), help: ArgumentHelp(
        "Apply a fault between the capture and the cores (repeatable; docs/faults.md), e.g. drop:frame=412, delay:frame=412:by=6s, duplicate:frame=412, disconnect:at=1.5s:reconnect=2s, drop:p=0.05:seed=7, reorder:window=3:seed=7, jitter:max=40ms:seed=7.",
        valueName: "fault"))
    var faults: [String] = []

    @Option(name: .customLong("scenarios"), help: ArgumentHelp(
        "Which of each set's fault scenarios (the manifest's scenarios:) to replay after it: all, none, or names separated by commas (default: all; none when --fault is given).",
        valueName: "all|none|names"))
    var scenarios: String?

    @Option(name: .long, help: ArgumentHelp(
        "Replay each set once per peer frame with one fault on that frame, checking every variant against its cores' promises: drop, delay=DURATION (e.g. delay=6s) or disconnect[=RECONNECT] (docs/faults.md).",
        valueName: "kind"))
    var sweep: String?

    @Option(name: .customLong("sweep-frames"), help: ArgumentHelp(
        "With --sweep: only the variants of these peer frames, A-B or a single number.", valueName: "a-b"))
    var sweepFrames: String?

    @Option(name: .customLong("sweep-settle"), help: ArgumentHelp(
        "With --sweep: how long each link's recorded end (its last Disconnection Complete) is held back, so a fault near the end has time to be recovered from (default 10s; 0s ends the links as recorded).",
        valueName: "duration"))
    var sweepSettle: String?

    @Flag(name: .customLong("sweep-exhaustive"), help: ArgumentHelp(
        "With --sweep: replay every variant from the first frame instead of copying the run without faults where the variant's fault is first felt; slower, for checking that both give the same answers."))
    var sweepExhaustive = false

    @Option(name: .customLong("sweep-budget"), help: ArgumentHelp(
        "With --sweep: run at most so long (10m, 90s, 1h) or so many variants (500) of each set; the variants left out are reported as not covered (skipped cases in --junit), and those run are spread along the whole capture.",
        valueName: "time|count"))
    var sweepBudget: String?

    @Option(name: .customLong("search"), help: ArgumentHelp(
        "With --sweep: instead of every single fault, search schedules of several faults of the sweep's kind, and shrink each failing one to a minimal schedule that still breaks the same promise: pairs (every pair of peer frames at most 8 apart; pairs:window=16), pairs:sample=500:seed=3 (pairs drawn at random), random:200:seed=7 (random schedules of 1 to 4 faults).",
        valueName: "pairs|random:N:seed=S"))
    var search: String?

    /// A sweep's worker process (``SweepWorkers``): the set it sweeps; frame numbers on standard
    /// input, one JSON result a line on standard output.
    @Option(name: .customLong("sweep-worker"), help: ArgumentHelp(visibility: .hidden))
    var sweepWorker: String?

    @Flag(name: .long, help: "Send the captured ingest datagrams over real UDP at their recorded pace instead.")
    var realtime = false

    @Option(name: .long, help: "With --realtime: the pace factor (2 sends twice as fast as recorded; 0.001 to 1000).",
            transform: { try OptionValues.decimal($0, option: "--speed", range: 0.001...1000) })
    var speed: Double = 1

    @Option(name: .long, help: "With --realtime: where to send, HOST:PORT (e.g. 127.0.0.1:12345 or [::1]:12345).")
    var to: String?

    /// The long options of this command itself (without dashes), which a core's own option must
    /// not repeat: the parser would take them first. `CoreOptionTests` checks the list against
    /// `--help`, so it cannot fall behind the options above.
    static let ownLongOptions: Set<String> = [
        "trace", "junit", "html", "update-baseline", "set", "frame-matching", "tolerance-ms", "drain-horizon", "no-verify",
        "max-diff-lines", "shard", "fault", "scenarios", "sweep", "sweep-frames", "sweep-settle", "sweep-exhaustive", "sweep-budget", "search", "sweep-worker",
        "realtime", "speed", "to", "help", "version",
    ]

    /// The options the registry's cores declare that are this command's own, sorted.
    static func optionsTakenBy(_ registry: IntegrationRegistry) -> [String] {
        registry.integrations.flatMap { $0.settings.compactMap(\.flag) }.filter(ownLongOptions.contains).sorted()
    }

    func validate() throws {
        let paths = try paths
        guard !paths.isEmpty else {
            throw ValidationError("Give a capture set or a folder of sets, e.g. `tether replay Captures`.")
        }
        _ = try parsedSettings()
        _ = try parsedFaults()
        if let sweep {
            guard SweepKind(sweep) != nil else {
                throw ValidationError("--sweep \(sweep) is not a sweep; write drop, delay=6s (any duration with ns, us, ms, s, m or h) or disconnect (disconnect=2s reconnects after 2 s; 1 s by default).")
            }
            if !faults.isEmpty || trace != nil || html != nil || updateBaseline || realtime {
                throw ValidationError("--sweep makes its own faults and checks promises, not baselines; leave out --fault, --trace, --html, --update-baseline and --realtime (rerun one variant with --fault).")
            }
        }
        if let sweepFrames, FaultSweep.frameRange(sweepFrames) == nil {
            throw ValidationError("--sweep-frames \(sweepFrames) is not a frame number or a range A-B with 1 ≤ A ≤ B.")
        }
        if sweepFrames != nil && sweep == nil {
            throw ValidationError("--sweep-frames goes with --sweep.")
        }
        if sweepExhaustive && sweep == nil {
            throw ValidationError("--sweep-exhaustive goes with --sweep.")
        }
        if let search {
            guard sweep != nil else { throw ValidationError("--search goes with --sweep, which says the kind of fault: --sweep drop --search pairs.") }
            guard SweepSearch(search) != nil else {
                throw ValidationError("--search \(search) is not a search; write pairs, pairs:window=16, pairs:sample=500:seed=3 or random:200:seed=7.")
            }
            guard shard == nil else { throw ValidationError("--search does not split across jobs yet; leave out --shard (--sweep-budget bounds it).") }
        }
        if let sweepBudget {
            guard sweep != nil else { throw ValidationError("--sweep-budget goes with --sweep.") }
            guard SweepBudget(sweepBudget) != nil else {
                throw ValidationError("--sweep-budget \(sweepBudget) is neither a time nor a count; write e.g. 10m, 90s or 1h (a time), or 500 (variants).")
            }
        }
        if let sweepSettle {
            guard sweep != nil else { throw ValidationError("--sweep-settle goes with --sweep.") }
            guard FaultSweep.settleDuration(sweepSettle) != nil else {
                throw ValidationError("--sweep-settle \(sweepSettle) is not a duration; write e.g. 10s, 2500ms or 0s (ns, us, ms, s, m or h).")
            }
        }
        if let scenarios, scenarios.isEmpty {
            throw ValidationError("--scenarios is empty; write all, none, or scenario names separated by commas (e.g. --scenarios ack-lost,link-drop).")
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
            if trace != nil || junit != nil || html != nil || updateBaseline || shard != nil || !faults.isEmpty {
                throw ValidationError("--trace, --junit, --html, --shard, --fault and --update-baseline belong to virtual replay; leave them out with --realtime.")
            }
        } else {
            if to != nil || speed != 1 {
                throw ValidationError("--to and --speed only apply with --realtime.")
            }
        }
        if let shard, ReplayShard(shard) == nil {
            throw ValidationError("--shard \(shard) is not I/N with 1 ≤ I ≤ N ≤ 10000; write e.g. --shard 2/4 for the second of four parts.")
        }
        for path in paths where !FileIO.isDirectory(path) {
            throw ValidationError("\(path) is not a folder. Give a capture set folder (with manifest.yaml) or a folder holding sets, such as Captures.")
        }
        if let trace { try OutputFile.check(trace, option: "--trace") }
        if let junit { try OutputFile.check(junit, option: "--junit") }
        if let html { try Self.checkReportFolder(html) }
    }

    /// `--html DIR`: a folder, or a name whose parent folder exists.
    static func checkReportFolder(_ path: String) throws {
        guard !path.isEmpty else {
            throw ValidationError("--html is empty; give the folder to write the report into, e.g. --html .build/report.")
        }
        if FileIO.exists(path) {
            guard FileIO.isDirectory(path) else {
                throw ValidationError("--html \(path) is a file; give a folder to write index.html and the set pages into, e.g. --html \(path).report.")
            }
            return
        }
        let parent = FileIO.split(path.hasSuffix("/") ? String(path.dropLast()) : path).dir
        guard FileIO.isDirectory(parent) else {
            throw ValidationError("--html \(path): the folder \(parent) does not exist; create it first (mkdir -p \(parent)) or write elsewhere.")
        }
    }

    func run() throws {
        let paths = try paths
        if realtime {
            try runRealtime(set: paths[0])
            return
        }
        // A set named twice (or through a link) is one set: replayed once, in one shard only.
        let found: (sets: [String], duplicates: [(dropped: String, kept: String)])
        do throws(CaptureSetError) {
            found = try CaptureSetDirectory.sets(named: paths)
        } catch {
            throw CommandFailure.failed(error.description)
        }
        for duplicate in found.duplicates {
            Terminal.warn("tether: note: \(duplicate.dropped) is the set \(duplicate.kept), named already; replaying it once.")
        }
        var sets = found.sets
        if let shard = shard.flatMap(ReplayShard.init), sweep == nil {
            // (A sweep splits each set's variants instead: runSweeps.)
            sets = try Self.shardSets(sets, shard: shard)
        }
        if trace != nil && sets.count != 1 {
            throw CommandFailure(message: "--trace writes one set's trace, and \(sets.count) sets were found; name one set.", exitCode: ExitCode.validationFailure.rawValue)
        }
        do {
            for set in sets {
                if let trace { try OutputFile.refuseInside(trace, option: "--trace", set: set) }
                if let junit { try OutputFile.refuseInside(junit, option: "--junit", set: set) }
                if let html { try OutputFile.refuseInside(html, option: "--html", set: set) }
            }
        } catch let error as ValidationError {
            throw CommandFailure(message: error.message, exitCode: ExitCode.validationFailure.rawValue)
        }

        var options = ReplayOptions(
            integrations: CLIIntegrations.registry, verify: !noVerify, settings: try parsedSettings(), frameMatching: frameMatching)
        options.faults = try parsedFaults()
        options.drainHorizon = .nanoseconds(Int64((drainHorizonSeconds * 1e9).rounded()))
        if let sweep, let kind = SweepKind(sweep) {
            let settle = sweepSettle.flatMap(FaultSweep.settleDuration) ?? FaultSweep.defaultSettle
            if let sweepWorker {
                try SweepWorkers.serve(try loadReplaySet(at: sweepWorker, options: options), kind: kind, options: options, settle: settle,
                                      forking: !sweepExhaustive)
                return
            }
            try runSweeps(sets, kind: kind, options: options, settle: settle)
            return
        }
        let tolerance = Int64((toleranceMs * 1_000_000).rounded())
        var outcomes: [CaptureSetOutcome] = []
        var errors: [(name: String, message: String)] = []
        var report = html.map { TimelineReportFolder(folder: $0) }
        if let html { try FileSystemWrites.makeDirectories(html) }
        let status = StatusLine()
        for (index, set) in sets.enumerated() {
            let name = CaptureSetDirectory(path: set).name
            status.update(force: true) { "replaying \(name) (\(index + 1)/\(sets.count))" }
            let checked: CheckedReplay
            // The set's own warnings (unsealed, a link type the manifest contradicts) also come
            // out when the replay or the --trace file fails: they may be why.
            var loadWarnings: [String] = []
            var timeline: TimelineBuilder? = html == nil ? nil : TimelineBuilder()
            do {
                checked = try checkSet(at: set, options: options, tolerance: tolerance, loadWarnings: &loadWarnings, timeline: &timeline)
            } catch let error as ReplayError {
                status.clear()
                for warning in loadWarnings { Terminal.warn("tether: warning: \(name): \(warning)") }
                errors.append((name, error.description))
                Terminal.warn("tether: \(name): \(error)")
                try report?.add(TimelineSetReport(name: name, title: "", timeline: TimelineBuilder(), outcome: nil, errors: [error.description]))
                continue
            } catch {
                status.clear()
                for warning in loadWarnings { Terminal.warn("tether: warning: \(name): \(warning)") }
                throw error
            }
            status.clear()
            for warning in checked.run.warnings { Terminal.warn("tether: warning: \(name): \(warning)") }
            let outcome = try conclude(checked, name: name, errors: &errors, outcomes: &outcomes)
            if var timeline {
                status.update(force: true) { "writing the report of \(name) (\(index + 1)/\(sets.count))" }
                try timeline.addFrames(of: checked.run, registry: options.integrations)
                try report?.add(TimelineSetReport(
                    name: name, title: checked.run.manifest.title, timeline: timeline, outcome: outcome.outcome, errors: outcome.errors))
                status.clear()
            }
            for (scenarioIndex, scenario) in checked.run.manifest.scenarios.enumerated() where wantsScenario(scenario.name) {
                let scenarioName = FaultScenarios.outcomeName(set: name, scenario: scenario.name)
                status.update(force: true) { "replaying \(scenarioName) (\(index + 1)/\(sets.count))" }
                var scenarioTimeline: TimelineBuilder? = html == nil ? nil : TimelineBuilder()
                let attempt = Self.replayScenario(
                    scenario, index: scenarioIndex, of: checked.run.captureSet, options: options,
                    checks: ReplayCheckOptions(timingToleranceNs: tolerance, maxDiffLines: maxDiffLines, updateBaseline: updateBaseline, scenario: scenario.name),
                    timeline: &scenarioTimeline)
                status.clear()
                let result: CheckedReplay
                switch attempt {
                case .success(let replayed): result = replayed
                case .failure(let error):
                    errors.append((scenarioName, error.description))
                    Terminal.warn("tether: \(scenarioName): \(error)")
                    continue
                }
                for warning in result.run.summary.warnings { Terminal.warn("tether: warning: \(scenarioName): \(warning)") }
                let scenarioOutcome = try conclude(result, name: scenarioName, errors: &errors, outcomes: &outcomes)
                if var scenarioTimeline {
                    try scenarioTimeline.addFrames(of: result.run, registry: options.integrations)
                    try report?.add(TimelineSetReport(
                        name: scenarioName, title: "\(checked.run.manifest.title) — scenario \(scenario.name): \(scenario.faults.joined(separator: ", "))",
                        timeline: scenarioTimeline, outcome: scenarioOutcome.outcome, errors: scenarioOutcome.errors))
                }
            }
        }
        if let report {
            try report.finish()
        }

        let runErrors = errors.map { ReplayReport.RunError(name: $0.name, message: $0.message) }
        StandardOutput.shared.write(ReplayReport.render(outcomes, errors: runErrors, setCount: sets.count, maxDiffLines: maxDiffLines))
        if updateBaseline {
            StandardOutput.shared.line("Baselines updated for \(outcomes.count) set(s); review them with `git diff` before committing.")
        }
        if let junit {
            try JUnitReport(outcomes: outcomes, errors: runErrors, maxDiffLines: maxDiffLines).write(to: junit)
        }
        if let html {
            StandardOutput.shared.line("HTML report: \(FileIO.join(html, "index.html"))")
        }
        StandardOutput.shared.flush()
        if !errors.isEmpty || outcomes.contains(where: { !$0.passed }) {
            throw CommandFailure(message: "", exitCode: 1)
        }
    }

    /// A replay's conclusion (``CheckedReplay/conclude(named:)``) added to the run's outcomes and
    /// errors, its baseline index notes said on stderr.
    func conclude(
        _ checked: CheckedReplay, name: String, errors: inout [(name: String, message: String)], outcomes: inout [CaptureSetOutcome]
    ) throws -> (outcome: CaptureSetOutcome, errors: [String]) {
        let concluded = try checked.conclude(named: name)
        for note in concluded.notes { Terminal.warn("tether: note: \(name): \(note)") }
        errors += concluded.errors.map { (name, $0) }
        outcomes.append(concluded.outcome)
        return (concluded.outcome, concluded.errors)
    }

    /// The sets of part `shard` of `sets`, after saying on stdout which they are and what share of
    /// the estimated work they hold.
    static func shardSets(_ sets: [String], shard: ReplayShard) throws -> [String] {
        let weights = sets.map { set in
            do {
                return try ReplayWeight.measure(set)
            } catch {
                // A set that cannot be read still belongs to exactly one shard, whose replay then
                // reports why it cannot be read; here it weighs what any set weighs at least.
                return ReplayWeight(set: set, frames: 0, durationNs: 0, captureBytes: 0, baselineBytes: 0)
            }
        }
        let plan = ReplayShardPlanner.plan(weights, count: shard.count)
        let total = plan.reduce(UInt64(0)) { $0 + $1.cost }
        let mine = plan[shard.index - 1]
        let share = total == 0 ? 0 : Double(mine.cost) / Double(total) * 100
        StandardOutput.shared.line("Shard \(shard): \(mine.sets.count) of \(sets.count) set(s), \(Format.fixed(share, 1))% of the estimated work"
                                   + (mine.sets.isEmpty ? " (more shards than sets: nothing to replay)" : ""))
        return mine.sets
    }

    /// Replays one fault scenario of a set with its checks, feeding the timeline when there is one.
    static func replayScenario(
        _ scenario: ManifestScenario, index: Int, of set: LoadedCaptureSet, options: ReplayOptions, checks: ReplayCheckOptions,
        timeline: inout TimelineBuilder?
    ) -> Result<CheckedReplay, ReplayError> {
        let loaded = FaultScenarios.set(set, for: scenario)
        if timeline != nil {
            timeline = TimelineBuilder(for: loaded, registry: options.integrations)
        }
        var builder = timeline
        defer { timeline = builder }
        do throws(ReplayError) {
            let scenarioOptions = try FaultScenarios.options(
                options, for: scenario, index: index, manifestPath: loaded.directory.manifestPath, line: loaded.manifest.sourceLines["scenarios"])
            return .success(try replayAndCheck(loaded, options: scenarioOptions, checks: checks) { builder?.observe($0) })
        } catch {
            return .failure(error)
        }
    }

    /// Whether `--scenarios` asks for the scenario called `name`.
    func wantsScenario(_ name: String) -> Bool {
        guard let scenarios else { return faults.isEmpty }
        switch scenarios {
        case "all": return true
        case "none": return false
        default: return scenarios.split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == name }
        }
    }

    /// The `--fault` values, read.
    func parsedFaults() throws -> [Fault] {
        do throws(FaultSpecError) {
            try Fault.checkCount(faults)
        } catch {
            throw ValidationError("--fault: \(error)")
        }
        return try faults.map { text in
            do throws(FaultSpecError) {
                return try Fault(parsing: text)
            } catch {
                throw ValidationError("--fault: \(error)")
            }
        }
    }

    /// The `--set` values and the cores' own options, checked against the registry. A setting
    /// given both ways is refused: which one was meant cannot be told.
    func parsedSettings() throws -> [SettingOverride] {
        let fromSet = try settings.map { text in
            switch SettingOverride.parse(text, registry: CLIIntegrations.registry) {
            case .success(let setting): return setting
            case .failure(let error): throw ValidationError(error.message)
            }
        }
        let fromOptions = try coreArguments.settings
        for setting in fromOptions where fromSet.contains(where: { $0.core == setting.core && $0.key == setting.key }) {
            let flag = CLIIntegrations.registry.integration(named: setting.core)?.settings.first { $0.key == setting.key }?.flag ?? setting.key
            throw ValidationError("--set \(setting.core).\(setting.key) and --\(flag) give the same setting; give it once.")
        }
        return fromSet + fromOptions
    }

    /// Replays one set with its checks (``replayAndCheck(_:options:checks:observe:)``), writing
    /// the trace to --trace as it streams.
    /// - Throws: ``ReplayError`` when the set cannot be loaded or replayed (the set's error);
    ///   anything else when the --trace file cannot be written (the command's error).
    func checkSet(
        at set: String, options: ReplayOptions, tolerance: Int64, loadWarnings: inout [String], timeline: inout TimelineBuilder?
    ) throws -> CheckedReplay {
        // The capture's digest is checked while it replays; no verdict, trace or baseline comes
        // out before the check has passed.
        let (loaded, digest) = try loadReplaySetVerifyingAlongside(at: set, options: options)
        loadWarnings = loaded.warnings
        let checks = ReplayCheckOptions(timingToleranceNs: tolerance, maxDiffLines: maxDiffLines, updateBaseline: updateBaseline)
        if timeline != nil {
            timeline = TimelineBuilder(for: loaded, registry: options.integrations)
        }
        guard let trace else {
            return try verified(by: digest) { () throws(ReplayError) in
                try replayAndCheck(loaded, options: options, checks: checks) { timeline?.observe($0) }
            }
        }
        return try OutputFile.write(to: trace) { temporary in
            let writer: TraceFileWriter
            do throws(TraceFileError) {
                writer = try TraceFileWriter(path: temporary)
            } catch {
                throw CommandFailure.failed("cannot create \(temporary) to write \(trace): \(error.reason). Check the folder is writable.")
            }
            let checked: CheckedReplay
            do {
                checked = try verified(by: digest) { () throws(ReplayError) in
                    try replayAndCheck(loaded, options: options, checks: checks) { event in
                        writer.write(event)
                        timeline?.observe(event)
                    }
                }
            } catch {
                writer.discard()
                throw error
            }
            do throws(TraceFileError) {
                try writer.close()
            } catch {
                throw CommandFailure.failed("cannot write \(trace): \(error.reason). Check free disk space.")
            }
            return checked
        }
    }

    /// The tool that runs the command, as a rerun line names it (a package's own executable,
    /// with its own cores, names itself).
    static var toolName: String {
        CommandLine.arguments.first.flatMap { $0.split(separator: "/").last.map(String.init) } ?? "tether"
    }
}

extension FrameMatchingMode: ExpressibleByArgument {}
