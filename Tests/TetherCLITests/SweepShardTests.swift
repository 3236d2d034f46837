import Foundation
import Testing

/// `tether replay SET --sweep KIND --shard I/N` runs part I of N of the set's variants, and
/// `tether junit merge` joins the parts into the report one job writes (docs/ci-sharding.md,
/// "One long sweep across jobs").
struct SweepShardTests {
    func variants(in xml: String) -> [String] {
        xml.components(separatedBy: "<testcase name=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
    }

    @Test func thePartsOfASweepAreDisjointCompleteAndMergeIntoTheReportOfOneJob() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sweep-shards-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // Ended as recorded, three of session-clean's variants fail: the parts carry failures too.
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/session-clean").path
        let sweep = ["replay", set, "--sweep", "drop", "--sweep-settle", "0s"]
        let whole = folder.appendingPathComponent("whole.xml").path
        #expect(try Tools.tether(sweep + ["--junit", whole]).status == 1)
        var parts: [String] = []
        for i in 1...3 {
            let part = folder.appendingPathComponent("part-\(i).xml").path
            let result = try Tools.tether(sweep + ["--shard", "\(i)/3", "--junit", part])
            #expect(result.stdout.contains("== sweep drop over session-clean (part \(i)/3: "), "\(result.stdout)")
            parts.append(part)
        }
        let merged = folder.appendingPathComponent("merged.xml").path
        let merge = try Tools.tether(["junit", "merge"] + parts + ["--out", merged, "--name", "tether replay --sweep"])
        #expect(merge.status == 0, "\(merge.stderr)")
        #expect(!merge.stderr.contains("warning"), "\(merge.stderr)")
        let pieces = try parts.map { variants(in: try String(contentsOfFile: $0, encoding: .utf8)) }
        let all = variants(in: try String(contentsOfFile: whole, encoding: .utf8))
        #expect(all.count == 8)
        #expect(pieces.flatMap { $0 } == all, "disjoint and complete, in order: \(pieces)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: merged)) == Data(contentsOf: URL(fileURLWithPath: whole)))
    }

    @Test func mergingTheSamePartTwiceIsReported() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sweep-shards-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/session-clean").path
        let part = folder.appendingPathComponent("part-1.xml").path
        _ = try Tools.tether(["replay", set, "--sweep", "drop", "--shard", "1/2", "--junit", part])
        let merge = try Tools.tether(["junit", "merge", part, part, "--out", folder.appendingPathComponent("m.xml").path])
        #expect(merge.stderr.contains("repeats test cases of"), "\(merge.stderr)")
    }
}
