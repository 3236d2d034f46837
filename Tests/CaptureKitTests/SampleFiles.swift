@testable import CaptureKit

/// Small valid files of each format, shared by the reader, buffer and damage tests.
enum Samples {
    static let h4Command: [UInt8] = [0x01, 0x03, 0x0C, 0x00]          // HCI_Reset
    static let h4Event: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
    static let h4ACL: [UInt8] = [0x02, 0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x1B, 0x2A, 0x00]

    /// Two sections (LE then BE), three interfaces with different link types and resolutions,
    /// EPBs with comments, custom options and flags, an SPB, an ISB, and NRB/DSB/custom/unknown
    /// blocks to skip.
    static func pcapng() -> Fixture {
        var b = PcapngBuilder()
        b.section(bigEndian: false, options: [b.option(1, Array("section one".utf8))])
        b.interface(linkType: 1, snapLength: 65535, options: [
            b.option(2, Array("lo".utf8)), b.option(3, Array("loopback".utf8)), b.option(9, [9]),
        ])
        b.enhancedPacket(interface: 0, ticks: 1_700_000_000_123_456_789, data: [1, 2, 3, 4, 5], options: [
            b.option(1, Array("first frame".utf8)), b.option(1, Array("zweiter Kommentar ✓".utf8)),
            b.option(2, u32: 2), b.customOption(2988, pen: 32473, Array("tether".utf8)),
            b.customOption(2989, pen: 32473, [0xDE, 0xAD]),
        ])
        b.block(4, [0, 0, 0, 0])                       // NRB with only nrb_record_end
        b.block(0x0A, [0x4B, 0x53, 0x4C, 0x4B, 0, 0, 0, 0]) // DSB, empty secrets
        b.block(0x0BAD, [0x00, 0x00, 0x7E, 0xD9, 9, 9])     // custom block
        b.block(0x0000_7777, [1, 2, 3])                     // unknown block type
        b.simplePacket(originalLength: 3, data: [7, 8, 9])
        b.statistics(interface: 0, ticks: 1_700_000_001_000_000_000, options: [
            b.option(4, u64: 100), b.option(5, u64: 3), b.option(7, u64: 4),
        ])
        b.section(bigEndian: true)
        b.interface(linkType: 201, options: [b.option(9, [0x80 | 20])])   // 2^-20 s per tick
        b.interface(linkType: 254, options: [b.option(9, [3])])           // ms
        b.enhancedPacket(interface: 1, ticks: 1_700_000_002_000, data: [0, 0, 0, 3, 0x0E])
        b.enhancedPacket(interface: 0, ticks: UInt64(3) << 20, data: [0, 0, 0, 1] + h4Event)
        return b.fixture("pcapng two sections")
    }

    static func pcap(bigEndian: Bool = false, nanosecond: Bool = false) -> Fixture {
        pcapFixture(bigEndian: bigEndian, nanosecond: nanosecond, records: [
            (1_700_000_000, 250, [0xAA, 0xBB]), (1_700_000_001, 999, Array(0..<20)), (1_700_000_002, 0, []),
        ])
    }

    static func btsnoopH4() -> Fixture {
        btsnoopFixture(datalink: 1002, records: [
            (0x02, 0, 1_700_000_000_000_001, h4Command), (0x03, 0, 1_700_000_000_000_500, h4Event),
            (0x00, 2, 1_700_000_000_001_000, h4ACL),
        ])
    }

    static func btsnoopMonitor() -> Fixture {
        btsnoopFixture(datalink: 2001, records: [
            (0x0000_0002, 0, 1_700_000_000_000_000, Array(h4Command.dropFirst())),
            (0x0001_0003, 0, 1_700_000_000_000_010, Array(h4Event.dropFirst())),
        ])
    }

    static func packetLogger(bigEndian: Bool) -> Fixture {
        packetLoggerFixture(bigEndian: bigEndian, records: [
            (0x00, 1_700_000_000, 1, Array(h4Command.dropFirst())),
            (0x01, 1_700_000_000, 2, Array(h4Event.dropFirst())),
            (0xFC, 1_700_000_000, 3, Array("hello\0".utf8)),
            (0xFE, 1_700_000_001, 0, [0xC0, 0xFF, 0xEE]),
        ])
    }

    static var all: [Fixture] {
        [pcapng(), pcap(), pcap(bigEndian: true, nanosecond: true), btsnoopH4(), btsnoopMonitor(),
         packetLogger(bigEndian: false), packetLogger(bigEndian: true)]
    }
}
