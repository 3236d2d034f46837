import CaptureKit
import Testing
@testable import Dissectors

/// ``ATTRecord/pdu``: each PDU the dissector records, read back with its parameters typed as
/// Core v6.0 Vol 3 Part F §3.4 lays them out.
@Suite("ATT PDUs")
struct ATTPDUTests {
    /// The PDU of the one record `bytes` (an ATT PDU) dissects to.
    func pdu(_ direction: HCIDirection, _ bytes: [UInt8], after earlier: [(HCIDirection, [UInt8])] = []) -> ATTPDU? {
        var dissector = FrameDissector()
        for (side, pdu) in earlier { _ = dissector.dissect(attFrame(side, pdu), .bluetoothHCIH4WithPHDR) }
        return dissector.dissect(attFrame(direction, bytes), .bluetoothHCIH4WithPHDR).att.first?.pdu
    }

    @Test func errorResponseNamesTheRequestTheHandleAndTheCode() {
        #expect(pdu(.received, [0x01, 0x12] + le16(0x0017) + [0x80])
            == .errorResponse(requestOpcodeInError: .writeRequest, attributeHandleInError: 0x0017, errorCode: ATTErrorCode(rawValue: 0x80)))
        #expect(ATTErrorCode(rawValue: 0x80).description == "Application Error 0x80")
        #expect(ATTErrorCode.attributeNotFound.description == "Attribute Not Found")
    }

    @Test func mtuExchangeGivesEachSidesReceiveMTU() {
        #expect(pdu(.sent, [0x02] + le16(517)) == .exchangeMTURequest(clientRxMTU: 517))
        #expect(pdu(.received, [0x03] + le16(247)) == .exchangeMTUResponse(serverRxMTU: 247))
    }

    @Test func writesAndNotificationsCarryHandleAndValue() {
        #expect(pdu(.sent, [0x52] + le16(0x0010) + [1, 2]) == .writeCommand(attributeHandle: 0x0010, attributeValue: [1, 2]))
        #expect(pdu(.sent, [0x12] + le16(0x0013) + [1, 0]) == .writeRequest(attributeHandle: 0x0013, attributeValue: [1, 0]))
        #expect(pdu(.received, [0x13]) == .writeResponse)
        #expect(pdu(.received, [0x1B] + le16(0x0012) + [6, 72]) == .handleValueNotification(attributeHandle: 0x0012, attributeValue: [6, 72]))
        #expect(pdu(.received, [0x1D] + le16(0x0012) + [9]) == .handleValueIndication(attributeHandle: 0x0012, attributeValue: [9]))
        #expect(pdu(.sent, [0x1E], after: [(.received, [0x1D] + le16(0x0012) + [9])]) == .handleValueConfirmation)
    }

    @Test func readsCarryTheHandleAskedAndTheValueRead() {
        #expect(pdu(.sent, [0x0A] + le16(0x0015)) == .readRequest(attributeHandle: 0x0015))
        #expect(pdu(.received, [0x0B, 1], after: [(.sent, [0x0A] + le16(0x0015))]) == .readResponse(attributeValue: [1]))
        #expect(pdu(.sent, [0x0C] + le16(0x0015) + le16(22)) == .readBlobRequest(attributeHandle: 0x0015, valueOffset: 22))
        #expect(pdu(.received, [0x0D, 7, 8]) == .readBlobResponse(partAttributeValue: [7, 8]))
    }

    @Test func preparedWritesKeepTheirValueOffset() {
        #expect(pdu(.sent, [0x16] + le16(0x0020) + le16(18) + [4, 5])
            == .prepareWriteRequest(attributeHandle: 0x0020, valueOffset: 18, partAttributeValue: [4, 5]))
        #expect(pdu(.received, [0x17] + le16(0x0020) + le16(18) + [4, 5])
            == .prepareWriteResponse(attributeHandle: 0x0020, valueOffset: 18, partAttributeValue: [4, 5]))
        #expect(pdu(.sent, [0x18, 0x01]) == .executeWriteRequest(flags: 0x01))
        #expect(pdu(.received, [0x19]) == .executeWriteResponse)
    }

    @Test func eachValueOfAMultipleHandleValueNotificationIsItsOwnPDU() {
        var dissector = FrameDissector()
        let frame = attFrame(.received, [0x23] + le16(0x0012) + le16(1) + [5] + le16(0x0014) + le16(2) + [6, 7])
        #expect(dissector.dissect(frame, .bluetoothHCIH4WithPHDR).att.map(\.pdu) == [
            .multipleHandleValueNotification(attributeHandle: 0x0012, attributeValue: [5]),
            .multipleHandleValueNotification(attributeHandle: 0x0014, attributeValue: [6, 7]),
        ])
    }

    @Test func discoveryAndUnknownOpcodesKeepTheirParameters() {
        #expect(pdu(.sent, [0x04] + le16(1) + le16(0xFFFF)) == .other(.findInformationRequest, parameters: le16(1) + le16(0xFFFF)))
        #expect(pdu(.sent, [0x99, 1, 2]) == .other(ATTOpcode(rawValue: 0x99), parameters: [1, 2]))
    }

    @Test func aRecordWithoutItsOpcodesLayoutIsOther() {
        let headless = ATTRecord(connectionHandle: 0x40, direction: .sent, opcode: .writeCommand, handle: nil, value: [1])
        #expect(headless.pdu == .other(.writeCommand, parameters: [1]))
        let shortMTU = ATTRecord(connectionHandle: 0x40, direction: .sent, opcode: .exchangeMTURequest, handle: nil, value: [0x17])
        #expect(shortMTU.pdu == .other(.exchangeMTURequest, parameters: [0x17]))
    }
}
