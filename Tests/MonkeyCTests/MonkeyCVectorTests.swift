import Testing
import MonkeyC

/// One published serialization vector (docs/connectiq-link.md, "Test vectors").
struct Vector: Sendable, CustomTestStringConvertible {
    let name: String
    let value: MonkeyCValue
    let bytes: [UInt8]
    var testDescription: String { name }

    /// Every vector of docs/connectiq-link.md: the first four made by Garmin's serializer, the
    /// containers computed from the layout rules.
    static let all: [Vector] = [
        Vector(name: "\"Hello, world!\"", value: "Hello, world!",
               bytes: hex("abcdabcd00000010000e48656c6c6f2c20776f726c642100da7ada7a000000050300000000")),
        Vector(name: "3", value: 3, bytes: hex("da7ada7a000000050100000003")),
        Vector(name: "null", value: nil, bytes: hex("da7ada7a0000000100")),
        Vector(name: "5000000000", value: 5_000_000_000, bytes: hex("da7ada7a000000090e000000012a05f200")),
        Vector(name: "[[1],[2]]", value: [[1], [2]],
               bytes: hex("da7ada7a0000001905000000020500000001050000000101000000010100000002")),
        Vector(name: "[\"hello pi\", 3.14159]", value: ["hello pi", 3.14159],
               bytes: hex("abcdabcd0000000b000968656c6c6f20706900da7ada7a00000013050000000203000000000f400921f9f01b866e")),
        Vector(name: "{\"a\": \"b\", \"b\": [1, 2]}", value: ["a": "b", "b": [1, 2]],
               bytes: hex("abcdabcd000000080002610000026200da7ada7a000000230b00000002030000000003000000040300000004050000000201000000010100000002")),
    ]
}

@Suite struct MonkeyCVectorTests {
    @Test(arguments: Vector.all)
    func encodeGivesPublishedBytes(_ vector: Vector) throws {
        #expect(hexString(try MonkeyCSerialization.encode(vector.value)) == hexString(vector.bytes))
    }

    @Test(arguments: Vector.all)
    func decodeGivesPublishedValue(_ vector: Vector) throws {
        #expect(try MonkeyCSerialization.decode(vector.bytes) == vector.value)
    }

    @Test(arguments: Vector.all)
    func everyTruncationFailsWithTypedError(_ vector: Vector) {
        for length in 0..<vector.bytes.count {
            #expect(throws: MonkeyCDecodingError.self, "prefix of \(length) bytes") {
                try MonkeyCSerialization.decode(vector.bytes[0..<length])
            }
        }
    }

    @Test(arguments: Vector.all)
    func zeroPaddingAfterObjectBlockIsAccepted(_ vector: Vector) throws {
        #expect(try MonkeyCSerialization.decode(vector.bytes + [0, 0, 0]) == vector.value)
    }

    @Test func dictionaryEncodesKeysInCanonicalOrderWhateverTheInputOrder() throws {
        let reversed: MonkeyCValue = ["b": [1, 2], "a": "b"]
        let published = Vector.all.last!
        #expect(try MonkeyCSerialization.encode(reversed) == published.bytes)
    }

    @Test func dictionaryDecodesPairsInTheOrderTheyWereWritten() throws {
        // {"b": [1, 2], "a": "b"} written with "b" first: offsets "b" 0, "a" 4.
        let bytes = hex("abcdabcd000000080002620000026100 da7ada7a00000023 0b00000002 0300000000 0500000002 0300000004 0300000000 0100000001 0100000002")
        let value = try MonkeyCSerialization.decode(bytes)
        #expect(value == ["b": [1, 2], "a": "b"])
    }

    @Test func repeatedStringsAreStoredOnceInFirstMetOrder() throws {
        let bytes = try MonkeyCSerialization.encode(["y", "x", "y"])
        // "y" at 0, "x" at 4; the third element refers back to offset 0.
        #expect(hexString(bytes) == hexString(hex(
            "abcdabcd00000008 0002790000027800 da7ada7a00000014 0500000003 0300000000 0300000004 0300000000")))
    }

    @Test func emptyStringIsAnEntryOfLengthOne() throws {
        let bytes = try MonkeyCSerialization.encode("")
        #expect(bytes == hex("abcdabcd00000003 000100 da7ada7a00000005 0300000000"))
        #expect(try MonkeyCSerialization.decode(bytes) == "")
    }

    @Test func everyScalarTypeHasItsTag() throws {
        let value: MonkeyCValue = [.bool(true), .float32(1.5), .char(0x41), .byteArray([1, 2]), .int64(-1)]
        let bytes = try MonkeyCSerialization.encode(value)
        #expect(hexString(bytes) == hexString(hex(
            "da7ada7a00000021 0500000005 0901 023fc00000 1300000041 140000000201 02 0effffffffffffffff")))
        #expect(try MonkeyCSerialization.decode(bytes) == value)
    }

    @Test func integersChooseInt32WhenTheyFit() {
        #expect(MonkeyCValue(Int(Int32.max)) == .int32(.max))
        #expect(MonkeyCValue(Int(Int32.min)) == .int32(.min))
        #expect(MonkeyCValue(Int(Int32.max) + 1) == .int64(Int64(Int32.max) + 1))
        #expect(MonkeyCValue(Int(Int32.min) - 1) == .int64(Int64(Int32.min) - 1))
    }

    @Test func floatingLiteralsAreDoubles() {
        let value: MonkeyCValue = 2.5
        #expect(value == .double(2.5))
        #expect(MonkeyCValue(2.5) == .double(2.5))
    }
}
