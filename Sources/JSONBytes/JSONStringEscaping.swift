/// JSON string literals as every JSON writer in Tether writes them (traces, `inspect --json`, the
/// widget core's container files and MQTT payloads, the plugin simulator's name messages), so that
/// escaping agrees everywhere and lives in one place.
///
/// RFC 8259 §7: `"` and `\` are escaped, U+0000–U+001F become `\b`, `\f`, `\n`, `\r`, `\t` or
/// `\u00XX`; every other byte of the UTF-8 is copied as it is (no `\/`, no `\uXXXX` for non-ASCII).
public enum JSONStringEscaping {
    /// Appends `text` as a quoted JSON string literal to `out`.
    public static func append(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var text = text
        text.withUTF8 { appendContents($0, to: &out) }
        out.append(UInt8(ascii: "\""))
    }

    /// Appends UTF-8 `bytes` escaped as the inside of a JSON string literal (no quotes) to `out`.
    public static func appendContents<Bytes: Collection<UInt8>>(_ bytes: Bytes, to out: inout [UInt8]) {
        // Most strings need no escape at all: one pass decides, then one bulk copy.
        if !bytes.contains(where: { $0 < 0x20 || $0 == 0x22 || $0 == 0x5C }) {
            out.append(contentsOf: bytes)
            return
        }
        for byte in bytes {
            switch byte {
            case 0x22: out.append(0x5C); out.append(0x22)
            case 0x5C: out.append(0x5C); out.append(0x5C)
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            case 0x08: out.append(0x5C); out.append(UInt8(ascii: "b"))
            case 0x0C: out.append(0x5C); out.append(UInt8(ascii: "f"))
            case 0..<0x20:
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                out.append(hexDigit(byte >> 4))
                out.append(hexDigit(byte & 0x0F))
            default:
                out.append(byte)
            }
        }
    }

    /// The bytes a JSON string literal's inside (`raw`, escapes as written, no quotes) stands for,
    /// as UTF-8; `nil` when an escape is malformed. Every RFC 8259 escape, surrogate pairs included.
    public static func unescape(_ raw: ArraySlice<UInt8>) -> [UInt8]? {
        guard raw.contains(UInt8(ascii: "\\")) else { return Array(raw) }
        var out: [UInt8] = []
        var i = raw.startIndex
        func hex4(_ at: Int) -> UInt32? {
            guard at + 4 <= raw.endIndex else { return nil }
            var value: UInt32 = 0
            for byte in raw[at..<(at + 4)] {
                guard let digit = JSONHexDigit.value(byte) else { return nil }
                value = value << 4 | UInt32(digit)
            }
            return value
        }
        while i < raw.endIndex {
            let byte = raw[i]
            guard byte == UInt8(ascii: "\\") else { out.append(byte); i += 1; continue }
            guard i + 1 < raw.endIndex else { return nil }
            let escape = raw[i + 1]
            i += 2
            switch escape {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(escape)
            case UInt8(ascii: "b"): out.append(0x08)
            case UInt8(ascii: "f"): out.append(0x0C)
            case UInt8(ascii: "n"): out.append(0x0A)
            case UInt8(ascii: "r"): out.append(0x0D)
            case UInt8(ascii: "t"): out.append(0x09)
            case UInt8(ascii: "u"):
                guard var scalar = hex4(i) else { return nil }
                i += 4
                if (0xD800..<0xDC00).contains(scalar) {
                    guard i + 6 <= raw.endIndex, raw[i] == UInt8(ascii: "\\"), raw[i + 1] == UInt8(ascii: "u"),
                          let low = hex4(i + 2), (0xDC00..<0xE000).contains(low) else { return nil }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
                }
                guard let unicode = Unicode.Scalar(scalar) else { return nil }
                out += Array(String(Character(unicode)).utf8)
            default:
                return nil
            }
        }
        return out
    }

    /// `text` as a quoted JSON string literal.
    public static func quoted(_ text: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count + 2)
        append(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
