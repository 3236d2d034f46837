import Testing
@testable import IngestCore
import TetherTestSupport

/// The forms that hand events to closures (replay's) hold a call's events until the core is done
/// and hand a datagram's points over from the parser; what they hand over, and in which order,
/// must be exactly what the array forms return.
@Suite struct ClosureFormTests {
    /// One event as the parts form gives it: a data point without its payload.
    enum Handed: Equatable {
        case event(IngestEvent)
        case point(DatagramSource, timeNs: Int64, name: String, type: String, value: DataValue)
    }

    /// The array form's events with each point's payload left out, as the parts form hands them.
    static func parts(_ events: [IngestEvent]) -> [Handed] {
        events.map { event in
            if case .dataPoint(let point) = event {
                return .point(point.source, timeNs: point.timeNs, name: point.name, type: point.type, value: point.value)
            }
            return .event(event)
        }
    }

    @Test(arguments: [21 as UInt64, 22, 23], [true, false])
    func closureFormsHandOverWhatTheArrayFormsReturn(seed: UInt64, keepsPoints: Bool) {
        var generator = SplitMix64(seed: seed)
        let configuration = IngestConfiguration(idleTimeout: .milliseconds(400), flushInterval: .milliseconds(30), flushBytes: 200)
        var arrays = IngestCore(configuration: configuration, keepsChunkPoints: keepsPoints)
        var closures = IngestCore(configuration: configuration, keepsChunkPoints: keepsPoints)
        var parts = IngestCore(configuration: configuration, keepsChunkPoints: keepsPoints)
        let sample = sampleDataMessage(time: "1674790238.1234567", entries: [
            ("v1/1/yaw", "float64", float64Bytes(1)), ("v1/1/n", "int64", float64Bytes(2)),
            ("v1/1/pos", "vector_3d", float64Bytes(1) + float64Bytes(2) + float64Bytes(3)),
            ("v1/1/s", "string", Array("héllo".utf8)), ("v1/1/b", "bytes", [1, 2, 3]),
        ])
        let others: [[UInt8]] = [bytes(#"{"n": "Plugin"}"#), bytes(#"{"end": "true"}"#), bytes(#"{"t": "1.5", "d": "AAAA"}"#), bytes("{")]
        var now = Duration.zero
        for i in 0..<3_000 {
            now += .milliseconds(Int.random(in: 0...60, using: &generator))
            var datagram: [UInt8]
            switch Int.random(in: 0..<10, using: &generator) {
            case 0: datagram = others.randomElement(using: &generator) ?? []
            case 1:
                // A time that goes back, or a mutated message the parser refuses or reads slowly.
                datagram = sample
                let position = Int.random(in: 0..<datagram.count, using: &generator)
                datagram[position] = RobustnessTests.alphabet.randomElement(using: &generator) ?? 0
            default:
                datagram = floatMessage(time: "\(1_674_790_238 + i / 10).\(i % 10)",
                                        [("v1/1/yaw", Double(i)), ("v1/1/pitch", -Double(i))])
                if Bool.random(using: &generator) { datagram = sample }
            }
            let source = Int.random(in: 0..<5, using: &generator) == 0 ? otherPlugin : plugin
            if Int.random(in: 0..<4, using: &generator) == 0, let deadline = arrays.nextDeadline, deadline <= now {
                let expected = arrays.handleTimeout(now: deadline)
                var handed: [IngestEvent] = []
                closures.handleTimeout(now: deadline) { handed.append($0) }
                #expect(handed == expected)
                var handedParts: [Handed] = []
                parts.handleTimeout(now: deadline) { handedParts.append(.event($0)) }
                #expect(handedParts == Self.parts(expected))
            }
            let expected = arrays.receive(datagram, from: source, now: now)
            var handed: [IngestEvent] = []
            datagram.withUnsafeBytes { closures.receive($0, from: source, now: now) { handed.append($0) } }
            #expect(handed == expected)
            var handedParts: [Handed] = []
            datagram.withUnsafeBytes {
                parts.receive($0, from: source, now: now, dataPoint: { source, timeNs, _, name, type, value in
                    handedParts.append(.point(source, timeNs: timeNs, name: name, type: type, value: value))
                }, emit: { handedParts.append(.event($0)) })
            }
            #expect(handedParts == Self.parts(expected))
            #expect(closures.nextDeadline == arrays.nextDeadline)
            #expect(parts.nextDeadline == arrays.nextDeadline)
        }
        let finished = arrays.finish(now: now)
        #expect(closures.finish(now: now) == finished)
        #expect(parts.finish(now: now) == finished)
        #expect(closures.counters == arrays.counters)
        #expect(parts.counters == arrays.counters)
        #expect(arrays.counters.dataPoints > 0 && arrays.counters.chunks > 0 && arrays.counters.rejected > 0)
    }

    /// The core's own nanoseconds of a time, and its time of a deadline, are Duration's.
    @Test func durationConversionsAreDurationsOwn() {
        var generator = SplitMix64(seed: 31)
        var samples: [Duration] = [.zero, .nanoseconds(1), .seconds(3600), .nanoseconds(Int64.max), .nanoseconds(Int64.min),
                                   .seconds(Int64.max), .seconds(Int64.min), .seconds(-1) + .nanoseconds(1), Duration(attoseconds: 999_999_999),
                                   Duration(attoseconds: -1), Duration(secondsComponent: 18_446_744_073, attosecondsComponent: 709_551_615_999_999_999)]
        for _ in 0..<5_000 {
            let seconds = Int64.random(in: -10_000_000_000_000...10_000_000_000_000, using: &generator)
            samples.append(Duration(secondsComponent: seconds, attosecondsComponent: Int64.random(in: 0..<1_000_000_000_000_000_000, using: &generator)))
            samples.append(.nanoseconds(Int64.random(in: .min ... .max, using: &generator)))
        }
        for duration in samples {
            let (seconds, attoseconds) = duration.components
            let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
            let expected = overflow ? (seconds > 0 ? Int64.max : .min) : scaled.addingSaturating(attoseconds / 1_000_000_000)
            #expect(duration.clampedNanoseconds == expected, "\(duration)")
            if let fast = duration.nonNegativeNanoseconds { #expect(fast == expected, "\(duration)") }
            #expect(Duration(exactNanoseconds: expected) == .nanoseconds(expected))
        }
    }

    /// Replay interns each entry's name and type once per ``EntryPosition``: that is sound only if
    /// every point at a nonzero position has the name and type the first point there had. Six
    /// kinds of message (more than the parser keeps layouts for), interleaved so that layouts are
    /// replaced and come back, and mutated ones among them.
    @Test func pointsAtOneLayoutPositionAlwaysHaveOneNameAndType() {
        var generator = SplitMix64(seed: 31)
        var core = IngestCore(configuration: IngestConfiguration())
        let kinds: [[(String, Double)]] = (0..<6).map { kind in (0...kind).map { ("v1/\(kind)/e\($0)", Double($0)) } }
        var seen: [EntryPosition: (name: String, type: String)] = [:]
        var templated = 0
        for i in 0..<2_000 {
            var datagram = floatMessage(time: "\(1_674_790_238 + i / 10).\(i % 10)", kinds[Int.random(in: 0..<6, using: &generator)])
            if Int.random(in: 0..<20, using: &generator) == 0 {
                datagram[Int.random(in: 0..<datagram.count, using: &generator)] = RobustnessTests.alphabet.randomElement(using: &generator) ?? 0
            }
            datagram.withUnsafeBytes {
                core.receive($0, from: plugin, now: ms(i), dataPoint: { _, _, entry, name, type, _ in
                    guard entry.layout != 0 else { return }
                    templated += 1
                    if let first = seen[entry] {
                        #expect(first.name == name && first.type == type, "datagram \(i), entry \(entry.index)")
                    } else {
                        seen[entry] = (name, type)
                    }
                }, emit: { _ in })
            }
        }
        // Most points came by a layout, or the test checked little.
        #expect(templated > 2_000)
    }
}
