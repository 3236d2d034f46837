/// The points of one chunk packed into a single byte buffer, in arrival order. The buffer's first
/// byte says its layout; this type writes ``format`` (2) and reads 1 and 2.
///
/// **Format 2** (written since the chunk came to hold its points packed): each point is
/// - a key reference, varint: the index of its (name, type) pair among the pairs defined so far in
///   this buffer, counted from 0; a reference equal to the number defined so far defines the next
///   pair, and the name and the type follow, each as a varint length and that many UTF-8 bytes;
/// - its sample time as the difference from the previous point's (from 0 for the first), zigzag
///   varint: the points of one datagram share a time, so most differences are 0;
/// - its raw payload as a varint length and that many bytes.
///
/// A plugin sends the same few names datagram after datagram, so a six-float datagram packs to
/// about 70 bytes, where format 1 took 258.
///
/// **Format 1** (stores written before): each point is its sample time (int64, little-endian), then
/// its name, type and raw payload, each as a uint32 little-endian length and that many bytes.
///
/// Varints are unsigned LEB128 (7 bits a byte, low bits first); zigzag maps 0, -1, 1, -2 … to
/// 0, 1, 2, 3 ….
///
/// The chunk's source is not repeated per point, and the value is not stored: it is decoded again
/// from the type and payload when the points are read. The same points always pack to the same
/// bytes, which is what lets a store tell a retry of a chunk from another chunk under the same
/// identity by comparing buffers, and it is the form ``IngestStore`` keeps on disk, so storing a
/// chunk copies one buffer instead of walking its points. The core packs each point as it accepts
/// it: an array of ``DataPoint`` values per chunk (three strings and a payload each, all retained
/// and later released) was a large share of serving live traffic.
public struct PackedDataPoints: Sendable, Hashable {
    /// The first byte of every buffer this type writes: format 2, described above.
    public static let format: UInt8 = 2
    /// The older layout, still read.
    static let format1: UInt8 = 1

    /// The packed buffer's first `used` bytes; zeros after them are room to grow into, so packing a
    /// point is one capacity check and a few plain stores (`Array.append(contentsOf:)` of each field
    /// was the largest cost of packing, measured).
    private var storage: [UInt8]
    private var used: Int
    /// The (name, type) pairs defined so far, in the order they were, for the writer's lookups.
    private var keys: [Key] = []
    /// The key the last point used: a plugin sends its names in the same order every time, so the
    /// next point's key is most often the one after it.
    private var lastKey = -1
    /// The previous point's sample time, for the next difference.
    private var lastTimeNs: Int64 = 0
    /// Number of points packed.
    public private(set) var count: Int

    private struct Key: Sendable {
        var name: String
        var type: String
    }

    /// The packed buffer, format byte first.
    public var bytes: [UInt8] { used == storage.count ? storage : Array(storage[..<used]) }

    /// No points.
    public init() {
        storage = [Self.format]
        used = 1
        count = 0
    }

    /// `points` packed in order (their sources and values are not kept; see the type's summary).
    public init(_ points: some Sequence<DataPoint>) {
        self.init()
        for point in points { append(point) }
        trimToSize()
    }

    /// A buffer read back from elsewhere (a store's file), in either format, checked whole: every
    /// length must fit in the buffer, every key reference must name a defined pair, and every name
    /// and type must be UTF-8. Appending to it first repacks its points in the current format.
    /// - Throws: ``PackedDataPointsError`` naming the byte offset of the first problem.
    public init(validating bytes: [UInt8]) throws(PackedDataPointsError) {
        var count = 0
        try Self.forEachRecord(in: bytes) { (_, _, _, _, _) throws(PackedDataPointsError) in count += 1 }
        self.storage = bytes
        self.used = bytes.count
        self.count = count
        self.isReadBack = true
    }

    /// Set by ``init(validating:)``: `keys`, `lastKey` and `lastTimeNs` were not rebuilt, so the
    /// buffer is repacked before a point is appended to it.
    private var isReadBack = false

    /// Equal when the packed bytes are (the room to grow into is not compared).
    public static func == (a: Self, b: Self) -> Bool {
        a.count == b.count && a.used == b.used && a.storage[..<a.used].elementsEqual(b.storage[..<b.used])
    }

    /// Hashes the packed bytes.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        storage.withUnsafeBytes { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0[..<used])) }
    }

    /// Whether no point is packed.
    public var isEmpty: Bool { count == 0 }

    /// Packs one more point after the others.
    public mutating func append(_ point: DataPoint) {
        point.storedPayload.withUnsafeBytes { _ = append(timeNs: point.timeNs, name: point.name, type: point.type, payload: $0) }
    }

    /// Packs one more point from its parts (the core's path: no ``DataPoint`` is made); returns
    /// the index of its (name, type) pair, which ``append(timeNs:definedKey:payload:)`` takes.
    @discardableResult
    mutating func append(timeNs: Int64, name: String, type: String, payload: UnsafeRawBufferPointer) -> Int {
        if isReadBack {
            // A buffer read back (perhaps in format 1) is repacked, then appended to. Sources are
            // not packed, so any will do.
            self = PackedDataPoints(dataPointsDecodingLeniently(source: DatagramSource(address: "", port: 0)))
        }
        let key = keyIndex(name: name, type: type)
        let difference = timeNs &- lastTimeNs
        let zigzag = UInt64(bitPattern: (difference << 1) ^ (difference >> 63))
        lastTimeNs = timeNs
        count += 1
        if let key {
            reserve(3 * 10 + payload.count)
            putVarint(UInt64(key))
            putVarint(zigzag)
            putField(payload)
            return key
        }
        Self.withUTF8(name) { name in
            Self.withUTF8(type) { type in
                reserve(5 * 10 + name.count + type.count + payload.count)
                putVarint(UInt64(keys.count))
                putField(name)
                putField(type)
                putVarint(zigzag)
                putField(payload)
            }
        }
        lastKey = keys.count
        keys.append(Key(name: name, type: type))
        return lastKey
    }

    /// Packs one more point whose (name, type) pair this buffer already defines as `key` (what
    /// an earlier ``append(timeNs:name:type:payload:)`` on it returned): the stream's path for a
    /// datagram laid out as the one before, whose names need no comparing. The bytes are those
    /// the named append would write.
    mutating func append(timeNs: Int64, definedKey key: Int, payload: UnsafeRawBufferPointer) {
        assert(!isReadBack && key >= 0 && key < keys.count, "PackedDataPoints: key \(key) is not defined in this buffer")
        let difference = timeNs &- lastTimeNs
        let zigzag = UInt64(bitPattern: (difference << 1) ^ (difference >> 63))
        lastTimeNs = timeNs
        count += 1
        lastKey = key
        reserve(3 * 10 + payload.count)
        putVarint(UInt64(key))
        putVarint(zigzag)
        putField(payload)
    }

    /// The index of the pair if defined already (noting it as the last used); nil if it is new.
    private mutating func keyIndex(name: String, type: String) -> Int? {
        // Equal strings from the core's text cache share their storage, so `==` is a pointer check.
        let next = lastKey + 1 < keys.count ? lastKey + 1 : 0
        if next < keys.count, keys[next].name == name, keys[next].type == type {
            lastKey = next
            return next
        }
        for index in keys.indices where keys[index].name == name && keys[index].type == type {
            lastKey = index
            return index
        }
        return nil
    }

    /// Packs the points of one datagram, all at `timeNs`, whose (name, type) pairs this buffer
    /// already defines: entry `i` under `keys[i]` (what ``append(timeNs:name:type:payload:)``
    /// returned for the same entry of an earlier datagram of the same layout), its payload
    /// `payloads[entries[i].payload]`. One capacity check and one pass over the buffer for the
    /// whole datagram; the bytes are those the per-point appends would write. Returns the sum of
    /// the payloads' lengths.
    mutating func append(timeNs: Int64, definedKeys keys: [Int], entries: [ParsedDatagram.Entry], payloads: [UInt8]) -> Int {
        assert(!isReadBack && keys.count == entries.count && keys.allSatisfy { $0 >= 0 && $0 < self.keys.count })
        guard !entries.isEmpty else { return 0 }
        var payloadTotal = 0
        for entry in entries { payloadTotal &+= entry.payload.count }
        reserve(3 &* 10 &* entries.count &+ payloadTotal)
        let difference = timeNs &- lastTimeNs
        var zigzag = UInt64(bitPattern: (difference << 1) ^ (difference >> 63))
        var at = used
        storage.withUnsafeMutableBytes { out in
            payloads.withUnsafeBytes { source in
                for index in entries.indices {
                    at = Self.putVarint(UInt64(keys[index]), into: out, at: at)
                    at = Self.putVarint(zigzag, into: out, at: at)
                    // The points of one datagram share its time: every difference after the first is 0.
                    zigzag = 0
                    let range = entries[index].payload
                    at = Self.putVarint(UInt64(range.count), into: out, at: at)
                    if !range.isEmpty {
                        (out.baseAddress! + at).copyMemory(from: source.baseAddress! + range.lowerBound, byteCount: range.count)
                        at &+= range.count
                    }
                }
            }
        }
        used = at
        lastTimeNs = timeNs
        count &+= entries.count
        lastKey = keys[keys.count &- 1]
        return payloadTotal
    }

    /// Writes `value` as a varint at `offset` of `buffer` (room checked by the caller); returns
    /// the offset after it.
    @inline(__always)
    private static func putVarint(_ value: UInt64, into buffer: UnsafeMutableRawBufferPointer, at offset: Int) -> Int {
        var value = value
        var offset = offset
        while value >= 0x80 {
            buffer[offset] = UInt8(truncatingIfNeeded: value) | 0x80
            value >>= 7
            offset &+= 1
        }
        buffer[offset] = UInt8(value)
        return offset &+ 1
    }

    /// The text's UTF-8 bytes, read in place when the string is stored contiguously (a native
    /// string always is; a bridged one may not be).
    private static func withUTF8(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
        if text.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) == nil {
            Array(text.utf8).withUnsafeBytes(body)
        }
    }

    /// Makes room for `size` more bytes.
    private mutating func reserve(_ size: Int) {
        if storage.count - used < size {
            // Doubling keeps the copies of a growing chunk linear in its size.
            storage.append(contentsOf: repeatElement(0, count: max(size, storage.count)))
        }
    }

    private mutating func putVarint(_ value: UInt64) {
        let start = used
        used = storage.withUnsafeMutableBytes { Self.putVarint(value, into: $0, at: start) }
    }

    private mutating func putField(_ field: UnsafeRawBufferPointer) {
        putVarint(UInt64(field.count))
        guard let base = field.baseAddress, field.count > 0 else { return }
        let start = used
        storage.withUnsafeMutableBytes { raw in
            (raw.baseAddress! + start).copyMemory(from: base, byteCount: field.count)
        }
        used &+= field.count
    }

    /// Bytes packed and room to grow into.
    var roomBytes: Int { storage.count }

    /// Makes room for `byteCount` packed bytes in all.
    mutating func reserveCapacity(_ byteCount: Int) {
        if storage.count < byteCount { storage.append(contentsOf: repeatElement(0, count: byteCount - storage.count)) }
    }

    /// Drops the room to grow into, so ``bytes`` is the buffer itself: done before the points are
    /// handed on.
    mutating func trimToSize() {
        if storage.count > used { storage.removeSubrange(used...) }
    }

    /// The points, each with `source`, its value decoded from its type and payload as the core
    /// decodes it.
    /// - Throws: ``PackedDataPointsError`` when a payload does not fit its type (the core never
    ///   packs such a point; a doctored file or a hand-made ``DataPoint`` may hold one).
    public func dataPoints(source: DatagramSource) throws(PackedDataPointsError) -> [DataPoint] {
        var points: [DataPoint] = []
        try decode(source: source, into: &points)
        return points
    }

    /// Appends the points, as ``dataPoints(source:)`` returns them, to `points`.
    public func decode(source: DatagramSource, into points: inout [DataPoint]) throws(PackedDataPointsError) {
        try decode(source: source, into: &points, lenient: false)
    }

    /// The points as ``dataPoints(source:)`` gives them, except that a payload which does not fit
    /// its type gives ``DataValue/bytes(_:)`` instead of an error. The buffer was packed here or
    /// checked by ``init(validating:)``, so its layout holds and nothing else can fail.
    func dataPointsDecodingLeniently(source: DatagramSource) -> [DataPoint] {
        var points: [DataPoint] = []
        do {
            try decode(source: source, into: &points, lenient: true)
        } catch {
            // Unreachable by the type's invariant (see above); the points before the fault stand.
        }
        return points
    }

    private func decode(source: DatagramSource, into points: inout [DataPoint], lenient: Bool) throws(PackedDataPointsError) {
        points.reserveCapacity(points.count + count)
        try Self.forEachRecord(in: bytes) { (offset, timeNs, name, type, payload) throws(PackedDataPointsError) in
            let value: DataValue
            do throws(PayloadDecodingError) {
                value = try DataValue.decode(type: type, payload: payload)
            } catch {
                guard lenient else { throw PackedDataPointsError(offset: offset, problem: "\(error)") }
                value = .bytes(Array(payload))
            }
            points.append(DataPoint(source: source, timeNs: timeNs, name: name, type: type, value: value,
                                    storedPayload: DataPayload(payload)))
        }
    }

    // MARK: Reading

    /// Calls `body` with each record's offset, sample time, name, type and payload, checking every
    /// length and reference against the buffer.
    private static func forEachRecord(
        in bytes: [UInt8],
        _ body: (Int, Int64, String, String, UnsafeRawBufferPointer) throws(PackedDataPointsError) -> Void
    ) throws(PackedDataPointsError) {
        guard let first = bytes.first else {
            throw PackedDataPointsError(offset: 0, problem: "empty buffer, expected the format byte \(format) (or \(format1))")
        }
        guard first == format || first == format1 else {
            throw PackedDataPointsError(offset: 0, problem: "format \(first), expected \(format) or \(format1)")
        }
        // The closure cannot carry a typed error out of `withUnsafeBytes`, so it travels as a value.
        let failure: PackedDataPointsError? = bytes.withUnsafeBytes { raw -> PackedDataPointsError? in
            var reader = Reader(raw: raw, offset: 1)
            do throws(PackedDataPointsError) {
                if first == format1 {
                    while reader.offset < raw.count {
                        let start = reader.offset
                        let time = try reader.fixed(width: 8, what: "sample time")
                        let name = try reader.text(lengthWidth: 4, what: "name")
                        let type = try reader.text(lengthWidth: 4, what: "type")
                        let payload = try reader.field(lengthWidth: 4, what: "payload")
                        try body(start, Int64(bitPattern: time), name, type, payload)
                    }
                    return nil
                }
                var keys: [(name: String, type: String)] = []
                var timeNs: Int64 = 0
                while reader.offset < raw.count {
                    let start = reader.offset
                    let reference = try reader.varint(what: "key reference")
                    let key: (name: String, type: String)
                    if reference < UInt64(keys.count) {
                        key = keys[Int(reference)]
                    } else if reference == UInt64(keys.count) {
                        key = (try reader.text(lengthWidth: nil, what: "name"), try reader.text(lengthWidth: nil, what: "type"))
                        keys.append(key)
                    } else {
                        throw PackedDataPointsError(offset: start, problem: "key reference \(reference), but only \(keys.count) keys are defined (expected at most \(keys.count))")
                    }
                    let zigzag = try reader.varint(what: "sample time difference")
                    let delta = Int64(bitPattern: (zigzag >> 1) ^ (0 &- (zigzag & 1)))
                    timeNs = timeNs &+ delta
                    let payload = try reader.field(lengthWidth: nil, what: "payload")
                    try body(start, timeNs, key.name, key.type, payload)
                }
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Reads fields from a packed buffer, every one checked against the bytes left.
    private struct Reader {
        let raw: UnsafeRawBufferPointer
        var offset: Int

        mutating func fixed(width: Int, what: String) throws(PackedDataPointsError) -> UInt64 {
            guard raw.count - offset >= width else {
                throw PackedDataPointsError(offset: offset, problem: "\(raw.count - offset) bytes left, expected the \(width)-byte \(what)")
            }
            var value: UInt64 = 0
            for index in 0..<width { value |= UInt64(raw[offset + index]) << (8 * UInt64(index)) }
            offset += width
            return value
        }

        mutating func varint(what: String) throws(PackedDataPointsError) -> UInt64 {
            let start = offset
            var value: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard offset < raw.count else {
                    throw PackedDataPointsError(offset: start, problem: "the \(what) runs past the end (a varint's last byte is below 0x80)")
                }
                let byte = raw[offset]
                offset += 1
                guard shift < 64, shift < 63 || byte <= 1 else {
                    throw PackedDataPointsError(offset: start, problem: "the \(what) does not fit in 64 bits")
                }
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { return value }
                shift += 7
            }
        }

        /// A length (fixed-width little-endian, or a varint when `lengthWidth` is nil) and that many bytes.
        mutating func field(lengthWidth: Int?, what: String) throws(PackedDataPointsError) -> UnsafeRawBufferPointer {
            let claimed: UInt64
            if let lengthWidth {
                claimed = try fixed(width: lengthWidth, what: "\(what) length")
            } else {
                claimed = try varint(what: "\(what) length")
            }
            guard UInt64(raw.count - offset) >= claimed else {
                throw PackedDataPointsError(offset: offset, problem: "\(what) of \(claimed) bytes, only \(raw.count - offset) left")
            }
            let length = Int(claimed)
            defer { offset += length }
            return UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)])
        }

        mutating func text(lengthWidth: Int?, what: String) throws(PackedDataPointsError) -> String {
            let start = offset
            let bytes = try field(lengthWidth: lengthWidth, what: what)
            guard let text = String(validating: bytes, as: UTF8.self) else {
                throw PackedDataPointsError(offset: start, problem: "\(what) is not UTF-8")
            }
            return text
        }
    }
}

/// Why packed points could not be read: `offset` is the byte offset in the packed buffer.
public struct PackedDataPointsError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The byte offset of the record or field at fault.
    public var offset: Int
    /// What was wrong there, and what was expected.
    public var problem: String

    /// Creates an error at `offset`.
    public init(offset: Int, problem: String) {
        self.offset = offset
        self.problem = problem
    }

    /// `packed points, byte 12: name of 40 bytes, only 3 left`.
    public var description: String { "packed points, byte \(offset): \(problem)" }
}
