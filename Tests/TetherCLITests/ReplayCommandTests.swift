import CaptureSet
import Foundation
import Testing

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
        let folder = try TemporaryFolder()
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
        let folder = try TemporaryFolder()
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
        let folder = try TemporaryFolder()
        let result = try Tools.tether(["replay", folder.url.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("tether import"), "\(result.stderr)")
    }

    @Test func aSetWhoseCaptureChangedAfterSealingFailsVerification() throws {
        let folder = try TemporaryFolder()
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
}
