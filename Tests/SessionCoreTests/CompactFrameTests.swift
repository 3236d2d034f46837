import MonkeyC
@testable import SessionCore
import Testing
import TetherTestSupport

/// The compact frames of docs/session-link.md page version 3 ("Compact frames"): the context, the
/// codec, the negotiation, and what real cores write.
@Suite struct CompactFrameTests {
    static let compact = SessionConfiguration(compactFrames: true)

    /// The page's vector "File with compact frames": file 1 of 26 bytes, no metadata dictionary,
    /// `maxPayload` 20, after a handshake in which both sides stated compact frames.
    static let vectorMetadata = hex("07 07 01000000 04000000 1a000000")
    static let vectorChunks = [
        hex("08 01 01000000 1a000000 6162636465666768696a"),
        hex("98 06 0a00 6b6c6d6e6f707172737475767778797a"),
    ]

    /// A context that has seen one full frame of file-chunk #1 ending at `end`.
    func context(afterChunkEndingAt end: UInt32, id: UInt32 = 1) -> SessionFrameContext {
        var context = SessionFrameContext()
        context.record(SessionFrame(channel: .fileChunk, flags: [], id: id, totalOrOffset: end - 1, bytes: [0]))
        return context
    }

    /// The handshake items a side wrote, in order (every control item fits one frame at 244).
    func handshakes(_ host: Host) -> [SessionHandshake] {
        host.writes.compactMap { bytes -> SessionHandshake? in
            guard let frame = try? SessionFrame.decode(bytes), frame.channel == .control, frame.total != nil,
                  let control = try? SessionControl.decode(frame.bytes) else { return nil }
            switch control {
            case .hello(let handshake), .welcome(let handshake): return handshake
            default: return nil
            }
        }
    }

    @Test func coresWriteTheDocumentedCompactFileFrames() throws {
        var pair = Pair(seed: 2, maxPayload: 20, configuration: Self.compact)
        pair.watch.writes = []
        try pair.call(.watch) { core, now throws(SessionError) in try core.transferFile(alphabet, metadata: nil, now: now) }
        #expect(pair.watch.writes == [Self.vectorMetadata])
        pair.watch.writes = []
        pair.step() // the metadata arrives; the phone's ACK goes back
        pair.step() // the ACK arrives; the chunks go out
        #expect(pair.watch.writes == Self.vectorChunks)
        pair.settle()
        #expect(pair.phone.files[Host.fileKey(watchID, 1)] == alphabet)
        #expect(pair.phone.violations.isEmpty && pair.watch.violations.isEmpty)
    }

    @Test func theDocumentedCompactFramesDecodeToTheirFields() throws {
        var context = SessionFrameContext()
        let frames = try Self.vectorChunks.map { bytes throws(SessionFrameError) in try context.decode(bytes) }
        #expect(frames == [
            SessionFrame(channel: .fileChunk, flags: [.first], id: 1, totalOrOffset: 26, bytes: Array(alphabet[0..<10])),
            SessionFrame(channel: .fileChunk, flags: [.last, .needsAck], id: 1, totalOrOffset: 10, bytes: Array(alphabet[10..<26])),
        ])
    }

    @Test func framesRoundTripThroughASenderAndAReceiverContext() throws {
        // Two channels interleaved, a go-back (retransmission), a jump past the compact reach, and a
        // new item on a channel: each frame decodes to itself; compact exactly where allowed.
        let frames: [(SessionFrame, compact: Bool)] = [
            (SessionFrame(channel: .fileChunk, flags: [.first], id: 9, totalOrOffset: 100_000, bytes: [1, 2]), false),
            (SessionFrame(channel: .userInfo, flags: [.first], id: 3, totalOrOffset: 40, bytes: [7]), false),
            (SessionFrame(channel: .fileChunk, flags: [], id: 9, totalOrOffset: 2, bytes: [3, 4, 5]), true),
            (SessionFrame(channel: .userInfo, flags: [.needsAck], id: 3, totalOrOffset: 1, bytes: [8]), true),
            (SessionFrame(channel: .fileChunk, flags: [.retransmission], id: 9, totalOrOffset: 0, bytes: [1, 2]), true),
            (SessionFrame(channel: .fileChunk, flags: [], id: 9, totalOrOffset: 70_000, bytes: [9]), false),
            (SessionFrame(channel: .fileChunk, flags: [.needsAck], id: 9, totalOrOffset: 70_001 - 32_768, bytes: [9]), true),
            (SessionFrame(channel: .userInfo, flags: [.first, .last], id: 4, totalOrOffset: 1, bytes: [6]), false),
            (SessionFrame(channel: .userInfo, flags: [], id: 3, totalOrOffset: 2, bytes: [9]), false),
        ]
        var sender = SessionFrameContext()
        var receiver = SessionFrameContext()
        for (frame, compact) in frames {
            let bytes = sender.encode(frame)
            #expect((bytes[0] & SessionLink.compactMarker != 0) == compact, "\(frame)")
            #expect(bytes.count == frame.bytes.count + (compact ? 4 : 10))
            #expect(try receiver.decode(bytes) == frame)
        }
        #expect(sender == receiver)
    }

    @Test func compactReachIsBelowTheLastEndBy32768AndAboveBy32767() {
        let context = context(afterChunkEndingAt: 40_000)
        #expect(context.compactAllowed(channel: .fileChunk, id: 1, offset: 40_000 - 32_768))
        #expect(!context.compactAllowed(channel: .fileChunk, id: 1, offset: 40_000 - 32_769))
        #expect(context.compactAllowed(channel: .fileChunk, id: 1, offset: 40_000 + 32_767))
        #expect(!context.compactAllowed(channel: .fileChunk, id: 1, offset: 40_000 + 32_768))
        #expect(!context.compactAllowed(channel: .fileChunk, id: 2, offset: 40_000))
        #expect(!context.compactAllowed(channel: .fileMetadata, id: 1, offset: 40_000))
        #expect(!SessionFrameContext().compactAllowed(channel: .control, id: 1, offset: 0))
    }

    @Test func fileOffsetsNearFourGiBDecodeAcrossTheSixteenBitWrap() throws {
        var receiver = context(afterChunkEndingAt: 0xFFFF_FFF0 - 16)
        // 0xFFFFFFE0 ends the last frame; the next is at the same place, its low bits 0xFFE0.
        let frame = try receiver.decode([0x98, 0x02, 0xE0, 0xFF] + Array(repeating: 0xAB, count: 16))
        #expect(frame.totalOrOffset == 0xFFFF_FFE0)
        var wrap = context(afterChunkEndingAt: 0x0001_FFF8)
        // Low bits 0x0008 after an end at 0x1FFF8 is 0x20008, past the 16-bit wrap.
        #expect(try wrap.decode([0x98, 0x00, 0x08, 0x00, 1]).totalOrOffset == 0x0002_0008)
    }

    /// Malformed compact frames, each with the context it meets and the problem it must give.
    static let malformed: [(name: String, bytes: [UInt8], problem: SessionFrameError.Problem)] = [
        ("cut in the header", [0x98, 0x00, 0x0A], .truncated(expected: "the 4-byte compact frame header (channel and id tag, flags, offset bits)", needed: 4, available: 3)),
        ("no bytes", [0x98, 0x00, 0x0A, 0x00], .continuationWithoutBytes),
        ("channel 0", [0x90, 0x00, 0x0A, 0x00, 1], .compactChannel(0)),
        ("channel 9", [0x99, 0x00, 0x0A, 0x00, 1], .compactChannel(9)),
        ("FIRST", [0x98, 0x01, 0x0A, 0x00, 1], .compactFirstFrame),
        ("no frame before on the channel", [0x97, 0x00, 0x0A, 0x00, 1], .compactWithoutContext(channel: .fileMetadata)),
        ("another id tag", [0xA8, 0x00, 0x0A, 0x00, 1], .compactIDMismatch(channel: .fileChunk, id: 1, tag: 2)),
        ("below offset 0", [0x98, 0x00, 0x00, 0xF0, 1], .compactOffsetBelowZero(end: 10, lowBits: 0xF000)),
    ]

    @Test(arguments: 0..<malformed.count)
    func malformedCompactFramesAreTypedErrorsThatLeaveTheContext(_ index: Int) {
        let (name, bytes, problem) = Self.malformed[index]
        var receiver = context(afterChunkEndingAt: 10)
        let before = receiver
        #expect(throws: SessionFrameError(frame: 0, offset: Self.errorOffset(problem, count: bytes.count), problem: problem), "\(name)") {
            try receiver.decode(bytes)
        }
        #expect(receiver == before)
    }

    static func errorOffset(_ problem: SessionFrameError.Problem, count: Int) -> Int {
        switch problem {
        case .truncated: count
        case .continuationWithoutBytes: 4
        case .compactFirstFrame: 1
        case .compactOffsetBelowZero: 2
        default: 0
        }
    }

    @Test func aCompactFramePastTheLastFileOffsetIsATypedError() {
        var receiver = context(afterChunkEndingAt: 0xFFFF_FFF0)
        #expect(throws: SessionFrameError(frame: 0, offset: 2, problem: .offsetOverflow(offset: 0xFFFF_FFF8, count: 16))) {
            try receiver.decode([0x98, 0x00, 0xF8, 0xFF] + Array(repeating: 0, count: 16))
        }
    }

    @Test func arbitraryBytesNeverTrapTheContextDecoder() {
        var rng = SplitMix64(seed: 23)
        var receiver = context(afterChunkEndingAt: 1_000)
        for _ in 0..<20_000 {
            let count = Int(rng.next() % 24)
            var bytes = (0..<count).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if !bytes.isEmpty, rng.next() % 2 == 0 { bytes[0] = 0x98 | (bytes[0] & 0x60) }
            do throws(SessionFrameError) {
                let frame = try receiver.decode(bytes)
                #expect(frame.bytes.count <= bytes.count)
            } catch {
                #expect(!error.description.isEmpty)
            }
        }
    }

    @Test func theCompactOptionParsesOrIsMalformed() throws {
        let base = SessionControl.hello(helloHandshake).encode()
        guard case .hello(let read) = try SessionControl.decode(base + [0x02, 0x00]) else { Issue.record("not a HELLO"); return }
        #expect(read.compactFrames && read.window == nil)
        guard case .hello(let both) = try SessionControl.decode(base + [0x01, 2, 0x40, 0, 0x02, 0]) else { Issue.record("not a HELLO"); return }
        #expect(both.compactFrames && both.window == 64)
        for bad in [[0x02], [0x02, 1, 0], [0x02, 0, 0x02, 0]] as [[UInt8]] {
            #expect(throws: SessionFrameError.self, "\(bad)") { try SessionControl.decode(base + bad) }
        }
    }

    @Test func bothSidesStatingCompactFramesUseThemBothWays() {
        let file = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }
        var pair = Pair(seed: 31, maxPayload: 20, configuration: Self.compact)
        #expect(pair.phone.core.link?.sendContext != nil && pair.watch.core.link?.sendContext != nil)
        pair.phone.writes = []
        pair.watch.writes = []
        pair.transferFile(file, number: 1, from: .phone)
        pair.transferFile(file, number: 2, from: .watch)
        pair.settle()
        #expect(pair.watch.files.values.first == file)
        #expect(pair.phone.files.values.first == file)
        for host in [pair.phone, pair.watch] {
            let compact = host.writes.filter { $0[0] & SessionLink.compactMarker != 0 && $0[0] & 0x0F == SessionChannel.fileChunk.rawValue }
            // 3000 bytes: one FIRST frame of 10, then compact frames of 16.
            #expect(compact.count == (3_000 - 10 + 15) / 16)
        }
        #expect(pair.phone.violations.isEmpty && pair.watch.violations.isEmpty)
    }

    @Test func aPeerThatStatesNothingGetsPageTwoFrames() {
        let file = (0..<5_000).map { UInt8(truncatingIfNeeded: $0) }
        var pair = Pair(seed: 32, maxPayload: 244, configuration: Self.compact, watchConfiguration: SessionConfiguration())
        #expect(handshakes(pair.phone).first?.compactFrames == true)
        #expect(handshakes(pair.watch).allSatisfy { !$0.compactFrames })
        #expect(pair.phone.core.link?.sendContext == nil && pair.phone.core.link?.receiveContext == nil)
        pair.transferFile(file, number: 1, from: .phone)
        pair.transferFile(file, number: 2, from: .watch)
        pair.settle()
        #expect(pair.watch.files.values.first == file && pair.phone.files.values.first == file)
        #expect((pair.phone.writes + pair.watch.writes).allSatisfy { (try? SessionFrame.decode($0)) != nil && $0[0] < 0x80 })
        #expect(pair.phone.violations.isEmpty && pair.watch.violations.isEmpty)
    }

    @Test func aHelloResendAlternatesTheCompactOption() {
        var core = SessionCore(role: .phone, identity: phoneID, configuration: Self.compact,
                               randomSource: ScriptedSessionRandom(values: [0x1122_3344, 0x5566_7788, 0x0BAD_CAFE], fallbackSeed: 1))
        _ = core.setPairedDevice(watchID, now: .zero)
        _ = try? core.activate(now: .zero)
        var stated = SessionControl.hello(helloHandshake).encode() + [0x02, 0x00]
        let first = core.linkUp(maxPayload: 244, now: .zero)
        #expect(first == [.write(SessionFrame(channel: .control, flags: [.first, .last], id: 1, totalOrOffset: 57, bytes: stated).encode())])
        let second = core.handleTimeout(now: .seconds(3))
        #expect(second.contains(.write(linkVectors[0].bytes[0].enumerated().map { $0.offset == 2 ? 2 : $0.element })))
        let third = core.handleTimeout(now: .seconds(6))
        stated = SessionFrame(channel: .control, flags: [.first, .last], id: 3, totalOrOffset: 57, bytes: stated).encode()
        #expect(third.contains(.write(stated)))
    }

    @Test func aWatchOfAnEarlierPageThatRefusesLongerHellosStillBinds() {
        // Such a watch drops a HELLO with options (malformed-control, no answer): the test drops them.
        let file = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        var pair = Pair(seed: 33, maxPayload: 20, configuration: Self.compact, connect: false)
        pair.raiseLink()
        for _ in 0..<60 {
            pair.inFlight.removeAll { flight in
                guard flight.to == .watch, let frame = try? SessionFrame.decode(flight.bytes), frame.channel == .control,
                      frame.total.map({ $0 > 55 }) == true else { return false }
                return true
            }
            pair.step()
        }
        #expect(pair.phone.core.link?.boundPeer == watchID)
        #expect(pair.phone.core.link?.sendContext == nil && pair.watch.core.link?.sendContext == nil)
        pair.phone.writes = []
        pair.transferFile(file, number: 1, from: .phone)
        pair.settle()
        #expect(pair.watch.files.values.first == file)
        #expect(pair.phone.writes.allSatisfy { $0[0] < 0x80 })
    }

    @Test func aLostWelcomeIsRepairedAndTheWatchStartsItsContextAgain() {
        // The watch binds on the first HELLO and starts its file at once; its WELCOME is lost, so the
        // phone drops those frames unbound. The repeated WELCOME starts the watch's context afresh:
        // the phone, bound by it, reads every later frame.
        let file = (0..<2_000).map { UInt8(truncatingIfNeeded: $0 &* 3) }
        var pair = Pair(seed: 34, maxPayload: 20, configuration: Self.compact, connect: false)
        pair.transferFile(file, number: 1, from: .watch)
        pair.raiseLink()
        while pair.now < .milliseconds(2_500), pair.step() {
            pair.inFlight.removeAll { flight in
                guard flight.to == .phone, let frame = try? SessionFrame.decode(flight.bytes) else { return false }
                return frame.channel == .control
            }
        }
        pair.settle()
        #expect(pair.phone.core.link?.boundPeer == watchID)
        #expect(pair.phone.files.values.first == file)
        #expect(!pair.phone.violations.contains(.malformedFrame))
        #expect(pair.phone.violations.contains(.frameBeforeHandshake))
    }
}
