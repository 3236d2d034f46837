import Testing
import MonkeyC
import TetherTestSupport

@Suite struct MonkeyCRoundTripTests {
    @Test func randomValuesSurviveARoundTrip() throws {
        var generator = ValueGenerator(rng: SplitMix64(seed: 0x4D43_0001))
        for _ in 0..<2_000 {
            let value = generator.value()
            let bytes = try MonkeyCSerialization.encode(value)
            #expect(try MonkeyCSerialization.decode(bytes) == value.sortingDictionaryKeys(), "\(value)")
        }
    }

    @Test func encodingIsIndependentOfDictionaryPairOrder() throws {
        var generator = ValueGenerator(rng: SplitMix64(seed: 0x4D43_0002))
        for _ in 0..<300 {
            let pairs = (0..<6).map { _ in MonkeyCPair(generator.value(depth: 3), generator.value(depth: 3)) }
            // Distinct keys only: equal keys keep their given order, which is the caller's.
            var unique: [MonkeyCPair] = []
            for pair in pairs where !unique.contains(where: { $0.key == pair.key }) { unique.append(pair) }
            var shuffled = unique
            var rng = SplitMix64(seed: UInt64(unique.count))
            shuffled.shuffle(using: &rng)
            #expect(try MonkeyCSerialization.encode(.dictionary(unique)) == MonkeyCSerialization.encode(.dictionary(shuffled)))
        }
    }

    @Test func nanAndSignedZeroKeepTheirBits() throws {
        let value: MonkeyCValue = [.double(-.nan), .double(-0.0), .float32(.signalingNaN), .float32(0)]
        let decoded = try MonkeyCSerialization.decode(try MonkeyCSerialization.encode(value))
        #expect(decoded == value)
        #expect(MonkeyCValue.double(0.0) != .double(-0.0))
    }

    @Test func stringsCompareByTheirBytesNotByCanonicalEquivalence() throws {
        let precomposed = MonkeyCValue.string("\u{E9}")
        let decomposed = MonkeyCValue.string("e\u{301}")
        #expect(precomposed != decomposed)
        let bytes = try MonkeyCSerialization.encode([precomposed, decomposed])
        #expect(try MonkeyCSerialization.decode(bytes) == [precomposed, decomposed])
    }

    @Test func nestingAtTheLimitRoundTrips() throws {
        var value: MonkeyCValue = 1
        for _ in 0..<MonkeyCSerialization.maximumNestingDepth { value = [value] }
        #expect(try MonkeyCSerialization.decode(try MonkeyCSerialization.encode(value)) == value)
    }

    @Test func encodingRefusesNestingPastTheLimit() {
        var value: MonkeyCValue = 1
        for _ in 0...MonkeyCSerialization.maximumNestingDepth { value = [value] }
        #expect(throws: MonkeyCEncodingError.nestingTooDeep(limit: MonkeyCSerialization.maximumNestingDepth)) {
            try MonkeyCSerialization.encode(value)
        }
    }

    @Test func encodingRefusesAStringTooLongForItsLengthField() throws {
        #expect(throws: MonkeyCEncodingError.stringTooLong(utf8Count: 65_535)) {
            try MonkeyCSerialization.encode(.string(String(repeating: "a", count: 65_535)))
        }
        let longest = MonkeyCValue.string(String(repeating: "a", count: 65_534))
        #expect(try MonkeyCSerialization.decode(try MonkeyCSerialization.encode(longest)) == longest)
    }
}

@Suite struct MonkeyCDecodingErrorTests {
    func problem(_ bytes: [UInt8], maximumDepth: Int = MonkeyCSerialization.maximumNestingDepth) -> MonkeyCDecodingError? {
        do {
            _ = try MonkeyCSerialization.decode(bytes, maximumDepth: maximumDepth)
            return nil
        } catch {
            return error
        }
    }

    @Test func badMagicNamesTheBytesFound() {
        #expect(problem(hex("deadbeef00000001 00")) == MonkeyCDecodingError(offset: 0, problem: .badMagic(found: [0xDE, 0xAD, 0xBE, 0xEF])))
    }

    @Test func badMagicAfterTheStringBlockIsReportedThere() {
        #expect(problem(hex("abcdabcd00000003 000100 12345678")) == MonkeyCDecodingError(offset: 11, problem: .badMagic(found: [0x12, 0x34, 0x56, 0x78])))
    }

    @Test func unknownTagIsReportedAtItsOffset() {
        #expect(problem(hex("da7ada7a00000001 07")) == MonkeyCDecodingError(offset: 8, problem: .unknownTag(7)))
    }

    @Test func hugeArrayCountIsRefusedWithoutAllocating() {
        #expect(problem(hex("da7ada7a00000005 05ffffffff")) == MonkeyCDecodingError(offset: 9, problem: .countExceedsData(count: 0xFFFF_FFFF, bytesLeft: 0)))
    }

    @Test func hugeDictionaryCountIsRefused() {
        #expect(problem(hex("da7ada7a00000007 0b7fffffff 0000")) == MonkeyCDecodingError(offset: 9, problem: .countExceedsData(count: 0x7FFF_FFFF, bytesLeft: 2)))
    }

    @Test func hugeByteArrayLengthIsRefused() {
        #expect(problem(hex("da7ada7a00000006 14ffffffff 00")) == MonkeyCDecodingError(
            offset: 13, problem: .truncated(expected: "the bytes of a byte array", needed: 0xFFFF_FFFF, available: 1)))
    }

    @Test func blockLengthLongerThanTheInputIsTruncation() {
        #expect(problem(hex("da7ada7a00000100 00")) == MonkeyCDecodingError(
            offset: 8, problem: .truncated(expected: "the object block", needed: 256, available: 1)))
    }

    @Test func stringWithoutStringBlockIsRefused() {
        #expect(problem(hex("da7ada7a00000005 0300000000")) == MonkeyCDecodingError(offset: 9, problem: .missingStringBlock))
    }

    @Test func stringOffsetOutsideTheBlockIsRefused() {
        #expect(problem(hex("abcdabcd00000003 000100 da7ada7a00000005 0300000009")) == MonkeyCDecodingError(
            offset: 20, problem: .badStringOffset(9, blockLength: 3)))
    }

    @Test func stringEntryRunningPastTheBlockIsTruncation() {
        #expect(problem(hex("abcdabcd00000003 000500 da7ada7a00000005 0300000000")) == MonkeyCDecodingError(
            offset: 10, problem: .truncated(expected: "a string's bytes and terminator", needed: 5, available: 1)))
    }

    @Test func stringWithoutTerminatorIsRefused() {
        #expect(problem(hex("abcdabcd00000004 00026162 da7ada7a00000005 0300000000")) == MonkeyCDecodingError(
            offset: 11, problem: .missingStringTerminator(found: 0x62)))
    }

    @Test func zeroStringLengthIsRefused() {
        #expect(problem(hex("abcdabcd00000003 000000 da7ada7a00000005 0300000000")) == MonkeyCDecodingError(offset: 8, problem: .zeroStringLength))
    }

    @Test func invalidUTF8IsRefused() {
        #expect(problem(hex("abcdabcd00000004 0002ff00 da7ada7a00000005 0300000000")) == MonkeyCDecodingError(offset: 10, problem: .invalidUTF8))
    }

    @Test func nestingPastTheLimitIsRefused() {
        // [[[null]]] with a limit of 1: the second array's element would sit at depth 2.
        let bytes = hex("da7ada7a0000000b 0500000001 0500000001 00")
        #expect(problem(bytes, maximumDepth: 2) == nil)
        #expect(problem(bytes, maximumDepth: 1) == MonkeyCDecodingError(offset: 13, problem: .nestingTooDeep(limit: 1)))
    }

    @Test func deeplyNestedInputIsRefusedAtTheDefaultLimit() {
        let depth = 10_000
        var objects: [UInt8] = []
        for _ in 0..<depth { objects += [0x05, 0, 0, 0, 1] }
        objects.append(0x00)
        let length = UInt32(objects.count)
        let bytes = MonkeyCSerialization.objectBlockMagic + [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)] + objects
        #expect(problem(bytes)?.problem == .nestingTooDeep(limit: MonkeyCSerialization.maximumNestingDepth))
    }

    @Test func objectsEndingBeforeTheBlockLengthAreRefused() {
        #expect(problem(hex("da7ada7a00000002 0000")) == MonkeyCDecodingError(offset: 9, problem: .objectBlockLengthMismatch(declared: 2, unused: 1)))
    }

    @Test func nonZeroBytesAfterTheObjectBlockAreRefused() {
        #expect(problem(hex("da7ada7a00000001 00 0001")) == MonkeyCDecodingError(offset: 10, problem: .trailingBytes(count: 2)))
    }

    @Test func emptyInputIsTruncation() {
        #expect(problem([]) == MonkeyCDecodingError(
            offset: 0, problem: .truncated(expected: "a block magic (ab cd ab cd or da 7a da 7a)", needed: 4, available: 0)))
    }

    @Test func errorDescriptionNamesOffsetAndExpectation() {
        let description = problem(hex("da7ada7a00000001 07"))?.description ?? ""
        #expect(description.contains("byte 8"))
        #expect(description.contains("expected a type tag"))
    }
}

@Suite struct MonkeyCGarbageTests {
    /// Random bytes, most of them behind a valid magic so the decoder gets past the first check.
    @Test func randomBytesNeverTrap() {
        var rng = SplitMix64(seed: 0x6A7B_0003)
        var decoded = 0
        for round in 0..<20_000 {
            let length = Int.random(in: 0..<48, using: &rng)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &rng) }
            if round % 4 != 0 {
                let objectLength = UInt32(bytes.count)
                bytes = MonkeyCSerialization.objectBlockMagic
                    + [0, 0, UInt8(objectLength >> 8), UInt8(objectLength & 0xFF)] + bytes
            }
            // A tag byte from the known set most of the time.
            if bytes.count > 8, round % 2 == 0 {
                let tags: [UInt8] = [0x00, 0x01, 0x02, 0x03, 0x05, 0x09, 0x0B, 0x0E, 0x0F, 0x13, 0x14]
                bytes[8] = tags[Int.random(in: 0..<tags.count, using: &rng)]
            }
            if (try? MonkeyCSerialization.decode(bytes)) != nil { decoded += 1 }
        }
        #expect(decoded > 0, "some random inputs should be valid values")
    }

    /// Valid messages with one to three bytes changed: a value or a typed error, never a trap.
    @Test func mutatedMessagesNeverTrap() throws {
        var generator = ValueGenerator(rng: SplitMix64(seed: 0x6A7B_0004))
        var rng = SplitMix64(seed: 0x6A7B_0005)
        for _ in 0..<3_000 {
            var bytes = try MonkeyCSerialization.encode(generator.value())
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                bytes[Int.random(in: 0..<bytes.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
            }
            do {
                let value = try MonkeyCSerialization.decode(bytes)
                // Whatever decoded must serialize again.
                _ = try MonkeyCSerialization.encode(value)
            } catch let error as MonkeyCDecodingError {
                #expect(error.offset >= 0 && error.offset <= bytes.count)
            }
        }
    }
}

@Suite struct MonkeyCOrderAndTextTests {
    @Test func typesOrderByRankThenValue() {
        let ordered: [MonkeyCValue] = [
            nil, false, true, .int32(-5), .int32(3), .int64(-10), .float32(-.infinity), .float32(1),
            .double(-0.0), .double(0.0), .double(.nan), .char(1), "a", "b", "ba", .byteArray([]), .byteArray([0]),
            [], [1], [1, 2], [:], ["a": 1],
        ]
        for (index, value) in ordered.enumerated() {
            for later in ordered[(index + 1)...] {
                #expect(MonkeyCValue.canonicallyPrecedes(value, later), "\(value) < \(later)")
                #expect(!MonkeyCValue.canonicallyPrecedes(later, value), "not \(later) < \(value)")
            }
            #expect(!MonkeyCValue.canonicallyPrecedes(value, value))
        }
    }

    @Test func descriptionIsJSONLikeWithMonkeyCSuffixes() {
        let value: MonkeyCValue = [
            "text": "a\"b\n", "n": [1, .int64(5_000_000_000), .float32(3.5), 2.0, .double(.infinity)],
            "c": .char(0x41), "bytes": .byteArray([0x01, 0xFF]), "nothing": nil, "flag": true,
        ]
        #expect(value.description
            == #"{"text": "a\"b\n", "n": [1, 5000000000l, 3.5f, 2.0, inf], "c": 'A', "bytes": [0x01, 0xff]b, "nothing": null, "flag": true}"#)
    }

    @Test func nonPrintableCharIsEscaped() {
        #expect(MonkeyCValue.char(0x1F600).description == #"'\u{1F600}'"#)
        #expect(MonkeyCValue.char(0xD800).description == #"'\u{D800}'"#)
    }
}
