import Foundation
import Testing
import TetherTestSupport

/// No command makes a set inside another set, and a set's live traces are sealed and checked.
@Suite struct CaptureSetIntegrityTests {
    /// A copy of a committed set with a live trace.
    static func setWithLiveTrace(_ folder: TemporaryFolder) throws -> String {
        try ReplaySettingsCommandTests.copyOfCommittedSet("ciq-app-not-installed", in: folder)
    }

    @Test func recordRefusesAnOutputFolderInsideAnExistingSet() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        let result = try Tools.tether(["record", "--udp", "lo:12345", "--out", set + "/nested", "--duration", "1"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("is inside the capture set"), "\(result.stderr)")
        #expect(result.stderr.contains("ciq-app-not-installed"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: set + "/nested"))
    }

    @Test func recordRefusesAnOutputFolderDeepInsideASetThroughASymbolicLink() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        try FileManager.default.createSymbolicLink(atPath: folder.path("link").path, withDestinationPath: set + "/live")
        let result = try Tools.tether(["record", "--udp", "lo:12345", "--out", folder.path("link").path + "/a/b"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("is inside the capture set"), "\(result.stderr)")
    }

    @Test func importRefusesAnOutputFolderInsideAnExistingSet() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        let result = try Tools.tether(["import", set + "/capture.pcapng", "--out", set + "/baseline/again"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("is inside the capture set"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: set + "/baseline/again"))
    }

    @Test func liveRecordRefusesAnOutputFolderInsideAnExistingSet() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        let script = folder.path("s.yaml")
        try "steps:\n  - wait: 1s\n".write(to: script, atomically: true, encoding: .utf8)
        for command in [["live", "messaging", "--peer", "F0:F0:F0:F0:F0:F0"], ["live", "session", "--role", "watch", "--store", folder.path("w.sqlite").path]] {
            let result = try Tools.tether(command + ["--hci", "tcp-client:127.0.0.1:1", "--script", script.path, "--record", set + "/inner"])
            #expect(result.status == 64, "\(command)")
            #expect(result.stderr.contains("--record \(set)/inner: \(set)/inner is inside the capture set"), "\(result.stderr)")
        }
    }

    @Test func replayRefusesASetWhoseLiveTraceChangedAfterSealing() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        let trace = set + "/live/messaging.jsonl"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: trace))
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: URL(fileURLWithPath: trace))
        let result = try Tools.tether(["replay", set])
        #expect(result.status != 0)
        #expect(result.stderr.contains("its live traces changed after sealing: live/messaging.jsonl has SHA-256"), "\(result.stderr)")
    }

    @Test func replayOfACaptureChangedAfterSealingReportsTheMismatchAndWritesNoTraceOrBaseline() throws {
        // The digest is checked while the capture replays: the mismatch must still be what is
        // reported, with nothing of the replay kept.
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        let capture = URL(fileURLWithPath: set + "/capture.pcapng")
        var bytes = try Data(contentsOf: capture)
        bytes[bytes.count / 2] ^= 0x01
        try bytes.write(to: capture)
        let baseline = try Data(contentsOf: URL(fileURLWithPath: set + "/baseline/messaging.jsonl"))
        let trace = folder.path("trace.jsonl").path
        for extra in [["--trace", trace], ["--update-baseline"]] {
            let result = try Tools.tether(["replay", set] + extra)
            #expect(result.status != 0, "\(extra)")
            #expect(result.stderr.contains("has SHA-256"), "\(result.stderr)")
            #expect(result.stderr.contains("the capture changed after it was sealed"), "\(result.stderr)")
            #expect(!result.stdout.contains("PASS"), "\(result.stdout)")
        }
        #expect(!FileManager.default.fileExists(atPath: trace))
        #expect(try Data(contentsOf: URL(fileURLWithPath: set + "/baseline/messaging.jsonl")) == baseline)
    }

    @Test func replayRefusesASetWhoseLiveTraceWasRemoved() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        try FileManager.default.removeItem(atPath: set + "/live/messaging.jsonl")
        let result = try Tools.tether(["replay", set])
        #expect(result.status != 0)
        #expect(result.stderr.contains("live/messaging.jsonl was sealed but is missing"), "\(result.stderr)")
    }

    @Test func replayRefusesASetWithALiveTraceAddedAfterSealing() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        try FileManager.default.copyItem(atPath: set + "/live/messaging.jsonl", toPath: set + "/live/other.jsonl")
        let result = try Tools.tether(["replay", set])
        #expect(result.status != 0)
        #expect(result.stderr.contains("live/other.jsonl was added after sealing"), "\(result.stderr)")
    }

    @Test func sealCoversLiveTracesOfASetSealedWithoutThem() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.setWithLiveTrace(folder)
        let manifest = set + "/manifest.yaml"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        let older = text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("live_traces_sha256:") && !$0.hasPrefix("  live/") }.joined(separator: "\n")
        try older.write(toFile: manifest, atomically: true, encoding: .utf8)
        let unverified = try Tools.tether(["replay", set])
        #expect(unverified.status == 0, "\(unverified.stderr)")
        #expect(unverified.stderr.contains("live traces not verified (live/messaging.jsonl)"), "\(unverified.stderr)")
        try Tools.tetherSucceeds(["seal", set])
        #expect(try String(contentsOfFile: manifest, encoding: .utf8).contains("live_traces_sha256:\n  live/messaging.jsonl: "))
        let verified = try Tools.tether(["replay", set])
        #expect(verified.status == 0, "\(verified.stderr)")
        #expect(!verified.stderr.contains("live traces"), "\(verified.stderr)")
    }
}
