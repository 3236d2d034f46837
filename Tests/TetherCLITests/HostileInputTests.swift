import CaptureSet
import Foundation
import Testing
import TetherTestSupport
@testable import TetherCLI

/// Input written to hurt: alias bombs, deep nesting, FIFOs where files belong, lines of hundreds
/// of megabytes. Each is refused promptly with a sentence that names the limit, and nothing is
/// changed on disk.
@Suite struct HostileInputTests {
    /// A YAML "billion laughs": ten levels of ten aliases, 10¹⁰ nodes once expanded, in about 500 bytes.
    static let aliasBomb: String = {
        var lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for level in 1...9 {
            let previous = "*a\(level - 1)"
            lines.append("a\(level): &a\(level) [\(Array(repeating: previous, count: 10).joined(separator: ", "))]")
        }
        return lines.joined(separator: "\n") + "\n"
    }()

    @Test func aManifestAliasBombIsRefusedNamingTheNodeLimit() throws {
        let folder = try TemporaryFolder("cli-hostile")
        let set = try HardeningTests.makeSet(folder)
        let manifest = set + "/manifest.yaml"
        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        text += "bomb:\n" + Self.aliasBomb.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n") + "\n"
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["inspect", set])
        #expect(result.status != 0)
        #expect(result.stderr.contains("YAML nodes"), "\(result.stderr)")
        #expect(result.stderr.contains(YAMLLimits.Variable.nodes), "\(result.stderr)")
        #expect(try String(contentsOfFile: manifest, encoding: .utf8) == text)
    }

    @Test(arguments: ["[", "{a: "])
    func aManifestNestedTenThousandDeepIsRefusedNamingTheDepthLimit(opener: String) throws {
        let folder = try TemporaryFolder("cli-hostile")
        let set = try HardeningTests.makeSet(folder)
        let manifest = set + "/manifest.yaml"
        var text = try String(contentsOfFile: manifest, encoding: .utf8)
        text += "deep: " + String(repeating: opener, count: 10_000) + "\n"
        try text.write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["replay", set])
        #expect(result.status != 0)
        // libyaml's own nesting limit (1,000 flow levels, met while it scans ahead) or Tether's
        // depth budget, whichever comes first: either names nesting.
        #expect(result.stderr.lowercased().contains("nest"), "\(result.stderr)")
    }

    @Test(arguments: ["messaging", "session", "widget"])
    func aLiveScriptAliasBombIsRefusedBeforeAnythingStarts(host: String) throws {
        let folder = try TemporaryFolder("cli-hostile")
        let script = folder.path("bomb.yaml").path
        try (Self.aliasBomb + "steps: [*a9]\n").write(toFile: script, atomically: true, encoding: .utf8)
        // Every required option is given, pointing at nothing: the script must be refused
        // before any of them is used.
        var arguments = ["live", host, "--script", script]
        switch host {
        case "messaging": arguments += ["--hci", "tcp-client:127.0.0.1:1", "--peer", "F0:F0:F0:F0:F0:F0"]
        case "session":
            arguments += ["--role", "phone", "--peer", "F0:F0:F0:F0:F0:A1", "--hci", "tcp-client:127.0.0.1:1", "--store", folder.path("store").path]
        default: arguments += ["--role", "host", "--container", folder.url.path, "--broker", "127.0.0.1:1"]
        }
        let result = try Tools.tether(arguments)
        #expect(result.status != 0)
        #expect(result.stderr.contains("YAML nodes"), "\(result.stderr)")
        #expect(result.stderr.contains("bomb.yaml"), "\(result.stderr)")
    }

    /// Yams reads a plain `1:2:3` as a base-60 integer and traps when it overflows the field it
    /// is decoded into (found by the script fuzzer); the budget check refuses it first.
    @Test(arguments: ["1:2:3:4:5:6:7:8:9:10:11:12", "99999999999999999:30", "1:0:0"])
    func aBaseSixtyNumberThatWouldOverflowIsRefusedNotTrapped(value: String) throws {
        let folder = try TemporaryFolder("cli-hostile")
        let set = try HardeningTests.makeSet(folder)
        let manifest = set + "/manifest.yaml"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        let edited = text.replacingOccurrences(of: "schema_version: 1\n", with: "schema_version: \(value)\n")
        try edited.write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["inspect", set])
        #expect(result.status == 1, "\(result.stderr)")
        #expect(result.stderr.contains("base-60 number"), "\(result.stderr)")
        #expect(result.stderr.contains("at line 1"), "\(result.stderr)")
    }

    @Test func aFIFOWhereTheBaselineBelongsIsRefusedNotWaitedOn() throws {
        let folder = try TemporaryFolder("cli-hostile")
        let set = try HardeningTests.makeSet(folder)
        try FileManager.default.createDirectory(atPath: set + "/baseline", withIntermediateDirectories: true)
        #expect(mkfifo(set + "/baseline/ingest.jsonl", 0o644) == 0)
        let manifest = set + "/manifest.yaml"
        let text = try String(contentsOfFile: manifest, encoding: .utf8)
        try text.replacingOccurrences(of: "baselines: {}\n", with: "baselines:\n  ingest: baseline/ingest.jsonl\n")
            .write(toFile: manifest, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["replay", set])
        #expect(result.status != 0)
        // The set's report line (standard output) names the baseline and why it was not read.
        #expect(result.stdout.contains("FIFO"), "\(result.stdout)")
    }

    @Test func aFIFOGivenAsTheCaptureIsRefusedNotWaitedOn() throws {
        let folder = try TemporaryFolder("cli-hostile")
        let fifo = folder.path("capture.pcapng").path
        #expect(mkfifo(fifo, 0o644) == 0)
        let result = try Tools.tether(["inspect", fifo])
        #expect(result.status != 0)
        #expect(result.stderr.contains("FIFO"), "\(result.stderr)")
    }

    @Test func aTraceLineLongerThanTheLimitIsRefusedNamingTheLimit() throws {
        let folder = try TemporaryFolder("cli-hostile")
        let trace = folder.path("long.jsonl").path
        let good = #"{"t_ns":0,"core":"ingest","event":"summary"}"#
        let long = #"{"t_ns":1,"core":"ingest","event":"x","pad":""# + String(repeating: "a", count: 2_000) + #""}"#
        try (good + "\n" + long + "\n").write(toFile: trace, atomically: true, encoding: .utf8)
        let result = try Tools.tether(["diff", trace, trace], environment: ["TETHER_TRACE_MAX_LINE_BYTES": "1000"])
        #expect(result.status != 0)
        #expect(result.stderr.contains("long.jsonl:2"), "\(result.stderr)")
        #expect(result.stderr.contains("TETHER_TRACE_MAX_LINE_BYTES"), "\(result.stderr)")
    }
}
