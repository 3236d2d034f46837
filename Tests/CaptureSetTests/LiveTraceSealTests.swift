import Foundation
import Testing
@testable import CaptureSet

/// The seal covers a set's live traces (`live/*`, `live_traces_sha256`) and loading checks them;
/// and no set is made inside another.
@Suite struct LiveTraceSealTests {
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-livetraces-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    func write(_ path: String, _ text: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }

    func manifest() -> CaptureSetManifest {
        CaptureSetManifest(title: "live", recordedAt: "2026-11-27T00:00:00Z",
                           interfaces: [ManifestInterface(index: 0, name: "lo", linkType: .ethernet, role: .ingestUDP, ingestPort: 12345)])
    }

    /// A sealed set whose `live/` holds `traces` (name → text) when it is sealed.
    func sealedSet(_ traces: [String: String] = ["messaging.jsonl": "{\"event\":\"a\"}\n"]) throws -> String {
        let path = folder + "/set"
        try CaptureSetDirectory.create(at: path, manifest: manifest())
        try write(path + "/capture.pcapng", "abc")
        for (name, text) in traces { try write(path + "/live/" + name, text) }
        try CaptureSetDirectory.seal(at: path)
        return path
    }

    func liveProblems(_ body: () throws -> Void) -> [String] {
        do {
            try body()
            Issue.record("expected the live traces to be refused")
            return []
        } catch let error as CaptureSetError {
            guard case .liveTracesChanged(_, let problems) = error else {
                Issue.record("expected liveTracesChanged, got \(error)")
                return []
            }
            return problems
        } catch {
            Issue.record("unexpected \(error)")
            return []
        }
    }

    @Test func sealRecordsTheDigestOfEveryLiveTrace() throws {
        let path = try sealedSet(["messaging.jsonl": "abc", "host.jsonl": ""])
        let manifest = try CaptureSetDirectory.readManifest(at: path)
        #expect(manifest.liveTracesSha256 == [
            "live/messaging.jsonl": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
            "live/host.jsonl": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        ])
        let text = try String(contentsOfFile: path + "/manifest.yaml", encoding: .utf8)
        #expect(text.contains("live_traces_sha256:\n  live/host.jsonl: e3b0c442"))
    }

    @Test func aSealedSetWithUnchangedLiveTracesLoadsWithoutWarnings() throws {
        let loaded = try CaptureSetDirectory.load(try sealedSet())
        #expect(loaded.warnings.isEmpty)
        #expect(loaded.manifest.sections.isEmpty)
    }

    @Test func aSetWithoutLiveTracesHasNoLiveTraceField() throws {
        let path = try sealedSet([:])
        #expect(try CaptureSetDirectory.readManifest(at: path).liveTracesSha256 == nil)
        #expect(!(try String(contentsOfFile: path + "/manifest.yaml", encoding: .utf8)).contains("live_traces_sha256"))
    }

    @Test func aChangedLiveTraceIsRefusedOnLoad() throws {
        let path = try sealedSet(["messaging.jsonl": "abc"])
        try write(path + "/live/messaging.jsonl", "abd")
        let problems = liveProblems { _ = try CaptureSetDirectory.load(path) }
        #expect(problems.count == 1)
        #expect(problems.first?.hasPrefix("live/messaging.jsonl has SHA-256 ") == true)
        #expect(problems.first?.hasSuffix("but was sealed with ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") == true)
    }

    @Test func aTruncatedLiveTraceIsRefusedOnLoad() throws {
        let path = try sealedSet(["session.jsonl": "{\"a\":1}\n{\"b\":2}\n"])
        try write(path + "/live/session.jsonl", "{\"a\":1}\n")
        #expect(liveProblems { _ = try CaptureSetDirectory.load(path) }.count == 1)
    }

    @Test func aMissingLiveTraceIsRefusedOnLoad() throws {
        let path = try sealedSet()
        try FileManager.default.removeItem(atPath: path + "/live/messaging.jsonl")
        #expect(liveProblems { _ = try CaptureSetDirectory.load(path) } == ["live/messaging.jsonl was sealed but is missing"])
    }

    @Test func anAddedLiveTraceIsRefusedOnLoad() throws {
        let path = try sealedSet()
        try write(path + "/live/widget.jsonl", "{}\n")
        #expect(liveProblems { _ = try CaptureSetDirectory.load(path) }
            == ["live/widget.jsonl was added after sealing (live_traces_sha256 does not list it)"])
    }

    @Test func aFolderInPlaceOfALiveTraceIsRefused() throws {
        let path = try sealedSet()
        try FileManager.default.createDirectory(atPath: path + "/live/nested", withIntermediateDirectories: true)
        #expect(liveProblems { _ = try CaptureSetDirectory.load(path) }.first?.contains("live/nested is not a regular file") == true)
    }

    @Test func aLiveTraceLinkedOutsideTheSetIsRefused() throws {
        let path = try sealedSet()
        try write(folder + "/elsewhere.jsonl", "{}\n")
        try FileManager.default.createSymbolicLink(atPath: path + "/live/outside.jsonl", withDestinationPath: folder + "/elsewhere.jsonl")
        #expect(throws: CaptureSetError.self) { _ = try CaptureSetDirectory.load(path) }
    }

    @Test func noVerifyLoadsChangedLiveTracesWithAWarning() throws {
        let path = try sealedSet()
        try write(path + "/live/messaging.jsonl", "changed")
        let loaded = try CaptureSetDirectory.load(path, verify: false)
        #expect(loaded.warnings.contains { $0.contains("live traces not checked (--no-verify)") })
    }

    @Test func liveTracesOfASetSealedWithoutTheFieldLoadWithANotVerifiedWarning() throws {
        let path = try sealedSet([:])
        try write(path + "/live/messaging.jsonl", "{}\n")
        let loaded = try CaptureSetDirectory.load(path)
        #expect(loaded.verified)
        #expect(loaded.warnings == ["capture set set: live traces not verified (live/messaging.jsonl): the manifest has no live_traces_sha256 "
            + "(sealed before Tether covered them); run `tether seal \(path)` to cover them."])
    }

    @Test func resealingChangedLiveTracesIsRefusedUnlessAccepted() throws {
        let path = try sealedSet(["messaging.jsonl": "abc"])
        try write(path + "/live/messaging.jsonl", "abd")
        #expect(liveProblems { try CaptureSetDirectory.seal(at: path) }.count == 1)
        let resealed = try CaptureSetDirectory.seal(at: path, acceptChangedCapture: true)
        #expect(resealed.liveTracesSha256?["live/messaging.jsonl"] == "a52d159f262b2c6ddb724a61840befc36eb30c88877a4030b65cbe86298449c9")
        #expect(try CaptureSetDirectory.load(path).warnings.isEmpty)
    }

    @Test func aManifestNamingALiveTraceOutsideLiveIsInvalid() throws {
        let path = try sealedSet()
        var text = try String(contentsOfFile: path + "/manifest.yaml", encoding: .utf8)
        text = text.replacingOccurrences(of: "  live/messaging.jsonl:", with: "  capture.pcapng:")
        try write(path + "/manifest.yaml", text)
        #expect(throws: CaptureSetError.self) { _ = try CaptureSetDirectory.readManifest(at: path) }
    }

    @Test(arguments: ["../x.jsonl", "/etc/passwd", "live/../capture.pcapng", "live/a/b.jsonl", "live/x.jsonl\u{0}"])
    func aManifestNamingAnUnsafeLiveTracePathIsInvalid(_ name: String) throws {
        var manifest = manifest()
        manifest.liveTracesSha256 = [name: String(repeating: "a", count: 64)]
        #expect(throws: CaptureSetError.self) { try CaptureSetDirectory.validate(manifest, path: "manifest.yaml") }
    }

    @Test(arguments: ["", "abc", String(repeating: "g", count: 64), String(repeating: "a", count: 65)])
    func aLiveTraceDigestThatIsNotSixtyFourHexDigitsIsInvalid(_ digest: String) throws {
        var manifest = manifest()
        manifest.liveTracesSha256 = ["live/messaging.jsonl": digest]
        #expect(throws: CaptureSetError.self) { try CaptureSetDirectory.validate(manifest, path: "manifest.yaml") }
    }

    @Test func aSetIsNotCreatedInsideAnotherSet() throws {
        let outer = try sealedSet()
        let nested = outer + "/nested/deeper"
        #expect(throws: CaptureSetError.insideCaptureSet(path: nested, enclosing: FileIO.realPath(outer)!)) {
            try CaptureSetDirectory.create(at: nested, manifest: manifest())
        }
        #expect(!FileManager.default.fileExists(atPath: outer + "/nested"))
    }

    @Test func aSetIsNotCreatedInsideAnotherSetThroughASymbolicLink() throws {
        let outer = try sealedSet()
        try FileManager.default.createSymbolicLink(atPath: folder + "/alias", withDestinationPath: outer)
        #expect(CaptureSetDirectory.enclosingSet(of: folder + "/alias/inner") == FileIO.realPath(outer))
    }

    @Test func aSetBesideAnotherSetIsCreated() throws {
        _ = try sealedSet()
        #expect(CaptureSetDirectory.enclosingSet(of: folder + "/sibling") == nil)
        try CaptureSetDirectory.create(at: folder + "/sibling", manifest: manifest())
    }
}
