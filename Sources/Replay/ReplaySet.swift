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
    /// How long past the last frame deadlines may still fire.
    public var drainHorizon: Duration = .seconds(600)

    /// Defaults: verify, the manifest's settings, a ten-minute drain.
    public init(verify: Bool = true, ingest: IngestOverrides? = nil, ingestPort: UInt16? = nil, drainHorizon: Duration = .seconds(600)) {
        self.verify = verify
        self.ingest = ingest
        self.ingestPort = ingestPort
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

/// Everything a replay produced; checking it against expectations and baselines comes after.
public struct ReplayOutcome: Sendable {
    /// The set as loaded.
    public var captureSet: LoadedCaptureSet
    /// The behaviour trace, in deterministic order.
    public var trace: [TraceEvent]
    /// Frames read and fed, timeouts fired, warnings.
    public var summary: ReplaySummary
    /// The IngestCore configuration the replay used (defaults, then manifest, then options).
    public var ingestConfiguration: IngestConfiguration

    /// The set's manifest.
    public var manifest: CaptureSetManifest { captureSet.manifest }
    /// The set's warnings (unsealed, unverified) followed by the replay's (cut-off tail…).
    public var warnings: [String] { captureSet.warnings + summary.warnings }
}

/// Loads the capture set at `path`, verifies it unless told not to, and replays its capture on the
/// virtual clock through the ingest adapter. The messaging and session adapters join the same
/// engine as they land.
public func replaySet(at path: String, options: ReplayOptions = .init()) throws(ReplayError) -> ReplayOutcome {
    let set: LoadedCaptureSet
    do throws(CaptureSetError) {
        set = try CaptureSetDirectory.load(path, verify: options.verify)
    } catch {
        throw .captureSet(error)
    }
    let configuration = IngestAdapter.configuration(
        applying: (set.manifest.ingest ?? IngestOverrides()).overridden(by: options.ingest))
    let (trace, summary) = try replayCapture(
        at: set.capturePath, interfaces: set.manifest.interfaces, ingestConfiguration: configuration,
        ingestPort: options.ingestPort, drainHorizon: options.drainHorizon)
    return ReplayOutcome(captureSet: set, trace: trace, summary: summary, ingestConfiguration: configuration)
}

/// Replays a bare capture file (no manifest): `interfaces` say which interface plays which role;
/// with none, every IP interface is taken as ingest UDP on the standard port.
public func replayCapture(
    at capturePath: String, interfaces: [ManifestInterface] = [], ingestConfiguration: IngestConfiguration = .init(),
    ingestPort: UInt16? = nil, drainHorizon: Duration = .seconds(600)
) throws(ReplayError) -> (trace: [TraceEvent], summary: ReplaySummary) {
    do throws(CaptureError) {
        let reader = try CaptureFile.open(path: capturePath)
        var engine = ReplayEngine(
            adapters: [IngestAdapter(configuration: ingestConfiguration, portOverride: ingestPort)],
            manifestInterfaces: interfaces, drainHorizon: drainHorizon)
        return try engine.run(reader: reader)
    } catch {
        throw .capture(error)
    }
}
