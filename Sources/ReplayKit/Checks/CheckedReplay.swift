import BehaviourTrace
import CaptureSet

/// How a replay's trace is checked against the set's baselines.
public struct ReplayCheckOptions: Sendable, Hashable {
    /// Timing slack of the baseline comparison, in nanoseconds.
    public var timingToleranceNs: Int64
    /// The most lines of differences kept per baseline.
    public var maxDiffLines: Int
    /// Accept this run's trace as the set's baselines instead of comparing (`--update-baseline`).
    public var updateBaseline: Bool
    /// The fault scenario this run is (its baselines go to `baseline/<scenario>/` and into the
    /// scenario's entry of the manifest); `nil` for the set itself.
    public var scenario: String?

    /// Exact timing, 40 lines of differences, compare.
    public init(timingToleranceNs: Int64 = 0, maxDiffLines: Int = 40, updateBaseline: Bool = false, scenario: String? = nil) {
        self.timingToleranceNs = timingToleranceNs
        self.maxDiffLines = maxDiffLines
        self.updateBaseline = updateBaseline
        self.scenario = scenario
    }
}

/// One set replayed with its checks made as the trace streamed by: what `tether replay` does for
/// each set, and what `TetherTesting`'s `replay(_:)` returns the values of.
public struct CheckedReplay {
    /// The run: the set, the summary, the cores.
    public var run: ReplayRun
    /// The verdict of each of the manifest's expectations.
    public var expectations: [ExpectationResult]
    /// Per baseline the manifest names, in core order: the comparison, still to be finished, or
    /// why its baseline could not be read.
    public var comparisons: [(core: String, comparison: Result<StreamingBaselineComparison, any Error>)]
    /// With ``ReplayCheckOptions/updateBaseline``: this run's trace per core, still to be put in
    /// place by ``BaselineWriters/accept()``.
    public var baselineWriters: BaselineWriters?
    /// The faults the run carried.
    public var faults: [Fault] = []

    /// One line per baseline whose index (`<baseline>.index`, ``BaselineIndex``) is there but
    /// could not be used, saying why: the comparison read that baseline line by line (same
    /// verdict, slower).
    public var baselineIndexNotes: [String] {
        comparisons.compactMap { core, comparison in
            guard case .success(let comparison) = comparison, case .unusable(let why) = comparison.indexLookup else { return nil }
            return "baseline \(core): its index was not used, so the baseline was read line by line: \(why)"
        }
    }

    /// Finishes every baseline comparison: the set's outcome, and one message per baseline that
    /// could not be read or compared (`baseline messaging: …`).
    public func outcome() -> (outcome: CaptureSetOutcome, errors: [String]) {
        var baselines: [BaselineComparison] = []
        var errors: [String] = []
        for (core, comparison) in comparisons {
            do {
                baselines.append(BaselineComparison(name: core, diff: try comparison.get().finish()))
            } catch {
                errors.append("baseline \(core): \(error)")
            }
        }
        var outcome = CaptureSetOutcome(name: run.captureSet.name, expectations: expectations, baselines: baselines)
        outcome.faults = faults.map(\.description)
        outcome.faultsApplied = run.summary.faultsApplied
        return (outcome, errors)
    }

    /// What the run concluded, reported under `name` (a set's, or `SET / SCENARIO`): with
    /// ``baselineWriters``, this run's traces put in place as the baselines (the outcome then
    /// compares none); else every comparison finished (``outcome()``), with the
    /// ``baselineIndexNotes``.
    /// - Throws: what ``BaselineWriters/accept()`` throws when a baseline cannot be put in place.
    public func conclude(named name: String) throws -> (outcome: CaptureSetOutcome, errors: [String], notes: [String]) {
        if let writers = baselineWriters {
            try writers.accept()
            return (CaptureSetOutcome(name: name, expectations: expectations, baselines: []), [], [])
        }
        var (outcome, errors) = self.outcome()
        outcome.name = name
        return (outcome, errors, baselineIndexNotes)
    }
}

/// Replays one loaded set with nothing of its trace kept: each event, as the engine makes it, goes
/// to `observe`, the expectation evaluator, the baseline comparison of its core (which reads the
/// baseline file alongside) or, when updating baselines, the new baseline file of its core. So
/// memory does not grow with the capture.
/// - Throws: ``ReplayError`` when the set cannot be replayed.
public func replayAndCheck(
    _ loaded: LoadedCaptureSet, options: ReplayOptions, checks: ReplayCheckOptions = .init(),
    observe: (TraceEvent) -> Void = { _ in }
) throws(ReplayError) -> CheckedReplay {
    let manifest = loaded.manifest
    let set = loaded.directory.path
    var evaluator = ExpectationEvaluator(manifest.expectations)
    var comparisons: [(core: String, comparison: Result<StreamingBaselineComparison, any Error>)] = []
    var comparing: [TraceName: StreamingBaselineComparison] = [:]
    let writers = checks.updateBaseline ? BaselineWriters(set: set, manifest: manifest, scenario: checks.scenario) : nil
    if !checks.updateBaseline {
        for core in manifest.baselines.keys.sorted() {
            do {
                let path = try CaptureSetDirectory(path: set).resolve(manifest.baselines[core, default: ""], field: "baselines.\(core)")
                let comparison = try StreamingBaselineComparison(
                    name: core, baselinePath: path, timingToleranceNs: checks.timingToleranceNs, lineBudget: checks.maxDiffLines)
                comparing[TraceName(core)] = comparison
                comparisons.append((core, .success(comparison)))
            } catch {
                comparisons.append((core, .failure(error)))
            }
        }
    }
    var lastCore: TraceName?
    var lastComparison: StreamingBaselineComparison?
    let run = try replaySet(loaded, options: options) { event in
        observe(event)
        evaluator.observe(event)
        if !comparing.isEmpty {
            // Runs of events come from one core: its comparison is looked up once per run, not
            // hashed for every event.
            if event.core != lastCore {
                lastCore = event.core
                lastComparison = comparing[event.core]
            }
            lastComparison?.replayed(event)
        }
        writers?.write(event)
    }
    var checked = CheckedReplay(run: run, expectations: evaluator.results(), comparisons: comparisons, baselineWriters: writers)
    checked.faults = options.faults
    return checked
}

/// `--update-baseline`: a run's trace written as the set's baselines, one file per core, as the
/// replay streams; ``accept()`` then puts each in place and records them in the manifest. A core
/// the manifest already names keeps its path; an empty trace is written too, so "this core did
/// nothing" is itself checked next time.
public final class BaselineWriters {
    /// The set's folder.
    public let set: String
    /// The set's manifest as loaded.
    public let manifest: CaptureSetManifest
    /// The scenario whose baselines these are, `nil` for the set's own.
    public let scenario: String?
    private var writers: [String: Result<TraceFileWriter, any Error>] = [:]
    private var lastCore: TraceName?
    private var lastWriter: TraceFileWriter?

    /// Writers for the set at `set` (for its scenario `scenario`, when given).
    public init(set: String, manifest: CaptureSetManifest, scenario: String? = nil) {
        self.set = set
        self.manifest = manifest
        self.scenario = scenario
    }

    /// Where `core`'s baseline goes, relative to the set.
    public func relativePath(_ core: String) -> String {
        if let path = manifest.baselines[core] { return path }
        if let scenario { return ManifestScenario.defaultBaselinePath(scenario: scenario, core: core) }
        return CaptureSetDirectory.defaultBaselinePath(core: core)
    }

    /// One event of the run, to its core's new baseline.
    public func write(_ event: TraceEvent) {
        if event.core != lastCore || lastWriter == nil {
            let core = event.core.text
            if writers[core] == nil {
                writers[core] = Result {
                    try Self.indexedWriter(CaptureSetDirectory(path: set).resolve(relativePath(core), field: "baselines.\(core)"))
                }
            }
            lastCore = event.core
            // A writer that could not be made is reported by accept(), which rethrows its error.
            lastWriter = try? writers[core]?.get()
        }
        lastWriter?.write(event)
    }

    /// A new baseline at `path` that writes its index as it goes.
    private static func indexedWriter(_ path: String) throws -> TraceFileWriter {
        let writer = try TraceFileWriter.replacing(path)
        try writer.recordLineIndex()
        return writer
    }

    /// Puts every core's new baseline in place, in core order, and saves the manifest when it
    /// changed. The first failure stops it (the files not yet in place are removed).
    public func accept() throws {
        var manifest = self.manifest
        let cores = Set(writers.keys).union(manifest.baselines.keys)
        for core in cores.sorted() {
            let relative = relativePath(core)
            let path = try CaptureSetDirectory(path: set).resolve(relative, field: "baselines.\(core)")
            // Each baseline gets its index beside it (BaselineIndex): a replay that agrees with
            // it is then checked without reading its lines.
            // A core that wrote nothing gets an empty baseline (and its index) all the same.
            let writer = try writers[core]?.get() ?? Self.indexedWriter(path)
            try writer.commit()
            manifest.baselines[core] = relative
        }
        if let scenario {
            // The scenario's entry of the manifest as it is on disk now (the set's own run may
            // have saved it a moment ago).
            var saved = try CaptureSetDirectory.readManifest(at: set)
            guard let index = saved.scenarios.firstIndex(where: { $0.name == scenario }) else { return }
            if saved.scenarios[index].baselines != manifest.baselines {
                saved.scenarios[index].baselines = manifest.baselines
                try CaptureSetDirectory.saveManifest(saved, to: set)
            }
        } else if manifest != self.manifest {
            try CaptureSetDirectory.saveManifest(manifest, to: set)
        }
    }
}
