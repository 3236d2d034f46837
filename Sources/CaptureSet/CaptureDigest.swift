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
        return hex(Array(hasher.finalize()))
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
