import CaptureKit

/// A 64-bit fingerprint of a file's bytes, fast enough to take of an 80 MB baseline on every
/// replay (several GB/s, where SHA-256 ran at 1 GB/s and was a tenth of such a replay): four
/// lanes of multiply–rotate rounds over 32-byte stripes (the construction of XXH64), the length,
/// the tail, and a final avalanche. It tells whether a file is the one a ``BaselineIndex`` was
/// written for; it detects edits, not tampering (whoever can edit the baseline can edit its index).
/// The value depends on the bytes alone, not on how they were read.
struct ContentFingerprint {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63

    private var lanes: (UInt64, UInt64, UInt64, UInt64) = (
        0x9E37_79B1_85EB_CA87 &+ 0xC2B2_AE3D_27D4_EB4F, 0xC2B2_AE3D_27D4_EB4F, 0, 0 &- 0x9E37_79B1_85EB_CA87)
    /// Bytes of an unfinished stripe (fewer than 32).
    private var pending: [UInt8] = []
    private var length: UInt64 = 0

    /// One multiply–rotate round: `word` mixed into `lane`. ``TraceEventDigest`` mixes with it too.
    @inline(__always)
    static func round(_ lane: UInt64, _ word: UInt64) -> UInt64 {
        let mixed = lane &+ word &* prime2
        return ((mixed << 31) | (mixed >> 33)) &* prime1
    }

    /// The final mix of a 64-bit state, so every input bit reaches every output bit.
    @inline(__always)
    static func avalanche(_ state: UInt64) -> UInt64 {
        var h = state
        h ^= h >> 33
        h = h &* prime2
        h ^= h >> 29
        h = h &* prime3
        h ^= h >> 32
        return h
    }

    @inline(__always)
    private mutating func stripe(_ base: UnsafeRawPointer) {
        lanes.0 = Self.round(lanes.0, UInt64(littleEndian: base.loadUnaligned(as: UInt64.self)))
        lanes.1 = Self.round(lanes.1, UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        lanes.2 = Self.round(lanes.2, UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 16, as: UInt64.self)))
        lanes.3 = Self.round(lanes.3, UInt64(littleEndian: base.loadUnaligned(fromByteOffset: 24, as: UInt64.self)))
    }

    /// Takes the next bytes of the file.
    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard var base = bytes.baseAddress, bytes.count > 0 else { return }
        length &+= UInt64(bytes.count)
        var left = bytes.count
        if !pending.isEmpty {
            let take = min(32 - pending.count, left)
            pending.append(contentsOf: UnsafeRawBufferPointer(start: base, count: take))
            base += take
            left -= take
            guard pending.count == 32 else { return }
            pending.withUnsafeBytes { stripe($0.baseAddress!) }
            pending.removeAll(keepingCapacity: true)
        }
        while left >= 32 {
            stripe(base)
            base += 32
            left -= 32
        }
        if left > 0 { pending.append(contentsOf: UnsafeRawBufferPointer(start: base, count: left)) }
    }

    /// The fingerprint of every byte taken.
    var value: UInt64 {
        var h = ((lanes.0 << 1) | (lanes.0 >> 63)) &+ ((lanes.1 << 7) | (lanes.1 >> 57))
            &+ ((lanes.2 << 12) | (lanes.2 >> 52)) &+ ((lanes.3 << 18) | (lanes.3 >> 46))
        for lane in [lanes.0, lanes.1, lanes.2, lanes.3] {
            h = (h ^ Self.round(0, lane)) &* Self.prime1 &+ Self.prime4
        }
        h &+= length
        pending.withUnsafeBytes { tail in
            var index = 0
            while index + 8 <= tail.count {
                let word = Self.round(0, UInt64(littleEndian: tail.loadUnaligned(fromByteOffset: index, as: UInt64.self)))
                h ^= word
                h = ((h << 27) | (h >> 37)) &* Self.prime1 &+ Self.prime4
                index += 8
            }
            while index < tail.count {
                h ^= UInt64(tail[index]) &* 0x27D4_EB2F_1656_67C5
                h = ((h << 11) | (h >> 53)) &* Self.prime1
                index += 1
            }
        }
        return Self.avalanche(h)
    }

    /// The fingerprint of the file at `path`, read in 1 MiB pieces (constant memory).
    static func of(file path: String) throws(FileSystemError) -> UInt64 {
        var fingerprint = ContentFingerprint()
        try FileSystem.forEachChunk(path) { fingerprint.update($0) }
        return fingerprint.value
    }
}
