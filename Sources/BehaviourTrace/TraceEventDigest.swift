/// A 64-bit digest of a ``TraceEvent`` that is the same in every process and on every machine
/// (unlike `Hasher`, which is seeded per process): its time, core, event name and fields, each
/// value with its type, the fields in key order. Two different events have equal digests only by
/// a 64-bit collision — what a ``BaselineIndex`` relies on to tell that a replayed event is the
/// baseline's without reading the baseline's line. The mixing is not cryptographic: it tells
/// changed behaviour apart, not an event forged to collide. It does not depend on whether the
/// fields are held inline (a datapoint) or in a dictionary.
///
/// The mixing is ``ContentFingerprint``'s multiply–rotate round per 64-bit word, with a length and
/// a type tag before every variable-length part, so no two different events feed the same words.
struct TraceEventDigest {
    private var state: UInt64 = 0x9E37_79B9_7F4A_7C15

    /// The digest of `event`.
    static func of(_ event: TraceEvent) -> UInt64 {
        var digest = TraceEventDigest()
        digest.add(UInt64(bitPattern: event.timeNs))
        digest.add(event.core)
        digest.add(event.event)
        switch event.storage {
        case .dataPoint(let point):
            digest.addDataPoint(name: point.name.text, source: point.source.text, timeNs: point.timeNs,
                                type: point.type.text, value: point.value)
        case .dictionary(let fields):
            // A datapoint's fields are in a dictionary only when the name table took no more of
            // their texts: the digest is the one they have held inline.
            if let point = DataPointFields.shape(of: fields) {
                digest.addDataPoint(name: point.name, source: point.source, timeNs: point.timeNs, type: point.type, value: point.value)
            } else {
                digest.add(object: fields)
            }
        case .chunk, .payload:
            // What `add(object:)` feeds for the same fields as a dictionary, keys in order: a
            // chunk's or a payload's event has the digest its line, parsed back, has in a
            // baseline index (every committed index holds these for chunks).
            digest.add(UInt64(event.storage.count))
            event.storage.forEachField { key, value in
                digest.add(key)
                digest.add(value)
            }
        }
        return digest.finished
    }

    /// A datapoint's five fields: a tag of their own stands for the keys, and the values follow
    /// in key order. Every committed baseline index holds datapoints digested this way.
    private mutating func addDataPoint(name: String, source: String, timeNs: Int64, type: String, value: TraceValue) {
        add(0xDA7A_9017)
        add(name)
        add(source)
        add(UInt64(bitPattern: timeNs))
        add(type)
        add(value)
    }

    @inline(__always)
    private mutating func add(_ word: UInt64) {
        state = ContentFingerprint.round(state, word)
    }

    /// A name feeds the words its text does, so a digest does not depend on names being interned.
    private mutating func add(_ name: TraceName) {
        name.entry._withUnsafeGuaranteedRef { add($0.text) }
    }

    private mutating func add(_ text: String) {
        // A native or small string is contiguous: read in place, no copy.
        if text.utf8.withContiguousStorageIfAvailable({ add(utf8: UnsafeRawBufferPointer($0)) }) == nil {
            Array(text.utf8).withUnsafeBytes { add(utf8: $0) }
        }
    }

    @inline(__always)
    private mutating func add(utf8 bytes: UnsafeRawBufferPointer) {
        add(UInt64(bytes.count))
        var index = 0
        while index &+ 8 <= bytes.count {
            add(UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
            index &+= 8
        }
        guard index < bytes.count else { return }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while index < bytes.count {
            tail |= UInt64(bytes[index]) << shift
            shift &+= 8
            index &+= 1
        }
        add(tail)
    }

    private mutating func add(_ value: TraceValue) {
        switch value {
        case .string(let text): add(1); add(text)
        case .int(let number): add(2); add(UInt64(bitPattern: number))
        case .double(let number): add(3); add(number.bitPattern)
        case .bool(let flag): add(4); add(flag ? 1 : 0)
        case .null: add(5)
        case .array(let elements):
            add(6)
            add(UInt64(elements.count))
            for element in elements { add(element) }
        case .object(let fields):
            add(7)
            add(object: fields)
        }
    }

    private mutating func add(object fields: [String: TraceValue]) {
        add(UInt64(fields.count))
        for (key, value) in fields.sorted(by: { $0.key < $1.key }) {
            add(key)
            add(value)
        }
    }

    private var finished: UInt64 { ContentFingerprint.avalanche(state) }
}

extension TraceEvent {
    /// The event's stable digest (``TraceEventDigest``).
    var stableDigest: UInt64 { TraceEventDigest.of(self) }
}
