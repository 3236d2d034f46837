@_exported import CoreRandom

/// Where a ``SessionCore`` gets its random numbers: the incarnation (at creation without a
/// snapshot), the epoch (at each activation) and the handshake nonce (at each link-up).
public typealias SessionRandomSource = RandomSource
/// Seeded numbers, for tests and replay.
public typealias SeededSessionRandom = SeededRandom
/// The system's numbers, for a live host.
public typealias SystemSessionRandom = SystemRandom
/// Numbers given in advance, then seeded ones.
public typealias ScriptedSessionRandom = ScriptedRandom

extension RandomSource {
    /// A non-zero 32-bit number (0 means "none" on the wire): the low 32 bits of the next value,
    /// drawing again while they are 0.
    mutating func nonZero32() -> UInt32 {
        while true {
            let value = UInt32(truncatingIfNeeded: next())
            if value != 0 { return value }
        }
    }
}
