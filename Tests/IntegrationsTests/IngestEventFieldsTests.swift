import IngestCore
import Testing

@testable import BehaviourTrace
@testable import IngestIntegration

/// Every `ingest` stream event holds the core's own event as its fields (``IngestEventFields``):
/// every way of reading, writing, comparing or digesting it must be that of the dictionary
/// docs/trace-format.md lists for it, or a committed baseline would change.
@Suite struct IngestEventFieldsTests {
    static let source = DatagramSource(address: "127.0.0.1", port: 50_000)
    static let v6 = DatagramSource(address: "::1", port: 7)

    /// A core event, and the fields its line has.
    static let cases: [(IngestEvent, [String: TraceValue])] = [
        (.pluginName(source, "imu"), ["source": .string("127.0.0.1:50000"), "name": .string("imu")]),
        (.endMessage(source), ["source": .string("127.0.0.1:50000")]),
        (.legacyV1(source, timeNs: 12, payload: [0x01, 0xAB]), ["source": .string("127.0.0.1:50000"), "bytes": .string("01ab"), "time_ns": .int(12)]),
        (.legacyV1(v6, timeNs: nil, payload: []), ["source": .string("[::1]:7"), "bytes": .string("")]),
        (.rejected(source, .notJSON, detail: "byte 3: expected a value"),
         ["source": .string("127.0.0.1:50000"), "reason": .string("not_json"), "detail": .string("byte 3: expected a value")]),
        (.streamStarted(source), ["source": .string("127.0.0.1:50000")]),
        (.streamEnded(source, .idleTimeout), ["source": .string("127.0.0.1:50000"), "cause": .string("idle_timeout")]),
        (.rateLearned(source, hertz: 99.99949), ["source": .string("127.0.0.1:50000"), "hz": .double(99.999)]),
        (.timeWentBackwards(source, previousNs: 2_000, currentNs: 1_000),
         ["source": .string("127.0.0.1:50000"), "previous_ns": .int(2_000), "current_ns": .int(1_000)]),
        (.gap(source, gapNs: 50_000_000, expectedPeriodNs: 10_000_000),
         ["source": .string("127.0.0.1:50000"), "gap_ns": .int(50_000_000), "expected_period_ns": .int(10_000_000)]),
    ]

    @Test(arguments: 0..<cases.count)
    func everyStreamEventWritesTheFieldsItsDictionaryWrote(_ index: Int) throws {
        let (coreEvent, dictionary) = Self.cases[index]
        var cache = IngestAdapter.TraceEventCache()
        try expectPayloadEventIsItsDictionary(IngestAdapter.traceEvent(coreEvent, timeNs: 2_500, cache: &cache), dictionary)
    }

    /// A rate is written to the millihertz: two rates that round alike write one line, so they
    /// are one event.
    @Test func ratesThatRoundAlikeAreEqualEvents() {
        var cache = IngestAdapter.TraceEventCache()
        let one = IngestAdapter.traceEvent(.rateLearned(Self.source, hertz: 50.00001), timeNs: 1, cache: &cache)
        let other = IngestAdapter.traceEvent(.rateLearned(Self.source, hertz: 50.00002), timeNs: 1, cache: &cache)
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        #expect(one != IngestAdapter.traceEvent(.rateLearned(Self.source, hertz: 50.002), timeNs: 1, cache: &cache))
    }
}
