import MonkeyC
import TetherTestSupport


/// Bytes of a hex string ("abcd 01"); spaces are ignored.
func hex(_ text: String) -> [UInt8] {
    let digits = Array(text.filter { !$0.isWhitespace })
    precondition(digits.count % 2 == 0, "hex(): odd digit count in \(text)")
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

/// Lower-case hex of bytes, no separators.
func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

/// Random Monkey C values of bounded depth and size, every type represented.
struct ValueGenerator {
    var rng: SplitMix64

    mutating func value(depth: Int = 0) -> MonkeyCValue {
        let kinds = depth >= 4 ? 9 : 11
        switch Int.random(in: 0..<kinds, using: &rng) {
        case 0: return .null
        case 1: return .bool(Bool.random(using: &rng))
        case 2: return .int32(Int32(truncatingIfNeeded: rng.next()))
        case 3: return .int64(Int64(bitPattern: rng.next()))
        case 4: return .float32(Float(bitPattern: UInt32(truncatingIfNeeded: rng.next())))
        case 5: return .double(Double(bitPattern: rng.next()))
        case 6: return .char(UInt32(truncatingIfNeeded: rng.next()))
        case 7: return .string(string())
        case 8: return .byteArray((0..<Int.random(in: 0..<12, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
        case 9: return .array((0..<Int.random(in: 0..<5, using: &rng)).map { _ in value(depth: depth + 1) })
        default:
            return .dictionary((0..<Int.random(in: 0..<5, using: &rng)).map { _ in
                MonkeyCPair(value(depth: depth + 1), value(depth: depth + 1))
            })
        }
    }

    /// Short strings from a small alphabet (so duplicates, and thus interning, are common) plus
    /// the odd multi-byte scalar.
    mutating func string() -> String {
        let alphabet: [Unicode.Scalar] = ["a", "b", "c", " ", "é", "€", "😀", "\u{0}", "\u{301}"]
        var text = String.UnicodeScalarView()
        for _ in 0..<Int.random(in: 0..<4, using: &rng) {
            text.append(alphabet[Int.random(in: 0..<alphabet.count, using: &rng)])
        }
        return String(text)
    }
}
