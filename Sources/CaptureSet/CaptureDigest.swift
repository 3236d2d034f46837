import CaptureKit
import Crypto

// The one use of swift-crypto in CaptureSet, kept apart so the manifest loader builds without it
// (CI/fuzz/run compiles the loader on its own for libFuzzer).
extension CaptureSetDirectory {
    /// Lower-case hex SHA-256 of a file, read in 1 MiB pieces (constant memory whatever its size).
    public static func sha256(ofFile path: String) throws(CaptureSetError) -> String {
        try sha256(ofFile: path, chunkSize: 1 << 20)
    }

    static func sha256(ofFile path: String, chunkSize: Int) throws(CaptureSetError) -> String {
        var hasher = SHA256()
        try FileIO.forEachChunk(path, chunkSize: chunkSize) { hasher.update(bufferPointer: $0) }
        return lowercaseHex(hasher.finalize())
    }

}
