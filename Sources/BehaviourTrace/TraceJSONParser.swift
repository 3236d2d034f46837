// The fuzz target compiles this file with TraceJSON.swift and JSONBytes' sources into one module
// (CI/fuzz/run).
#if canImport(JSONBytes)
import JSONBytes
#endif

/// A small RFC 8259 parser over the UTF-8 bytes of one line. Never traps: every index is checked.
struct TraceJSONParser {
    let bytes: [UInt8]
    let line: Int
    let file: String
    var position = 0
    /// Nesting is bounded so a hostile line cannot exhaust the stack.
    static let maxDepth = 128

    init(bytes: [UInt8], line: Int, file: String) {
        self.bytes = bytes
        self.line = line
        self.file = file
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private func error(_ expected: String, at offset: Int? = nil) -> TraceFormatError {
        let at = offset ?? position
        return TraceFormatError(file: file, line: line, column: at + 1, expected: expected, found: describe(at: at))
    }

    private func describe(at offset: Int) -> String {
        guard offset < bytes.count else { return "end of line" }
        let byte = bytes[offset]
        if byte >= 0x21 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, Self.isWhitespace(byte) { position += 1 }
    }

    /// One JSON object filling the whole input (an API-call record).
    mutating func parseObject() throws(TraceFormatError) -> [String: TraceValue] {
        skipWhitespace()
        let start = position
        guard current == UInt8(ascii: "{") else { throw error("'{' starting a JSON object") }
        guard case .object(let members) = try parseValue(depth: 0) else { throw error("a JSON object", at: start) }
        skipWhitespace()
        if position < bytes.count { throw error("end of input after the object") }
        return members
    }

    /// The line's object, read member by member rather than as a ``TraceValue`` object: `t_ns`,
    /// `core` and `event` go straight to the event, and the other members are kept in order so
    /// that a datapoint's five become its inline fields without a dictionary. A baseline is read
    /// this way line after line while a replay is compared with it, so this is its hot path.
    /// Errors are those of the generic reader, at the same offsets.
    mutating func parseEvent() throws(TraceFormatError) -> TraceEvent {
        skipWhitespace()
        let start = position
        guard current == UInt8(ascii: "{") else { throw error("'{' starting a trace event object") }
        position += 1
        var timeValue: TraceValue?
        var coreValue: TraceValue?
        var eventValue: TraceValue?
        var members: [(key: String, value: TraceValue)] = []
        members.reserveCapacity(8)
        // Past a few members, repeats are found through an index rather than by scanning.
        var index: [String: Int]?
        var first = true
        // Depth 1, as the members of an object at the top level.
        while let (key, keyStart, value) = try nextMember(depth: 1, first: &first) {
            let repeated: Bool
            switch key {
            case "t_ns": repeated = timeValue != nil; timeValue = value
            case "core": repeated = coreValue != nil; coreValue = value
            case "event": repeated = eventValue != nil; eventValue = value
            default:
                if let index {
                    repeated = index[key] != nil
                } else {
                    repeated = members.contains { $0.key == key }
                }
                members.append((key, value))
                if index == nil, members.count > 16 {
                    index = Dictionary(members.enumerated().map { ($0.element.key, $0.offset) }, uniquingKeysWith: { kept, _ in kept })
                } else {
                    index?[key] = members.count - 1
                }
            }
            // A duplicate key would make the line mean two things; refuse it rather than pick one.
            guard !repeated else { throw repeatedKey(key, at: keyStart) }
        }
        skipWhitespace()
        if position < bytes.count { throw error("end of line after the event object") }
        guard let t = timeValue else { throw error("a \"t_ns\" key (integer nanoseconds)", at: start) }
        guard case .int(let timeNs) = t else { throw error("an integer value for \"t_ns\"", at: start) }
        guard let c = coreValue else { throw error("a \"core\" key", at: start) }
        guard case .string(let coreText) = c else { throw error("a string value for \"core\"", at: start) }
        guard let e = eventValue else { throw error("an \"event\" key", at: start) }
        guard case .string(let eventText) = e else { throw error("a string value for \"event\"", at: start) }
        guard let core = TraceName(readFrom: coreText), let event = TraceName(readFrom: eventText) else {
            throw error("a core and event name among the first \(TraceName.inputLimit) distinct ones (Tether's own traces have a few dozen; is this a trace file?)", at: start)
        }
        if let point = DataPointFields(members) {
            return TraceEvent(timeNs: timeNs, core: core, event: event, dataPoint: point)
        }
        var fields = [String: TraceValue](minimumCapacity: members.count)
        for member in members { fields[member.key] = member.value }
        return TraceEvent(timeNs: timeNs, core: core, event: event, fields: fields)
    }

    private mutating func parseValue(depth: Int) throws(TraceFormatError) -> TraceValue {
        skipWhitespace()
        guard let byte = current else { throw error("a JSON value") }
        switch byte {
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { throw error("at most \(Self.maxDepth) levels of nesting") }
            return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { throw error("at most \(Self.maxDepth) levels of nesting") }
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
            throw error("a JSON value (object, array, string, number, true, false or null)")
        }
    }

    private mutating func expectLiteral(_ literal: String) throws(TraceFormatError) {
        let start = position
        for expectedByte in literal.utf8 {
            guard current == expectedByte else { throw error("the literal '\(literal)'", at: start) }
            position += 1
        }
    }

    private mutating func parseObject(depth: Int) throws(TraceFormatError) -> TraceValue {
        position += 1  // '{'
        var members: [String: TraceValue] = [:]
        var first = true
        while let (key, keyStart, value) = try nextMember(depth: depth, first: &first) {
            guard members.updateValue(value, forKey: key) == nil else { throw repeatedKey(key, at: keyStart) }
        }
        return .object(members)
    }

    /// The next member of an object whose `{` has been read: its key, where the key starts and its
    /// value, or `nil` once the closing `}` is read. `first` is `true` before the first member.
    private mutating func nextMember(depth: Int, first: inout Bool) throws(TraceFormatError) -> (String, Int, TraceValue)? {
        skipWhitespace()
        if first {
            first = false
            if current == UInt8(ascii: "}") {
                position += 1
                return nil
            }
        } else {
            guard let byte = current else { throw error("a ',' or '}' after an object member") }
            position += 1
            if byte == UInt8(ascii: "}") { return nil }
            guard byte == UInt8(ascii: ",") else {
                throw error("a ',' or '}' after an object member", at: position - 1)
            }
            skipWhitespace()
        }
        guard current == UInt8(ascii: "\"") else { throw error("a '\"' starting an object key") }
        let keyStart = position
        let key = try parseString()
        skipWhitespace()
        guard current == UInt8(ascii: ":") else { throw error("a ':' after the object key") }
        position += 1
        return (key, keyStart, try parseValue(depth: depth))
    }

    /// A duplicate key would make the line mean two things: it is refused rather than one picked.
    private func repeatedKey(_ key: String, at keyStart: Int) -> TraceFormatError {
        error("a key not already used in this object (\"\(key)\" repeats)", at: keyStart)
    }

    private mutating func parseArray(depth: Int) throws(TraceFormatError) -> TraceValue {
        position += 1  // '['
        var items: [TraceValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            position += 1
            return .array(items)
        }
        while true {
            items.append(try parseValue(depth: depth))
            skipWhitespace()
            guard let byte = current else { throw error("a ',' or ']' after an array element") }
            position += 1
            if byte == UInt8(ascii: "]") { return .array(items) }
            guard byte == UInt8(ascii: ",") else {
                throw error("a ',' or ']' after an array element", at: position - 1)
            }
        }
    }

    private mutating func parseHex4() throws(TraceFormatError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current, let digit = JSONHexDigit.value(byte) else { throw error("four hex digits after '\\u'") }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    private mutating func parseString() throws(TraceFormatError) -> String {
        let open = position
        position += 1  // '"'
        // Fast path: no escape before the closing quote, so the bytes are the string.
        var end = position
        while end < bytes.count, bytes[end] != 0x22, bytes[end] != 0x5C, bytes[end] >= 0x20 { end += 1 }
        if end < bytes.count, bytes[end] == 0x22 {
            let text: String? = bytes.withUnsafeBufferPointer { buffer in
                let run = UnsafeBufferPointer(rebasing: buffer[position..<end])
                // Keys and names are ASCII: nothing to validate then.
                if !run.contains(where: { $0 >= 0x80 }) || UTF8Validation.firstInvalidOffset(UnsafeRawBufferPointer(run)) == nil {
                    return String(decoding: run, as: UTF8.self)
                }
                return nil
            }
            guard let text else { throw error("valid UTF-8 in the string", at: open) }
            position = end + 1
            return text
        }
        var utf8: [UInt8] = []
        while true {
            guard let byte = current else { throw error("a closing '\"' for the string opened at column \(open + 1)") }
            switch byte {
            case UInt8(ascii: "\""):
                position += 1
                guard let text = String(validating: utf8, as: UTF8.self) else {
                    throw error("valid UTF-8 in the string", at: open)
                }
                return text
            case UInt8(ascii: "\\"):
                position += 1
                guard let escape = current else { throw error("an escape character after '\\'") }
                position += 1
                switch escape {
                case UInt8(ascii: "\""): utf8.append(0x22)
                case UInt8(ascii: "\\"): utf8.append(0x5C)
                case UInt8(ascii: "/"): utf8.append(0x2F)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    let escapeStart = position - 2
                    var code = try parseHex4()
                    if (0xD800..<0xDC00).contains(code) {
                        // RFC 8259 §7: a character outside the BMP is a surrogate pair of escapes.
                        guard current == UInt8(ascii: "\\"), position + 1 < bytes.count,
                              bytes[position + 1] == UInt8(ascii: "u")
                        else { throw error("a '\\u' low surrogate after the high surrogate") }
                        position += 2
                        let low = try parseHex4()
                        guard (0xDC00..<0xE000).contains(low) else {
                            throw error("a low surrogate (DC00–DFFF) after the high surrogate", at: position - 6)
                        }
                        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00..<0xE000).contains(code) {
                        throw error("a high surrogate before a low surrogate", at: escapeStart)
                    }
                    guard let scalar = Unicode.Scalar(code) else {
                        throw error("a valid Unicode scalar", at: escapeStart)
                    }
                    utf8.append(contentsOf: Array(String(scalar).utf8))
                default:
                    throw error("one of \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX", at: position - 2)
                }
            default:
                guard byte >= 0x20 else { throw error("a control character to be escaped inside a string") }
                utf8.append(byte)
                position += 1
            }
        }
    }

    /// RFC 8259 §6 number grammar. A number with a fraction or exponent is a double; one without is
    /// an Int64; an integer outside the Int64 range is read as a double.
    private mutating func parseNumber() throws(TraceFormatError) -> TraceValue {
        let start = position
        var isDouble = false
        if current == UInt8(ascii: "-") { position += 1 }
        guard let first = current, isDigit(first) else { throw error("a digit in the number") }
        if first == UInt8(ascii: "0") {
            position += 1
            if let next = current, isDigit(next) { throw error("no leading zero in a number") }
        } else {
            while let byte = current, isDigit(byte) { position += 1 }
        }
        if current == UInt8(ascii: ".") {
            isDouble = true
            position += 1
            guard let byte = current, isDigit(byte) else { throw error("a digit after the decimal point") }
            while let byte = current, isDigit(byte) { position += 1 }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isDouble = true
            position += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { position += 1 }
            guard let byte = current, isDigit(byte) else { throw error("a digit in the exponent") }
            while let byte = current, isDigit(byte) { position += 1 }
        }
        let text = String(decoding: bytes[start..<position], as: UTF8.self)
        if !isDouble, let int = Int64(text) { return .int(int) }
        guard let double = Double(text), double.isFinite else {
            throw error("a number within the range of a 64-bit double", at: start)
        }
        return .double(double)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }
}
