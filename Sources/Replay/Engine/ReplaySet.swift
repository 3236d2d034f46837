import CaptureKit
import CaptureSet
import IngestCore

/// How `tether replay` runs a capture set on the virtual clock.
public struct ReplayOptions: Sendable {
    /// Check the capture file's SHA-256 against the manifest (`--no-verify` turns it off).
    public var verify: Bool = true
    /// IngestCore settings that win over the manifest's `ingest` section (`--ingest-idle-timeout`…).
    public var ingest: IngestOverrides?
    /// When set, the ingest UDP port on every interface, whatever the manifest says.
    public var ingestPort: UInt16?
    /// MessagingCore settings that win over the manifest's `messaging.settings`.
    public var messaging: MessagingOverrides?
    /// SessionCore settings that win over the manifest's `session.settings`.
    public var session: SessionOverrides?
    /// Frame matching for the BLE cores, winning over the manifest's `frame_matching`.
    public var frameMatching: FrameMatchingMode?
    /// How long past the last frame deadlines may still fire.
    public var drainHorizon: Duration = .seconds(600)

    /// Defaults: verify, the manifest's settings, a ten-minute drain.
    public init(
        verify: Bool = true, ingest: IngestOverrides? = nil, ingestPort: UInt16? = nil,
        messaging: MessagingOverrides? = nil, session: SessionOverrides? = nil, frameMatching: FrameMatchingMode? = nil,
        drainHorizon: Duration = .seconds(600)
    ) {
        self.session = session
        self.verify = verify
        self.ingest = ingest
        self.ingestPort = ingestPort
        self.messaging = messaging
        self.frameMatching = frameMatching
        self.drainHorizon = drainHorizon
    }
}

/// Why a replay could not run.
public enum ReplayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The set could not be loaded or verified.
    case captureSet(CaptureSetError)
    /// The capture file is damaged beyond its tail.
    case capture(CaptureError)

    /// The underlying error's message.
    public var description: String {
        switch self {
        case .captureSet(let error): error.description
        case .capture(let error): error.description
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
    /// The IngestCore configuration the replay used (defaults, then manifest, then options), also
    /// when no ingest interface was replayed.
    public var ingestConfiguration: IngestConfiguration

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
    /// The IngestCore configuration the replay used (defaults, then manifest, then options), also
    /// when no ingest interface was replayed.
    public var ingestConfiguration: IngestConfiguration

    /// A streamed run with the trace it streamed.
    public init(_ run: ReplayRun, trace: [TraceEvent]) {
        captureSet = run.captureSet
        self.trace = trace
        summary = run.summary
        cores = run.cores
        ingestConfiguration = run.ingestConfiguration
    }

    /// The set's manifest.
    public var manifest: CaptureSetManifest { captureSet.manifest }
    /// The set's warnings (unsealed, unverified) followed by the replay's (cut-off tail…).
    public var warnings: [String] { captureSet.warnings + summary.warnings }
}

/// Chooses the core adapters for a capture from the roles its manifest gives its interfaces.
///
/// - `ingest-udp`, or an interface the manifest does not describe (a bare imported capture):
///   the ingest adapter.
/// - `ble-hci` / `ble-monitor` whose `core` is `messaging` or absent, `api-calls`, or a manifest
///   with a `messaging` section: the messaging adapter.
/// - `ble-hci` / `ble-monitor` whose `core` is `session`, or a manifest with a `session` section:
///   the session adapter (then an undescribed BLE interface and `api-calls` belong to it, unless
///   the manifest also has a `messaging` section).
/// - `mqtt-tcp` or `app-group` interfaces: the widget adapter (the `api-calls` interface then
///   belongs to it, not to messaging).
/// - With no manifest interfaces at all, only the ingest adapter (every IP interface is taken as
///   ingest UDP on the standard port), as before BLE cores existed.
public enum ReplayAdapterSelection {
    /// The core names to replay, in adapter order.
    public static func cores(for manifest: CaptureSetManifest?) -> [String] {
        guard let manifest, !manifest.interfaces.isEmpty else {
            var cores = ["ingest"]
            if manifest?.messaging != nil { cores.append("messaging") }
            if manifest?.session != nil { cores.append("session") }
            return cores
        }
        var cores: [String] = []
        let roles = manifest.interfaces.map(\.role)
        if roles.contains(where: { $0 == nil || $0 == .ingestUDP }) { cores.append("ingest") }
        let widget = roles.contains(.mqttTCP) || roles.contains(.appGroup)
        let sessionOnly = manifest.session != nil && manifest.messaging == nil
        let bleCores = manifest.interfaces.filter { $0.role == .bleHCI || $0.role == .bleMonitor }
            .map { $0.core ?? (sessionOnly ? "session" : "messaging") }
        if bleCores.contains("messaging") || manifest.messaging != nil || (roles.contains(.apiCalls) && !sessionOnly && !widget) {
            cores.append("messaging")
        }
        if bleCores.contains("session") || manifest.session != nil { cores.append("session") }
        if widget { cores.append("widget") }
        return cores
    }
}

/// Loads the capture set at `path` and verifies it unless told not to, ready for
/// ``replaySet(_:options:emit:)``.
public func loadReplaySet(at path: String, options: ReplayOptions = .init()) throws(ReplayError) -> LoadedCaptureSet {
    do throws(CaptureSetError) {
        return try CaptureSetDirectory.load(path, verify: options.verify)
    } catch {
        throw .captureSet(error)
    }
}

/// Loads the capture set at `path`, verifies it unless told not to, and replays its capture on the
/// virtual clock through the adapters its manifest's interface roles call for, keeping the whole
/// trace.
public func replaySet(at path: String, options: ReplayOptions = .init()) throws(ReplayError) -> ReplayOutcome {
    let set = try loadReplaySet(at: path, options: options)
    var trace: [TraceEvent] = []
    let run = try replaySet(set, options: options, into: &trace)
    return ReplayOutcome(run, trace: trace)
}

/// Replays a loaded capture set, writing each trace event to `sink` as it is made.
public func replaySet(_ set: LoadedCaptureSet, options: ReplayOptions = .init(), into sink: inout some TraceSink) throws(ReplayError) -> ReplayRun {
    try replaySet(set, options: options) { sink.write($0) }
}

/// Replays a loaded capture set on the virtual clock through the adapters its manifest's interface
/// roles call for, handing each trace event to `emit` as it is made: the trace is not kept, so
/// memory does not grow with the capture.
public func replaySet(_ set: LoadedCaptureSet, options: ReplayOptions = .init(), emit: (TraceEvent) -> Void) throws(ReplayError) -> ReplayRun {
    let manifest = set.manifest
    let ingestConfiguration = IngestAdapter.configuration(
        applying: (manifest.ingest ?? IngestOverrides()).overridden(by: options.ingest))
    let cores = ReplayAdapterSelection.cores(for: manifest)
    var adapters: [any CoreAdapter] = []
    for core in cores {
        switch core {
        case "ingest":
            adapters.append(IngestAdapter(configuration: ingestConfiguration, portOverride: options.ingestPort))
        case "messaging":
            let matching = options.frameMatching ?? manifest.messaging?.frameMatching ?? .strict
            let prescan: MessagingCapturePrescan
            do throws(CaptureError) {
                prescan = try MessagingCapturePrescan.scan(
                    capturePath: set.capturePath, interfaces: manifest.interfaces, gattHandles: manifest.gattHandles,
                    watchPackets: matching == .responder)
            } catch {
                throw .capture(error)
            }
            adapters.append(MessagingAdapter(
                section: manifest.messaging ?? ManifestMessaging(), overrides: options.messaging,
                matching: matching,
                prescan: prescan, gattHandles: manifest.gattHandles,
                hasAPICallsInterface: manifest.interfaces.contains { $0.role == .apiCalls }))
        case "session":
            adapters.append(SessionAdapter(
                section: manifest.session, overrides: options.session,
                matching: options.frameMatching ?? manifest.session?.frameMatching ?? .strict))
        case "widget":
            adapters.append(WidgetAdapter(matching: options.frameMatching ?? .strict))
        default:
            break
        }
    }
    let summary = try replayCapture(
        at: set.capturePath, adapters: adapters, interfaces: manifest.interfaces, gattHandles: manifest.gattHandles,
        drainHorizon: options.drainHorizon, emit: emit)
    return ReplayRun(captureSet: set, summary: summary, cores: cores, ingestConfiguration: ingestConfiguration)
}

/// Replays a bare capture file (no manifest): `interfaces` say which interface plays which role;
/// with none, every IP interface is taken as ingest UDP on the standard port.
public func replayCapture(
    at capturePath: String, interfaces: [ManifestInterface] = [], ingestConfiguration: IngestConfiguration = .init(),
    ingestPort: UInt16? = nil, drainHorizon: Duration = .seconds(600)
) throws(ReplayError) -> (trace: [TraceEvent], summary: ReplaySummary) {
    try replayCapture(
        at: capturePath, adapters: [IngestAdapter(configuration: ingestConfiguration, portOverride: ingestPort)],
        interfaces: interfaces, drainHorizon: drainHorizon)
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
