import Foundation
import ReplayKit
import BehaviourTrace
import Testing
import TetherTestSupport

/// `tether live messaging` against a Connect IQ watch on Bumble, through two Bumble controllers on
/// one virtual radio, recorded by the H4 tap; then `tether replay` of the recording. The emitted
/// frames must match the captured ones byte for byte, and the live trace must equal the replayed
/// trace (`tether diff`, 50 ms timing tolerance, frame_matched and summary left out: they exist in
/// replay only).
@Suite(.serialized) struct LiveMessagingEndToEndTests {
    static let echo = "0180E520-5F7E-11E4-9803-0800200C9A66"

    /// Starts a rig and waits for its `READY …` line; returns the process and the line's words.
    static func rig(_ python: URL, _ arguments: [String], in folder: TemporaryFolder, name: String) throws -> (BackgroundProcess, [String]) {
        let process = try BackgroundProcess(python, arguments, in: folder, name: name)
        let words = try process.waitFor("\(name) to say READY", limit: .seconds(30)) {
            process.stdoutLines.first { $0.hasPrefix("READY") }.map { $0.split(separator: " ").dropFirst().map(String.init) }
        }
        return (process, words)
    }

    /// Two Bumble controllers on one virtual link (`ciq_controllers.py`, TCP ports on loopback):
    /// the process and the ports, watch's first.
    static func twoControllers(in folder: TemporaryFolder) throws -> (BackgroundProcess, [String]) {
        let python = try Tools.pythonWithBumble()
        let script = Tools.repositoryRoot.appendingPathComponent("Harness/rigs/ciq_controllers.py").path
        let (controllers, ports) = try rig(python, [script, "tcp-server:127.0.0.1:0", "tcp-server:127.0.0.1:0"], in: folder, name: "controllers")
        if ports.count != 2 { controllers.stop() }
        try #require(ports.count == 2, "ciq_controllers.py said READY with \(ports)")
        return (controllers, ports)
    }

    @Test func liveTraceEqualsReplayedTraceAndEveryFrameMatches() throws {
        let python = try Tools.pythonWithBumble()
        let folder = try TemporaryFolder("cli-tests")
        let rigs = Tools.repositoryRoot.appendingPathComponent("Harness/rigs")
        let (controllers, ports) = try Self.twoControllers(in: folder)
        defer { controllers.stop() }
        let (watch, _) = try Self.rig(python, [rigs.appendingPathComponent("ciq_watch.py").path,
                                              "--hci", "tcp-client:127.0.0.1:\(ports[0])",
                                              "--address", "F0:F0:F0:F0:F0:F0", "--app", "\(Self.echo):echo", "--no-large-packets"],
                                      in: folder, name: "watch")
        defer { watch.stop() }

        let script = folder.path("script.yaml")
        try """
            steps:
              - register: {app: \(Self.echo)}
              - wait_for: {event: device_status, timeout: 10s}
              - wait: 200ms
              - app_status: {app: \(Self.echo)}
              - wait_for: app_status
              - send: {app: \(Self.echo), message: {text: "\(String(repeating: "tether ", count: 100))", n: 5000000000, pi: 3.14159}}
              - wait_for: {event: completion, timeout: 15s}
              - wait_for: {event: message_received, timeout: 15s}
              - wait: 300ms
            """.write(to: script, atomically: true, encoding: .utf8)
        let set = folder.path("ciq-live")
        let live = folder.path("live.jsonl")
        let run = try Tools.tether(["live", "messaging", "--hci", "tcp-client:127.0.0.1:\(ports[1])",
                                    "--peer", "F0:F0:F0:F0:F0:F0", "--script", script.path, "--record", set.path,
                                    "--trace", live.path, "--bridge-log", folder.path("bridge.log").path])
        #expect(run.status == 0, "live run failed: \(run.stderr)\n\(run.stdout)")
        #expect(run.stdout.contains("completion") && run.stdout.contains("Success"))

        let replayed = folder.path("replayed.jsonl")
        let replay = try Tools.tether(["replay", set.path, "--trace", replayed.path])
        #expect(replay.status == 0, "replay failed: \(replay.stdout)")

        let ignored: Set<TraceName> = ["frame_matched", "summary"]
        let liveEvents = try TraceFile.read(live.path)
        let replayedEvents = try TraceFile.read(replayed.path)
        let report = TraceDiff.compare(liveEvents.filter { !ignored.contains($0.event) },
                                       replayedEvents.filter { !ignored.contains($0.event) }, timingToleranceNs: 50_000_000)
        #expect(report.isEmpty, "\(report.render(maxLines: 30))")
        #expect(liveEvents.contains { $0.event == "message_received" })

        let summary = try #require(replayedEvents.last { $0.event == "summary" && $0.core == "messaging" })
        #expect(summary.fields["frames_diverged"] == .int(0))
        #expect(summary.fields["frames_matched"] == summary.fields["phone_writes"])
        guard case .int(let matched)? = summary.fields["frames_matched"] else { Issue.record("no frames_matched"); return }
        #expect(matched > 20, "a multi-window send writes dozens of packets")

        // tether diff, the command, agrees.
        let diff = try Tools.tether(["diff", live.path, replayed.path, "--ignore-event", "frame_matched",
                                     "--ignore-event", "summary", "--tolerance-ms", "50"])
        #expect(diff.status == 0, "\(diff.stdout)")
    }
}
