/// One datagram of a recording, due `offsetNs` after the recording's first one: what
/// `tether replay --realtime` sends again at its recorded pace.
public struct RecordedDatagram: Sendable, Hashable {
    /// Recorded time since the first datagram, in nanoseconds.
    public var offsetNs: Int64
    /// The datagram's bytes.
    public var payload: [UInt8]

    /// A datagram due `offsetNs` after the first.
    public init(offsetNs: Int64, payload: [UInt8]) {
        self.offsetNs = offsetNs
        self.payload = payload
    }
}
