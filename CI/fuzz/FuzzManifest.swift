// libFuzzer entry for the capture-set manifest loader (CaptureSetDirectory.decodeManifest: YAML
// through Yams, the schema check, field validation and the path rules): compiled by CI/fuzz/run
// into the CaptureSet module with Sources/CaptureSet/*.swift except CaptureDigest.swift, against
// CaptureKit and Yams (libyaml) built with the same sanitizers. Errors are expected answers; a
// trap, sanitizer report or hang is a finding.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    // readManifest refuses text that is not UTF-8 before parsing; the fuzzer follows the same path.
    guard let text = String(validating: bytes, as: UTF8.self) else { return 0 }
    do {
        let manifest = try CaptureSetDirectory.decodeManifest(text, path: "fuzz/set/manifest.yaml")
        _ = try CaptureSetDirectory.encodeManifest(manifest)
    } catch {
        _ = error.description
    }
    return 0
}
