import CoreRandom

/// Where the core gets the 16-byte XXTEA key of each outgoing transfer (and of its answer to a
/// watch's key request). Injected so replay can reproduce the keys of a capture.
public protocol EncryptionKeySource: Sendable {
    /// The next key; must be 16 bytes.
    mutating func nextKey() -> [UInt8]
    /// Whether `other` gives the same keys from here on as this source. Defaults to `false`
    /// (unknowable, as for the system's random keys); a source that is `Equatable` compares.
    func givesSameKeys(as other: any EncryptionKeySource) -> Bool
}

extension EncryptionKeySource {
    /// `false`: the keys to come cannot be compared.
    public func givesSameKeys(as other: any EncryptionKeySource) -> Bool { false }
}

extension EncryptionKeySource where Self: Equatable {
    /// The same source in the same state.
    public func givesSameKeys(as other: any EncryptionKeySource) -> Bool { (other as? Self) == self }
}

/// Keys from a SplitMix64 sequence (``SeededRandom``): the same seed gives the same keys, for tests
/// and replay.
public struct SeededKeySource: EncryptionKeySource, Hashable {
    private var random: SeededRandom

    /// A sequence starting from `seed`.
    public init(seed: UInt64) {
        random = SeededRandom(seed: seed)
    }

    /// Two SplitMix64 outputs, each as 8 little-endian bytes.
    public mutating func nextKey() -> [UInt8] {
        random.nextKey()
    }
}

/// Keys from the system's secure generator (``SystemRandom``), for the live host.
public struct SystemKeySource: EncryptionKeySource {
    /// A source backed by `SystemRandomNumberGenerator`.
    public init() {}

    /// 16 random bytes.
    public mutating func nextKey() -> [UInt8] {
        var random = SystemRandom()
        return random.nextKey()
    }
}

extension RandomSource {
    /// A 16-byte XXTEA key from two outputs, each as 8 little-endian bytes. Every seeded key has had
    /// this layout; the keys of committed capture sets are replayed from it, so it must not change.
    mutating func nextKey() -> [UInt8] {
        let first = next(), second = next()
        return (0..<8).map { UInt8(truncatingIfNeeded: first >> (8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: second >> (8 * UInt64($0))) }
    }
}

/// Keys given in advance (e.g. the keys a capture shows the phone sending), in order; after the
/// last one, keys of a ``SeededKeySource`` with `fallbackSeed`.
public struct ScriptedKeySource: EncryptionKeySource, Hashable {
    private var keys: [[UInt8]]
    private var position = 0
    private var fallback: SeededKeySource

    /// A source that hands out `keys` in order, then seeded keys.
    /// - Throws: ``KeySourceError/wrongKeyLength(index:count:)`` when a key is not 16 bytes.
    public init(keys: [[UInt8]], fallbackSeed: UInt64) throws(KeySourceError) {
        if let index = keys.firstIndex(where: { $0.count != XXTEA.keyLength }) {
            throw .wrongKeyLength(index: index, count: keys[index].count)
        }
        self.keys = keys
        self.fallback = SeededKeySource(seed: fallbackSeed)
    }

    /// How many scripted keys have not been handed out yet.
    public var remainingScriptedKeys: Int { keys.count - position }

    /// The next scripted key, or a seeded one when they are used up.
    public mutating func nextKey() -> [UInt8] {
        guard position < keys.count else { return fallback.nextKey() }
        position += 1
        return keys[position - 1]
    }
}

/// Why a key source cannot be built.
public enum KeySourceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Key number `index` (from 0) has `count` bytes instead of 16.
    case wrongKeyLength(index: Int, count: Int)

    /// What was expected.
    public var description: String {
        switch self {
        case let .wrongKeyLength(index, count):
            "scripted key \(index) has \(count) bytes; XXTEA keys have exactly 16"
        }
    }
}
