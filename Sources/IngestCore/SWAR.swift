/// Byte tests on eight bytes at once (a little-endian word: byte 0 in the low bits). Each returns
/// a mask with bit 7 of every byte set where the test holds; callers want the lowest such byte,
/// `trailingZeroBitCount / 8`.
enum SWAR {
    private static let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    private static let high: UInt64 = 0x8080_8080_8080_8080

    /// Bytes equal to zero, exactly (no false positives in any byte).
    @inline(__always)
    static func zeroBytes(_ t: UInt64) -> UInt64 {
        ~(((t & low7) &+ low7) | t | low7)
    }

    @inline(__always)
    static func equalBytes(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        zeroBytes(word ^ (UInt64(byte) &* 0x0101_0101_0101_0101))
    }

    /// Bytes that are not JSON whitespace (space, LF, CR, tab), exactly.
    @inline(__always)
    static func nonWhitespace(_ word: UInt64) -> UInt64 {
        let whitespace = equalBytes(word, 0x20) | equalBytes(word, 0x0A) | equalBytes(word, 0x0D) | equalBytes(word, 0x09)
        return ~whitespace & high
    }

    /// Bytes that are `"`, `\` or below 0x20. The below-0x20 test can flag a byte above a true
    /// hit (a borrow), never below one, so the lowest flagged byte is exact.
    @inline(__always)
    static func stringSpecial(_ word: UInt64) -> UInt64 {
        let control = (word &- 0x2020_2020_2020_2020) & ~word & high
        return equalBytes(word, 0x22) | equalBytes(word, 0x5C) | control
    }
}

extension SWAR {
    /// Whether `count` bytes at `a` and at `b` are the same: a word at a time, the last word
    /// overlapping the one before it rather than a byte loop for the tail.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        if count >= 8 {
            var k = 0
            while k &+ 8 < count {
                guard a.loadUnaligned(fromByteOffset: k, as: UInt64.self) == b.loadUnaligned(fromByteOffset: k, as: UInt64.self) else {
                    return false
                }
                k &+= 8
            }
            return a.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self) == b.loadUnaligned(fromByteOffset: count &- 8, as: UInt64.self)
        }
        if count >= 4 {
            return a.loadUnaligned(as: UInt32.self) == b.loadUnaligned(as: UInt32.self)
                && a.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self) == b.loadUnaligned(fromByteOffset: count &- 4, as: UInt32.self)
        }
        var k = 0
        while k < count {
            guard a.load(fromByteOffset: k, as: UInt8.self) == b.load(fromByteOffset: k, as: UInt8.self) else { return false }
            k &+= 1
        }
        return true
    }

    /// Bytes that end a string without escapes on the fast paths: `"`, `\`, below 0x20, or
    /// 0x80 and above (not ASCII: the general reader validates UTF-8). The lowest flagged byte is
    /// exact, as for ``stringSpecial(_:)``.
    @inline(__always)
    static func plainStringEnd(_ word: UInt64) -> UInt64 {
        stringSpecial(word) | (word & high)
    }
}
