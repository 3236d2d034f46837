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

    /// Computed by a separate bitwise Python implementation of CRC-16/ARC.
    @Test func ciphertextOfTheGoldenSendHasTheReferenceCRC() {
        #expect(CRC16ARC.checksum(hex("6df729f45245b0eac0e56637f0db1154")) == 0x16FA)
    }
}
