import Testing

@testable import IngestCore

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
