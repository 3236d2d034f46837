import Dissectors
import Emulation
import SessionCore
import Testing

/// The emulated watch answers a live phone's HELLO with the recorded WELCOME echoing the live nonce
/// (docs/emulate.md), at a large ATT MTU (one frame each) and at 23 (both in pieces).
@Suite struct SessionLinkHandshakeTests {
    static let database = EmulatedDatabase(services: [
        .init(startHandle: 0x000E, endHandle: 0xFFFF, uuid: BluetoothUUID("54450001-5345-5353-494f-4e4c494e4b01")!, isPrimary: true, characteristics: [
            .init(declarationHandle: 0x000F, valueHandle: 0x0010, properties: 0x0C, uuid: BluetoothUUID("54450002-5345-5353-494f-4e4c494e4b01")!, descriptors: []),
            .init(declarationHandle: 0x0011, valueHandle: 0x0012, properties: 0x10, uuid: BluetoothUUID("54450003-5345-5353-494f-4e4c494e4b01")!,
                  descriptors: [.init(handle: 0x0013, uuid: .clientCharacteristicConfiguration)]),
        ]),
    ], notes: [])
    static let phone = SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!
    static let watch = SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1")!

    static func hello(incarnation: UInt32, epoch: UInt32, nonce: UInt32) -> SessionControl {
        .hello(SessionHandshake(identity: phone, incarnation: incarnation, epoch: epoch, nonce: nonce, status: [.paired, .appInstalled],
                                window: 64, compactFrames: true))
    }

    static func welcome(nonce: UInt32) -> SessionControl {
        .welcome(SessionHandshake(identity: watch, incarnation: 3, epoch: 4, nonce: nonce, status: [.paired, .appInstalled],
                                  fileResumeID: 1, fileResumeOffset: 4_618, window: 64, compactFrames: true))
    }

    /// A control item's frames at `frameLength` (ATT MTU − 3).
    static func frames(_ item: SessionControl, id: UInt32, frameLength: Int) -> [[UInt8]] {
        SessionFrame.fragment(channel: .control, id: id, payload: item.encode(), maxFrameLength: frameLength).map { $0.encode() }
    }

    /// A recording: the phone's HELLO (its pieces written one by one), the watch's WELCOME after the last.
    static func emulator(frameLength: Int) -> Emulator {
        var pdus: [RecordedPDU] = []
        var frame = 1
        for piece in frames(hello(incarnation: 1, epoch: 2, nonce: 7), id: 1, frameLength: frameLength) {
            pdus.append(pdu(frame, Int64(frame), client: true, 0x52, 0x0010, piece))
            frame += 1
        }
        for piece in frames(welcome(nonce: 7), id: 1, frameLength: frameLength) {
            pdus.append(pdu(frame, Int64(frame), client: false, 0x1B, 0x0012, piece))
            frame += 1
        }
        let link = SessionLinkHandshake(database: database)
        #expect(link != nil)
        return Emulator(script: AnswerScript(pdus), database: database, sessionLink: link)
    }

    /// The live phone's HELLO (other random fields, nonce 0x0BADCAFE) written piece by piece; the
    /// WELCOME the emulator sends back, reassembled.
    static func handshake(frameLength: Int) throws -> (welcome: SessionControl, emulator: Emulator) {
        var emulator = emulator(frameLength: frameLength)
        var answers: [[UInt8]] = []
        for piece in frames(hello(incarnation: 91, epoch: 92, nonce: 0x0BAD_CAFE), id: 1, frameLength: frameLength) {
            let outcome = emulator.write(handle: 0x0010, value: piece)
            #expect(outcome.source == .responder)
            answers += outcome.answers.map(\.value)
        }
        var payload: [UInt8] = []
        for bytes in answers {
            let frame = try SessionFrame.decode(bytes)
            #expect(frame.channel == .control)
            payload += frame.bytes
        }
        return (try SessionControl.decode(payload), emulator)
    }

    @Test func aWholeHelloGetsTheRecordedWelcomeWithTheLiveNonce() throws {
        let (welcome, emulator) = try Self.handshake(frameLength: 244)
        #expect(welcome == Self.welcome(nonce: 0x0BAD_CAFE))
        #expect(emulator.tally.byResponder == 1 && emulator.tally.matchedByPosition == 0)
    }

    @Test func aHelloInPiecesAtMTU23GetsTheRecordedWelcomeInPiecesWithTheLiveNonce() throws {
        let pieces = Self.frames(Self.hello(incarnation: 1, epoch: 2, nonce: 7), id: 1, frameLength: 20).count
        #expect(pieces > 3)
        let (welcome, emulator) = try Self.handshake(frameLength: 20)
        #expect(welcome == Self.welcome(nonce: 0x0BAD_CAFE))
        #expect(emulator.tally.byResponder == pieces && emulator.tally.matchedByPosition == 0 && emulator.tally.unanswered == 0)
    }

    @Test func aPieceIsMatchedWithoutTheRandomFieldsItCarries() {
        let link = SessionLinkHandshake(database: Self.database)!
        let recorded = Self.frames(Self.hello(incarnation: 1, epoch: 2, nonce: 7), id: 1, frameLength: 20)
        let live = Self.frames(Self.hello(incarnation: 0xFFFF_FFFF, epoch: 0xFFFF_FFFF, nonce: 0xFFFF_FFFF), id: 1, frameLength: 20)
        #expect(recorded.map { link.matchKey(handle: 0x0010, value: $0) } == live.map { link.matchKey(handle: 0x0010, value: $0) })
        // Only the pieces that carry random fields differ before keying; other writes are kept as they are.
        #expect(zip(recorded, live).filter { $0 != $1 }.count == 2)
        let data = SessionFrame(channel: .userInfo, flags: [.first, .last], id: 1, totalOrOffset: 40, bytes: Array(repeating: 0xAA, count: 40)).encode()
        #expect(link.matchKey(handle: 0x0010, value: data) == data)
    }
}
