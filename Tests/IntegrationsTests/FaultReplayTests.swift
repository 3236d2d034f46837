import BehaviourTrace
import CaptureSet
import Foundation
import ReplayKit
import Testing
import TetherIntegrations

/// Faults applied to committed capture sets, and sweeps over them (docs/faults.md).
struct FaultReplayTests {
    static let captures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Captures").path

    func replay(_ set: String, _ faults: String...) throws -> ReplayOutcome {
        var options = ReplayOptions.builtInDefaults
        options.faults = try faults.map { try Fault(parsing: $0) }
        return try ReplayKit.replaySet(at: "\(Self.captures)/\(set)", options: options)
    }

    func events(_ outcome: ReplayOutcome, _ event: TraceName, core: TraceName? = nil) -> [TraceEvent] {
        outcome.trace.filter { $0.event == event && (core == nil || $0.core == core) }
    }

    @Test func theSameFaultsAndSeedGiveAByteIdenticalTrace() throws {
        let faults = ["drop:p=0.1:seed=7", "jitter:max=40ms:seed=3", "reorder:window=3:seed=5", "duplicate:frame=87"]
        let first = try replay("ciq-clean", faults[0], faults[1], faults[2], faults[3])
        let second = try replay("ciq-clean", faults[0], faults[1], faults[2], faults[3])
        #expect(TraceFile.encodeBytes(first.trace) == TraceFile.encodeBytes(second.trace))
        #expect(first.summary.faultsApplied > 0)
    }

    @Test func aPeerChunkPastTheWindowALateChunkKeptClosedWaitsForTheCoresAck() throws {
        // session-concurrent's first file chunk (frame 80) 49 ms late: the core acknowledges later
        // than recorded, and the recorded watch's next chunks, sent when the recorded ACK had come,
        // would reach it past its window and be refused, the file never arriving. A real watch
        // waits for the ACK; the responder holds them back as it would. (Found by
        // `--sweep delay=3s --search random:60:seed=11`, shrunk to this one late frame.)
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/session-concurrent")
        let result = try FaultSweep.run(loaded, kind: .delay(.milliseconds(49)), options: .builtInDefaults, only: [80])
        #expect(result.variants.count == 1)
        #expect(result.failed == 0, "\(result.variants.flatMap(\.broken))")
    }

    @Test func aDroppedWindowAckIsLostToTheResponderAndTheSendWaitsForIt() throws {
        let outcome = try replay("ciq-clean", "drop:frame=192")
        #expect(events(outcome, "fault_injected").map { $0.field("frame") } == [.int(192)])
        let completion = try #require(events(outcome, "completion").first { $0.field("send") == .int(2) })
        #expect(completion.field("result") == .string("Failure_DeviceNotAvailable"))
        let progress = events(outcome, "progress").filter { $0.field("send") == .int(2) }.compactMap { $0.field("sent") }
        #expect(progress.last == .int(570))
    }

    @Test func anInjectedDisconnectFailsTheSendAtThatInstantAndTheLinkComesBack() throws {
        let outcome = try replay("ciq-clean", "disconnect:at=1s:reconnect=200ms")
        let completion = try #require(events(outcome, "completion").first { $0.field("send") == .int(2) })
        #expect(completion.field("result") == .string("Failure_DeviceNotAvailable"))
        #expect(completion.timeNs == 1_000_000_000)
        let statuses = events(outcome, "device_status").map { ($0.timeNs, $0.field("status")) }
        #expect(statuses.contains { $0.0 == 1_200_000_000 && $0.1 == .string("Connected") })
        #expect(events(outcome, "open_app").first?.field("result") == .string("Success"))
    }

    @Test func aLinkDroppedDuringItsOwnSetupIsSetUpWholeWhenItComesBack() throws {
        // The watch-side capture's connection comes up at 2.736 s; the fault drops it at the MTU
        // exchange, 36 ms later, before discovery and the phone's HELLO.
        let outcome = try replay("session-clean-watch", "disconnect:at=2772360423ns:reconnect=1s")
        let reconnected = try #require(events(outcome, "fault_injected").first { $0.field("action") == .string("reconnected") })
        #expect(reconnected.timeNs == 3_772_360_423)
        #expect(events(outcome, "handshake_completed").contains { $0.timeNs >= reconnected.timeNs })
        #expect(events(outcome, "did_receive_user_info").map { $0.field("id") } == [.int(1)])
    }

    @Test func aBrokerResetReachesTheWidgetAsTheEndOfItsConnection() throws {
        let outcome = try replay("widget-broker-drop", "disconnect:at=2s")
        let reset = try #require(events(outcome, "fault_injected").first)
        #expect(reset.field("action") == .string("disconnected"))
        #expect(reset.timeNs == 2_000_000_000)
        #expect(events(outcome, "connection_state_changed").contains { $0.timeNs == reset.timeNs && $0.field("state") == .string("waiting_to_reconnect") })
    }

    @Test func aDelayedDatagramArrivesLateAndKeepsItsPoints() throws {
        let plain = try replay("plugin-clean")
        let late = try replay("plugin-clean", "delay:frame=50:by=2s")
        #expect(events(late, "datapoint").count == events(plain, "datapoint").count)
        let fault = try #require(events(late, "fault_injected").first)
        #expect(fault.field("delay_ns") == .int(2_000_000_000))
        let delivered = events(late, "datapoint").filter { $0.timeNs == fault.timeNs + 2_000_000_000 }
        #expect(delivered.count == 6)
    }

    @Test func aReorderedBlockReachesTheCoreInAnotherOrderWithNothingLost() throws {
        let plain = try replay("plugin-clean")
        let shuffled = try replay("plugin-clean", "reorder:window=3:seed=5")
        let times = { (outcome: ReplayOutcome) in self.events(outcome, "datapoint").compactMap { $0.field("time_ns") } }
        #expect(times(shuffled) != times(plain))
        #expect(Set(times(shuffled).map { "\($0)" }) == Set(times(plain).map { "\($0)" }))
        #expect(events(shuffled, "fault_injected").allSatisfy { $0.field("action") == .string("held") })
    }

    @Test func aRefusedSubscriptionKeepsTheWatchFromConnecting() throws {
        let outcome = try replay("ciq-clean", "att-error:kind=write-response")
        let fault = try #require(events(outcome, "fault_injected").first)
        #expect(fault.field("action") == .string("att_error"))
        #expect(!events(outcome, "device_status").contains { $0.field("status") == .string("Connected") })
        #expect(events(outcome, "completion").allSatisfy { $0.field("result") == .string("Failure_DeviceNotAvailable") })
    }

    @Test func everyCommittedScenarioPassesItsExpectations() throws {
        var checked = 0
        for set in try CaptureSetDirectory.findSets(under: Self.captures) {
            let loaded = try CaptureSetDirectory.load(set)
            for (index, scenario) in loaded.manifest.scenarios.enumerated() {
                let options = try FaultScenarios.options(.builtInDefaults, for: scenario, index: index, manifestPath: set, line: nil)
                let run = try replayAndCheck(FaultScenarios.set(loaded, for: scenario), options: options)
                let (outcome, errors) = run.outcome()
                #expect(errors.isEmpty, "\(set) / \(scenario.name): \(errors)")
                #expect(outcome.passed, "\(set) / \(scenario.name): \(outcome.expectations.filter { !$0.passed }.map(\.message))")
                checked += 1
            }
        }
        #expect(checked >= 13)
    }

    @Test func aDropSweepOfTheCleanConnectIQSessionKeepsEveryPromise() throws {
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/ciq-clean")
        let result = try FaultSweep.run(loaded, kind: .drop, options: .builtInDefaults)
        // The watch's 132 notifications: its other 8 peer frames are ATT responses of discovery
        // and subscription, which a drop sweep leaves to `disconnect` (docs/faults.md).
        #expect(result.variants.count == 132)
        #expect(result.failed == 0, "\(result.variants.filter { !$0.passed }.prefix(3).map { "\($0.fault): \($0.broken)" })")
        #expect(result.promises.contains("messaging: every send completes exactly once"))
    }

    @Test(arguments: ["session-clean", "session-clean-watch", "session-user-info-kill9", "session-watch-switch",
                      "session-reply-timeout", "session-unreachable"])
    func everySingleFaultSweepOfASessionSetKeepsEveryPromise(set: String) throws {
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/\(set)")
        for kind in [SweepKind.drop, .delay(.seconds(6)), .disconnect(reconnectAfter: .seconds(1))] {
            let result = try FaultSweep.run(loaded, kind: kind, options: .builtInDefaults)
            #expect(!result.variants.isEmpty)
            #expect(result.failed == 0, "\(set) \(kind): \(result.variants.filter { !$0.passed }.prefix(3).map { "\($0.fault): \($0.broken)" })")
        }
    }

    @Test func aSweepHoldsTheRecordedEndBackInTheRunWithoutFaultsAndInEveryVariant() throws {
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/session-clean")
        let held = try FaultSweep.run(loaded, kind: .drop, options: .builtInDefaults)
        let end = try Fault(parsing: "delay:frame=105:kind=disconnection:by=10s")
        #expect(held.heldEnding == [end])
        #expect(held.variants.allSatisfy { $0.faults == [$0.fault, end] })
        // Ended as recorded, the lost WELCOME (frame 65) is judged before the phone's 3 s HELLO
        // timer could repair it.
        let asRecorded = try FaultSweep.run(loaded, kind: .drop, options: .builtInDefaults, only: [65], settle: .zero)
        #expect(asRecorded.heldEnding.isEmpty)
        #expect(asRecorded.failed == 1)
        #expect(held.variants.first { $0.frame == 65 }?.passed == true)
    }

    @Test func aLostPhoneHelloIsSentAgainOnThePhonesHandshakeTimer() throws {
        // session-clean-watch replays the watch; frame 70 is the phone's HELLO.
        let outcome = try replay("session-clean-watch", "drop:frame=70", "delay:frame=109:kind=disconnection:by=10s")
        let lost = try #require(events(outcome, "fault_injected").first { $0.field("frame") == .int(70) })
        let resent = try #require(events(outcome, "responder_made").first { $0.field("what") == .string("hello_resent") })
        #expect(resent.timeNs == lost.timeNs + 3_000_000_000)
        #expect(events(outcome, "handshake_completed").contains { $0.timeNs >= resent.timeNs })
        #expect(events(outcome, "did_receive_user_info").map { $0.field("id") } == [.int(1)])
    }

    @Test func aReconnectionInAWatchSwitchIsAnsweredAsTheWatchOfThatMoment() throws {
        // The link to watch B drops as its WELCOME arrives and comes back a second later.
        let outcome = try replay("session-watch-switch", "disconnect:at=1599150508ns:reconnect=1s", "delay:frame=146:kind=disconnection:by=10s")
        #expect(!events(outcome, "violation").contains { $0.field("kind") == .string("wrong-peer") })
        #expect(events(outcome, "user_info_transfer_did_finish").contains { $0.field("id") == .int(2) })
    }

    @Test func aFileHeldBackWhileTheLinkWasDownIsSentWholeWindowByWindow() throws {
        // The link drops at 1.014 s, with the watch's 60 KB file about to start, for a second.
        let outcome = try replay("session-concurrent", "disconnect:at=1014383357ns:reconnect=1s")
        #expect(events(outcome, "did_receive_file").count == 1)
    }

    @Test func anMTUFaultMakesThePhoneWriteFramesThatFitTheStatedMTU() throws {
        let outcome = try replay("session-clean", "mtu:size=23")
        let fault = try #require(events(outcome, "fault_injected").first)
        #expect(fault.field("action") == .string("mtu_changed"))
        #expect(fault.field("recorded_mtu") == .int(247))
        let written = events(outcome, "frame_emitted").compactMap { event -> Int? in
            if case .string(let hex)? = event.field("bytes") { return hex.count / 2 }
            return nil
        }
        #expect(!written.isEmpty)
        #expect(written.allSatisfy { $0 <= 20 }, "\(written.max() ?? 0) bytes")
        #expect(events(outcome, "user_info_transfer_did_finish").count == 1)
    }

    @Test func aSweepReportsTheSameVariantsWhateverItsParallelism() throws {
        let loaded = try CaptureSetDirectory.load("\(Self.captures)/session-clean")
        let one = try FaultSweep.run(loaded, kind: .delay(.seconds(6)), options: .builtInDefaults, parallelism: 1)
        let two = try FaultSweep.run(loaded, kind: .delay(.seconds(6)), options: .builtInDefaults, parallelism: 2)
        #expect(one.variants == two.variants)
    }
}

/// The promise checker on hand-made traces: each rule catches what it is for.
struct PromiseCheckerTests {
    let send = TraceCorrelation("send → completion", start: .init("api_call", where: "call", is: "send"), ends: [.init("completion")], key: "send",
                                progress: .init(event: "progress", done: "sent", total: "total"))

    func event(_ t: Int64, _ name: TraceName, _ fields: [String: TraceValue]) -> TraceEvent {
        TraceEvent(timeNs: t, core: "messaging", event: name, fields: fields)
    }

    func check(_ rule: CorePromise.Rule, _ events: [TraceEvent], plain: [TraceEvent]? = nil) -> [BrokenPromise] {
        let promises = [(core: TraceName("messaging"), promise: CorePromise("p", rule))]
        var facts: PlainRunFacts?
        if let plain {
            var recorder = PromiseChecker(promises: promises, correlations: ["messaging": [send]], plain: nil)
            for e in plain { recorder.observe(e) }
            facts = recorder.facts()
        }
        var checker = PromiseChecker(promises: promises, correlations: ["messaging": [send]], plain: facts ?? PlainRunFacts())
        for e in events { checker.observe(e) }
        return checker.verdict()
    }

    @Test func aSendCompletedTwiceOrNeverBreaksExactlyOneEnd() {
        let start = event(1, "api_call", ["call": .string("send"), "send": .int(1)])
        let end = event(2, "completion", ["send": .int(1), "result": .string("Success")])
        #expect(check(.exactlyOneEnd(correlation: "send → completion"), [start, end]).isEmpty)
        #expect(check(.exactlyOneEnd(correlation: "send → completion"), [start, end, end]).first?.detail.contains("ended twice") == true)
        #expect(check(.exactlyOneEnd(correlation: "send → completion"), [start]).first?.detail.contains("never ended") == true)
    }

    @Test func aRequestLeftWaitingByAnExcusingEventKeepsExactlyOneEnd() {
        let start = event(1, "api_call", ["call": .string("send"), "send": .int(1)])
        let switched = event(2, "session_did_become_inactive", [:])
        let rule = CorePromise.Rule.exactlyOneEnd(correlation: "send → completion", unlessAfter: ["session_did_become_inactive"])
        #expect(check(rule, [start, switched]).isEmpty)
        // The excuse covers only what was under way when it came.
        #expect(check(rule, [switched, start]).first?.detail.contains("never ended") == true)
    }

    @Test func progressGoingBackBreaksItsPromise() {
        let events = [event(1, "progress", ["send": .int(1), "sent": .int(100)]), event(2, "progress", ["send": .int(1), "sent": .int(40)])]
        #expect(check(.progressNeverGoesBack(correlation: "send → completion"), events).count == 1)
    }

    @Test func itemsOutOfOrderOrTwiceBreakExactlyOnceInOrder() {
        let plain = [event(1, "item", ["id": .int(1)]), event(2, "item", ["id": .int(2)])]
        #expect(check(.exactlyOnceInOrder(event: "item", key: "id"), plain, plain: plain).isEmpty)
        #expect(check(.exactlyOnceInOrder(event: "item", key: "id"), plain.reversed(), plain: plain).count == 1)
        #expect(check(.exactlyOnceInOrder(event: "item", key: "id"), plain + [plain[1]], plain: plain).count == 1)
    }

    @Test func anInventedPointBreaksPreservationButADroppedFramesPointDoesNot() {
        let a = event(1, "datapoint", ["name": .string("x"), "value": .int(1)])
        let b = event(2, "datapoint", ["name": .string("x"), "value": .int(2)])
        let rule = CorePromise.Rule.preservedExceptDropped(event: "datapoint", identity: ["name", "value"])
        #expect(check(rule, [a, b], plain: [a, b]).isEmpty)
        #expect(check(rule, [a, b, event(3, "datapoint", ["name": .string("x"), "value": .int(9)])], plain: [a, b]).first?.detail.contains("never made") == true)
        #expect(check(rule, [a], plain: [a, b]).first?.detail.contains("missing") == true)
    }
}
