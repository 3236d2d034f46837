import CaptureSet
import Foundation
import ReplayKit
import TetherIntegrations
import BehaviourTrace
import Testing
import TetherTestSupport

/// `tether replay` over folders of sets: baselines accepted on purpose, checked afterwards, JUnit.
@Suite struct ReplayCommandTests {
    /// Two copies of the stalled session under `Captures/`.
    static func captures(_ folder: TemporaryFolder) throws -> String {
        let first = try DiffTests.stalledSession(folder)
        let captures = folder.path("Captures").path
        try FileManager.default.createDirectory(atPath: captures, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: first, toPath: captures + "/a")
        try FileManager.default.copyItem(atPath: captures + "/a", toPath: captures + "/b")
        return captures
    }

    @Test func aFolderIsSearchedAndEverySetReportedInJUnit() throws {
        let folder = try TemporaryFolder("cli-tests")
        let captures = try Self.captures(folder)
        let junit = folder.path("junit.xml").path
        let result = try Tools.tetherSucceeds(["replay", captures, "--junit", junit])
        #expect(result.stdout.contains("== a: PASS"))
        #expect(result.stdout.contains("== b: PASS"))
        let xml = try String(contentsOfFile: junit, encoding: .utf8)
        #expect(xml.contains("<testsuite name=\"a\""))
        #expect(xml.contains("<testsuite name=\"b\""))
    }

    @Test func anAcceptedBaselinePassesAndABehaviourChangeFailsIt() throws {
        let folder = try TemporaryFolder("cli-tests")
        let captures = try Self.captures(folder)
        try Tools.tetherSucceeds(["replay", captures, "--update-baseline"])
        let manifest = try CaptureSetDirectory.readManifest(at: captures + "/a")
        #expect(manifest.baselines == ["ingest": "baseline/ingest.jsonl"])
        #expect(FileManager.default.fileExists(atPath: captures + "/a/baseline/ingest.jsonl"))

        let again = try Tools.tetherSucceeds(["replay", captures])
        #expect(again.stdout.contains("PASS baseline ingest"))

        let changed = try Tools.tether(["replay", captures + "/a", "--ingest-idle-timeout", "2"])
        #expect(changed.status == 1, "\(changed.stdout)")
        #expect(changed.stdout.contains("FAIL baseline ingest"), "\(changed.stdout)")
    }

    @Test func aFolderWithoutSetsFailsAndSaysHowToMakeOne() throws {
        let folder = try TemporaryFolder("cli-tests")
        let result = try Tools.tether(["replay", folder.url.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("tether import"), "\(result.stderr)")
    }

    @Test func aSetWhoseCaptureChangedAfterSealingFailsVerification() throws {
        let folder = try TemporaryFolder("cli-tests")
        let captures = try Self.captures(folder)
        let capture = captures + "/a/capture.pcapng"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: capture))
        bytes[bytes.count - 20] ^= 0xFF
        try bytes.write(to: URL(fileURLWithPath: capture))
        let result = try Tools.tether(["replay", captures])
        #expect(result.status == 1)
        #expect(result.stdout.contains("ERROR a:"), "\(result.stdout)")
        #expect(result.stdout.contains("== b: PASS"), "the other set is still replayed: \(result.stdout)")
    }

    /// The trace streams to its file and to the new baselines as replay makes it: the bytes are
    /// those of the whole trace encoded at once, per core for the baselines, and no temporary
    /// file is left behind.
    @Test func theStreamedTraceAndBaselinesAreTheBytesOfTheWholeTrace() throws {
        let folder = try TemporaryFolder("cli-tests")
        let captures = try Self.captures(folder)
        let set = captures + "/a"
        let whole = try replaySet(at: set, options: ReplayOptions(integrations: TetherIntegrations.builtIn)).trace
        let trace = folder.path("trace.jsonl").path
        try Tools.tetherSucceeds(["replay", set, "--trace", trace])
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: trace))) == TraceFile.encodeBytes(whole))

        try Tools.tetherSucceeds(["replay", set, "--update-baseline"])
        let baseline = try Data(contentsOf: URL(fileURLWithPath: set + "/baseline/ingest.jsonl"))
        #expect(Array(baseline) == TraceFile.encodeBytes(whole.filter { $0.core == "ingest" }))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path)
            + FileManager.default.contentsOfDirectory(atPath: set + "/baseline")
        #expect(!leftovers.contains { $0.contains(".tmp-") }, "\(leftovers)")
    }

    /// When the --trace file cannot be written, the set's warnings still come out before the error.
    @Test func aTraceThatCannotBeWrittenStillShowsTheSetsWarnings() throws {
        let folder = try TemporaryFolder("cli-tests")
        let captures = try Self.captures(folder)
        let set = captures + "/a"
        // A folder that exists but where no file can be made, even by root: the failure comes
        // when the replay starts writing, past the options' checks.
        let unwritable = "/proc/tether-test-trace.jsonl"
        let result = try Tools.tether(["replay", set, "--no-verify", "--trace", unwritable])
        #expect(result.status != 0)
        #expect(result.stderr.contains("tether: warning: a:"), "\(result.stderr)")
        #expect(result.stderr.contains(unwritable), "\(result.stderr)")
    }

    /// A baseline whose lines stop being JSON part-way is the set's error, worded as before (the
    /// file, line and column), while the expectations are still reported.
    @Test func aBaselineMalformedPartWayIsReportedWithItsLine() throws {
        let folder = try TemporaryFolder("cli-tests")
        let captures = try Self.captures(folder)
        let set = captures + "/a"
        try Tools.tetherSucceeds(["replay", set, "--update-baseline"])
        let path = set + "/baseline/ingest.jsonl"
        var lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count > 20)
        lines[19] = "{\"t_ns\":1,"
        try lines.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["replay", set])
        #expect(result.status == 1)
        #expect(result.stdout.contains("ERROR a: baseline ingest: \(path):20:"), "\(result.stdout)")
        #expect(result.stdout.contains("1 baseline(s) could not be read"), "\(result.stdout)")
    }
}

/// The cores' settings on the command line, and manifests that name cores no one registered.
@Suite struct ReplaySettingsCommandTests {
    /// A copy of a committed set, to change its manifest.
    static func copyOfCommittedSet(_ name: String, in folder: TemporaryFolder) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let copy = folder.path(name).path
        try FileManager.default.copyItem(atPath: root.appendingPathComponent("Captures/\(name)").path, toPath: copy)
        return copy
    }

    @Test func aCoresOwnOptionOutOfBoundsIsRefusedNamingTheOption() throws {
        let result = try Tools.tether(["replay", "Captures/ciq-clean", "--messaging-window-size", "16"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--messaging-window-size takes a whole number from 1 to 15; got \"16\""), "\(result.stderr)")
    }

    @Test func aSettingOfAnUnknownCoreIsRefusedNamingTheRegisteredOnes() throws {
        let result = try Tools.tether(["replay", "Captures/ciq-clean", "--set", "mesaging.settings.window_size=4"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("did you mean \"messaging\"?"), "\(result.stderr)")
    }

    @Test func aSettingChangesTheReplayAsTheManifestWould() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.copyOfCommittedSet("ciq-max-retries", in: folder)
        // One retry instead of the recorded two: the baseline and the retry expectations fail.
        let changed = try Tools.tether(["replay", set, "--set", "messaging.settings.first_retries=1"])
        #expect(changed.status == 1)
        #expect(changed.stdout.contains("FAIL baseline messaging"), "\(changed.stdout)")
        let same = try Tools.tether(["replay", set, "--messaging-first-retries=2"])
        #expect(same.status == 0, "\(same.stdout)")
    }

    @Test func aMisspeltCoreInTheManifestFailsTheSetNamingTheFileLineAndRegisteredCores() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.copyOfCommittedSet("ciq-clean", in: folder)
        let manifest = set + "/manifest.yaml"
        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        text = text.replacingOccurrences(of: "  role: ble-hci\n", with: "  role: ble-hci\n  core: mesaging\n")
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["replay", set, "--no-verify"])
        #expect(result.status == 1)
        #expect(result.stdout.contains("manifest.yaml:"), "\(result.stdout)")
        #expect(result.stdout.contains("\"mesaging\" is not a registered core (did you mean \"messaging\"?)"), "\(result.stdout)")
        #expect(result.stdout.contains("registered cores: ingest, messaging, session, widget"), "\(result.stdout)")
    }
}
