/// The points of one chunk packed into a single byte buffer, in arrival order: a format byte
/// (``format``), then for each point its sample time (int64, little-endian) and its name, type and
/// raw payload, each as a uint32 little-endian length and that many bytes.
///
/// The chunk's source is not repeated per point, and the value is not stored: it is decoded again
/// from the type and payload when the points are read. The same points always pack to the same
/// bytes, which is what lets a store tell a retry of a chunk from another chunk under the same
/// identity by comparing buffers, and it is the form ``IngestStore`` keeps on disk, so storing a
/// chunk copies one buffer instead of walking its points. The core packs each point as it accepts
/// it: an array of ``DataPoint`` values per chunk (three strings and a payload each, all retained
/// and later released) was a large share of serving live traffic.
public struct PackedDataPoints: Sendable, Hashable {
    /// The first byte of every packed buffer: the layout described above.
    public static let format: UInt8 = 1

    /// The packed buffer's first `used` bytes; zeros after them are room to grow into, so packing a
    /// point is one capacity check and a few plain stores (`Array.append(contentsOf:)` of each field
    /// was the largest cost of packing, measured).
    private var storage: [UInt8]
    private var used: Int
    /// Number of points packed.
    public private(set) var count: Int

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

    /// A buffer read back from elsewhere (a store's file), checked whole: every length must fit in
    /// the buffer and every name and type must be UTF-8.
    /// - Throws: ``PackedDataPointsError`` naming the byte offset of the first problem.
    public init(validating bytes: [UInt8]) throws(PackedDataPointsError) {
        var count = 0
        try Self.forEachRecord(in: bytes) { (_, _, _, _, _) throws(PackedDataPointsError) in count += 1 }
        self.storage = bytes
        self.used = bytes.count
        self.count = count
    }

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
        point.storedPayload.withUnsafeBytes { append(timeNs: point.timeNs, name: point.name, type: point.type, payload: $0) }
    }

    /// Packs one more point from its parts (the core's path: no ``DataPoint`` is made).
    mutating func append(timeNs: Int64, name: String, type: String, payload: UnsafeRawBufferPointer) {
        Self.withUTF8(name) { name in
            Self.withUTF8(type) { type in
                append(timeNs: timeNs, name: name, type: type, payload: payload)
            }
        }
    }

    /// The text's UTF-8 bytes, read in place when the string is stored contiguously (a native
    /// string always is; a bridged one may not be).
    private static func withUTF8(_ text: String, _ body: (UnsafeRawBufferPointer) -> Void) {
        if text.utf8.withContiguousStorageIfAvailable({ body(UnsafeRawBufferPointer($0)) }) == nil {
            Array(text.utf8).withUnsafeBytes(body)
        }
    }

    private mutating func append(timeNs: Int64, name: UnsafeRawBufferPointer, type: UnsafeRawBufferPointer, payload: UnsafeRawBufferPointer) {
        let size = 8 + 12 + name.count + type.count + payload.count
        if storage.count - used < size {
            // Doubling keeps the copies of a growing chunk linear in its size.
            storage.append(contentsOf: repeatElement(0, count: max(size, storage.count)))
        }
        let start = used
        storage.withUnsafeMutableBytes { raw in
            var offset = start
            raw.storeBytes(of: UInt64(bitPattern: timeNs).littleEndian, toByteOffset: offset, as: UInt64.self)
            offset &+= 8
            func put(_ field: UnsafeRawBufferPointer) {
                // A field comes from one datagram of at most a few KiB, so its length fits in 32 bits.
                raw.storeBytes(of: UInt32(truncatingIfNeeded: field.count).littleEndian, toByteOffset: offset, as: UInt32.self)
                offset &+= 4
                if let base = field.baseAddress, field.count > 0 {
                    (raw.baseAddress! + offset).copyMemory(from: base, byteCount: field.count)
                }
                offset &+= field.count
            }
            put(name)
            put(type)
            put(payload)
        }
        used += size
        count += 1
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
    /// length against the buffer.
    private static func forEachRecord(
        in bytes: [UInt8],
        _ body: (Int, Int64, String, String, UnsafeRawBufferPointer) throws(PackedDataPointsError) -> Void
    ) throws(PackedDataPointsError) {
        guard let first = bytes.first else {
            throw PackedDataPointsError(offset: 0, problem: "empty buffer, expected the format byte \(format)")
        }
        guard first == format else { throw PackedDataPointsError(offset: 0, problem: "format \(first), expected \(format)") }
        // The closure cannot carry a typed error out of `withUnsafeBytes`, so it travels as a value.
        let failure: PackedDataPointsError? = bytes.withUnsafeBytes { raw -> PackedDataPointsError? in
            var offset = 1
            do throws(PackedDataPointsError) {
                while offset < raw.count {
                    let start = offset
                    let time = try integer(raw, at: &offset, width: 8, what: "sample time")
                    let name = try text(raw, at: &offset, what: "name")
                    let type = try text(raw, at: &offset, what: "type")
                    let payload = try field(raw, at: &offset, what: "payload")
                    try body(start, Int64(bitPattern: time), name, type, payload)
                }
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    private static func integer(_ raw: UnsafeRawBufferPointer, at offset: inout Int, width: Int, what: String) throws(PackedDataPointsError) -> UInt64 {
        guard raw.count - offset >= width else {
            throw PackedDataPointsError(offset: offset, problem: "\(raw.count - offset) bytes left, expected the \(width)-byte \(what)")
        }
        var value: UInt64 = 0
        for index in 0..<width { value |= UInt64(raw[offset + index]) << (8 * UInt64(index)) }
        offset += width
        return value
    }

    private static func field(_ raw: UnsafeRawBufferPointer, at offset: inout Int, what: String) throws(PackedDataPointsError) -> UnsafeRawBufferPointer {
        let length = Int(try integer(raw, at: &offset, width: 4, what: "\(what) length"))
        guard raw.count - offset >= length else {
            throw PackedDataPointsError(offset: offset, problem: "\(what) of \(length) bytes, only \(raw.count - offset) left")
        }
        defer { offset += length }
        return UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + length)])
    }

    private static func text(_ raw: UnsafeRawBufferPointer, at offset: inout Int, what: String) throws(PackedDataPointsError) -> String {
        let start = offset
        let bytes = try field(raw, at: &offset, what: what)
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw PackedDataPointsError(offset: start, problem: "\(what) is not UTF-8")
        }
        return text
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
