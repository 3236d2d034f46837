/// The name and type strings of the last datagram's entries, by entry position, with their bytes.
///
/// Making a `String` from bytes validates and copies them, which costs more than parsing the
/// entry; a plugin repeats its names and types in every datagram, so comparing the bytes with the
/// previous datagram's and reusing its string is the common case. The string is always the one
/// `String(decoding:as:)` makes of the same bytes. Each slot also keeps the ``PayloadKind`` its
/// bytes name, so a repeated type name is not matched against the type list again.
struct EntryTextCache: Sendable {
    /// Slots `2 * entry` (name) and `2 * entry + 1` (type); entries past this are not cached.
    static let slotLimit = 64
    /// Every slot's key bytes, back to back (one buffer, so a lookup retains nothing).
    private var keyBytes: [UInt8] = []
    private var keyRanges: [Range<Int>] = []
    private var texts: [String] = []
    private var kinds: [PayloadKind] = []

    /// Creates an empty cache.
    init() {}

    /// The string of `bytes`, from the cache when slot `slot` last held the same bytes.
    mutating func string(_ bytes: UnsafeRawBufferPointer, slot: Int) -> String {
        if holds(bytes, slot: slot) { return texts[slot] }
        return insert(bytes, slot: slot).text
    }

    /// The string of a type name and the payload kind it names, from the cache when slot `slot`
    /// last held the same bytes.
    mutating func type(_ bytes: UnsafeRawBufferPointer, slot: Int) -> (text: String, kind: PayloadKind) {
        if holds(bytes, slot: slot) { return (texts[slot], kinds[slot]) }
        return insert(bytes, slot: slot)
    }

    @inline(__always)
    private func holds(_ bytes: UnsafeRawBufferPointer, slot: Int) -> Bool {
        guard slot < keyRanges.count else { return false }
        let range = keyRanges[slot]
        guard range.count == bytes.count else { return false }
        guard range.count > 0, let text = bytes.baseAddress else { return true }
        return keyBytes.withUnsafeBytes { keys in
            SWAR.equal(keys.baseAddress! + range.lowerBound, text, count: range.count)
        }
    }

    private mutating func insert(_ bytes: UnsafeRawBufferPointer, slot: Int) -> (text: String, kind: PayloadKind) {
        let text = String(decoding: bytes, as: UTF8.self)
        let kind = PayloadKind(typeName: bytes)
        guard slot < Self.slotLimit else { return (text, kind) }
        // A sender whose names keep changing would grow the key buffer without end: start over.
        if keyBytes.count > 16_384 {
            keyBytes.removeAll(keepingCapacity: true)
            keyRanges.removeAll(keepingCapacity: true)
            texts.removeAll(keepingCapacity: true)
            kinds.removeAll(keepingCapacity: true)
        }
        while keyRanges.count <= slot {
            keyRanges.append(0..<0)
            texts.append("")
            kinds.append(.opaque)
        }
        let start = keyBytes.count
        keyBytes.append(contentsOf: bytes)
        keyRanges[slot] = start..<keyBytes.count
        texts[slot] = text
        kinds[slot] = kind
        return (text, kind)
    }
}
