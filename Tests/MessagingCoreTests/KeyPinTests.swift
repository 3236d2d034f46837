import Testing
import MessagingCore

/// The first keys of a few seeds, written down once from the key sources as they were before they
/// moved onto CoreRandom. Committed capture sets replay against the keys their seed gives (the
/// replay fallback seed, the bench's seed), so a change of even one byte breaks every encrypted
/// replay: these fail first and say which seed moved.
@Suite struct KeyPinTests {
    /// (seed, its first three keys in hex).
    static let pinned: [(seed: UInt64, keys: [String])] = [
        (0, ["afcd1d7b39a820e2f465b9a16a9e786e", "4f450980185dc406ec814c72a8b88bf8", "9b74a8516a89391beaa27e740c9fcb53"]),
        // The test rig's default seed.
        (7, ["d70d3259e4e1cb631c663cf4d73c4c04", "022ab1ba804098e6cb293e6770eb3a95", "da211e6a663bd37311aabecb86beda3f"]),
        (42, ["956eeb2f2632d7bd03f166b233e3ef28", "529f0f135767524794e34a0effe11c58", "f22348245a58bc0906db803cfa3144de"]),
        // MessagingAdapter.fallbackKeySeed: the keys replay uses after a capture's own.
        (0x7E7E_E7E7, ["166a5c193aab49f36c1eba7296f14b57", "8ae1d28093837eff28b7bb361d351d01", "8e0067c12df4f0a246ec11d16eef176c"]),
        // TetherBench's MessagingSession.keySeed: the keys of the generated messaging captures.
        (0x5EED_C1A0_2026, ["c65fda6c6578f7fd4018c8cdb6506d81", "d9c4c01a38b56e956081f250468b5a86", "8eba3e549358d2dfbd721fc75bebad18"]),
    ]

    static func hexString(_ bytes: [UInt8]) -> String {
        bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    @Test func seededKeysMatchThePinnedKeysOfEachSeed() {
        for (seed, keys) in Self.pinned {
            var source = SeededKeySource(seed: seed)
            let drawn = (0..<keys.count).map { _ in Self.hexString(source.nextKey()) }
            #expect(drawn == keys, "seed \(seed)")
        }
    }

    @Test func scriptedFallbackKeysMatchThePinnedKeysOfItsSeed() throws {
        var source = try ScriptedKeySource(keys: [Array(repeating: 1, count: 16)], fallbackSeed: 0x7E7E_E7E7)
        _ = source.nextKey()
        let drawn = (0..<3).map { _ in Self.hexString(source.nextKey()) }
        #expect(drawn == Self.pinned[3].keys)
    }
}

@Suite struct SystemKeyTests {
    @Test func systemKeysDifferFromOneKeyToTheNext() {
        // Two equal 128-bit keys in a row would mean the source repeats itself, not bad luck.
        var source = SystemKeySource()
        #expect(source.nextKey() != source.nextKey())
    }
}
