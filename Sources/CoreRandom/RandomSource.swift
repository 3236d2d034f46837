/// Where a sans-I/O core gets its random numbers (incarnations, epochs, nonces, request ids, keys).
/// Injected, so tests and replay reproduce them from a seed and a live host draws them from the
/// system.
public protocol RandomSource: Sendable {
    /// The next 64 random bits.
    mutating func next() -> UInt64
}

/// SplitMix64 (Steele, Lea and Flood, "Fast splittable pseudorandom number generators", 2014) from
/// a seed: the same seed gives the same numbers on every platform. The one copy of the generator the
/// cores, their replay and the test targets share.
public struct SeededRandom: RandomSource, RandomNumberGenerator, Hashable {
    /// The generator's whole state.
    public var state: UInt64

    /// A sequence starting from `seed`.
    public init(seed: UInt64) {
        state = seed
    }

    /// The next SplitMix64 output.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// `true` with probability `probability` (0 never, 1 always).
    public mutating func chance(_ probability: Double) -> Bool {
        probability > 0 && Double(next() >> 11) / Double(1 << 53) < probability
    }
}

/// Numbers from the system's secure generator, for a live host.
public struct SystemRandom: RandomSource {
    /// A source backed by `SystemRandomNumberGenerator`.
    public init() {}

    /// 64 random bits.
    public mutating func next() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }
}

/// Numbers given in advance (e.g. the nonces a capture shows), in order; after the last, those of a
/// ``SeededRandom`` with `fallbackSeed`.
public struct ScriptedRandom: RandomSource, Hashable {
    private var values: [UInt64]
    private var position = 0
    private var fallback: SeededRandom

    /// A source that hands out `values` in order, then seeded numbers.
    public init(values: [UInt64], fallbackSeed: UInt64) {
        self.values = values
        self.fallback = SeededRandom(seed: fallbackSeed)
    }

    /// The next scripted value, or a seeded one when they are used up.
    public mutating func next() -> UInt64 {
        guard position < values.count else { return fallback.next() }
        position += 1
        return values[position - 1]
    }
}
