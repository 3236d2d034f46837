// Compiled into CaptureSet for the `script` fuzzer, which builds CaptureSet as a module of its own
// without CaptureDigest.swift (and so without swift-crypto). The script loader never hashes, so
// reaching this would itself be a finding.

extension CaptureSetDirectory {
    static func sha256(ofFile path: String) throws(CaptureSetError) -> String {
        fatalError("the script fuzzer reached sha256(ofFile:) for \(path)")
    }
}
