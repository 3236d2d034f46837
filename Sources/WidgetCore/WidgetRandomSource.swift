/// Where a ``WidgetCore`` gets its random numbers: one draw when it is created, the incarnation that
/// prefixes every request and open-URL id. Injected so tests and replay reproduce the ids.
public protocol WidgetRandomSource: Sendable {
    /// The next 64 random bits.
    mutating func next() -> UInt64
}

/// SplitMix64 from a seed: the same seed gives the same numbers, for tests and replay.
public struct SeededWidgetRandom: WidgetRandomSource, Hashable {
    private var state: UInt64

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
}

/// Numbers from the system's secure generator, for a live host.
public struct SystemWidgetRandom: WidgetRandomSource {
    /// A source backed by `SystemRandomNumberGenerator`.
    public init() {}

    /// 64 random bits.
    public mutating func next() -> UInt64 {
        var generator = SystemRandomNumberGenerator()
        return generator.next()
    }
}

/// Numbers given in advance (e.g. the incarnation a capture shows), in order; after the last,
/// those of a ``SeededWidgetRandom`` with `fallbackSeed`.
public struct ScriptedWidgetRandom: WidgetRandomSource, Hashable {
    private var values: [UInt64]
    private var position = 0
    private var fallback: SeededWidgetRandom

    /// A source that hands out `values` in order, then seeded numbers.
    public init(values: [UInt64], fallbackSeed: UInt64) {
        self.values = values
        self.fallback = SeededWidgetRandom(seed: fallbackSeed)
    }

    /// The next scripted value, or a seeded one when they are used up.
    public mutating func next() -> UInt64 {
        guard position < values.count else { return fallback.next() }
        position += 1
        return values[position - 1]
    }
}
