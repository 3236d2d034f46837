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
        text.withUTF8 { utf8 in
            // Most strings need no escape at all: one pass decides, then one bulk copy.
            var clean = true
            for byte in utf8 where byte < 0x20 || byte == 0x22 || byte == 0x5C {
                clean = false
                break
            }
            if clean {
                out.append(contentsOf: utf8)
                return
            }
            for byte in utf8 {
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
        out.append(UInt8(ascii: "\""))
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
