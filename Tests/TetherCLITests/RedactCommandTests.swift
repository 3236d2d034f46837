import Foundation
import Redaction
import Testing
import TetherTestSupport

/// `tether redact` end to end: what it prints, what it refuses, and that tshark and `tether
/// inspect` read the redacted set with none of the original values.
@Suite struct RedactCommandTests {
    static func set(_ name: String) -> String { Tools.repositoryRoot.appendingPathComponent("Captures/\(name)").path }

    @Test func printsTheCountsPerKindAndPerFile() throws {
        let folder = try TemporaryFolder("redact-cli")
        let out = folder.path("ciq-clean").path
        let result = try Tools.tetherSucceeds(["redact", Self.set("ciq-clean"), "--out", out])
        #expect(result.stdout.contains("redacted into \(out): 2 addresses, 1 name"))
        #expect(result.stdout.contains("  capture.pcapng: address "))
        #expect(result.stdout.contains("  live/messaging.jsonl: address "))
        #expect(!result.stdout.uppercased().contains("F0:F0:F0:F0:F0:F0"))
    }

    @Test func refusesAnOutputInsideTheSet() throws {
        let result = try Tools.tether(["redact", Self.set("ciq-clean"), "--out", Self.set("ciq-clean") + "/redacted"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("is inside the set"))
        #expect(!FileManager.default.fileExists(atPath: Self.set("ciq-clean") + "/redacted"))
    }

    @Test func refusesAnExistingNonEmptyFolder() throws {
        let folder = try TemporaryFolder("redact-cli-nonempty")
        try Data("keep".utf8).write(to: folder.path("notes.txt"))
        let result = try Tools.tether(["redact", Self.set("ciq-clean"), "--out", folder.url.path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("already exists and is not an empty folder"))
    }

    @Test func tsharkReadsTheRedactedCaptureWithoutErrors() throws {
        let folder = try TemporaryFolder("redact-cli-tshark")
        for name in ["ciq-clean", "widget-broker-drop", "session-clean"] {
            let out = folder.path(name).path
            try Tools.tetherSucceeds(["redact", Self.set(name), "--out", out, "--ip"])
            let result = try Tools.run(try Tools.tshark(), ["-r", out + "/capture.pcapng"])
            #expect(result.status == 0, "\(name): \(result.stderr)")
            #expect(!result.stdout.contains("Malformed"), "\(name)")
            #expect(!result.stderr.lowercased().contains("error"), "\(name): \(result.stderr)")
            let before = try Tools.run(try Tools.tshark(), ["-r", Self.set(name) + "/capture.pcapng"])
            #expect(result.stdout.split(separator: "\n").count == before.stdout.split(separator: "\n").count)
        }
    }

    @Test func inspectOfTheRedactedSetShowsNoOriginalValue() throws {
        let folder = try TemporaryFolder("redact-cli-inspect")
        let originals = [
            "ciq-clean": ["f0:f0:f0:f0:f0:f0", "f1:f1:f1:f1:f1:f1", "f0f0f0f0f0f0", "watch-1"],
            "widget-property-change": ["widget-demo", "/demo/", "\"demo\""],
        ]
        for (name, values) in originals {
            let out = folder.path(name).path
            try Tools.tetherSucceeds(["redact", Self.set(name), "--out", out])
            let text = try Tools.tetherSucceeds(["inspect", out, "--frames"]).stdout.lowercased()
            let json = try Tools.tetherSucceeds(["inspect", out, "--frames", "--json"]).stdout.lowercased()
            let original = try Tools.tetherSucceeds(["inspect", Self.set(name), "--frames"]).stdout.lowercased()
            for value in values {
                #expect(original.contains(value) || !json.contains(value), "\(name): \(value) not even in the original")
                #expect(!text.contains(value), "\(name): inspect --frames still shows \(value)")
                #expect(!json.contains(value), "\(name): inspect --frames --json still shows \(value)")
            }
        }
    }

    @Test func redactedSetReplaysGreenFromTheCommandLine() throws {
        let folder = try TemporaryFolder("redact-cli-replay")
        let out = folder.path("widget-write-race").path
        try Tools.tetherSucceeds(["redact", Self.set("widget-write-race"), "--out", out])
        try Tools.tetherSucceeds(["replay", out])
    }

    @Test func refusesAnOutputInsideAnotherSet() throws {
        let folder = try TemporaryFolder("redact-cli-other-set")
        let other = folder.path("plugin-clean").path
        try Tools.tetherSucceeds(["redact", Self.set("plugin-clean"), "--out", other])
        let result = try Tools.tether(["redact", Self.set("ciq-clean"), "--out", other + "/nested"])
        #expect(result.status == 1)
        #expect(result.stderr.contains("plugin-clean"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: other + "/nested"))
    }

    @Test func aCutOffCaptureIsRedactedUpToItsLastWholeFrameWithAWarning() throws {
        let folder = try TemporaryFolder("redact-cli-cut")
        let damaged = folder.path("ciq-cut").path
        try FileManager.default.copyItem(atPath: Self.set("ciq-clean"), toPath: damaged)
        let capture = URL(fileURLWithPath: damaged + "/capture.pcapng")
        let bytes = try Data(contentsOf: capture)
        try bytes.prefix(bytes.count - 37).write(to: capture)
        let out = folder.path("ciq-cut-redacted").path
        let result = try Tools.tether(["redact", damaged, "--out", out])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains("warning"), "\(result.stderr)")
        #expect(result.stdout.contains("redacted into"))
    }

    static let committedSets: [String] = {
        let captures = Tools.repositoryRoot.appendingPathComponent("Captures").path
        return ((try? FileManager.default.contentsOfDirectory(atPath: captures)) ?? [])
            .filter { FileManager.default.fileExists(atPath: "\(captures)/\($0)/manifest.yaml") }.sorted()
    }()

    /// Every spelling `inspect` could show an original value in: addresses as `f0:f0:…` and bare
    /// hex in both byte orders, keys in hex, strings of five bytes or more as they are and in hex.
    static func spellings(_ report: RedactionReport) -> [String] {
        func hex(_ bytes: [UInt8], _ separator: String) -> String { bytes.map { String(format: "%02x", $0) }.joined(separator: separator) }
        var spellings: [String] = []
        for entry in report.map.entries {
            switch entry.kind {
            case .address:
                for order in [entry.original, entry.original.reversed()] { spellings += [hex(order, ":"), hex(order, "")] }
            case .key:
                spellings += [hex(entry.original, ""), hex(entry.original.reversed(), "")]
            case .ip:
                if entry.original.count == 4 { spellings.append(entry.original.map(String.init).joined(separator: ".")) }
            default:
                if entry.original.count >= 5 {
                    spellings += [String(decoding: entry.original, as: UTF8.self).lowercased(), hex(entry.original, "")]
                }
            }
        }
        return spellings
    }

    @Test(arguments: committedSets)
    func inspectOfEveryRedactedSetShowsNoneOfTheOriginalValues(_ name: String) throws {
        let folder = try TemporaryFolder("redact-cli-inspect-all")
        let out = folder.path(name).path
        let report = try SetRedactor.redact(set: Self.set(name), to: out, options: RedactionOptions(ip: true))
        let text = try Tools.tetherSucceeds(["inspect", out, "--frames"]).stdout.lowercased()
        let json = try Tools.tetherSucceeds(["inspect", out, "--frames", "--json"]).stdout.lowercased()
        for spelling in Self.spellings(report) {
            #expect(!text.contains(spelling), "\(name): inspect --frames shows \(spelling)")
            #expect(!json.contains(spelling), "\(name): inspect --frames --json shows \(spelling)")
        }
    }
}
