import CaptureKit

/// One complete HCI packet seen by an ``H4Tap``, borrowed for the duration of the callback.
public struct H4TapPacket {
    /// Which way it went: ``H4Direction/sent`` host→controller, ``H4Direction/received`` controller→host.
    public var direction: H4Direction
    /// CLOCK_REALTIME, nanoseconds since the Unix epoch, taken when the read that delivered the
    /// packet's last byte returned.
    public var timestampNs: Int64
    /// The packet as on the wire: indicator byte, header, payload.
    public var bytes: UnsafeRawBufferPointer

    /// Wraps borrowed bytes; see the properties.
    public init(direction: H4Direction, timestampNs: Int64, bytes: UnsafeRawBufferPointer) {
        self.direction = direction
        self.timestampNs = timestampNs
        self.bytes = bytes
    }

    /// The packet's indicator (the framer only hands out packets with a known one).
    public var indicator: HCIPacketIndicator? { bytes.first.flatMap(HCIPacketIndicator.init(rawValue:)) }
}
