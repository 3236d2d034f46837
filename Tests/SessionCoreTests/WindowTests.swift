import MonkeyC
@testable import SessionCore
import Testing

/// The negotiated window (docs/session-link.md, "Window") and the points page version 2 settled.
@Suite struct WindowTests {
    /// Data frames a side wrote on `channel`, decoded.
    func frames(_ host: Host, channel: SessionChannel) -> [SessionFrame] {
        host.writes.compactMap { try? SessionFrame.decode($0) }.filter { $0.channel == channel }
    }

    /// The handshake items a side wrote, in order.
    func handshakes(_ host: Host) -> [SessionControl] {
        host.writes.compactMap { bytes -> SessionControl? in
            guard let frame = try? SessionFrame.decode(bytes), frame.channel == .control, frame.total != nil,
                  let control = try? SessionControl.decode(frame.bytes) else { return nil }
            switch control {
            case .hello, .welcome: return control
            default: return nil
            }
        }
    }

    /// Settles the pair and returns how far ahead of its acknowledged offset, in frames of `room`
    /// bytes, the phone's file lane ever ran.
    func settleMeasuringAhead(_ pair: inout Pair, room: Int) -> Int {
        var farthest = 0
        while pair.step() {
            if let lane = pair.phone.core.link?.lanes[Lane.file.rawValue], lane.channel == .fileChunk {
                farthest = max(farthest, (lane.next - lane.acked + room - 1) / room)
            }
        }
        return farthest
    }

    @Test func aHelloStatesTheConfiguredWindowAndItsResendAlternates() throws {
        var core = SessionCore(role: .phone, identity: phoneID, configuration: SessionConfiguration(windowFrames: 64),
                               randomSource: ScriptedSessionRandom(values: [0x1122_3344, 0x5566_7788, 0x0BAD_CAFE], fallbackSeed: 1))
        _ = core.setPairedDevice(watchID, now: .zero)
        _ = try core.activate(now: .zero)
        #expect(core.linkUp(maxPayload: 244, now: .zero) == [.write(linkVectors.first { $0.name == "HELLO with a window" }!.bytes[0])])
        // Resends take new control ids; the second states no window, the third states it again.
        let second = core.handleTimeout(now: .seconds(3)).compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
        var plain = linkVectors[0].bytes[0]
        plain[2] = 2
        #expect(second == [plain])
        let third = core.handleTimeout(now: .seconds(6)).compactMap { if case .write(let bytes) = $0 { bytes } else { nil } }
        var stated = linkVectors.first { $0.name == "HELLO with a window" }!.bytes[0]
        stated[2] = 3
        #expect(third == [stated])
    }

    @Test func handshakeOptionsParseOrAreMalformed() throws {
        let base = SessionControl.hello(helloHandshake).encode()
        // An unknown option is skipped; the window is read after it.
        guard case .hello(let read) = try SessionControl.decode(base + [0x7F, 3, 1, 2, 3, 0x01, 2, 0x00, 0x01]) else { Issue.record("not a HELLO"); return }
        #expect(read.window == 256)
        for bad in [[0x01], [0x01, 2, 0x40], [0x01, 1, 0x40], [0x01, 2, 0, 0], [0x01, 2, 8, 0, 0x01, 2, 8, 0]] as [[UInt8]] {
            #expect(throws: SessionFrameError.self, "\(bad)") { try SessionControl.decode(base + bad) }
        }
    }

    @Test func bothSidesStatingAWindowTakeTheSmallerAndAckEveryHalfWindow() {
        let file = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var pair = Pair(seed: 3, maxPayload: 244, configuration: SessionConfiguration(windowFrames: 64),
                        watchConfiguration: SessionConfiguration(windowFrames: 32))
        #expect(pair.phone.core.link?.window == 32)
        #expect(pair.watch.core.link?.window == 32)
        guard case .welcome(let welcome)? = handshakes(pair.watch).last else { Issue.record("no WELCOME"); return }
        #expect(welcome.window == 32)
        pair.transferFile(file, number: 1, from: .phone)
        let ahead = settleMeasuringAhead(&pair, room: 234)
        #expect(ahead <= 32 && ahead > 8)
        #expect(pair.receivedFiles(.watch).count == 1)
        #expect(pair.watch.files.values.first == file)
        let chunks = frames(pair.phone, channel: .fileChunk)
        let asking = chunks.filter { $0.flags.contains(.needsAck) }.map { Int($0.offset) + $0.bytes.count }
        // Every 16 frames of 234 bytes, and at the end.
        #expect(asking == Array(stride(from: 16 * 234, to: file.count, by: 16 * 234)) + [file.count])
        #expect(pair.phone.violations.isEmpty && pair.watch.violations.isEmpty)
    }

    @Test func aPeerThatStatesNoWindowGetsTodaysWindowAndAcks() {
        let file = (0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        var pair = Pair(seed: 4, maxPayload: 244, configuration: SessionConfiguration(windowFrames: 256),
                        watchConfiguration: SessionConfiguration())
        #expect(pair.phone.core.link?.window == SessionLink.windowFrames)
        #expect(pair.watch.core.link?.window == SessionLink.windowFrames)
        // The watch of today's page answers with the 55-byte WELCOME.
        let welcomes = pair.watch.writes.compactMap { try? SessionFrame.decode($0) }.filter { $0.channel == .control && $0.total == 55 }
        #expect(!welcomes.isEmpty)
        pair.transferFile(file, number: 1, from: .phone)
        #expect(settleMeasuringAhead(&pair, room: 234) <= 8)
        #expect(pair.watch.files.values.first == file)
        let asking = frames(pair.phone, channel: .fileChunk).filter { $0.flags.contains(.needsAck) }.map { Int($0.offset) + $0.bytes.count }
        // Today's rule: NEEDS-ACK at the end of each 8-frame window and at the item's end only.
        #expect(asking == Array(stride(from: 8 * 234, to: file.count, by: 8 * 234)) + [file.count])
    }

    @Test func aWatchOfTodaysPageThatRefusesTheLongerHelloStillBinds() {
        // Such a watch drops the HELLO with the option (malformed-control, no answer): the test drops
        // every HELLO with an option before it reaches the watch.
        var pair = Pair(seed: 5, maxPayload: 244, configuration: SessionConfiguration(windowFrames: 64),
                        watchConfiguration: SessionConfiguration(windowFrames: 64), connect: false)
        pair.raiseLink()
        for _ in 0..<50 {
            pair.inFlight.removeAll { flight in
                guard flight.to == .watch, let frame = try? SessionFrame.decode(flight.bytes), frame.channel == .control,
                      case .hello(let hello)? = try? SessionControl.decode(frame.bytes) else { return false }
                return hello.window != nil
            }
            pair.step()
        }
        #expect(pair.phone.core.link?.boundPeer == watchID)
        #expect(pair.phone.core.link?.window == 8)
        #expect(pair.watch.core.link?.window == 8)
    }

    @Test func aLostWelcomeIsRepairedWithTheSameWindow() {
        // The watch answered a HELLO with the option; its WELCOME is lost; the phone's resend states
        // none, and the watch's repeated answer still carries the window.
        var pair = Pair(seed: 6, maxPayload: 244, configuration: SessionConfiguration(windowFrames: 64),
                        watchConfiguration: SessionConfiguration(windowFrames: 100), connect: false)
        pair.raiseLink()
        var dropped = false
        for _ in 0..<50 {
            if !dropped, let index = pair.inFlight.firstIndex(where: { $0.to == .phone }) {
                pair.inFlight.remove(at: index)
                dropped = true
            }
            pair.step()
        }
        #expect(dropped)
        #expect(pair.phone.core.link?.boundPeer == watchID)
        #expect(pair.phone.core.link?.window == 64)
        #expect(pair.watch.core.link?.window == 64)
    }

    @Test func aChunkWithoutMetadataMakesTheSenderStartOverWithIt() {
        var pair = Pair(seed: 7, maxPayload: 20)
        let file = Array("abcdefghijklmnopqrstuvwxyz".utf8)
        pair.transferFile(file, number: 1, from: .phone)
        // Deliver until the metadata is in, then make the watch forget it (as a discarded partial).
        while pair.watch.core.durable.peers.first(where: { $0.identity == phoneID })?.inboundFile == nil { pair.step() }
        let index = pair.watch.core.durable.peers.firstIndex { $0.identity == phoneID }!
        pair.watch.core.durable.peers[index].inboundFile = nil
        pair.settle()
        #expect(pair.watch.violations.contains(.unexpectedFileChunk))
        #expect(pair.receivedFiles(.watch).count == 1)
        #expect(pair.watch.files.values.first == file)
        let metadataAcks = pair.watch.writes.compactMap { try? SessionFrame.decode($0) }.filter {
            $0.channel == .control && (try? SessionControl.decode($0.bytes)) == .ack(channel: .fileMetadata, id: 1, received: 0)
        }
        #expect(!metadataAcks.isEmpty)
        #expect(frames(pair.phone, channel: .fileMetadata).count >= 2)
    }

    @Test func controlIdsGrowAcrossHandshakesAndResends() throws {
        var pair = Pair(seed: 8, maxPayload: 244)
        let before = pair.phone.core.nextControlID
        try pair.act(.phone) { core, now in core.linkUp(maxPayload: 244, now: now) }
        pair.settle()
        #expect(pair.phone.core.nextControlID > before) // not reset by a new link
        #expect(pair.phone.core.link?.boundPeer == watchID)
    }
}
