/// FNV-1a, 64 bits, over UTF-8 text records: a fingerprint of everything a core said over a run,
/// stable across processes and platforms (unlike `Hasher`, which is seeded per process). The
/// cores' state-equivalence tests fold every output into one and compare it with a digest
/// recorded before a reshaping, so a change to how a core keeps its state can be shown to change
/// no output at all.
public struct OutputFingerprint: Sendable {
    /// The digest so far.
    public private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
    /// Records folded in.
    public private(set) var count = 0
    /// The byte folded in after each record (a digest is recorded with one separator and read
    /// back with the same).
    public let separator: UInt8

    /// An empty fingerprint whose records end with `separator` (default: ASCII RS, 0x1E).
    public init(separator: UInt8 = 0x1e) { self.separator = separator }

    /// Folds in one record, then the separator, so `"ab"+"c"` and `"a"+"bc"` differ.
    public mutating func add(_ text: String) {
        for byte in text.utf8 { mix(byte) }
        mix(separator)
        count += 1
    }

    private mutating func mix(_ byte: UInt8) {
        value ^= UInt64(byte)
        value &*= 0x0000_0100_0000_01b3
    }

    /// The digest as `0x…` hexadecimal, as the tests record it.
    public var hex: String { "0x" + String(value, radix: 16) }
}
