import Testing
import MessagingCore

@Suite struct CRC16ARCTests {
    @Test func checkValueOfTheCatalogue() {
        #expect(CRC16ARC.checksum(Array("123456789".utf8)) == 0xBB3D)
    }

    @Test func emptyInputGivesTheInitialValueZero() {
        #expect(CRC16ARC.checksum([UInt8]()) == 0)
    }

    @Test func incrementalUpdatesEqualOneShot() {
        let bytes = Array("123456789".utf8)
        for split in 0...bytes.count {
            var crc = CRC16ARC()
            crc.update(bytes[..<split])
            crc.update(bytes[split...])
            #expect(crc.value == 0xBB3D, "split at \(split)")
        }
    }

    /// CRC-16/ARC bit by bit, straight from its definition: the reference for the table paths.
    static func bitwise(_ bytes: [UInt8]) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte)
            for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xA001 : crc >> 1 }
        }
        return crc
    }

    @Test("four bytes at a time gives the bit-by-bit value for every length and alignment")
    func slicedEqualsBitwise() {
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        let bytes: [UInt8] = (0..<80).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return UInt8(truncatingIfNeeded: state >> 56)
        }
        for start in 0..<5 {
            for end in start...bytes.count {
                let slice = Array(bytes[start..<end])
                #expect(CRC16ARC.checksum(bytes[start..<end]) == Self.bitwise(slice), "bytes \(start)..<\(end)")
            }
        }
    }

    @Test("a sequence without contiguous storage gives the same value")
    func nonContiguousSequence() {
        let bytes = Array("123456789".utf8)
        #expect(CRC16ARC.checksum(bytes.lazy.map { $0 }) == 0xBB3D)
        #expect(CRC16ARC.checksum(AnySequence(bytes)) == 0xBB3D)
    }

    /// Computed by a separate bitwise Python implementation of CRC-16/ARC.
    @Test func ciphertextOfTheGoldenSendHasTheReferenceCRC() {
        #expect(CRC16ARC.checksum(hex("6df729f45245b0eac0e56637f0db1154")) == 0x16FA)
    }
}
