import JSONBytes
import Testing
import TetherTestSupport

@Suite struct UTF8ValidationTests {
    @Test(arguments: [
        ([0xC0, 0xAF], 0),                 // overlong '/'
        ([0xE0, 0x80, 0xAF], 0),           // overlong, three bytes
        ([0xED, 0xA0, 0x80], 0),           // a surrogate
        ([0xF4, 0x90, 0x80, 0x80], 0),     // above U+10FFFF
        ([0x41, 0xE2, 0x82], 1),           // truncated at the end
        ([0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0xFF], 9), // past the eight-byte ASCII step
    ] as [([UInt8], Int)])
    func namesTheFirstByteOfAnIllFormedSequence(bytes: [UInt8], offset: Int) {
        #expect(bytes.withUnsafeBytes { UTF8Validation.firstInvalidOffset($0) } == offset)
        #expect(!UTF8Validation.isValid(bytes))
    }

    @Test func agreesWithTheStandardLibraryOnRandomBytes() {
        var random = SplitMix64(seed: 3629)
        for _ in 0..<20_000 {
            let count = Int(random.next() % 12)
            // Mostly high bytes, so multi-byte sequences (valid and not) are common.
            let bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: random.next() | (random.next() % 3 == 0 ? 0 : 0x80)) }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            #expect(UTF8Validation.isValid(bytes) == expected, "\(bytes)")
        }
    }
}

@Suite struct JSONHexDigitTests {
    @Test func readsEveryHexDigitInEitherCaseAndNothingElse() {
        for byte in UInt8.min...UInt8.max {
            let expected = UInt8(String(UnicodeScalar(byte)), radix: 16)
            #expect(JSONHexDigit.value(byte) == expected, "byte \(byte)")
        }
    }
}

@Suite struct JSONStringEscapingTests {
    @Test func escapesQuotesBackslashesAndControlsOnly() {
        #expect(JSONStringEscaping.quoted("a\"b\\c\n\t\u{01}/é") == #""a\"b\\c\n\t\u0001/é""#)
    }
}
