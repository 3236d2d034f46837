/// ``DatagramParser``'s second fast path: the last few data datagrams that ``DataMessageScanner``
/// read, each cut into its varying strings and the bytes between them.
///
/// A plugin builds every data datagram with the same code, so everything but the sample time and
/// the payloads — braces, brackets, commas, colons, member names, whitespace, and the entries'
/// names and types — repeats exactly from one datagram to the next. A datagram whose bytes are a
/// layout's fixed pieces, word for word, with plain strings (printable ASCII, no escape) of any
/// length where the time and the payloads go, has the same JSON structure as the layout's
/// datagram: no quote can occur inside a plain string, so its strings start and end at the same
/// pieces, and the pieces hold every other token. It is therefore a data message with the same
/// entries, named and typed as the layout's, and the general reader would find exactly these
/// strings. Matching is a comparison of a few words per piece and a scan of each varying string,
/// instead of reading the JSON again; the names and types are the layout's strings, so they are
/// neither compared one by one nor looked up.
///
/// Several layouts are kept (``capacity``), so a plugin that interleaves messages of two or three
/// kinds (an IMU message and a GNSS one, say) stays on this path. Any difference (another layout,
/// another entry count, another name, an escape) makes ``match(_:spans:)`` step aside; the
/// scanner then reads the datagram and may record it as a layout.
struct ShapeTemplate: Sendable {
    /// How many layouts are kept; recording one more replaces the one matched least recently.
    static let capacity = 4

    /// One recorded layout. A class with constant fields: matching reads a layout without
    /// retaining each of its arrays (as a struct it was retained field by field, a tenth of
    /// the core's time).
    final class Layout: Sendable {
        /// The datagram the layout was taken from.
        let bytes: [UInt8]
        /// Varying string `k` (in datagram order) spans `bytes[cuts[2k] ..< cuts[2k + 1]]`; the
        /// pieces between are fixed.
        let cuts: [Int]
        /// The scanner's slot of varying string `k`: 0 for the time, `3 + 3e` for entry `e`'s payload.
        let slots: [Int]
        let entryCount: Int
        /// Entry `e`'s name and type, as the general reader makes them (`String(decoding:)` of
        /// the bytes), and the payload kind its type names.
        let names: [String]
        let types: [String]
        let kinds: [PayloadKind]
        /// Identifies the layout among every layout its template ever recorded (from 1): equal
        /// identities mean the same entries, named and typed the same, in the same order.
        let identity: UInt64

        /// The layout of `datagram` as the scanner read it (`spans`, `order`).
        init(_ datagram: UnsafeRawBufferPointer, spans: [Range<Int>], order: [Int], entryCount: Int, identity: UInt64) {
            bytes = Array(datagram)
            var cuts: [Int] = []
            var slots: [Int] = []
            // Slot 0 is the time and slots 3, 6, 9 … the payloads: the strings that vary.
            for slot in order where slot % 3 == 0 {
                cuts.append(spans[slot].lowerBound)
                cuts.append(spans[slot].upperBound)
                slots.append(slot)
            }
            self.cuts = cuts
            self.slots = slots
            self.entryCount = entryCount
            var names: [String] = []
            var types: [String] = []
            var kinds: [PayloadKind] = []
            for entry in 0..<entryCount {
                let name = UnsafeRawBufferPointer(rebasing: datagram[spans[1 &+ 3 &* entry]])
                let type = UnsafeRawBufferPointer(rebasing: datagram[spans[2 &+ 3 &* entry]])
                names.append(String(decoding: name, as: UTF8.self))
                types.append(String(decoding: type, as: UTF8.self))
                kinds.append(PayloadKind(typeName: type))
            }
            self.names = names
            self.types = types
            self.kinds = kinds
            self.identity = identity
        }
    }

    private(set) var layouts: [Layout] = []
    /// When each layout was last matched or recorded (a counter), for replacement.
    private var lastUse: [UInt64] = []
    private var recorded: UInt64 = 0
    private var uses: UInt64 = 0
    /// The layout matched last, tried first.
    private var mostRecent = 0

    /// Creates an empty template, which matches nothing.
    init() {}

    /// Takes the scanner's reading of `datagram` as a layout: its time and payloads vary, the rest
    /// (names and types included) is fixed.
    mutating func record(_ datagram: UnsafeRawBufferPointer, spans: [Range<Int>], order: [Int], entryCount: Int) {
        recorded &+= 1
        uses &+= 1
        let layout = Layout(datagram, spans: spans, order: order, entryCount: entryCount, identity: recorded)
        if layouts.count < Self.capacity {
            layouts.append(layout)
            lastUse.append(uses)
            mostRecent = layouts.count - 1
        } else {
            let oldest = lastUse.indices.min { lastUse[$0] < lastUse[$1] } ?? 0
            layouts[oldest] = layout
            lastUse[oldest] = uses
            mostRecent = oldest
        }
    }

    /// When `datagram` is laid out as one of the layouts, fills the time's and the payloads'
    /// slots of `spans` as the scanner would and returns that layout's index; else nil. The
    /// name and type slots are left as they were: the layout holds those strings.
    mutating func match(_ datagram: UnsafeRawBufferPointer, spans: inout [Range<Int>]) -> Int? {
        guard !layouts.isEmpty, let base = datagram.baseAddress else { return nil }
        if matches(layout: mostRecent, base, count: datagram.count, spans: &spans) { return used(mostRecent) }
        for index in layouts.indices where index != mostRecent {
            if matches(layout: index, base, count: datagram.count, spans: &spans) { return used(index) }
        }
        return nil
    }

    private mutating func used(_ index: Int) -> Int {
        mostRecent = index
        uses &+= 1
        lastUse[index] = uses
        return index
    }

    private func matches(layout index: Int, _ base: UnsafeRawPointer, count: Int, spans: inout [Range<Int>]) -> Bool {
        let layout = layouts[index]
        let strings = 1 &+ 3 &* layout.entryCount
        if spans.count != strings {
            spans.removeAll(keepingCapacity: true)
            spans.append(contentsOf: repeatElement(DataMessageScanner.absent, count: strings))
        }
        return layout.bytes.withUnsafeBytes { template in
            layout.cuts.withUnsafeBufferPointer { cuts in
                layout.slots.withUnsafeBufferPointer { slots in
                    spans.withUnsafeMutableBufferPointer { spans in
                        Self.match(base, count: count, template: template.baseAddress!, templateCount: template.count,
                                   cuts: cuts, slots: slots, spans: spans)
                    }
                }
            }
        }
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
            // Most strings are as long as the template's (base64 of a float64, a time with the
            // same digits): checking that guess keeps the next piece's position off the scan's
            // result, so the comparisons of one datagram do not wait on each other.
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
