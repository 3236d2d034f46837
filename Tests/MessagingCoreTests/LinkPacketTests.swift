import Testing
@testable import MessagingCore
import TetherTestSupport

/// One packet kind with its exact bytes, hand-written from the layout tables of docs/connectiq-link.md.
struct PacketCase: Sendable, CustomTestStringConvertible {
    let name: String
    let packet: LinkPacket
    let sender: LinkDirection
    let bytes: [UInt8]
    var testDescription: String { name }

    static let uuid = "0180e5205f7e11e498030800200c9a66"

    static let all: [PacketCase] = [
        PacketCase(name: "connect request", packet: .command(.connectRequest(app: echoApp, flags: 1)), sender: .phone,
                   bytes: hex("0001" + uuid + "01")),
        PacketCase(name: "connect response", packet: .command(.connectResponse(status: .success, app: echoApp, connection: 3, flags: 1)),
                   sender: .watch, bytes: hex("000100" + uuid + "0301")),
        PacketCase(name: "connect response cut to 20 bytes", packet: .command(.connectResponse(status: .appNotFound, app: echoApp, connection: 0, flags: nil)),
                   sender: .watch, bytes: hex("000101" + uuid + "00")),
        PacketCase(name: "disconnect request", packet: .command(.disconnectRequest(connection: 2)), sender: .phone, bytes: hex("000202")),
        PacketCase(name: "disconnect response", packet: .command(.disconnectResponse(status: .invalidConnection, connection: 2)),
                   sender: .watch, bytes: hex("00020102")),
        PacketCase(name: "watch opens", packet: .command(.watchOpened(app: echoApp, connection: 4)), sender: .watch,
                   bytes: hex("0003" + uuid + "04")),
        PacketCase(name: "watch opens answer", packet: .command(.watchOpenedAnswer(status: .success, connection: 4)), sender: .phone,
                   bytes: hex("00030004")),
        PacketCase(name: "watch closes", packet: .command(.watchClosed(connection: 4)), sender: .watch, bytes: hex("000404")),
        PacketCase(name: "watch closes answer", packet: .command(.watchClosedAnswer(status: .success, connection: 4)), sender: .phone,
                   bytes: hex("00040004")),
        PacketCase(name: "app info request", packet: .command(.appInfoRequest(app: echoApp)), sender: .phone, bytes: hex("0005" + uuid)),
        PacketCase(name: "app info response", packet: .command(.appInfoResponse(app: echoApp, version: 0x0102)), sender: .watch,
                   bytes: hex("0005" + uuid + "0201")),
        PacketCase(name: "open app request", packet: .command(.openAppRequest(app: echoApp)), sender: .phone, bytes: hex("0006" + uuid)),
        PacketCase(name: "open app response", packet: .command(.openAppResponse(app: echoApp, code: .appAlreadyRunning)), sender: .watch,
                   bytes: hex("0006" + uuid + "03")),
        PacketCase(name: "first", packet: .control(connection: 1, .first(flags: .encrypted, length: 0x0102_0304)), sender: .phone,
                   bytes: hex("f1 00 02 04030201")),
        PacketCase(name: "last", packet: .control(connection: 1, .last(sequence: 7, crc: 0xBB3D)), sender: .phone, bytes: hex("f1 01 07 3dbb")),
        PacketCase(name: "ack", packet: .control(connection: 15, .ack(type: .data, status: .success, sequence: 14)), sender: .watch,
                   bytes: hex("ff 02 01 00 0e")),
        PacketCase(name: "ack request", packet: .control(connection: 2, .ackRequest(sequence: 9)), sender: .watch, bytes: hex("f2 03 09")),
        PacketCase(name: "capabilities", packet: .control(connection: 2, .capabilities([0xAA, 0xBB])), sender: .watch, bytes: hex("f2 04 aabb")),
        PacketCase(name: "encryption key", packet: .control(connection: 1, .encryptionKey(key: Array(0..<16), isResponse: false)),
                   sender: .phone, bytes: hex("f1 05 000102030405060708090a0b0c0d0e0f 00")),
        PacketCase(name: "encryption key response", packet: .control(connection: 1, .encryptionKey(key: Array(0..<16), isResponse: true)),
                   sender: .watch, bytes: hex("f1 05 000102030405060708090a0b0c0d0e0f 01")),
        PacketCase(name: "key request", packet: .control(connection: 1, .keyRequest([])), sender: .watch, bytes: hex("f1 06")),
        PacketCase(name: "data", packet: .data(sequence: 3, connection: 1, payload: [1, 2, 3]), sender: .phone, bytes: hex("31 010203")),
        PacketCase(name: "empty data", packet: .data(sequence: 14, connection: 15, payload: []), sender: .watch, bytes: hex("ef")),
        PacketCase(name: "unknown command", packet: .unknown(hex("0009ff")), sender: .watch, bytes: hex("0009ff")),
        PacketCase(name: "unknown control", packet: .unknown(hex("f10a")), sender: .watch, bytes: hex("f10a")),
        PacketCase(name: "empty", packet: .malformed([], .empty), sender: .watch, bytes: []),
        PacketCase(name: "command without id", packet: .malformed([0], .missingIdentifier), sender: .watch, bytes: [0]),
        PacketCase(name: "control without id", packet: .malformed([0xF3], .missingIdentifier), sender: .watch, bytes: [0xF3]),
        PacketCase(name: "short ack", packet: .malformed(hex("f10200"), .wrongLength(packet: "ack", expected: [5], found: 3)),
                   sender: .watch, bytes: hex("f10200")),
        PacketCase(name: "key with bad isResponse", packet: .malformed(hex("f105 000102030405060708090a0b0c0d0e0f 02"),
                   .invalidValue(field: "isResponse", offset: 18, value: 2)), sender: .watch, bytes: hex("f105 000102030405060708090a0b0c0d0e0f 02")),
        PacketCase(name: "request from the watch", packet: .malformed(hex("0005" + uuid), .wrongLength(packet: "app info response", expected: [20], found: 18)),
                   sender: .watch, bytes: hex("0005" + uuid)),
    ]
}

@Suite struct LinkPacketTests {
    @Test(arguments: PacketCase.all)
    func decodeGivesThePacket(_ sample: PacketCase) {
        #expect(LinkPacket.decode(sample.bytes, from: sample.sender) == sample.packet)
    }

    @Test(arguments: PacketCase.all)
    func encodeGivesTheBytes(_ sample: PacketCase) {
        #expect(sample.packet.encode() == sample.bytes)
    }

    @Test(arguments: PacketCase.all)
    func summaryOfBytesEqualsTheDecodedSummary(_ sample: PacketCase) {
        #expect(LinkPacket.summary(of: sample.bytes, from: sample.sender) == LinkPacket.decode(sample.bytes, from: sample.sender).summary)
    }

    @Test func summaryOfEveryFirstByteEqualsTheDecodedSummary() {
        for first in 0...255 {
            for length in [1, 2, 20, 244, 1000] {
                let bytes = [UInt8(first)] + [UInt8](repeating: 0x5A, count: length - 1)
                for side in [LinkDirection.phone, .watch] {
                    #expect(LinkPacket.summary(of: bytes, from: side) == LinkPacket.decode(bytes, from: side).summary)
                }
            }
        }
        #expect(LinkPacket.summary(of: [], from: .phone) == LinkPacket.decode([], from: .phone).summary)
    }

    @Test func directionDecidesTheCommandLayout() {
        let fromPhone = LinkPacket.decode(hex("0002 05"), from: .phone)
        let fromWatch = LinkPacket.decode(hex("0002 05"), from: .watch)
        #expect(fromPhone == .command(.disconnectRequest(connection: 5)))
        #expect(fromWatch == .malformed(hex("000205"), .wrongLength(packet: "disconnect response", expected: [4], found: 3)))
    }

    @Test func anyBytesRoundTripExactly() {
        var random = SplitMix64(state: 0x11AC)
        for round in 0..<20_000 {
            let length = Int.random(in: 0..<24, using: &random)
            var bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &random) }
            if round % 3 == 0, !bytes.isEmpty { bytes[0] = 0x00 }
            if round % 3 == 1, bytes.count > 1 { bytes[0] = 0xF0 | bytes[0] & 0x0F; bytes[1] &= 0x07 }
            let sender: LinkDirection = round % 2 == 0 ? .phone : .watch
            #expect(LinkPacket.decode(bytes, from: sender).encode() == bytes)
        }
    }

    @Test func summariesAreOneReadableLine() {
        #expect(LinkPacket.data(sequence: 3, connection: 1, payload: Array(repeating: 0, count: 19)).summary == "data seq 3 conn 1, 19 bytes")
        #expect(LinkPacket.control(connection: 1, .ack(type: .first, status: .success, sequence: 0)).summary == "ack first success conn 1")
        #expect(LinkPacket.control(connection: 1, .ack(type: .data, status: .success, sequence: 14)).summary == "ack data success seq 14 conn 1")
        #expect(LinkPacket.command(.connectRequest(app: echoApp, flags: 1)).summary
            == "command connect → 0180e520-5f7e-11e4-9803-0800200c9a66 force-open")
        #expect(LinkPacket.command(.connectResponse(status: .success, app: echoApp, connection: 1, flags: 1)).summary
            == "command connect ← success 0180e520-5f7e-11e4-9803-0800200c9a66 conn 1 large-packets")
        #expect(LinkPacket.command(.appInfoResponse(app: echoApp, version: 0xFFFF)).summary
            == "command app-info ← 0180e520-5f7e-11e4-9803-0800200c9a66 not installed")
        #expect(LinkPacket.control(connection: 2, .first(flags: .encrypted, length: 32)).summary == "first conn 2, 32 bytes, encrypted")
        #expect(LinkPacket.control(connection: 2, .last(sequence: 1, crc: 0x16FA)).summary == "last seq 1 crc 0x16fa conn 2")
        #expect(LinkPacket.malformed([], .empty).summary == "malformed packet (an empty packet; expected at least one byte): ")
        #expect(LinkPacket.unknown(hex("0009")).summary == "unknown packet 00 09")
        #expect(LinkPacket.control(connection: 2, .last(sequence: 1, crc: 0x000A)).summary == "last seq 1 crc 0x000a conn 2")
        #expect(LinkPacket.control(connection: 1, .encryptionKey(key: [0x00, 0x0F, 0xA0, 0xFF] + Array(repeating: 0x5C, count: 12), isResponse: true)).summary
            == "encryption key conn 1 000fa0ff5c5c5c5c5c5c5c5c5c5c5c5c (response)")
        #expect(LinkPacket.data(sequence: 0, connection: 15, payload: []).summary == "data seq 0 conn 15, 0 bytes")
    }
}

@Suite struct IQUUIDTests {
    @Test func textAndBytesAgree() {
        let uuid = IQUUID("0180E520-5F7E-11E4-9803-0800200C9A66")!
        #expect(uuid.bytes == hex("0180e5205f7e11e498030800200c9a66"))
        #expect(uuid.description == "0180e520-5f7e-11e4-9803-0800200c9a66")
        #expect(IQUUID(bytes: uuid.bytes) == uuid)
        #expect(uuid == .loopbackTestApp)
    }

    @Test func malformedTextIsRejected() {
        #expect(IQUUID("0180E520-5F7E-11E4-9803-0800200C9A6") == nil)
        #expect(IQUUID("0180E520-5F7E-11E4-9803-0800200C9A6G") == nil)
        #expect(IQUUID("0180E5205F7E11E498030800200C9A66") == nil)
        #expect(IQUUID(bytes: [1, 2, 3]) == nil)
    }
}
