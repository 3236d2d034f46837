import CaptureSet
import IngestCore
import ReplayKit

/// intdash Motion's plugin ingest as replay sees it: UDP datagrams of `ingest-udp` interfaces
/// (and of every IP interface of a bare imported capture) fed to ``IngestCore``; the manifest's
/// `ingest:` section holds the core's settings (``IngestOverrides``).
public struct IngestIntegration: CoreIntegration {
    /// The integration; it has no state.
    public init() {}

    /// `ingest`.
    public var name: String { "ingest" }
    /// For `--help`.
    public var summary: String { "intdash Motion plugin ingest over UDP (IngestCore)" }
    /// `ingest-udp`.
    public var replayedRoles: Set<InterfaceRole> { [.ingestUDP] }
    /// `ingest-udp`.
    public var defaultForRoles: Set<InterfaceRole> { [.ingestUDP] }
    /// A bare capture is taken as plugin traffic on the standard port.
    public var replaysUndescribedInterfaces: Bool { true }
    /// The section's keys, with the command line's bounds.
    public var settings: [IntegrationSetting] { IngestSectionSchema.settings }
    /// What ``IngestAdapter`` writes.
    public var emittedEvents: [String] {
        ["datapoint", "rejected", "plugin_name", "end_message", "legacy_v1", "stream_start", "stream_end", "rate",
         "time_backwards", "gap", "chunk", "frame_malformed", "summary"]
    }

    /// No point invented, and every point of a datagram that was not dropped stored.
    public var promises: [CorePromise] {
        [CorePromise("no point invented, every point of an undropped datagram stored",
                     .preservedExceptDropped(event: "datapoint", identity: ["source", "name", "time_ns", "value"]))]
    }

    /// An ``IngestAdapter`` with the section's settings.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        let section = try context.decodeSection(IngestOverrides.self) ?? IngestOverrides()
        // The section was checked against ``settings`` (every key above 0) before this is called.
        return IngestAdapter(configuration: IngestAdapter.configuration(applying: section), portOverride: section.port)
    }
}
