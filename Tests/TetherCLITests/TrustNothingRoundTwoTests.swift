import CaptureKit
import CaptureSet
import Foundation
import Testing
import TetherTestSupport
@testable import TetherCLI

/// Issue 36's defects outside redaction, each from the command line: output paths that are not
/// regular files, rigs planted in the working directory, long names, sets named twice, capture
/// text on a terminal, and the smaller wrong messages.
@Suite struct TrustNothingRoundTwoTests {
    static func kind(_ path: String) -> mode_t {
        var info = stat()
        guard lstat(path, &info) == 0 else { return 0 }
        return info.st_mode & S_IFMT
    }

    /// A character device like /dev/null, made in `folder` so a regression cannot replace the
    /// machine's own.
    static func nullDevice(in folder: TemporaryFolder) throws -> String {
        let path = folder.path("null").path
        try #require(mknod(path, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0, "mknod needs root")
        return path
    }

    @Test func junitToACharacterDeviceWritesThroughAndLeavesTheDevice() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let device = try Self.nullDevice(in: folder)
        let result = try Tools.tether(["replay", set, "--junit", device])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.kind(device) == S_IFCHR)
    }

    @Test func traceToACharacterDeviceWritesThroughAndLeavesTheDevice() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let device = try Self.nullDevice(in: folder)
        let result = try Tools.tether(["replay", set, "--trace", device])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.kind(device) == S_IFCHR)
    }

    @Test func traceExportToAFullDeviceFailsAndLeavesTheDevice() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let trace = folder.path("t.jsonl").path
        try Tools.tetherSucceeds(["replay", set, "--trace", trace])
        let full = folder.path("full").path
        try #require(mknod(full, S_IFCHR | 0o666, dev_t(1 << 8 | 7)) == 0)
        let result = try Tools.tether(["trace", "export", trace, "--format", "perfetto", "--out", full])
        #expect(result.status != 0)
        #expect(result.stderr.contains("No space left on device"), "\(result.stderr)")
        #expect(Self.kind(full) == S_IFCHR)
    }

    @Test func anOutputThatIsABlockDeviceIsRefusedBeforeAnyWork() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let block = folder.path("block").path
        try #require(mknod(block, S_IFBLK | 0o600, dev_t(7 << 8)) == 0)
        let result = try Tools.tether(["export", set, "--format", "pcapng", "--out", block])
        #expect(result.status == 64, "\(result.stderr)")
        #expect(result.stderr.contains("is a block device"), "\(result.stderr)")
        #expect(Self.kind(block) == S_IFBLK)
    }

    @Test func emulateNeverRunsARigPlantedInTheWorkingDirectory() throws {
        let folder = try TemporaryFolder("cli-trust")
        let planted = folder.path("Harness/rigs")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: true)
        let marker = folder.path("planted-ran").path
        try "import pathlib; pathlib.Path('\(marker)').write_text('ran')\n"
            .write(to: planted.appendingPathComponent("emulate_bridge.py"), atomically: true, encoding: .utf8)
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/gatt-sensor").path
        let result = try Tools.tether(["emulate", set, "--hci", "tcp-client:127.0.0.1:1", "--duration", "0.5"], currentDirectory: folder.url)
        #expect(!FileManager.default.fileExists(atPath: marker), "the planted rig ran: \(result.stderr)")
        #expect(result.stderr.contains("(beside the binary"), "\(result.stderr)")
    }

    @Test func rigsAreFoundOnlyWhereTheUserPutThem() throws {
        let folder = try TemporaryFolder("cli-trust")
        #expect(throws: CommandFailure.self) {
            try RigScripts.locate("emulate_bridge.py", option: folder.url.path, environment: [:], binary: nil)
        }
        #expect(throws: CommandFailure.self) {
            try RigScripts.locate("emulate_bridge.py", environment: [:], binary: nil)
        }
        let rigs = Tools.repositoryRoot.appendingPathComponent("Harness/rigs").path
        let fromEnvironment = try RigScripts.locate("emulate_bridge.py", environment: [RigScripts.environmentVariable: rigs], binary: nil)
        #expect(fromEnvironment.source == RigScripts.environmentVariable)
        let besideBinary = try RigScripts.locate("emulate_bridge.py", environment: [:],
                                                 binary: Tools.repositoryRoot.appendingPathComponent(".build/debug/tether").path)
        #expect(besideBinary.path == rigs + "/emulate_bridge.py")
    }

    @Test func aSetNamedTwiceOrThroughALinkIsReplayedOnceInOneShard() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let link = folder.path("link").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: set)
        let result = try Tools.tether(["replay", set, set + "/", link, "--shard", "1/1"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("Shard 1/1: 1 of 1 set(s)"), "\(result.stdout)")
        #expect(result.stderr.contains("named already; replaying it once"))
    }

    @Test func inspectShowsControlCharactersFromTheCaptureEscaped() throws {
        let folder = try TemporaryFolder("cli-trust")
        let sample = FrameBuilder.sampleFrames()
        var interfaces = sample.interfaces
        interfaces[0] = CaptureInterface(linkType: .ethernet, name: "lo\u{1B}]0;pwned\u{7}\u{9B}2J", snapLength: 262_144)
        let file = folder.path("hostile.pcapng").path
        var frames = sample.frames
        frames[0].comments = ["forged\nFrames: 999"]
        try FrameBuilder.writePcapng(interfaces, frames, to: file)
        let result = try Tools.tether(["inspect", file, "--frames"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(!result.stdout.unicodeScalars.contains { $0 == "\u{1B}" || $0 == "\u{9B}" || $0 == "\u{7}" })
        #expect(result.stdout.contains("\\u{1b}]0;pwned"))
        #expect(!result.stdout.contains("\nFrames: 999"))
    }

    @Test func diffOfACharacterDeviceSaysWhatItIs() throws {
        let folder = try TemporaryFolder("cli-trust")
        let trace = folder.path("t.jsonl").path
        try "{\"t_ns\":0,\"core\":\"ingest\",\"event\":\"stream_end\"}\n".write(toFile: trace, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["diff", "/dev/zero", trace])
        #expect(result.status == 2)
        #expect(result.stderr.contains("/dev/zero is a character device, not a trace file"), "\(result.stderr)")
    }

    @Test func anAlignmentShiftPastInt64IsRefusedNotWrapped() throws {
        let folder = try TemporaryFolder("cli-trust")
        let a = folder.path("a.jsonl").path
        let b = folder.path("b.jsonl").path
        try "{\"t_ns\":0,\"core\":\"ingest\",\"event\":\"stream_start\"}\n{\"t_ns\":5,\"core\":\"ingest\",\"event\":\"stream_end\"}\n"
            .write(toFile: a, atomically: true, encoding: .utf8)
        try "{\"t_ns\":9223372036854775807,\"core\":\"ingest\",\"event\":\"stream_start\"}\n{\"t_ns\":-9223372036854775808,\"core\":\"ingest\",\"event\":\"stream_end\"}\n"
            .write(toFile: b, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["diff", a, b, "--align-on", "ingest:stream_start", "--tolerance-ms", "1"])
        #expect(result.status == 2, "\(result.stdout)\(result.stderr)")
        #expect(result.stderr.contains("does not fit a t_ns") || result.stderr.contains("falls outside what a t_ns holds"), "\(result.stderr)")
    }

    @Test func annotateRefusesANoteOverACommentsLimitNamingTheNote() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let result = try Tools.tether(["annotate", set, "--frame", "1", "--text", String(repeating: "n", count: 70_000)])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--text is 70000 bytes"), "\(result.stderr)")
        #expect(!result.stderr.contains(".annotate-"))
    }

    @Test func aSetWithALongNameStillGetsItsHTMLPageAndIndex() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder, name: String(repeating: "n", count: 240))
        let html = folder.path("html").path
        let result = try Tools.tether(["replay", set, "--html", html])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(FileManager.default.fileExists(atPath: html + "/index.html"))
        #expect(result.stdout.contains("PASS"))
    }

    @Test func aTemporaryNameBesideALongTargetStillFits() {
        let long = "/tmp/" + String(repeating: "é", count: 127)
        let temporary = FileIO.temporarySibling(of: long, purpose: "importing")
        #expect(FileIO.split(temporary).base.utf8.count <= FileIO.maximumNameBytes)
        #expect(FileIO.split(temporary).dir == "/tmp")
        #expect(FileIO.temporarySibling(of: long + "x", purpose: "importing") != temporary)
        #expect(FileIO.temporarySibling(of: "/tmp/short", purpose: "tmp") == "/tmp/.short.tmp-\(getpid())")
    }

    @Test func sweepFramesPastTheEndSaysWhichFramesExist() throws {
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/ciq-clean").path
        let result = try Tools.tether(["replay", set, "--sweep", "drop", "--sweep-frames", "99990-99999"])
        #expect(result.status != 0)
        #expect(result.stdout.contains("frames 99990-99999 hold none of the"), "\(result.stdout)\(result.stderr)")
    }

    @Test func aFaultDelayPastADaySaysTheLimit() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let result = try Tools.tether(["replay", set, "--fault", "delay:frame=1:by=9223372036s"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("a day (86400s)"), "\(result.stderr)")
    }

    @Test func theHeadlineCountsScenariosApartFromSets() throws {
        let folder = try TemporaryFolder("cli-trust")
        let set = try HardeningTests.makeSet(folder)
        let manifest = set + "/manifest.yaml"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
            + "scenarios:\n  - name: lost\n    faults: [drop:frame=1]\n    expectations:\n      - type: count\n        event: never_happens\n        equals: 1\n"
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["replay", set, "--no-verify"])
        #expect(result.stdout.contains("FAIL: 0 of 1 capture set(s) and 1 of 1 scenario(s) failed"), "\(result.stdout)")
    }
}
