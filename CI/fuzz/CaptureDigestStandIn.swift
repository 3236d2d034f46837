// Compiled into CaptureSet for the YAML fuzzers (`manifest`, `sections`, `script`), which build
// CaptureSet without CaptureDigest.swift (and so without swift-crypto). Reading a manifest or a
// script never hashes, so reaching this would itself be a finding.

extension CaptureSetDirectory {
    static func sha256(ofFile path: String) throws(CaptureSetError) -> String {
        fatalError("a YAML fuzzer reached sha256(ofFile:) for \(path)")
    }
}
