import MonkeyC
@testable import SessionCore
import Testing

/// One test vector of docs/session-link.md: its frames as printed there, and the item they carry.
struct LinkVector: Sendable, CustomTestStringConvertible {
    let name: String
    let frames: [String]
    let channel: SessionChannel
    let flags: SessionFrameFlags
    let id: UInt32
    let item: SessionItem
    /// The frames as decoded, field by field (checked against the encoder too).
    let decoded: [SessionFrame]

    var testDescription: String { name }
    var bytes: [[UInt8]] { frames.map(hex) }
}

let helloHandshake = SessionHandshake(
    identity: phoneID, incarnation: 0x1122_3344, epoch: 0x5566_7788, nonce: 0x0BAD_CAFE,
    status: [.paired, .appInstalled, .reachable, .activated])
let welcomeHandshake = SessionHandshake(
    identity: watchID, incarnation: 0x99AA_BBCC, epoch: 0x0102_0304, nonce: 0x0BAD_CAFE,
    status: [.paired, .appInstalled, .reachable, .activated],
    watermarks: SessionWatermarks(applicationContext: 0, userInfo: 3, complicationUserInfo: 0, file: 1),
    fileResumeID: 2, fileResumeOffset: 40)
var windowHelloHandshake: SessionHandshake {
    var handshake = helloHandshake
    handshake.window = 64
    return handshake
}
let contextValue: MonkeyCValue = ["a": "b", "b": [1, 2]]
let contextBytes = hex("abcdabcd000000080002610000026200da7ada7a000000230b00000002030000000003000000040300000004050000000201000000010100000002")
let heartRate: MonkeyCValue = ["hr": 72]
let heartRateBytes = hex("abcdabcd000000050003687200 da7ada7a0000000f0b0000000103000000000100000048")
let alphabet = Array("abcdefghijklmnopqrstuvwxyz".utf8)

/// The vectors exactly as docs/session-link.md prints them.
let linkVectors: [LinkVector] = [
    LinkVector(
        name: "HELLO",
        frames: ["00 03 01000000 37000000 01 01 0ff1ce00000040008000000000000001 44332211 88776655 feca ad0b 1b 00000000 00000000 00000000 00000000 00000000 00000000"],
        channel: .control, flags: [.first, .last], id: 1, item: .control(.hello(helloHandshake)),
        decoded: [SessionFrame(channel: .control, flags: [.first, .last], id: 1, totalOrOffset: 55, bytes: SessionControl.hello(helloHandshake).encode())]),
    LinkVector(
        name: "WELCOME",
        frames: ["00 03 01000000 37000000 02 01 0ff1ce000000400080000000000000a1 ccbbaa99 04030201 fecaad0b 1b 00000000 03000000 00000000 01000000 02000000 28000000"],
        channel: .control, flags: [.first, .last], id: 1, item: .control(.welcome(welcomeHandshake)),
        decoded: [SessionFrame(channel: .control, flags: [.first, .last], id: 1, totalOrOffset: 55, bytes: SessionControl.welcome(welcomeHandshake).encode())]),
    LinkVector(
        name: "context",
        frames: ["01 07 01000000 3b000000 " + hexString(contextBytes)],
        channel: .applicationContext, flags: [.first, .last, .needsAck], id: 1, item: .applicationContext(contextValue),
        decoded: [SessionFrame(channel: .applicationContext, flags: [.first, .last, .needsAck], id: 1, totalOrOffset: 59, bytes: contextBytes)]),
    LinkVector(
        name: "fragmented message",
        frames: [
            "02 11 01000000 24000000 abcdabcd000000050003",
            "02 10 01000000 0a000000 687200da7ada7a000000",
            "02 10 01000000 14000000 0f0b0000000103000000",
            "02 16 01000000 1e000000 000100000048",
        ],
        channel: .message, flags: [.first, .expectsReply], id: 1, item: .message(heartRate),
        decoded: [
            SessionFrame(channel: .message, flags: [.first, .expectsReply], id: 1, totalOrOffset: 36, bytes: Array(heartRateBytes[0..<10])),
            SessionFrame(channel: .message, flags: [.expectsReply], id: 1, totalOrOffset: 10, bytes: Array(heartRateBytes[10..<20])),
            SessionFrame(channel: .message, flags: [.expectsReply], id: 1, totalOrOffset: 20, bytes: Array(heartRateBytes[20..<30])),
            SessionFrame(channel: .message, flags: [.last, .needsAck, .expectsReply], id: 1, totalOrOffset: 30, bytes: Array(heartRateBytes[30..<36])),
        ]),
    LinkVector(
        name: "ACK",
        frames: ["00 03 02000000 0a000000 03 02 01000000 ffffffff"],
        channel: .control, flags: [.first, .last], id: 2, item: .control(.ack(channel: .message, id: 1, received: SessionLink.complete)),
        decoded: [SessionFrame(channel: .control, flags: [.first, .last], id: 2, totalOrOffset: 10, bytes: hex("03 02 01000000 ffffffff"))]),
    LinkVector(
        name: "ERROR",
        frames: ["00 03 03000000 08000000 04 02 01000000 631b"],
        channel: .control, flags: [.first, .last], id: 3, item: .control(.error(channel: .message, id: 1, code: 7011)),
        decoded: [SessionFrame(channel: .control, flags: [.first, .last], id: 3, totalOrOffset: 8, bytes: hex("04 02 01000000 631b"))]),
    LinkVector(
        name: "file metadata",
        frames: ["07 07 01000000 04000000 1a000000"],
        channel: .fileMetadata, flags: [.first, .last, .needsAck], id: 1, item: .fileMetadata(size: 26, metadata: nil),
        decoded: [SessionFrame(channel: .fileMetadata, flags: [.first, .last, .needsAck], id: 1, totalOrOffset: 4, bytes: hex("1a000000"))]),
    LinkVector(
        name: "file chunks",
        frames: [
            "08 01 01000000 1a000000 6162636465666768696a",
            "08 00 01000000 0a000000 6b6c6d6e6f7071727374",
            "08 06 01000000 14000000 75767778797a",
        ],
        channel: .fileChunk, flags: [.first], id: 1, item: .fileChunk(alphabet),
        decoded: [
            SessionFrame(channel: .fileChunk, flags: [.first], id: 1, totalOrOffset: 26, bytes: Array(alphabet[0..<10])),
            SessionFrame(channel: .fileChunk, flags: [], id: 1, totalOrOffset: 10, bytes: Array(alphabet[10..<20])),
            SessionFrame(channel: .fileChunk, flags: [.last, .needsAck], id: 1, totalOrOffset: 20, bytes: Array(alphabet[20..<26])),
        ]),
    LinkVector(
        name: "HELLO with a window",
        frames: ["00 03 01000000 3b000000 01 01 0ff1ce00000040008000000000000001 44332211 88776655 fecaad0b 1b 00000000 00000000 00000000 00000000 00000000 00000000 01 02 4000"],
        channel: .control, flags: [.first, .last], id: 1, item: .control(.hello(windowHelloHandshake)),
        decoded: [SessionFrame(channel: .control, flags: [.first, .last], id: 1, totalOrOffset: 59, bytes: SessionControl.hello(windowHelloHandshake).encode())]),
]

@Suite struct VectorTests {
    @Test(arguments: linkVectors)
    func vectorFramesDecodeToTheirFields(_ vector: LinkVector) throws {
        #expect(try vector.bytes.map { try SessionFrame.decode($0) } == vector.decoded)
    }

    @Test(arguments: linkVectors)
    func vectorFramesEncodeToTheDocumentedBytes(_ vector: LinkVector) {
        #expect(vector.decoded.map { $0.encode() } == vector.bytes)
    }

    @Test(arguments: linkVectors)
    func vectorReassemblesToItsItem(_ vector: LinkVector) throws {
        let (header, item) = try SessionReassembledItem.decodeItem(vector.bytes)
        #expect(header.channel == vector.channel)
        #expect(header.flags == vector.flags)
        #expect(header.id == vector.id)
        #expect(item == vector.item)
        #expect(try item.encodePayload() == header.payload)
    }

    @Test(arguments: linkVectors)
    func everyTruncationOfAVectorIsATypedError(_ vector: LinkVector) {
        for (index, frame) in vector.bytes.enumerated() {
            for length in 0..<frame.count {
                var frames = vector.bytes
                frames[index] = Array(frame.prefix(length))
                #expect(throws: SessionFrameError.self, "\(vector.name) frame \(index) cut to \(length) bytes") {
                    try SessionReassembledItem.decodeItem(frames)
                }
            }
        }
    }

    @Test(arguments: linkVectors)
    func droppingAFrameOfAVectorIsATypedError(_ vector: LinkVector) {
        for index in vector.bytes.indices {
            var frames = vector.bytes
            frames.remove(at: index)
            #expect(throws: SessionFrameError.self) { try SessionReassembledItem.decodeItem(frames) }
        }
    }

    @Test func phoneCoreWritesTheDocumentedHello() throws {
        // Incarnation, epoch and nonce are the core's first three random numbers.
        var core = SessionCore(role: .phone, identity: phoneID,
                               randomSource: ScriptedSessionRandom(values: [0x1122_3344, 0x5566_7788, 0x0BAD_CAFE], fallbackSeed: 1))
        _ = core.setPairedDevice(watchID, now: .zero)
        _ = try core.activate(now: .zero)
        let actions = core.linkUp(maxPayload: 244, now: .zero)
        #expect(actions == [.write(linkVectors[0].bytes[0])])
    }

    @Test func coresWriteTheDocumentedContextAndMessageFrames() throws {
        var pair = Pair(seed: 1, maxPayload: 20)
        pair.maxPayload = 244
        pair.dropLink()
        pair.raiseLink()
        pair.settle()
        pair.phone.writes = []
        try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(contextValue, now: now) }
        #expect(pair.phone.writes == linkVectors[2].bytes)
        pair.settle()

        pair.maxPayload = 20
        pair.dropLink()
        pair.raiseLink()
        pair.settle()
        pair.phone.writes = []
        pair.watchAutoReplies = false
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(heartRate, expectsReply: true, now: now) }
        #expect(id == 1)
        #expect(pair.phone.writes == linkVectors[3].bytes)
    }

    @Test func watchCoreWritesTheDocumentedFileFrames() throws {
        var pair = Pair(seed: 2, maxPayload: 20)
        pair.watch.writes = []
        try pair.call(.watch) { core, now throws(SessionError) in try core.transferFile(alphabet, metadata: nil, now: now) }
        #expect(pair.watch.writes == linkVectors[6].bytes)
        pair.watch.writes = []
        pair.step() // the metadata arrives; the phone's ACK goes back
        pair.step() // the ACK arrives; the chunks go out
        #expect(pair.watch.writes == linkVectors[7].bytes)
        pair.settle()
        #expect(pair.phone.files[Host.fileKey(watchID, 1)] == alphabet)
    }
}
