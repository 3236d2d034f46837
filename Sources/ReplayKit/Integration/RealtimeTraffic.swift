import CaptureKit
import CaptureSet

/// What `tether replay --realtime` re-sends of a set for one core: the core's recorded datagrams
/// in capture order (``CoreIntegration/realtimeTraffic(of:settings:)``).
public struct RealtimeTraffic: Sendable {
    /// The datagrams, in capture order; may be empty (the set holds none of this core's).
    public var datagrams: [RecordedDatagram]
    /// What the datagrams are, for messages (`datagrams to the ingest port 12345`).
    public var description: String
    /// What the capture's reader noticed while reading (a truncated last frame, …).
    public var warnings: [CaptureWarning]

    /// Traffic to re-send.
    public init(datagrams: [RecordedDatagram], description: String, warnings: [CaptureWarning] = []) {
        self.datagrams = datagrams
        self.description = description
        self.warnings = warnings
    }
}
