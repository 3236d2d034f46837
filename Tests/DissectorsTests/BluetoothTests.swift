import CaptureKit
import Testing
@testable import Dissectors

@Suite("HCI")
struct HCITests {
    @Test("a command is named from its opcode")
    func commandName() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.sent, hciCommand(0x200C, [1, 0])), .bluetoothHCIH4WithPHDR)
        #expect(result.summary == "HCI Command LE Set Scan Enable")
        #expect(result.direction == .sent)
    }

    @Test("an unnamed command shows OGF and OCF")
    func unnamedCommand() {
        var dissector = FrameDissector()
        #expect(dissector.dissect(phdr(.sent, hciCommand(0xFC01, [])), .bluetoothHCIH4WithPHDR).summary
            == "HCI Command 0xfc01 (OGF 0x3f, OCF 0x001)")
    }

    @Test("an LE Meta event names its subevent")
    func leMetaSubevent() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, hciEvent(0x3E, [0x01] + Array(repeating: 0, count: 18))), .bluetoothHCIH4WithPHDR)
        #expect(result.summary == "HCI Event LE Meta (LE Connection Complete) handle 0x0000 peer 00:00:00:00:00:00")
        #expect(result.direction == .received)
    }

    @Test("LE Connection Complete reports the link's handle and peer, most significant byte first")
    func connectionCompleteLinkChange() {
        var dissector = FrameDissector()
        // status 0, handle 0x0041, role 0 (central), peer address type 1, peer F5:F4:F3:F2:F1:F0 sent little-endian.
        let parameters: [UInt8] = [0x01, 0x00, 0x41, 0x00, 0x00, 0x01, 0xF0, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5] + Array(repeating: 0, count: 7)
        let result = dissector.dissect(phdr(.received, hciEvent(0x3E, parameters)), .bluetoothHCIH4WithPHDR)
        #expect(result.linkChange == .connected(connectionHandle: 0x41, peerAddress: "F5:F4:F3:F2:F1:F0", role: 0))
    }

    @Test("a failed LE Connection Complete opens no link")
    func failedConnectionCompleteOpensNoLink() {
        var dissector = FrameDissector()
        let parameters: [UInt8] = [0x01, 0x02] + Array(repeating: 0, count: 17)
        let result = dissector.dissect(phdr(.received, hciEvent(0x3E, parameters)), .bluetoothHCIH4WithPHDR)
        #expect(result.linkChange == nil)
        #expect(result.summary.hasSuffix("status 0x02"))
    }

    @Test("Disconnection Complete reports the closed link")
    func disconnectionCompleteLinkChange() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, hciEvent(0x05, [0x00, 0x41, 0x00, 0x13])), .bluetoothHCIH4WithPHDR)
        #expect(result.linkChange == .disconnected(connectionHandle: 0x41, reason: 0x13))
    }

    @Test("an LE Enhanced Connection Complete subevent is named")
    func enhancedConnectionComplete() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, hciEvent(0x3E, [0x0A] + Array(repeating: 0, count: 30))), .bluetoothHCIH4WithPHDR)
        #expect(result.summary == "HCI Event LE Meta (LE Enhanced Connection Complete) handle 0x0000 peer 00:00:00:00:00:00")
    }

    @Test("Command Complete names the command it completes")
    func commandComplete() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, hciEvent(0x0E, [1] + le16(0x0C03) + [0])), .bluetoothHCIH4WithPHDR)
        #expect(result.summary == "HCI Event Command Complete (Reset)")
    }

    @Test("Command Status names the command and a failing status")
    func commandStatus() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, hciEvent(0x0F, [0x0C, 1] + le16(0x200D))), .bluetoothHCIH4WithPHDR)
        #expect(result.summary == "HCI Event Command Status (LE Create Connection) status 0x0c")
    }

    @Test("Number Of Completed Packets is named")
    func numberOfCompletedPackets() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, hciEvent(0x13, [1] + le16(0x40) + le16(1))), .bluetoothHCIH4WithPHDR)
        #expect(result.summary == "HCI Event Number Of Completed Packets")
    }

    @Test("an event whose length runs past the frame is a problem")
    func truncatedEvent() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, [0x04, 0x0E, 10, 1]), .bluetoothHCIH4WithPHDR)
        #expect(result.problemDescription?.hasPrefix("HCI Event: at frame offset 7: expected 10 bytes") == true)
    }

    @Test("an unknown H4 packet type is a problem")
    func unknownH4Type() {
        var dissector = FrameDissector()
        #expect(dissector.dissect(phdr(.sent, [0x09, 1, 2]), .bluetoothHCIH4WithPHDR).problemDescription?.contains("packet type") == true)
    }

    @Test("bare H4 has no direction unless epb_flags give one")
    func bareH4Direction() {
        var dissector = FrameDissector()
        #expect(dissector.dissect(hciCommand(0x0C03, []), .bluetoothHCIH4).direction == .unknown)
        #expect(dissector.dissect(hciEvent(0x13, [0]), .bluetoothHCIH4, flags: 1).direction == .received)
    }

    @Test("SCO and ISO packets are summarised")
    func scoAndISO() {
        var dissector = FrameDissector()
        #expect(dissector.dissect(phdr(.sent, [0x03] + le16(0x0001) + [2, 9, 9]), .bluetoothHCIH4WithPHDR).summary == "HCI SCO handle 0x0001 2 bytes")
        #expect(dissector.dissect(phdr(.sent, [0x05] + le16(0x0060) + le16(3) + [1, 2, 3]), .bluetoothHCIH4WithPHDR).summary == "HCI ISO handle 0x0060 3 bytes")
    }
}

@Suite("BlueZ monitor link type")
struct MonitorTests {
    @Test("an ACL rx record is dissected down to ATT, received")
    func aclThroughMonitor() {
        var dissector = FrameDissector()
        let frame = be16(0) + be16(5) + Array(aclPacket(l2cap([0x1B] + le16(0x0010) + [7])).dropFirst())
        let result = dissector.dissect(frame, .bluetoothLinuxMonitor)
        #expect(result.direction == .received)
        #expect(result.att.first?.handle == 0x0010)
        #expect(result.att.first?.value == [7])
    }

    @Test("a command record has no H4 type byte")
    func commandThroughMonitor() {
        var dissector = FrameDissector()
        let frame = be16(0) + be16(2) + le16(0x0C03) + [0]
        #expect(dissector.dissect(frame, .bluetoothLinuxMonitor).summary == "HCI Command Reset")
    }

    @Test("a user logging record becomes a note")
    func userLogging() {
        var dissector = FrameDissector()
        let ident = Array("tether".utf8) + [0]
        let frame = be16(0) + be16(13) + [6, UInt8(ident.count)] + ident + Array("step 3 begins".utf8) + [0]
        let result = dissector.dissect(frame, .bluetoothLinuxMonitor)
        #expect(result.note == "step 3 begins")
        #expect(result.summary == "Monitor User Logging tether <6>: step 3 begins")
    }

    @Test("a system note becomes a note")
    func systemNote() {
        var dissector = FrameDissector()
        let result = dissector.dissect(be16(0) + be16(12) + Array("Bluetooth daemon 5.72".utf8) + [0], .bluetoothLinuxMonitor)
        #expect(result.note == "Bluetooth daemon 5.72")
    }

    @Test("a new index record names the controller")
    func newIndex() {
        var dissector = FrameDissector()
        let frame = be16(1) + be16(0) + [0, 1] + [0x66, 0x55, 0x44, 0x33, 0x22, 0x11] + Array("hci1".utf8) + [0, 0, 0, 0]
        #expect(dissector.dissect(frame, .bluetoothLinuxMonitor).summary == "Monitor New Index hci1: hci1 11:22:33:44:55:66 type 0 bus USB")
    }
}

@Suite("ACL reassembly")
struct ACLReassemblyTests {
    /// A notification with a 40-byte value: L2CAP PDU of 47 bytes.
    let pdu = l2cap([0x1B] + le16(0x0010) + Array(repeating: 0xEE, count: 40))

    @Test("three fragments make one PDU, and its ATT record belongs to the completing frame")
    func threeFragments() {
        var dissector = FrameDissector()
        let first = dissector.dissect(phdr(.received, aclPacket(boundary: 0b10, Array(pdu[0..<20]))), .bluetoothHCIH4WithPHDR)
        let second = dissector.dissect(phdr(.received, aclPacket(boundary: 0b01, Array(pdu[20..<40]))), .bluetoothHCIH4WithPHDR)
        let third = dissector.dissect(phdr(.received, aclPacket(boundary: 0b01, Array(pdu[40...]))), .bluetoothHCIH4WithPHDR)
        #expect(first.summary == "ACL fragment handle 0x0040 (20 of 47 bytes)")
        #expect(second.summary == "ACL fragment handle 0x0040 (40 of 47 bytes)")
        #expect(first.att.isEmpty && second.att.isEmpty)
        #expect(third.att == [ATTRecord(connectionHandle: 0x0040, direction: .received, opcode: .handleValueNotification, handle: 0x0010, value: Array(repeating: 0xEE, count: 40))])
        #expect(third.problem == nil)
    }

    @Test("fragments of two handles interleave without mixing")
    func interleavedHandles() {
        var dissector = FrameDissector()
        let other = l2cap([0x52] + le16(0x0020) + Array(repeating: 0x11, count: 30))
        var records: [ATTRecord] = []
        let sequence: [[UInt8]] = [
            aclPacket(handle: 0x0040, boundary: 0b10, Array(pdu[0..<25])),
            aclPacket(handle: 0x0041, boundary: 0b10, Array(other[0..<10])),
            aclPacket(handle: 0x0041, boundary: 0b01, Array(other[10...])),
            aclPacket(handle: 0x0040, boundary: 0b01, Array(pdu[25...])),
        ]
        for packet in sequence {
            records += dissector.dissect(phdr(.sent, packet), .bluetoothHCIH4WithPHDR).att
        }
        #expect(records.map(\.connectionHandle) == [0x0041, 0x0040])
        #expect(records.map(\.handle) == [0x0020, 0x0010])
        #expect(records.map(\.value.count) == [30, 40])
    }

    @Test("the two directions of one handle reassemble separately")
    func directionsSeparate() {
        var dissector = FrameDissector()
        _ = dissector.dissect(phdr(.sent, aclPacket(boundary: 0b10, Array(pdu[0..<20]))), .bluetoothHCIH4WithPHDR)
        let whole = dissector.dissect(phdr(.received, aclPacket(l2cap([0x1B] + le16(0x0011) + [1]))), .bluetoothHCIH4WithPHDR)
        let rest = dissector.dissect(phdr(.sent, aclPacket(boundary: 0b01, Array(pdu[20...]))), .bluetoothHCIH4WithPHDR)
        #expect(whole.att.first?.handle == 0x0011)
        #expect(rest.att.first?.handle == 0x0010)
    }

    @Test("a continuation without a start is a problem, not a crash")
    func continuationWithoutStart() {
        var dissector = FrameDissector()
        let result = dissector.dissect(phdr(.received, aclPacket(boundary: 0b01, [1, 2, 3])), .bluetoothHCIH4WithPHDR)
        #expect(result.att.isEmpty)
        #expect(result.problemDescription?.contains("continuation fragment") == true)
    }

    @Test("fragments longer than the L2CAP length are a problem")
    func overlongPDU() {
        var dissector = FrameDissector()
        _ = dissector.dissect(phdr(.received, aclPacket(boundary: 0b10, le16(4) + le16(4) + [0x1B])), .bluetoothHCIH4WithPHDR)
        let result = dissector.dissect(phdr(.received, aclPacket(boundary: 0b01, [1, 2, 3, 4, 5, 6])), .bluetoothHCIH4WithPHDR)
        #expect(result.att.isEmpty)
        #expect(result.problemDescription?.contains("8 bytes in the L2CAP PDU") == true)
    }

    @Test("Disconnection Complete drops a PDU in progress")
    func disconnectionDropsState() {
        var dissector = FrameDissector()
        _ = dissector.dissect(phdr(.received, aclPacket(boundary: 0b10, Array(pdu[0..<20]))), .bluetoothHCIH4WithPHDR)
        let event = dissector.dissect(phdr(.received, hciEvent(0x05, [0] + le16(0x0040) + [0x13])), .bluetoothHCIH4WithPHDR)
        #expect(event.summary == "HCI Event Disconnection Complete handle 0x0040 reason 0x13")
        let late = dissector.dissect(phdr(.received, aclPacket(boundary: 0b01, Array(pdu[20...]))), .bluetoothHCIH4WithPHDR)
        #expect(late.problemDescription?.contains("continuation fragment") == true)
    }

    @Test("in-progress PDUs are bounded; the oldest is dropped")
    func boundedInProgress() {
        var reassembler = ACLReassembler(maxInProgress: 4)
        let start: [UInt8] = le16(100) + le16(4)
        for handle in UInt16(0)..<10 {
            let header = HCIACLHeader(handle: handle, packetBoundary: 0b10, broadcast: 0, dataLength: start.count)
            _ = start.withUnsafeBytes {
                reassembler.add(header, data: $0, key: .init(connection: .init(adapter: 0, handle: handle), direction: .sent), dataOffset: 0)
            }
        }
        #expect(reassembler.inProgressCount == 4)
    }
}

@Suite("ACL restarts")
struct ACLRestartTests {
    @Test("a start while a PDU is in progress reports the dropped PDU and keeps the new one")
    func startDuringPDU() {
        var dissector = FrameDissector()
        let long = l2cap([0x1B] + le16(0x0010) + Array(repeating: 1, count: 40))
        _ = dissector.dissect(phdr(.received, aclPacket(boundary: 0b10, Array(long[0..<20]))), .bluetoothHCIH4WithPHDR)
        let result = dissector.dissect(attFrame(.received, [0x1B] + le16(0x0011) + [2]), .bluetoothHCIH4WithPHDR)
        #expect(result.att.first?.handle == 0x0011)
        #expect(result.problemDescription?.contains("unfinished PDU (20 of 47 bytes) was dropped") == true)
    }

    @Test("a dropped PDU comes before the problem of the frame that dropped it, each its own value")
    func droppedPDUThenTheFramesOwnProblem() {
        var dissector = FrameDissector()
        let long = l2cap([0x1B] + le16(0x0010) + Array(repeating: 1, count: 40))
        _ = dissector.dissect(phdr(.received, aclPacket(boundary: 0b10, Array(long[0..<20]))), .bluetoothHCIH4WithPHDR)
        // A new start whose notification is too short for its handle.
        let result = dissector.dissect(attFrame(.received, [0x1B, 0x10]), .bluetoothHCIH4WithPHDR)
        #expect(result.problems.count == 2)
        #expect(result.problems.first?.layer == "ACL")
        #expect(result.problems.last == DissectionProblem(
            layer: "ATT", offset: 13, expected: "3 bytes of Handle Value Notification (handle)", found: "only 2 bytes left"))
        #expect(result.problemDescription == result.problems.map(\.description).joined(separator: "; "))
    }
}
