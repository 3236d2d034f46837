import Testing

@testable import BehaviourTrace

/// Expects `event`, whose fields a ``TracePayload`` holds, to be in every way the event with the
/// same fields held in `dictionary` (what a baseline read back from its file holds): its fields
/// by key and whole, its line, its digest, equality both ways and hashing; and its line reads back
/// as an equal event. A payload writing a key out of order, or a value unlike the dictionary's,
/// fails here before it could change a committed baseline.
func expectPayloadEventIsItsDictionary(_ event: TraceEvent, _ dictionary: [String: TraceValue],
                                       sourceLocation: SourceLocation = #_sourceLocation) throws {
    let reference = TraceEvent(timeNs: event.timeNs, core: event.core, event: event.event, fields: dictionary)
    #expect(event.fields == dictionary, sourceLocation: sourceLocation)
    for key in dictionary.keys + ["absent", "t_ns"] { #expect(event.field(key) == dictionary[key], sourceLocation: sourceLocation) }
    #expect(event.jsonLine() == reference.jsonLine(), sourceLocation: sourceLocation)
    #expect(event.stableDigest == reference.stableDigest, sourceLocation: sourceLocation)
    #expect(event == reference && reference == event, sourceLocation: sourceLocation)
    #expect(event.hashValue == reference.hashValue, sourceLocation: sourceLocation)
    let parsed = try TraceEvent(jsonLine: event.jsonLine(), lineNumber: 1, file: "\(event.event.text).jsonl")
    #expect(parsed == event, sourceLocation: sourceLocation)
}
