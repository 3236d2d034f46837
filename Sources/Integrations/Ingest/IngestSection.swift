import ReplayKit
import BehaviourTrace
import CaptureSet

/// IngestCore settings a capture set (or the command line) changes from the core's defaults.
/// `nil` keeps the default.
public struct IngestOverrides: Codable, Sendable, Equatable {
    /// A stream with no datagram for this long ends (`stream_end` with cause idle).
    public var idleTimeoutMs: Int?
    /// Buffered data points are handed on at least this often.
    public var flushIntervalMs: Int?
    /// Buffered data points are handed on once they reach this many payload bytes.
    public var flushBytes: Int?
    /// When set, IngestCore is fed the datagrams to this UDP port on every interface, whatever
    /// the interfaces' `ingest_port` say (`--ingest-port`).
    public var port: UInt16? = nil

    /// Overrides; all `nil` means the core's defaults.
    public init(idleTimeoutMs: Int? = nil, flushIntervalMs: Int? = nil, flushBytes: Int? = nil, port: UInt16? = nil) {
        self.port = port
        self.idleTimeoutMs = idleTimeoutMs
        self.flushIntervalMs = flushIntervalMs
        self.flushBytes = flushBytes
    }

    /// These overrides with every field that `other` sets taken from `other`.
    public func overridden(by other: IngestOverrides?) -> IngestOverrides {
        guard let other else { return self }
        return IngestOverrides(
            idleTimeoutMs: other.idleTimeoutMs ?? idleTimeoutMs,
            flushIntervalMs: other.flushIntervalMs ?? flushIntervalMs,
            flushBytes: other.flushBytes ?? flushBytes,
            port: other.port ?? port
        )
    }

    /// `true` when no field is set.
    public var isEmpty: Bool { idleTimeoutMs == nil && flushIntervalMs == nil && flushBytes == nil && port == nil }

    enum CodingKeys: String, CodingKey {
        case idleTimeoutMs = "idle_timeout_ms"
        case flushIntervalMs = "flush_interval_ms"
        case flushBytes = "flush_bytes"
        case port
    }
}
