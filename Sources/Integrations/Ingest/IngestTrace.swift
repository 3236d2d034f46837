import BehaviourTrace
import ReplayKit

/// The ingest core's names in the behaviour trace (docs/trace-format.md, "ingest"), declared once:
/// the adapter writes a `datapoint` for nearly every event of a plugin replay, and an interned
/// name copies as one word where a string was a reference count per copy.
public enum IngestTrace {
    /// The trace's core name.
    public static let core: TraceName = "ingest"
    /// One sample of one entry.
    public static let dataPoint: TraceName = "datapoint"
    /// A datagram the core refused, with the reason.
    public static let rejected: TraceName = "rejected"
    /// The plugin's name message.
    public static let pluginName: TraceName = "plugin_name"
    /// The plugin's end message.
    public static let endMessage: TraceName = "end_message"
    /// A datagram of the first protocol version.
    public static let legacyV1: TraceName = "legacy_v1"
    /// A source's first datagram.
    public static let streamStart: TraceName = "stream_start"
    /// A source ended (end message or silence).
    public static let streamEnd: TraceName = "stream_end"
    /// The rate the core learned for a source.
    public static let rate: TraceName = "rate"
    /// A sample time earlier than the one before.
    public static let timeBackwards: TraceName = "time_backwards"
    /// A pause longer than the learned period allows.
    public static let gap: TraceName = "gap"
    /// A chunk of points handed to storage.
    public static let chunk: TraceName = "chunk"
    /// A frame that did not dissect as UDP.
    public static let frameMalformed: TraceName = "frame_malformed"

    /// Every event the adapter writes (``IngestIntegration/emittedEvents``).
    public static let events: [TraceName] = [
        dataPoint, rejected, pluginName, endMessage, legacyV1, streamStart, streamEnd, rate,
        timeBackwards, gap, chunk, frameMalformed, .summary,
    ]
}
