extension MonkeyCValue: CustomStringConvertible {
    /// A one-line, JSON-like text for traces and `tether inspect`.
    ///
    /// JSON where JSON has the type (`null`, `true`, `42`, `3.5`, `"text"`, `[…]`, `{"k": v}`),
    /// Monkey C literal suffixes where it does not, so no two types print alike:
    /// int64 `5000000000l`, float32 `3.5f` (a double prints plainly, always with a `.`, `e`, `nan`
    /// or `inf`), char `'a'` (or `'\u{1F600}'` style escapes), byte array `[0x01, 0xff]b`.
    /// Dictionary keys print as values (`{1: "one"}`), in the pairs' order.
    public var description: String {
        var text = ""
        MonkeyCValue.write(self, into: &text)
        return text
    }

    private static func write(_ value: MonkeyCValue, into text: inout String) {
        switch value {
        case .null:
            text += "null"
        case .bool(let flag):
            text += flag ? "true" : "false"
        case .int32(let number):
            text += String(number)
        case .int64(let number):
            text += String(number) + "l"
        case .float32(let number):
            text += floatingText(Double(number), raw: "\(number)") + "f"
        case .double(let number):
            text += floatingText(number, raw: "\(number)")
        case .char(let code):
            text += "'"
            if let scalar = Unicode.Scalar(code), scalar.value >= 0x20, scalar.value < 0x7F, scalar != "'", scalar != "\\" {
                text.unicodeScalars.append(scalar)
            } else {
                text += "\\u{" + String(code, radix: 16, uppercase: true) + "}"
            }
            text += "'"
        case .string(let string):
            writeQuoted(string, into: &text)
        case .byteArray(let bytes):
            text += "["
            text += bytes.map { "0x" + hex2($0) }.joined(separator: ", ")
            text += "]b"
        case .array(let items):
            text += "["
            for (index, item) in items.enumerated() {
                if index > 0 { text += ", " }
                write(item, into: &text)
            }
            text += "]"
        case .dictionary(let pairs):
            text += "{"
            for (index, pair) in pairs.enumerated() {
                if index > 0 { text += ", " }
                write(pair.key, into: &text)
                text += ": "
                write(pair.value, into: &text)
            }
            text += "}"
        }
    }

    /// Swift's shortest round-tripping text, with `nan`/`inf` spelled out and a `.0` added to integral values.
    private static func floatingText(_ number: Double, raw: String) -> String {
        if number.isNaN { return number.sign == .minus ? "-nan" : "nan" }
        if number.isInfinite { return number < 0 ? "-inf" : "inf" }
        if raw.contains(".") || raw.contains("e") { return raw }
        return raw + ".0"
    }

    private static func writeQuoted(_ string: String, into text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    text += "\\u" + String(repeating: "0", count: 4 - String(scalar.value, radix: 16).count)
                        + String(scalar.value, radix: 16)
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }

    private static func hex2(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }
}
