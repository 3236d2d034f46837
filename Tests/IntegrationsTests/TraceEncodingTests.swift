@testable import IngestIntegration
import ReplayKit
import Testing

@testable import IngestCore
@testable import BehaviourTrace

// The byte writer behind `jsonLine()`, `TraceFile` and `JSONLiteral` must write exactly what the
// String reference writer below writes; baselines are compared byte for byte.

/// The String writer the byte writer replaced, kept here as an independent reference: the two must
/// agree byte for byte, because baselines are compared byte for byte.
private enum StringWriterOracle {
    static func appendValue(_ value: TraceValue, to out: inout String) {
        switch value {
        case .string(let s):
            appendString(s, to: &out)
        case .int(let i):
            out += String(i)
        case .double(let d):
            out += formatDouble(d)
        case .bool(let b):
            out += b ? "true" : "false"
        case .null:
            out += "null"
        case .array(let items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                appendValue(item, to: &out)
            }
            out += "]"
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted(by: TraceJSONWriter.keyOrder).enumerated() {
                if index > 0 { out += "," }
                appendString(key, to: &out)
                out += ":"
                if let member = members[key] { appendValue(member, to: &out) }
            }
            out += "}"
        }
    }

    /// Swift's `description` is the shortest text that reads back to the same Double, and it always
    /// carries a `.` or an exponent, so a double never re-reads as an integer. JSON has no NaN or
    /// infinity: those are written as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`.
    static func formatDouble(_ d: Double) -> String {
        if d.isNaN { return "\"NaN\"" }
        if d.isInfinite { return d < 0 ? "\"-Infinity\"" : "\"Infinity\"" }
        let text = d.description
        // Guard the int/double distinction even if a future description drops the fraction.
        if text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) { return text }
        return text + ".0"
    }

    private static let hexDigits: [Character] = Array("0123456789abcdef")

    /// RFC 8259 §7: escape `"`, `\` and U+0000–U+001F; everything else is written as UTF-8.
    static func appendString(_ s: String, to out: inout String) {
        out += "\""
        // Most strings need no escape: append them whole (much faster than scalar by scalar).
        if !s.utf8.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            out += s
            out += "\""
            return
        }
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    out += "\\u00"
                    out.append(hexDigits[Int(scalar.value >> 4)])
                    out.append(hexDigits[Int(scalar.value & 0xF)])
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}


/// A line as the `String` writer builds it: `t_ns`, `core`, `event`, then the fields by key.
private func stringWriterLine(_ event: TraceEvent) -> String {
    var out = "{\"t_ns\":\(event.timeNs),\"core\":"
    StringWriterOracle.appendString(event.core.text, to: &out)
    out += ",\"event\":"
    StringWriterOracle.appendString(event.event.text, to: &out)
    for key in event.fields.keys.sorted(by: TraceJSONWriter.keyOrder) where !TraceEvent.reservedKeys.contains(key) {
        out += ","
        StringWriterOracle.appendString(key, to: &out)
        out += ":"
        if let value = event.fields[key] { StringWriterOracle.appendValue(value, to: &out) }
    }
    return out + "}"
}

/// Deterministic doubles spread over every exponent, sign and both halves of the mantissa.
private func sampleDoubles() -> [Double] {
    var state: UInt64 = 0x9E37_79B9_7F4A_7C15
    var values: [Double] = [0, -0.0, 1, -1, 0.1, 1e-300, 5e-324, 1.7976931348623157e308, 123456789012345680, 1e16, 1e15, 44.999999925893206]
    for _ in 0..<20_000 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        let value = Double(bitPattern: state)
        if value.isFinite { values.append(value) }
        values.append(Double(Int64(bitPattern: state) >> 20) / 1024)
    }
    return values
}

@Test func byteWriterWritesDoublesAsTheStringWriterDoes() {
    for value in sampleDoubles() + [.nan, .infinity, -.infinity] {
        var bytes = TraceJSONBytes()
        bytes.appendDouble(value)
        #expect(String(decoding: bytes.bytes, as: UTF8.self) == StringWriterOracle.formatDouble(value), "\(value.bitPattern)")
    }
}

@Test func byteWriterWritesIntegersAsStringDoes() {
    let values: [Int64] = [0, 1, -1, 9, 10, -10, 99, 100, .max, .min, .max - 1, .min + 1, 1_763_769_600_000_286_900]
    for value in values {
        var bytes = TraceJSONBytes()
        bytes.appendInt(value)
        #expect(String(decoding: bytes.bytes, as: UTF8.self) == String(value))
    }
}

@Test func byteWriterEscapesStringsAsTheStringWriterDoes() {
    var strings = ["", "plain", "quote\"inside", "back\\slash", "tab\there", "nl\nand\rcr", "\u{08}\u{0C}", "ünïcödé 🎉", "\u{7F}"]
    strings += (0..<0x20).map { "a\(Character(Unicode.Scalar(UInt8($0))))b" }
    for s in strings {
        var bytes = TraceJSONBytes()
        bytes.appendString(s)
        var reference = ""
        StringWriterOracle.appendString(s, to: &reference)
        #expect(String(decoding: bytes.bytes, as: UTF8.self) == reference)
    }
}

@Test func jsonLineOfNestedValuesMatchesTheStringWriter() {
    let event = TraceEvent(timeNs: -5, core: "session", event: "x\"y", fields: [
        "z": .array([.int(1), .double(2), .string("s"), .bool(true), .bool(false), .null, .array([]), .object([:])]),
        "a": .object(["b": .object(["d": .int(.min), "c": .double(-0.0)]), "a": .string("é")]),
        "core": .string("shadowed"), "t_ns": .int(7), "event": .null,
        "É": .int(1), "E": .int(2), "e\u{301}": .int(3),
    ])
    #expect(event.jsonLine() == stringWriterLine(event))
}

@Test func traceFileBytesAreEachJSONLineWithANewline() {
    let source = DatagramSource(address: "10.0.0.1", port: 9)
    let events: [TraceEvent] = [
        TraceEvent(timeNs: 0, core: "ingest", event: "stream_start", fields: ["source": .string("a:1")]),
        IngestAdapter.traceEvent(.dataPoint(DataPoint(source: source, timeNs: 12, name: "n", type: "vector_3d",
                                                      value: .vector3D(1, -2.5, 1e-9), payload: [])), timeNs: 3),
        IngestAdapter.traceEvent(.legacyV1(source, timeNs: nil, payload: [0, 0xAB, 0xFF]), timeNs: 4),
        TraceEvent(timeNs: 9, core: "ingest", event: "summary"),
    ]
    let expected = events.map { stringWriterLine($0) + "\n" }.joined()
    #expect(TraceFile.encode(events) == expected)
    #expect(TraceFile.encodeBytes(events) == Array(expected.utf8))
}

@Test func sourceTextFollowsTheSourceFromEventToEvent() {
    let a = DatagramSource(address: "127.0.0.1", port: 1)
    let b = DatagramSource(address: "::1", port: 1)
    let c = DatagramSource(address: "127.0.0.1", port: 2)
    var cache = IngestAdapter.TraceEventCache()
    for source in [a, a, b, c, a, b, b] {
        let event = IngestAdapter.traceEvent(.streamStarted(source), timeNs: 1, cache: &cache)
        #expect(event == IngestAdapter.traceEvent(.streamStarted(source), timeNs: 1))
        #expect(event.fields["source"] == .string(source.description))
    }
}

@Test func inlineFieldsEqualFieldsBuiltByKeyAndStayIndependent() {
    let source = DatagramSource(address: "10.1.2.3", port: 4)
    var cache = IngestAdapter.TraceEventCache()
    let values: [DataValue] = [.float64(1.5), .int64(-3), .vector2D(1, 2), .vector3D(1, 2, 3), .string("s"), .bytes([1, 2])]
    var made: [TraceEvent] = []
    for (i, value) in values.enumerated() {
        let point = DataPoint(source: source, timeNs: Int64(i), name: "n\(i)", type: "t\(i)", value: value, payload: [])
        let event = IngestAdapter.traceEvent(.dataPoint(point), timeNs: 7, cache: &cache)
        var expected: [String: TraceValue] = ["source": .string("10.1.2.3:4"), "name": .string("n\(i)"),
                                              "type": .string("t\(i)"), "time_ns": .int(Int64(i))]
        switch value {
        case .float64(let x): expected["value"] = .double(x)
        case .int64(let x): expected["value"] = .int(x)
        case .vector2D(let x, let y): expected["value"] = .array([.double(x), .double(y)])
        case .vector3D(let x, let y, let z): expected["value"] = .array([.double(x), .double(y), .double(z)])
        case .string(let x): expected["value"] = .string(x)
        case .bytes: expected["bytes"] = .string("0102")
        }
        #expect(event.fields == expected)
        made.append(event)
    }
    let chunk = IngestChunk(source: source, streamStartNs: 0, sequence: 9, dataPoints: [], byteCount: 12)
    let chunkEvent = IngestAdapter.traceEvent(.chunkReady(chunk), timeNs: 8, cache: &cache)
    #expect(chunkEvent.fields == ["source": .string("10.1.2.3:4"), "sequence": .int(9), "points": .int(0), "bytes": .int(12)])
    #expect(chunkEvent.jsonLine() == dictionaryForm(chunkEvent).jsonLine())
    // Making one event must not change an event made before it.
    #expect(made[0].fields["name"] == .string("n0"))
}

@Test func hexOfPayloadBytesIsLowercaseTwoDigitsEach() {
    #expect(IngestAdapter.hex([]) == "")
    #expect(IngestAdapter.hex([0x00, 0x0F, 0xA0, 0xFF]) == "000fa0ff")
    #expect(IngestAdapter.hex(Array(0...255)) == (0...255).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined())
}

@Test func ingestAdapterDatapointsEncodeAsTheirDictionaries() {
    let source = DatagramSource(address: "10.0.0.1", port: 9)
    let values: [DataValue] = [.float64(-0.0), .float64(44.999999925893206), .int64(.min), .vector2D(1, 2),
                               .vector3D(1e-300, 5, 6), .string("a\"b"), .bytes([0xAB])]
    for (i, value) in values.enumerated() {
        let point = DataPoint(source: source, timeNs: Int64(i), name: "v1/\(i)", type: "t", value: value, payload: [])
        let event = IngestAdapter.traceEvent(.dataPoint(point), timeNs: 3)
        #expect(event.jsonLine() == dictionaryForm(event).jsonLine())
    }
}

private func dictionaryForm(_ event: TraceEvent) -> TraceEvent {
    var copy = event
    copy.storage = .dictionary(event.fields)
    return copy
}
