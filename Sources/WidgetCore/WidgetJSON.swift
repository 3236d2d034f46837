// JSON for the App Group container's files and the MQTT payloads (docs/widget-core.md,
// docs/widget-mqtt.md): a value type, a strict RFC 8259 parser and a canonical writer. Written by
// hand, without Foundation: JSONSerialization loses whether `1` was an integer or `1.0` a double,
// and the cores use no Foundation. The rules are those of Tether's trace format
// (docs/trace-format.md, "Numbers" and "Strings"), so a value maps one to one onto a trace value.

import JSONBytes

/// A JSON value. Integers and doubles are kept apart: a number written without fraction or
/// exponent that fits 64 bits is an ``int(_:)``, any other number a ``double(_:)``.
public enum WidgetJSON: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without fraction or exponent that fits a signed 64-bit integer.
    case int(Int64)
    /// Any other number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([WidgetJSON])
    /// An object; written with its keys sorted, so equal objects give equal bytes.
    case object([String: WidgetJSON])

    /// The deepest nesting of arrays and objects the parser accepts.
    public static let maximumDepth = 128

    /// The member `key` of an object; `nil` for a missing member or a value that is not an object.
    public subscript(key: String) -> WidgetJSON? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The string, when this is one.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The integer, when this is one.
    public var intValue: Int64? {
        if case .int(let number) = self { return number }
        return nil
    }

    /// The boolean, when this is one.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [WidgetJSON]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The members, when this is an object.
    public var objectValue: [String: WidgetJSON]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// `object`, `array`, `string`, `integer`, `double`, `boolean` or `null`: for error details.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .bool: "boolean"
        case .int: "integer"
        case .double: "double"
        case .string: "string"
        case .array: "array"
        case .object: "object"
        }
    }

    // MARK: - Writing

    /// The canonical UTF-8 text: no whitespace, object keys sorted (byte order of their UTF-8),
    /// doubles as the shortest text that reads back to the same double and always with a `.` or an
    /// exponent; NaN and the infinities (which JSON cannot say) as the strings `"NaN"`,
    /// `"Infinity"`, `"-Infinity"`.
    public func encoded() -> [UInt8] {
        var out: [UInt8] = []
        append(to: &out)
        return out
    }

    /// ``encoded()`` as a `String`.
    public var text: String { String(decoding: encoded(), as: UTF8.self) }

    func append(to out: inout [UInt8]) {
        switch self {
        case .null:
            out += Array("null".utf8)
        case .bool(let flag):
            out += Array((flag ? "true" : "false").utf8)
        case .int(let number):
            out += Array(String(number).utf8)
        case .double(let number):
            if number.isNaN {
                WidgetJSON.string("NaN").append(to: &out)
            } else if number.isInfinite {
                WidgetJSON.string(number < 0 ? "-Infinity" : "Infinity").append(to: &out)
            } else {
                // Swift's description is the shortest round-tripping text; it always has a '.' or
                // an exponent for finite values ("1.0", "1e-05", "5e+20").
                out += Array(number.description.utf8)
            }
        case .string(let text):
            Self.appendString(text, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.append(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            let keys = members.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            for (index, key) in keys.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                members[key]!.append(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static func appendString(_ text: String, to out: inout [UInt8]) {
        JSONStringEscaping.append(text, to: &out)
    }

    // MARK: - Reading

    /// Parses one JSON text (RFC 8259): whitespace around the value is allowed, anything else after
    /// it is not. Refused: invalid UTF-8, a duplicate key in one object, nesting deeper than
    /// ``maximumDepth``, numbers beyond the double range. Never traps, whatever the bytes.
    /// - Throws: ``WidgetJSONError`` naming the byte offset and what was expected there.
    public static func parse(_ bytes: [UInt8]) throws(WidgetJSONError) -> WidgetJSON {
        var parser = WidgetJSONParser(bytes: bytes)
        parser.skipWhitespace()
        let value = try parser.parseValue(depth: 0)
        parser.skipWhitespace()
        guard parser.offset == bytes.count else {
            throw parser.failure("the end of the text after the value")
        }
        return value
    }
}

/// Bytes that are not one JSON text: where, what was expected, what was there.
public struct WidgetJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// 0-based byte offset of the problem.
    public var offset: Int
    /// What the parser expected there, e.g. `a ',' or '}' after an object member`.
    public var expected: String
    /// What it found instead, e.g. `end of text` or `'x'`.
    public var found: String

    /// Creates an error.
    public init(offset: Int, expected: String, found: String) {
        self.offset = offset
        self.expected = expected
        self.found = found
    }

    /// `byte 12: expected …, found …`.
    public var description: String { "byte \(offset): expected \(expected), found \(found)" }
}

/// The parser's cursor over the bytes.
struct WidgetJSONParser {
    let bytes: [UInt8]
    var offset = 0

    init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    func failure(_ expected: String) -> WidgetJSONError {
        let found: String
        if offset >= bytes.count {
            found = "end of text"
        } else {
            let byte = bytes[offset]
            found = byte >= 0x20 && byte < 0x7F ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        }
        return WidgetJSONError(offset: offset, expected: expected, found: found)
    }

    mutating func skipWhitespace() {
        while offset < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[offset]) { offset += 1 }
    }

    mutating func parseValue(depth: Int) throws(WidgetJSONError) -> WidgetJSON {
        guard offset < bytes.count else { throw failure("a value") }
        switch bytes[offset] {
        case UInt8(ascii: "{"):
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""):
            return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            throw failure("a value (object, array, string, number, true, false or null)")
        }
    }

    mutating func expectLiteral(_ literal: String) throws(WidgetJSONError) {
        for byte in literal.utf8 {
            guard offset < bytes.count, bytes[offset] == byte else { throw failure("the literal '\(literal)'") }
            offset += 1
        }
    }

    mutating func parseObject(depth: Int) throws(WidgetJSONError) -> WidgetJSON {
        guard depth <= WidgetJSON.maximumDepth else {
            throw failure("nesting of at most \(WidgetJSON.maximumDepth) arrays and objects")
        }
        offset += 1
        var members: [String: WidgetJSON] = [:]
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "}") {
            offset += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\"") else { throw failure("a string key") }
            let keyOffset = offset
            let key = try parseString()
            guard members[key] == nil else {
                offset = keyOffset
                throw failure("a key not already in this object (duplicate keys make it ambiguous)")
            }
            skipWhitespace()
            guard offset < bytes.count, bytes[offset] == UInt8(ascii: ":") else { throw failure("a ':' after the key") }
            offset += 1
            skipWhitespace()
            members[key] = try parseValue(depth: depth)
            skipWhitespace()
            guard offset < bytes.count else { throw failure("a ',' or '}' after an object member") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
            } else if bytes[offset] == UInt8(ascii: "}") {
                offset += 1
                return .object(members)
            } else {
                throw failure("a ',' or '}' after an object member")
            }
        }
    }

    mutating func parseArray(depth: Int) throws(WidgetJSONError) -> WidgetJSON {
        guard depth <= WidgetJSON.maximumDepth else {
            throw failure("nesting of at most \(WidgetJSON.maximumDepth) arrays and objects")
        }
        offset += 1
        var elements: [WidgetJSON] = []
        skipWhitespace()
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "]") {
            offset += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard offset < bytes.count else { throw failure("a ',' or ']' after an array element") }
            if bytes[offset] == UInt8(ascii: ",") {
                offset += 1
            } else if bytes[offset] == UInt8(ascii: "]") {
                offset += 1
                return .array(elements)
            } else {
                throw failure("a ',' or ']' after an array element")
            }
        }
    }

    mutating func parseHex4() throws(WidgetJSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard offset < bytes.count, let digit = JSONHexDigit.value(bytes[offset]) else { throw failure("four hex digits after \\u") }
            value = value << 4 | UInt32(digit)
            offset += 1
        }
        return value
    }

    mutating func parseString() throws(WidgetJSONError) -> String {
        let start = offset
        offset += 1
        var raw: [UInt8] = []
        while true {
            guard offset < bytes.count else {
                offset = start
                throw failure("a string closed by '\"'")
            }
            let byte = bytes[offset]
            switch byte {
            case UInt8(ascii: "\""):
                offset += 1
                guard UTF8Validation.isValid(raw) else {
                    offset = start
                    throw failure("a string of valid UTF-8")
                }
                return String(decoding: raw, as: UTF8.self)
            case UInt8(ascii: "\\"):
                offset += 1
                guard offset < bytes.count else { throw failure("an escape after '\\'") }
                let escape = bytes[offset]
                offset += 1
                switch escape {
                case UInt8(ascii: "\""): raw.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): raw.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): raw.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): raw.append(0x08)
                case UInt8(ascii: "f"): raw.append(0x0C)
                case UInt8(ascii: "n"): raw.append(0x0A)
                case UInt8(ascii: "r"): raw.append(0x0D)
                case UInt8(ascii: "t"): raw.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xD800..<0xDC00).contains(scalar) {
                        guard offset + 1 < bytes.count, bytes[offset] == UInt8(ascii: "\\"), bytes[offset + 1] == UInt8(ascii: "u") else {
                            throw failure("a low surrogate \\uDC00–\\uDFFF after a high surrogate")
                        }
                        offset += 2
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else {
                            offset -= 6
                            throw failure("a low surrogate \\uDC00–\\uDFFF after a high surrogate")
                        }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(scalar) {
                        offset -= 6
                        throw failure("a \\u escape that is not a lone low surrogate")
                    }
                    guard let unicode = Unicode.Scalar(scalar) else { throw failure("a valid Unicode scalar") }
                    raw += Array(String(Character(unicode)).utf8)
                default:
                    offset -= 1
                    throw failure("an escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX)")
                }
            case 0x00..<0x20:
                throw failure("a control character escaped (\\n, \\u0001, …) inside a string")
            default:
                raw.append(byte)
                offset += 1
            }
        }
    }

    mutating func parseNumber() throws(WidgetJSONError) -> WidgetJSON {
        let start = offset
        var isInteger = true
        if bytes[offset] == UInt8(ascii: "-") { offset += 1 }
        guard offset < bytes.count, isDigit(bytes[offset]) else { throw failure("a digit") }
        if bytes[offset] == UInt8(ascii: "0") {
            offset += 1
        } else {
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: ".") {
            isInteger = false
            offset += 1
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw failure("a digit after '.'") }
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "e") || bytes[offset] == UInt8(ascii: "E") {
            isInteger = false
            offset += 1
            if offset < bytes.count, bytes[offset] == UInt8(ascii: "+") || bytes[offset] == UInt8(ascii: "-") { offset += 1 }
            guard offset < bytes.count, isDigit(bytes[offset]) else { throw failure("a digit in the exponent") }
            while offset < bytes.count, isDigit(bytes[offset]) { offset += 1 }
        }
        let text = String(decoding: bytes[start..<offset], as: UTF8.self)
        if isInteger, let number = Int64(text) { return .int(number) }
        guard let number = Double(text), number.isFinite else {
            let end = offset
            offset = start
            let error = failure("a number within the double range")
            offset = end
            throw error
        }
        return .double(number)
    }

    func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}

extension WidgetJSON: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A double.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: WidgetJSON...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, WidgetJSON)...) {
        var members: [String: WidgetJSON] = [:]
        for (key, value) in elements { members[key] = value }
        self = .object(members)
    }
}

extension WidgetJSON: CustomStringConvertible {
    /// The canonical text.
    public var description: String { text }
}
