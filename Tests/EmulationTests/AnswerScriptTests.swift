import Emulation
import Testing

@Suite struct AnswerScriptTests {
    @Test func notificationsAttachToThePrecedingWriteWithTheirDelays() {
        let script = AnswerScript([
            pdu(1, 100, client: true, 0x12, 0x0010, [0x01]),
            pdu(2, 101, client: false, 0x13, nil),
            pdu(3, 105, client: false, 0x1B, 0x0012, [0xAA]),
            pdu(4, 130, client: false, 0x1D, 0x0014, [0xBB]),
        ])
        #expect(script.writes.count == 1)
        #expect(script.writes[0].answers == [
            RecordedAnswer(isIndication: false, handle: 0x0012, value: [0xAA], delayNs: 5_000_000, frame: 3),
            RecordedAnswer(isIndication: true, handle: 0x0014, value: [0xBB], delayNs: 30_000_000, frame: 4),
        ])
    }

    @Test func aLaterWriteTakesTheNotificationsAfterIt() {
        let script = AnswerScript([
            pdu(1, 0, client: true, 0x52, 0x0010, [0x01]),
            pdu(2, 1, client: false, 0x1B, 0x0012, [0x01]),
            pdu(3, 2, client: true, 0x52, 0x0010, [0x02]),
            pdu(4, 3, client: false, 0x1B, 0x0012, [0x02]),
        ])
        #expect(script.writes.map { $0.answers.map(\.value) } == [[[0x01]], [[0x02]]])
    }

    @Test func notificationsBeforeAnyWriteBelongToTheirConnection() {
        let script = AnswerScript([
            pdu(1, 10, client: false, 0x1B, 0x0012, [0x01], connection: 0),
            pdu(2, 20, client: false, 0x1B, 0x0012, [0x02], connection: 0),
        ])
        #expect(script.connectionAnswers[0]?.map(\.delayNs) == [0, 10_000_000])
        #expect(script.writes.isEmpty)
    }

    @Test func readsArePairedWithTheirResponsesInOrder() {
        let script = AnswerScript([
            pdu(1, 0, client: true, 0x0A, 0x0020),
            pdu(2, 1, client: false, 0x0B, nil, [0x01]),
            pdu(3, 2, client: true, 0x0A, 0x0020),
            pdu(4, 3, client: false, 0x0B, nil, [0x02]),
        ])
        #expect(script.reads[0x0020]?.map(\.value) == [[0x01], [0x02]])
    }

    @Test func aLongReadJoinsItsBlobParts() {
        let script = AnswerScript([
            pdu(1, 0, client: true, 0x0A, 0x0020),
            pdu(2, 1, client: false, 0x0B, nil, [0x01, 0x02]),
            pdu(3, 2, client: true, 0x0C, 0x0020, [0x02, 0x00]),
            pdu(4, 3, client: false, 0x0D, nil, [0x03]),
        ])
        #expect(script.reads[0x0020]?.map(\.value) == [[0x01, 0x02, 0x03]])
    }

    @Test func aRefusedWriteKeepsItsErrorCode() {
        let script = AnswerScript([
            pdu(1, 0, client: true, 0x12, 0x0010, [0x09]),
            pdu(2, 1, client: false, 0x01, 0x0010, [0x12, 0x03]),
        ])
        #expect(script.writes[0].error == 0x03)
    }

    @Test func theMTUsOfBothSidesAreKept() {
        let script = AnswerScript([
            pdu(1, 0, client: true, 0x02, nil, [0xF7, 0x00]),
            pdu(2, 1, client: false, 0x03, nil, [0xB9, 0x00]),
            pdu(3, 2, client: false, 0x02, nil, [0x00, 0x02]),
        ])
        #expect(script.serverMTU == 185)
        #expect(script.peripheralRequestedMTU == 512)
    }
}

@Suite struct RoundTripCompensationTests {
    static let pdus = [
        pdu(1, 0, client: true, 0x02, nil, [0xF7, 0x00]),
        pdu(2, 8, client: false, 0x03, nil, [0xF7, 0x00]),
        pdu(3, 100, client: true, 0x52, 0x0010, [0x01]),
        pdu(4, 130, client: false, 0x1B, 0x0012, [0x01]),
        pdu(5, 103, client: false, 0x1B, 0x0012, [0x02]),
    ]

    @Test func theShortestRequestResponseIsTheLinkRoundTrip() {
        #expect(AnswerScript(Self.pdus).linkRoundTripNs == 8_000_000)
    }

    @Test func aCaptureTakenOnTheCentralHasTheRoundTripTakenOffEachDelayNeverBelowZero() {
        let script = AnswerScript(Self.pdus, recordedAtCentral: true)
        #expect(script.writes[0].answers.map(\.delayNs) == [22_000_000, 0])
    }

    @Test func aCaptureTakenOnThePeripheralKeepsItsDelays() {
        let script = AnswerScript(Self.pdus, recordedAtCentral: false)
        #expect(script.writes[0].answers.map(\.delayNs) == [30_000_000, 3_000_000])
    }
}
