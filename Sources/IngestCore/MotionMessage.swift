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
        var texts = EntryTextCache()
        return try parse(bytes, texts: &texts)
    }

    /// Parses one datagram, taking entry names and types from `texts` when they repeat the
    /// previous datagram's (a plugin sends the same ones every time).
    static func parse(_ bytes: UnsafeRawBufferPointer, texts: inout EntryTextCache) throws(Rejection) -> MotionMessage {
        if let bad = UTF8Check.firstInvalidOffset(bytes) {
            throw Rejection(reason: .notUTF8, detail: "byte \(bad): not valid UTF-8; a datagram is UTF-8 JSON text")
        }
        var reader = JSONReader(bytes)
        let shape = try reader.readMessageShape()
        return try shape.validate(JSONText(bytes: reader.bytes, unescaped: reader.unescaped), texts: &texts)
    }
}

/// The name and type strings of the last datagram's entries, by entry position, with their bytes.
///
/// Making a `String` from bytes validates and copies them, which costs more than parsing the
/// entry; a plugin repeats its names and types in every datagram, so comparing the bytes with the
/// previous datagram's and reusing its string is the common case. The string is always the one
/// `String(decoding:as:)` makes of the same bytes.
struct EntryTextCache: Sendable {
    /// Slots `2 * entry` (name) and `2 * entry + 1` (type); entries past this are not cached.
    static let slotLimit = 64
    /// Every slot's key bytes, back to back (one buffer, so a lookup retains nothing).
    private var keyBytes: [UInt8] = []
    private var keyRanges: [Range<Int>] = []
    private var texts: [String] = []

    /// Creates an empty cache.
    init() {}

    mutating func string(_ bytes: UnsafeRawBufferPointer, slot: Int) -> String {
        if slot < keyRanges.count {
            let range = keyRanges[slot]
            let same = range.count == bytes.count && keyBytes.withUnsafeBufferPointer { keys in
                var i = 0
                while i < bytes.count, keys[range.lowerBound &+ i] == bytes[i] { i &+= 1 }
                return i == bytes.count
            }
            if same { return texts[slot] }
        }
        let text = String(decoding: bytes, as: UTF8.self)
        guard slot < Self.slotLimit else { return text }
        // A sender whose names keep changing would grow the key buffer without end: start over.
        if keyBytes.count > 16_384 {
            keyBytes.removeAll(keepingCapacity: true)
            keyRanges.removeAll(keepingCapacity: true)
            texts.removeAll(keepingCapacity: true)
        }
        while keyRanges.count <= slot {
            keyRanges.append(0..<0)
            texts.append("")
        }
        let start = keyBytes.count
        keyBytes.append(contentsOf: bytes)
        keyRanges[slot] = start..<keyBytes.count
        texts[slot] = text
        return text
    }
}

/// The text a ``JSONString`` points into: the datagram, and the unescaped bytes of the strings
/// that had escapes (all of one datagram's in one buffer).
struct JSONText {
    let bytes: UnsafeRawBufferPointer
    let unescaped: [UInt8]
}

/// A string value as a byte range: of the datagram when it has no escapes (the common case, no
/// copy), else of the reader's unescaped bytes. Plain data, so the shapes that hold it are copied
/// without reference counting on the hot path.
enum JSONString: Sendable, Hashable {
    case raw(Range<Int>)
    case unescaped(Range<Int>)

    func withBytes<R>(in buffer: JSONText, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .raw(let range): return body(UnsafeRawBufferPointer(rebasing: buffer.bytes[range]))
        case .unescaped(let range): return buffer.unescaped.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
    }

    /// The string quoted for a rejection detail, cut to 40 characters and with control characters
    /// escaped: it is sender-controlled text going into logs.
    func excerpt(in buffer: JSONText) -> String {
        let text = string(in: buffer)
        let head = text.prefix(40).debugDescription
        return text.count > 40 ? head + "…" : head
    }

    func string(in buffer: JSONText) -> String {
        // The datagram was checked to be UTF-8 and unescaping writes valid UTF-8, so decoding
        // cannot substitute anything.
        withBytes(in: buffer) { String(decoding: $0, as: UTF8.self) }
    }
}

/// The JSON type of a value that is not the one a member needs, for rejection details.
enum JSONType: Sendable, Hashable, CustomStringConvertible {
    case string, object, array, boolean, null, number

    /// "a string", "an object", …: how details name the type.
    var description: String {
        switch self {
        case .string: "a string"
        case .object: "an object"
        case .array: "an array"
        case .boolean: "a boolean"
        case .null: "null"
        case .number: "a number"
        }
    }
}

/// What the syntax pass found: the members that matter, unvalidated.
struct MessageShape {
    /// The value of a member that the message needs, or why it cannot be used.
    enum Member {
        case absent
        case string(JSONString)
        /// Present with another JSON type.
        case other(JSONType)
    }

    struct EntryShape {
        var offset: Int
        var name: Member = .absent
        var type: Member = .absent
        var payload: Member = .absent
        /// Set when the element of `d` is not an object.
        var notAnObject: JSONType?
    }

    enum DataMember {
        case absent
        case legacy(JSONString)
        case entries([EntryShape])
        case other(JSONType)
    }

    var time: Member = .absent
    var data: DataMember = .absent
    var name: Member = .absent
    var end: Member = .absent

    typealias Rejection = MotionMessage.Rejection

    func validate(_ buffer: JSONText, texts: inout EntryTextCache) throws(Rejection) -> MotionMessage {
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
                let type = typeText.withBytes(in: buffer) { texts.string($0, slot: 2 * index + 1) }
                let payload = try Self.decodeBase64(payloadText, buffer, what: "entry \(index) of \"d\" (byte \(entry.offset))")
                let value: DataValue
                do throws(PayloadDecodingError) {
                    value = try DataValue.decode(type: type, payload: payload)
                } catch {
                    throw Rejection(reason: error.reason, detail: "entry \(index) of \"d\" (byte \(entry.offset)): \(error)")
                }
                let name = nameText.withBytes(in: buffer) { texts.string($0, slot: 2 * index) }
                entries.append(MotionMessage.Entry(name: name, type: type, payload: payload, value: value))
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

    private static func parseTime(_ text: JSONString, _ buffer: JSONText) throws(Rejection) -> Int64 {
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
    private static func decodeBase64(_ text: JSONString, _ buffer: JSONText, what: @autoclosure () -> String) throws(Rejection) -> [UInt8] {
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

/// Byte tests on eight bytes at once (a little-endian word: byte 0 in the low bits). Each returns
/// a mask with bit 7 of every byte set where the test holds; callers want the lowest such byte,
/// `trailingZeroBitCount / 8`.
enum SWAR {
    private static let low7: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    private static let high: UInt64 = 0x8080_8080_8080_8080

    /// Bytes equal to zero, exactly (no false positives in any byte).
    @inline(__always)
    static func zeroBytes(_ t: UInt64) -> UInt64 {
        ~(((t & low7) &+ low7) | t | low7)
    }

    @inline(__always)
    static func equalBytes(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        zeroBytes(word ^ (UInt64(byte) &* 0x0101_0101_0101_0101))
    }

    /// Bytes that are not JSON whitespace (space, LF, CR, tab), exactly.
    @inline(__always)
    static func nonWhitespace(_ word: UInt64) -> UInt64 {
        let whitespace = equalBytes(word, 0x20) | equalBytes(word, 0x0A) | equalBytes(word, 0x0D) | equalBytes(word, 0x09)
        return ~whitespace & high
    }

    /// Bytes that are `"`, `\` or below 0x20. The below-0x20 test can flag a byte above a true
    /// hit (a borrow), never below one, so the lowest flagged byte is exact.
    @inline(__always)
    static func stringSpecial(_ word: UInt64) -> UInt64 {
        let control = (word &- 0x2020_2020_2020_2020) & ~word & high
        return equalBytes(word, 0x22) | equalBytes(word, 0x5C) | control
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
