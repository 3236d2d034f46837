import BehaviourTrace
import Foundation
import Synchronization
import Testing
import TetherConnectIQ
import TetherLive
import TetherTestSupport
import TetherTesting

/// The app's own Connect IQ code against a watch on Bumble, through `LiveSession` (the facade bound
/// to the live host), recorded by the H4 tap; then the same code replayed on the new recording by
/// `ReplaySession`. The app must get the same callbacks in both, and the two traces must be equal
/// as `tether diff` compares them (50 ms timing tolerance; frame matching and summaries exist in
/// replay only).
@Suite(.serialized) struct LiveAppInTheLoopTests {
    @Test func recordingWithTheAppInTheLoopThenReplayingItGivesTheSameCallbacks() throws {
        let python = try Tools.pythonWithBumble()
        let folder = try TemporaryFolder("app-in-the-loop")
        let rigs = Tools.repositoryRoot.appendingPathComponent("Harness/rigs")
        let (controllers, ports) = try LiveMessagingEndToEndTests.twoControllers(in: folder)
        defer { controllers.stop() }
        let (watch, _) = try LiveMessagingEndToEndTests.rig(
            python, [rigs.appendingPathComponent("ciq_watch.py").path, "--hci", "tcp-client:127.0.0.1:\(ports[0])",
                     "--address", "F0:F0:F0:F0:F0:F0", "--app", "\(LiveMessagingEndToEndTests.echo):echo", "--no-large-packets"],
            in: folder, name: "watch")
        defer { watch.stop() }

        let set = folder.path("ciq-app-live").path
        let live = LiveSession(connectIQ: "tcp-client:127.0.0.1:\(ports[1])", watch: .init(address: "F0:F0:F0:F0:F0:F0"),
                               recordingTo: set, bridgeScript: rigs.appendingPathComponent("ciq_phone_bridge.py").path,
                               bridgeLog: folder.path("bridge.log").path)
        live.makeCurrent()
        let liveApp = WorkoutSender()
        liveApp.start(url: URL(string: live.deviceSelectionURL)!)
        // App code that sleeps, on the session's executor: it wakes on the host's thread, the one
        // inside run, as callbacks do (and as it does in the replay below).
        let liveTick = Mutex<UInt?>(nil)
        Task(executorPreference: live.taskExecutor) { [clock = live.clock] in
            try await clock.sleep(for: .milliseconds(200))
            liveTick.withLock { $0 = UInt(pthread_self()) }
        }
        let testThread = UInt(pthread_self())
        try live.run(for: .seconds(30), until: { liveApp.openResult != nil })
        #expect(liveTick.withLock { $0 } == testThread, "the task woke on another thread than the host's")
        #expect(liveApp.results == [.success])
        #expect(liveApp.openResult == .success)
        #expect(live.recording != nil)

        let replay = try ReplaySession(replaying: set)
        replay.makeCurrent()
        let replayedApp = WorkoutSender()
        replayedApp.start(url: URL(string: try #require(replay.deviceSelectionURL))!)
        let replayedTick = Mutex<UInt?>(nil)
        Task(executorPreference: replay.taskExecutor) { [clock = replay.clock] in
            try await clock.sleep(for: .milliseconds(200))
            replayedTick.withLock { $0 = UInt(pthread_self()) }
        }
        try replay.run()
        #expect(replayedTick.withLock { $0 } == testThread)
        #expect(replayedApp.results == liveApp.results)
        #expect(replayedApp.openResult == liveApp.openResult)
        #expect(replayedApp.received.count == liveApp.received.count)
        #expect(replay.warnings.isEmpty, "\(replay.report)")

        let replayOnly: Set<TraceName> = ["frame_matched", "frame_diverged", "summary"]
        let liveEvents = live.trace.filter { !replayOnly.contains($0.event) }
        let replayedEvents = replay.trace.filter { !replayOnly.contains($0.event) }
        #expect(liveEvents.contains { $0.core == "app" && $0.event == "callback" })
        let report = TraceDiff.compare(liveEvents, replayedEvents, timingToleranceNs: 50_000_000)
        #expect(report.isEmpty, "\(report.render(maxLines: 40))\nLIVE\n\(TraceFile.encode(liveEvents))\nREPLAY\n\(TraceFile.encode(replayedEvents))")
    }
}

/// The same for WatchConnectivity: the phone app's own code through `LiveSession` against a watch
/// that is a `tether live session --role watch` host on Bumble (the watch of
/// `Harness/scenarios/session/clean.watch.yaml`: it echoes every message and answers the phone's
/// context with its own), recorded, then replayed with the same code.
@Suite(.serialized) struct LiveWatchConnectivityInTheLoopTests {
    static let phone = UUID(uuidString: "0FF1CE00-0000-4000-8000-000000000001")!
    static let watch = UUID(uuidString: "0FF1CE00-0000-4000-8000-0000000000A1")!

    @Test func recordingTheWatchConnectivityAppThenReplayingItGivesTheSameCallbacks() throws {
        let folder = try TemporaryFolder("wc-in-the-loop")
        let (controllers, ports) = try LiveMessagingEndToEndTests.twoControllers(in: folder)
        defer { controllers.stop() }
        let watchHost = try BackgroundProcess(try Tools.tetherBinary(), [
            "live", "session", "--role", "watch", "--hci", "tcp-client:127.0.0.1:\(ports[0])", "--address", "F0:F0:F0:F0:F0:A1",
            "--identity", Self.watch.uuidString.lowercased(), "--paired", Self.phone.uuidString.lowercased(),
            "--script", Tools.repositoryRoot.appendingPathComponent("Harness/scenarios/session/clean.watch.yaml").path,
            "--store", folder.path("watch.sqlite").path, "--seed", "11", "--bridge-log", folder.path("watch-bridge.log").path,
        ], in: folder, name: "watch")
        defer { watchHost.stop() }

        let set = folder.path("wc-app-live").path
        let live = LiveSession(watchConnectivity: "tcp-client:127.0.0.1:\(ports[1])", watchAddress: "F0:F0:F0:F0:F0:A1",
                               identity: Self.phone, pairedWatch: Self.watch, storePath: folder.path("phone.sqlite").path,
                               recordingTo: set,
                               bridgeScript: Tools.repositoryRoot.appendingPathComponent("Harness/rigs/ciq_phone_bridge.py").path,
                               bridgeLog: folder.path("phone-bridge.log").path, seed: 19)
        live.makeCurrent()
        let liveApp = WorkoutLink()
        liveApp.start()
        try live.run(for: .seconds(40), until: { liveApp.userInfoFinished.count == 1 })
        #expect(liveApp.errors.isEmpty, "\(liveApp.errors)")
        #expect(liveApp.reply?["hr"] as? Int == 72)
        #expect(liveApp.userInfoFinished.count == 1)
        #expect(live.recording != nil)

        let replay = try ReplaySession(replaying: set)
        replay.makeCurrent()
        let replayedApp = WorkoutLink()
        replayedApp.start()
        try replay.run()
        #expect(replayedApp.reply?["hr"] as? Int == 72, "\(replay.report)")
        #expect(replayedApp.replyData == liveApp.replyData)
        #expect(replayedApp.userInfoFinished.count == 1)
        #expect(replayedApp.receivedContexts.count == liveApp.receivedContexts.count)

        let replayOnly: Set<TraceName> = ["frame_matched", "frame_diverged", "frame_unsent", "responder_made", "summary"]
        let liveEvents = live.trace.filter { !replayOnly.contains($0.event) }
        let replayedEvents = replay.trace.filter { !replayOnly.contains($0.event) }
        #expect(liveEvents.contains { $0.core == "app" && $0.event == "callback" })
        let report = TraceDiff.compare(liveEvents, replayedEvents, timingToleranceNs: 50_000_000)
        #expect(report.isEmpty, "\(report.render(maxLines: 40))")
    }
}
