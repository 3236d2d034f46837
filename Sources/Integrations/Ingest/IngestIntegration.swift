import CaptureKit
import CaptureSet
import Dissectors
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
    public var emittedEvents: [TraceName] { IngestTrace.events }

    /// No point invented, and every point of a datagram that was not dropped stored.
    public var promises: [CorePromise] {
        [CorePromise("no point invented, every point of an undropped datagram stored",
                     .preservedExceptDropped(event: "datapoint", identity: ["source", "name", "time_ns", "value"]))]
    }

    /// The captured datagrams to the ingest port, in capture order, with their offsets from the
    /// first one. Interfaces the manifest marks `ingest-udp` are read, each with its
    /// `ingest_port` (12345 when it names none); when none is marked, every interface whose link
    /// type can carry UDP, on port 12345. `--set ingest.port` (`--ingest-port`) sends the
    /// datagrams to that port instead, on every interface read.
    public func realtimeTraffic(of set: LoadedCaptureSet, settings: [SettingOverride]) throws(CaptureError) -> RealtimeTraffic? {
        let portOverride = settings.last { $0.core == name && $0.key == "port" }?.value.scalarText.flatMap { UInt16($0) }
        let reader = try CaptureFile.open(path: set.capturePath)
        let marked = set.manifest.interfaces.filter { $0.role == .ingestUDP }
        var ports: [Int: UInt16] = [:]
        for interface in marked { ports[interface.index] = portOverride ?? interface.ingestPort ?? 12345 }
        var extractor = UDPExtractor()
        var datagrams: [RecordedDatagram] = []
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
            datagrams.append(RecordedDatagram(offsetNs: frame.timestampNs &- first, payload: datagram.payload))
        }
        let portsText = Set(marked.isEmpty ? [portOverride ?? 12345] : Array(ports.values)).sorted().map(String.init).joined(separator: ", ")
        return RealtimeTraffic(datagrams: datagrams, description: "datagrams to the ingest port \(portsText)",
                               warnings: reader.warnings.filter { $0.kind != .skippedUnknown })
    }

    /// An ``IngestAdapter`` with the section's settings.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        let section = try context.decodeSection(IngestOverrides.self) ?? IngestOverrides()
        // The section was checked against ``settings`` (every key above 0) before this is called.
        return IngestAdapter(configuration: IngestAdapter.configuration(applying: section), portOverride: section.port)
    }
}
