import Testing
@testable import CaptureKit

@Suite struct BtsnoopReaderTests {
    @Test func h4RecordsGetADirectionHeaderUnderLinkType201() throws {
        let reader = try CaptureFile.open(bytes: Samples.btsnoopH4().bytes)
        let frames = try readAll(reader)
        #expect(reader.format == .btsnoop)
        #expect(reader.interfaces.map(\.linkType) == [.bluetoothHCIH4WithPHDR])
        #expect(frames.map(\.data) == [
            [0, 0, 0, 0] + Samples.h4Command, [0, 0, 0, 1] + Samples.h4Event, [0, 0, 0, 0] + Samples.h4ACL,
        ])
        #expect(frames.map(\.originalLength) == frames.map(\.data.count))
    }

    @Test func timestampsAreMicrosecondsSinceYearZero() throws {
        let frames = try readAll(CaptureFile.open(bytes: Samples.btsnoopH4().bytes))
        #expect(frames.map(\.timestampNs) == [1_700_000_000_000_001_000, 1_700_000_000_000_500_000, 1_700_000_000_001_000_000])
    }

    @Test func cumulativeDropsBecomeInterfaceDropped() throws {
        let reader = try CaptureFile.open(bytes: Samples.btsnoopH4().bytes)
        _ = try readAll(reader)
        #expect(reader.interfaces[0].statistics.interfaceDropped == 2)
    }

    @Test func monitorRecordsGetIndexAndOpcodeHeaderUnderLinkType254() throws {
        let reader = try CaptureFile.open(bytes: Samples.btsnoopMonitor().bytes)
        let frames = try readAll(reader)
        #expect(reader.interfaces.map(\.linkType) == [.bluetoothLinuxMonitor])
        #expect(frames.map(\.data) == [
            [0, 0, 0, 2] + Samples.h4Command.dropFirst(), [0, 1, 0, 3] + Samples.h4Event.dropFirst(),
        ])
    }

    struct H1Case: Sendable, CustomStringConvertible {
        var flags: UInt32
        var direction: UInt8
        var h4Type: UInt8
        var description: String { "flags 0x\(String(flags, radix: 16))" }
    }

    @Test(arguments: [
        H1Case(flags: 0x02, direction: 0, h4Type: 1), H1Case(flags: 0x03, direction: 1, h4Type: 4),
        H1Case(flags: 0x10, direction: 0, h4Type: 1), H1Case(flags: 0x11, direction: 1, h4Type: 4),
        H1Case(flags: 0x00, direction: 0, h4Type: 2), H1Case(flags: 0x01, direction: 1, h4Type: 2),
    ])
    func h1RecordsGetTheH4TypeFromTheirFlags(_ c: H1Case) throws {
        let fixture = btsnoopFixture(datalink: 1001, records: [(c.flags, 0, 0, [0xAB, 0xCD])])
        let frames = try readAll(CaptureFile.open(bytes: fixture.bytes))
        #expect(frames.map(\.data) == [[0, 0, 0, c.direction, c.h4Type, 0xAB, 0xCD]])
        #expect(frames.map(\.originalLength) == [7])
    }

    @Test func bumbleFlagsInAnH4FileKeepTheDirection() throws {
        let fixture = btsnoopFixture(datalink: 1002, records: [(0x10, 0, 0, Samples.h4Command), (0x11, 0, 0, Samples.h4Event)])
        let frames = try readAll(CaptureFile.open(bytes: fixture.bytes))
        #expect(frames.map { $0.data.prefix(5) } == [[0, 0, 0, 0, 1], [0, 0, 0, 1, 4]])
    }

    @Test func unsupportedDatalinkIsATypedErrorWithAHint() {
        let fixture = btsnoopFixture(datalink: 9999, records: [])
        let error = captureError { _ = try CaptureFile.open(bytes: fixture.bytes, name: "x.btsnoop") }
        #expect(error?.kind == .unsupportedLinkType)
        #expect(error?.offset == 12)
        #expect(error?.found == "datalink 9999")
        #expect(error?.description.contains("x.btsnoop") == true)
    }

    @Test func fastPathGivesTheSameFrames() throws {
        for fixture in [Samples.btsnoopH4(), Samples.btsnoopMonitor()] {
            #expect(try readAllFast(CaptureFile.open(bytes: fixture.bytes)) == readAll(CaptureFile.open(bytes: fixture.bytes)))
        }
    }
}

@Suite struct PacketLoggerReaderTests {
    @Test(arguments: [false, true])
    func readsEitherByteOrderAsMonitorFrames(_ bigEndian: Bool) throws {
        let reader = try CaptureFile.open(bytes: Samples.packetLogger(bigEndian: bigEndian).bytes)
        let frames = try readAll(reader)
        #expect(reader.format == .packetLogger)
        #expect((reader as? PacketLoggerReader)?.isBigEndian == bigEndian)
        #expect(reader.interfaces.map(\.linkType) == [.bluetoothLinuxMonitor])
        #expect(frames.map(\.data) == [
            [0, 0, 0, 2] + Samples.h4Command.dropFirst(),
            [0, 0, 0, 3] + Samples.h4Event.dropFirst(),
            [0, 0, 0, 12] + Array("hello\0".utf8),
            [0, 0, 0, 11, 0xFE, 0xC0, 0xFF, 0xEE],
        ])
        #expect(frames.map(\.timestampNs) == [
            1_700_000_000_000_001_000, 1_700_000_000_000_002_000, 1_700_000_000_000_003_000, 1_700_000_001_000_000_000,
        ])
    }

    struct TypeCase: Sendable, CustomStringConvertible {
        var type: UInt8
        var opcode: UInt8
        var keepsType: Bool
        var description: String { "type 0x\(String(type, radix: 16))" }
    }

    @Test(arguments: [
        TypeCase(type: 0x00, opcode: 2, keepsType: false), TypeCase(type: 0x01, opcode: 3, keepsType: false),
        TypeCase(type: 0x02, opcode: 4, keepsType: false), TypeCase(type: 0x03, opcode: 5, keepsType: false),
        TypeCase(type: 0x08, opcode: 6, keepsType: false), TypeCase(type: 0x09, opcode: 7, keepsType: false),
        TypeCase(type: 0xFC, opcode: 12, keepsType: false), TypeCase(type: 0xFE, opcode: 11, keepsType: true),
        TypeCase(type: 0x42, opcode: 11, keepsType: true),
    ])
    func mapsEveryRecordTypeToAMonitorOpcodeLosingNothing(_ c: TypeCase) throws {
        let fixture = packetLoggerFixture(bigEndian: false, records: [(0x00, 0, 0, [1, 2, 3]), (c.type, 0, 0, [9, 8])])
        let frames = try readAll(PacketLoggerReader(bytes: fixture.bytes))
        #expect(frames.last?.data == [0, 0, 0, c.opcode] + (c.keepsType ? [c.type] : []) + [9, 8])
    }

    @Test func fastPathGivesTheSameFrames() throws {
        let fixture = Samples.packetLogger(bigEndian: true)
        #expect(try readAllFast(CaptureFile.open(bytes: fixture.bytes)) == readAll(CaptureFile.open(bytes: fixture.bytes)))
    }
}

@Suite struct FormatDetectionTests {
    @Test func detectsEachFormatFromItsFirstBytes() {
        #expect(CaptureFile.detectFormat(Samples.pcapng().bytes) == .pcapng)
        #expect(CaptureFile.detectFormat(Samples.pcap().bytes) == .pcap)
        #expect(CaptureFile.detectFormat(Samples.pcap(bigEndian: true, nanosecond: true).bytes) == .pcap)
        #expect(CaptureFile.detectFormat(Samples.btsnoopH4().bytes) == .btsnoop)
        #expect(CaptureFile.detectFormat(Samples.packetLogger(bigEndian: false).bytes) == .packetLogger)
        #expect(CaptureFile.detectFormat(Samples.packetLogger(bigEndian: true).bytes) == .packetLogger)
    }

    @Test func textIsNotMistakenForACapture() {
        #expect(CaptureFile.detectFormat(Array("Hello, this is not a capture".utf8)) == nil)
        #expect(CaptureFile.detectFormat([]) == nil)
    }

    @Test func unrecognizedFormatNamesTheMagicAndTheSupportedFormats() {
        let error = captureError { _ = try CaptureFile.open(bytes: Array("GIF89a..........".utf8), name: "pic.gif") }
        #expect(error?.kind == .unrecognizedFormat)
        #expect(error?.found == "the bytes 47 49 46 38")
        #expect(error?.hint.contains("pcapng") == true)
        #expect(error?.hint.contains("btsnoop") == true)
        #expect(error?.hint.contains("PacketLogger") == true)
    }
}
