/// ``DatagramParser``'s second fast path: the last data datagram that ``DataMessageScanner``
/// read, cut into its strings and the bytes between them.
///
/// A plugin builds every data datagram with the same code, so the bytes between the strings —
/// braces, brackets, commas, colons, member names and whitespace — repeat exactly from one
/// datagram to the next; only the strings (time, names, types, payloads) change. A datagram whose
/// bytes are the template's between-pieces, word for word, with plain strings (printable ASCII,
/// no escape) of any length in between, has the same JSON structure as the template's datagram:
/// no quote can occur inside a plain string, so its strings start and end at the same pieces, and
/// the pieces hold every other token. It is therefore a data message of the same entries, and the
/// general reader would find exactly these strings. Matching is a comparison of a few words per
/// piece and a scan of each string, instead of reading the JSON again.
///
/// Any difference (another layout, another entry count, an escape) makes ``match(_:spans:)``
/// step aside; the scanner then reads the datagram and may record it as the new template.
struct ShapeTemplate: Sendable {
    /// The datagram the template was taken from.
    private var bytes: [UInt8] = []
    /// String `k` (in datagram order) spans `bytes[cuts[2k] ..< cuts[2k + 1]]`; the pieces
    /// between are the rest.
    private var cuts: [Int] = []
    /// The scanner's slot of string `k`.
    private var slots: [Int] = []
    private var entryCount = 0

    /// Creates an empty template, which matches nothing.
    init() {}

    /// Takes the scanner's reading of `datagram` as the template.
    mutating func record(_ datagram: UnsafeRawBufferPointer, spans: [Range<Int>], order: [Int], entryCount: Int) {
        bytes.removeAll(keepingCapacity: true)
        bytes.append(contentsOf: datagram)
        cuts.removeAll(keepingCapacity: true)
        slots.removeAll(keepingCapacity: true)
        for slot in order {
            cuts.append(spans[slot].lowerBound)
            cuts.append(spans[slot].upperBound)
            slots.append(slot)
        }
        self.entryCount = entryCount
    }

    /// When `datagram` is laid out as the template, fills `spans` as the scanner would and
    /// returns the number of entries; else nil.
    func match(_ datagram: UnsafeRawBufferPointer, spans: inout [Range<Int>]) -> Int? {
        guard !slots.isEmpty, let base = datagram.baseAddress else { return nil }
        let count = datagram.count
        let strings = 1 &+ 3 &* entryCount
        if spans.count != strings {
            spans.removeAll(keepingCapacity: true)
            spans.append(contentsOf: repeatElement(DataMessageScanner.absent, count: strings))
        }
        let matched = bytes.withUnsafeBytes { template in
            cuts.withUnsafeBufferPointer { cuts in
                slots.withUnsafeBufferPointer { slots in
                    spans.withUnsafeMutableBufferPointer { spans in
                        Self.match(base, count: count, template: template.baseAddress!, templateCount: template.count,
                                   cuts: cuts, slots: slots, spans: spans)
                    }
                }
            }
        }
        return matched ? entryCount : nil
    }

    private static func match(
        _ base: UnsafeRawPointer, count: Int, template: UnsafeRawPointer, templateCount: Int,
        cuts: UnsafeBufferPointer<Int>, slots: UnsafeBufferPointer<Int>, spans: UnsafeMutableBufferPointer<Range<Int>>
    ) -> Bool {
        var j = 0
        var pieceStart = 0
        for k in 0..<slots.count {
            let pieceEnd = cuts[2 &* k]
            let length = pieceEnd &- pieceStart
            guard j &+ length <= count, SWAR.equal(base + j, template + pieceStart, count: length) else { return false }
            j &+= length
            // Most strings are as long as the template's (base64 of a float64, a type, a name):
            // checking that guess keeps the next piece's position off the scan's result, so the
            // comparisons of one datagram do not wait on each other.
            let guess = j &+ (cuts[2 &* k &+ 1] &- pieceEnd)
            let end: Int
            if guess < count, base.load(fromByteOffset: guess, as: UInt8.self) == UInt8(ascii: "\""),
               isPlain(base, from: j, to: guess, count: count) {
                end = guess
            } else {
                guard let found = DataMessageScanner.plainStringEnd(base, from: j, count: count) else { return false }
                end = found
            }
            spans[slots[k]] = Range(uncheckedBounds: (j, end))
            j = end
            pieceStart = cuts[2 &* k &+ 1]
        }
        let length = templateCount &- pieceStart
        return count &- j == length && SWAR.equal(base + j, template + pieceStart, count: length)
    }

    /// Whether `base[start..<end]` holds no byte that ends a plain string (see
    /// ``SWAR/plainStringEnd(_:)``); `end < count`. A short string needs a whole word inside the
    /// datagram, else the answer is false and the caller scans.
    @inline(__always)
    private static func isPlain(_ base: UnsafeRawPointer, from start: Int, to end: Int, count: Int) -> Bool {
        let length = end &- start
        @inline(__always) func marks(_ offset: Int) -> UInt64 {
            SWAR.plainStringEnd(UInt64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt64.self)))
        }
        if length >= 8 {
            // Whole words, the last one overlapping the one before. A false mark only ever sits
            // above a true one, so no mark at all means no special byte.
            var marked: UInt64 = 0
            var k = start
            while k &+ 8 < end {
                marked |= marks(k)
                k &+= 8
            }
            return marked | marks(end &- 8) == 0
        }
        if length == 0 { return true }
        guard start &+ 8 <= count else { return false }
        // The bytes of the string only: a false mark above a true one does not matter, and
        // below the first true mark there is none.
        return marks(start) & (UInt64.max >> (64 &- 8 &* UInt64(length))) == 0
    }
}
