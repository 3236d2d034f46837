/// Hand-written JSON for output that is streamed frame by frame: Foundation's encoder needs the
/// whole value in memory, and `inspect --json --frames` must run in constant memory.
enum JSONText {
    /// A JSON string literal, escaped per RFC 8259 §7.
    static func string(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                out += "\\u00" + hexByte(UInt8(scalar.value))
            default: out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }

    /// A JSON string literal or `null`.
    static func string(_ text: String?) -> String { text.map { string($0) } ?? "null" }

    /// An array of strings.
    static func strings(_ texts: [String]) -> String { "[" + texts.map { string($0) }.joined(separator: ",") + "]" }

    /// An object from already-encoded values, keys in the given order (so output is stable).
    static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    /// Lower-case hex of bytes, no separators.
    static func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = ""
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += hexByte(byte) }
        return out
    }

    private static let digits = Array("0123456789abcdef")
    private static func hexByte(_ byte: UInt8) -> String {
        String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
