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

    /// 0...63 for alphabet bytes, 0xFF for everything else (including `=`).
    private static let table: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        for (value, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(value) }
        return table
    }()

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
                    let a = table[Int(text[i])], b = table[Int(text[i + 1])]
                    let c = table[Int(text[i + 2])], d = table[Int(text[i + 3])]
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
                let a = table[Int(text[i])], b = table[Int(text[i + 1])]
                let c = padding == 2 ? 0 : table[Int(text[i + 2])]
                let d = padding >= 1 ? 0 : table[Int(text[i + 3])]
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
