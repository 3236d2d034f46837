import Testing
import TetherTestSupport

@testable import IngestCore

// A data point holds a payload of up to 24 bytes inline (`DataPayload.inline`). It must read,
// compare and hash exactly as the array it stands for.

@Test func payloadsOfEveryLengthReadBackAsTheirBytes() {
    var random = SplitMix64(seed: 0xDA7A_0001)
    for length in 0...(DataPayload.inlineCapacity + 9) {
        for _ in 0..<20 {
            let bytes = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let point = DataPoint(source: plugin, timeNs: 1, name: "n", type: "bytes", value: .bytes(bytes), payload: bytes)
            #expect(point.payload == bytes)
            #expect(point.payloadCount == length)
            let fromBuffer = bytes.withUnsafeBytes { DataPayload($0) }
            #expect(fromBuffer == point.storedPayload)
            if length <= DataPayload.inlineCapacity {
                guard case .inline = point.storedPayload else {
                    Issue.record("a \(length)-byte payload was not held inline")
                    continue
                }
            }
        }
    }
}

@Test func seededPayloadEqualityIsByteEquality() {
    var random = SplitMix64(seed: 0xDA7A_0002)
    for _ in 0..<5_000 {
        // Short, mostly-zero payloads, so equal and nearly-equal pairs are common.
        let a = (0..<Int(random.next() % 30)).map { _ in UInt8(random.next() % 3) }
        var b = a
        switch random.next() % 4 {
        case 0: if !b.isEmpty { b[Int(random.next() % UInt64(b.count))] = UInt8(random.next() % 3) }
        case 1: b.append(0)
        case 2: if !b.isEmpty { b.removeLast() }
        default: break
        }
        let x = DataPoint(source: plugin, timeNs: 1, name: "n", type: "t", value: .int64(0), payload: a)
        var y = DataPoint(source: plugin, timeNs: 1, name: "n", type: "t", value: .int64(0), payload: [9])
        y.payload = b
        #expect((x == y) == (a == b))
        if a == b { #expect(x.hashValue == y.hashValue) }
    }
}

@Test func receiveWithEmitHandsOnWhatReceiveReturns() {
    var returning = IngestCore()
    var appending = IngestCore()
    var all: [IngestEvent] = []
    var expected: [IngestEvent] = []
    let datagrams = [floatMessage(time: "1.0", [("a", 1), ("b", 2)]), bytes("nonsense"),
                     floatMessage(time: "1.1", [("a", 3)]), bytes(#"{"end":"true"}"#)]
    for (i, datagram) in datagrams.enumerated() {
        expected += returning.receive(datagram, from: plugin, now: ms(100 * i))
        datagram.withUnsafeBytes { appending.receive($0, from: plugin, now: ms(100 * i)) { all.append($0) } }
    }
    expected += returning.handleTimeout(now: ms(60_000))
    appending.handleTimeout(now: ms(60_000)) { all.append($0) }
    #expect(all == expected)
    #expect(points(all).map(\.payload) == [float64Bytes(1), float64Bytes(2), float64Bytes(3)])
    #expect(appending.counters == returning.counters)
}

/// A core that only counts chunk points reports everything a keeping core does, with each
/// chunk's points left out and their count kept.
@Test func seededCountingCoreMatchesAKeepingCoreButForTheChunkPoints() {
    var random = SplitMix64(seed: 0xDA7A_0003)
    let configuration = IngestConfiguration(idleTimeout: .seconds(2), flushInterval: .milliseconds(150), flushBytes: 40)
    var keeping = IngestCore(configuration: configuration)
    var counting = IngestCore(configuration: configuration, keepsChunkPoints: false)
    #expect(keeping.keepsChunkPoints && !counting.keepsChunkPoints)
    var now = 0
    var sawChunk = false
    for i in 0..<400 {
        now += Int(random.next() % 400)
        let source = random.chance(0.8) ? plugin : otherPlugin
        let datagram: [UInt8]
        switch random.next() % 10 {
        case 0: datagram = bytes(#"{"end":"true"}"#)
        case 1: datagram = bytes("not json")
        default:
            let values = (0..<Int(1 + random.next() % 4)).map { ("v\($0)", Double(i)) }
            datagram = floatMessage(time: "\(1000 + i).5", values)
        }
        var expected = keeping.receive(datagram, from: source, now: ms(now))
        var got = counting.receive(datagram, from: source, now: ms(now))
        if random.chance(0.3) {
            expected += keeping.handleTimeout(now: ms(now + 100))
            got += counting.handleTimeout(now: ms(now + 100))
        }
        #expect(got.count == expected.count)
        for (a, b) in zip(expected, got) {
            if case .chunkReady(var chunk) = a {
                sawChunk = true
                #expect(chunk.dataPointCount == chunk.dataPoints.count)
                chunk.packedPoints = PackedDataPoints()
                #expect(b == .chunkReady(chunk))
            } else {
                #expect(a == b)
            }
        }
    }
    #expect(sawChunk)
    #expect(counting.finish(now: ms(now)).count == keeping.finish(now: ms(now)).count)
    #expect(counting.counters == keeping.counters)
}
