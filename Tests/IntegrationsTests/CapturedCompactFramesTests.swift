@testable import SessionIntegration
import SessionCore
import Testing

/// The responder reads a capture's compact frames as the full frames they stand for
/// (docs/session-link.md, "Compact frames"), each direction with its own context.
@Suite struct CapturedCompactFramesTests {
    static let phone = SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!
    static let watch = SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1")!

    /// A control item in pieces of `frameLength` bytes, each a captured frame from `fromPhone`'s side.
    static func control(_ item: SessionControl, id: UInt32, fromPhone: Bool, firstFrame: Int, frameLength: Int = 20) -> [SessionCapturePrescan.LinkFrame] {
        SessionFrame.fragment(channel: .control, id: id, payload: item.encode(), maxFrameLength: frameLength).enumerated().map {
            .init(frame: firstFrame + $0.offset, timeNs: Int64(firstFrame + $0.offset), fromPhone: fromPhone, bytes: $0.element.encode())
        }
    }

    /// A handshake at ATT MTU 23 (HELLO and WELCOME in pieces), compact frames stated as given.
    static func handshake(hello: Bool, welcome: Bool) -> [SessionCapturePrescan.LinkFrame] {
        let helloItem = SessionHandshake(identity: phone, incarnation: 1, epoch: 2, nonce: 9, status: [.paired, .appInstalled], compactFrames: hello)
        let welcomeItem = SessionHandshake(identity: watch, incarnation: 3, epoch: 4, nonce: 9, status: [.paired, .appInstalled], compactFrames: welcome)
        return control(.hello(helloItem), id: 1, fromPhone: true, firstFrame: 1) + control(.welcome(welcomeItem), id: 1, fromPhone: false, firstFrame: 20)
    }

    /// The watch's user info #3 (60 bytes), encoded with a sender's context: its pieces after the
    /// first compact when the link allows them.
    static func userInfo(compact: Bool) -> (frames: [SessionFrame], captured: [SessionCapturePrescan.LinkFrame]) {
        let frames = SessionFrame.fragment(channel: .userInfo, id: 3, payload: (0..<60).map { UInt8($0) }, maxFrameLength: 20)
        var context = SessionFrameContext()
        let captured = frames.enumerated().map { index, frame in
            SessionCapturePrescan.LinkFrame(frame: 40 + index, timeNs: Int64(40 + index), fromPhone: false,
                                            bytes: compact ? context.encode(frame) : frame.encode())
        }
        return (frames, captured)
    }

    @Test func compactFramesOfANegotiatedLinkAreReadAsTheFullFramesTheyStandFor() throws {
        let (frames, captured) = Self.userInfo(compact: true)
        #expect(captured.dropFirst().allSatisfy { $0.bytes[0] & SessionLink.compactMarker != 0 })
        let expanded = CapturedCompactFrames(Self.handshake(hello: true, welcome: true) + captured)
        let userInfo = expanded.frames.filter { $0.frame >= 40 }
        #expect(try userInfo.map { try SessionFrame.decode($0.bytes) } == frames)
        #expect(expanded.completed == frames.count - 1 && expanded.unreadable == 0)
        for linkFrame in captured {
            #expect(expanded.wholeFrame(linkFrame.bytes, capturedIn: linkFrame.frame) == frames[linkFrame.frame - 40].encode())
        }
    }

    @Test func aLinkWhereOnlyOneSideStatedCompactFramesIsReadAsCaptured() {
        // The watch states the option although the HELLO did not: the binding has no compact frames,
        // so a byte 0 with bit 7 set is no compact frame (the core reports it as malformed).
        let (_, captured) = Self.userInfo(compact: true)
        let expanded = CapturedCompactFrames(Self.handshake(hello: false, welcome: true) + captured)
        #expect(expanded.frames.map(\.bytes) == (Self.handshake(hello: false, welcome: true) + captured).map(\.bytes))
        #expect(expanded.completed == 0)
        #expect(expanded.wholeFrame(captured[1].bytes, capturedIn: captured[1].frame) == captured[1].bytes)
    }

    @Test func aCompactFrameWithoutItsChannelsFirstFrameIsKeptAsCapturedAndCounted() {
        // The user info's FIRST frame is missing from the capture: its compact pieces have no context.
        let (_, captured) = Self.userInfo(compact: true)
        let expanded = CapturedCompactFrames(Self.handshake(hello: true, welcome: true) + captured.dropFirst())
        #expect(expanded.completed == 0 && expanded.unreadable == captured.count - 1)
        #expect(expanded.frames.filter { $0.frame >= 40 }.map(\.bytes) == captured.dropFirst().map(\.bytes))
    }

    @Test func eachDirectionIsReadWithItsOwnContext() throws {
        // The phone's user info #3 on the same channel, between the watch's pieces: the watch's
        // compact pieces still complete from the watch's own last frame.
        let (frames, captured) = Self.userInfo(compact: true)
        let phoneFrame = SessionFrame(channel: .userInfo, flags: [.first, .last], id: 7, totalOrOffset: 4, bytes: [1, 2, 3, 4])
        var mixed = Self.handshake(hello: true, welcome: true)
        mixed.append(captured[0])
        mixed.append(.init(frame: 39, timeNs: 40, fromPhone: true, bytes: phoneFrame.encode()))
        mixed += captured.dropFirst()
        let expanded = CapturedCompactFrames(mixed)
        let fromWatch = expanded.frames.filter { $0.frame >= 40 }
        #expect(try fromWatch.map { try SessionFrame.decode($0.bytes) } == frames)
    }
}
