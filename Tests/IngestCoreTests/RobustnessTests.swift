import Testing
@testable import IngestCore
import TetherTestSupport

/// No input traps the core, and every datagram is counted either way.
@Suite struct RobustnessTests {
    /// Bytes that JSON and base64 are made of, so random datagrams reach deep into the parser.
    static let alphabet = Array(#"{}[]",:.0123456789eE+-tdnpame\/u truefalsenull QF7dLxqfvnc= AAAA"#.utf8) + [0x0A, 0xFF, 0xC3, 0x00]

    @Test(arguments: [1 as UInt64, 2, 3])
    func randomBytesNeverTrap(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        var core = IngestCore(configuration: .init(maxDatagramBytes: 512))
        let count = 5_000
        for i in 0..<count {
            let length = Int.random(in: 0...600, using: &generator)
            let datagram: [UInt8] = Bool.random(using: &generator)
                ? (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
                : (0..<length).map { _ in Self.alphabet.randomElement(using: &generator) ?? 0 }
            let source = DatagramSource(address: "127.0.0.1", port: UInt16.random(in: 1...4, using: &generator))
            _ = core.receive(datagram, from: source, now: ms(i))
        }
        _ = core.finish(now: ms(count))
        #expect(core.counters.datagrams == count)
        #expect(core.counters.accepted + core.counters.rejected == count)
        #expect(core.counters.streamsStarted == core.counters.streamsEnded)
    }

    @Test(arguments: [11 as UInt64, 12])
    func mutatedSampleMessagesNeverTrap(seed: UInt64) {
        var generator = SplitMix64(seed: seed)
        var core = IngestCore()
        let sample = sampleDataMessage(time: "1674790238.1234567", entries: [
            ("v1/1/yaw", "float64", float64Bytes(1)), ("v1/1/pos", "vector_3d", float64Bytes(1) + float64Bytes(2) + float64Bytes(3)),
            ("v1/1/s", "string", Array("héllo".utf8)),
        ])
        let count = 5_000
        for i in 0..<count {
            var datagram = sample
            for _ in 0..<Int.random(in: 1...4, using: &generator) {
                let position = Int.random(in: 0..<datagram.count, using: &generator)
                switch Int.random(in: 0..<3, using: &generator) {
                case 0: datagram[position] = Self.alphabet.randomElement(using: &generator) ?? 0
                case 1: datagram.remove(at: position)
                default: datagram.removeSubrange(position...)
                }
                if datagram.isEmpty { break }
            }
            _ = core.receive(datagram, from: plugin, now: ms(i))
        }
        #expect(core.counters.accepted + core.counters.rejected == count)
        #expect(core.counters.rejected > 0)
    }
}
