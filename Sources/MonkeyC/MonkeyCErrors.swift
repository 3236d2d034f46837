/// Why a ``MonkeyCValue`` cannot be serialized.
public enum MonkeyCEncodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A string's UTF-8 form is longer than the 65,534 bytes its `u16` length field (length + 1) can say.
    case stringTooLong(utf8Count: Int)
    /// Containers nest deeper than the limit the decoder accepts (``MonkeyCSerialization/maximumNestingDepth``).
    case nestingTooDeep(limit: Int)
    /// An array, dictionary or byte array has more elements than a `u32` count can say.
    case containerTooLarge(count: Int)
    /// A block would exceed the 4 GiB a `u32` block length can say.
    case blockTooLarge(byteCount: Int)

    /// What went wrong and what to do about it.
    public var description: String {
        switch self {
        case .stringTooLong(let count):
            "a string of \(count) UTF-8 bytes cannot be serialized: Monkey C strings hold at most 65,534 bytes; split it"
        case .nestingTooDeep(let limit):
            "the value nests containers deeper than \(limit) levels, more than a decoder accepts; flatten it"
        case .containerTooLarge(let count):
            "a container of \(count) elements exceeds the u32 count of the serialization; send it in parts"
        case .blockTooLarge(let count):
            "the serialized block would be \(count) bytes, more than its u32 length can say; send smaller messages"
        }
    }
}

/// Why bytes are not a serialized ``MonkeyCValue``: where (``offset`` into the input) and what was
/// expected there.
public struct MonkeyCDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong at ``offset``.
    public enum Problem: Sendable, Hashable {
        /// The input ended (or the enclosing block ended) before `needed` more bytes of `expected`.
        case truncated(expected: String, needed: Int, available: Int)
        /// Neither the string block magic `AB CD AB CD` nor the object block magic `DA 7A DA 7A` (`found`).
        case badMagic(found: [UInt8])
        /// A type tag this decoder does not know.
        case unknownTag(UInt8)
        /// A container's count promises more objects than the bytes left in the object block could hold
        /// (each object takes at least one byte), so it is not believed.
        case countExceedsData(count: UInt32, bytesLeft: Int)
        /// A string reference, but the message has no string block.
        case missingStringBlock
        /// A string reference whose offset does not point at a string inside the string block.
        case badStringOffset(UInt32, blockLength: Int)
        /// A string entry whose length field is 0 (it counts the terminating `00`, so it is at least 1).
        case zeroStringLength
        /// A string entry not ending in `00`.
        case missingStringTerminator(found: UInt8)
        /// A string's bytes are not valid UTF-8.
        case invalidUTF8
        /// Containers nest deeper than the limit.
        case nestingTooDeep(limit: Int)
        /// The object block's objects end before its declared length (`unused` bytes left over).
        case objectBlockLengthMismatch(declared: Int, unused: Int)
        /// Bytes after the object block that are not zero padding.
        case trailingBytes(count: Int)
    }

    /// Byte offset into the decoded input where the problem was found.
    public var offset: Int
    /// What was wrong there.
    public var problem: Problem

    /// Creates an error at `offset`.
    public init(offset: Int, problem: Problem) {
        self.offset = offset
        self.problem = problem
    }

    /// Offset, what was expected, and what to do about it.
    public var description: String {
        let what: String
        switch problem {
        case let .truncated(expected, needed, available):
            what = "expected \(expected) (\(needed) bytes) but only \(available) remain; the message was cut short"
        case .badMagic(let found):
            let hex = found.map { byte in String(byte, radix: 16).count == 1 ? "0" + String(byte, radix: 16) : String(byte, radix: 16) }
            what = "expected block magic ab cd ab cd (strings) or da 7a da 7a (objects), found \(hex.joined(separator: " ")); not a Monkey C message"
        case .unknownTag(let tag):
            what = "expected a type tag (00 01 02 03 05 09 0b 0e 0f 13 14), found 0x\(String(tag, radix: 16)); the message uses a type this decoder does not know"
        case let .countExceedsData(count, left):
            what = "container count \(count) cannot fit in the \(left) bytes left in the object block; the count is corrupt"
        case .missingStringBlock:
            what = "a string reference, but the message has no string block (ab cd ab cd) before its objects"
        case let .badStringOffset(stringOffset, length):
            what = "string offset \(stringOffset) does not point at a string inside the \(length)-byte string block"
        case .zeroStringLength:
            what = "a string length field of 0; it counts the terminating 00, so it must be at least 1"
        case .missingStringTerminator(let found):
            what = "expected the 00 that ends a string, found 0x\(String(found, radix: 16))"
        case .invalidUTF8:
            what = "a string whose bytes are not valid UTF-8"
        case .nestingTooDeep(let limit):
            what = "containers nest deeper than \(limit) levels; refusing to build the value (raise maximumDepth if this is legitimate)"
        case let .objectBlockLengthMismatch(declared, unused):
            what = "the object block declares \(declared) bytes but its objects end with \(unused) bytes unused"
        case .trailingBytes(let count):
            what = "\(count) bytes after the object block that are not zero padding"
        }
        return "Monkey C value at byte \(offset): \(what)"
    }
}
