/// UTF-8 validation (Unicode §3.9, table 3-7) with an ASCII fast path: JSON datagrams are
/// nearly all ASCII.
enum UTF8Check {
    /// The offset of the first byte that starts an ill-formed sequence, or nil.
    static func firstInvalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var i = 0
        let n = bytes.count
        while i < n {
            // Eight ASCII bytes at a time.
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
}
