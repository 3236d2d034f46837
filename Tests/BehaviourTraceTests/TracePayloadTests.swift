import Testing
import TetherTestSupport

@testable import BehaviourTrace

// A `TracePayload` holds an event's fields in a module's own type. Everything observable must be
// as if they were a dictionary: `fields`, `field(_:)`, equality, hashing, the stable digest and the
// JSON line, byte for byte.

/// A payload with a string, an integer, a value of any kind and a field present only sometimes.
private struct SamplePayload: TracePayload {
    var device: String
    var count: Int64
    var extra: TraceValue
    var flagged: Bool

    var fieldCount: Int { flagged ? 4 : 3 }

    func field(_ key: String) -> TraceValue? {
        switch key {
        case "count": return .int(count)
        case "device": return .string(device)
        case "extra": return extra
        case "flagged": return flagged ? .bool(true) : nil
        default: return nil
        }
    }

    func forEachField(_ body: (String, TraceValue) -> Void) {
        body("count", .int(count))
        body("device", .string(device))
        body("extra", extra)
        if flagged { body("flagged", .bool(true)) }
    }

    var dictionaryForm: [String: TraceValue] {
        var fields: [String: TraceValue] = ["count": .int(count), "device": .string(device), "extra": extra]
        if flagged { fields["flagged"] = .bool(true) }
        return fields
    }
}

private func randomPayload(_ random: inout SplitMix64) -> SamplePayload {
    let texts = ["fenix", "", "\"", "é😀", "a\nb", "\u{01}"]
    let values: [TraceValue] = [.null, .bool(false), .int(-3), .double(0.25), .string("x"), .array([.int(1), .null]),
                                .object(["b": .int(2), "a": .string("z")])]
    return SamplePayload(device: texts[Int(random.next() % UInt64(texts.count))], count: Int64(bitPattern: random.next() % 5),
                         extra: values[Int(random.next() % UInt64(values.count))], flagged: random.chance(0.5))
}

@Test func payloadEventReadsEncodesDigestsAndComparesAsItsDictionary() {
    var random = SplitMix64(seed: 0x7E7E_0042)
    for _ in 0..<1_000 {
        let payload = randomPayload(&random)
        let timeNs = Int64(random.next() % 1_000)
        let event = TraceEvent(timeNs: timeNs, core: "messaging", event: "frame_emitted", payload: payload)
        let reference = TraceEvent(timeNs: timeNs, core: "messaging", event: "frame_emitted", fields: payload.dictionaryForm)
        #expect(event.fields == payload.dictionaryForm)
        for key in ["count", "device", "extra", "flagged", "t_ns", "core", ""] {
            #expect(event.field(key) == payload.dictionaryForm[key])
        }
        #expect(event.jsonLine() == reference.jsonLine())
        #expect(TraceFile.encodeBytes([event, event]) == TraceFile.encodeBytes([reference, reference]))
        #expect(event.stableDigest == reference.stableDigest)
        #expect(event == reference)
        #expect(reference == event)
        #expect(event.hashValue == reference.hashValue)
        #expect(event.hasSameFields(as: reference))
    }
}

@Test func payloadEventsWithDifferentFieldsDiffer() {
    let a = SamplePayload(device: "fenix", count: 1, extra: .null, flagged: false)
    var b = a
    b.flagged = true
    var c = a
    c.count = 2
    let event = TraceEvent(timeNs: 0, core: "c", event: "e", payload: a)
    #expect(event != TraceEvent(timeNs: 0, core: "c", event: "e", payload: b))
    #expect(event != TraceEvent(timeNs: 0, core: "c", event: "e", payload: c))
    #expect(event != TraceEvent(timeNs: 0, core: "c", event: "e", fields: c.dictionaryForm))
    #expect(event != TraceEvent(timeNs: 0, core: "c", event: "e", fields: ["count": .int(1), "device": .string("fenix"), "extra": .int(0)]))
    #expect(event.stableDigest != TraceEvent(timeNs: 0, core: "c", event: "e", payload: b).stableDigest)
}

@Test func payloadEventLineParsesBackToAnEqualEvent() throws {
    let payload = SamplePayload(device: "fenix \"7\"", count: 12, extra: .object(["k": .array([.bool(true)])]), flagged: true)
    let event = TraceEvent(timeNs: 9, core: "messaging", event: "frame_matched", payload: payload)
    let parsed = try TraceEvent(jsonLine: event.jsonLine(), lineNumber: 1, file: "t")
    #expect(parsed == event)
    #expect(parsed.jsonLine() == event.jsonLine())
}
