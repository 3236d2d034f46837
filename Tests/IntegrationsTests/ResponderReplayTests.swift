@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import BehaviourTrace
import CaptureSet
import Foundation
import ReplayKit
import SessionCore
import Testing

/// The session and widget responders (docs/replay-engine.md, "Responders"): without faults they
/// give the callbacks strict replay gives; under faults the recorded peer answers the core's
/// retransmissions, re-handshakes and reconnections.
@Suite struct ResponderReplayTests {
    static let widgetSets = [
        "widget-property-change", "widget-set-response-notification", "widget-broker-drop", "widget-refresh-overrun",
        "widget-write-race", "widget-scene-fire", "widget-host-open-url", "widget-broker-outage",
    ]

    /// Events that are the core's callbacks and calls (not frame bookkeeping).
    static let bookkeeping: Set<TraceName> = ["frame_emitted", "frame_matched", "frame_unsent", "frame_diverged", "summary", "responder_made"]

    func replay(_ name: String, frameMatching: FrameMatchingMode? = nil, faults: [String] = []) throws -> ReplayOutcome {
        var options = try ReplayOptions.builtIn(frameMatching: frameMatching)
        options.faults = try faults.map { try Fault(parsing: $0) }
        return try replaySet(at: MessagingReplayTests.captures.appendingPathComponent(name).path, options: options)
    }

    /// The core's callbacks and calls with their instants, in trace order between instants. Within
    /// one instant they are sorted: a responder delivers a captured answer on its timer at the
    /// answer's captured instant, which the engine fires before the frames captured at that same
    /// instant (session-concurrent's user info ACK shares its microsecond with file chunks).
    func callbacks(_ outcome: ReplayOutcome, core: TraceName) -> [String] {
        outcome.trace.filter { $0.core == core && !Self.bookkeeping.contains($0.event) }
            .map { (time: $0.timeNs, text: $0.event.text + " " + JSONLiteral.text(.object($0.fields))) }
            .sorted { ($0.time, $0.text) < ($1.time, $1.text) }
            .map { "\($0.time) \($0.text)" }
    }

    func summary(_ outcome: ReplayOutcome, core: TraceName) throws -> [String: TraceValue] {
        try #require(outcome.trace.last { $0.core == core && $0.event == "summary" }).fields
    }

    func events(_ outcome: ReplayOutcome, _ event: TraceName, core: TraceName = "session") -> [TraceEvent] {
        outcome.trace.filter { $0.core == core && $0.event == event }
    }

    // MARK: without faults

    @Test(arguments: SessionReplayTests.liveSets.map { ($0, "session") } + Self.widgetSets.map { ($0, "widget") })
    func responderModeGivesStrictCallbacks(_ name: String, _ coreText: String) throws {
        let core = TraceName(coreText)
        let strict = try replay(name, frameMatching: .strict)
        let responder = try replay(name, frameMatching: .responder)
        #expect(try summary(responder, core: core)["frame_matching"] == .string("responder"))
        #expect(callbacks(responder, core: core) == callbacks(strict, core: core), "\(name)")
        for result in Expectations.evaluate(responder.manifest.expectations, trace: responder.trace) {
            #expect(result.passed, "\(name): \(result.message)")
        }
        #expect(try summary(responder, core: core)["frames_diverged"] == .int(0), "\(name)")
        #expect(try summary(responder, core: core)["responder_made"] == .int(0), "\(name)")
    }

    // MARK: sessions under faults

    @Test func aLostAckMakesTheCoreRetransmitAndTheResponderAcksTheRetransmission() throws {
        // Frame 157 is the watch's ACK of complication #6 (sent at 1.319400010 s).
        let outcome = try replay("session-complication-budget", faults: ["drop:frame=157"])
        let timeout = try #require(events(outcome, "timeout").first)
        #expect(timeout.fields["what"] == .string("retransmission complication #6"))
        #expect(timeout.timeNs == 1_319_400_010 + 2_000_000_000)
        let made = try #require(events(outcome, "responder_made").first)
        #expect(made.fields["what"] == .string("ack"))
        #expect(made.fields["frame"] == .string("ACK complication #6 complete"))
        #expect(made.timeNs > timeout.timeNs)
        // The retransmission went out in between, flagged as one.
        #expect(outcome.trace.contains { $0.event == "frame_emitted" && $0.timeNs == timeout.timeNs
            && $0.fields["packet"] == .string("complication #6 first|last|needs-ack|retransmission total 35, 35 bytes") })
        let finished = events(outcome, "user_info_transfer_did_finish")
        #expect(finished.filter { $0.fields["id"] == .int(6) }.map(\.timeNs) == [made.timeNs])
        #expect(Set(finished.map { $0.fields["id"] }).count == 52 && finished.count == 52)
        #expect(try summary(outcome, core: "session")["responder_made"] == .int(1))
    }

    @Test func aLostWelcomeIsAnsweredWhenTheCoreSaysHelloAgain() throws {
        // Frame 65 is the watch's WELCOME; the core's handshake timer is 3 s.
        let outcome = try replay("session-complication-budget", faults: ["drop:frame=65"])
        let hellos = outcome.trace.filter { $0.event == "frame_emitted" && $0.fields["packet"].map { JSONLiteral.text($0).contains("HELLO") } == true }
        #expect(hellos.count == 2)
        #expect(hellos[1].timeNs == hellos[0].timeNs + 3_000_000_000)
        #expect(events(outcome, "timeout").first?.fields["what"] == .string("handshake"))
        let made = try #require(events(outcome, "responder_made").first)
        #expect(made.fields["what"] == .string("welcome_repeated"))
        let bound = events(outcome, "handshake_completed")
        #expect(bound.map(\.timeNs) == [made.timeNs])
        // The watch answers a repeated HELLO after the delay it took to answer the first in the
        // capture: from the phone's HELLO frame to the WELCOME, frame 65.
        let set = try CaptureSetDirectory.load(MessagingReplayTests.captures.appendingPathComponent("session-complication-budget").path)
        let prescan = try SessionCapturePrescan.scan(capturePath: set.capturePath, interfaces: set.manifest.interfaces, gattHandles: set.manifest.gattHandles)
        let welcome = try #require(prescan.frames.first { $0.frame == 65 })
        let hello = try #require(prescan.frames.last { $0.fromPhone && $0.timeNs < welcome.timeNs && $0.bytes.count > 10 && $0.bytes[0] == 0 && $0.bytes[10] == 0x01 })
        #expect(made.timeNs - hellos[1].timeNs == welcome.timeNs - hello.timeNs)
    }

    @Test func aReplyDelayedPastTheLimitFailsWith7012ExactlyAtTheLimit() throws {
        // Frame 82 is the watch's reply to message 1, sent at 1.239334236 s; the limit is 1 s.
        var options = try ReplayOptions.builtIn("session.settings.message_reply_timeout_ms=1s")
        options.faults = [try Fault(parsing: "delay:frame=82:by=1500ms")]
        let outcome = try replaySet(at: MessagingReplayTests.captures.appendingPathComponent("session-clean").path, options: options)
        let failed = events(outcome, "message_failed").filter { $0.fields["id"] == .int(1) }
        #expect(failed.map(\.timeNs) == [1_239_334_236 + 1_000_000_000])
        #expect(failed.first?.fields["code"] == .int(7012))
        // The reply still comes, late, and is discarded (and acknowledged).
        let late = try #require(events(outcome, "late_reply_discarded").first { $0.fields["id"] == .int(1) })
        #expect(late.timeNs == 1_282_998_212 + 1_500_000_000)
        #expect(!outcome.trace.contains { $0.event == "did_receive_reply" })
    }

    @Test func aReplyHeldUpOnTheWatchsReplyLaneHoldsUpTheNextReply() throws {
        // The watch sends one reply at a time: the reply to message 2 waits for the one to message 1.
        var options = try ReplayOptions.builtIn("session.settings.message_reply_timeout_ms=1s")
        options.faults = [try Fault(parsing: "delay:frame=82:by=1500ms")]
        let outcome = try replaySet(at: MessagingReplayTests.captures.appendingPathComponent("session-clean").path, options: options)
        #expect(events(outcome, "late_reply_discarded").map { $0.fields["id"] } == [.int(1), .int(2)])
        #expect(events(outcome, "message_failed").map { $0.fields["code"] } == [.int(7012), .int(7012)])
    }

    @Test func aLinkDropWithUserInfosQueuedDeliversEachOnceInOrderAfterTheReconnect() throws {
        let outcome = try replay("session-complication-budget", faults: ["disconnect:at=1.5s:reconnect=1s"])
        let made = events(outcome, "responder_made")
        // The reconnection's HELLO has a nonce the capture never saw: the WELCOME is made.
        #expect(made.map { $0.fields["what"] } == [.string("welcome")])
        #expect(made.first?.timeNs ?? 0 > 2_500_000_000)
        let finished = events(outcome, "user_info_transfer_did_finish")
        let complications = finished.compactMap { event -> Int64? in
            guard case .int(let id)? = event.fields["id"], id <= 50 else { return nil }
            return id
        }
        #expect(complications == Array(1...50))
        #expect(finished.count == 52 && Set(finished.map { $0.fields["id"] }).count == 52)
        // The one in flight at the drop finished by the WELCOME's watermark, once, after the reconnect.
        let inFlight = try #require(finished.first { $0.timeNs > 1_500_000_000 })
        #expect(inFlight.timeNs == made.first?.timeNs)
        #expect(!finished.contains { $0.timeNs > 1_500_000_000 && $0.timeNs < 2_500_000_000 })
    }

    @Test func aFileResumesAfterTheReconnectionWhereTheWatchHoldsIt() throws {
        let outcome = try replay("session-file-resume", faults: ["disconnect:at=3.5s:reconnect=500ms"])
        // The reconnection's WELCOME is made, naming the file and the bytes the watch holds.
        let made = events(outcome, "responder_made")
        #expect(made.map { $0.fields["what"] } == [.string("welcome")])
        let welcome = try #require(made.first)
        guard case .string(let text)? = welcome.fields["frame"], let resume = text.split(separator: " ").last,
              resume.hasPrefix("1@"), let offset = Int64(resume.dropFirst(2)) else {
            Issue.record("the made WELCOME names no resume of file 1: \(welcome.fields)")
            return
        }
        let progress = events(outcome, "file_transfer_progress").compactMap { event -> (Int64, Int64)? in
            guard case .int(let done)? = event.fields["completed"] else { return nil }
            return (event.timeNs, done)
        }
        // The transfer goes on from there: the first progress after the reconnection is the resume
        // offset, which is past what was acknowledged before the drop; progress never goes back.
        let before = try #require(progress.last { $0.0 < 3_500_000_000 })
        let after = try #require(progress.first { $0.0 >= welcome.timeNs })
        #expect(after.1 == offset && offset > before.1)
        #expect(zip(progress, progress.dropFirst()).allSatisfy { $0.1 <= $1.1 })
        let finished = events(outcome, "file_transfer_did_finish")
        #expect(finished.count == 1 && finished.first?.fields["code"] == .null)
    }

    @Test func thePeersLostFrameIsResentOnItsRetransmissionTimer() throws {
        // Replaying the watch: frame 77 is the phone's context; the peer's timer is the link's (1 s here).
        var options = try ReplayOptions.builtIn("session.settings.retransmission_timeout_ms=1s")
        options.faults = [try Fault(parsing: "drop:frame=77")]
        let outcome = try replaySet(at: MessagingReplayTests.captures.appendingPathComponent("session-clean-watch").path, options: options)
        let made = try #require(events(outcome, "responder_made").first)
        #expect(made.fields["what"] == .string("retransmission"))
        #expect(made.fields["frame"] == .string("context #1 first|last|needs-ack|retransmission total 61, 61 bytes"))
        #expect(made.timeNs == 3_174_329_528 + 1_000_000_000)
        #expect(events(outcome, "did_receive_application_context").map(\.timeNs) == [made.timeNs])
    }

    @Test func aDroppedFileChunkIsResentFromTheAcknowledgedOffsetAndTheFileArrivesOnce() throws {
        // Replaying the phone: frame 85 is one of the watch's chunks of file 1 (60000 bytes). The
        // phone keeps the chunks after the gap and acknowledges what it holds; the watch resends
        // from there on its timer and opens the window again at each ACK.
        let plain = try replay("session-concurrent", frameMatching: .responder)
        let outcome = try replay("session-concurrent", faults: ["drop:frame=85"])
        let files = events(outcome, "did_receive_file")
        #expect(files.map { $0.fields["file"] } == events(plain, "did_receive_file").map { $0.fields["file"] })
        #expect(files.map { $0.fields["file"] } == [.int(1)])
        let resent = events(outcome, "responder_made").filter { $0.fields["what"] == .string("retransmission") }
        #expect(!resent.isEmpty)
        #expect(resent.allSatisfy {
            guard case .string(let frame)? = $0.fields["frame"] else { return false }
            return frame.hasPrefix("file-chunk #1 ") && frame.contains("retransmission")
        })
        let firstResend = try #require(resent.first)
        #expect(try #require(files.first).timeNs >= firstResend.timeNs)
    }

    @Test func aUserInfoOfThePhoneThatIsDroppedArrivesOnceAndInOrderOnTheWatch() throws {
        // Replaying the watch: frame 77 is the phone's user info #1. The phone sends #2 only once
        // #1 is acknowledged complete, so #2 is held back until #1 is resent and taken.
        let plain = try replay("session-user-info-kill9", frameMatching: .responder)
        let outcome = try replay("session-user-info-kill9", faults: ["drop:frame=77"])
        let ids = events(outcome, "did_receive_user_info").map { $0.fields["id"] }
        #expect(ids == (1...8).map { .int($0) })
        #expect(ids == events(plain, "did_receive_user_info").map { $0.fields["id"] })
        let held = try #require(events(outcome, "responder_made").first { $0.fields["what"] == .string("held_back") })
        #expect(held.fields["frame"] == .string("user-info #2 first|last|needs-ack total 35, 35 bytes"))
        #expect(!outcome.trace.contains { $0.event == "violation" && $0.fields["kind"] == .string("duplicate-frame") })
    }

    @Test func aCompactFrameLostAtMTU23IsResentWholeAndTheRestOfTheSessionStillCompletes() throws {
        // Replaying the phone of a compact link at ATT MTU 23: frame 86 is a compact piece of the
        // watch's user info #1. The link drops before the watch's timer runs out; after the new
        // binding the watch sends #1 again, whole frames from its start. The file the phone was
        // asked to send while the link was down reached the watch not at all, so the WELCOME the
        // watch answers with says it holds nothing of it (not the 4,618 bytes of the recording),
        // and the file goes from its start over compact frames the responder reads.
        let outcome = try replay("session-compact-mtu23", faults: ["drop:frame=86"])
        #expect(events(outcome, "did_receive_user_info").count == 1)
        let made = events(outcome, "responder_made")
        let resent = made.filter { $0.fields["what"] == .string("restart_after_binding") }
        #expect(resent.count == 7)
        #expect(resent.allSatisfy {
            guard case .string(let frame)? = $0.fields["frame"] else { return false }
            return frame.hasPrefix("user-info #1 ")
        })
        #expect(made.contains { $0.fields["what"] == .string("welcome_resume") })
        let progress = events(outcome, "file_transfer_progress").compactMap { event -> Int64? in
            guard case .int(let done)? = event.fields["completed"] else { return nil }
            return done
        }
        #expect(progress.first == 0 && progress.last == 24_000)
        #expect(events(outcome, "file_transfer_did_finish").map { $0.fields["code"] } == [.null])
        #expect(events(outcome, "did_receive_reply").count == 1)
        #expect(events(outcome, "violation").isEmpty)
    }

    @Test func aRecordedFrameWhoseAnswerWentDownWithTheLinkGetsNoMadeAnswer() throws {
        // session-compact-mtu23's phone wrote chunks up to 4,618 bytes just before the watch fell
        // silent and the link dropped; the capture holds no ACK of them. Without faults the
        // responder makes none either, so the phone sends nothing the recorded one did not.
        let outcome = try replay("session-compact-mtu23", frameMatching: .responder)
        #expect(events(outcome, "responder_made").isEmpty)
        #expect(try summary(outcome, core: "session")["frames_unsent"] == .int(0))
    }

    @Test func theCoresCompactFramesAreReadWithTheContextOfWhatItSent() throws {
        // Replaying the watch of a compact link: its user info #1 goes out FIRST whole, the rest
        // compact. The peer's receiving side completes them and owes the ACK of the whole item.
        var responder = SessionResponder(prescan: SessionCapturePrescan(), role: .watch)
        responder.linkCameUp(nowNs: 0, maxPayload: 20)
        var frames = SessionFrame.fragment(channel: .userInfo, id: 1, payload: (0..<40).map { UInt8($0) }, maxFrameLength: 20)
        frames[frames.count - 1].flags.insert(.needsAck)
        var sent = SessionFrameContext()
        let written = frames.map { sent.encode($0) }
        #expect(written.dropFirst().allSatisfy { $0[0] & SessionLink.compactMarker != 0 })
        for bytes in written { responder.coreWrote(bytes, nowNs: 1_000_000) }
        let due = try #require(responder.nextDueNs)
        let popped = responder.popDue(nowNs: due)
        let delivery = try #require(popped)
        #expect(delivery.made == "ack")
        let ack = try SessionFrame.decode(try #require(delivery.bytes))
        #expect(try SessionControl.decode(ack.bytes) == .ack(channel: .userInfo, id: 1, received: SessionLink.complete))
    }

    @Test(arguments: [(nil, nil, 8), (4, 4, 4), (16, 6, 6), (4, nil, 8)] as [(UInt16?, UInt16?, Int)])
    func aResendGoesFromTheAcknowledgedOffsetAcrossTheNegotiatedWindow(hello: UInt16?, welcome: UInt16?, window: Int) throws {
        let phone = try #require(SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001"))
        let watch = try #require(SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1"))
        func control(_ item: SessionControl, id: UInt32) -> [UInt8] {
            let payload = item.encode()
            return SessionFrame(channel: .control, flags: [.first, .last], id: id, totalOrOffset: UInt32(payload.count), bytes: payload).encode()
        }
        var prescan = SessionCapturePrescan()
        let helloItem = SessionHandshake(identity: phone, incarnation: 1, epoch: 2, nonce: 7, status: [.paired, .appInstalled], window: hello)
        prescan.frames.append(.init(frame: 1, timeNs: 0, fromPhone: true, bytes: control(.hello(helloItem), id: 1)))
        let welcomeItem = SessionHandshake(identity: watch, incarnation: 3, epoch: 4, nonce: 7, status: [.paired, .appInstalled], window: welcome)
        prescan.frames.append(.init(frame: 2, timeNs: 10_000_000, fromPhone: false, bytes: control(.welcome(welcomeItem), id: 1)))
        // The watch's user info #1: 20 frames of 10 bytes; every frame after the second lost.
        var frames = SessionFrame.fragment(channel: .userInfo, id: 1, payload: (0..<200).map { UInt8($0) }, maxFrameLength: 20)
        frames[19].flags.insert(.needsAck)
        for (index, frame) in frames.enumerated() {
            prescan.frames.append(.init(frame: 10 + index, timeNs: 20_000_000 + Int64(index) * 1_000_000, fromPhone: false, bytes: frame.encode()))
        }
        let faults = PeerFrameFaults([try Fault(parsing: "drop:frames=12-29")])
        var responder = SessionResponder(prescan: prescan, role: .phone, faults: faults, retransmissionTimeout: .seconds(2))
        responder.linkCameUp(nowNs: 0)
        // The core acknowledges the 20 bytes it got, at 25 ms.
        let ack = SessionControl.ack(channel: .userInfo, id: 1, received: 20).encode()
        responder.coreWrote(SessionFrame(channel: .control, flags: [.first, .last], id: 2, totalOrOffset: UInt32(ack.count), bytes: ack).encode(), nowNs: 25_000_000)
        let firstDue = responder.nextDueNs
        #expect(firstDue == Int64(2_025_000_000), "\(String(describing: firstDue))")
        var resent: [SessionFrame] = []
        while let delivery = responder.popDue(nowNs: 2_025_000_000) {
            #expect(delivery.made == "retransmission")
            resent.append(try SessionFrame.decode(try #require(delivery.bytes)))
        }
        let offsets: [UInt32] = (0..<window).map { UInt32(20 + 10 * $0) }
        let needsAck: [Bool] = (0..<window).map { $0 == window - 1 }
        #expect(resent.map(\.offset) == offsets)
        #expect(resent.allSatisfy { $0.flags.contains(.retransmission) })
        #expect(resent.map { $0.flags.contains(.needsAck) } == needsAck)
        let nextDue = responder.nextDueNs
        #expect(nextDue == Int64(4_025_000_000), "\(String(describing: nextDue))")
    }

    @Test(arguments: [("session-complication-budget", "disconnect:at=1.5s:reconnect=1s"), ("session-clean", "delay:frame=82:by=1500ms"),
                      ("widget-broker-drop", "disconnect:at=1s"), ("session-clean-watch", "drop:frame=77")])
    func aFaultRunWithTheResponderIsDeterministic(_ name: String, _ fault: String) throws {
        let first = try replay(name, faults: [fault])
        let second = try replay(name, faults: [fault])
        #expect(first.trace.contains { $0.event == "fault_injected" })
        #expect(TraceFile.encode(first.trace) == TraceFile.encode(second.trace))
    }

    // MARK: widget under faults

    @Test func theBrokerResettingMidRefreshGivesAResubscribeAReReadAndOneRefreshResult() throws {
        // The refresh starts at 46 ms; two property reads are on their way when the broker resets.
        let outcome = try replay("widget-property-change", faults: ["disconnect:at=51ms"])
        let states = events(outcome, "connection_state_changed", core: "widget").filter { $0.timeNs >= 51_000_000 }
        #expect(states.map { $0.fields["state"] } == [.string("waiting_to_reconnect"), .string("connecting"), .string("subscribing"),
                                                        .string("connected"), .string("stopped")])
        #expect(events(outcome, "mqtt_subscribe", core: "widget").count == 2)
        #expect(events(outcome, "refresh_completed", core: "widget").count == 1)
        let reread = try #require(events(outcome, "request_issued", core: "widget").first { $0.fields["origin"] == .string("reconnect") })
        #expect(events(outcome, "request_succeeded", core: "widget").contains { $0.fields["id"] == reread.fields["id"] })
        // The capture holds one connection: the reconnection's CONNACK and SUBACK are made.
        #expect(events(outcome, "responder_made", core: "widget").prefix(2).map { $0.fields["what"] } == [.string("connack"), .string("suback")])
    }

    @Test func aSecondBrokerResetAfterTheRecordedReconnectionIsRecoveredFromWithMadeAnswers() throws {
        // The recorded broker restart drops the widget at 0.448 s and it reconnects at 1.448 s; the
        // fault resets that second connection at 1.5 s, which the capture never saw.
        let outcome = try replay("widget-broker-drop", faults: ["disconnect:at=1500ms"])
        #expect(events(outcome, "mqtt_subscribe", core: "widget").count == 3)
        let again = events(outcome, "request_issued", core: "widget").filter { $0.timeNs > 1_500_000_000 }
        #expect(!again.isEmpty)
        let answered = Set(events(outcome, "request_succeeded", core: "widget").compactMap { $0.fields["id"] })
        #expect(again.allSatisfy { answered.contains($0.fields["id"] ?? .null) }, "every re-read after the second reconnection is answered")
        #expect(events(outcome, "request_failed", core: "widget").isEmpty)
        #expect(events(outcome, "responder_made", core: "widget").map { $0.fields["what"] }.prefix(2) == [.string("connack"), .string("suback")])
    }

    @Test func aLostCloudResponseLeavesTheRequestToTheCoresTimeout() throws {
        // The refresh's answers are captured responses: dropping the device list's frame loses it.
        let strict = try replay("widget-property-change", frameMatching: .responder)
        let list = try #require(events(strict, "request_issued", core: "widget").first)
        let frame = try #require(try responseFrame(of: list, in: "widget-property-change"))
        #expect(frame == 59, "tether inspect --frames shows the broker's PUBLISH of the response as frame 59")
        let outcome = try replay("widget-property-change", faults: ["drop:frame=\(frame)"])
        #expect(!events(outcome, "request_succeeded", core: "widget").contains { $0.fields["id"] == list.fields["id"] },
                "\(list.fields) answered although frame \(frame) was dropped")
        // No answer: the refresh runs out of its 3 s budget, once.
        let started = try #require(events(outcome, "refresh_started", core: "widget").first)
        let results = events(outcome, "refresh_completed", core: "widget")
        #expect(results.map { $0.fields["result"] } == [.string("overrun")])
        #expect(results.map(\.timeNs) == [started.timeNs + 3_000_000_000])
    }

    /// The frame of the broker's PUBLISH answering `request` in the set's capture.
    func responseFrame(of request: TraceEvent, in name: String) throws -> Int? {
        guard case .string(let id)? = request.fields["id"] else { return nil }
        let set = try CaptureSetDirectory.load(MessagingReplayTests.captures.appendingPathComponent(name).path)
        let prescan = try WidgetCapturePrescan.scan(capturePath: set.capturePath, interfaces: set.manifest.interfaces)
        return prescan.packets.first { packet in
            guard !packet.fromClient, packet.topic == "tether/demo/api/response/widget-demo", case .publish(let publish) = packet.body else { return false }
            return WidgetResponder.field("id", in: publish.payload) == id
        }?.frame
    }
}
