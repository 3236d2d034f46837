@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import CaptureSet
import Foundation
import MonkeyC
import ReplayKit
import BehaviourTrace
import SessionCore
import Testing

/// Replays of the committed session-link capture sets (recorded for real: both sides as live hosts
/// on Bumble controllers, the recording side's H4 tap), and the pieces replay and the live hosts share.
@Suite struct SessionReplayTests {
    static let liveSets = [
        "session-clean", "session-clean-watch", "session-unreachable", "session-reply-timeout", "session-user-info-kill9",
        "session-file-resume", "session-complication-budget", "session-watch-switch", "session-concurrent", "session-compact-mtu23",
    ]

    func replay(_ name: String, _ options: ReplayOptions = .builtInDefaults) throws -> ReplayOutcome {
        try replaySet(at: MessagingReplayTests.captures.appendingPathComponent(name).path, options: options)
    }

    func summary(_ outcome: ReplayOutcome) throws -> [String: TraceValue] {
        try #require(outcome.trace.last { $0.core == "session" && $0.event == "summary" }).fields
    }

    @Test(arguments: liveSets) func everyFrameTheReplayedSideWritesEqualsTheCapturedOne(_ name: String) throws {
        let outcome = try replay(name)
        #expect(outcome.cores == ["session"])
        let fields = try summary(outcome)
        #expect(fields["frames_diverged"] == .int(0), "\(name): \(fields["first_divergence"] ?? .null)")
        #expect(fields["frames_matched"] == fields["own_frames"])
    }

    @Test(arguments: liveSets) func liveTraceEqualsReplayedTrace(_ name: String) throws {
        let outcome = try replay(name)
        let live = try TraceFile.read(MessagingReplayTests.captures.appendingPathComponent(name).appendingPathComponent("live/session.jsonl").path)
        let ignored: Set<TraceName> = ["frame_matched", "frame_unsent", "summary"]
        let report = TraceDiff.compare(
            live.filter { !ignored.contains($0.event) }, outcome.trace.filter { !ignored.contains($0.event) },
            timingToleranceNs: 50_000_000)
        #expect(report.isEmpty, "\(name): \(report.render(maxLines: 20))")
    }

    /// The phone calls while the watch's file streams in: the live core took a call before one of
    /// the file's frames the tap stamped earlier. In capture order, the replayed trace differs
    /// from the live one.
    @Test func theConcurrentSessionReplaysInTheLiveCoresOrderAndDiffersInCaptureOrder() throws {
        let (_, inCaptureOrder, live) = try MessagingReplayTests.replayBothWays("session-concurrent", core: "session")
        // The session link's frame matcher pairs within a window of 16, so the order shows in the
        // trace (the call moved after the watch's frame), not as a divergence.
        #expect(MessagingReplayTests.differ(live, inCaptureOrder.trace))
    }

    @Test func committedExpectationsHold() throws {
        for name in Self.liveSets {
            let outcome = try replay(name)
            #expect(!outcome.manifest.expectations.isEmpty, "\(name) has no expectations")
            for result in Expectations.evaluate(outcome.manifest.expectations, trace: outcome.trace) {
                #expect(result.passed, "\(name): \(result.message)")
            }
        }
    }

    @Test func theWatchSideOfARecordingReplaysTheWatchCore() throws {
        let outcome = try replay("session-clean-watch")
        #expect(try summary(outcome)["role"] == .string("watch"))
        #expect(outcome.trace.contains { $0.event == "did_receive_message" && $0.fields["expects_reply"] == .bool(true) })
    }

    @Test func aShorterReplyLimitMakesTheCleanSessionDivergeWhereItShould() throws {
        // The watch answers within milliseconds; a 1 ms limit fails the message before the reply
        // arrives, and the phone's frames after it no longer match the capture.
        let outcome = try replay("session-clean", try .builtIn("session.settings.message_reply_timeout_ms=1ms"))
        #expect(outcome.trace.contains { $0.event == "message_failed" && $0.fields["code"] == .int(7012) })
        #expect(outcome.trace.contains { $0.event == "late_reply_discarded" })
    }
}

@Suite struct SessionAPICallTests {
    static let calls: [SessionAPICall] = [
        .start(role: .watch, identity: SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1")!, seed: .max, restored: true),
        .setPaired(SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!), .setPaired(nil),
        .setAppState(WatchAppState(installed: true, complicationEnabled: true, foreground: false)), .activate,
        .updateContext(.dictionary([MonkeyCPair(.string("a"), .int32(1))])),
        .sendMessage(.dictionary([MonkeyCPair(.string("hr"), .int32(72))]), expectsReply: false),
        .sendMessageData([0xCA, 0xFE], expectsReply: true),
        .reply(SessionMessageID(rawValue: 3), .dictionary([])), .replyData(SessionMessageID(rawValue: 4), [1]),
        .transferUserInfo(.dictionary([MonkeyCPair(.string("n"), .int64(1 << 40))])),
        .transferComplication(.dictionary([MonkeyCPair(.string("n"), .double(1.5))])),
        .cancelUserInfo(UserInfoTransferID(rawValue: 9)),
        .transferFile(.pattern(size: 100), metadata: nil), .transferFile(.text("hello"), metadata: .dictionary([])),
        .transferFile(.bytes([0, 255]), metadata: nil), .cancelFile(FileTransferID(rawValue: 2)),
    ]

    @Test(arguments: calls) func aRecordReadsBackAsTheSameCall(_ call: SessionAPICall) throws {
        let json = Array(call.recordJSON.utf8)
        let record = try JSONLiteral.parseObject(json, label: "record")
        #expect(record["core"] == .string("session"))
        let parsed = try SessionAPICall(record: record)
        #expect(parsed == call, "\(call.recordJSON) read back as \(parsed)")
    }

    @Test func aBadRecordSaysWhichKeyAndWhatWasExpected() {
        #expect(throws: SessionAPICallError.unknownCall("dance")) { try SessionAPICall(record: ["call": .string("dance")]) }
        #expect(throws: SessionAPICallError.missing("message", call: "send_message")) { try SessionAPICall(record: ["call": .string("send_message")]) }
        #expect(throws: SessionAPICallError.self) { try SessionAPICall(record: ["call": .string("reply"), "id": .int(0), "reply": .object([:])]) }
        #expect(throws: SessionAPICallError.self) { try SessionAPICall(record: ["call": .string("transfer_file"), "content": .object(["size": .int(-1)])]) }
        #expect(throws: SessionAPICallError.self) {
            try SessionAPICall(record: ["call": .string("start"), "role": .string("tablet"), "identity": .string("x"), "seed": .string("1")])
        }
    }

    @Test func thePatternFileIsTheDocumentedBytes() {
        #expect(SessionFileContent.pattern(size: 4).bytes == [7, 38, 69, 100])
    }
}

@Suite struct SessionDriverTests {
    static let phone = SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!
    static let watch = SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1")!

    @Test func aCallBeforeStartIsAnAPIErrorNotACrash() {
        var driver = SessionDriver()
        let (actions, events) = driver.apply(.activate, now: .zero)
        #expect(actions.isEmpty)
        #expect(events.map(\.event) == ["api_error"])
    }

    @Test func aRefusedCallCarriesItsWCErrorCode() {
        var driver = SessionDriver()
        _ = driver.apply(.start(role: .phone, identity: Self.phone, seed: 1, restored: false), now: .zero)
        let (_, events) = driver.apply(.transferUserInfo(.dictionary([])), now: .zero)
        #expect(events.first?.event == "api_error")
        #expect(events.first?.fields["code"] == .int(7004))
        #expect(events.first?.fields["error"] == .string("sessionNotActivated"))
    }

    @Test func aRestoredStartRebuildsTheCoreFromTheLastSnapshotWithItsQueue() {
        var driver = SessionDriver()
        _ = driver.apply(.start(role: .watch, identity: Self.watch, seed: 1, restored: false), now: .zero)
        _ = driver.apply(.setPaired(Self.phone), now: .zero)
        _ = driver.apply(.activate, now: .zero)
        let (_, events) = driver.apply(.transferUserInfo(.dictionary([MonkeyCPair(.string("n"), .int32(1))])), now: .zero)
        #expect(events.first?.fields["id"] == .int(1))
        let incarnation = driver.core?.snapshot.incarnation
        _ = driver.apply(.start(role: .watch, identity: Self.watch, seed: 2, restored: true), now: .seconds(1))
        #expect(driver.core?.snapshot.incarnation == incarnation)
        _ = driver.apply(.activate, now: .seconds(1))
        #expect(driver.core?.outstandingUserInfoTransfers.map(\.id.rawValue) == [1])
    }

    @Test func aRestoredStartWithoutASnapshotStartsAfreshAndSaysSo() {
        var driver = SessionDriver()
        let (_, events) = driver.apply(.start(role: .watch, identity: Self.watch, seed: 5, restored: true), now: .zero)
        #expect(events.first?.fields["note"] == .string("no stored snapshot: started as a new core"))
        #expect(driver.core != nil)
    }

    @Test func filesBeingSentAreKeptUntilTheirTransferEnds() {
        var driver = SessionDriver()
        _ = driver.apply(.start(role: .watch, identity: Self.watch, seed: 1, restored: false), now: .zero)
        _ = driver.apply(.setPaired(Self.phone), now: .zero)
        _ = driver.apply(.activate, now: .zero)
        _ = driver.apply(.transferFile(.text("abc"), metadata: nil), now: .zero)
        #expect(driver.outgoingFiles[FileTransferID(rawValue: 1)] == Array("abc".utf8))
        _ = driver.apply(.cancelFile(FileTransferID(rawValue: 1)), now: .zero)
        #expect(driver.outgoingFiles.isEmpty)
    }
}

@Suite struct FrameMatcherReorderTests {
    func matcher(window: Int) -> FrameMatcher {
        FrameMatcher(core: "session", reorderWindow: window, decode: { JSONLiteral.hex($0) })
    }

    @Test func twoFramesSwappedWithinTheWindowBothMatch() {
        var m = matcher(window: 4)
        _ = m.captured([1], channel: "link", frame: 1, timeNs: 0)
        _ = m.captured([2], channel: "link", frame: 2, timeNs: 0)
        let first = m.emitted([2], channel: "link", timeNs: 1)
        #expect(first.last?.event == "frame_matched" && first.last?.fields["reordered"] == .bool(true))
        let second = m.emitted([1], channel: "link", timeNs: 2)
        #expect(second.last?.event == "frame_matched" && second.last?.fields["reordered"] == nil)
        #expect(m.diverged == 0 && m.finish(timeNs: 3).isEmpty)
    }

    @Test func aFrameTheCaptureNeverHadIsStillADivergence() {
        var m = matcher(window: 2)
        _ = m.captured([1], channel: "link", frame: 1, timeNs: 0)
        _ = m.emitted([9], channel: "link", timeNs: 1)
        let end = m.finish(timeNs: 2)
        #expect(end.map { $0.fields["kind"] } == [.string("missing"), .string("extra")])
        #expect(m.diverged == 2)
    }

    @Test func framesTheCoreEmittedJustBeforeTheLinkDroppedAreUnsentNotDivergent() {
        var m = matcher(window: 4)
        _ = m.emitted([1], channel: "link", timeNs: 0)
        let events = m.linkDown(channel: "link", timeNs: 1)
        #expect(events.map(\.event) == ["frame_unsent"])
        #expect(m.unsent == 1 && m.diverged == 0 && m.finish(timeNs: 2).isEmpty)
    }

    @Test func framesWaitingBeyondTheWindowAreComparedInOrder() {
        var m = matcher(window: 1)
        _ = m.emitted([1], channel: "link", timeNs: 0)
        let events = m.emitted([2], channel: "link", timeNs: 1)
        #expect(events.contains { $0.event == "frame_diverged" && $0.fields["kind"] == .string("extra") })
    }
}
