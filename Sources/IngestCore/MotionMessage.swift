/// One Motion plugin datagram, parsed and validated (shared/design/motion-plugin-udp.md, "Messages").
///
/// The JSON reader is hand-written over the datagram's bytes because the live server parses
/// hundreds of thousands of datagrams a second. It is strict RFC 8259 JSON with one extension the
/// protocol needs: a trailing comma before `]` or `}` (the sample plugin sends one). It never traps:
/// every index is checked against the buffer before it is read.
///
/// A datagram is a unit: if any entry of `d` is bad, the whole datagram is rejected and none of
/// its entries is used, so a sink never holds half of a sample instant.
///
/// Order of checks, so that each datagram gets the most basic reason that applies: UTF-8, then
/// JSON syntax (including duplicate members, which make a message ambiguous), then the message
/// shape (member types, missing members), then per-entry contents in entry order (time, base64,
/// payload length or text encoding).
enum MotionMessage: Sendable, Hashable {
    /// One entry of a data message.
    struct Entry: Sendable, Hashable {
        var name: String
        var type: String
        var payload: [UInt8]
        var value: DataValue
    }

    case data(timeNs: Int64, entries: [Entry])
    case pluginName(String)
    case end
    case legacyV1(timeNs: Int64?, payload: [UInt8])

    /// A refused datagram: the reason and a detail naming the byte offset and what was expected.
    struct Rejection: Error, Sendable, Hashable {
        var reason: RejectionReason
        var detail: String
    }

    /// Parses one datagram. The caller has already checked its size.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(Rejection) -> MotionMessage {
        if let bad = UTF8Check.firstInvalidOffset(bytes) {
            throw Rejection(reason: .notUTF8, detail: "byte \(bad): not valid UTF-8; a datagram is UTF-8 JSON text")
        }
        var reader = JSONReader(bytes)
        let shape = try reader.readMessageShape()
        return try shape.validate(reader.bytes)
    }
}

/// A string value as it sits in the datagram: a raw byte range when it has no escapes (the common
/// case, no copy), or its unescaped bytes.
enum JSONString: Sendable, Hashable {
    case raw(Range<Int>)
    case unescaped([UInt8])

    func withBytes<R>(in buffer: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .raw(let range): return body(UnsafeRawBufferPointer(rebasing: buffer[range]))
        case .unescaped(let bytes): return bytes.withUnsafeBytes(body)
        }
    }

    /// The string quoted for a rejection detail, cut to 40 characters and with control characters
    /// escaped: it is sender-controlled text going into logs.
    func excerpt(in buffer: UnsafeRawBufferPointer) -> String {
        let text = string(in: buffer)
        let head = text.prefix(40).debugDescription
        return text.count > 40 ? head + "…" : head
    }

    func string(in buffer: UnsafeRawBufferPointer) -> String {
        // The datagram was checked to be UTF-8 and unescaping writes valid UTF-8, so decoding
        // cannot substitute anything.
        withBytes(in: buffer) { String(decoding: $0, as: UTF8.self) }
    }
}

/// What the syntax pass found: the members that matter, unvalidated.
struct MessageShape {
    /// The value of a member that the message needs, or why it cannot be used.
    enum Member {
        case absent
        case string(JSONString)
        /// Present with another JSON type; the text names that type.
        case other(String)
    }

    struct EntryShape {
        var offset: Int
        var name: Member = .absent
        var type: Member = .absent
        var payload: Member = .absent
        /// Set when the element of `d` is not an object.
        var notAnObject: String?
    }

    enum DataMember {
        case absent
        case legacy(JSONString)
        case entries([EntryShape])
        case other(String)
    }

    var time: Member = .absent
    var data: DataMember = .absent
    var name: Member = .absent
    var end: Member = .absent

    typealias Rejection = MotionMessage.Rejection

    func validate(_ buffer: UnsafeRawBufferPointer) throws(Rejection) -> MotionMessage {
        let kindCount = (dataIsPresent ? 1 : 0) + (name.isPresent ? 1 : 0) + (end.isPresent ? 1 : 0)
        guard kindCount <= 1 else {
            let kinds = [dataIsPresent ? "d" : nil, name.isPresent ? "name" : nil, end.isPresent ? "end" : nil].compactMap { $0 }
            throw Rejection(reason: .unknownMessage, detail: "members \(kinds.joined(separator: ", ")) in one message; a message carries exactly one of d, name, end")
        }
        switch data {
        case .other(let type):
            throw Rejection(reason: .wrongFieldType, detail: "\"d\" is \(type); expected an array of entries (or a base64 string from a Motion V1 sender)")
        case .legacy(let payloadText):
            let timeNs: Int64?
            switch time {
            case .absent: timeNs = nil
            case .other(let type): throw Rejection(reason: .wrongFieldType, detail: "\"t\" is \(type); expected a decimal string of seconds")
            case .string(let text): timeNs = try Self.parseTime(text, buffer)
            }
            let payload = try Self.decodeBase64(payloadText, buffer, what: "\"d\" (Motion V1 payload)")
            return .legacyV1(timeNs: timeNs, payload: payload)
        case .entries(let entryShapes):
            let timeText: JSONString
            switch time {
            case .absent: throw Rejection(reason: .missingField, detail: "a data message needs \"t\", the sample time")
            case .other(let type): throw Rejection(reason: .wrongFieldType, detail: "\"t\" is \(type); expected a decimal string of seconds, e.g. \"1674790238.1234567\"")
            case .string(let text): timeText = text
            }
            guard !entryShapes.isEmpty else {
                throw Rejection(reason: .missingField, detail: "\"d\" is empty; a data message carries one or more entries")
            }
            // Shape problems of every entry come before content problems, as documented above.
            for (index, entry) in entryShapes.enumerated() {
                if let type = entry.notAnObject {
                    throw Rejection(reason: .wrongFieldType, detail: "entry \(index) of \"d\" (byte \(entry.offset)) is \(type); expected an object {\"n\", \"t\", \"p\"}")
                }
                try Self.checkEntryMember(entry.name, key: "n", index: index, offset: entry.offset)
                try Self.checkEntryMember(entry.type, key: "t", index: index, offset: entry.offset)
                try Self.checkEntryMember(entry.payload, key: "p", index: index, offset: entry.offset)
            }
            let timeNs = try Self.parseTime(timeText, buffer)
            var entries: [MotionMessage.Entry] = []
            entries.reserveCapacity(entryShapes.count)
            for (index, entry) in entryShapes.enumerated() {
                guard case .string(let nameText) = entry.name, case .string(let typeText) = entry.type,
                      case .string(let payloadText) = entry.payload
                else {
                    preconditionFailure("MessageShape: entry \(index) passed the shape check without three strings")
                }
                let type = typeText.string(in: buffer)
                let payload = try Self.decodeBase64(payloadText, buffer, what: "entry \(index) of \"d\" (byte \(entry.offset))")
                let value: DataValue
                do throws(PayloadDecodingError) {
                    value = try DataValue.decode(type: type, payload: payload)
                } catch {
                    throw Rejection(reason: error.reason, detail: "entry \(index) of \"d\" (byte \(entry.offset)): \(error)")
                }
                entries.append(MotionMessage.Entry(name: nameText.string(in: buffer), type: type, payload: payload, value: value))
            }
            return .data(timeNs: timeNs, entries: entries)
        case .absent:
            break
        }
        switch name {
        case .string(let text): return .pluginName(text.string(in: buffer))
        case .other(let type): throw Rejection(reason: .wrongFieldType, detail: "\"name\" is \(type); expected a string")
        case .absent: break
        }
        switch end {
        case .string(let text):
            let isTrue = text.withBytes(in: buffer) { $0.elementsEqual("true".utf8) }
            guard isTrue else {
                throw Rejection(reason: .wrongFieldType, detail: "\"end\" is \(text.excerpt(in: buffer)); expected the string \"true\"")
            }
            return .end
        case .other(let type):
            throw Rejection(reason: .wrongFieldType, detail: "\"end\" is \(type); expected the string \"true\"")
        case .absent:
            break
        }
        throw Rejection(reason: .unknownMessage, detail: "an object without \"d\", \"name\" or \"end\"; not a Motion plugin message")
    }

    private var dataIsPresent: Bool {
        if case .absent = data { return false }
        return true
    }

    private static func parseTime(_ text: JSONString, _ buffer: UnsafeRawBufferPointer) throws(Rejection) -> Int64 {
        let result = text.withBytes(in: buffer) { SampleTime.parseNanoseconds($0) }
        switch result {
        case .success(let ns): return ns
        case .failure(let failure):
            throw Rejection(reason: .badTime, detail: "\"t\" = \(text.excerpt(in: buffer)), character \(failure.offset): expected \(failure.expected)")
        }
    }

    private static func checkEntryMember(_ member: Member, key: StaticString, index: Int, offset: Int) throws(Rejection) {
        switch member {
        case .absent:
            throw Rejection(reason: .missingField, detail: "entry \(index) of \"d\" (byte \(offset)) has no \"\(key)\"")
        case .other(let type):
            throw Rejection(reason: .wrongFieldType, detail: "entry \(index) of \"d\" (byte \(offset)): \"\(key)\" is \(type); expected a string")
        case .string:
            return
        }
    }

    /// `what` is only built when decoding fails: it is on the hot path.
    private static func decodeBase64(_ text: JSONString, _ buffer: UnsafeRawBufferPointer, what: @autoclosure () -> String) throws(Rejection) -> [UInt8] {
        let result = text.withBytes(in: buffer) { Base64.decode($0) }
        switch result {
        case .success(let bytes): return bytes
        case .failure(let failure):
            throw Rejection(reason: .badBase64, detail: "\(what()), base64 character \(failure.offset): expected \(failure.expected)")
        }
    }
}

extension MessageShape.Member {
    var isPresent: Bool {
        if case .absent = self { return false }
        return true
    }
}

/// Byte-level JSON reader. Every method either consumes a well-formed piece or throws `.notJSON`
/// naming the byte offset and what was expected there.
struct JSONReader {
    let bytes: UnsafeRawBufferPointer
    private(set) var index = 0
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

    private mutating func readMember(depth: Int) throws(Rejection) -> MessageShape.Member {
        if peek() == Self.quote { return .string(try readString()) }
        return .other(try skipValue(depth: depth))
    }

    private func duplicate(_ key: String, _ offset: Int) -> Rejection {
        Rejection(reason: .notJSON, detail: "byte \(offset): member \"\(key)\" appears twice; the message is ambiguous")
    }

    /// Reads `"key"` and the `:` after it, leaving the index at the value.
    private mutating func readKey() throws(Rejection) -> Key {
        guard peek() == Self.quote else { throw unexpected("'\"' to start a member name") }
        let key = try readString()
        skipWhitespace()
        guard peek() == Self.colon else { throw unexpected("':' after a member name") }
        index += 1
        skipWhitespace()
        return key.withBytes(in: bytes) { k -> Key in
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
    }

    // MARK: Containers

    /// Consumes the opening bracket; returns whether a first element follows (index at it).
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
    private mutating func skipValue(depth: Int) throws(Rejection) -> String {
        guard depth < Self.maxDepth else { throw unexpected("nesting at most \(Self.maxDepth) deep") }
        guard let byte = peek() else { throw unexpected("a JSON value") }
        switch byte {
        case Self.quote:
            _ = try readString()
            return "a string"
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
            return "an object"
        case UInt8(ascii: "["):
            var more = try beginContainer(close: UInt8(ascii: "]"))
            while more {
                _ = try skipValue(depth: depth + 1)
                more = try nextInContainer(close: UInt8(ascii: "]"), what: "array element")
            }
            return "an array"
        case UInt8(ascii: "t"):
            try expectLiteral("true")
            return "a boolean"
        case UInt8(ascii: "f"):
            try expectLiteral("false")
            return "a boolean"
        case UInt8(ascii: "n"):
            try expectLiteral("null")
            return "null"
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try skipNumber()
            return "a number"
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

    /// Reads a string starting at its opening quote; leaves the index after the closing quote.
    private mutating func readString() throws(Rejection) -> JSONString {
        index += 1
        let start = index
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
        guard index < bytes.count else { throw unexpected("'\"' to close the string that starts at byte \(start - 1)") }
        // Slow path: the string has escapes.
        var out = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            if byte == Self.quote {
                index += 1
                return .unescaped(out)
            }
            if byte == Self.backslash {
                index += 1
                guard let escaped = peek() else { break }
                switch escaped {
                case Self.quote, Self.backslash, UInt8(ascii: "/"): out.append(escaped)
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(0x0A)
                case UInt8(ascii: "r"): out.append(0x0D)
                case UInt8(ascii: "t"): out.append(0x09)
                case UInt8(ascii: "u"):
                    index += 1
                    try appendUnicodeEscape(to: &out)
                    continue
                default:
                    throw unexpected("an escape: \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\uXXXX")
                }
                index += 1
                continue
            }
            guard byte >= 0x20 else { throw unexpected("no control character inside a string (escape it)") }
            out.append(byte)
            index += 1
        }
        throw unexpected("'\"' to close the string that starts at byte \(start - 1)")
    }

    /// Index is after `\u`; reads the four hex digits (and a low surrogate's escape if needed).
    private mutating func appendUnicodeEscape(to out: inout [UInt8]) throws(Rejection) {
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
        out.append(contentsOf: scalar.utf8)
    }

    private mutating func readHex4() throws(Rejection) -> UInt16 {
        var value: UInt16 = 0
        for _ in 0..<4 {
            guard let byte = peek() else { throw unexpected("four hex digits after '\\u'") }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw unexpected("four hex digits after '\\u'")
            }
            value = value << 4 | UInt16(digit)
            index += 1
        }
        return value
    }

    // MARK: Bytes

    private func peek() -> UInt8? {
        index < bytes.count ? bytes[index] : nil
    }

    private mutating func skipWhitespace() {
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

/// UTF-8 validation (Unicode §3.9, table 3-7) with an ASCII fast path: JSON datagrams are
/// nearly all ASCII.
enum UTF8Check {
    /// The offset of the first byte that starts an ill-formed sequence, or nil.
    static func firstInvalidOffset(_ bytes: UnsafeRawBufferPointer) -> Int? {
        var i = 0
        let n = bytes.count
        while i < n {
            // Eight ASCII bytes at a time.
            if i &+ 8 <= n, bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                i &+= 8
                continue
            }
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            let length: Int
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            switch lead {
            case 0xC2...0xDF: length = 2
            case 0xE0: length = 3; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: length = 3
            case 0xED: length = 3; high = 0x9F
            case 0xF0: length = 4; low = 0x90
            case 0xF1...0xF3: length = 4
            case 0xF4: length = 4; high = 0x8F
            default: return i
            }
            guard i + length <= n else { return i }
            let second = bytes[i + 1]
            guard second >= low, second <= high else { return i }
            for k in 2..<max(length, 2) where (bytes[i + k] & 0xC0) != 0x80 {
                return i
            }
            i += length
        }
        return nil
    }
}
