import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
@testable import CaptureKit

@Suite struct PcapReaderTests {
    struct Variant: Sendable, CustomStringConvertible {
        var bigEndian: Bool
        var nanosecond: Bool
        var description: String { "\(bigEndian ? "big" : "little")-endian \(nanosecond ? "ns" : "µs")" }
    }

    static let variants = [
        Variant(bigEndian: false, nanosecond: false), Variant(bigEndian: true, nanosecond: false),
        Variant(bigEndian: false, nanosecond: true), Variant(bigEndian: true, nanosecond: true),
    ]

    @Test(arguments: variants)
    func readsEveryByteOrderAndResolution(_ variant: Variant) throws {
        let fixture = Samples.pcap(bigEndian: variant.bigEndian, nanosecond: variant.nanosecond)
        let reader = try CaptureFile.open(bytes: fixture.bytes)
        let frames = try readAll(reader)
        let unit: Int64 = variant.nanosecond ? 1 : 1000
        #expect(reader.format == .pcap)
        #expect(frames.map(\.timestampNs) == [
            1_700_000_000_000_000_000 + 250 * unit, 1_700_000_001_000_000_000 + 999 * unit, 1_700_000_002_000_000_000,
        ])
        #expect(frames.map(\.data) == [[0xAA, 0xBB], Array(0..<20), []])
        #expect(frames.map(\.originalLength) == [12, 30, 10])
        #expect(frames.map(\.number) == [1, 2, 3])
        #expect(reader.interfaces.count == 1)
        #expect(reader.interfaces[0].nanosecondsPerTick == Double(unit))
        #expect(reader.warnings.isEmpty)
        #expect(reader.bytesRead == UInt64(fixture.bytes.count))
    }

    @Test func linkTypeIgnoresFCSBits() throws {
        let fixture = pcapFixture(bigEndian: false, nanosecond: false, linkType: 0x1400_0000 | 201, records: [])
        let reader = try CaptureFile.open(bytes: fixture.bytes)
        #expect(reader.interfaces.first?.linkType == .bluetoothHCIH4WithPHDR)
    }

    @Test func fastPathGivesTheSameFrames() throws {
        let fixture = Samples.pcap()
        #expect(try readAllFast(CaptureFile.open(bytes: fixture.bytes)) == readAll(CaptureFile.open(bytes: fixture.bytes)))
    }

    @Test func readsFromAFilePath() throws {
        let path = temporaryPath("pcap")
        defer { unlink(path) }
        let writer = try PcapWriter(path: path, linkType: .ethernet)
        try writer.write(CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 5_000_000_001, originalLength: 3, data: [1, 2, 3]))
        try writer.close()
        let frames = try readAll(CaptureFile.open(path: path))
        #expect(frames == [CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 5_000_000_001, originalLength: 3, data: [1, 2, 3])])
    }

    @Test func missingFileIsAnIOErrorNamingThePath() {
        let error = captureError { _ = try CaptureFile.open(path: "/nonexistent/tether/x.pcap") }
        #expect(error?.kind == .io)
        #expect(error?.file == "/nonexistent/tether/x.pcap")
    }
}
