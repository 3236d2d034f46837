import Foundation
import Testing
import TetherTestSupport

/// `tether trace export … --format perfetto` on the committed sets: every file passes the
/// trace-event schema check and holds every event of the set's baselines and every frame of its
/// capture.
struct TraceExportCommandTests {
    static let sets = ["ciq-clean", "ciq-silent-timeout", "session-clean", "session-file-resume", "session-reply-timeout",
                       "widget-property-change", "plugin-faulty"]

    @Test(arguments: sets)
    func aCommittedSetExportsEveryEventAndFrame(_ name: String) throws {
        let folder = try TemporaryFolder("trace-export")
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/\(name)").path
        let out = folder.path("\(name).json").path
        try Tools.tetherSucceeds(["trace", "export", set, "--format", "perfetto", "--out", out])
        let document = try ChromeTraceSchema.check(Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        let instants = document.events(phase: "i")

        let baselines = try FileManager.default.contentsOfDirectory(atPath: set + "/baseline").filter { $0.hasSuffix(".jsonl") }
        for file in baselines {
            let core = String(file.dropLast(".jsonl".count))
            let lines = try String(contentsOfFile: "\(set)/baseline/\(file)", encoding: .utf8).split(separator: "\n").count
            #expect(instants.filter { document.threadName(of: $0) == core }.count == lines, "\(core) of \(name)")
        }
        let inspect = try Tools.tetherSucceeds(["inspect", set, "--json"])
        let frames = try #require((try JSONSerialization.jsonObject(with: inspect.stdoutBytes) as? [String: Any])?["frames"] as? Int)
        #expect(instants.filter { $0["cat"] as? String == "frame" }.count == frames)
    }

    @Test func aSessionFileTransferIsASliceWithAProgressCounter() throws {
        let folder = try TemporaryFolder("trace-export")
        let out = folder.path("resume.json").path
        try Tools.tetherSucceeds(["trace", "export", Tools.repositoryRoot.appendingPathComponent("Captures/session-file-resume").path,
                                  "--format", "perfetto", "--out", out])
        let document = try ChromeTraceSchema.check(Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        let slices = document.events(phase: "X") + document.events(phase: "b")
        #expect(slices.contains { ($0["name"] as? String)?.hasPrefix("transfer_file → finished") == true || document.threadName(of: $0) == "session: transfer_file → finished" })
        let progress = document.events(phase: "C").compactMap { ($0["args"] as? [String: Any])?.values.first as? Double }
        #expect(progress.count > 2 && progress.last == 100)
    }

    @Test func aTraceFileWithTheFramesOfItsSet() throws {
        let folder = try TemporaryFolder("trace-export")
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/ciq-clean").path
        let trace = folder.path("t.jsonl").path
        try Tools.tetherSucceeds(["replay", set, "--trace", trace])
        let out = folder.path("t.json").path
        let result = try Tools.tetherSucceeds(["trace", "export", trace, "--capture", set, "--format", "perfetto", "--out", out])
        #expect(result.stdout.contains("frames of"))
        let document = try ChromeTraceSchema.check(Array(try Data(contentsOf: URL(fileURLWithPath: out))))
        #expect(document.events(phase: "X").contains { document.threadName(of: $0) == "messaging: send → completion" })
    }

    @Test func aMalformedTraceIsRefusedWithItsLine() throws {
        let folder = try TemporaryFolder("trace-export")
        let trace = folder.path("bad.jsonl").path
        try Data("{\"t_ns\":0,\"core\":\"messaging\",\"event\":\"a\"}\n{\"t_ns\":\n".utf8).write(to: URL(fileURLWithPath: trace))
        let result = try Tools.tether(["trace", "export", trace, "--format", "perfetto", "--out", folder.path("o.json").path])
        #expect(result.status != 0)
        #expect(result.stderr.contains("bad.jsonl") && result.stderr.contains("2"))
        #expect(!FileManager.default.fileExists(atPath: folder.path("o.json").path))
    }
}
