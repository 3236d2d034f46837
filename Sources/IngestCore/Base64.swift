/// Strict base64 (RFC 4648 §4: standard alphabet, `=` padding) for iSCP payloads.
///
/// Strict means canonical: the length is a multiple of 4, `=` appears only as the last one or two
/// characters, and the bits after the last byte are zero. Anything else is refused rather than
/// guessed at, because a sender that emits it is broken and the count of refusals should show it.
enum Base64 {
    /// Why a payload is not strict base64, with the offset inside the payload text.
    struct Failure: Error, Sendable, Hashable {
        var offset: Int
        var expected: String
    }

    /// 0...63 for alphabet bytes, 0xFF for everything else (including `=`). Written out as a
    /// literal so the compiler lays it down as constant data: a table built by a closure is a lazy
    /// global whose initialisation check every payload paid for, and comparisons instead of a
    /// lookup mispredict on random payload text.
    private static let table: [UInt8] = [
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3E, 0xFF, 0xFF, 0xFF, 0x3F,
        0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x3B, 0x3C, 0x3D, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E,
        0x0F, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0x1A, 0x1B, 0x1C, 0x1D, 0x1E, 0x1F, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28,
        0x29, 0x2A, 0x2B, 0x2C, 0x2D, 0x2E, 0x2F, 0x30, 0x31, 0x32, 0x33, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
        0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
    ]

    @inline(__always)
    static func sextet(_ byte: UInt8, _ table: UnsafeBufferPointer<UInt8>) -> UInt8 {
        table[Int(byte)]
    }

    /// Decodes `text` (the characters between the JSON quotes, after unescaping).
    static func decode(_ text: UnsafeRawBufferPointer) -> Result<[UInt8], Failure> {
        let count = text.count
        if count == 0 { return .success([]) }
        guard count % 4 == 0 else {
            return .failure(Failure(offset: count, expected: "a length that is a multiple of 4 (got \(count) characters); pad with '='"))
        }
        var padding = 0
        if text[count - 1] == UInt8(ascii: "=") {
            padding = text[count - 2] == UInt8(ascii: "=") ? 2 : 1
        }
        let outputCount = count / 4 * 3 - padding
        return table.withUnsafeBufferPointer { table -> Result<[UInt8], Failure> in
            var failure: Failure?
            let output = [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
                var o = 0
                var i = 0
                // Every quad but the last is four alphabet characters.
                let fullEnd = count - 4
                while i < fullEnd {
                    let a = sextet(text[i], table), b = sextet(text[i + 1], table)
                    let c = sextet(text[i + 2], table), d = sextet(text[i + 3], table)
                    if (a | b | c | d) & 0xC0 != 0 {
                        let bad = [a, b, c, d].firstIndex { $0 == 0xFF } ?? 0
                        failure = Failure(offset: i + bad, expected: "a base64 alphabet character (A-Z a-z 0-9 + /)")
                        initialized = o
                        return
                    }
                    out[o] = a << 2 | b >> 4
                    out[o + 1] = b << 4 | c >> 2
                    out[o + 2] = c << 6 | d
                    o += 3
                    i += 4
                }
                // The last quad may end in one or two '='.
                let a = sextet(text[i], table), b = sextet(text[i + 1], table)
                let c = padding == 2 ? 0 : sextet(text[i + 2], table)
                let d = padding >= 1 ? 0 : sextet(text[i + 3], table)
                if (a | b | c | d) & 0xC0 != 0 {
                    let bad = [a, b, c, d].firstIndex { $0 == 0xFF } ?? 0
                    failure = Failure(offset: i + bad, expected: "a base64 alphabet character ('=' only as the last one or two characters)")
                    initialized = o
                    return
                }
                let leftoverIsZero = padding == 2 ? (b & 0x0F == 0) : padding == 1 ? (c & 0x03 == 0) : true
                guard leftoverIsZero else {
                    failure = Failure(offset: count - padding - 1, expected: "zero bits after the last byte (non-canonical base64)")
                    initialized = o
                    return
                }
                out[o] = a << 2 | b >> 4
                o += 1
                if padding < 2 { out[o] = b << 4 | c >> 2; o += 1 }
                if padding < 1 { out[o] = c << 6 | d; o += 1 }
                initialized = o
            }
            if let failure { return .failure(failure) }
            return .success(output)
        }
    }

    /// Decodes `text` into `out`, which has room for `text.count / 4 * 3` bytes: the fast
    /// paths' form, with no allocation. Returns the number of bytes written, or nil exactly where
    /// ``decode(_:)`` fails (the general reader then says why).
    @inline(__always)
    static func decode(_ text: UnsafeRawBufferPointer, into out: UnsafeMutableRawPointer) -> Int? {
        let count = text.count
        if count == 0 { return 0 }
        guard count & 3 == 0 else { return nil }
        var padding = 0
        if text[count &- 1] == UInt8(ascii: "=") {
            padding = text[count &- 2] == UInt8(ascii: "=") ? 2 : 1
        }
        return table.withUnsafeBufferPointer { table -> Int? in
            var o = 0
            var i = 0
            let fullEnd = count &- 4
            while i < fullEnd {
                let a = table[Int(text[i])], b = table[Int(text[i &+ 1])]
                let c = table[Int(text[i &+ 2])], d = table[Int(text[i &+ 3])]
                guard (a | b | c | d) & 0xC0 == 0 else { return nil }
                let v = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                out.storeBytes(of: UInt8(truncatingIfNeeded: v >> 16), toByteOffset: o, as: UInt8.self)
                out.storeBytes(of: UInt8(truncatingIfNeeded: v >> 8), toByteOffset: o &+ 1, as: UInt8.self)
                out.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: o &+ 2, as: UInt8.self)
                o &+= 3
                i &+= 4
            }
            let a = table[Int(text[i])], b = table[Int(text[i &+ 1])]
            let c = padding == 2 ? 0 : table[Int(text[i &+ 2])]
            let d = padding >= 1 ? 0 : table[Int(text[i &+ 3])]
            guard (a | b | c | d) & 0xC0 == 0 else { return nil }
            let leftoverIsZero = padding == 2 ? (b & 0x0F == 0) : padding == 1 ? (c & 0x03 == 0) : true
            guard leftoverIsZero else { return nil }
            out.storeBytes(of: a << 2 | b >> 4, toByteOffset: o, as: UInt8.self)
            o &+= 1
            if padding < 2 { out.storeBytes(of: b << 4 | c >> 2, toByteOffset: o, as: UInt8.self); o &+= 1 }
            if padding < 1 { out.storeBytes(of: c << 6 | d, toByteOffset: o, as: UInt8.self); o &+= 1 }
            return o
        }
    }

    /// The eight bytes of a 12-character payload (`xxxxxxxxxxx=`, the base64 of a float64 or
    /// int64), big-endian, as one word: decoded in registers, so the value is not read back from
    /// bytes just stored one at a time. Nil for any other text, including every one that
    /// ``decode(_:)`` refuses; for the rest the same bytes as ``decode(_:)``.
    @inline(__always)
    static func decodeWord(_ text: UnsafeRawBufferPointer) -> UInt64? {
        guard text.count == 12, text[11] == UInt8(ascii: "="), text[10] != UInt8(ascii: "=") else { return nil }
        return table.withUnsafeBufferPointer { table -> UInt64? in
            @inline(__always) func s(_ i: Int) -> UInt32 { UInt32(table[Int(text[i])]) }
            let a = s(0), b = s(1), c = s(2), d = s(3), e = s(4), f = s(5)
            let g = s(6), h = s(7), i = s(8), j = s(9), k = s(10)
            // 0xFF marks a byte outside the alphabet; the last character's two low bits are the
            // ones after the eighth byte, zero in canonical base64.
            guard (a | b | c | d | e | f | g | h | i | j | k) & 0xC0 == 0, k & 0x03 == 0 else { return nil }
            let high = a << 18 | b << 12 | c << 6 | d
            let middle = e << 18 | f << 12 | g << 6 | h
            let low = i << 10 | j << 4 | k >> 2
            return UInt64(high) << 40 | UInt64(middle) << 16 | UInt64(low)
        }
    }

    /// Encodes bytes as padded standard base64; used by tests and by the plugin simulator.
    static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= bytes.count {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], alphabet[Int(v & 63)]]
            i += 3
        }
        let rest = bytes.count - i
        if rest == 1 {
            let v = UInt32(bytes[i]) << 16
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
        } else if rest == 2 {
            let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
            out += [alphabet[Int(v >> 18 & 63)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], UInt8(ascii: "=")]
        }
        return String(decoding: out, as: UTF8.self)
    }
}
