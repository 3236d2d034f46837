import Testing

@_spi(Benchmarks) @testable import IngestCore
import TetherTestSupport

// The parser's word-at-a-time scans, its base64 table and its entry-text cache are shortcuts:
// each test here pins a shortcut to the plain byte-by-byte answer.

/// The byte-by-byte definition of JSON whitespace.
private func isWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
}

/// A little-endian word with `byte` at `position` and `filler` everywhere else.
private func word(_ byte: UInt8, at position: Int, filler: UInt8) -> UInt64 {
    var bytes = [UInt8](repeating: filler, count: 8)
    bytes[position] = byte
    return bytes.enumerated().reduce(0) { $0 | UInt64($1.element) << (8 * UInt64($1.offset)) }
}

@Test(arguments: 0..<8)
func wordScanFindsTheFirstNonWhitespaceByteForEveryByteValue(position: Int) {
    for value in 0...255 {
        let byte = UInt8(value)
        let mask = SWAR.nonWhitespace(word(byte, at: position, filler: 0x20))
        let expected = isWhitespace(byte) ? nil : position
        let found = mask == 0 ? nil : mask.trailingZeroBitCount / 8
        #expect(found == expected, "byte 0x\(String(byte, radix: 16)) at \(position)")
    }
}

@Test(arguments: 0..<8)
func wordScanFindsTheFirstStringSpecialByteForEveryByteValue(position: Int) {
    for value in 0...255 {
        let byte = UInt8(value)
        let special = byte == 0x22 || byte == 0x5C || byte < 0x20
        // Filler bytes both below and above the byte under test, to catch a borrow that leaks down.
        for filler in [UInt8(ascii: "a"), 0x20, 0xFF] {
            let mask = SWAR.stringSpecial(word(byte, at: position, filler: filler))
            let found = mask == 0 ? nil : mask.trailingZeroBitCount / 8
            #expect(found == (special ? position : nil), "byte 0x\(String(byte, radix: 16)) at \(position), filler 0x\(String(filler, radix: 16))")
        }
    }
}

@Test func everyWhitespaceRunLengthParsesLikeCompactJSON() throws {
    let compact = floatMessage(time: "1.5", [("a", 1), ("bb", 2)])
    let expected = try compact.withUnsafeBytes { try MotionMessage.parse($0) }
    let kinds: [UInt8] = [0x20, 0x0A, 0x0D, 0x09]
    for run in 0...19 {
        let gap = (0..<run).map { kinds[$0 % kinds.count] }
        var spaced: [UInt8] = []
        for byte in compact {
            spaced.append(byte)
            if byte == UInt8(ascii: "{") || byte == UInt8(ascii: ",") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: "[") {
                spaced += gap
            }
        }
        spaced += gap
        let parsed = try spaced.withUnsafeBytes { try MotionMessage.parse($0) }
        #expect(parsed == expected, "whitespace run of \(run)")
    }
}

@Test func escapeAtEveryOffsetOfANameIsUnescaped() throws {
    for length in 0...20 {
        for offset in 0...length {
            var raw = String(repeating: "x", count: length)
            raw.insert(contentsOf: "\\n", at: raw.index(raw.startIndex, offsetBy: offset))
            let text = "{\"t\":\"1\",\"d\":[{\"n\":\"\(raw)\",\"t\":\"float64\",\"p\":\"\(Base64.encode(float64Bytes(1)))\"}]}"
            let message = try Array(text.utf8).withUnsafeBytes { try MotionMessage.parse($0) }
            var name = String(repeating: "x", count: length)
            name.insert("\n", at: name.index(name.startIndex, offsetBy: offset))
            guard case .data(_, let entries) = message else {
                Issue.record("not a data message")
                return
            }
            #expect(entries.map(\.name) == [name])
        }
    }
}

@Test func controlByteAtEveryOffsetOfAStringIsRefusedAtItsOffset() {
    for length in 0...20 {
        for offset in 0...length {
            var bytes = Array("{\"name\":\"".utf8)
            let stringStart = bytes.count
            bytes += [UInt8](repeating: UInt8(ascii: "y"), count: length)
            bytes.insert(0x01, at: stringStart + offset)
            bytes += Array("\"}".utf8)
            #expect(throws: MotionMessage.Rejection(
                reason: .notJSON,
                detail: "byte \(stringStart + offset): expected no control character inside a string (escape it), found byte 0x1")
            ) {
                try bytes.withUnsafeBytes { try MotionMessage.parse($0) }
            }
        }
    }
}

@Test func base64TableDecodesExactlyTheStandardAlphabet() {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    for value in 0...255 {
        let byte = UInt8(value)
        let quad = [byte, UInt8(ascii: "A"), UInt8(ascii: "A"), UInt8(ascii: "A")]
        let result = quad.withUnsafeBytes { Base64.decode($0) }
        if let index = alphabet.firstIndex(of: byte) {
            #expect((try? result.get()) == [UInt8(index << 2), 0, 0], "byte 0x\(String(byte, radix: 16))")
        } else {
            #expect((try? result.get()) == nil, "byte 0x\(String(byte, radix: 16))")
        }
    }
}

@Test func entryNamesThatChangeBetweenDatagramsAreNotTakenFromTheLastOne() {
    var core = IngestCore()
    let batches: [[(String, Double)]] = [
        [("v1/1/yaw", 1), ("v1/1/pitch", 2)],
        [("v1/1/yaw", 3), ("v1/1/pitch", 4)],
        [("v1/1/yaX", 5), ("v1/1/pitcX", 6)],
        [("yaw", 7), ("a-much-longer-name-than-before", 8), ("third", 9)],
        [("v1/1/yaw", 10)],
    ]
    for (i, batch) in batches.enumerated() {
        let events = core.receive(floatMessage(time: "\(i + 1)", batch), from: plugin, now: .milliseconds(i))
        #expect(points(events).map(\.name) == batch.map(\.0))
        #expect(points(events).map(\.type) == batch.map { _ in "float64" })
    }
}

@Test func entryTextCacheGivesTheDecodedStringForEverySlot() {
    var cache = EntryTextCache()
    let words = ["a", "", "float64", "string/json", "ünïcödé", "a", "b"]
    for round in 0..<3 {
        for (slot, word) in words.enumerated() {
            let text = Array(word.utf8).withUnsafeBytes { cache.string($0, slot: (slot + round) % 5) }
            #expect(text == word)
        }
    }
}

// MARK: The fast paths of DatagramParser against the general reader

/// What the general reader alone makes of a datagram: the reference for every fast path.
private func generalReading(_ bytes: [UInt8]) -> Result<MotionMessage, MotionMessage.Rejection> {
    var texts = EntryTextCache()
    return bytes.withUnsafeBytes { raw in
        do throws(MotionMessage.Rejection) {
            return .success(try MotionMessage.parseWithGeneralReader(raw, texts: &texts))
        } catch {
            return .failure(error)
        }
    }
}

/// What a parser that has seen the datagrams before (template, entry texts) makes of one.
private func reading(_ bytes: [UInt8], with parser: inout DatagramParser) -> Result<MotionMessage, MotionMessage.Rejection> {
    bytes.withUnsafeBytes { raw in
        do throws(MotionMessage.Rejection) {
            try parser.parse(raw)
            return .success(parser.output.message)
        } catch {
            return .failure(error)
        }
    }
}

/// Data datagrams laid out as the senders Tether knows lay them out: the sample plugin's
/// pretty-printing with its trailing comma, TetherBench's (`"n" : "…"`, no trailing comma),
/// compact JSON, and one with every payload kind.
private let fastPathSamples: [[UInt8]] = [
    sampleDataMessage(time: "1674790238.1234567", entries: [
        ("v1/1/yaw", "float64", float64Bytes(123.456)), ("v1/1/pitch", "float64", float64Bytes(-0.5)),
        ("v1/1/roll", "float64", float64Bytes(789.012)),
    ]),
    Array("{\n  \"t\" : \"1674790238.1000000\",\n  \"d\" : [\n    {\n      \"n\" : \"v1/1/x\",\n      \"t\" : \"float64\",\n      \"p\" : \"QF7dLxqfvnc=\"\n    },\n    {\n      \"n\" : \"v1/1/y\",\n      \"t\" : \"float64\",\n      \"p\" : \"QIioGJN0vGo=\"\n    }\n  ]\n}".utf8),
    floatMessage(time: "1.5", [("a", 1), ("bb", 2), ("ccc", 3)]),
    sampleDataMessage(time: "2", entries: [
        ("i", "int64", [0, 0, 0, 0, 0, 0, 0, 42]), ("v2", "vector_2d", float64Bytes(1.5) + float64Bytes(-2)),
        ("v3", "vector_3d", float64Bytes(1) + float64Bytes(2) + float64Bytes(3)), ("s", "string/nmea", Array("$GPGGA,1".utf8)),
        ("b", "bytes", [0xFF, 0x00, 0x7F]), ("e", "bytes", []), ("j", "jpeg", [1, 2, 3, 4, 5]),
    ]),
]

/// Bytes a mutation writes: JSON's structure, whitespace, escapes, base64 and time characters,
/// and bytes that are not ASCII or not UTF-8.
private let mutationBytes = Array(#"{}[]",:"\ /u0=A+Q.9-eEtdnp"#.utf8) + [0x0A, 0x0D, 0x09, 0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xA9, 0xFF]

/// Texts a mutation puts in place of a string's content: good and bad times, payloads and type
/// names, escapes, text that is not ASCII.
private let mutationStrings = [
    "", "=", "1", "1.", ".5", "1674790238.1234567", "1674790238.12345678901", "99999999999999999999", "1.5e3", "-1", " 1",
    "QF7dLxqfvnc=", "QF7dLxqfvnc", "QF7dLxqfvnc==", "QF7dLxqfvnd=", "QF7dLxqfv=c=", "QF7dLxqfvn=", "QF7dLxqfvn==", "AAAAAAAAACo=",
    "AAAAAAAAAAAAAAAA", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "AQID", "AQ==", "AQ=", "@@@@", "QF7d\\/xqfvnc=",
    "float64", "int64", "vector_2d", "vector_3d", "string", "string/json", "bytes", "Float64", "float64 ", "flöat64",
    "str\\u0069ng", "\\u0066loat64", "v1/1/yaw", "v1/1/y\\\"aw", "é", "😀", "a\\nb",
]

@Test(arguments: [21 as UInt64, 22, 23, 24])
func fastPathsAgreeWithTheGeneralReaderOnMutatedDatagrams(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    var parser = DatagramParser()
    var accepted = 0
    var base = fastPathSamples[0]
    for round in 0..<4_000 {
        // A sender keeps its layout; now and then another one takes over.
        if round % 10 == 0 { base = fastPathSamples.randomElement(using: &generator)! }
        var datagram = base
        // A third go through unchanged, so that the template is mostly one a sender would leave.
        if round % 3 != 0 {
            for _ in 0..<Int.random(in: 1...3, using: &generator) {
                guard !datagram.isEmpty else { break }
                let position = Int.random(in: 0..<datagram.count, using: &generator)
                switch Int.random(in: 0..<6, using: &generator) {
                case 0: datagram[position] = mutationBytes.randomElement(using: &generator)!
                case 1: datagram.remove(at: position)
                case 2: datagram.insert(mutationBytes.randomElement(using: &generator)!, at: position)
                case 3:
                    let end = min(datagram.count, position + Int.random(in: 1...12, using: &generator))
                    datagram.insert(contentsOf: datagram[position..<end], at: end)
                case 4: datagram.removeSubrange(position...)
                default:
                    // Another content for the string that starts at or after `position`.
                    guard let open = datagram[position...].firstIndex(of: UInt8(ascii: "\"")),
                          let close = datagram[(open + 1)...].firstIndex(of: UInt8(ascii: "\""))
                    else { break }
                    datagram.replaceSubrange((open + 1)..<close, with: Array(mutationStrings.randomElement(using: &generator)!.utf8))
                }
            }
        }
        let expected = generalReading(datagram)
        let got = reading(datagram, with: &parser)
        #expect(got == expected, "round \(round): \(String(decoding: datagram, as: UTF8.self).debugDescription)")
        if case .success = got { accepted += 1 }
    }
    // The comparison means something only if every path was taken, and often.
    #expect(parser.pathCounts.template > 500)
    #expect(parser.pathCounts.scanner > 100)
    #expect(parser.pathCounts.general > 500)
    #expect(accepted > 1_500)
}

@Test func templateFollowsEveryLayoutChangeAndEntryCount() {
    var parser = DatagramParser()
    var sequence: [[UInt8]] = []
    for count in [1, 2, 6, 3, 1, 6] {
        let values = (0..<count).map { ("v1/1/\($0)", Double($0) * 1.25) }
        sequence.append(floatMessage(time: "\(count).25", values))
        sequence.append(floatMessage(time: "\(count).5", values))
        sequence.append(sampleDataMessage(time: "\(count)", entries: values.map { ($0.0, "float64", float64Bytes($0.1)) }))
        sequence.append(sampleDataMessage(time: "\(count).000001", entries: values.map { ($0.0, "float64", float64Bytes($0.1 + 1)) }))
        sequence.append(bytes(#"{"name":"Plugin Sample"}"#))
    }
    for datagram in sequence + sequence {
        #expect(reading(datagram, with: &parser) == generalReading(datagram))
    }
    #expect(parser.pathCounts.template > 0)
    #expect(parser.pathCounts.scanner > 0)
}

@Test func timesAndPayloadsOfAnotherLengthThanTheLayoutsAreFoundByScanning() throws {
    var parser = DatagramParser()
    for time in ["1", "1674790238.1234567", "12", "1674790238.1", "1674790238.123456789123"] {
        for length in [0, 1, 20, 3, 200] {
            let datagram = sampleDataMessage(time: time, entries: [("v1/1/yaw", "float64", float64Bytes(2)), ("b", "bytes", Array(repeating: 7, count: length))])
            #expect(reading(datagram, with: &parser) == generalReading(datagram))
        }
    }
    #expect(parser.pathCounts.template > 10)
}

@Test func aNameOrTypeOtherThanTheLayoutsIsReadAgain() throws {
    // Names and types are part of a layout's fixed bytes: another one is another layout.
    var parser = DatagramParser()
    for name in ["a", "v1/1/yaw", "a-much-longer-name-than-the-template-had", "", "v1/1/yaX"] {
        for type in ["float64", "int64", "vendor/x"] {
            let datagram = sampleDataMessage(time: "1.5", entries: [(name, type, float64Bytes(2)), ("b", "bytes", [1, 2])])
            #expect(reading(datagram, with: &parser) == generalReading(datagram))
            #expect(reading(datagram, with: &parser) == generalReading(datagram))
        }
    }
    #expect(parser.pathCounts.template == 15)
    #expect(parser.pathCounts.scanner == 15)
}

@Test func interleavedLayoutsStayOnTheTemplatePath() {
    // A plugin that sends two or three kinds of message in turn (an IMU one, a GNSS one, …).
    var parser = DatagramParser()
    let kinds: [[(String, Double)]] = [
        [("imu/ax", 1), ("imu/ay", 2), ("imu/az", 3)],
        [("gnss/lat", 35.6), ("gnss/lon", 139.7)],
        [("battery", 0.5)],
    ]
    for round in 0..<300 {
        let values = kinds[round % kinds.count].map { ($0.0, $0.1 + Double(round)) }
        let datagram = floatMessage(time: "1700000000.\(round)", values)
        #expect(reading(datagram, with: &parser) == generalReading(datagram))
    }
    #expect(parser.pathCounts.scanner == kinds.count)
    #expect(parser.pathCounts.template == 300 - kinds.count)
}

@Test func moreInterleavedLayoutsThanTheTemplateKeepsAreStillReadRight() {
    var parser = DatagramParser()
    let layouts = ShapeTemplate.capacity + 1
    for round in 0..<100 {
        let datagram = floatMessage(time: "2.\(round)", (0...(round % layouts)).map { ("v\($0)", Double(round)) })
        #expect(reading(datagram, with: &parser) == generalReading(datagram))
    }
    #expect(parser.pathCounts.general == 0)
}

@Test(arguments: [31 as UInt64, 32])
func base64IntoABufferAgreesWithDecode(seed: UInt64) {
    var generator = SplitMix64(seed: seed)
    let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    for _ in 0..<20_000 {
        var text = (0..<(4 * Int.random(in: 0...6, using: &generator))).map { _ in characters.randomElement(using: &generator)! }
        if !text.isEmpty, Bool.random(using: &generator) {
            // Padding, sometimes with stray bits left, sometimes in the wrong place, sometimes a stray byte.
            for _ in 0..<Int.random(in: 1...2, using: &generator) {
                text[Int.random(in: max(0, text.count - 3)..<text.count, using: &generator)] = UInt8(ascii: "=")
            }
            if Int.random(in: 0..<4, using: &generator) == 0 {
                text[Int.random(in: 0..<text.count, using: &generator)] = mutationBytes.randomElement(using: &generator)!
            }
        }
        let expected = try? text.withUnsafeBytes { Base64.decode($0) }.get()
        var buffer = [UInt8](repeating: 0xAA, count: text.count / 4 * 3 + 1)
        let count = text.withUnsafeBytes { raw in buffer.withUnsafeMutableBytes { Base64.decode(raw, into: $0.baseAddress!) } }
        #expect(count.map { Array(buffer.prefix($0)) } == expected, "\(String(decoding: text, as: UTF8.self))")
        let word = text.withUnsafeBytes { Base64.decodeWord($0) }
        if text.count == 12, let expected, expected.count == 8 {
            #expect(word == expected.reduce(0) { $0 << 8 | UInt64($1) }, "\(String(decoding: text, as: UTF8.self))")
        } else {
            #expect(word == nil, "\(String(decoding: text, as: UTF8.self))")
        }
    }
}

@Test func payloadKindDecodesAsTheTypeNameDoes() throws {
    let payloads: [[UInt8]] = [[], [1], Array(repeating: 0x41, count: 8), Array(repeating: 0x42, count: 16), Array(repeating: 0x43, count: 24), [0xC3, 0x28]]
    for type in ["float64", "int64", "vector_2d", "vector_3d", "string", "string/json", "string/csv", "string/nmea", "bytes", "jpeg", "", "float6", "float644"] {
        let kind = Array(type.utf8).withUnsafeBytes { PayloadKind(typeName: $0) }
        for payload in payloads {
            let expected = try? DataValue.decode(type: type, payload: payload)
            let fast = payload.withUnsafeBytes { DataValue.decodeIfValid(kind: kind, payload: $0) }
            #expect(fast == expected, "\(type) \(payload)")
        }
    }
}
