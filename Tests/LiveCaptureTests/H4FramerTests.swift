import Testing

@testable import LiveCapture
import TetherTestSupport


/// Packets as they appear on an H4 transport, one per indicator.
enum H4Vectors {
    /// HCI_Reset (opcode 0x0C03, no parameters).
    static let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]
    /// LE Set Scan Enable (0x200C) with two parameters.
    static let scanEnable: [UInt8] = [0x01, 0x0C, 0x20, 0x02, 0x01, 0x00]
    /// ACL, handle 0x0040 first fragment, 7 bytes: L2CAP length 3, CID 4 (ATT), Read Request 0x0003.
    static let acl: [UInt8] = [0x02, 0x40, 0x20, 0x07, 0x00, 0x03, 0x00, 0x04, 0x00, 0x0A, 0x03, 0x00]
    /// SCO, handle 0x0001, 3 bytes.
    static let sco: [UInt8] = [0x03, 0x01, 0x00, 0x03, 0xAA, 0xBB, 0xCC]
    /// Command Complete for HCI_Reset, status 0.
    static let commandComplete: [UInt8] = [0x04, 0x0E, 0x04, 0x01, 0x03, 0x0C, 0x00]
    /// An event with no parameters (code 0x10, Hardware Error would have one; any code frames).
    static let emptyEvent: [UInt8] = [0x04, 0x10, 0x00]
    /// ISO, handle 0x0010, 5 bytes of data load.
    static let iso: [UInt8] = [0x05, 0x10, 0x00, 0x05, 0x00, 1, 2, 3, 4, 5]
    /// ACL with an empty payload.
    static let emptyACL: [UInt8] = [0x02, 0x40, 0x20, 0x00, 0x00]

    static let all: [[UInt8]] = [reset, scanEnable, acl, sco, commandComplete, emptyEvent, iso, emptyACL]
    static var stream: [UInt8] { all.flatMap { $0 } }
}

/// Feeds `chunks` to a fresh framer; returns the packets, the error the feeding ran into, and the framer.
func frame(_ chunks: [[UInt8]], direction: H4Direction = .sent, maximum: Int = H4Framer.largestPacketLength) -> (packets: [[UInt8]], error: H4FramingError?, framer: H4Framer) {
    var framer = H4Framer(direction: direction, maximumPacketLength: maximum)
    var packets: [[UInt8]] = []
    var error: H4FramingError?
    for chunk in chunks {
        let result = chunk.withUnsafeBytes { bytes in framer.feed(bytes) { packets.append(Array($0)) } }
        if error == nil { error = result }
    }
    return (packets, error, framer)
}

@Suite struct H4FramerTests {
    @Test(arguments: H4Vectors.all)
    func eachPacketTypeFramesWhole(packet: [UInt8]) {
        let result = frame([packet])
        #expect(result.packets == [packet])
        #expect(result.error == nil)
        #expect(!result.framer.hasPartialPacket)
    }

    @Test func everyIndicatorHasItsHeaderLength() {
        #expect(HCIPacketIndicator.allCases.map(\.headerLength) == [3, 4, 3, 2, 4])
        #expect(HCIPacketIndicator.allCases.map(\.rawValue) == [1, 2, 3, 4, 5])
    }

    @Test func aStreamFedWholeGivesEveryPacketInOrder() {
        let result = frame([H4Vectors.stream])
        #expect(result.packets == H4Vectors.all)
        #expect(result.framer.packetsFramed == H4Vectors.all.count)
        #expect(result.framer.bytesFed == H4Vectors.stream.count)
    }

    @Test func aStreamSplitInTwoAtEveryByteGivesTheSamePackets() {
        let stream = H4Vectors.stream
        for split in 0...stream.count {
            let result = frame([Array(stream[..<split]), Array(stream[split...])])
            #expect(result.packets == H4Vectors.all, "split at byte \(split)")
            #expect(result.error == nil, "split at byte \(split)")
        }
    }

    @Test func aStreamFedByteByByteGivesTheSamePackets() {
        let result = frame(H4Vectors.stream.map { [$0] })
        #expect(result.packets == H4Vectors.all)
        #expect(!result.framer.hasPartialPacket)
    }

    @Test func aStreamInSeededRandomChunksGivesTheSamePackets() {
        var random = SplitMix64(seed: 0x4834_7461_70)
        let stream = Array(repeating: H4Vectors.stream, count: 20).flatMap { $0 }
        for _ in 0..<200 {
            var chunks: [[UInt8]] = []
            var index = 0
            while index < stream.count {
                let size = Int.random(in: 0...12, using: &random)
                chunks.append(Array(stream[index..<min(index + size, stream.count)]))
                index += size
            }
            let result = frame(chunks)
            #expect(result.packets == Array(repeating: H4Vectors.all, count: 20).flatMap { $0 })
        }
    }

    @Test func halfAPacketIsHeldUntilTheRestArrives() {
        var framer = H4Framer(direction: .received)
        var packets: [[UInt8]] = []
        let packet = H4Vectors.commandComplete
        packet[..<3].withUnsafeBytes { _ = framer.feed($0) { packets.append(Array($0)) } }
        #expect(packets.isEmpty)
        #expect(framer.hasPartialPacket)
        packet[3...].withUnsafeBytes { _ = framer.feed($0) { packets.append(Array($0)) } }
        #expect(packets == [packet])
        #expect(!framer.hasPartialPacket)
    }

    @Test func garbageAtTheStartIsAFramingErrorAtOffsetZero() {
        let result = frame([[0x42, 0x01, 0x03, 0x0C, 0x00]])
        #expect(result.packets.isEmpty)
        #expect(result.error == H4FramingError(direction: .sent, offset: 0, problem: .unknownPacketIndicator(0x42)))
    }

    @Test func garbageAfterPacketsKeepsThePacketsBeforeItAndNamesItsOffset() {
        let good = H4Vectors.reset + H4Vectors.acl
        let result = frame([good + [0x00, 0xFF] + H4Vectors.reset])
        #expect(result.packets == [H4Vectors.reset, H4Vectors.acl])
        #expect(result.error?.offset == good.count)
        #expect(result.error?.problem == .unknownPacketIndicator(0x00))
    }

    @Test func garbageInALaterChunkIsReportedAtItsStreamOffset() {
        let result = frame([Array(H4Vectors.acl[..<5]), Array(H4Vectors.acl[5...]) + [0x09]], direction: .received)
        #expect(result.packets == [H4Vectors.acl])
        #expect(result.error == H4FramingError(direction: .received, offset: H4Vectors.acl.count, problem: .unknownPacketIndicator(0x09)))
    }

    @Test func afterAFramingErrorBytesAreCountedButNotFramed() {
        var framer = H4Framer(direction: .sent)
        var packets = 0
        let first = [UInt8]([0x07]).withUnsafeBytes { framer.feed($0) { _ in packets += 1 } }
        let second = H4Vectors.reset.withUnsafeBytes { framer.feed($0) { _ in packets += 1 } }
        #expect(first != nil)
        #expect(second == nil)
        #expect(packets == 0)
        #expect(framer.failure == first)
        #expect(framer.bytesFed == 1 + H4Vectors.reset.count)
    }

    @Test func everyByteThatIsNotAnIndicatorIsAFramingError() {
        for byte in UInt8.min...UInt8.max where HCIPacketIndicator(rawValue: byte) == nil {
            let result = frame([[byte]])
            #expect(result.error?.problem == .unknownPacketIndicator(byte))
        }
    }

    @Test func aLengthAboveTheMaximumIsAFramingErrorAtThePacketsOffset() {
        // ACL announcing 100 bytes when 64-byte packets are the most accepted.
        let oversize: [UInt8] = [0x02, 0x40, 0x20, 100, 0x00] + Array(repeating: 0, count: 100)
        let result = frame([H4Vectors.reset + oversize], maximum: 64)
        #expect(result.packets == [H4Vectors.reset])
        #expect(result.error == H4FramingError(
            direction: .sent, offset: H4Vectors.reset.count,
            problem: .packetTooLong(indicator: .acl, packetLength: 105, maximum: 64)))
    }

    @Test func aLengthAboveTheMaximumIsFoundWhenTheHeaderArrivesInPieces() {
        let oversize: [UInt8] = [0x02, 0x40, 0x20, 100, 0x00]
        let result = frame(oversize.map { [$0] }, maximum: 64)
        #expect(result.packets.isEmpty)
        #expect(result.error?.offset == 0)
        #expect(result.error?.problem == .packetTooLong(indicator: .acl, packetLength: 105, maximum: 64))
    }

    @Test func theLargestACLPacketFramesInRandomChunks() {
        var random = SplitMix64(seed: 65_535)
        let payload = (0..<65_535).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let packet: [UInt8] = [0x02, 0x01, 0x00, 0xFF, 0xFF] + payload
        var chunks: [[UInt8]] = []
        var index = 0
        while index < packet.count {
            let size = Int.random(in: 1...4096, using: &random)
            chunks.append(Array(packet[index..<min(index + size, packet.count)]))
            index += size
        }
        let result = frame(chunks + [H4Vectors.reset])
        #expect(result.packets.count == 2)
        #expect(result.packets.first == packet)
        #expect(result.packets.last == H4Vectors.reset)
        #expect(result.error == nil)
    }

    @Test func theISOLengthIgnoresTheTwoReservedBits() {
        // Length field 0xC005: reserved bits set, 5 bytes of data load.
        let packet: [UInt8] = [0x05, 0x10, 0x00, 0x05, 0xC0, 1, 2, 3, 4, 5]
        let result = frame([packet + H4Vectors.reset])
        #expect(result.packets == [packet, H4Vectors.reset])
    }

    @Test func theErrorSaysWhichStreamWhereAndWhatWasExpected() {
        let error = H4FramingError(direction: .received, offset: 1234, problem: .unknownPacketIndicator(0x42))
        #expect(error.description.contains("controller→host stream, byte offset 1234"))
        #expect(error.description.contains("expected an H4 packet indicator"))
        #expect(error.description.contains("found 0x42"))
    }

    @Test func theMaximumIsClampedToWhatTheHeadersCanExpress() {
        #expect(H4Framer(direction: .sent, maximumPacketLength: 1 << 30).maximumPacketLength == H4Framer.largestPacketLength)
        #expect(H4Framer(direction: .sent, maximumPacketLength: -5).maximumPacketLength == 3)
    }
}
