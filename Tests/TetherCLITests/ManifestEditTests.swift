import CaptureSet
import Foundation
import Testing
import TetherTestSupport

/// `annotate` and `seal` change only the keys they change: a hand-edited manifest keeps its
/// comments, its unknown keys and its formatting everywhere else.
@Suite struct ManifestEditTests {
    /// A set whose manifest carries comments, a quoted title, hand formatting and a key from a
    /// newer Tether.
    static func handEditedSet(_ folder: TemporaryFolder) throws -> (set: String, text: String) {
        let set = try AnnotateTests.makeSet(folder)
        let manifest = set + "/manifest.yaml"
        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        text = "# Recorded on the bench by hand; do not re-record.\n" + text
        text = text.replacingOccurrences(of: "\nannotations:\n", with: "\n# notes go here\nannotations:\n")
        text += "future_tether_key: {kept: true}   # a newer Tether's\n"
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        return (set, text)
    }

    /// Lines of `text` that are not in `edited`.
    static func lost(_ text: String, _ edited: String) -> [Substring] {
        let kept = Set(edited.split(separator: "\n"))
        return text.split(separator: "\n").filter { !kept.contains($0) }
    }

    @Test func annotateKeepsCommentsAndUnknownKeysAndChangesOnlyAnnotationsAndTheDigest() throws {
        let folder = try TemporaryFolder("cli-edit")
        let (set, text) = try Self.handEditedSet(folder)
        try Tools.tetherSucceeds(["annotate", set, "--frame", "2", "--text", "late"])
        let edited = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        // Only the digest changes (the capture got a comment); the annotation is appended.
        #expect(Self.lost(text, edited).allSatisfy { $0.hasPrefix("capture_sha256:") }, "\(Self.lost(text, edited))")
        #expect(edited.contains("# Recorded on the bench by hand; do not re-record."))
        #expect(edited.contains("# notes go here\nannotations:\n"))
        #expect(edited.contains("  text: late\n"))
        #expect(edited.contains("future_tether_key: {kept: true}   # a newer Tether's"))
    }

    @Test func aSecondAnnotationIsAppendedAfterTheFirstUntouched() throws {
        let folder = try TemporaryFolder("cli-edit")
        let (set, _) = try Self.handEditedSet(folder)
        try Tools.tetherSucceeds(["annotate", set, "--frame", "2", "--text", "first"])
        let once = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        try Tools.tetherSucceeds(["annotate", set, "--frame", "3", "--text", "second"])
        let twice = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        #expect(Self.lost(once, twice).allSatisfy { $0.hasPrefix("capture_sha256:") }, "\(Self.lost(once, twice))")
        let loaded = try CaptureSetDirectory.load(set, verify: true)
        #expect(loaded.manifest.annotations.map(\.text).suffix(2) == ["first", "second"])
    }

    @Test func sealOfAnUnsealedSetChangesOnlyStatusAndDigest() throws {
        let folder = try TemporaryFolder("cli-edit")
        let (set, text) = try Self.handEditedSet(folder)
        let unsealed = text.replacingOccurrences(of: "status: complete", with: "status: recording")
            .split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("capture_sha256:") }.joined(separator: "\n")
        try unsealed.write(toFile: set + "/manifest.yaml", atomically: true, encoding: .utf8)
        try Tools.tetherSucceeds(["seal", set])
        let sealed = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        #expect(Self.lost(unsealed, sealed) == ["status: recording"])
        #expect(sealed.contains("status: complete"))
        #expect(sealed.contains("capture_sha256: "))
        #expect(sealed.contains("future_tether_key: {kept: true}   # a newer Tether's"))
    }
}
