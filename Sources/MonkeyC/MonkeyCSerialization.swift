/// The Connect IQ message serialization of Monkey C values (docs/connectiq-link.md, "Monkey C
/// value serialization").
///
/// Big-endian throughout. A message is up to two blocks:
/// 1. a string block (left out when the value holds no string): magic `AB CD AB CD`, `len(u32)`,
///    then each distinct string once as `u16 (UTF-8 length + 1)`, the bytes, `00`. Strings are
///    interned in the order the object block meets them and referenced by their offset from the
///    first byte after `len`;
/// 2. the object block: magic `DA 7A DA 7A`, `len(u32)`, then the objects breadth-first (the top
///    value, then the children of every container of one level, in order, before any child of the
///    next level). A dictionary's children are its pairs interleaved, key first.
///
/// ``encode(_:)`` writes dictionary pairs sorted by key in ``MonkeyCValue/canonicallyPrecedes(_:_:)``
/// order, so the same value always gives the same bytes; ``decode(_:maximumDepth:)`` accepts any
/// order and keeps the order it read.
public enum MonkeyCSerialization {
    /// Magic of the string block.
    public static let stringBlockMagic: [UInt8] = [0xAB, 0xCD, 0xAB, 0xCD]
    /// Magic of the object block.
    public static let objectBlockMagic: [UInt8] = [0xDA, 0x7A, 0xDA, 0x7A]
    /// The deepest nesting ``encode(_:)`` writes and ``decode(_:maximumDepth:)`` accepts by default:
    /// the top value is at depth 0, a container's elements one deeper.
    public static let maximumNestingDepth = 128

    /// The type tags of the serialization.
    public enum Tag {
        /// `null`.
        public static let null: UInt8 = 0x00
        /// 32-bit signed integer.
        public static let int32: UInt8 = 0x01
        /// 32-bit float.
        public static let float32: UInt8 = 0x02
        /// String reference (u32 offset into the string block).
        public static let string: UInt8 = 0x03
        /// Array (u32 count).
        public static let array: UInt8 = 0x05
        /// Boolean (1 byte).
        public static let bool: UInt8 = 0x09
        /// Dictionary (u32 pair count).
        public static let dictionary: UInt8 = 0x0B
        /// 64-bit signed integer.
        public static let int64: UInt8 = 0x0E
        /// 64-bit float.
        public static let double: UInt8 = 0x0F
        /// Char (u32 code point).
        public static let char: UInt8 = 0x13
        /// Byte array (u32 length, bytes).
        public static let byteArray: UInt8 = 0x14
    }

    // MARK: Encoding

    /// Serializes `value`: the string block (when the value holds a string), then the object block.
    ///
    /// - Throws: ``MonkeyCEncodingError`` when a string is longer than 65,534 UTF-8 bytes, the value
    ///   nests deeper than ``maximumNestingDepth``, or a count or block exceeds `u32`.
    public static func encode(_ value: MonkeyCValue) throws(MonkeyCEncodingError) -> [UInt8] {
        var strings: [UInt8] = []
        var stringOffsets: [StringTableKey: UInt32] = [:]
        var objects: [UInt8] = []

        // Breadth-first: a FIFO of (value, depth); children are appended as their parent is written.
        var queue: [(value: MonkeyCValue, depth: Int)] = [(value, 0)]
        var head = 0
        while head < queue.count {
            let (current, depth) = queue[head]
            head += 1
            if depth > maximumNestingDepth { throw .nestingTooDeep(limit: maximumNestingDepth) }
            switch current {
            case .null:
                objects.append(Tag.null)
            case .bool(let flag):
                objects.append(Tag.bool)
                objects.append(flag ? 1 : 0)
            case .int32(let number):
                objects.append(Tag.int32)
                appendBigEndian(UInt32(bitPattern: number), to: &objects)
            case .int64(let number):
                objects.append(Tag.int64)
                appendBigEndian(UInt64(bitPattern: number), to: &objects)
            case .float32(let number):
                objects.append(Tag.float32)
                appendBigEndian(number.bitPattern, to: &objects)
            case .double(let number):
                objects.append(Tag.double)
                appendBigEndian(number.bitPattern, to: &objects)
            case .char(let code):
                objects.append(Tag.char)
                appendBigEndian(code, to: &objects)
            case .string(let text):
                let utf8 = Array(text.utf8)
                let offset: UInt32
                if let known = stringOffsets[StringTableKey(utf8: utf8)] {
                    offset = known
                } else {
                    guard utf8.count <= Int(UInt16.max) - 1 else { throw .stringTooLong(utf8Count: utf8.count) }
                    guard strings.count <= Int(UInt32.max) else { throw .blockTooLarge(byteCount: strings.count) }
                    offset = UInt32(strings.count)
                    stringOffsets[StringTableKey(utf8: utf8)] = offset
                    appendBigEndian(UInt16(utf8.count + 1), to: &strings)
                    strings.append(contentsOf: utf8)
                    strings.append(0)
                }
                objects.append(Tag.string)
                appendBigEndian(offset, to: &objects)
            case .byteArray(let bytes):
                guard let count = UInt32(exactly: bytes.count) else { throw .containerTooLarge(count: bytes.count) }
                objects.append(Tag.byteArray)
                appendBigEndian(count, to: &objects)
                objects.append(contentsOf: bytes)
            case .array(let items):
                guard let count = UInt32(exactly: items.count) else { throw .containerTooLarge(count: items.count) }
                objects.append(Tag.array)
                appendBigEndian(count, to: &objects)
                for item in items { queue.append((item, depth + 1)) }
            case .dictionary(let pairs):
                guard let count = UInt32(exactly: pairs.count) else { throw .containerTooLarge(count: pairs.count) }
                objects.append(Tag.dictionary)
                appendBigEndian(count, to: &objects)
                for pair in MonkeyCValue.canonicallySorted(pairs) {
                    queue.append((pair.key, depth + 1))
                    queue.append((pair.value, depth + 1))
                }
            }
            // Let finished entries go: a long message should not keep every value alive twice.
            if head > 1024, head * 2 > queue.count {
                queue.removeFirst(head)
                head = 0
            }
        }

        guard let objectLength = UInt32(exactly: objects.count) else { throw .blockTooLarge(byteCount: objects.count) }
        guard let stringLength = UInt32(exactly: strings.count) else { throw .blockTooLarge(byteCount: strings.count) }
        var output: [UInt8] = []
        output.reserveCapacity((strings.isEmpty ? 0 : strings.count + 8) + objects.count + 8)
        if !strings.isEmpty {
            output.append(contentsOf: stringBlockMagic)
            appendBigEndian(stringLength, to: &output)
            output.append(contentsOf: strings)
        }
        output.append(contentsOf: objectBlockMagic)
        appendBigEndian(objectLength, to: &output)
        output.append(contentsOf: objects)
        return output
    }

    // MARK: Decoding

    /// Parses one serialized value.
    ///
    /// Total: any bytes give a value or a ``MonkeyCDecodingError`` naming the offset and what was
    /// expected; no count read from the input is trusted for an allocation before it is checked
    /// against the bytes that remain. Bytes after the object block are accepted only when they are
    /// all zero (the padding of an XXTEA-encrypted transfer).
    ///
    /// - Parameters:
    ///   - bytes: the serialized message.
    ///   - maximumDepth: the deepest nesting accepted (the top value is at depth 0).
    public static func decode(
        _ bytes: some Collection<UInt8>,
        maximumDepth: Int = maximumNestingDepth
    ) throws(MonkeyCDecodingError) -> MonkeyCValue {
        var decoder = Decoder(bytes: Array(bytes), maximumDepth: maximumDepth)
        return try decoder.decode()
    }

    static func appendBigEndian<T: FixedWidthInteger>(_ value: T, to output: inout [UInt8]) {
        var big = value.bigEndian
        withUnsafeBytes(of: &big) { output.append(contentsOf: $0) }
    }
}

/// The single-use state of one decode.
private struct Decoder {
    /// One object as read from the object block; containers name where their children start.
    enum Node {
        case scalar(MonkeyCValue)
        case array(count: Int, firstChild: Int)
        case dictionary(pairs: Int, firstChild: Int)
    }

    let bytes: [UInt8]
    let maximumDepth: Int
    var stringBlock: Range<Int>?
    var stringCache: [UInt32: String] = [:]

    init(bytes: [UInt8], maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    mutating func decode() throws(MonkeyCDecodingError) -> MonkeyCValue {
        var position = 0
        var magic = try readMagic(at: position)
        if magic == MonkeyCSerialization.stringBlockMagic {
            let length = Int(try readUInt32(at: position + 4, end: bytes.count, what: "the string block length"))
            let start = position + 8
            guard length <= bytes.count - start else {
                throw MonkeyCDecodingError(
                    offset: start,
                    problem: .truncated(expected: "the string block", needed: length, available: bytes.count - start))
            }
            stringBlock = start..<(start + length)
            position = start + length
            magic = try readMagic(at: position)
        }
        guard magic == MonkeyCSerialization.objectBlockMagic else {
            throw MonkeyCDecodingError(offset: position, problem: .badMagic(found: magic))
        }
        let length = Int(try readUInt32(at: position + 4, end: bytes.count, what: "the object block length"))
        let start = position + 8
        guard length <= bytes.count - start else {
            throw MonkeyCDecodingError(
                offset: start, problem: .truncated(expected: "the object block", needed: length, available: bytes.count - start))
        }
        let end = start + length
        let value = try decodeObjects(from: start, to: end)
        if let nonZero = bytes[end...].firstIndex(where: { $0 != 0 }) {
            throw MonkeyCDecodingError(offset: nonZero, problem: .trailingBytes(count: bytes.count - end))
        }
        return value
    }

    /// Reads the objects of `start..<end` breadth-first, then builds the value bottom-up (children
    /// always come after their parent, so building from the last node needs no recursion).
    mutating func decodeObjects(from start: Int, to end: Int) throws(MonkeyCDecodingError) -> MonkeyCValue {
        var nodes: [Node] = []
        var depths: [Int] = [0]
        var expected = 1
        var position = start
        while nodes.count < expected {
            guard position < end else {
                throw MonkeyCDecodingError(
                    offset: position,
                    problem: .truncated(expected: "a type tag (\(expected - nodes.count) objects still due)", needed: 1, available: 0))
            }
            let depth = depths[nodes.count]
            let tagOffset = position
            let tag = bytes[position]
            position += 1
            switch tag {
            case MonkeyCSerialization.Tag.null:
                nodes.append(.scalar(.null))
            case MonkeyCSerialization.Tag.bool:
                let byte = try read(1, at: position, end: end, what: "a boolean byte")
                nodes.append(.scalar(.bool(bytes[byte] != 0)))
                position += 1
            case MonkeyCSerialization.Tag.int32:
                let raw = try readUInt32(at: position, end: end, what: "an int32")
                nodes.append(.scalar(.int32(Int32(bitPattern: raw))))
                position += 4
            case MonkeyCSerialization.Tag.int64:
                let raw = try readUInt64(at: position, end: end, what: "an int64")
                nodes.append(.scalar(.int64(Int64(bitPattern: raw))))
                position += 8
            case MonkeyCSerialization.Tag.float32:
                let raw = try readUInt32(at: position, end: end, what: "a float32")
                nodes.append(.scalar(.float32(Float(bitPattern: raw))))
                position += 4
            case MonkeyCSerialization.Tag.double:
                let raw = try readUInt64(at: position, end: end, what: "a double")
                nodes.append(.scalar(.double(Double(bitPattern: raw))))
                position += 8
            case MonkeyCSerialization.Tag.char:
                let raw = try readUInt32(at: position, end: end, what: "a char")
                nodes.append(.scalar(.char(raw)))
                position += 4
            case MonkeyCSerialization.Tag.string:
                let reference = try readUInt32(at: position, end: end, what: "a string offset")
                let text = try string(at: reference, referencedFrom: position)
                nodes.append(.scalar(.string(text)))
                position += 4
            case MonkeyCSerialization.Tag.byteArray:
                let count = Int(try readUInt32(at: position, end: end, what: "a byte array length"))
                position += 4
                let first = try read(count, at: position, end: end, what: "the bytes of a byte array")
                nodes.append(.scalar(.byteArray(Array(bytes[first..<(first + count)]))))
                position += count
            case MonkeyCSerialization.Tag.array, MonkeyCSerialization.Tag.dictionary:
                let isArray = tag == MonkeyCSerialization.Tag.array
                let count = try readUInt32(at: position, end: end, what: isArray ? "an array count" : "a dictionary pair count")
                position += 4
                let children = Int(count) * (isArray ? 1 : 2)
                // Every object still due takes at least one byte: refuse counts the block cannot hold.
                let stillDue = expected - nodes.count - 1
                guard children <= end - position - stillDue else {
                    throw MonkeyCDecodingError(
                        offset: tagOffset + 1, problem: .countExceedsData(count: count, bytesLeft: end - position))
                }
                if children > 0 && depth + 1 > maximumDepth {
                    throw MonkeyCDecodingError(offset: tagOffset, problem: .nestingTooDeep(limit: maximumDepth))
                }
                nodes.append(isArray ? .array(count: children, firstChild: expected) : .dictionary(pairs: Int(count), firstChild: expected))
                expected += children
                depths.append(contentsOf: repeatElement(depth + 1, count: children))
            default:
                throw MonkeyCDecodingError(offset: tagOffset, problem: .unknownTag(tag))
            }
        }
        guard position == end else {
            throw MonkeyCDecodingError(offset: position, problem: .objectBlockLengthMismatch(declared: end - start, unused: end - position))
        }

        var values = [MonkeyCValue](repeating: .null, count: nodes.count)
        for index in nodes.indices.reversed() {
            switch nodes[index] {
            case .scalar(let value):
                values[index] = value
            case let .array(count, firstChild):
                values[index] = .array(Array(values[firstChild..<(firstChild + count)]))
            case let .dictionary(pairs, firstChild):
                var built: [MonkeyCPair] = []
                built.reserveCapacity(pairs)
                for pair in 0..<pairs {
                    built.append(MonkeyCPair(values[firstChild + 2 * pair], values[firstChild + 2 * pair + 1]))
                }
                values[index] = .dictionary(built)
            }
            // Free children once their parent holds them (keeps peak memory near one copy).
            if case let .array(count, firstChild) = nodes[index], count > 0 {
                for child in firstChild..<(firstChild + count) { values[child] = .null }
            } else if case let .dictionary(pairs, firstChild) = nodes[index], pairs > 0 {
                for child in firstChild..<(firstChild + 2 * pairs) { values[child] = .null }
            }
        }
        return values[0]
    }

    /// The string whose entry starts `reference` bytes into the string block.
    mutating func string(at reference: UInt32, referencedFrom offset: Int) throws(MonkeyCDecodingError) -> String {
        if let cached = stringCache[reference] { return cached }
        guard let block = stringBlock else {
            throw MonkeyCDecodingError(offset: offset, problem: .missingStringBlock)
        }
        guard Int(reference) <= block.count - 2 else {
            throw MonkeyCDecodingError(offset: offset, problem: .badStringOffset(reference, blockLength: block.count))
        }
        let entry = block.lowerBound + Int(reference)
        let length = Int(bytes[entry]) << 8 | Int(bytes[entry + 1])
        guard length > 0 else {
            throw MonkeyCDecodingError(offset: entry, problem: .zeroStringLength)
        }
        let textStart = entry + 2
        guard length <= block.upperBound - textStart else {
            throw MonkeyCDecodingError(
                offset: textStart,
                problem: .truncated(expected: "a string's bytes and terminator", needed: length, available: block.upperBound - textStart))
        }
        let terminator = textStart + length - 1
        guard bytes[terminator] == 0 else {
            throw MonkeyCDecodingError(offset: terminator, problem: .missingStringTerminator(found: bytes[terminator]))
        }
        guard let text = String(validating: bytes[textStart..<terminator], as: UTF8.self) else {
            throw MonkeyCDecodingError(offset: textStart, problem: .invalidUTF8)
        }
        stringCache[reference] = text
        return text
    }

    func readMagic(at position: Int) throws(MonkeyCDecodingError) -> [UInt8] {
        let start = try read(4, at: position, end: bytes.count, what: "a block magic (ab cd ab cd or da 7a da 7a)")
        return Array(bytes[start..<(start + 4)])
    }

    /// Checks that `count` bytes are available at `position` before `end`; returns `position`.
    func read(_ count: Int, at position: Int, end: Int, what: String) throws(MonkeyCDecodingError) -> Int {
        let available = max(0, end - position)
        guard count <= available else {
            throw MonkeyCDecodingError(offset: position, problem: .truncated(expected: what, needed: count, available: available))
        }
        return position
    }

    func readUInt32(at position: Int, end: Int, what: String) throws(MonkeyCDecodingError) -> UInt32 {
        let start = try read(4, at: position, end: end, what: what)
        return bytes[start..<(start + 4)].reduce(0) { $0 << 8 | UInt32($1) }
    }

    func readUInt64(at position: Int, end: Int, what: String) throws(MonkeyCDecodingError) -> UInt64 {
        let start = try read(8, at: position, end: end, what: what)
        return bytes[start..<(start + 8)].reduce(0) { $0 << 8 | UInt64($1) }
    }
}

/// A string table entry's UTF-8 bytes as a dictionary key: equal when the bytes are (so two
/// canonically equivalent spellings keep their own entries, as with `[UInt8]` keys), hashed as one
/// block of bytes rather than byte by byte as `[UInt8]` hashes itself (the encoder looks up every
/// string of every message).
struct StringTableKey: Hashable {
    var utf8: [UInt8]

    func hash(into hasher: inout Hasher) {
        utf8.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
