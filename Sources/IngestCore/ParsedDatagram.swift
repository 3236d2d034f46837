/// One parsed datagram in storage that ``DatagramParser`` reuses from datagram to datagram: a
/// data message's entries, with their decoded payloads back to back in one buffer. Holds the
/// same as a ``MotionMessage`` (``message``) without an array per entry.
struct ParsedDatagram: Sendable {
    /// The message, without a data message's entries (they are in ``entries``).
    enum Kind: Sendable, Hashable {
        case data(timeNs: Int64)
        case pluginName(String)
        case end
        case legacyV1(timeNs: Int64?, payload: [UInt8])
    }

    /// One entry of a data message; its payload is a range of ``ParsedDatagram/payloadBytes``.
    struct Entry: Sendable {
        var name: String
        var type: String
        var value: DataValue
        var payload: Range<Int>
    }

    var kind: Kind = .end
    /// The template layout a data message matched (``ShapeTemplate/Layout/identity``), else 0.
    /// Two datagrams with the same nonzero identity have the same entries, named and typed the
    /// same, in the same order: a stream packing points reuses what it looked up for the first.
    var layoutIdentity: UInt64 = 0
    /// A data message's entries, in datagram order; empty for other messages.
    var entries: [Entry] = []
    /// The decoded payloads of ``entries``, back to back. The fast paths keep it at least as long
    /// as the datagram they decode, so its base64 (4 characters to 3 bytes) always fits.
    var payloadBytes: [UInt8] = []

    /// The payload of entry `index` as its own array. An opaque value is its payload, so the two
    /// share one array.
    @inline(__always)
    func payload(of index: Int) -> [UInt8] {
        if case .bytes(let bytes) = entries[index].value { return bytes }
        // `Array(_:)` of a buffer: the way to a new small array that asks the runtime for no
        // type metadata (`[UInt8](unsafeUninitializedCapacity:)` looked it up for every payload).
        return payloadBytes.withUnsafeBytes { Array(UnsafeRawBufferPointer(rebasing: $0[entries[index].payload])) }
    }

    /// The payload of entry `index` as a data point holds it: inline when short, else shared
    /// with an opaque value as ``payload(of:)`` does.
    @inline(__always)
    func storedPayload(of index: Int) -> DataPayload {
        if case .bytes(let bytes) = entries[index].value { return DataPayload(bytes) }
        return payloadBytes.withUnsafeBytes { DataPayload(UnsafeRawBufferPointer(rebasing: $0[entries[index].payload])) }
    }

    /// Calls `body` with the payload of entry `index`, without copying it.
    @inline(__always)
    func withPayload<R>(of index: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        if case .bytes(let bytes) = entries[index].value { return bytes.withUnsafeBytes(body) }
        return payloadBytes.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[entries[index].payload])) }
    }

    /// The message as ``MotionMessage`` (with an array per entry).
    var message: MotionMessage {
        switch kind {
        case .data(let timeNs):
            return .data(timeNs: timeNs, entries: entries.indices.map {
                MotionMessage.Entry(name: entries[$0].name, type: entries[$0].type, payload: payload(of: $0), value: entries[$0].value)
            })
        case .pluginName(let name): return .pluginName(name)
        case .end: return .end
        case .legacyV1(let timeNs, let payload): return .legacyV1(timeNs: timeNs, payload: payload)
        }
    }

    /// Holds `message`, as the general reader returned it.
    mutating func set(_ message: MotionMessage) {
        entries.removeAll(keepingCapacity: true)
        layoutIdentity = 0
        switch message {
        case .data(let timeNs, let messageEntries):
            kind = .data(timeNs: timeNs)
            let total = messageEntries.reduce(0) { $0 + $1.payload.count }
            if payloadBytes.count < total { payloadBytes = [UInt8](repeating: 0, count: total) }
            var used = 0
            for entry in messageEntries {
                let range = used..<(used + entry.payload.count)
                payloadBytes.replaceSubrange(range, with: entry.payload)
                entries.append(Entry(name: entry.name, type: entry.type, value: entry.value, payload: range))
                used = range.upperBound
            }
        case .pluginName(let name): kind = .pluginName(name)
        case .end: kind = .end
        case .legacyV1(let timeNs, let payload): kind = .legacyV1(timeNs: timeNs, payload: payload)
        }
    }
}
