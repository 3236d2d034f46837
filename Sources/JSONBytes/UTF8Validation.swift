/// UTF-8 validation (Unicode §3.9, table 3-7; RFC 3629: no overlong forms, no surrogates, nothing
/// above U+10FFFF), shared by Tether's JSON readers. An ASCII fast path reads eight bytes at a
/// time: plugin datagrams, traces and container files are nearly all ASCII.
public enum UTF8Validation {
    /// The offset of the first byte that starts an ill-formed sequence, or `nil` when all of
    /// `bytes` is well-formed UTF-8.
    @inlinable
    public static func firstInvalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var i = 0
        let n = bytes.count
        while i < n {
            if i &+ 8 <= n, bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i &+= 8
                continue
            }
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return i
            }
            guard i + length <= n else { return i }
            let second = bytes[i + 1]
            guard second >= low, second <= high else { return i }
            for k in 2..<max(length, 2) where (bytes[i + k] & 0xC0) != 0x80 {
                return i
            }
            i += length
        }
        return nil
    }

    /// Whether all of `bytes` is well-formed UTF-8.
    @inlinable
    public static func isValid(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBytes { firstInvalidOffset($0) == nil }
    }
}

/// Hex digits as JSON's `\uXXXX` escapes write them, shared by Tether's JSON readers.
public enum JSONHexDigit {
    /// The value of one hex digit (`0`–`9`, `a`–`f`, `A`–`F`), or `nil` for any other byte.
    @inlinable
    public static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
