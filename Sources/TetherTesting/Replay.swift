@_exported import BehaviourTrace
@_exported import CaptureSet
@_exported import TetherIntegrations
import BehaviourTrace
import CaptureSet
import ReplayKit
import TetherIntegrations

/// What one replay of a capture set did, as values a test can check: the verdicts, the baseline
/// comparison, the run's summary and the whole behaviour trace.
///
/// ```swift
/// import Testing
/// import TetherTesting
///
/// @Test func cleanSessionReplaysGreen() async throws {
///     let run = try await replay("Captures/ciq-clean")
///     #expect(run.passed, "\(run.report)")
/// }
/// ```
public struct ReplayResult: Sendable {
    /// The set's name (its folder's last component).
    public var name: String
    /// The cores that replayed it, in adapter order.
    public var cores: [String]
    /// Each of the manifest's expectations with its verdict and what it measured.
    public var expectations: [ExpectationResult]
    /// Each baseline the manifest names, compared with this run's trace (empty when the replay
    /// was told not to compare).
    public var baselines: [BaselineComparison]
    /// Baselines that could not be read or compared, one sentence each.
    public var baselineErrors: [String]
    /// Frames read and fed, timeouts fired.
    public var summary: ReplaySummary
    /// The set's and the replay's warnings (unsealed set, cut-off tail…).
    public var warnings: [String]
    /// The behaviour trace, in the order the cores wrote it.
    public var trace: [TraceEvent]

    /// Every expectation held, every baseline matched and every baseline could be read.
    public var passed: Bool { outcome.passed && baselineErrors.isEmpty }

    /// The expectations that failed.
    public var failedExpectations: [ExpectationResult] { expectations.filter { !$0.passed } }

    /// The set's outcome as `tether replay` reports it.
    public var outcome: CaptureSetOutcome { CaptureSetOutcome(name: name, expectations: expectations, baselines: baselines) }

    /// The report `tether replay` prints for this set: each expectation with what it measured and
    /// at which frame, then the baseline differences. What a failing `#expect` should show.
    public var report: String {
        var text = ReplayReport.render([outcome])
        for error in baselineErrors { text += "ERROR \(name): \(error)\n" }
        return text
    }

    /// The events of `core` (and, when given, of that name), in trace order.
    public func events(core: TraceName, named event: TraceName? = nil) -> [TraceEvent] {
        trace.filter { $0.core == core && (event == nil || $0.event == event) }
    }
}

/// One API call a test makes at a chosen virtual instant, delivered to the core as if the app
/// had made it then (an `api-calls` record: `call` and its arguments, docs/capture-set.md).
public typealias ScheduledCall = ScheduledAPICall

/// Replays the capture set at `path` (relative to the current directory, which `swift test` sets
/// to the package's root) on the virtual clock and checks it, as `tether replay` does, returning
/// everything as values.
///
/// - Parameters:
///   - path: The set's folder.
///   - integrations: The cores that may replay it: Tether's by default; add a core of your own
///     with `TetherIntegrations.builtIn.adding(MyIntegration())`.
///   - settings: `CORE.KEY=VALUE` changes to the manifest's sections, as `tether replay --set`.
///   - frameMatching: Overrides the manifest's frame matching (`.responder` lets a core that
///     acts differently still get the recorded peer's answers).
///   - timingTolerance: Slack of the baseline comparison.
///   - compareBaselines: `false` skips the baselines (a run with changed settings or calls will
///     differ from them on purpose).
///   - calls: API calls to deliver at chosen virtual instants.
///   - replacingRecordedCallsOf: Cores whose recorded API calls are not delivered, so that
///     `calls` drive them instead.
///   - observe: Called with every trace event as the core makes it, in virtual-time order (the
///     event's `timeNs`): feed an app's view model from the replayed core here and check its state
///     after the call returns.
/// - Throws: ``TetherTestingError`` when the set cannot be loaded or replayed, or a setting is
///   refused; the message names the file, the field and what to do.
public func replay(
    _ path: String,
    integrations: IntegrationRegistry = TetherIntegrations.builtIn,
    settings: [String] = [],
    frameMatching: FrameMatchingMode? = nil,
    timingTolerance: Duration = .zero,
    compareBaselines: Bool = true,
    calls: [ScheduledCall] = [],
    replacingRecordedCallsOf replacedCores: Set<String> = [],
    verify: Bool = true,
    observe: (TraceEvent) -> Void = { _ in }
) async throws(TetherTestingError) -> ReplayResult {
    let overrides = try validatedSettings(settings, integrations: integrations)
    var options = ReplayOptions(integrations: integrations, verify: verify, settings: overrides, frameMatching: frameMatching)
    options.scheduledCalls = calls
    options.replacedCallCores = replacedCores
    var trace: [TraceEvent] = []
    do throws(ReplayError) {
        var loaded = try loadReplaySet(at: path, options: options)
        // A run compared with nothing: the baselines are dropped from the manifest it checks.
        if !compareBaselines { loaded.manifest.baselines = [:] }
        let checks = ReplayCheckOptions(timingToleranceNs: timingTolerance.replayNanoseconds)
        let checked = try replayAndCheck(loaded, options: options, checks: checks) { event in
            observe(event)
            trace.append(event)
        }
        return result(of: checked, trace: trace)
    } catch {
        throw TetherTestingError(message: error.description)
    }
}

/// `settings` (`CORE.KEY=VALUE`) read against `integrations`, after checking the registry itself.
/// - Throws: the registry's or the first setting's problem, as ``TetherTestingError``.
func validatedSettings(_ settings: [String], integrations: IntegrationRegistry) throws(TetherTestingError) -> [SettingOverride] {
    if case .failure(let error) = integrations.validated() { throw TetherTestingError(message: error.description) }
    var overrides: [SettingOverride] = []
    for text in settings {
        switch SettingOverride.parse(text, registry: integrations) {
        case .success(let setting): overrides.append(setting)
        case .failure(let error): throw TetherTestingError(message: error.message)
        }
    }
    return overrides
}

private func result(of checked: CheckedReplay, trace: [TraceEvent]) -> ReplayResult {
    let (outcome, errors) = checked.outcome()
    return ReplayResult(
        name: outcome.name, cores: checked.run.cores, expectations: outcome.expectations, baselines: outcome.baselines,
        baselineErrors: errors, summary: checked.run.summary, warnings: checked.run.warnings, trace: trace)
}

/// Why ``replay(_:integrations:settings:frameMatching:timingTolerance:compareBaselines:calls:replacingRecordedCallsOf:verify:observe:)``
/// could not replay a set: the sentence `tether replay` would print.
public struct TetherTestingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The sentence: the file, the problem, what to do.
    public var message: String
    /// The sentence.
    public var description: String { message }
}
