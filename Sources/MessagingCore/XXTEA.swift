/// XXTEA ("corrected block TEA"), the cipher of encrypted Connect IQ transfers
/// (docs/connectiq-link.md, "Details that interoperation depends on").
///
/// The block is the whole buffer as `n` little-endian 32-bit words; the 16-byte key is four
/// little-endian words; delta `0x9E3779B9`; `6 + 52/n` full cycles. No length word is added.
/// Plaintext is padded with zeros to a multiple of 4 bytes and at least 8 bytes (``pad(_:)``);
/// that padding is Tether's choice, as no public source confirms the SDK's — the Monkey C
/// serialization is self-delimiting, so trailing zeros do no harm.
public enum XXTEA {
    /// The key schedule constant.
    public static let delta: UInt32 = 0x9E37_79B9
    /// Bytes in a key.
    public static let keyLength = 16

    /// `bytes` padded with zeros to a multiple of 4 and at least 8 bytes.
    public static func pad(_ bytes: [UInt8]) -> [UInt8] {
        let target = max(8, (bytes.count + 3) / 4 * 4)
        return bytes + [UInt8](repeating: 0, count: target - bytes.count)
    }

    /// Pads `plaintext` (``pad(_:)``) and encrypts it.
    /// - Throws: ``XXTEAError/badKeyLength(_:)`` unless `key` has 16 bytes.
    public static func encrypt(_ plaintext: [UInt8], key: [UInt8]) throws(XXTEAError) -> [UInt8] {
        let keyWords = try words(ofKey: key)
        var block = littleEndianWords(pad(plaintext))
        encipher(&block, key: keyWords)
        return bytes(of: block)
    }

    /// Decrypts `ciphertext`; the result keeps any padding.
    /// - Throws: ``XXTEAError/badLength(_:)`` unless the length is a multiple of 4 and at least 8;
    ///   ``XXTEAError/badKeyLength(_:)`` unless `key` has 16 bytes.
    public static func decrypt(_ ciphertext: [UInt8], key: [UInt8]) throws(XXTEAError) -> [UInt8] {
        guard ciphertext.count >= 8, ciphertext.count % 4 == 0 else { throw .badLength(ciphertext.count) }
        let keyWords = try words(ofKey: key)
        var block = littleEndianWords(ciphertext)
        decipher(&block, key: keyWords)
        return bytes(of: block)
    }

    /// Encrypts `block` (at least two words) in place.
    static func encipher(_ block: inout [UInt32], key: [UInt32]) {
        let n = block.count
        precondition(n >= 2 && key.count == 4, "XXTEA.encipher: needs at least 2 words and a 4-word key")
        var cycles = 6 + 52 / n
        var sum: UInt32 = 0
        // Through buffer pointers, with the wrap-around of the last word written out rather than
        // a division per word: every message the core sends goes through here.
        block.withUnsafeMutableBufferPointer { block in
            key.withUnsafeBufferPointer { key in
                var z = block[n - 1]
                while cycles > 0 {
                    cycles -= 1
                    sum &+= delta
                    let e = Int((sum >> 2) & 3)
                    for p in 0..<(n - 1) {
                        block[p] &+= mix(y: block[p + 1], z: z, sum: sum, key: key[(p & 3) ^ e])
                        z = block[p]
                    }
                    block[n - 1] &+= mix(y: block[0], z: z, sum: sum, key: key[((n - 1) & 3) ^ e])
                    z = block[n - 1]
                }
            }
        }
    }

    /// Decrypts `block` (at least two words) in place.
    static func decipher(_ block: inout [UInt32], key: [UInt32]) {
        let n = block.count
        precondition(n >= 2 && key.count == 4, "XXTEA.decipher: needs at least 2 words and a 4-word key")
        var cycles = 6 + 52 / n
        var sum = UInt32(truncatingIfNeeded: cycles) &* delta
        var y = block[0]
        while cycles > 0 {
            cycles -= 1
            let e = Int((sum >> 2) & 3)
            for p in stride(from: n - 1, through: 0, by: -1) {
                let z = block[(p + n - 1) % n]
                block[p] &-= mix(y: y, z: z, sum: sum, key: key[(p & 3) ^ e])
                y = block[p]
            }
            sum &-= delta
        }
    }

    /// The round function: `((z>>5 ^ y<<2) + (y>>3 ^ z<<4)) ^ ((sum ^ y) + (k ^ z))`.
    private static func mix(y: UInt32, z: UInt32, sum: UInt32, key: UInt32) -> UInt32 {
        let left: UInt32 = ((z >> 5) ^ (y << 2)) &+ ((y >> 3) ^ (z << 4))
        let right: UInt32 = (sum ^ y) &+ (key ^ z)
        return left ^ right
    }

    private static func words(ofKey key: [UInt8]) throws(XXTEAError) -> [UInt32] {
        guard key.count == keyLength else { throw .badKeyLength(key.count) }
        return littleEndianWords(key)
    }

    private static func littleEndianWords(_ bytes: [UInt8]) -> [UInt32] {
        stride(from: 0, to: bytes.count, by: 4).map { start -> UInt32 in
            var word: UInt32 = 0
            for offset in (0..<4).reversed() { word = word << 8 | UInt32(bytes[start + offset]) }
            return word
        }
    }

    private static func bytes(of words: [UInt32]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(words.count * 4)
        for word in words {
            output.append(UInt8(truncatingIfNeeded: word))
            output.append(UInt8(truncatingIfNeeded: word >> 8))
            output.append(UInt8(truncatingIfNeeded: word >> 16))
            output.append(UInt8(truncatingIfNeeded: word >> 24))
        }
        return output
    }
}

/// Why an XXTEA operation was refused.
public enum XXTEAError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A ciphertext whose length is not a multiple of 4 or is below 8 bytes.
    case badLength(Int)
    /// A key that is not 16 bytes long.
    case badKeyLength(Int)

    /// What was expected.
    public var description: String {
        switch self {
        case .badLength(let count):
            "XXTEA ciphertext of \(count) bytes: expected a multiple of 4 bytes, at least 8 (the transfer was cut or not encrypted)"
        case .badKeyLength(let count):
            "XXTEA key of \(count) bytes: expected exactly 16"
        }
    }
}
