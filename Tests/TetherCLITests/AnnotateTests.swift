import CaptureSet
import Foundation
import Testing
import TetherTestSupport

/// `tether annotate` adds a packet comment Wireshark sees and a manifest entry, atomically.
@Suite struct AnnotateTests {
    static func makeSet(_ folder: TemporaryFolder) throws -> String {
        let sample = FrameBuilder.sampleFrames()
        let source = folder.path("source.pcapng").path
        try FrameBuilder.writePcapng(sample.interfaces, sample.frames, to: source)
        let set = folder.path("set").path
        try Tools.tetherSucceeds(["import", source, "--out", set])
        return set
    }

    @Test func annotationIsAPacketCommentTsharkSees() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        try Tools.tetherSucceeds(["annotate", set, "--frame", "2", "--text", "notification arrives late"])
        let rows = try Tools.tsharkFields(URL(fileURLWithPath: set + "/capture.pcapng"), fields: ["frame.number", "frame.comment"])
        #expect(rows.count == 3)
        #expect(rows.first { $0.first == "2" }?.last == "notification arrives late")
        // The other frames keep their own comments.
        #expect(rows.first { $0.first == "1" }?.last == "first datagram")
    }

    @Test func annotationIsInTheManifestAndTheSetStaysSealed() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        try Tools.tetherSucceeds(["annotate", set, "--frame", "3", "--text", "big one", "--author", "qa"])
        let loaded = try CaptureSetDirectory.load(set, verify: true)
        #expect(loaded.verified)
        #expect(loaded.manifest.status == .complete)
        let annotation = try #require(loaded.manifest.annotations.last)
        #expect(annotation.frame == 3)
        #expect(annotation.text == "big one")
        #expect(annotation.author == "qa")
        #expect(annotation.timeNs == 2_000_000_007)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: set).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty, "temporary files left in the set: \(leftovers)")
    }

    @Test func aFrameBeyondTheEndFailsAndLeavesTheSetAsItWas() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeSet(folder)
        let before = try Data(contentsOf: URL(fileURLWithPath: set + "/capture.pcapng"))
        let manifestBefore = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        let result = try Tools.tether(["annotate", set, "--frame", "99", "--text", "nowhere"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("no frame 99"), "\(result.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: set + "/capture.pcapng")) == before)
        #expect(try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8) == manifestBefore)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: set).filter { $0.hasPrefix(".") }
        #expect(leftovers.isEmpty)
    }
}
