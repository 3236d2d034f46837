/// Where a datagram came from: a plugin stream is keyed by this.
public struct DatagramSource: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The sender's IP address as text (`127.0.0.1`, `::1`).
    public var address: String
    /// The sender's UDP port.
    public var port: UInt16
    /// Creates a source from an address as text and a port.
    public init(address: String, port: UInt16) {
        self.address = address
        self.port = port
    }
    /// `address:port`, with an IPv6 address in brackets.
    public var description: String { address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)" }
    /// Orders by address text, then port: the order in which the core handles simultaneous events.
    public static func < (a: Self, b: Self) -> Bool { (a.address, a.port) < (b.address, b.port) }
}

/// A decoded iSCP payload value.
public enum DataValue: Sendable, Hashable {
    /// `float64`: 8 bytes, IEEE 754 big-endian.
    case float64(Double)
    /// `int64`: 8 bytes, two's complement big-endian.
    case int64(Int64)
    /// `vector_2d`: two big-endian float64.
    case vector2D(Double, Double)
    /// `vector_3d`: three big-endian float64.
    case vector3D(Double, Double, Double)
    /// `string` and the `string/*` formats.
    case string(String)
    /// `bytes`, and every type without a public layout: kept with its type name, never dropped.
    case bytes([UInt8])
}

/// One accepted data point.
public struct DataPoint: Sendable, Hashable {
    /// The stream (sender) it came from.
    public var source: DatagramSource
    /// Sample time from the datagram's `t`, nanoseconds since the Unix epoch.
    public var timeNs: Int64
    /// The data name (`n`), e.g. `v1/1/yaw`.
    public var name: String
    /// The data type (`t`), e.g. `float64`, kept as sent.
    public var type: String
    /// The payload decoded by its type (``DataValue/decode(type:payload:)-([UInt8])``).
    public var value: DataValue
    /// The raw payload, held inline when short (see ``DataPayload``).
    var storedPayload: DataPayload

    /// The raw payload after base64 decoding. Reading it makes an array of a payload of at most
    /// ``DataPayload/inlineCapacity`` bytes; ``payloadCount`` does not.
    public var payload: [UInt8] {
        get { storedPayload.array }
        set { storedPayload = DataPayload(newValue) }
    }

    /// The payload's length in bytes.
    public var payloadCount: Int { storedPayload.count }

    /// Creates a data point.
    public init(source: DatagramSource, timeNs: Int64, name: String, type: String, value: DataValue, payload: [UInt8]) {
        self.init(source: source, timeNs: timeNs, name: name, type: type, value: value, storedPayload: DataPayload(payload))
    }

    init(source: DatagramSource, timeNs: Int64, name: String, type: String, value: DataValue, storedPayload: DataPayload) {
        self.source = source
        self.timeNs = timeNs
        self.name = name
        self.type = type
        self.value = value
        self.storedPayload = storedPayload
    }
}

/// Where a data point's entry sits among datagrams the parser read as laid out alike: two
/// points at equal positions whose ``layout`` is not 0 have the same name and type. A caller that
/// turns each point's name and type into something of its own (replay's interned trace texts)
/// can then do it once per layout and entry instead of once per point.
public struct EntryPosition: Sendable, Hashable {
    /// The layout the datagram matched (from 1, unique within one core); 0 when the datagram was
    /// read without one, so its names are to be taken as they come.
    public var layout: UInt64
    /// The entry's index in its datagram.
    public var index: Int

    /// The position of entry `index` of a datagram of `layout`.
    public init(layout: UInt64, index: Int) {
        self.layout = layout
        self.index = index
    }
}

/// A data point's raw payload: up to ``inlineCapacity`` bytes (every numeric type's payload) in
/// the value itself, longer ones in an array. A plugin sends several points per datagram, and an
/// array for each was a large share of ingesting them.
///
/// Which form holds the bytes depends on their length alone, so synthesized equality and hashing
/// compare the bytes: inline bytes past `count` are always zero.
enum DataPayload: Sendable, Hashable {
    /// The most bytes held inline: a `vector_3d`.
    static let inlineCapacity = 24

    /// The first `count` bytes of the three words, in memory order; the rest zero.
    case inline(UInt64, UInt64, UInt64, count: UInt8)
    /// More than ``inlineCapacity`` bytes.
    case array([UInt8])

    /// A copy of `bytes`.
    init(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count <= Self.inlineCapacity else {
            self = .array(Array(bytes))
            return
        }
        var words: (UInt64, UInt64, UInt64) = (0, 0, 0)
        if let base = bytes.baseAddress {
            withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: base, byteCount: bytes.count) }
        }
        self = .inline(words.0, words.1, words.2, count: UInt8(bytes.count))
    }

    /// `bytes`, sharing the array when it is too long to hold inline.
    init(_ bytes: [UInt8]) {
        if bytes.count > Self.inlineCapacity {
            self = .array(bytes)
        } else {
            self = bytes.withUnsafeBytes { DataPayload($0) }
        }
    }

    /// The length in bytes.
    var count: Int {
        switch self {
        case .inline(_, _, _, let count): return Int(count)
        case .array(let bytes): return bytes.count
        }
    }

    /// Calls `body` with the bytes.
    func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .inline(let w0, let w1, let w2, let count):
            let words = (w0, w1, w2)
            return Swift.withUnsafeBytes(of: words) { body(UnsafeRawBufferPointer(rebasing: $0[..<Int(count)])) }
        case .array(let bytes):
            return bytes.withUnsafeBytes(body)
        }
    }

    /// The bytes as an array.
    var array: [UInt8] {
        switch self {
        case .inline(let w0, let w1, let w2, let count):
            let words = (w0, w1, w2)
            return Swift.withUnsafeBytes(of: words) { Array(UnsafeRawBufferPointer(rebasing: $0[..<Int(count)])) }
        case .array(let bytes):
            return bytes
        }
    }
}
