import Foundation
import Testing
@testable import CaptureSet

/// Paths a manifest names stay inside the set; seal refuses a changed capture; YAML errors say
/// where; an oversized manifest is not read.
@Suite struct ManifestHardeningTests {
    /// A fresh empty folder, removed by the caller.
    static func folder() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tether-hardening-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    static func manifest(captureFile: String = "capture.pcapng", baselines: [String: String] = [:]) -> CaptureSetManifest {
        CaptureSetManifest(title: "t", recordedAt: "2026-11-22T00:45:00Z", captureFile: captureFile, baselines: baselines)
    }

    /// A sealed set in `root/name` whose capture holds `bytes`.
    static func sealedSet(in root: String, name: String = "set", bytes: [UInt8] = [1, 2, 3]) throws -> String {
        let path = root + "/" + name
        try CaptureSetDirectory.create(at: path, manifest: manifest())
        try Data(bytes).write(to: URL(fileURLWithPath: path + "/capture.pcapng"))
        try CaptureSetDirectory.seal(at: path)
        return path
    }

    /// The manifest text of `manifest` with `capture_file` replaced by `value` (validation on save
    /// would refuse to write it).
    static func text(captureFile value: String) throws -> String {
        let text = try CaptureSetDirectory.encodeManifest(manifest())
        return text.replacingOccurrences(of: "capture_file: capture.pcapng", with: "capture_file: \(value)")
    }

    @Test func anAbsoluteCaptureFileIsRefusedOnLoad() throws {
        #expect(throws: CaptureSetError.pathOutsideSet(set: "set", field: "capture_file", path: "/etc/passwd", reason: "is absolute")) {
            try CaptureSetDirectory.decodeManifest(try Self.text(captureFile: "/etc/passwd"), path: "root/set/manifest.yaml")
        }
    }

    @Test func aCaptureFileClimbingOutWithDotDotIsRefused() throws {
        #expect(throws: CaptureSetError.pathOutsideSet(set: "set", field: "capture_file", path: "../other/capture.pcapng", reason: "climbs out of the folder with `..`")) {
            try CaptureSetDirectory.decodeManifest(try Self.text(captureFile: "../other/capture.pcapng"), path: "root/set/manifest.yaml")
        }
    }

    @Test func aBaselineClimbingOutIsRefusedOnSave() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        var manifest = try CaptureSetDirectory.readManifest(at: set)
        manifest.baselines["ingest"] = "baseline/../../escape.jsonl"
        #expect(throws: CaptureSetError.pathOutsideSet(set: "set", field: "baselines.ingest", path: "baseline/../../escape.jsonl", reason: "climbs out of the folder with `..`")) {
            try CaptureSetDirectory.saveManifest(manifest, to: set)
        }
    }

    @Test func aCaptureFileSymlinkedOutOfTheSetIsRefusedOnLoadAndSeal() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        try Data([9, 9]).write(to: URL(fileURLWithPath: root + "/outside.pcapng"))
        try FileManager.default.removeItem(atPath: set + "/capture.pcapng")
        try FileManager.default.createSymbolicLink(atPath: set + "/capture.pcapng", withDestinationPath: root + "/outside.pcapng")
        func isOutside(_ error: CaptureSetError) -> Bool {
            if case .pathOutsideSet(_, "capture_file", _, let reason) = error { return reason.contains("symbolic link") }
            return false
        }
        let loadError = #expect(throws: CaptureSetError.self) { try CaptureSetDirectory.load(set, verify: false) }
        #expect(loadError.map(isOutside) == true, "\(String(describing: loadError))")
        let sealError = #expect(throws: CaptureSetError.self) { try CaptureSetDirectory.seal(at: set, acceptChangedCapture: true) }
        #expect(sealError.map(isOutside) == true, "\(String(describing: sealError))")
    }

    @Test func aSymlinkThatStaysInsideTheSetIsAccepted() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        try FileManager.default.moveItem(atPath: set + "/capture.pcapng", toPath: set + "/real.pcapng")
        try FileManager.default.createSymbolicLink(atPath: set + "/capture.pcapng", withDestinationPath: "real.pcapng")
        let loaded = try CaptureSetDirectory.load(set)
        #expect(loaded.verified)
    }

    @Test func aBaselineSymlinkedOutOfTheSetIsRefused() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        try FileManager.default.createDirectory(atPath: root + "/elsewhere", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: set + "/baseline", withDestinationPath: root + "/elsewhere")
        let loaded = try CaptureSetDirectory.load(set)
        #expect(throws: CaptureSetError.self) { try loaded.resolvedBaselinePath(core: "ingest") }
        // A path whose folder does not exist yet is judged by its nearest existing ancestor.
        #expect(try CaptureSetDirectory(path: set).resolve("new/deeper/file.jsonl", field: "baselines.x") == set + "/new/deeper/file.jsonl")
    }

    @Test func sealingASealedSetWhoseCaptureChangedIsRefused() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        let before = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        try Data([4, 5, 6]).write(to: URL(fileURLWithPath: set + "/capture.pcapng"))
        let error = try #require(#expect(throws: CaptureSetError.self) { try CaptureSetDirectory.seal(at: set) })
        guard case .sealedCaptureChanged = error else {
            Issue.record("expected sealedCaptureChanged, got \(error)")
            return
        }
        #expect(error.description.contains("--accept-changed-capture"))
        #expect(try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8) == before)
    }

    @Test func sealingAChangedCaptureWithAcceptRecordsTheNewDigest() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        try Data(Array("abc".utf8)).write(to: URL(fileURLWithPath: set + "/capture.pcapng"))
        let sealed = try CaptureSetDirectory.seal(at: set, acceptChangedCapture: true)
        #expect(sealed.captureSha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func resealingAnUnchangedSealedSetSucceeds() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        let first = try CaptureSetDirectory.readManifest(at: set).captureSha256
        #expect(try CaptureSetDirectory.seal(at: set).captureSha256 == first)
    }

    @Test func malformedYAMLNamesLineAndColumn() throws {
        let text = "schema_version: 1\ntitle: [unclosed\nrecorded_at: x\n"
        let error = try #require(#expect(throws: CaptureSetError.self) { try CaptureSetDirectory.decodeManifest(text, path: "m.yaml") })
        guard case .invalidManifest(_, _, let problem) = error else {
            Issue.record("expected invalidManifest, got \(error)")
            return
        }
        #expect(problem.contains("line 2") || problem.contains("line 3"), "\(problem)")
        #expect(problem.contains("column "), "\(problem)")
        #expect(!problem.contains("schema_version: 1"), "the whole document is echoed: \(problem)")
    }

    @Test func aManifestLargerThanTheLimitIsNotRead() throws {
        let root = try Self.folder()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let set = try Self.sealedSet(in: root)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: set + "/manifest.yaml"))
        try handle.truncate(atOffset: CaptureSetDirectory.maximumManifestBytes + 1)
        try handle.close()
        #expect(throws: CaptureSetError.manifestTooLarge(path: set + "/manifest.yaml", bytes: CaptureSetDirectory.maximumManifestBytes + 1, limit: CaptureSetDirectory.maximumManifestBytes)) {
            try CaptureSetDirectory.readManifest(at: set)
        }
    }
}
