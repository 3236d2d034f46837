@_exported import CoreRandom

/// The seeded generator every test target uses for repeatable random inputs: the cores' own
/// ``SeededRandom`` (SplitMix64), so a seed means the same sequence everywhere.
public typealias SplitMix64 = SeededRandom

extension SeededRandom {
    /// The same as ``init(seed:)``, for call sites that speak of the state.
    public init(state: UInt64) { self.init(seed: state) }
}
