import CaptureKit
@testable import Dissectors
import Testing

/// The replay path: summaries off, whole PDUs borrowed from the frame, handle names remembered.
/// Each behaviour must be what `tether inspect`'s path (summaries on) gives, text aside.
@Suite("Replay path")
struct ReplayPathTests {
    static let service = "12345678-1234-5678-1234-56789abcdef0"
    static let characteristic = "6a4ecd28-0000-1000-8000-001234567890"

    /// A primary service with one characteristic (value handle 0x0012) and its CCCD (0x0013).
    static let discovery: [[UInt8]] = [
        attFrame(.sent, [0x10] + le16(0x0001) + le16(0xFFFF) + le16(0x2800)),
        attFrame(.received, [0x11, 20] + le16(0x0010) + le16(0x0020) + uuidLE(service)),
        attFrame(.sent, [0x08] + le16(0x0010) + le16(0x0020) + le16(0x2803)),
        attFrame(.received, [0x09, 21] + le16(0x0011) + [0x12] + le16(0x0012) + uuidLE(characteristic)),
        attFrame(.sent, [0x04] + le16(0x0013) + le16(0x0020)),
        attFrame(.received, [0x05, 0x01] + le16(0x0013) + le16(0x2902)),
    ]

    /// A session that exercises every kind of frame replay meets: a connection, discovery, whole
    /// PDUs, a PDU in two fragments, a stray continuation, a short PDU, commands and events,
    /// a disconnection.
    static let session: [[UInt8]] = {
        let long = l2cap([0x1B] + le16(0x0012) + Array(repeating: 7, count: 40))
        let connection = [0x01, 0x00] + le16(0x0040) + [0x00, 0x00] + [1, 2, 3, 4, 5, 6] + le16(24) + le16(0) + le16(72) + [0]
        return [phdr(.received, hciEvent(0x3E, connection))]
            + discovery
            + [
                attFrame(.sent, [0x52] + le16(0x0012) + [1, 2, 3]),
                attFrame(.received, [0x1B] + le16(0x0012) + [4, 5]),
                attFrame(.sent, [0x12] + le16(0x0013) + [1, 0]),
                attFrame(.received, [0x13]),
                phdr(.received, aclPacket(boundary: 0b10, Array(long[0..<20]))),
                phdr(.received, aclPacket(boundary: 0b01, Array(long[20...]))),
                phdr(.received, aclPacket(boundary: 0b01, [9, 9, 9])),
                attFrame(.received, [0x1B, 0x12]),
                phdr(.sent, hciCommand(0x0C03, [])),
                phdr(.received, hciEvent(0x13, [1] + le16(0x0040) + le16(1))),
                phdr(.received, hciEvent(0x0E, [1] + le16(0x0C03) + [0])),
                phdr(.received, hciEvent(0x05, [0] + le16(0x0040) + [0x13])),
                attFrame(.received, [0x1B] + le16(0x0012) + [6]),
            ]
    }()

    @Test("without summaries, an IP frame gives the datagram and the problem it gives with them, and no summary")
    func summariesOffLeavesIPFramesTheirDatagramAndProblem() {
        let big = udp(payload: Array(repeating: 0x41, count: 3000))
        let frames: [[UInt8]] = [
            ipv4(payload: udp(payload: Array("{\"t\":1}".utf8))),
            ipv4Fragments(of: big)[0],
            ipv4(proto: 1, payload: [8, 0, 0, 0, 0, 1, 0, 1]),
            Array(ipv4(payload: udp(payload: [1, 2, 3])).prefix(12)),
            ipv6(next: 17, payload: udp(source: 9, destination: 10, payload: [4, 5])),
        ]
        var shown = FrameDissector()
        var replayed = FrameDissector()
        replayed.producesSummaries = false
        for (index, frame) in frames.enumerated() {
            let linkType: LinkType = frame.first.map { $0 >> 4 == 6 } == true ? .ipv6 : .ipv4
            let a = shown.dissect(frame, linkType)
            let b = replayed.dissect(frame, linkType)
            #expect(!a.summary.isEmpty, "frame \(index + 1) has a summary when they are made")
            if b.problem == nil { #expect(b.summary.isEmpty, "frame \(index + 1): \(b.summary)") }
            var expected = a
            expected.summary = b.summary
            #expect(b == expected, "frame \(index + 1)")
        }
    }

    @Test("without summaries, every frame gives the records, links, directions and problems it gives with them")
    func summariesOffChangesOnlyTheSummary() {
        var shown = FrameDissector()
        var replayed = FrameDissector()
        replayed.producesSummaries = false
        for (index, frame) in Self.session.enumerated() {
            let a = shown.dissect(frame, .bluetoothHCIH4WithPHDR)
            let b = replayed.dissect(frame, .bluetoothHCIH4WithPHDR)
            if b.problem == nil { #expect(b.summary.isEmpty, "frame \(index + 1): \(b.summary)") }
            var expected = a
            expected.summary = b.summary
            #expect(b == expected, "frame \(index + 1)")
        }
    }

    @Test("a handle named before discovery is named anew once discovery tells its characteristic")
    func handleNamesFollowDiscovery() {
        var dissector = FrameDissector()
        dissector.producesSummaries = false
        let notification = attFrame(.received, [0x1B] + le16(0x0012) + [1])
        #expect(dissector.dissect(notification, .bluetoothHCIH4WithPHDR).att.first?.characteristicUUID == nil)
        for frame in Self.discovery { _ = dissector.dissect(frame, .bluetoothHCIH4WithPHDR) }
        let record = dissector.dissect(notification, .bluetoothHCIH4WithPHDR).att.first
        #expect(record?.characteristicUUID == BluetoothUUID(Self.characteristic))
        #expect(record?.serviceUUID == BluetoothUUID(Self.service))
    }

    @Test("a handle's names are forgotten with the connection's database at Disconnection Complete")
    func handleNamesForgottenAtDisconnection() {
        var dissector = FrameDissector()
        for frame in Self.discovery { _ = dissector.dissect(frame, .bluetoothHCIH4WithPHDR) }
        let notification = attFrame(.received, [0x1B] + le16(0x0012) + [1])
        #expect(dissector.dissect(notification, .bluetoothHCIH4WithPHDR).att.first?.characteristicUUID == BluetoothUUID(Self.characteristic))
        _ = dissector.dissect(phdr(.received, hciEvent(0x05, [0] + le16(0x0040) + [0x13])), .bluetoothHCIH4WithPHDR)
        #expect(dissector.dissect(notification, .bluetoothHCIH4WithPHDR).att.first?.characteristicUUID == nil)
    }

    @Test("a start fragment holding a whole PDU is borrowed: no copy, nothing held")
    func wholePDUBorrowed() {
        var reassembler = ACLReassembler()
        let pdu = l2cap([0x52] + le16(0x0012) + [1, 2, 3])
        let header = HCIACLHeader(handle: 0x0040, packetBoundary: 0b10, broadcast: 0, dataLength: pdu.count)
        let key = ACLReassembler.Key(connection: .init(adapter: 0, handle: 0x0040), direction: .sent)
        let outcome = pdu.withUnsafeBytes { reassembler.add(header, data: $0, key: key, dataOffset: 9, borrowingWholePDU: true) }
        #expect(outcome.pduIsFragment)
        #expect(outcome.pdu == nil)
        #expect(outcome.problem == nil)
        #expect(reassembler.inProgressCount == 0)
    }

    @Test("a borrowed whole PDU still drops, and reports, the unfinished PDU before it")
    func wholePDUBorrowedAfterUnfinished() {
        var reassembler = ACLReassembler()
        let key = ACLReassembler.Key(connection: .init(adapter: 0, handle: 0x0040), direction: .sent)
        let start = le16(40) + le16(4) + [0x52]
        let startHeader = HCIACLHeader(handle: 0x0040, packetBoundary: 0b10, broadcast: 0, dataLength: start.count)
        _ = start.withUnsafeBytes { reassembler.add(startHeader, data: $0, key: key, dataOffset: 9, borrowingWholePDU: true) }
        #expect(reassembler.inProgressCount == 1)
        let pdu = l2cap([0x52] + le16(0x0012) + [1])
        let header = HCIACLHeader(handle: 0x0040, packetBoundary: 0b10, broadcast: 0, dataLength: pdu.count)
        let outcome = pdu.withUnsafeBytes { reassembler.add(header, data: $0, key: key, dataOffset: 9, borrowingWholePDU: true) }
        #expect(outcome.pduIsFragment)
        #expect(outcome.problem?.description.contains("unfinished PDU (5 of 44 bytes) was dropped") == true)
        #expect(reassembler.inProgressCount == 0)
    }

    @Test("without borrowing, a whole PDU is returned as a copy, as before")
    func wholePDUCopiedWhenNotBorrowing() {
        var reassembler = ACLReassembler()
        let pdu = l2cap([0x52] + le16(0x0012) + [1, 2, 3])
        let header = HCIACLHeader(handle: 0x0040, packetBoundary: 0b10, broadcast: 0, dataLength: pdu.count)
        let key = ACLReassembler.Key(connection: .init(adapter: 0, handle: 0x0040), direction: .sent)
        let outcome = pdu.withUnsafeBytes { reassembler.add(header, data: $0, key: key, dataOffset: 9) }
        #expect(!outcome.pduIsFragment)
        #expect(outcome.pdu == pdu)
    }
}
