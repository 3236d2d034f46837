/// One original byte string and its replacement, found wherever it stands between the right
/// neighbours: the text layer of redaction (manifest, traces, API-call records, MQTT strings).
public struct ByteSubstitution: Sendable, Hashable {
    /// What a match must not touch on either side.
    public enum Boundary: Sendable, Hashable {
        /// Anywhere.
        case none
        /// Not beside a letter, digit or `_` (a name inside a longer word is another word).
        case word
        /// As ``word``, or preceded by its own big-endian 16-bit length (an MQTT string).
        case wordOrLengthPrefix
        /// Not beside a hex digit or `:` (a spelled address inside a longer hex string is not it).
        case hex
        /// Not beside a digit or `.` (a dotted IPv4 address).
        case dotted
        /// Text spelled in hex: the match starts on a byte of the hex run (an even number of hex
        /// digits before it) and the bytes the digits around it spell are not letters, digits or
        /// `_` (so `demo` in hex is not replaced inside `iotdemo` in hex).
        case hexWord
        /// Bytes spelled in hex inside a longer hex string: the match starts on a byte of the hex
        /// run (an even number of hex digits before it) and ends on one (an even number after).
        case hexAligned
    }

    /// The bytes looked for.
    public var original: [UInt8]
    /// The bytes put in their place.
    public var replacement: [UInt8]
    /// What may stand beside a match.
    public var boundary: Boundary

    /// A substitution of `original` by `replacement`.
    public init(_ original: [UInt8], _ replacement: [UInt8], boundary: Boundary) {
        self.original = original
        self.replacement = replacement
        self.boundary = boundary
    }

    /// Whether `byte` is a letter, digit or `_`.
    static func isWord(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || byte == 0x5F
    }

    private static func isHex(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66) || byte == 0x3A
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool { byte != 0x3A && isHex(byte) }

    private static func hexByte(_ high: UInt8, _ low: UInt8) -> UInt8? {
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x41...0x46: c - 0x41 + 10
            case 0x61...0x66: c - 0x61 + 10
            default: nil
            }
        }
        guard let h = value(high), let l = value(low) else { return nil }
        return h << 4 | l
    }

    private static func isDotted(_ byte: UInt8) -> Bool { (byte >= 0x30 && byte <= 0x39) || byte == 0x2E }

    func allows(_ bytes: [UInt8], at start: Int) -> Bool {
        let end = start + original.count
        let before: UInt8? = start > 0 ? bytes[start - 1] : nil
        let after: UInt8? = end < bytes.count ? bytes[end] : nil
        func clear(_ test: (UInt8) -> Bool) -> Bool { !(before.map(test) ?? false) && !(after.map(test) ?? false) }
        switch boundary {
        case .none: return true
        case .word: return clear(Self.isWord)
        case .hex: return clear(Self.isHex)
        case .dotted: return clear(Self.isDotted)
        case .hexAligned:
            var before = 0
            while start - before - 1 >= 0, Self.isHexDigit(bytes[start - before - 1]) { before += 1 }
            var after = 0
            while end + after < bytes.count, Self.isHexDigit(bytes[end + after]) { after += 1 }
            return before % 2 == 0 && after % 2 == 0
        case .hexWord:
            var run = 0
            while start - run - 1 >= 0, Self.isHexDigit(bytes[start - run - 1]) { run += 1 }
            guard run % 2 == 0 else { return false }
            if run >= 2, let byte = Self.hexByte(bytes[start - 2], bytes[start - 1]), Self.isWord(byte) { return false }
            if end + 1 < bytes.count, let byte = Self.hexByte(bytes[end], bytes[end + 1]), Self.isWord(byte) { return false }
            return true
        case .wordOrLengthPrefix:
            if clear(Self.isWord) { return true }
            guard start >= 2, original.count <= 0xFFFF else { return false }
            return bytes[start - 2] == UInt8(original.count >> 8) && bytes[start - 1] == UInt8(original.count & 0xFF)
        }
    }

    /// Replaces, left to right and without overlaps, every allowed match of any of `substitutions`
    /// in `bytes` (the first in the list wins where several match at one place: give them longest
    /// first). Returns how many it replaced. Linear in `bytes` times the candidates per first byte.
    @discardableResult
    public static func apply(_ substitutions: [ByteSubstitution], to bytes: inout [UInt8]) -> Int {
        apply(substitutions, to: &bytes, where: { _, _ in true })
    }

    /// ``apply(_:to:)`` for the matches `accept` takes (given the match's start and length).
    @discardableResult
    static func apply(_ substitutions: [ByteSubstitution], to bytes: inout [UInt8], where accept: (Int, Int) -> Bool) -> Int {
        guard !substitutions.isEmpty, !bytes.isEmpty else { return 0 }
        var byFirst = [[ByteSubstitution]](repeating: [], count: 256)
        for s in substitutions where !s.original.isEmpty { byFirst[Int(s.original[0])].append(s) }
        let input = bytes
        var output: [UInt8] = []
        var copied = 0
        var count = 0
        var i = 0
        input.withUnsafeBufferPointer { buffer in
            while i < buffer.count {
                let candidates = byFirst[Int(buffer[i])]
                var matched: ByteSubstitution?
                if !candidates.isEmpty {
                    for s in candidates where i + s.original.count <= buffer.count {
                        var equal = true
                        for k in 1..<max(1, s.original.count) where buffer[i + k] != s.original[k] { equal = false; break }
                        if equal, s.allows(input, at: i), accept(i, s.original.count) {
                            matched = s
                            break
                        }
                    }
                }
                guard let s = matched else { i += 1; continue }
                if count == 0 { output.reserveCapacity(buffer.count) }
                output += buffer[copied..<i]
                output += s.replacement
                i += s.original.count
                copied = i
                count += 1
            }
        }
        if count > 0 {
            output += input[copied...]
            bytes = output
        }
        return count
    }

    /// Whether any of `originals` occurs anywhere in `bytes` (a test's leak search).
    public static func containsAny(_ originals: [[UInt8]], in bytes: [UInt8]) -> [UInt8]? {
        for original in originals where !original.isEmpty && original.count <= bytes.count {
            let first = original[0]
            var i = 0
            while i + original.count <= bytes.count {
                if bytes[i] == first, bytes[i..<(i + original.count)].elementsEqual(original) { return original }
                i += 1
            }
        }
        return nil
    }
}
