// The fuzz target compiles this file with JSONBytes' sources into one module (CI/fuzz/run).
#if canImport(JSONBytes)
import JSONBytes
#endif

/// Byte-level JSON reader. Every method either consumes a well-formed piece or throws `.notJSON`
/// naming the byte offset and what was expected there.
struct JSONReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var index = 0
    /// The unescaped bytes of every string with escapes read so far (``JSONString/unescaped(_:)``).
    private(set) var unescaped: [UInt8] = []
    /// Deeper nesting is refused so that a hostile datagram cannot exhaust the stack.
    static let maxDepth = 32

    typealias Rejection = MotionMessage.Rejection

    init(_ bytes: UnsafeRawBufferPointer) {
        self.bytes = bytes
    }

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    private static let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")

    // MARK: Message shape

    /// Keys the messages use. Keys are compared as bytes, after unescaping.
    private enum Key { case t, d, n, p, name, end, other }

    mutating func readMessageShape() throws(Rejection) -> MessageShape {
        skipWhitespace()
        guard peek() == UInt8(ascii: "{") else {
            // Valid JSON of another kind is a message we do not know; anything else is not JSON.
            let type = try skipValue(depth: 0)
            try expectEnd()
            throw Rejection(reason: .unknownMessage, detail: "the datagram is \(type); a Motion plugin message is a JSON object")
        }
        var shape = MessageShape()
        var more = try beginContainer(close: UInt8(ascii: "}"))
        while more {
            let keyOffset = index
            let key = try readKey()
            switch key {
            case .t:
                guard !shape.time.isPresent else { throw duplicate("t", keyOffset) }
                shape.time = try readMember(depth: 1)
            case .name:
                guard !shape.name.isPresent else { throw duplicate("name", keyOffset) }
                shape.name = try readMember(depth: 1)
            case .end:
                guard !shape.end.isPresent else { throw duplicate("end", keyOffset) }
                shape.end = try readMember(depth: 1)
            case .d:
                if case .absent = shape.data {} else { throw duplicate("d", keyOffset) }
                shape.data = try readDataMember()
            case .n, .p, .other:
                _ = try skipValue(depth: 1)
            }
            more = try nextInContainer(close: UInt8(ascii: "}"), what: "object member")
        }
        try expectEnd()
        return shape
    }

    private mutating func readDataMember() throws(Rejection) -> MessageShape.DataMember {
        switch peek() {
        case Self.quote:
            return .legacy(try readString())
        case UInt8(ascii: "["):
            var entries: [MessageShape.EntryShape] = []
            // The plugin sends a handful of entries; one allocation instead of a regrowth per doubling.
            entries.reserveCapacity(8)
            var more = try beginContainer(close: UInt8(ascii: "]"))
            while more {
                entries.append(try readEntry())
                more = try nextInContainer(close: UInt8(ascii: "]"), what: "array element")
            }
            return .entries(entries)
        default:
            return .other(try skipValue(depth: 1))
        }
    }

    private mutating func readEntry() throws(Rejection) -> MessageShape.EntryShape {
        var entry = MessageShape.EntryShape(offset: index)
        guard peek() == UInt8(ascii: "{") else {
            entry.notAnObject = try skipValue(depth: 2)
            return entry
        }
        var more = try beginContainer(close: UInt8(ascii: "}"))
        while more {
            let keyOffset = index
            switch try readKey() {
            case .n:
                guard !entry.name.isPresent else { throw duplicate("n", keyOffset) }
                entry.name = try readMember(depth: 3)
            case .t:
                guard !entry.type.isPresent else { throw duplicate("t", keyOffset) }
                entry.type = try readMember(depth: 3)
            case .p:
                guard !entry.payload.isPresent else { throw duplicate("p", keyOffset) }
                entry.payload = try readMember(depth: 3)
            case .d, .name, .end, .other:
                _ = try skipValue(depth: 3)
            }
            more = try nextInContainer(close: UInt8(ascii: "}"), what: "object member")
        }
        return entry
    }

    @inline(__always)
    private mutating func readMember(depth: Int) throws(Rejection) -> MessageShape.Member {
        if peek() == Self.quote { return .string(try readString()) }
        return .other(try skipValue(depth: depth))
    }

    private func duplicate(_ key: String, _ offset: Int) -> Rejection {
        Rejection(reason: .notJSON, detail: "byte \(offset): member \"\(key)\" appears twice; the message is ambiguous")
    }

    /// Reads `"key"` and the `:` after it, leaving the index at the value.
    @inline(__always)
    private mutating func readKey() throws(Rejection) -> Key {
        guard peek() == Self.quote else { throw unexpected("'\"' to start a member name") }
        let key = try readString()
        skipWhitespace()
        guard peek() == Self.colon else { throw unexpected("':' after a member name") }
        index += 1
        skipWhitespace()
        switch key {
        case .raw(let range): return Self.key(UnsafeRawBufferPointer(rebasing: bytes[range]))
        case .unescaped(let range): return unescaped.withUnsafeBytes { Self.key(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
    }

    @inline(__always)
    private static func key(_ k: UnsafeRawBufferPointer) -> Key {
            switch k.count {
            case 1:
                switch k[0] {
                case UInt8(ascii: "t"): return .t
                case UInt8(ascii: "d"): return .d
                case UInt8(ascii: "n"): return .n
                case UInt8(ascii: "p"): return .p
                default: return .other
                }
            case 3: return k.elementsEqual("end".utf8) ? .end : .other
            case 4: return k.elementsEqual("name".utf8) ? .name : .other
            default: return .other
            }
    }

    // MARK: Containers

    /// Consumes the opening bracket; returns whether a first element follows (index at it).
    @inline(__always)
    private mutating func beginContainer(close: UInt8) throws(Rejection) -> Bool {
        index += 1
        skipWhitespace()
        if peek() == close {
            index += 1
            return false
        }
        return true
    }

    /// After an element: consumes `,` or the closing bracket; returns whether another element
    /// follows. A comma directly before the closing bracket is accepted (the one extension).
    @inline(__always)
    private mutating func nextInContainer(close: UInt8, what: String) throws(Rejection) -> Bool {
        skipWhitespace()
        switch peek() {
        case Self.comma:
            index += 1
            skipWhitespace()
            if peek() == close {
                index += 1
                return false
            }
            return true
        case close:
            index += 1
            return false
        default:
            throw unexpected("',' or '\(Character(Unicode.Scalar(close)))' after an \(what)")
        }
    }

    // MARK: Values

    /// Validates and skips one value; returns its JSON type for messages ("a number", "an array").
    private mutating func skipValue(depth: Int) throws(Rejection) -> JSONType {
        guard depth < Self.maxDepth else { throw unexpected("nesting at most \(Self.maxDepth) deep") }
        guard let byte = peek() else { throw unexpected("a JSON value") }
        switch byte {
        case Self.quote:
            _ = try readString()
            return .string
        case UInt8(ascii: "{"):
            var more = try beginContainer(close: UInt8(ascii: "}"))
            while more {
                guard peek() == Self.quote else { throw unexpected("'\"' to start a member name") }
                _ = try readString()
                skipWhitespace()
                guard peek() == Self.colon else { throw unexpected("':' after a member name") }
                index += 1
                skipWhitespace()
                _ = try skipValue(depth: depth + 1)
                more = try nextInContainer(close: UInt8(ascii: "}"), what: "object member")
            }
            return .object
        case UInt8(ascii: "["):
            var more = try beginContainer(close: UInt8(ascii: "]"))
            while more {
                _ = try skipValue(depth: depth + 1)
                more = try nextInContainer(close: UInt8(ascii: "]"), what: "array element")
            }
            return .array
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return .boolean
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return .boolean
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try skipNumber()
            return .number
        default:
            throw unexpected("a JSON value")
        }
    }

    private mutating func expectLiteral(_ literal: StaticString) throws(Rejection) {
        let count = literal.utf8CodeUnitCount
        let matches = index <= bytes.count - count && literal.withUTF8Buffer { lit in
            (0..<count).allSatisfy { bytes[index + $0] == lit[$0] }
        }
        guard matches else { throw unexpected("'\(literal)'") }
        index += count
    }

    /// RFC 8259 §6: `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    private mutating func skipNumber() throws(Rejection) {
        if peek() == UInt8(ascii: "-") { index += 1 }
        if peek() == UInt8(ascii: "0") {
            index += 1
        } else {
            guard skipDigits() > 0 else { throw unexpected("a digit") }
        }
        if peek() == UInt8(ascii: ".") {
            index += 1
            guard skipDigits() > 0 else { throw unexpected("a digit after '.'") }
        }
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            index += 1
            if peek() == UInt8(ascii: "+") || peek() == UInt8(ascii: "-") { index += 1 }
            guard skipDigits() > 0 else { throw unexpected("a digit in the exponent") }
        }
    }

    private mutating func skipDigits() -> Int {
        let start = index
        while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }

    /// Advances eight bytes at a time while `mask` marks no byte of the word, then to the first
    /// marked byte. Returns `true` when it stopped on a marked byte, `false` when fewer than eight
    /// bytes remain (the caller finishes byte by byte).
    @inline(__always) @discardableResult
    private mutating func skipWords(until mask: (UInt64) -> UInt64) -> Bool {
        while index &+ 8 <= bytes.count {
            let word = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let marked = mask(word)
            if marked != 0 {
                index &+= marked.trailingZeroBitCount &>> 3
                return true
            }
            index &+= 8
        }
        return false
    }

    /// Reads a string starting at its opening quote; leaves the index after the closing quote.
    @inline(__always)
    private mutating func readString() throws(Rejection) -> JSONString {
        index += 1
        let start = index
        // Eight bytes at a time to the first quote, backslash or control byte; the loop below
        // then decides what that byte means.
        skipWords(until: SWAR.stringSpecial)
        while index < bytes.count {
            let byte = bytes[index]
            if byte == Self.quote {
                index += 1
                return .raw(start..<(index - 1))
            }
            if byte == Self.backslash { break }
            guard byte >= 0x20 else { throw unexpected("no control character inside a string (escape it)") }
            index += 1
        }
        return try readEscapedString(start: start)
    }

    /// The rest of a string whose first escape (or the end of the datagram) is at the index.
    private mutating func readEscapedString(start: Int) throws(Rejection) -> JSONString {
        guard index < bytes.count else { throw unexpected("'\"' to close the string that starts at byte \(start - 1)") }
        let outStart = unescaped.count
        unescaped.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            if byte == Self.quote {
                index += 1
                return .unescaped(outStart..<unescaped.count)
            }
            if byte == Self.backslash {
                index += 1
                guard let escaped = peek() else { break }
                switch escaped {
                case Self.quote, Self.backslash, UInt8(ascii: "/"): unescaped.append(escaped)
                case UInt8(ascii: "b"): unescaped.append(0x08)
                case UInt8(ascii: "f"): unescaped.append(0x0C)
                case UInt8(ascii: "n"): unescaped.append(0x0A)
                case UInt8(ascii: "r"): unescaped.append(0x0D)
                case UInt8(ascii: "t"): unescaped.append(0x09)
                case UInt8(ascii: "u"):
                    index += 1
                    try appendUnicodeEscape()
                    continue
                default:
                    throw unexpected("an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX")
                }
                index += 1
                continue
            }
            guard byte >= 0x20 else { throw unexpected("no control character inside a string (escape it)") }
            unescaped.append(byte)
            index += 1
        }
        throw unexpected("'\"' to close the string that starts at byte \(start - 1)")
    }

    /// Index is after `\u`; reads the four hex digits (and a low surrogate's escape if needed).
    private mutating func appendUnicodeEscape() throws(Rejection) {
        var scalarValue = UInt32(try readHex4())
        if (0xD800...0xDBFF).contains(scalarValue) {
            guard peek() == Self.backslash, index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                throw unexpected("'\\u' with a low surrogate after a high surrogate")
            }
            index += 2
            let low = UInt32(try readHex4())
            guard (0xDC00...0xDFFF).contains(low) else { throw unexpected("a low surrogate (DC00-DFFF)") }
            scalarValue = 0x10000 + ((scalarValue - 0xD800) << 10) + (low - 0xDC00)
        }
        guard let scalar = Unicode.Scalar(scalarValue) else {
            throw unexpected("a Unicode scalar, not a lone low surrogate")
        }
        unescaped.append(contentsOf: scalar.utf8)
    }

    private mutating func readHex4() throws(Rejection) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = JSONHexDigit.value(byte) else { throw unexpected("four hex digits after '\\u'") }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    // MARK: Bytes

    @inline(__always)
    private func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    @inline(__always)
    private mutating func skipWhitespace() {
        // Most runs are empty or one space (`"n" : "…"`): settled without the word test.
        if index < bytes.count, bytes[index] > 0x20 { return }
        if index &+ 1 < bytes.count, bytes[index] == 0x20, bytes[index &+ 1] > 0x20 {
            index &+= 1
            return
        }
        // Pretty-printed datagrams are a third indentation: eight bytes at a time while a whole
        // word is whitespace, then straight to the first byte that is not.
        if skipWords(until: SWAR.nonWhitespace) { return }
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    private mutating func expectEnd() throws(Rejection) {
        skipWhitespace()
        guard index == bytes.count else { throw unexpected("the end of the datagram after the JSON value") }
    }

    private func unexpected(_ expected: String) -> Rejection {
        let found: String
        if let byte = peek() {
            found = (0x21...0x7E).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
        } else {
            found = "the end of the datagram"
        }
        return Rejection(reason: .notJSON, detail: "byte \(index): expected \(expected), found \(found)")
    }
}
