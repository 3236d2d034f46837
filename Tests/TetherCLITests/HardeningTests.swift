import CaptureSet
import Foundation
import Testing
import TetherTestSupport
@testable import TetherCLI

/// Bad input gets a clear refusal, and nothing Tether writes damages what it reads.
@Suite struct HardeningTests {
    static func makeSet(_ folder: TemporaryFolder, name: String = "set") throws -> String {
        let sample = FrameBuilder.sampleFrames()
        let source = folder.path("source-\(name).pcapng").path
        try FrameBuilder.writePcapng(sample.interfaces, sample.frames, to: source)
        let set = folder.path(name).path
        try Tools.tetherSucceeds(["import", source, "--out", set])
        return set
    }

    @Test func exportRefusesToWriteIntoTheSetItReads() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        let before = try Data(contentsOf: URL(fileURLWithPath: set + "/capture.pcapng"))
        let result = try Tools.tether(["export", set, "--format", "pcapng", "--out", set + "/capture.pcapng"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("inside the capture set"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: set + "/capture.pcapng")) == before)
    }

    @Test func aFailedExportLeavesTheExistingOutputFileUntouched() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        let out = folder.path("existing.log").path
        try Data("precious".utf8).write(to: URL(fileURLWithPath: out))
        // No frame is on interface 7, so the btsnoop export reads the whole set and then fails.
        let result = try Tools.tether(["export", set, "--format", "btsnoop", "--interface", "7", "--out", out])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(try String(contentsOfFile: out, encoding: .utf8) == "precious")
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.url.path).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "\(leftovers)")
    }

    @Test func anOutFileInAMissingFolderGetsASentence() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        let result = try Tools.tether(["export", set, "--format", "pcapng", "--out", folder.path("nope/out.pcapng").path])
        #expect(result.status == 64)
        #expect(result.stderr.contains("does not exist; create it first"), "\(result.stderr)")
    }

    @Test func anOutOfRangeNumberExits64NamingOptionValueAndRange() throws {
        let result = try Tools.tether(["serve", "ingest", "--port", "70000"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--port 70000"), "\(result.stderr)")
        #expect(result.stderr.contains("0 to 65535"), "\(result.stderr)")
    }

    @Test func aHugeDurationIsRefusedNotATrap() throws {
        let result = try Tools.tether(["simulate", "plugin", "--duration", "1e300"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--duration 1e300"), "\(result.stderr)")
    }

    @Test func durationsAcceptUnitsAndPlainSeconds() throws {
        #expect(try OptionValues.seconds("500ms", option: "--x", range: 0...86_400) == 0.5)
        #expect(try OptionValues.seconds("8s", option: "--x", range: 0...86_400) == 8)
        #expect(try OptionValues.seconds("2m", option: "--x", range: 0...86_400) == 120)
        #expect(try OptionValues.seconds("1h", option: "--x", range: 0...86_400) == 3600)
        #expect(try OptionValues.seconds("2.5", option: "--x", range: 0...86_400) == 2.5)
        #expect(throws: (any Error).self) { try OptionValues.seconds("5 parsecs", option: "--x", range: 0...86_400) }
        #expect(throws: (any Error).self) { try OptionValues.seconds("25h", option: "--x", range: 0...86_400) }
        #expect(throws: (any Error).self) { try OptionValues.seconds("nan", option: "--x", range: 0...86_400) }
    }

    @Test func sealRefusesAChangedCaptureUnlessAccepted() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        let capture = URL(fileURLWithPath: set + "/capture.pcapng")
        var bytes = try Data(contentsOf: capture)
        bytes[bytes.count - 5] ^= 0xFF
        try bytes.write(to: capture)
        let refused = try Tools.tether(["seal", set])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("changed since it was sealed"), "\(refused.stderr)")
        let accepted = try Tools.tether(["seal", set, "--accept-changed-capture"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(try CaptureSetDirectory.load(set).verified)
    }

    @Test func diffCallsAnEmptyTraceFileUnreadable() throws {
        let folder = try TemporaryFolder("cli-tests")
        let empty = folder.path("empty.jsonl").path
        FileManager.default.createFile(atPath: empty, contents: Data())
        let result = try Tools.tether(["diff", empty, empty])
        #expect(result.status == 2)
        #expect(result.stderr.contains("is empty, so it is not a trace"), "\(result.stderr)")
    }

    @Test func diffOfAPlainFolderSaysWhatToGive() throws {
        let folder = try TemporaryFolder("cli-tests")
        let result = try Tools.tether(["diff", folder.url.path, folder.url.path])
        #expect(result.status == 2)
        #expect(result.stderr.contains("is a folder but not a capture set"), "\(result.stderr)")
    }

    @Test func importingAFileWithNoFramesIsRefusedUnlessAllowed() throws {
        let folder = try TemporaryFolder("cli-tests")
        let source = folder.path("empty.pcapng").path
        try FrameBuilder.writePcapng(FrameBuilder.sampleFrames().interfaces, [], to: source)
        let refused = try Tools.tether(["import", source, "--out", folder.path("a").path])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("--allow-empty"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: folder.path("a").path))
        try Tools.tetherSucceeds(["import", source, "--out", folder.path("b").path, "--allow-empty"])
        #expect(CaptureSetDirectory.isCaptureSet(folder.path("b").path))
    }

    @Test func versionPrintsTheVersionManifestsRecord() throws {
        let result = try Tools.tether(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == TetherVersion.current)
    }

    @Test func annotationTextThatIsNotUTF8IsDetected() {
        let invalid: [UInt8] = Array("stall ".utf8) + [0xFF, 0xFE]
        let repaired = String(decoding: invalid, as: UTF8.self)
        #expect(AnnotateCommand.rawArgumentsHaveInvalidUTF8(matching: repaired, arguments: [Array("tether".utf8), invalid]))
        #expect(AnnotateCommand.rawArgumentsHaveInvalidUTF8(matching: repaired, arguments: [Array("--text=".utf8) + invalid]))
        #expect(!AnnotateCommand.rawArgumentsHaveInvalidUTF8(matching: "stall é", arguments: [Array("stall é".utf8)]))
    }

    @Test func replayHeadlineCountsSetsThatFailedToLoad() throws {
        let folder = try TemporaryFolder("cli-tests")
        _ = try Self.makeSet(folder, name: "good")
        let broken = try Self.makeSet(folder, name: "broken")
        try FileManager.default.removeItem(atPath: broken + "/capture.pcapng")
        let result = try Tools.tether(["replay", folder.url.path])
        #expect(result.status == 1)
        #expect(result.stdout.contains("FAIL: 1 of 2 capture set(s) failed (1 could not be replayed"), "\(result.stdout)")
    }

    @Test func replayRefusesACaptureSymlinkedOutOfItsSet() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        try FileManager.default.moveItem(atPath: set + "/capture.pcapng", toPath: folder.path("outside.pcapng").path)
        try FileManager.default.createSymbolicLink(atPath: set + "/capture.pcapng", withDestinationPath: folder.path("outside.pcapng").path)
        let result = try Tools.tether(["replay", set, "--no-verify"])
        #expect(result.status == 1)
        #expect(result.stdout.contains("outside the set's folder") || result.stderr.contains("outside the set's folder"), "\(result.stdout)\n\(result.stderr)")
    }
}
