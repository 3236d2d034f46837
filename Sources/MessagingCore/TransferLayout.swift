/// How one transfer's bytes travel as link packets (docs/connectiq-link.md, "Sequence numbers"):
/// data packet k carries bytes `k·payload ..< (k+1)·payload` with seq `k mod 15`, and `last`
/// carries the seq of the final data packet (0 when there was none) and the CRC-16/ARC of all the
/// bytes. The sender, whichever side it is, cuts a transfer this way; window handling (when to
/// wait for an ack) stays with the sender.
public struct TransferLayout: Sendable, Hashable {
    /// The transferred bytes (the ciphertext when encrypted).
    public let bytes: [UInt8]
    /// Payload bytes per data packet (at least 1).
    public let payloadSize: Int
    /// The connection the transfer runs on.
    public let connection: UInt8

    /// A layout of `bytes` in packets of `payloadSize` on `connection`.
    public init(bytes: [UInt8], payloadSize: Int, connection: UInt8) {
        self.bytes = bytes
        self.payloadSize = max(1, payloadSize)
        self.connection = connection
    }

    /// How many data packets the transfer takes.
    public var packetCount: Int { (bytes.count + payloadSize - 1) / payloadSize }

    /// The sequence number of data packet `index`.
    public static func sequence(ofPacket index: Int) -> UInt8 {
        UInt8(index % LinkPacket.sequenceModulus)
    }

    /// Data packet `index` (0 ..< ``packetCount``).
    public func dataPacket(_ index: Int) -> LinkPacket {
        let start = index * payloadSize
        return .data(sequence: Self.sequence(ofPacket: index), connection: connection,
                     payload: Array(bytes[start..<min(start + payloadSize, bytes.count)]))
    }

    /// The sequence number `last` carries.
    public var lastSequence: UInt8 { packetCount == 0 ? 0 : Self.sequence(ofPacket: packetCount - 1) }

    /// The `last` packet: final seq and the CRC over every byte.
    public var lastPacket: LinkPacket {
        .control(connection: connection, .last(sequence: lastSequence, crc: CRC16ARC.checksum(bytes)))
    }
}
