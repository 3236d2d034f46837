import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CaptureKit

@Suite struct WriterRoundTripTests {
    static let interfaces = [
        CaptureInterface(linkType: .bluetoothHCIH4WithPHDR, name: "hci0", description: "H4 tap", snapLength: 65535, comments: ["tap"]),
        CaptureInterface(linkType: .ethernet, name: "lo"),
        CaptureInterface(linkType: .bluetoothLinuxMonitor),
    ]

    static let frames = [
        CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1_700_000_000_123_456_789, originalLength: 8,
                     data: [0, 0, 0, 0] + Samples.h4Command, comments: ["phone sends reset", "ünïcødé"],
                     customOptions: [CustomOption(privateEnterpriseNumber: 32473, value: Array("{\"k\":1}".utf8), isUTF8: true),
                                     CustomOption(privateEnterpriseNumber: 1, value: [1, 2, 3], isUTF8: false)],
                     flags: 2),
        CaptureFrame(number: 2, interfaceIndex: 1, timestampNs: 1_700_000_000_123_456_790, originalLength: 100, data: Array(0..<61)),
        CaptureFrame(number: 3, interfaceIndex: 2, timestampNs: 1, originalLength: 4, data: [0, 0, 0, 12]),
        CaptureFrame(number: 4, interfaceIndex: 0, timestampNs: -5, originalLength: 0, data: []),
    ]

    @Test func pcapngKeepsFramesInterfacesAndStatistics() throws {
        let writer = PcapngWriter()
        for interface in Self.interfaces { try writer.addInterface(interface) }
        for frame in Self.frames { try writer.write(frame) }
        let stats = InterfaceStatistics(received: 10, interfaceDropped: 1, osDropped: 2, timestampNs: 1_700_000_100_000_000_000)
        try writer.writeStatistics(interfaceIndex: 1, stats)
        try writer.close()

        let reader = try CaptureFile.open(bytes: writer.bytes)
        #expect(try readAll(reader) == Self.frames)
        #expect(reader.interfaces.map(\.linkType) == Self.interfaces.map(\.linkType))
        #expect(reader.interfaces.map(\.name) == Self.interfaces.map(\.name))
        #expect(reader.interfaces.map(\.description) == Self.interfaces.map(\.description))
        #expect(reader.interfaces.map(\.snapLength) == Self.interfaces.map(\.snapLength))
        #expect(reader.interfaces.map(\.comments) == Self.interfaces.map(\.comments))
        #expect(reader.interfaces.map(\.nanosecondsPerTick) == [1, 1, 1])
        #expect(reader.interfaces[1].statistics == stats)
        #expect(reader.warnings.isEmpty)
    }

    @Test func pcapngFromBorrowedBytesMatchesTheOwnedPath() throws {
        let owned = PcapngWriter()
        let borrowed = PcapngWriter()
        try owned.addInterface(Self.interfaces[1])
        try borrowed.addInterface(Self.interfaces[1])
        let frame = CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 42, originalLength: 9, data: [1, 2, 3, 4, 5])
        try owned.write(frame)
        try frame.data.withUnsafeBytes { data in
            try borrowed.write(interfaceIndex: 0, timestampNs: 42, originalLength: 9, data: data)
        }
        #expect(owned.bytes == borrowed.bytes)
    }

    @Test func pcapngCopyThroughTheFastPathKeepsEveryFrame() throws {
        let source = try CaptureFile.open(bytes: Samples.pcapng().bytes)
        let writer = PcapngWriter()
        var added = 0
        while try source.withNextFrame({ view in
            while added < source.interfaces.count {
                try writer.addInterface(source.interfaces[added])
                added += 1
            }
            try writer.write(view)
        }) {}
        let copy = try readAll(CaptureFile.open(bytes: writer.bytes))
        #expect(copy == (try readAll(CaptureFile.open(bytes: Samples.pcapng().bytes))).map(stripped))
    }

    @Test func pcapngFileWriterFlushMakesFramesReadableBeforeClose() throws {
        let path = temporaryPath("pcapng")
        defer { unlink(path) }
        let writer = try PcapngWriter(path: path)
        try writer.addInterface(Self.interfaces[1])
        try writer.write(Self.frames[1].with(interfaceIndex: 0))
        try writer.flush(sync: true)
        let midway = try readAll(CaptureFile.open(path: path))
        #expect(midway.count == 1)
        try writer.write(Self.frames[1].with(interfaceIndex: 0))
        try writer.close()
        #expect(try readAll(CaptureFile.open(path: path)).count == 2)
    }

    @Test func writingAfterCloseIsMisuse() throws {
        let path = temporaryPath("pcapng")
        defer { unlink(path) }
        let writer = try PcapngWriter(path: path)
        try writer.addInterface(Self.interfaces[1])
        try writer.close()
        #expect(captureError { try writer.write(Self.frames[1].with(interfaceIndex: 0)) }?.kind == .misuse)
    }

    @Test func frameOnAnInterfaceNeverAddedIsMisuse() {
        let writer = PcapngWriter()
        let error = captureError { try writer.write(Self.frames[0]) }
        #expect(error?.kind == .misuse)
    }

    @Test func btsnoopH4KeepsDirectionTypeAndMicroseconds() throws {
        let writer = BtsnoopWriter(datalink: .h4)
        let frames = [
            CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1_700_000_000_000_001_000, originalLength: 8, data: [0, 0, 0, 0] + Samples.h4Command),
            CaptureFrame(number: 2, interfaceIndex: 0, timestampNs: 1_700_000_000_000_002_000, originalLength: 11, data: [0, 0, 0, 1] + Samples.h4Event),
            CaptureFrame(number: 3, interfaceIndex: 0, timestampNs: 1_700_000_000_000_003_000, originalLength: 16, data: [0, 0, 0, 1] + Samples.h4ACL),
        ]
        for frame in frames { try writer.write(frame, linkType: .bluetoothHCIH4WithPHDR) }
        try writer.close()
        #expect(Array(writer.bytes[16 + 8 ..< 16 + 12]) == [0, 0, 0, 2])   // command: sent, command/event bit
        let reader = try CaptureFile.open(bytes: writer.bytes)
        #expect(try readAll(reader) == frames)
        #expect((reader as? BtsnoopReader)?.datalink == 1002)
    }

    @Test func btsnoopMonitorKeepsIndexAndOpcode() throws {
        let writer = BtsnoopWriter(datalink: .monitor)
        let frames = [
            CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1_000, originalLength: 7, data: [0, 0, 0, 2, 3, 12, 0]),
            CaptureFrame(number: 2, interfaceIndex: 0, timestampNs: 2_000, originalLength: 6, data: [0, 3, 0, 12, 0x41, 0]),
        ]
        for frame in frames { try writer.write(frame, linkType: .bluetoothLinuxMonitor) }
        #expect(try readAll(CaptureFile.open(bytes: writer.bytes)) == frames)
    }

    @Test func btsnoopRefusesOtherLinkTypes() {
        let writer = BtsnoopWriter(datalink: .h4)
        let frame = CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 0, originalLength: 14, data: Array(repeating: 0, count: 14))
        let error = captureError { try writer.write(frame, linkType: .ethernet) }
        #expect(error?.kind == .misuse)
        #expect(error?.found == "a frame of link type ETHERNET (1)")
    }

    @Test func pcapWriterRoundTripsNanoseconds() throws {
        let writer = PcapWriter(linkType: .ethernet)
        let frame = CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1_700_000_000_999_999_999, originalLength: 60, data: Array(0..<14))
        try writer.write(frame)
        let reader = try CaptureFile.open(bytes: writer.bytes)
        #expect(try readAll(reader) == [frame])
        #expect((reader as? PcapReader)?.isNanosecond == true)
    }

    @Test func pcapWriterRefusesTimestampsBefore1970() {
        let writer = PcapWriter(linkType: .ethernet)
        let frame = CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: -1, originalLength: 0, data: [])
        #expect(captureError { try writer.write(frame) }?.kind == .misuse)
    }
}

extension CaptureFrame {
    func with(interfaceIndex: Int) -> CaptureFrame {
        var copy = self
        copy.interfaceIndex = interfaceIndex
        return copy
    }
}
