import CaptureKit
import Foundation
import Testing
@testable import CaptureSet

/// A fresh empty folder under the system temporary folder.
fileprivate func makeTemporaryFolder(_ label: String = "captureset") throws -> String {
    let path = FileManager.default.temporaryDirectory
        .appendingPathComponent("tether-\(label)-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

fileprivate func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    try Data(bytes).write(to: URL(fileURLWithPath: path))
}

fileprivate func sampleManifest(status: CaptureSetStatus = .recording, sha: String? = nil) -> CaptureSetManifest {
    CaptureSetManifest(
        title: "sample", recordedAt: "2026-11-22T00:45:00Z", status: status, captureSha256: sha,
        interfaces: [ManifestInterface(index: 0, name: "lo", linkType: .ethernet, role: .ingestUDP, ingestPort: 12345)])
}

/// Makes a set with `capture` as its capture file and seals it.
fileprivate func makeSealedSet(in folder: String, name: String, capture: [UInt8]) throws -> String {
    let path = folder + "/" + name
    try CaptureSetDirectory.create(at: path, manifest: sampleManifest())
    try writeFile(path + "/capture.pcapng", capture)
    try CaptureSetDirectory.seal(at: path)
    return path
}

@Test func sha256OfFileMatchesPublishedVectors() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    try writeFile(folder + "/abc", Array("abc".utf8))
    try writeFile(folder + "/empty", [])
    #expect(try CaptureSetDirectory.sha256(ofFile: folder + "/abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(try CaptureSetDirectory.sha256(ofFile: folder + "/empty") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
}

@Test func sha256IsTheSameWhateverTheChunkSize() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    // NIST's one-million-'a' vector; 4093-byte chunks put boundaries at odd places.
    try writeFile(folder + "/a", [UInt8](repeating: 0x61, count: 1_000_000))
    let expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
    #expect(try CaptureSetDirectory.sha256(ofFile: folder + "/a") == expected)
    #expect(try CaptureSetDirectory.sha256(ofFile: folder + "/a", chunkSize: 4093) == expected)
}

@Test func sha256OfMissingFileNamesIt() throws {
    let error = #expect(throws: CaptureSetError.self) { _ = try CaptureSetDirectory.sha256(ofFile: "/nonexistent/tether/x.pcapng") }
    guard case let .io(path, operation, _) = error else {
        Issue.record("expected io, got \(String(describing: error))")
        return
    }
    #expect(path == "/nonexistent/tether/x.pcapng")
    #expect(operation == "open")
}

@Test func sealedSetLoadsVerified() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = try makeSealedSet(in: folder, name: "walk", capture: Array("abc".utf8))
    let set = try CaptureSetDirectory.load(path)
    #expect(set.verified)
    #expect(set.warnings.isEmpty)
    #expect(set.manifest.status == .complete)
    #expect(set.manifest.captureSha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    #expect(set.name == "walk")
    #expect(set.capturePath == path + "/capture.pcapng")
}

@Test func changedCaptureIsADigestMismatchNamingBothDigests() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = try makeSealedSet(in: folder, name: "walk", capture: Array("abc".utf8))
    try writeFile(path + "/capture.pcapng", Array("abd".utf8))
    let error = #expect(throws: CaptureSetError.self) { _ = try CaptureSetDirectory.load(path) }
    let actual = try CaptureSetDirectory.sha256(ofFile: path + "/capture.pcapng")
    #expect(error == .digestMismatch(
        set: "walk", file: path + "/capture.pcapng",
        expected: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", actual: actual))
    let text = error?.description ?? ""
    #expect(text.contains("walk") && text.contains(actual) && text.contains("--no-verify") && text.contains("tether import"))
}

@Test func aDigestCheckedAlongsideGivesTheMismatchWhenWaitedFor() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = try makeSealedSet(in: folder, name: "walk", capture: Array("abc".utf8))
    let (intact, intactDigest) = try CaptureSetDirectory.loadVerifyingAlongside(path)
    #expect(intact.verified)
    #expect(throws: Never.self) { try intactDigest?.wait() }
    try writeFile(path + "/capture.pcapng", Array("abd".utf8))
    let (changed, digest) = try CaptureSetDirectory.loadVerifyingAlongside(path)
    #expect(changed.manifest == intact.manifest)
    let actual = try CaptureSetDirectory.sha256(ofFile: path + "/capture.pcapng")
    let mismatch = CaptureSetError.digestMismatch(
        set: "walk", file: path + "/capture.pcapng",
        expected: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", actual: actual)
    // Asked twice, the same answer.
    for _ in 0..<2 {
        let error = #expect(throws: CaptureSetError.self) { try digest?.wait() }
        #expect(error == mismatch)
    }
}

@Test func noVerifyLoadsAChangedCaptureWithAWarning() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = try makeSealedSet(in: folder, name: "walk", capture: Array("abc".utf8))
    try writeFile(path + "/capture.pcapng", Array("abd".utf8))
    let set = try CaptureSetDirectory.load(path, verify: false)
    #expect(!set.verified)
    #expect(set.warnings.count == 1)
}

@Test func unsealedRecordingLoadsWithWarnings() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/live"
    try CaptureSetDirectory.create(at: path, manifest: sampleManifest())
    try writeFile(path + "/capture.pcapng", [1, 2, 3])
    let set = try CaptureSetDirectory.load(path)
    #expect(!set.verified)
    #expect(set.warnings.count == 2)
    #expect(set.warnings.contains { $0.contains("recording") })
}

@Test func missingCaptureFileIsNamed() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/empty"
    try CaptureSetDirectory.create(at: path, manifest: sampleManifest())
    let error = #expect(throws: CaptureSetError.self) { _ = try CaptureSetDirectory.load(path) }
    #expect(error == .captureFileMissing(set: "empty", path: path + "/capture.pcapng"))
}

@Test func folderWithoutManifestIsNotACaptureSet() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    #expect(!CaptureSetDirectory.isCaptureSet(folder))
    let error = #expect(throws: CaptureSetError.self) { _ = try CaptureSetDirectory.load(folder) }
    #expect(error == .notACaptureSet(path: folder))
}

@Test func atomicSaveLeavesNoTemporaryFile() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = folder + "/s"
    try CaptureSetDirectory.create(at: path, manifest: sampleManifest())
    var manifest = sampleManifest()
    manifest.title = "renamed"
    try CaptureSetDirectory.saveManifest(manifest, to: path)
    #expect(try FileManager.default.contentsOfDirectory(atPath: path) == ["manifest.yaml"])
    #expect(try CaptureSetDirectory.readManifest(at: path).title == "renamed")
}

@Test func failedAtomicWriteRemovesItsTemporaryFile() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    // The target is a non-empty folder, so the final rename fails after the temporary file exists.
    try FileManager.default.createDirectory(atPath: folder + "/target/inner", withIntermediateDirectories: true)
    let error = #expect(throws: CaptureSetError.self) { try FileIO.writeAtomically([1, 2, 3], to: folder + "/target") }
    guard case .io = error else {
        Issue.record("expected io, got \(String(describing: error))")
        return
    }
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder) == ["target"])
}

@Test func createRefusesAnExistingSet() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    try CaptureSetDirectory.create(at: folder + "/x", manifest: sampleManifest())
    let error = #expect(throws: CaptureSetError.self) { try CaptureSetDirectory.create(at: folder + "/x", manifest: sampleManifest()) }
    #expect(error == .alreadyExists(path: folder + "/x"))
}

@Test func findSetsListsEverySetUnderAFolderSorted() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    for name in ["walk", "boot", "ble/pairing", ".hidden/secret"] {
        try CaptureSetDirectory.create(at: folder + "/" + name, manifest: sampleManifest())
    }
    try FileManager.default.createDirectory(atPath: folder + "/notes/deeper", withIntermediateDirectories: true)
    // A folder inside a set is not searched: sets do not nest. (`create` refuses to make one; this
    // one is made by hand, as an older Tether or a copy could have left it.)
    try FileManager.default.createDirectory(atPath: folder + "/walk/baseline/odd", withIntermediateDirectories: true)
    try CaptureSetDirectory.saveManifest(sampleManifest(), to: folder + "/walk/baseline/odd")
    #expect(try CaptureSetDirectory.findSets(under: folder) == [folder + "/ble/pairing", folder + "/boot", folder + "/walk"])
}

@Test func baselinePathPrefersTheManifestEntry() throws {
    let folder = try makeTemporaryFolder()
    defer { try? FileManager.default.removeItem(atPath: folder) }
    let path = try makeSealedSet(in: folder, name: "s", capture: [0])
    var set = try CaptureSetDirectory.load(path)
    #expect(set.baselinePath(core: "ingest") == nil)
    try CaptureSetDirectory.writeAtomically(Array("{}\n".utf8), to: path + "/baseline/ingest.jsonl")
    #expect(set.baselinePath(core: "ingest") == path + "/baseline/ingest.jsonl")
    set.manifest.baselines["ingest"] = "other/ingest.jsonl"
    #expect(set.baselinePath(core: "ingest") == path + "/other/ingest.jsonl")
}

@Test func recordedAtTimestampIsISO8601UTC() {
    #expect(CaptureSetManifest.timestamp(Date(timeIntervalSince1970: 1_795_308_300)) == "2026-11-22T00:45:00Z")
}
