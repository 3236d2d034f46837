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
    /// The raw payload after base64 decoding.
    public var payload: [UInt8]
    /// Creates a data point.
    public init(source: DatagramSource, timeNs: Int64, name: String, type: String, value: DataValue, payload: [UInt8]) {
        self.source = source
        self.timeNs = timeNs
        self.name = name
        self.type = type
        self.value = value
        self.payload = payload
    }
}
