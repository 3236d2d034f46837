import Emulation
import Testing

@Suite struct EmulatorTests {
    /// A database with one characteristic at 0x0010 notifying at 0x0012 with its CCCD at 0x0013.
    static let database = EmulatedDatabase(services: [
        .init(startHandle: 0x000E, endHandle: 0xFFFF, uuid: .init(0x180D), isPrimary: true, characteristics: [
            .init(declarationHandle: 0x000F, valueHandle: 0x0010, properties: 0x08, uuid: .init(0x2A39), descriptors: []),
            .init(declarationHandle: 0x0011, valueHandle: 0x0012, properties: 0x10, uuid: .init(0x2A37),
                  descriptors: [.init(handle: 0x0013, uuid: .clientCharacteristicConfiguration)]),
        ]),
    ], notes: [])

    static func emulator(_ pdus: [RecordedPDU], policy: UnknownRequestPolicy = .ignore, reset: Bool = false) -> Emulator {
        Emulator(script: AnswerScript(pdus), database: database, policy: policy, resetPerConnection: reset)
    }

    /// The same command written twice, answered `first` then `second`.
    static let repeatedCommand = [
        pdu(1, 0, client: true, 0x12, 0x0010, [0x02]),
        pdu(2, 1, client: false, 0x1B, 0x0012, Array("first".utf8)),
        pdu(3, 10, client: true, 0x12, 0x0010, [0x02]),
        pdu(4, 11, client: false, 0x1B, 0x0012, Array("second".utf8)),
    ]

    @Test func theSameWriteIsAnsweredAsEachOccurrenceWas() {
        var emulator = Self.emulator(Self.repeatedCommand)
        let first = emulator.write(handle: 0x0010, value: [0x02])
        let second = emulator.write(handle: 0x0010, value: [0x02])
        #expect(first.answers.map(\.value) == [Array("first".utf8)])
        #expect(second.answers.map(\.value) == [Array("second".utf8)])
        #expect(emulator.tally.fromCapture == 2)
    }

    @Test func otherBytesFallBackToTheWriteAtTheSamePosition() {
        var emulator = Self.emulator(Self.repeatedCommand)
        let outcome = emulator.write(handle: 0x0010, value: [0x07])
        #expect(outcome.source == .capture)
        #expect(outcome.answers.map(\.value) == [Array("first".utf8)])
        #expect(emulator.tally.matchedByPosition == 1)
    }

    @Test func aBurstIsPlayedWhole() {
        var pdus = [pdu(1, 0, client: true, 0x12, 0x0010, [0x01, 0x78])]
        for i in 0..<120 { pdus.append(pdu(2 + i, Int64(i), client: false, 0x1B, 0x0012, [UInt8(i)])) }
        var emulator = Self.emulator(pdus)
        let outcome = emulator.write(handle: 0x0010, value: [0x01, 0x78])
        #expect(outcome.answers.count == 120)
        #expect(outcome.answers.map(\.value) == (0..<120).map { [UInt8($0)] })
    }

    @Test func aWriteBeyondTheCaptureIsIgnoredByDefault() {
        var emulator = Self.emulator(Self.repeatedCommand)
        let outcome = emulator.write(handle: 0x0020, value: [0x01])
        #expect(outcome.reply == .accept)
        #expect(outcome.source == .unanswered)
        #expect(!outcome.endsEmulation)
        #expect(emulator.tally.unanswered == 1)
    }

    @Test func attErrorPolicyRefusesAnUnknownWrite() {
        var emulator = Self.emulator(Self.repeatedCommand, policy: .attError)
        let outcome = emulator.write(handle: 0x0020, value: [0x01])
        #expect(outcome.reply == .error(0x0E))
        #expect(!outcome.endsEmulation)
    }

    @Test func endPolicyEndsTheEmulation() {
        var emulator = Self.emulator(Self.repeatedCommand, policy: .end)
        let outcome = emulator.read(handle: 0x0020)
        #expect(outcome.reply == .error(0x0E))
        #expect(outcome.endsEmulation)
    }

    @Test func readsGiveTheRecordedValuesInOrderThenTheLastAgain() {
        var emulator = Self.emulator([
            pdu(1, 0, client: true, 0x0A, 0x0010), pdu(2, 1, client: false, 0x0B, nil, [0x01]),
            pdu(3, 2, client: true, 0x0A, 0x0010), pdu(4, 3, client: false, 0x0B, nil, [0x02]),
        ])
        let values = (0..<3).map { _ in emulator.read(handle: 0x0010).reply }
        #expect(values == [.value([0x01]), .value([0x02]), .value([0x02])])
    }

    @Test func aRecordedReadErrorIsPlayedBack() {
        var emulator = Self.emulator([
            pdu(1, 0, client: true, 0x0A, 0x0010), pdu(2, 1, client: false, 0x01, 0x0010, [0x0A, 0x05]),
        ])
        #expect(emulator.read(handle: 0x0010).reply == .error(0x05))
    }

    @Test func anUnrecordedCCCDWriteIsAcceptedByTheResponderAndReadBack() {
        var emulator = Self.emulator([])
        let write = emulator.write(handle: 0x0013, value: [0x01, 0x00])
        let read = emulator.read(handle: 0x0013)
        #expect(write.source == .responder)
        #expect(read.reply == .value([0x01, 0x00]))
        #expect(emulator.tally.byResponder == 2)
    }

    @Test func theCursorRunsOnAcrossConnections() {
        var emulator = Self.emulator(Self.repeatedCommand)
        _ = emulator.connect()
        _ = emulator.write(handle: 0x0010, value: [0x02])
        _ = emulator.connect()
        #expect(emulator.write(handle: 0x0010, value: [0x02]).answers.map(\.value) == [Array("second".utf8)])
    }

    @Test func resetPerConnectionStartsEachConnectionAgain() {
        var emulator = Self.emulator(Self.repeatedCommand, reset: true)
        _ = emulator.connect()
        _ = emulator.write(handle: 0x0010, value: [0x02])
        _ = emulator.connect()
        #expect(emulator.write(handle: 0x0010, value: [0x02]).answers.map(\.value) == [Array("first".utf8)])
    }

    @Test func eachConnectionGetsItsRecordedOpeningNotifications() {
        var emulator = Self.emulator([
            pdu(1, 0, client: false, 0x1B, 0x0012, [0x01], connection: 0),
            pdu(2, 50, client: false, 0x1B, 0x0012, [0x02], connection: 1),
        ])
        #expect(emulator.connect().map(\.value) == [[0x01]])
        #expect(emulator.connect().map(\.value) == [[0x02]])
        #expect(emulator.connect().isEmpty)
    }
}
