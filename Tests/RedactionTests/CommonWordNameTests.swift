import CaptureKit
import CaptureSet
import Foundation
import Testing
import TetherTestSupport
@testable import Redaction

/// A device named like a word the set itself uses (a core, an event, a call, a result, a YAML
/// boolean) is replaced where it is the device's name and nowhere else: the redacted set replays
/// with the same verdicts, and the last search does not take the set's own words for the name.
@Suite struct CommonWordNameTests {
    /// Captures/ciq-clean copied into `folder` with its watch, `watch-1`, renamed `word` wherever
    /// the name stands (the manifest's device lists, the device-list URL and device names in the
    /// API-call records and the traces), then sealed again.
    static func renamedSet(_ word: String, in folder: TemporaryFolder, label: String? = nil) throws -> String {
        let set = folder.path("ciq-\(label ?? word)").path
        try FileManager.default.copyItem(atPath: CommittedSetsTests.captures.appendingPathComponent("ciq-clean").path, toPath: set)
        for file in try CommittedSetsTests.files(under: set) {
            if file.hasSuffix(".index") {
                try FileManager.default.removeItem(atPath: file)
                continue
            }
            guard file.hasSuffix(".jsonl") || file.hasSuffix(".yaml") else { continue }
            var text = try String(contentsOfFile: file, encoding: .utf8)
            // Quoted in YAML so `true` stays a string; percent-encoded in the device-list URL,
            // escaped in JSON.
            text = text.replacingOccurrences(of: "name: watch-1", with: "name: '\(word.replacingOccurrences(of: "'", with: "''"))'")
            text = text.replacingOccurrences(of: "d0Name=watch-1", with: "d0Name=" + String(decoding: Percent.encode(Array(word.utf8)), as: UTF8.self))
            text = text.replacingOccurrences(of: "watch-1", with: String(decoding: JSONText.escape(Array(word.utf8)), as: UTF8.self))
            try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        }
        let capture = set + "/capture.pcapng"
        let (interfaces, frames) = try CommittedSetsTests.frames(capture)
        let writer = try PcapngWriter(path: capture)
        for interface in interfaces { _ = try writer.addInterface(interface) }
        for var frame in frames {
            if interfaces[frame.interfaceIndex].linkType == .user0 {
                frame.data = Array(String(decoding: frame.data, as: UTF8.self)
                    .replacingOccurrences(of: "d0Name=watch-1", with: "d0Name=" + String(decoding: Percent.encode(Array(word.utf8)), as: UTF8.self))
                    .replacingOccurrences(of: "watch-1", with: String(decoding: JSONText.escape(Array(word.utf8)), as: UTF8.self)).utf8)
                frame.originalLength = frame.data.count
            }
            try writer.write(frame)
        }
        try writer.close()
        try CaptureSetDirectory.seal(at: set, acceptChangedCapture: true)
        return set
    }

    @Test(arguments: ["status", "true", "messaging", "send", "Success", "core", "event"])
    func deviceNamedLikeAWordOfTheSetsVocabularyIsRedactedAndReplaysWithTheSameVerdicts(_ word: String) throws {
        let folder = try TemporaryFolder("redact-common-word")
        let set = try Self.renamedSet(word, in: folder)
        let before = try CommittedSetsTests.verdicts(set)
        #expect(before.expectations.allSatisfy { $0.hasSuffix("true") }, "\(word): the renamed set itself should pass: \(before)")
        let out = folder.path("redacted").path
        let report = try SetRedactor.redact(set: set, to: out)
        #expect(report.map.originals(of: .name) == [Array(word.utf8)])
        #expect(report.survivors.isEmpty)
        let after = try CommittedSetsTests.verdicts(out)
        #expect(before.expectations.map { $0.hasSuffix("true") } == after.expectations.map { $0.hasSuffix("true") }, "\(word): \(before) vs \(after)")
        #expect(before.baselines == after.baselines, "\(word): \(before) vs \(after)")
    }

    @Test(arguments: ["status", "true", "messaging", "send", "Success"])
    func deviceNamedLikeAWordKeepsEveryKeyEventCoreAndCallName(_ word: String) throws {
        let folder = try TemporaryFolder("redact-common-word-keys")
        let set = try Self.renamedSet(word, in: folder)
        let out = folder.path("redacted").path
        _ = try SetRedactor.redact(set: set, to: out)
        let manifest = try String(contentsOfFile: out + "/manifest.yaml", encoding: .utf8)
        let original = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        // Only the device lists' names changed in the manifest's structure: every key is the same.
        func keys(_ text: String) -> [String] {
            text.split(separator: "\n").compactMap { line in
                let trimmed = line.drop { $0 == " " || $0 == "-" }
                guard let colon = trimmed.firstIndex(of: ":") else { return nil }
                return String(trimmed[..<colon])
            }
        }
        #expect(keys(manifest) == keys(original))
        #expect(!manifest.contains("name: '\(word)'"))
        let trace = try String(contentsOfFile: out + "/live/messaging.jsonl", encoding: .utf8)
        #expect(trace.contains("\"core\":\"messaging\""))
        #expect(!trace.contains("\"name\":\"\(word)\""))
    }

    @Test func deviceNamedLikeAWordOfOtherTextIsListedAndWrittenOnlyWhenAllowed() throws {
        // `watch` also stands in the watch's model, "Connect IQ watch (Bumble rig)": the last
        // search cannot tell it from the name, so redact refuses and lists where.
        let folder = try TemporaryFolder("redact-common-word-model")
        let set = try Self.renamedSet("watch", in: folder)
        let out = folder.path("redacted").path
        do {
            _ = try SetRedactor.redact(set: set, to: out)
            Issue.record("redact wrote a set that still says `watch`")
        } catch {
            guard case .survivors(_, let survivors) = error else { throw error }
            #expect(!survivors.isEmpty)
            #expect(survivors.allSatisfy { $0.kind == .name && $0.context.contains("\"model\"") }, "\(survivors)")
        }
        #expect(!FileManager.default.fileExists(atPath: out))
        let report = try SetRedactor.redact(set: set, to: out, options: RedactionOptions(allowSurvivors: true))
        #expect(report.survivors.allSatisfy { $0.context.contains("\"model\"") })
        let before = try CommittedSetsTests.verdicts(set), after = try CommittedSetsTests.verdicts(out)
        #expect(before.expectations.map { $0.hasSuffix("true") } == after.expectations.map { $0.hasSuffix("true") })
        #expect(before.baselines == after.baselines)
    }

    /// Names written to break a reader that takes text for structure: YAML and JSON syntax,
    /// quotes, escapes, line separators, literals, numbers, a file name of the set, a word of the
    /// device-list URL.
    static let hostileNames = [
        "a: b", "x # y", "- item", "'quoted'", "\"dq\"", "back\\slash", "line\u{2028}sep", "tab\tname", "{flow: 1}", "[seq]",
        "null", "yes", "0x1F", "12345", "messaging.jsonl", "Connect", "Kai's watch", "ünïcode ⌚",
    ]

    @Test func hostileDeviceNamesAreRedactedOrRefusedAndNeverCorruptTheSet() throws {
        for (index, name) in Self.hostileNames.enumerated() {
            let folder = try TemporaryFolder("redact-hostile-name")
            let set = try Self.renamedSet(name, in: folder, label: "hostile-\(index)")
            let before = try CommittedSetsTests.verdicts(set)
            let out = folder.path("redacted").path
            let report: RedactionReport
            do {
                report = try SetRedactor.redact(set: set, to: out)
            } catch {
                guard case .survivors(_, let survivors) = error else {
                    Issue.record("\(name.debugDescription): \(error)")
                    continue
                }
                #expect(!FileManager.default.fileExists(atPath: out))
                #expect(!survivors.contains { $0.context.contains("of \"name\"") }, "\(name.debugDescription): \(survivors)")
                report = try SetRedactor.redact(set: set, to: out, options: RedactionOptions(allowSurvivors: true))
            }
            #expect(report.map.originals(of: .name) == [Array(name.utf8)], "\(name.debugDescription)")
            let after = try CommittedSetsTests.verdicts(out)
            #expect(before.expectations.map { $0.hasSuffix("true") } == after.expectations.map { $0.hasSuffix("true") }, "\(name.debugDescription)")
            #expect(before.baselines == after.baselines, "\(name.debugDescription): \(before) vs \(after)")
        }
    }
}
