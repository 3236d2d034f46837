import Testing
@testable import CaptureKit

@Suite struct PcapngReaderTests {
    @Test func readsFramesOfEverySectionNumberedFromOne() throws {
        let reader = try CaptureFile.open(bytes: Samples.pcapng().bytes)
        let frames = try readAll(reader)
        #expect(frames.map(\.number) == [1, 2, 3, 4])
        #expect(frames.map(\.interfaceIndex) == [0, 0, 2, 1])
        #expect(frames[0].data == [1, 2, 3, 4, 5])
        #expect(frames[2].data == [0, 0, 0, 3, 0x0E])
        #expect(frames[3].data == [0, 0, 0, 1] + Samples.h4Event)
    }

    @Test func mapsInterfacesOfEachSectionToGlobalIndices() throws {
        let reader = try CaptureFile.open(bytes: Samples.pcapng().bytes)
        _ = try readAll(reader)
        #expect(reader.interfaces.map(\.linkType) == [.ethernet, .bluetoothHCIH4WithPHDR, .bluetoothLinuxMonitor])
        #expect(reader.interfaces.map(\.section) == [0, 1, 1])
        #expect(reader.interfaces[0].name == "lo")
        #expect(reader.interfaces[0].description == "loopback")
        #expect(reader.interfaces[0].snapLength == 65535)
        #expect((reader as? PcapngReader)?.sectionCount == 2)
    }

    @Test func convertsPowerOfTenAndPowerOfTwoResolutionsToNanoseconds() throws {
        let frames = try readAll(CaptureFile.open(bytes: Samples.pcapng().bytes))
        #expect(frames[0].timestampNs == 1_700_000_000_123_456_789)       // if_tsresol 9
        #expect(frames[2].timestampNs == 1_700_000_002_000_000_000)       // if_tsresol 3 (ms)
        #expect(frames[3].timestampNs == 3_000_000_000)                   // if_tsresol 0x80|20
        let reader = try CaptureFile.open(bytes: Samples.pcapng().bytes)
        _ = try readAll(reader)
        #expect(reader.interfaces.map(\.nanosecondsPerTick) == [1, 1e9 / 1_048_576, 1e6])
    }

    @Test func defaultResolutionIsMicroseconds() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1)
        b.enhancedPacket(interface: 0, ticks: 1_500_000, data: [1])
        let frames = try readAll(PcapngReader(bytes: b.bytes))
        #expect(frames.map(\.timestampNs) == [1_500_000_000])
    }

    @Test func tsoffsetAddsSeconds() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1, options: [b.option(14, u64: 10)])
        b.enhancedPacket(interface: 0, ticks: 1, data: [1])
        let frames = try readAll(PcapngReader(bytes: b.bytes))
        #expect(frames.map(\.timestampNs) == [10_000_001_000])
    }

    @Test func keepsCommentsCustomOptionsAndFlags() throws {
        let frames = try readAll(CaptureFile.open(bytes: Samples.pcapng().bytes))
        #expect(frames[0].comments == ["first frame", "zweiter Kommentar ✓"])
        #expect(frames[0].flags == 2)
        #expect(frames[0].customOptions == [
            CustomOption(privateEnterpriseNumber: 32473, value: Array("tether".utf8), isUTF8: true),
            CustomOption(privateEnterpriseNumber: 32473, value: [0xDE, 0xAD], isUTF8: false),
        ])
        #expect(frames[3].comments.isEmpty && frames[3].flags == nil)
    }

    @Test func readsNoCopyCustomOptionsInABigEndianSection() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: true)
        b.interface(linkType: 1)
        b.enhancedPacket(interface: 0, ticks: 0, data: [1], options: [
            b.customOption(19372, pen: 7, Array("x".utf8)), b.customOption(19373, pen: 8, [1, 2, 3, 4, 5]),
        ])
        let frames = try readAll(PcapngReader(bytes: b.bytes))
        #expect(frames.first?.customOptions == [
            CustomOption(privateEnterpriseNumber: 7, value: Array("x".utf8), isUTF8: true),
            CustomOption(privateEnterpriseNumber: 8, value: [1, 2, 3, 4, 5], isUTF8: false),
        ])
    }

    @Test func simplePacketTakesPreviousTimestampAndInterfaceZero() throws {
        let frames = try readAll(CaptureFile.open(bytes: Samples.pcapng().bytes))
        #expect(frames[1].data == [7, 8, 9])
        #expect(frames[1].interfaceIndex == 0)
        #expect(frames[1].timestampNs == frames[0].timestampNs)
        #expect(frames[1].originalLength == 3)
    }

    @Test func simplePacketIsCutToSnapLength() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1, snapLength: 2)
        b.simplePacket(originalLength: 4, data: [1, 2, 3, 4])
        let frames = try readAll(PcapngReader(bytes: b.bytes))
        #expect(frames.map(\.data) == [[1, 2]])
        #expect(frames.map(\.originalLength) == [4])
    }

    @Test func statisticsBlockUpdatesItsInterface() throws {
        let reader = try CaptureFile.open(bytes: Samples.pcapng().bytes)
        _ = try readAll(reader)
        let stats = reader.interfaces[0].statistics
        #expect(stats == InterfaceStatistics(received: 100, interfaceDropped: 3, osDropped: 4, timestampNs: 1_700_000_001_000_000_000))
        #expect(stats.totalDropped == 7)
        #expect(reader.interfaces[1].statistics == InterfaceStatistics())
    }

    @Test func skipsAndCountsNameResolutionSecretsCustomAndUnknownBlocks() throws {
        let reader = try PcapngReader(bytes: Samples.pcapng().bytes)
        _ = try readAll(reader)
        #expect(reader.skippedBlockCount == 4)
        #expect(reader.warnings.map(\.kind) == [.skippedUnknown])
    }

    @Test func unknownLinkTypeIsReadable() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 9999)
        b.enhancedPacket(interface: 0, ticks: 0, data: [42])
        let reader = try PcapngReader(bytes: b.bytes)
        let frames = try readAll(reader)
        #expect(frames.map(\.data) == [[42]])
        #expect(reader.interfaces.first?.linkType.rawValue == 9999)
        #expect(reader.interfaces.first?.linkType.name == "LINKTYPE_9999")
    }

    @Test func fastPathGivesTheSameFramesWithoutOptions() throws {
        let slow = try readAll(CaptureFile.open(bytes: Samples.pcapng().bytes))
        let fast = try readAllFast(CaptureFile.open(bytes: Samples.pcapng().bytes))
        #expect(fast == slow.map(stripped))
    }

    @Test func secondSectionResetsInterfaceIds() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1)
        b.interface(linkType: 101)
        b.section(bigEndian: false)
        b.interface(linkType: 228)
        b.enhancedPacket(interface: 1, ticks: 0, data: [1])
        let error = captureError { _ = try readAll(PcapngReader(bytes: b.bytes)) }
        #expect(error?.kind == .unknownInterface)
        #expect(error?.recordNumber == 6)
    }

    @Test func picosecondResolutionIsDividedDown() throws {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1, options: [b.option(9, [12])])
        b.enhancedPacket(interface: 0, ticks: 1_234_567, data: [1])
        #expect(try readAll(PcapngReader(bytes: b.bytes)).map(\.timestampNs) == [1_234])
    }

    static let resolutions: [UInt8] = [0, 3, 6, 9, 12, 30, 127, 0x80, 0x8A, 0x9E, 0xBF, 0xC0, 0xE4, 0xFF]

    @Test(arguments: resolutions)
    func hugeTickCountsSaturateInsteadOfTrapping(_ tsresol: UInt8) {
        let conversion = TickConversion(tsresol: tsresol, offsetSeconds: Int64.max)
        for ticks: UInt64 in [0, 1, UInt64(Int64.max), UInt64.max] {
            _ = conversion.nanoseconds(ticks)
        }
        let plain = TickConversion(tsresol: tsresol, offsetSeconds: 0)
        #expect(plain.nanoseconds(0) == 0)
    }

    @Test func powerOfTwoResolutionKeepsFractions() {
        let conversion = TickConversion(tsresol: 0x80 | 1, offsetSeconds: 0)   // half seconds
        #expect(conversion.nanoseconds(3) == 1_500_000_000)
        #expect(conversion.nanoseconds(UInt64.max) == Int64.max)
    }
}
