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
        // Contiguous bytes (arrays, slices: every caller) go four at a time.
        if bytes.withContiguousStorageIfAvailable({ update(contiguous: $0) }) != nil { return }
        var crc = value
        CRC16ARC.tables.withUnsafeBufferPointer { table in
            for byte in bytes {
                crc = (crc >> 8) ^ table[Int(UInt8(truncatingIfNeeded: crc) ^ byte)]
            }
        }
        value = crc
    }

    /// Four bytes per step ("slicing by 4"): the register holds two bytes, so after folding it
    /// into the first two, each of the four bytes contributes its own table's entry, the table for
    /// a byte with k bytes after it being the one-byte table advanced over k zero bytes. Then the
    /// remaining bytes one at a time. The same value as byte by byte, a quarter of the dependent
    /// table reads (every message the core sends or receives is checksummed).
    private mutating func update(contiguous bytes: UnsafeBufferPointer<UInt8>) {
        var crc = value
        CRC16ARC.tables.withUnsafeBufferPointer { table in
            var index = 0
            let count = bytes.count
            while count - index >= 4 {
                let folded = crc ^ (UInt16(bytes[index]) | UInt16(bytes[index + 1]) << 8)
                crc = table[768 + Int(folded & 0xFF)] ^ table[512 + Int(folded >> 8)]
                    ^ table[256 + Int(bytes[index + 2])] ^ table[Int(bytes[index + 3])]
                index += 4
            }
            while index < count {
                crc = (crc >> 8) ^ table[Int(UInt8(truncatingIfNeeded: crc) ^ bytes[index])]
                index += 1
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
    /// Four tables of 256 entries, one after the other: entry `i` of table 0 is the register after
    /// byte `i` from zero; table k is table k − 1 advanced over one zero byte.
    private static let tables: [UInt16] = {
        var tables = (0..<256).map { index in
            var crc = UInt16(index)
            for _ in 0..<8 {
                crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1
            }
            return crc
        }
        for k in 1..<4 {
            for i in 0..<256 {
                let previous = tables[(k - 1) * 256 + i]
                tables.append((previous >> 8) ^ tables[Int(previous & 0xFF)])
            }
        }
        return tables
    }()
}
