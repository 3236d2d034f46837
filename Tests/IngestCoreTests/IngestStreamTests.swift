import Testing
@testable import IngestCore
import TetherTestSupport

/// Streams, timers, chunks, stream analysis and counters of ``IngestCore``.
@Suite struct IngestStreamTests {
    static let t0 = "1674790238.0"

    func point(_ name: String, _ value: Double, timeNs: Int64 = 1_674_790_238_000_000_000, source: DatagramSource = plugin) -> DataPoint {
        DataPoint(source: source, timeNs: timeNs, name: name, type: "float64", value: .float64(value), payload: float64Bytes(value))
    }

    @Test func idleTimeoutEndsStreamAtExactDeadline() {
        var core = IngestCore(configuration: .init(idleTimeout: .seconds(15), flushInterval: .seconds(100)))
        _ = core.receive(bytes(#"{"name":"Plugin Sample"}"#), from: plugin, now: .seconds(1))
        #expect(core.nextDeadline == .seconds(16))
        #expect(core.handleTimeout(now: .seconds(16) - .nanoseconds(1)) == [])
        #expect(core.handleTimeout(now: .seconds(16)) == [.streamEnded(plugin, .idleTimeout)])
        #expect(core.nextDeadline == nil)
    }

    @Test func datagramPushesIdleDeadlineBack() {
        var core = IngestCore()
        _ = core.receive(bytes(#"{"name":"a"}"#), from: plugin, now: .seconds(1))
        _ = core.receive(bytes(#"{"name":"a"}"#), from: plugin, now: .seconds(10))
        #expect(core.handleTimeout(now: .seconds(16)) == [])
        #expect(core.nextDeadline == .seconds(25))
    }

    @Test func rejectedDatagramDoesNotKeepStreamAlive() {
        var core = IngestCore()
        _ = core.receive(bytes(#"{"name":"a"}"#), from: plugin, now: .seconds(1))
        _ = core.receive(bytes("garbage"), from: plugin, now: .seconds(10))
        #expect(core.nextDeadline == .seconds(16))
    }

    @Test func receiveAfterDeadlineFiresTimerFirst() {
        var core = IngestCore()
        _ = core.receive(bytes(#"{"name":"a"}"#), from: plugin, now: .seconds(1))
        let events = core.receive(bytes(#"{"name":"b"}"#), from: plugin, now: .seconds(16))
        #expect(events == [.streamEnded(plugin, .idleTimeout), .streamStarted(plugin), .pluginName(plugin, "b")])
    }

    @Test func idleEndFlushesPendingPoints() {
        var core = IngestCore(configuration: .init(idleTimeout: .milliseconds(50), flushInterval: .milliseconds(100)))
        _ = core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(0))
        #expect(core.nextDeadline == ms(50))
        #expect(core.handleTimeout(now: ms(50)) == [
            .chunkReady(IngestChunk(source: plugin, streamStartNs: 0, sequence: 1, dataPoints: [point("a", 1)], byteCount: 8)),
            .streamEnded(plugin, .idleTimeout),
        ])
        #expect(core.nextDeadline == nil)
    }

    @Test func earlierNowIsTakenAsThePreviousOne() {
        var core = IngestCore()
        _ = core.receive(bytes(#"{"name":"a"}"#), from: plugin, now: .seconds(10))
        _ = core.receive(bytes(#"{"name":"a"}"#), from: plugin, now: .seconds(5))
        #expect(core.nextDeadline == .seconds(25))
    }

    @Test func bufferAndArrayOverloadsAgree() {
        var viaArray = IngestCore()
        var viaBuffer = IngestCore()
        let datagram = floatMessage(time: Self.t0, [("a", 1), ("b", 2)])
        let fromArray = viaArray.receive(datagram, from: plugin, now: ms(3))
        let fromBuffer = datagram.withUnsafeBytes { viaBuffer.receive($0, from: plugin, now: ms(3)) }
        #expect(fromArray == fromBuffer)
        #expect(viaArray.counters == viaBuffer.counters)
    }

    @Test func flushByBytesHandsChunkOnAtOnce() {
        var core = IngestCore(configuration: .init(flushBytes: 16))
        let first = core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(0))
        let second = core.receive(floatMessage(time: Self.t0, [("b", 2)]), from: plugin, now: ms(10))
        let third = core.receive(floatMessage(time: Self.t0, [("c", 3), ("d", 4)]), from: plugin, now: ms(20))
        #expect(chunks(first) == [])
        #expect(chunks(second) == [IngestChunk(source: plugin, streamStartNs: 0, sequence: 1, dataPoints: [point("a", 1), point("b", 2)], byteCount: 16)])
        #expect(chunks(third) == [IngestChunk(source: plugin, streamStartNs: 0, sequence: 2, dataPoints: [point("c", 3), point("d", 4)], byteCount: 16)])
        #expect(third.last == .chunkReady(chunks(third)[0]), "the chunk follows the datagram's points")
    }

    @Test func flushByTimeFiresAtExactDeadline() {
        var core = IngestCore(configuration: .init(flushInterval: .milliseconds(100)))
        _ = core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(1000))
        _ = core.receive(floatMessage(time: Self.t0, [("b", 2)]), from: plugin, now: ms(1050))
        #expect(core.nextDeadline == ms(1100))
        #expect(core.handleTimeout(now: ms(1100) - .nanoseconds(1)) == [])
        let events = core.handleTimeout(now: ms(1100))
        #expect(events == [.chunkReady(IngestChunk(source: plugin, streamStartNs: 1_000_000_000, sequence: 1,
                                                   dataPoints: [point("a", 1), point("b", 2)], byteCount: 16))])
        #expect(core.nextDeadline == ms(1050) + .seconds(15), "with nothing pending only the idle timeout is left")
    }

    @Test func flushDeadlineStartsWithFirstPointAfterAFlush() {
        var core = IngestCore(configuration: .init(flushInterval: .milliseconds(100)))
        _ = core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(0))
        _ = core.handleTimeout(now: ms(100))
        _ = core.receive(floatMessage(time: Self.t0, [("b", 2)]), from: plugin, now: ms(130))
        #expect(core.nextDeadline == ms(230))
        #expect(chunks(core.handleTimeout(now: ms(230))).map(\.sequence) == [2])
    }

    @Test func endMessageFlushesAndEndsStream() {
        var core = IngestCore()
        _ = core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(0))
        let events = core.receive(bytes(#"{"end": "true"}"#), from: plugin, now: ms(10))
        #expect(events == [
            .endMessage(plugin),
            .chunkReady(IngestChunk(source: plugin, streamStartNs: 0, sequence: 1, dataPoints: [point("a", 1)], byteCount: 8)),
            .streamEnded(plugin, .endMessage),
        ])
        #expect(core.nextDeadline == nil)
    }

    @Test func datagramAfterEndStartsNewStream() {
        var core = IngestCore()
        // An end alone starts and ends a stream at 5 ms.
        let end = core.receive(bytes(#"{"end":"true"}"#), from: plugin, now: ms(5))
        // Same nanosecond as that stream's start: the new stream still gets its own identity.
        let events = core.receive(floatMessage(time: Self.t0, [("b", 2)]), from: plugin, now: ms(5))
        #expect(end == [.streamStarted(plugin), .endMessage(plugin), .streamEnded(plugin, .endMessage)])
        #expect(events.first == .streamStarted(plugin))
        let final = core.finish(now: ms(6))
        #expect(final == [
            .chunkReady(IngestChunk(source: plugin, streamStartNs: 5_000_001, sequence: 1, dataPoints: [point("b", 2)], byteCount: 8)),
            .streamEnded(plugin, .finished),
        ])
        #expect(core.counters.streamsStarted == 2)
        #expect(core.counters.streamsEnded == 2)
    }

    @Test func finishFlushesEveryStreamInSourceOrder() {
        var core = IngestCore()
        _ = core.receive(floatMessage(time: Self.t0, [("b", 2)]), from: otherPlugin, now: ms(0))
        _ = core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(1))
        let events = core.finish(now: ms(2))
        // "127.0.0.1" sorts before "::1".
        #expect(events == [
            .chunkReady(IngestChunk(source: plugin, streamStartNs: 1_000_000, sequence: 1, dataPoints: [point("a", 1)], byteCount: 8)),
            .streamEnded(plugin, .finished),
            .chunkReady(IngestChunk(source: otherPlugin, streamStartNs: 0, sequence: 1, dataPoints: [point("b", 2, source: otherPlugin)], byteCount: 8)),
            .streamEnded(otherPlugin, .finished),
        ])
        #expect(core.nextDeadline == nil)
    }

    @Test func nameMayArriveAfterData() {
        var core = IngestCore(configuration: .init(flushInterval: .seconds(100)))
        let data = core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(0))
        let name = core.receive(bytes(#"{"name": "Plugin Sample"}"#), from: plugin, now: .seconds(10))
        #expect(data == [.streamStarted(plugin), .dataPoint(point("a", 1))])
        #expect(name == [.pluginName(plugin, "Plugin Sample")])
        #expect(core.counters.streamsStarted == 1)
    }

    @Test func streamsOfTwoSourcesAreSeparate() {
        var core = IngestCore()
        let first = core.receive(bytes(#"{"name":"a"}"#), from: plugin, now: ms(0))
        let second = core.receive(bytes(#"{"name":"b"}"#), from: otherPlugin, now: ms(1))
        #expect(first.first == .streamStarted(plugin))
        #expect(second.first == .streamStarted(otherPlugin))
        #expect(core.handleTimeout(now: .seconds(15)) == [.streamEnded(plugin, .idleTimeout)])
        #expect(core.handleTimeout(now: .seconds(15) + ms(1)) == [.streamEnded(otherPlugin, .idleTimeout)])
    }

    @Test func timeGoingBackwardsIsReported() {
        var core = IngestCore(configuration: .init(flushInterval: .seconds(100)))
        _ = core.receive(floatMessage(time: "100.5", [("a", 1)]), from: plugin, now: ms(0))
        let same = core.receive(floatMessage(time: "100.5", [("a", 1)]), from: plugin, now: ms(50))
        let back = core.receive(floatMessage(time: "100.499999999", [("a", 1)]), from: plugin, now: ms(100))
        #expect(same.count == 1, "an equal time is not backwards")
        #expect(back == [
            .timeWentBackwards(plugin, previousNs: 100_500_000_000, currentNs: 100_499_999_999),
            .dataPoint(point("a", 1, timeNs: 100_499_999_999)),
        ])
        #expect(core.counters.timeWentBackwards == 1)
    }

    /// Sends `count` data datagrams `periodMs` apart starting at `startMs`; returns all events.
    func send(_ core: inout IngestCore, count: Int, periodMs: Int, startMs: Int) -> [IngestEvent] {
        (0..<count).flatMap { i in core.receive(floatMessage(time: Self.t0, [("a", 1)]), from: plugin, now: ms(startMs + i * periodMs)) }
    }

    func analysis(_ events: [IngestEvent]) -> [IngestEvent] {
        events.filter {
            switch $0 {
            case .rateLearned, .gap, .timeWentBackwards: true
            default: false
            }
        }
    }

    @Test func rateIsLearnedFromNineDatagrams() {
        var core = IngestCore(configuration: .init(flushInterval: .seconds(100)))
        let eight = send(&core, count: 8, periodMs: 50, startMs: 0)
        let ninth = send(&core, count: 1, periodMs: 50, startMs: 400)
        #expect(analysis(eight) == [])
        #expect(analysis(ninth) == [.rateLearned(plugin, hertz: 20)])
        #expect(ninth.first == .rateLearned(plugin, hertz: 20), "analysis events come before the points")
    }

    @Test func rateIsLearnedAgainOnlyWhenItChangesByMoreThanTwentyPercent() {
        var core = IngestCore(configuration: .init(flushInterval: .seconds(100)))
        _ = send(&core, count: 9, periodMs: 50, startMs: 0)          // learned 20 Hz at 400 ms
        let small = send(&core, count: 8, periodMs: 55, startMs: 455) // +10 %
        let large = send(&core, count: 8, periodMs: 100, startMs: 1_000)
        #expect(analysis(small) == [])
        #expect(analysis(large) == [.rateLearned(plugin, hertz: 10)])
    }

    @Test func gapBeyondFactorTimesPeriodIsReported() {
        var core = IngestCore(configuration: .init(flushInterval: .seconds(100), gapFactor: 4))
        _ = send(&core, count: 9, periodMs: 50, startMs: 0)            // period 50 ms, last at 400 ms
        let atLimit = send(&core, count: 1, periodMs: 0, startMs: 600)  // 200 ms = 4 × 50: not a gap
        let beyond = send(&core, count: 1, periodMs: 0, startMs: 801)   // 201 ms
        #expect(analysis(atLimit) == [])
        #expect(analysis(beyond) == [.gap(plugin, gapNs: 201_000_000, expectedPeriodNs: 50_000_000)])
        #expect(core.counters.gaps == 1)
    }

    @Test func noGapIsReportedBeforeThePeriodIsLearned() {
        var core = IngestCore(configuration: .init(flushInterval: .seconds(100)))
        let events = send(&core, count: 2, periodMs: 5_000, startMs: 0)
        #expect(analysis(events) == [])
    }

    @Test func countersAddUp() {
        var core = IngestCore(configuration: .init(flushInterval: .seconds(100), flushBytes: 48))
        var feed: [[UInt8]] = []
        for i in 0..<20 {
            feed.append(floatMessage(time: "\(100 + i)", [("x", Double(i)), ("y", 1), ("z", 2)]))
            if i % 4 == 0 { feed.append(bytes("{oops")) }
            if i % 5 == 0 { feed.append(bytes(#"{"name":"n"}"#)) }
        }
        feed.append(bytes(#"{"d":"AAAA"}"#))
        feed.append(bytes(#"{"end":"true"}"#))
        var events: [IngestEvent] = []
        for (i, datagram) in feed.enumerated() {
            events += core.receive(datagram, from: plugin, now: ms(i * 50))
        }
        events += core.finish(now: .seconds(100))
        let counters = core.counters
        #expect(counters.datagrams == feed.count)
        #expect(counters.accepted + counters.rejected == counters.datagrams)
        #expect(counters == IngestCounters(
            datagrams: 31, accepted: 26, rejectedByReason: [.notJSON: 5], dataPoints: 60, legacyV1Messages: 1,
            nameMessages: 4, endMessages: 1, streamsStarted: 1, streamsEnded: 1, chunks: 10, timeWentBackwards: 0, gaps: 0))
        #expect(chunks(events).flatMap(\.dataPoints) == points(events))
        #expect(chunks(events).map(\.sequence) == Array(1...10))
    }

    @Test func garbageBesideValidDataLosesNoValidPoint() {
        var generator = SplitMix64(seed: 0x7E7E)
        var core = IngestCore()
        var expected: [DataPoint] = []
        var events: [IngestEvent] = []
        var nowMs = 0
        for i in 0..<300 {
            let value = Double(i) * 0.25
            expected.append(point("v1/1/x", value, timeNs: Int64(1_000 + i) * 1_000_000_000))
            let valid = floatMessage(time: "\(1_000 + i)", [("v1/1/x", value)])
            events += core.receive(valid, from: plugin, now: ms(nowMs))
            nowMs += 50
            // Garbage: random bytes, or a valid datagram with bytes flipped.
            for _ in 0..<Int.random(in: 0...2, using: &generator) {
                var junk = valid
                if Bool.random(using: &generator) {
                    junk = (0..<Int.random(in: 0...200, using: &generator)).map { _ in UInt8.random(in: 0...255, using: &generator) }
                } else {
                    junk[Int.random(in: 0..<junk.count, using: &generator)] = UInt8.random(in: 0...255, using: &generator)
                }
                let junkEvents = core.receive(junk, from: plugin, now: ms(nowMs))
                // A flipped byte can leave a valid message (another digit of the time, say):
                // count what it added so the check below stays exact.
                expected += points(junkEvents)
                events += junkEvents
            }
            if let deadline = core.nextDeadline, deadline <= ms(nowMs) { events += core.handleTimeout(now: ms(nowMs)) }
        }
        events += core.finish(now: ms(nowMs))
        #expect(points(events) == expected)
        #expect(chunks(events).flatMap(\.dataPoints) == expected)
        #expect(core.counters.datagrams == core.counters.accepted + core.counters.rejected)
    }
}
