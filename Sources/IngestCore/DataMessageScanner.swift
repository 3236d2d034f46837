/// The single-pass reader of ``DatagramParser``'s first fast path: a data message as plugins
/// send it, read straight from the datagram's bytes with no allocation and no error text.
///
/// It accepts a subset of what the general reader (``JSONReader`` and ``MessageShape``)
/// accepts: one object with a `t` string and a non-empty `d` array of objects, each with exactly
/// the string members `n`, `t` and `p` once, with JSON whitespace and trailing commas anywhere the
/// general reader allows them, every string plain printable ASCII (no escape). For such a
/// datagram the general reader finds the same strings, so the two agree. Anything else — another
/// message, another member, an escape, a byte that is not ASCII, a duplicate, any error — makes
/// it step aside (nil) without saying why, and the general reader decides and words the
/// rejection.
///
/// Results are byte ranges of the datagram in flat slots: 0 is `t`, and entry `e` has its `n`,
/// `t` and `p` in slots `1 + 3e`, `2 + 3e` and `3 + 3e`.
struct DataMessageScanner {
    /// A slot not filled (yet).
    static let absent = Range<Int>(uncheckedBounds: (-1, -1))

    private let base: UnsafeRawPointer
    private let count: Int
    private var i = 0

    private static let quote = UInt8(ascii: "\""), backslash = UInt8(ascii: "\\")
    private static let comma = UInt8(ascii: ","), colon = UInt8(ascii: ":")
    private static let openBrace = UInt8(ascii: "{"), closeBrace = UInt8(ascii: "}")
    private static let openBracket = UInt8(ascii: "["), closeBracket = UInt8(ascii: "]")

    private init(base: UnsafeRawPointer, count: Int) {
        self.base = base
        self.count = count
    }

    /// Reads `bytes` as a data message; on success fills `spans` (flat slots, see above) and
    /// `order` (the slot of each string in datagram order) and returns the number of entries.
    static func scan(_ bytes: UnsafeRawBufferPointer, spans: inout [Range<Int>], order: inout [Int]) -> Int? {
        guard let base = bytes.baseAddress else { return nil }
        var scanner = DataMessageScanner(base: base, count: bytes.count)
        spans.removeAll(keepingCapacity: true)
        order.removeAll(keepingCapacity: true)
        spans.append(absent)
        guard scanner.message(spans: &spans, order: &order) else { return nil }
        return (spans.count &- 1) / 3
    }

    /// The index of the quote that closes a plain string whose first byte is at `start`, or nil
    /// when an escape, a control byte, a byte that is not ASCII or the end comes first.
    @inline(__always)
    static func plainStringEnd(_ base: UnsafeRawPointer, from start: Int, count: Int) -> Int? {
        var j = start
        while j &+ 8 <= count {
            let marked = SWAR.plainStringEnd(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: j, as: UInt64.self)))
            if marked != 0 {
                j &+= marked.trailingZeroBitCount &>> 3
                return base.load(fromByteOffset: j, as: UInt8.self) == quote ? j : nil
            }
            j &+= 8
        }
        while j < count {
            let byte = base.load(fromByteOffset: j, as: UInt8.self)
            if byte == quote { return j }
            guard byte >= 0x20, byte < 0x80, byte != backslash else { return nil }
            j &+= 1
        }
        return nil
    }

    // MARK: The message

    @inline(__always)
    private mutating func message(spans: inout [Range<Int>], order: inout [Int]) -> Bool {
        guard skipWhitespace() == Self.openBrace else { return false }
        i &+= 1
        var byte = skipWhitespace()
        var sawData = false
        while true {
            guard let key = memberKey(byte) else { return false }
            switch key {
            case UInt8(ascii: "t"):
                guard spans[0] == Self.absent, let text = plainString() else { return false }
                spans[0] = text
                order.append(0)
            case UInt8(ascii: "d"):
                guard !sawData, entries(spans: &spans, order: &order) else { return false }
                sawData = true
            default:
                return false
            }
            byte = skipWhitespace()
            if byte == Self.comma {
                i &+= 1
                byte = skipWhitespace()
                if byte == Self.closeBrace { break }
            } else if byte == Self.closeBrace {
                break
            } else {
                return false
            }
        }
        i &+= 1
        _ = skipWhitespace()
        return i == count && sawData && spans[0] != Self.absent
    }

    /// The array of `d`, the index at its `[`.
    @inline(__always)
    private mutating func entries(spans: inout [Range<Int>], order: inout [Int]) -> Bool {
        guard i < count, load(i) == Self.openBracket else { return false }
        i &+= 1
        var byte = skipWhitespace()
        while true {
            guard byte == Self.openBrace else { return false }
            i &+= 1
            let first = spans.count
            spans.append(Self.absent)
            spans.append(Self.absent)
            spans.append(Self.absent)
            byte = skipWhitespace()
            while true {
                guard let key = memberKey(byte) else { return false }
                let slot: Int
                switch key {
                case UInt8(ascii: "n"): slot = first
                case UInt8(ascii: "t"): slot = first &+ 1
                case UInt8(ascii: "p"): slot = first &+ 2
                default: return false
                }
                guard spans[slot] == Self.absent, let text = plainString() else { return false }
                spans[slot] = text
                order.append(slot)
                byte = skipWhitespace()
                if byte == Self.comma {
                    i &+= 1
                    byte = skipWhitespace()
                    if byte == Self.closeBrace { break }
                } else if byte == Self.closeBrace {
                    break
                } else {
                    return false
                }
            }
            i &+= 1
            guard spans[first] != Self.absent, spans[first &+ 1] != Self.absent, spans[first &+ 2] != Self.absent else { return false }
            byte = skipWhitespace()
            if byte == Self.comma {
                i &+= 1
                byte = skipWhitespace()
                if byte == Self.closeBracket { break }
            } else if byte == Self.closeBracket {
                break
            } else {
                return false
            }
        }
        i &+= 1
        return true
    }

    // MARK: Pieces

    /// A one-letter member name and the `:` after it, `byte` being the byte at the index; leaves
    /// the index at the value. Longer names are for the general reader.
    @inline(__always)
    private mutating func memberKey(_ byte: UInt8) -> UInt8? {
        guard byte == Self.quote, i &+ 2 < count, load(i &+ 2) == Self.quote else { return nil }
        let key = load(i &+ 1)
        i &+= 3
        guard skipWhitespace() == Self.colon else { return nil }
        i &+= 1
        _ = skipWhitespace()
        return key
    }

    /// A plain string starting at its opening quote at the index; leaves the index after the
    /// closing quote and returns the range between the quotes.
    @inline(__always)
    private mutating func plainString() -> Range<Int>? {
        guard i < count, load(i) == Self.quote else { return nil }
        let start = i &+ 1
        guard let end = Self.plainStringEnd(base, from: start, count: count) else { return nil }
        i = end &+ 1
        return Range(uncheckedBounds: (start, end))
    }

    /// Skips JSON whitespace; returns the byte at the new index, or 0 at the end (a 0 byte in
    /// the datagram is refused wherever it is compared, so the two need not be told apart).
    @inline(__always)
    private mutating func skipWhitespace() -> UInt8 {
        guard i < count else { return 0 }
        let byte = load(i)
        if byte > 0x20 { return byte }
        return skipWhitespaceRun()
    }

    @inline(__always)
    private mutating func skipWhitespaceRun() -> UInt8 {
        while i &+ 8 <= count {
            let marked = SWAR.nonWhitespace(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: i, as: UInt64.self)))
            if marked != 0 {
                i &+= marked.trailingZeroBitCount &>> 3
                return load(i)
            }
            i &+= 8
        }
        while i < count {
            let byte = load(i)
            guard byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09 else { return byte }
            i &+= 1
        }
        return 0
    }

    @inline(__always)
    private func load(_ offset: Int) -> UInt8 {
        base.load(fromByteOffset: offset, as: UInt8.self)
    }
}
