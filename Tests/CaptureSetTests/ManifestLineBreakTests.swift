import Foundation
import Testing
@testable import CaptureSet

/// Manifests with line breaks other than LF (U+2028, U+2029, NEL, CR, CR LF): libyaml counts
/// them as line breaks, so the text edit must too; and scenario entries that cannot name a folder
/// or hold keys nobody reads.
@Suite struct ManifestLineBreakTests {
    @Test(arguments: ["\u{2028}", "\u{2029}", "\u{85}", "\r", "\r\n"])
    func anEditOfAManifestWithAnotherLineBreakDoesNotTrapAndSaysTheNewValues(lineBreak: String) throws {
        let original = "# a comment\(lineBreak)title: \"a\u{2028}b\"\ntags: [x]\(lineBreak)status: recording\n"
        let encoded = "title: \"a\u{2028}b\"\ntags: [x]\nstatus: complete\n"
        // Either the edit (which must read back as `encoded` says) or nil (the caller writes `encoded`).
        // edit(_:toSay:) itself checks that its text reads back as `encoded`'s values.
        if let edited = ManifestTextEdit.edit(original, toSay: encoded) {
            #expect(edited.contains("status: complete"))
            #expect(!edited.contains("recording"))
            #expect(edited.contains("# a comment"))
        }
    }

    @Test func aManifestWithARawLineSeparatorSealsWithoutTrapping() throws {
        let root = try ManifestHardeningTests.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try ManifestHardeningTests.sealedSet(in: root)
        let manifestPath = set + "/manifest.yaml"
        var text = try String(contentsOfFile: manifestPath, encoding: .utf8)
        text = "# note\u{2028}# more\u{2029}\n" + text.replacingOccurrences(of: "title: t", with: "title: \"t\u{2028}x\"")
        try text.write(toFile: manifestPath, atomically: true, encoding: .utf8)
        var manifest = try CaptureSetDirectory.readManifest(at: set)
        manifest.annotations.append(ManifestAnnotation(frame: 1, timeNs: 0, text: "n"))
        try CaptureSetDirectory.saveManifest(manifest, to: set)
        let reread = try CaptureSetDirectory.readManifest(at: set)
        #expect(reread.title == "t\u{2028}x")
        #expect(reread.annotations.count == 1)
    }

    @Test func theLinesAreCutWhereLibyamlCutsThem() {
        let lines = ManifestTextEdit.Blocks.lines(of: "a\u{2028}b\u{2029}c\u{85}d\re\r\nf\ng")
        #expect(lines == ["a", "b", "c", "d", "e", "f", "g"])
    }

    @Test func aScenarioNameLongerThanAFolderNameMayBeIsRefused() throws {
        let long = String(repeating: "a", count: ManifestScenario.maximumNameLength + 1)
        var manifest = ManifestHardeningTests.manifest()
        manifest.scenarios = [ManifestScenario(name: long, faults: ["drop:frame=1"])]
        do {
            try CaptureSetDirectory.validate(manifest, path: "set/manifest.yaml")
            Issue.record("a \(long.count)-character scenario name was accepted")
        } catch {
            #expect(error.description.contains("at most \(ManifestScenario.maximumNameLength)"), "\(error)")
        }
    }

    @Test func anUnknownScenarioKeyIsAWarningNamingItsLine() throws {
        let root = try ManifestHardeningTests.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try ManifestHardeningTests.sealedSet(in: root)
        let manifestPath = set + "/manifest.yaml"
        let text = try String(contentsOfFile: manifestPath, encoding: .utf8)
            + "scenarios:\n  - name: lost\n    faults: [drop:frame=1]\n    expectation:\n      - type: count\n        event: x\n        equals: 1\n"
        try text.write(toFile: manifestPath, atomically: true, encoding: .utf8)
        let loaded = try CaptureSetDirectory.load(set, verify: false)
        let warning = try #require(loaded.warnings.first { $0.contains("scenarios[0].expectation") })
        #expect(warning.contains("is not a scenario field"))
        #expect(warning.contains("line "))
    }
}

