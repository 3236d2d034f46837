/// CRC-16/ARC, the checksum of the Connect IQ link's `last` packet (docs/connectiq-link.md,
/// "Transfer control"): polynomial 0x8005 reflected (0xA001), initial value 0, no final XOR;
/// the check value of ASCII `123456789` is `0xBB3D`.
///
/// Incremental: feed bytes in any number of ``update(_:)`` calls, read ``value`` at any time.
public struct CRC16ARC: Sendable, Hashable {
    /// The checksum of every byte given so far (0 for none).
    public private(set) var value: UInt16 = 0

    /// A checksum of no bytes yet.
    public init() {}

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        var crc = value
        // The table read through a buffer pointer: its index is a byte, always inside it.
        CRC16ARC.table.withUnsafeBufferPointer { table in
            for byte in bytes {
                crc = (crc >> 8) ^ table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)]
            }
        }
        value = crc
    }

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc = CRC16ARC()
        crc.update(bytes)
        return crc.value
    }

    /// One entry per byte value: the reflected polynomial applied eight times.
    private static let table: [UInt16] = (0..<256).map { index in
        var crc = UInt16(index)
        for _ in 0..<8 {
            crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1
        }
        return crc
    }
}
