import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Replay
import Testing

/// `tether live messaging` against a Connect IQ watch on Bumble, through two Bumble controllers on
/// one virtual radio, recorded by the H4 tap; then `tether replay` of the recording. The emitted
/// frames must match the captured ones byte for byte, and the live trace must equal the replayed
/// trace (`tether diff`, 50 ms timing tolerance, frame_matched and summary left out: they exist in
/// replay only).
@Suite(.serialized) struct LiveMessagingEndToEndTests {
    static let echo = "0180E520-5F7E-11E4-9803-0800200C9A66"

    /// A rig process whose stdout says `READY …` once it is up.
    final class Rig {
        let process = Process()
        let log: URL
        private(set) var readyWords: [String] = []

        init(_ python: URL, _ arguments: [String], log: URL) throws {
            self.log = log
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let stdout = Pipe()
            process.executableURL = python
            process.arguments = arguments
            process.standardOutput = stdout
            process.standardError = try FileHandle(forWritingTo: log)
            process.standardInput = FileHandle.nullDevice
            try process.run()
            let handle = stdout.fileHandleForReading
            var line: [UInt8] = []
            let deadline = Date().addingTimeInterval(30)
            while Date() < deadline {
                var pfd = pollfd(fd: handle.fileDescriptor, events: Int16(POLLIN), revents: 0)
                guard poll(&pfd, 1, 200) > 0 else {
                    if !process.isRunning { break }
                    continue
                }
                var byte: UInt8 = 0
                guard read(handle.fileDescriptor, &byte, 1) == 1 else { break }
                if byte == 0x0A {
                    let text = String(decoding: line, as: UTF8.self)
                    if text.hasPrefix("READY") {
                        readyWords = text.split(separator: " ").dropFirst().map(String.init)
                        return
                    }
                    line = []
                } else {
                    line.append(byte)
                }
            }
            stop()
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            throw BackgroundFailure(description: "\(arguments.first ?? "rig") did not say READY within 30 s; its log:\n\(text)")
        }

        /// SIGTERM, then SIGKILL after 5 s: a rig stuck in its shutdown must not hang the suite.
        func stop() {
            guard process.isRunning else { return }
            process.terminate()
            let deadline = Date().addingTimeInterval(5)
            while process.isRunning && Date() < deadline { usleep(20_000) }
            if process.isRunning {
                kill(process.processIdentifier, SIGKILL)
                process.waitUntilExit()
            }
        }

        deinit { stop() }
    }

    @Test func liveTraceEqualsReplayedTraceAndEveryFrameMatches() throws {
        let python = try Tools.pythonWithBumble()
        let folder = try TemporaryFolder()
        let rigs = Tools.repositoryRoot.appendingPathComponent("Harness/rigs")
        let controllers = try Rig(python, [rigs.appendingPathComponent("ciq_controllers.py").path,
                                           "tcp-server:127.0.0.1:0", "tcp-server:127.0.0.1:0"], log: folder.path("controllers.log"))
        defer { controllers.stop() }
        try #require(controllers.readyWords.count == 2)
        let watch = try Rig(python, [rigs.appendingPathComponent("ciq_watch.py").path,
                                     "--hci", "tcp-client:127.0.0.1:\(controllers.readyWords[0])",
                                     "--address", "F0:F0:F0:F0:F0:F0", "--app", "\(Self.echo):echo", "--no-large-packets"],
                            log: folder.path("watch.log"))
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
        let run = try Tools.tether(["live", "messaging", "--hci", "tcp-client:127.0.0.1:\(controllers.readyWords[1])",
                                    "--peer", "F0:F0:F0:F0:F0:F0", "--script", script.path, "--record", set.path,
                                    "--trace", live.path, "--bridge-log", folder.path("bridge.log").path])
        #expect(run.status == 0, "live run failed: \(run.stderr)\n\(run.stdout)")
        #expect(run.stdout.contains("completion") && run.stdout.contains("Success"))

        let replayed = folder.path("replayed.jsonl")
        let replay = try Tools.tether(["replay", set.path, "--trace", replayed.path])
        #expect(replay.status == 0, "replay failed: \(replay.stdout)")

        let ignored: Set<String> = ["frame_matched", "summary"]
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
