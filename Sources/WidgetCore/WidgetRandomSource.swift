@_exported import CoreRandom

/// Where a ``WidgetCore`` gets its random numbers: one draw when it is created, the incarnation that
/// prefixes every request and open-URL id.
public typealias WidgetRandomSource = RandomSource
/// Seeded numbers, for tests and replay.
public typealias SeededWidgetRandom = SeededRandom
/// The system's numbers, for a live host.
public typealias SystemWidgetRandom = SystemRandom
/// Numbers given in advance, then seeded ones.
public typealias ScriptedWidgetRandom = ScriptedRandom
