import BehaviourTrace
import CaptureKit
import CaptureSet

/// How `tether replay` runs a capture set on the virtual clock.
public struct ReplayOptions: Sendable {
    /// The integrations that may replay a set (`TetherIntegrations.builtIn`, plus a user's own).
    public var integrations: IntegrationRegistry
    /// Check the capture file's SHA-256 against the manifest (`--no-verify` turns it off).
    public var verify: Bool = true
    /// Settings that win over the manifest's sections (`--set messaging.settings.window_size=4`).
    public var settings: [SettingOverride]
    /// Frame matching for the cores that compare what they write, winning over the manifest's
    /// `frame_matching`.
    public var frameMatching: FrameMatchingMode?
    /// How long past the last input (frame, scheduled call, late frame) deadlines may still fire
    /// (`--drain-horizon`). A timer still set after it is named in the summary's warnings.
    public var drainHorizon: Duration = .seconds(600)
    /// API calls delivered at chosen virtual instants (``ReplayEngine/scheduledCalls``).
    public var scheduledCalls: [ScheduledAPICall] = []
    /// Cores whose captured API calls are not delivered (``ReplayEngine/replacedCallCores``).
    public var replacedCallCores: Set<String> = []
    /// Faults applied between the capture and the cores (``ReplayEngine/faults``, docs/faults.md).
    /// With a fault and no ``frameMatching``, cores replay in ``FrameMatchingMode/responder`` mode:
    /// a fault changes what a core does next, and the recorded peer must answer what it does.
    public var faults: [Fault] = []
    /// The only cores to run, whatever the manifest selects (`nil`: the manifest decides). With
    /// it, the manifest's sections of other cores and its expectations (which describe the
    /// recorded app) are left aside: what `ReplaySession(replayingPeripheralOf:)` uses to serve
    /// any BLE capture to the app's own CoreBluetooth code.
    public var onlyCores: [String]?

    /// The frame matching a replay uses: the command line's, else `responder` under faults, else
    /// each manifest's.
    public var effectiveFrameMatching: FrameMatchingMode? {
        frameMatching ?? (faults.isEmpty ? nil : .responder)
    }

    /// Defaults: verify, the manifest's settings, a ten-minute drain.
    public init(
        integrations: IntegrationRegistry, verify: Bool = true, settings: [SettingOverride] = [],
        frameMatching: FrameMatchingMode? = nil, drainHorizon: Duration = .seconds(600)
    ) {
        self.integrations = integrations
        self.verify = verify
        self.settings = settings
        self.frameMatching = frameMatching
        self.drainHorizon = drainHorizon
    }
}

/// One setting of an integration's section changed for one replay: the section's key path and
/// its new value (what `--set CORE.KEY=VALUE` and an integration's own option make).
public struct SettingOverride: Sendable, Equatable {
    /// The core whose section it changes.
    public var core: String
    /// The key below the section, dotted (`settings.window_size`).
    public var key: String
    /// The new value.
    public var value: ManifestTree

    /// An override.
    public init(core: String, key: String, value: ManifestTree) {
        self.core = core
        self.key = key
        self.value = value
    }

    /// Parses `CORE.KEY=VALUE` against the registry: the core must be registered and the key one
    /// of its declared settings, and the value within the setting's bounds.
    /// `option` names the value in an error when it came from a core's own option
    /// (`--messaging-window-size`) rather than from `--set`.
    public static func parse(_ text: String, registry: IntegrationRegistry, option: String? = nil) -> Result<SettingOverride, SettingValueError> {
        guard let equals = text.firstIndex(of: "="), let dot = text[..<equals].firstIndex(of: ".") else {
            return .failure(SettingValueError(message: "--set takes CORE.KEY=VALUE, e.g. --set messaging.settings.window_size=4; got \"\(text)\"."))
        }
        let core = String(text[..<dot])
        let key = String(text[text.index(after: dot)..<equals])
        let valueText = String(text[text.index(after: equals)...])
        guard let integration = registry.integration(named: core) else {
            return .failure(SettingValueError(message: "--set \(text): \"\(core)\" is not a registered core"
                + IntegrationRegistry.suggestion(for: core, among: registry.names) + " (registered cores: \(registry.namesText))."))
        }
        guard let setting = integration.settings.first(where: { $0.key == key }) else {
            let keys = integration.settings.map(\.key)
            return .failure(SettingValueError(message: "--set \(text): core \(core) has no setting \"\(key)\""
                + IntegrationRegistry.suggestion(for: key, among: keys)
                + " (its settings: \(keys.isEmpty ? "none" : keys.joined(separator: ", ")))."))
        }
        return setting.value(from: valueText, option: option ?? "--set \(core).\(key)").map { SettingOverride(core: core, key: key, value: $0) }
    }
}

/// Why a replay could not run.
public enum ReplayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The set could not be loaded or verified.
    case captureSet(CaptureSetError)
    /// The capture file is damaged beyond its tail.
    case capture(CaptureError)
    /// The manifest asks for something no registered integration gives: an unknown core, a
    /// section nobody claims. Names the file, the line when known, the field, and what to do.
    case manifest(path: String, line: Int?, field: String, problem: String, hint: String)
    /// A core's timers ran away (``RunawayTimers``) and the replay was stopped; `settings` are
    /// its timer settings as this replay had them (`session.settings.handshake_timeout_ms = 0 (line 12)`).
    case runawayTimers(set: String, RunawayTimers, settings: [String])
    /// A sweep limited to some frames (`--sweep-frames`) found none of them among the frames it
    /// sweeps: `peerFrames` of them, from `first` to `last`.
    case sweepSelectsNothing(set: String, selected: ClosedRange<Int>, peerFrames: Int, first: Int?, last: Int?)

    /// The underlying error's message.
    public var description: String {
        switch self {
        case .captureSet(let error): error.description
        case .capture(let error): error.description
        case let .manifest(path, line, field, problem, hint):
            "\(path)\(line.map { ":\($0)" } ?? ""): `\(field)`: \(problem). \(hint)"
        case let .runawayTimers(set, runaway, settings):
            "capture set \(set): replay stopped: \(runaway.description). "
                + (settings.isEmpty
                    ? "The core is looping on its own timer; report it with this set."
                    : "Its timer settings were \(settings.joined(separator: "; ")): a timeout of 0 or a few nanoseconds does this; "
                        + "give each a realistic value (milliseconds) or leave it out for the core's default.")
        case let .sweepSelectsNothing(set, selected, peerFrames, first, last):
            "capture set \(set): frames \(selected.lowerBound)-\(selected.upperBound) hold none of the \(peerFrames) frame(s) the sweep puts faults on"
                + (first.flatMap { f in last.map { " (frames \(f) to \($0))" } } ?? "")
                + "; give frames within that span, or leave --sweep-frames out to sweep them all."
        }
    }
}

/// What a streamed replay of a capture set did, besides the trace it streamed.
public struct ReplayRun: Sendable {
    /// The set as loaded.
    public var captureSet: LoadedCaptureSet
    /// Frames read and fed, timeouts fired, warnings.
    public var summary: ReplaySummary
    /// The cores that replayed the set, in the order their adapters ran.
    public var cores: [String]

    /// The set's manifest.
    public var manifest: CaptureSetManifest { captureSet.manifest }
    /// The set's warnings (unsealed, unverified) followed by the replay's (cut-off tail…).
    public var warnings: [String] { captureSet.warnings + summary.warnings }
}

/// Everything a replay produced, the whole trace included; checking it against expectations and
/// baselines comes after. (`tether replay` streams the trace instead: ``replaySet(_:options:emit:)``.)
public struct ReplayOutcome: Sendable {
    /// The set as loaded.
    public var captureSet: LoadedCaptureSet
    /// The behaviour trace, in deterministic order.
    public var trace: [TraceEvent]
    /// Frames read and fed, timeouts fired, warnings.
    public var summary: ReplaySummary
    /// The cores that replayed the set, in the order their adapters ran.
    public var cores: [String]

    /// A streamed run with the trace it streamed.
    public init(_ run: ReplayRun, trace: [TraceEvent]) {
        captureSet = run.captureSet
        self.trace = trace
        summary = run.summary
        cores = run.cores
    }

    /// The set's manifest.
    public var manifest: CaptureSetManifest { captureSet.manifest }
    /// The set's warnings (unsealed, unverified) followed by the replay's (cut-off tail…).
    public var warnings: [String] { captureSet.warnings + summary.warnings }
}

/// Loads the capture set at `path` and verifies it unless told not to, ready for
/// ``replaySet(_:options:emit:)``.
public func loadReplaySet(at path: String, options: ReplayOptions) throws(ReplayError) -> LoadedCaptureSet {
    do throws(CaptureSetError) {
        return try CaptureSetDirectory.load(path, verify: options.verify)
    } catch {
        throw .captureSet(error)
    }
}

/// Loads the capture set at `path` as ``loadReplaySet(at:options:)`` does, except that the
/// capture's SHA-256 (when `options.verify`) is checked on another thread while the caller replays
/// it: run the replay through ``verified(by:_:)`` before reporting what it found. `digest` is `nil`
/// when nothing is being checked.
public func loadReplaySetVerifyingAlongside(at path: String, options: ReplayOptions) throws(ReplayError)
    -> (set: LoadedCaptureSet, digest: CaptureDigestCheck?) {
    do throws(CaptureSetError) {
        if !options.verify { return (try CaptureSetDirectory.load(path, verify: false), nil) }
        return try CaptureSetDirectory.loadVerifyingAlongside(path)
    } catch {
        throw .captureSet(error)
    }
}

/// What `replay` returns once `digest` (if any) is known to match; when it does not, that mismatch
/// is thrown instead of anything `replay` returned or threw (a capture that is not the sealed one
/// explains whatever replaying it found).
public func verified<T>(by digest: CaptureDigestCheck?, _ replay: () throws(ReplayError) -> T) throws(ReplayError) -> T {
    let result: Result<T, ReplayError>
    do throws(ReplayError) {
        result = .success(try replay())
    } catch {
        result = .failure(error)
    }
    if let digest {
        do throws(CaptureSetError) { try digest.wait() } catch { throw .captureSet(error) }
    }
    return try result.get()
}

/// Loads the capture set at `path`, verifies it unless told not to (on another thread, while the
/// capture replays), and replays its capture on the virtual clock through the adapters its
/// manifest's interface roles call for, keeping the whole trace.
public func replaySet(at path: String, options: ReplayOptions) throws(ReplayError) -> ReplayOutcome {
    let (set, digest) = try loadReplaySetVerifyingAlongside(at: path, options: options)
    var trace: [TraceEvent] = []
    let run = try verified(by: digest) { () throws(ReplayError) in try replaySet(set, options: options, into: &trace) }
    return ReplayOutcome(run, trace: trace)
}

/// Replays a loaded capture set, writing each trace event to `sink` as it is made.
public func replaySet(_ set: LoadedCaptureSet, options: ReplayOptions, into sink: inout some TraceSink) throws(ReplayError) -> ReplayRun {
    try replaySet(set, options: options) { sink.write($0) }
}

/// The adapters that replay `set`, in registry order, each made by its integration from the
/// manifest's section with `options`' settings applied; and the interfaces with the core each one
/// goes to filled in.
/// - Throws: ``ReplayError/manifest(path:line:field:problem:hint:)`` for an unknown core or an
///   unclaimed section, and whatever an integration throws for its section.
public func replayAdapters(for set: LoadedCaptureSet, options: ReplayOptions) throws(ReplayError)
    -> (adapters: [any CoreAdapter], interfaces: [ManifestInterface], unlabelledAPICallsCore: String?, warnings: [String])
{
    try replayAdapters(for: set, options: options, probe: nil)
}

/// ``replayAdapters(for:options:)``, their faults telling `probe` every frame asked about.
func replayAdapters(for set: LoadedCaptureSet, options: ReplayOptions, probe: FaultQueryProbe?) throws(ReplayError)
    -> (adapters: [any CoreAdapter], interfaces: [ManifestInterface], unlabelledAPICallsCore: String?, warnings: [String])
{
    let manifest = set.manifest
    let manifestPath = set.directory.manifestPath
    let registry = options.integrations
    let selected: [any CoreIntegration]
    if let only = options.onlyCores {
        selected = registry.integrations.filter { only.contains($0.name) }
    } else {
        selected = try registry.select(for: manifest, manifestPath: manifestPath)
    }
    var adapters: [any CoreAdapter] = []
    var warnings: [String] = []
    for integration in selected {
        var section = integration.sectionName.flatMap { manifest.section(named: $0) }
        // The section as written is checked against the integration's schema before anything is
        // made from it: a bad value is refused here, naming its line, rather than replayed.
        if let written = section, let schema = SectionSchema(of: integration) {
            do throws(SectionSchemaViolation) {
                warnings += try schema.validate(written, manifestPath: manifestPath).warnings
            } catch {
                throw ReplayError(error)
            }
        }
        for setting in options.settings where setting.core == integration.name {
            let name = integration.sectionName ?? integration.name
            let base = section ?? ManifestSection(name: name, value: .mapping([], line: nil))
            section = base.setting(setting.key.split(separator: ".").map(String.init), to: setting.value)
        }
        var context = IntegrationContext(captureSet: set, section: section, frameMatching: options.effectiveFrameMatching,
                                         faults: PeerFrameFaults(options.faults, probe: probe))
        context.capturedCallsReplaced = options.replacedCallCores.contains(integration.name)
        adapters.append(try integration.makeAdapter(context))
    }
    if options.onlyCores == nil {
        try checkExpectationNames(manifest.expectations, selected: selected, manifestPath: manifestPath,
                                  line: manifest.sourceLines["expectations"], faults: !options.faults.isEmpty)
    }
    let sections = Set(manifest.sections.map(\.name))
    var interfaces = manifest.interfaces
    for i in interfaces.indices where interfaces[i].core == nil && interfaces[i].role != nil && interfaces[i].role != .apiCalls {
        interfaces[i].core = registry.core(forUnnamed: interfaces[i].role, selected: selected, sections: sections)
    }
    let unlabelled = selected.first { $0.takesUnlabelledAPICalls }?.name
    return (adapters, interfaces, unlabelled, warnings)
}

/// Refuses an expectation that names a core this replay does not run, or an event that no core
/// of the replay declares it emits: such an expectation can only measure nothing, and an `absent`
/// or `count: {equals: 0}` would pass on a misspelling. Cores that declare no events
/// (``CoreIntegration/emittedEvents`` empty) leave names unchecked.
func checkExpectationNames(_ expectations: [Expectation], selected: [any CoreIntegration], manifestPath: String, line: Int?, faults: Bool = false) throws(ReplayError) {
    var cores = selected.map(\.name)
    var declared = Dictionary(selected.map { ($0.name, Set($0.emittedEvents)) }, uniquingKeysWith: { a, _ in a })
    if faults {
        // A run with faults has their events too.
        cores.append(FaultInjector.core.text)
        declared[FaultInjector.core.text] = [FaultInjector.faultInjected]
    }
    let everyCoreDeclares = selected.allSatisfy { !$0.emittedEvents.isEmpty }
    for (index, expectation) in expectations.enumerated() {
        let label = expectation.name.map { "expectations[\(index)] (\($0))" } ?? "expectations[\(index)]"
        for selector in expectation.selectors {
            if let core = selector.core {
                guard let events = declared[core] else {
                    throw .manifest(path: manifestPath, line: line, field: "\(label).core",
                                    problem: "\"\(core)\" is not a core this set is replayed by (\(cores.joined(separator: ", ")))",
                                    hint: "Name one of those cores, or leave `core` out to match any of them.")
                }
                if !events.isEmpty, !events.contains(TraceName(selector.event)) {
                    throw .manifest(path: manifestPath, line: line, field: "\(label).event",
                                    problem: "core \(core) never emits \"\(selector.event)\"\(IntegrationRegistry.suggestion(for: selector.event, among: events.map(\.text).sorted()))",
                                    hint: "docs/trace-format.md lists each core's events.")
                }
            } else if everyCoreDeclares, !declared.values.contains(where: { $0.contains(TraceName(selector.event)) }) {
                let all = declared.values.reduce(into: Set<String>()) { $0.formUnion($1.map(\.text)) }
                throw .manifest(path: manifestPath, line: line, field: "\(label).event",
                                problem: "no core of this set (\(cores.joined(separator: ", "))) emits \"\(selector.event)\"\(IntegrationRegistry.suggestion(for: selector.event, among: all.sorted()))",
                                hint: "docs/trace-format.md lists each core's events.")
            }
        }
    }
}

/// The duration settings of `core`'s integration as `set` and `options` give them, for a
/// runaway-timer error: `session.settings.handshake_timeout_ms = 0 (manifest.yaml:12)`, or
/// `(default)` when neither sets it.
func timerSettings(of core: String, in set: LoadedCaptureSet, options: ReplayOptions) -> [String] {
    guard let integration = options.integrations.integration(named: core) else { return [] }
    let sectionName = integration.sectionName ?? integration.name
    let section = set.manifest.section(named: sectionName)
    return integration.settings.compactMap { setting -> String? in
        guard case .milliseconds = setting.kind else { return nil }
        let path = setting.key.split(separator: ".").map(String.init)
        if let override = options.settings.last(where: { $0.core == core && $0.key == setting.key }),
           case .scalar(let text, _, _) = override.value {
            return "\(sectionName).\(setting.key) = \(text) (command line)"
        }
        var node = section?.value
        for key in path { node = node?[key] }
        guard case .scalar(let text, _, let line)? = node else { return "\(sectionName).\(setting.key) (default)" }
        return "\(sectionName).\(setting.key) = \(text)\(line.map { " (\(set.directory.manifestPath):\($0))" } ?? "")"
    }
}

/// Replays a loaded capture set on the virtual clock through the integrations its manifest
/// calls for, handing each trace event to `emit` as it is made: the trace is not kept, so
/// memory does not grow with the capture.
public func replaySet(_ set: LoadedCaptureSet, options: ReplayOptions, emit: (TraceEvent) -> Void) throws(ReplayError) -> ReplayRun {
    try replaySet(set, options: options, peerFrameObserver: nil, frameObserver: nil, emit: emit)
}

/// Replays a loaded set, telling the observers each peer frame and each frame fed (what a fault
/// sweep's plain run records: ``ReplayEngine/peerFrameObserver``, ``ReplayEngine/frameObserver``).
public func replaySet(
    _ set: LoadedCaptureSet, options: ReplayOptions, peerFrameObserver: ((Int, Duration, PeerFrameKind, Int) -> Void)?,
    frameObserver: ((Int) -> Void)?, emit: (TraceEvent) -> Void
) throws(ReplayError) -> ReplayRun {
    var (engine, sectionWarnings) = try replayEngine(for: set, options: options)
    let cores = engine.adapters.map(\.core.text)
    var summary: ReplaySummary
    do throws(CaptureError) {
        let reader = try CaptureFile.open(path: set.capturePath)
        engine.peerFrameObserver = peerFrameObserver
        engine.frameObserver = frameObserver
        summary = try engine.run(reader: reader, emit: emit)
    } catch {
        throw .capture(error)
    }
    summary.warnings = sectionWarnings + summary.warnings
    if let error = runawayError(summary, set: set, options: options) { throw error }
    return ReplayRun(captureSet: set, summary: summary, cores: cores)
}

/// A replay of `set` that advances in steps, with `closedLoop` feeding the calls an app in the
/// loop makes (``SteppedReplay``, ``ClosedLoopInputs``); the recorded calls of
/// `options.replacedCallCores` are not delivered, but for their host facts.
/// - Returns: the stepped run, its cores in adapter order and the manifest sections' warnings.
public func steppedReplay(
    of set: LoadedCaptureSet, options: ReplayOptions, closedLoop: (any ClosedLoopInputs)?
) throws(ReplayError) -> (run: SteppedReplay, cores: [String], warnings: [String]) {
    var (engine, sectionWarnings) = try replayEngine(for: set, options: options)
    engine.closedLoop = closedLoop
    do throws(CaptureError) {
        let reader = try CaptureFile.open(path: set.capturePath)
        return (SteppedReplay(engine: engine, reader: reader), engine.adapters.map(\.core.text), sectionWarnings)
    } catch {
        throw .capture(error)
    }
}

/// The engine that replays `set` as `options` say (adapters, interfaces, calls, faults), and the
/// manifest sections' warnings: what a plain and a stepped replay both run.
func replayEngine(for set: LoadedCaptureSet, options: ReplayOptions, probe: FaultQueryProbe? = nil) throws(ReplayError) -> (engine: ReplayEngine, warnings: [String]) {
    let (adapters, interfaces, unlabelled, sectionWarnings) = try replayAdapters(for: set, options: options, probe: probe)
    var engine = ReplayEngine(adapters: adapters, manifestInterfaces: interfaces, gattHandles: set.manifest.gattHandles, drainHorizon: options.drainHorizon)
    engine.unlabelledAPICallsCore = unlabelled
    engine.scheduledCalls = options.scheduledCalls
    engine.replacedCallCores = options.replacedCallCores
    engine.keptCallsOfReplacedCores = keptCalls(options)
    engine.faults = options.faults
    return (engine, sectionWarnings)
}

/// The host-fact calls of each replaced core (``CoreIntegration/hostFactCalls``).
func keptCalls(_ options: ReplayOptions) -> [String: Set<String>] {
    var kept: [String: Set<String>] = [:]
    for core in options.replacedCallCores {
        if let integration = options.integrations.integration(named: core) { kept[core] = integration.hostFactCalls }
    }
    return kept
}

/// Replays a capture file through the given adapters.
public func replayCapture(
    at capturePath: String, adapters: [any CoreAdapter], interfaces: [ManifestInterface],
    gattHandles: [ManifestGATTHandle] = [], drainHorizon: Duration = .seconds(600)
) throws(ReplayError) -> (trace: [TraceEvent], summary: ReplaySummary) {
    var trace: [TraceEvent] = []
    let summary = try replayCapture(
        at: capturePath, adapters: adapters, interfaces: interfaces, gattHandles: gattHandles, drainHorizon: drainHorizon
    ) { trace.append($0) }
    return (trace, summary)
}

/// Replays a capture file through the given adapters, handing each trace event to `emit` as it is
/// made.
public func replayCapture(
    at capturePath: String, adapters: [any CoreAdapter], interfaces: [ManifestInterface],
    gattHandles: [ManifestGATTHandle] = [], drainHorizon: Duration = .seconds(600), emit: (TraceEvent) -> Void
) throws(ReplayError) -> ReplaySummary {
    do throws(CaptureError) {
        let reader = try CaptureFile.open(path: capturePath)
        var engine = ReplayEngine(adapters: adapters, manifestInterfaces: interfaces, gattHandles: gattHandles, drainHorizon: drainHorizon)
        return try engine.run(reader: reader, emit: emit)
    } catch {
        throw .capture(error)
    }
}
