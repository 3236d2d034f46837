import BehaviourTrace
import IngestCore

/// The fields of an `ingest` stream event (`plugin_name`, `end_message`, `legacy_v1`,
/// `rejected`, `stream_start`, `stream_end`, `rate`, `time_backwards`, `gap`), held as
/// IngestCore's own values and its source's text rather than a dictionary; a data point and a
/// chunk, written far more often, have their own inline fields (``DataPointFields``,
/// ``ChunkFields``).
///
/// The line is the one docs/trace-format.md lists, unchanged: ``forEachField(_:)`` gives the
/// fields in key order. Two events are equal when they write the same fields: a rate is written
/// rounded to the millihertz, so two rates that round alike are the same event, as their lines are.
struct IngestEventFields: TracePayloadComparedByWrittenFields {
    /// A stream event's own values, without its source (held as text beside it): the core's
    /// ``IngestEvent`` cases but `dataPoint` and `chunkReady`, so a value of this type cannot
    /// hold an event it does not write.
    enum Event: Sendable, Hashable {
        case pluginName(String)
        case endMessage
        case legacyV1(timeNs: Int64?, payload: [UInt8])
        case rejected(RejectionReason, detail: String)
        case streamStarted
        case streamEnded(StreamEndCause)
        case rateLearned(hertz: Double)
        case timeWentBackwards(previousNs: Int64, currentNs: Int64)
        case gap(gapNs: Int64, expectedPeriodNs: Int64)
    }

    /// The event.
    let event: Event
    /// The source's text (`127.0.0.1:50000`), formatted once per source by the adapter's cache.
    let source: String

    /// Every field, keys in ascending order (each case lists its keys sorted).
    func forEachField(_ body: (String, TraceValue) -> Void) {
        let source = TraceValue.string(self.source)
        switch event {
        case .pluginName(let name):
            body("name", .string(name))
            body("source", source)
        case .endMessage, .streamStarted:
            body("source", source)
        case let .legacyV1(timeNs, payload):
            body("bytes", .string(IngestAdapter.hex(payload)))
            body("source", source)
            if let timeNs { body("time_ns", .int(timeNs)) }
        case let .rejected(reason, detail):
            body("detail", .string(detail))
            body("reason", .string(reason.rawValue))
            body("source", source)
        case let .streamEnded(cause):
            body("cause", .string(cause.rawValue))
            body("source", source)
        case let .rateLearned(hertz):
            body("hz", .double(IngestAdapter.roundedToMillis(hertz)))
            body("source", source)
        case let .timeWentBackwards(previousNs, currentNs):
            body("current_ns", .int(currentNs))
            body("previous_ns", .int(previousNs))
            body("source", source)
        case let .gap(gapNs, expectedPeriodNs):
            body("expected_period_ns", .int(expectedPeriodNs))
            body("gap_ns", .int(gapNs))
            body("source", source)
        }
    }
}
