import Testing
@testable import IngestCore

/// Parsing and validation of single datagrams: vectors, accepted forms, every rejection.
@Suite struct MotionMessageTests {
    struct Vector: Sendable, CustomTestStringConvertible {
        var base64: String
        var type: String
        var bytes: [UInt8]
        var value: DataValue
        var testDescription: String { "\(type) \(base64)" }
    }

    /// The vectors published in the Motion plugin sample and docs/motion-plugin-udp.md.
    static let publishedVectors: [Vector] = [
        Vector(base64: "QF7dLxqfvnc=", type: "float64", bytes: [0x40, 0x5E, 0xDD, 0x2F, 0x1A, 0x9F, 0xBE, 0x77], value: .float64(123.456)),
        Vector(base64: "QIioGJN0vGo=", type: "float64", bytes: float64Bytes(789.012), value: .float64(789.012)),
        Vector(base64: "AAAAAAAAACo=", type: "int64", bytes: [0, 0, 0, 0, 0, 0, 0, 42], value: .int64(42)),
    ]

    @Test(arguments: publishedVectors)
    func publishedVectorDecodesToItsValue(vector: Vector) {
        var core = IngestCore()
        let datagram = bytes(#"{"t":"1674790238.1234567","d":[{"n":"v1/1/x","t":"\#(vector.type)","p":"\#(vector.base64)"}]}"#)
        let events = core.receive(datagram, from: plugin, now: .zero)
        let expected = DataPoint(source: plugin, timeNs: 1_674_790_238_123_456_700, name: "v1/1/x", type: vector.type,
                                 value: vector.value, payload: vector.bytes)
        #expect(events == [.streamStarted(plugin), .dataPoint(expected)])
    }

    @Test(arguments: publishedVectors)
    func publishedVectorEncodesFromItsBytes(vector: Vector) {
        #expect(Base64.encode(vector.bytes) == vector.base64)
    }

    struct Rejected: Sendable, CustomTestStringConvertible {
        var reason: RejectionReason
        var datagram: [UInt8]
        var label: String
        var testDescription: String { "\(reason.rawValue): \(label)" }
        init(_ reason: RejectionReason, _ label: String, _ datagram: [UInt8]) {
            self.reason = reason
            self.label = label
            self.datagram = datagram
        }
        init(_ reason: RejectionReason, _ text: String) {
            self.init(reason, text, Array(text.utf8))
        }
    }

    static let rejectedDatagrams: [Rejected] = [
        Rejected(.oversize, "9217 bytes", bytes(#"{"name":"x"}"#) + [UInt8](repeating: 0x20, count: 9217 - 12)),
        Rejected(.notUTF8, "0xFF inside a string", bytes(#"{"name":""#) + [0xFF] + bytes(#""}"#)),
        Rejected(.notUTF8, "truncated sequence", bytes(#"{"name":""#) + [0xE2, 0x82] + bytes(#""}"#)),
        Rejected(.notUTF8, "encoded surrogate", bytes(#"{"name":""#) + [0xED, 0xA0, 0x80] + bytes(#""}"#)),
        Rejected(.notUTF8, "string payload not UTF-8",
                 bytes(#"{"t":"1","d":[{"n":"s","t":"string","p":"\#(Base64.encode([0x61, 0xC3]))"}]}"#)),
        Rejected(.notJSON, "empty datagram", []),
        Rejected(.notJSON, #"{"name":"x""#),
        Rejected(.notJSON, #"{"name" "x"}"#),
        Rejected(.notJSON, #"{,}"#),
        Rejected(.notJSON, #"{"name":"x",,}"#),
        Rejected(.notJSON, #"{"name":'x'}"#),
        Rejected(.notJSON, #"{"name":"x"} trailing"#),
        Rejected(.notJSON, #"{"name":"a\qb"}"#),
        Rejected(.notJSON, #"{"name":"\ud800"}"#),
        Rejected(.notJSON, #"{"x":01,"name":"a"}"#),
        Rejected(.notJSON, #"{"x":[1,,2],"name":"a"}"#),
        Rejected(.notJSON, #"{"name":"a","name":"b"}"#),
        Rejected(.notJSON, "control character in a string", bytes("{\"name\":\"a\u{01}b\"}")),
        Rejected(.notJSON, "nesting 40 deep", bytes("{\"x\":" + String(repeating: "[", count: 40) + String(repeating: "]", count: 40) + ",\"name\":\"a\"}")),
        // The document's own example: the comma after the entry's "t" member is missing.
        Rejected(.notJSON, "{\n  \"t\": \"1674790238.1\",\n  \"d\": [\n    {\n      \"n\": \"v1/1/x\",\n      \"t\": \"float64\"\n      \"p\": \"QF7dLxqfvnc=\"\n    },\n  ],\n}"),
        Rejected(.missingField, #"{"d":[{"n":"v1/1/x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.missingField, #"{"t":"1","d":[{"n":"v1/1/x","t":"float64"}]}"#),
        Rejected(.missingField, #"{"t":"1","d":[{"t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.missingField, #"{"t":"1","d":[]}"#),
        Rejected(.wrongFieldType, #"{"t":1674790238.1,"d":[{"n":"v1/1/x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.wrongFieldType, #"{"t":"1","d":[{"n":7,"t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.wrongFieldType, #"{"t":"1","d":["QF7dLxqfvnc="]}"#),
        Rejected(.wrongFieldType, #"{"t":"1","d":{"n":"v1/1/x"}}"#),
        Rejected(.wrongFieldType, #"{"name":null}"#),
        Rejected(.wrongFieldType, #"{"end":true}"#),
        Rejected(.wrongFieldType, #"{"end":"false"}"#),
        Rejected(.badBase64, #"{"t":"1","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnc"}]}"#),
        Rejected(.badBase64, #"{"t":"1","d":[{"n":"x","t":"float64","p":"QF7dLxq fvnc="}]}"#),
        Rejected(.badBase64, #"{"t":"1","d":[{"n":"x","t":"float64","p":"QF7d=xqfvnc="}]}"#),
        Rejected(.badBase64, "non-canonical padding bits", bytes(#"{"t":"1","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnd="}]}"#)),
        Rejected(.badBase64, "URL-safe alphabet", bytes(#"{"t":"1","d":[{"n":"x","t":"bytes","p":"-_-_"}]}"#)),
        Rejected(.payloadLength, #"{"t":"1","d":[{"n":"x","t":"float64","p":"AAAAAA=="}]}"#),
        Rejected(.payloadLength, #"{"t":"1","d":[{"n":"x","t":"int64","p":"AAAAAAAAAAAA"}]}"#),
        Rejected(.payloadLength, "vector_3d of 16 bytes", bytes(#"{"t":"1","d":[{"n":"x","t":"vector_3d","p":"\#(Base64.encode([UInt8](repeating: 0, count: 16)))"}]}"#)),
        Rejected(.payloadLength, "vector_2d of 24 bytes", bytes(#"{"t":"1","d":[{"n":"x","t":"vector_2d","p":"\#(Base64.encode([UInt8](repeating: 0, count: 24)))"}]}"#)),
        Rejected(.badTime, #"{"t":"1674790238.12a","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.badTime, #"{"t":"-1","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.badTime, #"{"t":"1.6747902381234567e+09","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.badTime, #"{"t":"","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.badTime, #"{"t":"1674790238.","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.badTime, #"{"t":"99999999999","d":[{"n":"x","t":"float64","p":"QF7dLxqfvnc="}]}"#),
        Rejected(.unknownMessage, #"{"hello":"world"}"#),
        Rejected(.unknownMessage, #"[1,2,3]"#),
        Rejected(.unknownMessage, #""just a string""#),
        Rejected(.unknownMessage, #"{"name":"a","end":"true"}"#),
    ]

    @Test(arguments: rejectedDatagrams)
    func datagramIsRejectedWithItsReason(example: Rejected) {
        var core = IngestCore()
        let events = core.receive(example.datagram, from: plugin, now: .zero)
        #expect(rejections(events) == [example.reason])
        #expect(events.count == 1, "a rejected datagram starts no stream and yields nothing else")
        #expect(core.counters == IngestCounters(datagrams: 1, rejectedByReason: [example.reason: 1]))
        #expect(core.nextDeadline == nil)
    }

    @Test func everyRejectionReasonHasAnExample() {
        #expect(Set(Self.rejectedDatagrams.map(\.reason)) == Set(RejectionReason.allCases))
    }

    @Test func rejectionDetailNamesTheByteOffset() {
        var core = IngestCore()
        let events = core.receive(bytes(#"{"name" "x"}"#), from: plugin, now: .zero)
        #expect(events == [.rejected(plugin, .notJSON, detail: "byte 8: expected ':' after a member name, found '\"'")])
    }

    @Test func datagramOfExactlyTheLimitIsAccepted() {
        var core = IngestCore()
        let datagram = bytes(#"{"name":"x"}"#) + [UInt8](repeating: 0x20, count: 9216 - 12)
        #expect(datagram.count == 9216)
        let events = core.receive(datagram, from: plugin, now: .zero)
        #expect(events == [.streamStarted(plugin), .pluginName(plugin, "x")])
    }

    @Test func trailingCommasAndWhitespaceAreAccepted() {
        var core = IngestCore()
        let datagram = bytes(" \r\n\t{ \"t\" : \"2\" , \"d\" : [ { \"n\" : \"a\" , \"t\" : \"int64\" , \"p\" : \"AAAAAAAAACo=\" , } , ] , } \n")
        let events = core.receive(datagram, from: plugin, now: .zero)
        #expect(points(events) == [DataPoint(source: plugin, timeNs: 2_000_000_000, name: "a", type: "int64", value: .int64(42), payload: [0, 0, 0, 0, 0, 0, 0, 42])])
    }

    @Test func prettyPrintedSampleMessageIsAccepted() {
        var core = IngestCore()
        let datagram = sampleDataMessage(time: "1674790238.1234567", entries: [
            ("v1/1/x", "float64", float64Bytes(123.456)),
            ("v1/1/y", "float64", float64Bytes(789.012)),
        ])
        let events = core.receive(datagram, from: plugin, now: .zero)
        #expect(points(events).map(\.value) == [.float64(123.456), .float64(789.012)])
        #expect(points(events).map(\.name) == ["v1/1/x", "v1/1/y"])
        #expect(core.counters.accepted == 1)
    }

    @Test func escapedStringsAreUnescaped() {
        var core = IngestCore()
        // JSONSerialization escapes '/' as "\/", also inside base64.
        let datagram = bytes(#"{"t":"1","d":[{"n":"v1\/1\/\u00e9\ud83d\ude00","t":"float64","p":"QF7dLxqfvnc="},{"n":"b","t":"bytes","p":"\/\/8="}]}"#)
        let events = core.receive(datagram, from: plugin, now: .zero)
        #expect(points(events).map(\.name) == ["v1/1/é😀", "b"])
        #expect(points(events).map(\.value) == [.float64(123.456), .bytes([0xFF, 0xFF])])
    }

    @Test func unknownMembersAreIgnored() {
        var core = IngestCore()
        let datagram = bytes(#"{"v":2,"extra":{"a":[true,false,null,-1.5e3]},"t":"1","d":[{"n":"a","q":[],"t":"int64","p":"AAAAAAAAACo="}]}"#)
        let events = core.receive(datagram, from: plugin, now: .zero)
        #expect(points(events).map(\.value) == [.int64(42)])
    }

    @Test func legacyV1MessageIsRecognised() {
        var core = IngestCore()
        let withTime = core.receive(bytes(#"{"t":"1.5","d":"AAEC"}"#), from: plugin, now: .zero)
        let withoutTime = core.receive(bytes(#"{"d":"AAEC"}"#), from: plugin, now: ms(1))
        #expect(withTime == [.streamStarted(plugin), .legacyV1(plugin, timeNs: 1_500_000_000, payload: [0, 1, 2])])
        #expect(withoutTime == [.legacyV1(plugin, timeNs: nil, payload: [0, 1, 2])])
        #expect(core.counters.legacyV1Messages == 2)
        #expect(core.counters.dataPoints == 0)
    }

    @Test(arguments: ["cbor", "bool", "jpeg", "my/own/type", "bytes"])
    func typeWithoutPublicLayoutIsKeptOpaque(type: String) {
        var core = IngestCore()
        let payload: [UInt8] = [1, 2, 3, 0xFF, 0]
        let datagram = bytes(#"{"t":"1","d":[{"n":"blob","t":"\#(type)","p":"\#(Base64.encode(payload))"}]}"#)
        let events = core.receive(datagram, from: plugin, now: .zero)
        #expect(points(events) == [DataPoint(source: plugin, timeNs: 1_000_000_000, name: "blob", type: type, value: .bytes(payload), payload: payload)])
    }

    @Test func vectorsAndTextTypesAreDecoded() throws {
        let vector2 = float64Bytes(1.5) + float64Bytes(-2)
        let vector3 = float64Bytes(1) + float64Bytes(2) + float64Bytes(3)
        #expect(try DataValue.decode(type: "vector_2d", payload: vector2) == .vector2D(1.5, -2))
        #expect(try DataValue.decode(type: "vector_3d", payload: vector3) == .vector3D(1, 2, 3))
        for type in ["string", "string/json", "string/csv", "string/nmea"] {
            #expect(try DataValue.decode(type: type, payload: Array("$GPGGA,é".utf8)) == .string("$GPGGA,é"))
        }
        #expect(try DataValue.decode(type: "int64", payload: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFE]) == .int64(-2))
    }

    @Test func payloadLengthErrorNamesTypeAndLength() {
        #expect(throws: PayloadDecodingError(type: "float64", length: 4, reason: .payloadLength, expected: "exactly 8 bytes")) {
            try DataValue.decode(type: "float64", payload: [1, 2, 3, 4])
        }
    }

    struct TimeExample: Sendable, CustomTestStringConvertible {
        var text: String
        var nanoseconds: Int64
        var testDescription: String { text }
    }

    @Test(arguments: [
        TimeExample(text: "1674790238.1234567", nanoseconds: 1_674_790_238_123_456_700),
        TimeExample(text: "1674790238.123456789999", nanoseconds: 1_674_790_238_123_456_789),
        TimeExample(text: "1674790238", nanoseconds: 1_674_790_238_000_000_000),
        TimeExample(text: "0.000000001", nanoseconds: 1),
        TimeExample(text: "0009223372036.854775807", nanoseconds: Int64.max),
    ])
    func sampleTimeIsParsedExactly(example: TimeExample) {
        let result = Array(example.text.utf8).withUnsafeBytes { SampleTime.parseNanoseconds($0) }
        #expect(result == .success(example.nanoseconds))
    }

    @Test func sampleTimePastInt64IsRefused() {
        let result = Array("9223372036.854775808".utf8).withUnsafeBytes { SampleTime.parseNanoseconds($0) }
        #expect(throws: SampleTime.Failure.self) { try result.get() }
    }

    @Test func oneBadEntryRejectsTheWholeDatagram() {
        var core = IngestCore()
        let datagram = bytes(#"{"t":"1","d":[{"n":"good","t":"float64","p":"QF7dLxqfvnc="},{"n":"bad","t":"float64","p":"AAAA"}]}"#)
        let events = core.receive(datagram, from: plugin, now: .zero)
        #expect(rejections(events) == [.payloadLength])
        #expect(points(events).isEmpty)
        #expect(core.counters.dataPoints == 0)
    }
}
