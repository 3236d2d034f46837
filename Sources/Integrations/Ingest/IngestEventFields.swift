import BehaviourTrace
import IngestCore

/// The fields of an `ingest` stream event (`plugin_name`, `end_message`, `legacy_v1`,
/// `rejected`, `stream_start`, `stream_end`, `rate`, `time_backwards`, `gap`), held as
/// IngestCore's own event and its source's text rather than a dictionary; a data point and a
/// chunk, written far more often, have their own inline fields (``DataPointFields``,
/// ``ChunkFields``).
///
/// The line is the one docs/trace-format.md lists, unchanged: ``forEachField(_:)`` gives the
/// fields in key order. Two events are equal when they write the same fields: a rate is written
/// rounded to the millihertz, so two rates that round alike are the same event, as their lines are.
struct IngestEventFields: TracePayloadComparedByWrittenFields {
    /// The core's event: any case but `dataPoint` and `chunkReady`.
    let event: IngestEvent
    /// The source's text (`127.0.0.1:50000`), formatted once per source by the adapter's cache.
    let source: String

    /// Every field, keys in ascending order (each case lists its keys sorted).
    func forEachField(_ body: (String, TraceValue) -> Void) {
        let source = TraceValue.string(self.source)
        switch event {
        case .pluginName(_, let name):
            body("name", .string(name))
            body("source", source)
        case .endMessage, .streamStarted:
            body("source", source)
        case let .legacyV1(_, timeNs, payload):
            body("bytes", .string(IngestAdapter.hex(payload)))
            body("source", source)
            if let timeNs { body("time_ns", .int(timeNs)) }
        case let .rejected(_, reason, detail):
            body("detail", .string(detail))
            body("reason", .string(reason.rawValue))
            body("source", source)
        case let .streamEnded(_, cause):
            body("cause", .string(cause.rawValue))
            body("source", source)
        case let .rateLearned(_, hertz):
            body("hz", .double(IngestAdapter.roundedToMillis(hertz)))
            body("source", source)
        case let .timeWentBackwards(_, previousNs, currentNs):
            body("current_ns", .int(currentNs))
            body("previous_ns", .int(previousNs))
            body("source", source)
        case let .gap(_, gapNs, expectedPeriodNs):
            body("expected_period_ns", .int(expectedPeriodNs))
            body("gap_ns", .int(gapNs))
            body("source", source)
        case .dataPoint, .chunkReady:
            // Never held here: the adapter writes them with their own inline fields.
            break
        }
    }
}
