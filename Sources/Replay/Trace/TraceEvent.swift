/// A JSON value inside a trace event. Objects keep their keys sorted when written, so a trace is
/// byte-identical for identical behaviour.
public enum TraceValue: Sendable, Hashable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case array([TraceValue])
    case object([String: TraceValue])
}

/// One line of a behaviour trace: what a core did, at which virtual instant.
///
/// The trace format is public (see docs/trace-format.md): every line is a JSON object with at
/// least `t_ns` (virtual nanoseconds since the capture's first frame), `core` (`ingest`,
/// `messaging`, `session`) and `event`; the other keys depend on the event.
public struct TraceEvent: Sendable, Hashable {
    /// Virtual nanoseconds since the capture's first frame.
    public var timeNs: Int64
    /// Which core produced it.
    public var core: String
    /// The event name, e.g. `datapoint`, `rejected`, `stream_start`.
    public var event: String
    /// Every other key of the line.
    public var fields: [String: TraceValue]

    public init(timeNs: Int64, core: String, event: String, fields: [String: TraceValue] = [:]) {
        self.timeNs = timeNs
        self.core = core
        self.event = event
        self.fields = fields
    }
}
