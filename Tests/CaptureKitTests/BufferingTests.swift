import Testing
@testable import CaptureKit

@Suite struct BufferingTests {
    static let bufferSizes = [1, 3, 7, 16, 64]

    @Test(arguments: Samples.all)
    func tinyBuffersGiveTheSameFramesAsTheDefault(_ fixture: Fixture) throws {
        let expected = try readAll(CaptureFile.open(bytes: fixture.bytes))
        for size in Self.bufferSizes {
            let reader = try CaptureFile.open(bytes: fixture.bytes, bufferSize: size)
            #expect(try readAll(reader) == expected, "buffer size \(size)")
            #expect(reader.warnings.allSatisfy { $0.kind != .truncated })
            let fast = try CaptureFile.open(bytes: fixture.bytes, bufferSize: size)
            #expect(try readAllFast(fast) == expected.map(stripped), "fast path, buffer size \(size)")
        }
    }

    @Test func recordLargerThanTheBufferIsRead() throws {
        let big = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let fixture = pcapFixture(bigEndian: false, nanosecond: true, records: [(1, 1, [1]), (2, 2, big), (3, 3, [3])])
        let frames = try readAll(CaptureFile.open(bytes: fixture.bytes, bufferSize: 4096))
        #expect(frames.map(\.data) == [[1], big, [3]])
    }

    @Test func bytesReadReachesTheFileSize() throws {
        for fixture in Samples.all {
            let reader = try CaptureFile.open(bytes: fixture.bytes, bufferSize: 5)
            _ = try readAll(reader)
            #expect(reader.bytesRead == UInt64(fixture.bytes.count), "\(fixture)")
        }
    }
}
