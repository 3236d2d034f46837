import Testing

@testable import ReplayKit
import BehaviourTrace

#if canImport(CaptureSet)
import CaptureSet
#endif
#if canImport(Yams)
import Yams
#endif

/// A 100 Hz yaw stream from t=1 s, one sample dropped at index 50, framed by stream start/end.
private func yawTrace(samples: Int = 100, dropping dropped: Set<Int> = [50]) -> [TraceEvent] {
    var events = [TraceEvent(timeNs: 900_000_000, core: "ingest", event: "stream_start", fields: ["source": .string("imu")])]
    for i in 0..<samples where !dropped.contains(i) {
        events.append(TraceEvent(
            timeNs: 1_000_000_000 + Int64(i) * 10_000_000, core: "ingest", event: "datapoint",
            fields: ["source": .string("imu"), "name": .string("v1/1/yaw"), "value": .double(Double(i) / 10),
                     "seq": .int(Int64(i))]
        ))
    }
    events.append(TraceEvent(timeNs: 2_500_000_000, core: "ingest", event: "stream_end",
                             fields: ["source": .string("imu"), "cause": .string("end_message")]))
    return events
}

private let yaw = TraceExpectation.Selector(core: "ingest", event: "datapoint", where: ["name": .string("v1/1/yaw")])

private func check(_ kind: TraceExpectation.Kind, _ trace: [TraceEvent] = yawTrace()) -> ExpectationResult {
    Expectations.evaluate([TraceExpectation(kind)], trace: trace)[0]
}

@Suite struct ExpectationsTests {
    @Test func countPassesWhenEqual() {
        let result = check(.count(yaw, .init(equals: 99)))
        #expect(result.passed)
        #expect(result.measured == "99")
    }

    @Test func countFailsWithExpectedAndMeasuredInTheMessage() {
        let result = check(.count(yaw, .init(equals: 100)))
        #expect(!result.passed)
        #expect(result.message == "count(ingest:datapoint where name=v1/1/yaw): expected 100, measured 99")
    }

    @Test func countMinAndMaxBound() {
        #expect(check(.count(yaw, .init(min: 90, max: 100))).passed)
        #expect(!check(.count(yaw, .init(min: 100))).passed)
        #expect(!check(.count(yaw, .init(max: 98))).passed)
    }

    @Test func namedExpectationUsesItsNameInTheMessage() {
        let result = Expectations.evaluate([TraceExpectation(name: "all yaw", .count(yaw, .init(equals: 1)))], trace: yawTrace())[0]
        #expect(result.message.hasPrefix("all yaw: expected 1, measured 99"))
    }

    @Test func whereMatchesNumbersAcrossIntAndDouble() {
        let bySeq = TraceExpectation.Selector(event: "datapoint", where: ["seq": .double(3)])
        #expect(check(.count(bySeq, .init(equals: 1))).passed)
        let byText = TraceExpectation.Selector(event: "datapoint", where: ["name": .int(7)])
        #expect(check(.count(byText, .init(equals: 1)),
                      [TraceEvent(timeNs: 0, core: "ingest", event: "datapoint", fields: ["name": .string("7")])]).passed)
    }

    @Test func coreFilterExcludesOtherCores() {
        let messaging = TraceExpectation.Selector(core: "messaging", event: "datapoint")
        #expect(check(.count(messaging, .init(equals: 0))).passed)
    }

    @Test func orderPassesForASubsequence() {
        let result = check(.order([
            .init(event: "stream_start"), .init(event: "datapoint", where: ["seq": .int(10)]), .init(event: "stream_end"),
        ]))
        #expect(result.passed)
    }

    @Test func orderFailsNamingTheFirstSelectorNotFoundInOrder() {
        let result = check(.order([
            .init(event: "datapoint", where: ["seq": .int(10)]), .init(event: "stream_start"),
        ]))
        #expect(!result.passed)
        #expect(result.measured == "1 of 2 in order; no stream_start after t=1.1 s")
    }

    @Test func maxGapFailsOnTheDroppedSample() {
        let result = check(.maxGap(yaw, maxMs: 15, start: nil, end: nil))
        #expect(!result.passed)
        #expect(result.measured == "max gap 20 ms after t=1.49 s")
    }

    @Test func maxGapPassesWhenWithinTheLimit() {
        #expect(check(.maxGap(yaw, maxMs: 20, start: nil, end: nil)).passed)
    }

    @Test func maxGapCountsTheWindowEdges() {
        let result = check(.maxGap(yaw, maxMs: 50, start: .init(event: "stream_start"), end: .init(event: "stream_end")))
        #expect(!result.passed)
        #expect(result.measured == "max gap 510 ms after t=1.99 s")
        #expect(check(.maxGap(yaw, maxMs: 100, start: .init(event: "stream_start"), end: nil)).passed)
    }

    @Test func maxGapFailsWhenTheWindowNeverStarts() {
        let result = check(.maxGap(yaw, maxMs: 100, start: .init(event: "never"), end: nil))
        #expect(!result.passed)
        #expect(result.measured.contains("no never"))
    }

    @Test func ratePassesWithinTolerance() {
        let result = check(.rate(yaw, hz: 100, tolerancePercent: 2))
        #expect(result.passed, "\(result.message)")
        #expect(result.measured.hasPrefix("98.989899 Hz (99 events over 0.99 s)"))
    }

    @Test func rateFailsOutsideTolerance() {
        #expect(!check(.rate(yaw, hz: 120, tolerancePercent: 5)).passed)
    }

    @Test func rateFailsWithFewerThanTwoEvents() {
        #expect(!check(.rate(.init(event: "stream_start"), hz: 1, tolerancePercent: 5)).passed)
    }

    @Test func atPassesWithinToleranceAndFailsOutside() {
        #expect(check(.at(.init(event: "stream_end"), tMs: 2_499, toleranceMs: 1)).passed)
        let result = check(.at(.init(event: "stream_end"), tMs: 2_400, toleranceMs: 50))
        #expect(!result.passed)
        #expect(result.measured == "nearest at t=2.5 s (+100 ms)")
    }

    @Test func atFailsWhenNothingMatches() {
        #expect(check(.at(.init(event: "timeout"), tMs: 0, toleranceMs: 1000)).measured == "none matched")
    }

    @Test func rangePassesWhenEveryValueIsInside() {
        let result = check(.range(yaw, field: "value", min: 0, max: 9.9))
        #expect(result.passed)
        #expect(result.measured == "[0, 9.9] over 99 events")
    }

    @Test func rangeFailsNamingTheFirstValueOutside() {
        let result = check(.range(yaw, field: "value", min: nil, max: 5))
        #expect(!result.passed)
        #expect(result.measured.hasSuffix("first outside: 5.1 at t=1.51 s"))
    }

    @Test func rangeFailsOnAMissingOrNonNumericField() {
        #expect(!check(.range(yaw, field: "name", min: 0, max: 1)).passed)
        #expect(!check(.range(yaw, field: "absent_field", min: 0, max: 1)).passed)
    }

    @Test func rangeFailsWhenNothingMatches() {
        #expect(check(.range(.init(event: "nothing"), field: "x", min: 0, max: 1)).measured == "no matching events")
    }

    @Test func equalsChecksFirstLastOrEvery() {
        let end = TraceExpectation.Selector(event: "stream_end")
        #expect(check(.equals(end, field: "cause", value: .string("end_message"), which: .last)).passed)
        #expect(check(.equals(yaw, field: "seq", value: .int(0), which: .first)).passed)
        #expect(check(.equals(yaw, field: "seq", value: .int(99), which: .last)).passed)
        #expect(check(.equals(yaw, field: "source", value: .string("imu"), which: .every)).passed)
    }

    @Test func equalsFailsWithTheValueMeasured() {
        let result = check(.equals(.init(event: "stream_end"), field: "cause", value: .string("timeout"), which: .first))
        #expect(!result.passed)
        #expect(result.message == "equals(stream_end.cause): expected first cause = timeout, measured end_message at t=2.5 s")
    }

    @Test func equalsEveryCountsTheEventsThatDiffer() {
        let result = check(.equals(yaw, field: "seq", value: .int(0), which: .every))
        #expect(!result.passed)
        #expect(result.measured == "98 of 99 differ; first 1 at t=1.01 s")
    }

    @Test func absentPassesWhenNothingMatchesAndFailsOtherwise() {
        #expect(check(.absent(.init(event: "rejected"))).passed)
        let result = check(.absent(.init(event: "stream_end")))
        #expect(!result.passed)
        #expect(result.measured == "1 (first at t=2.5 s)")
    }

    @Test func resultsComeBackInExpectationOrder() {
        let list = [TraceExpectation(name: "a", .absent(.init(event: "x"))), TraceExpectation(name: "b", .count(yaw, .init(min: 1)))]
        #expect(Expectations.evaluate(list, trace: yawTrace()).map { $0.expectation.name } == ["a", "b"])
    }

    @Test func aSelectorNamedByManyExpectationsIsMatchedForEachOfThem() {
        let other = TraceExpectation.Selector(core: "ingest", event: "datapoint", where: ["name": .string("v1/1/pitch")])
        let list = [TraceExpectation(.count(yaw, .init(equals: 99))), TraceExpectation(.rate(yaw, hz: 100, tolerancePercent: 2)),
                    TraceExpectation(.count(other, .init(equals: 0))), TraceExpectation(.count(yaw, .init(equals: 99)))]
        let together = Expectations.evaluate(list, trace: yawTrace())
        let alone = list.map { Expectations.evaluate($0, trace: yawTrace()) }
        #expect(together == alone)
        #expect(together.map(\.measured) == ["99", "98.989899 Hz (99 events over 0.99 s)", "0", "99"])
    }

    @Test func aCheckNamingTwoEventNamesNeverReadsTheOtherNamesEarlierVerdict() {
        // The response with id 2 follows a request the `of` selector matched: were that verdict
        // still read, id 2 would count as asked for and the expectation would pass.
        let request = TraceExpectation.Selector(event: "request")
        let response = TraceExpectation.Selector(event: "response")
        let trace = [TraceEvent(timeNs: 1, core: "messaging", event: "request", fields: ["id": .int(1)]),
                     TraceEvent(timeNs: 2, core: "messaging", event: "response", fields: ["id": .int(1)]),
                     TraceEvent(timeNs: 3, core: "messaging", event: "response", fields: ["id": .int(2)])]
        let result = check(.oncePer(response, key: "id", of: request), trace)
        #expect(!result.passed)
        #expect(result.measured == "id 2: 1 without a matching request")
    }

    @Test func monotonicFindsEachGroupWhateverOrderTheEntriesComeIn() {
        // 20 entry names (more than are found by a scan), in a different order each round; the
        // value of `n7` falls in round 3.
        var trace: [TraceEvent] = []
        for (round, step) in [1, 3, 7, 9, 11].enumerated() {
            for slot in 0..<20 {
                let entry = (slot * step + round) % 20
                let value = entry == 7 && round == 3 ? 0 : round
                trace.append(TraceEvent(timeNs: Int64(trace.count), core: "ingest", event: "datapoint",
                                        fields: ["name": .string("n\(entry)"), "v": .int(Int64(value))]))
            }
        }
        let selector = TraceExpectation.Selector(event: "datapoint")
        let failing = check(.monotonic(selector, field: "v", per: "name", endsAt: nil, endsAtField: nil), trace)
        #expect(!failing.passed)
        #expect(failing.measured.hasPrefix("v fell from 2 to 0 at t="))
        #expect(failing.measured.hasSuffix(" (name n7)"))
        let rising = trace.filter { $0.field("name") != .string("n7") }
        let passing = check(.monotonic(selector, field: "v", per: "name", endsAt: 4, endsAtField: nil), rising)
        #expect(passing.passed)
        #expect(passing.measured == "non-decreasing in 19 group(s), each ending as expected")
    }

    @Test func formatNumberDropsTrailingZeros() {
        #expect(Expectations.formatNumber(1200) == "1200")
        #expect(Expectations.formatNumber(-0.5) == "-0.5")
        #expect(Expectations.formatNumber(1.0 / 3.0) == "0.333333")
    }
}

#if canImport(Yams)
@Suite struct ExpectationYAMLTests {
    struct Manifest: Decodable { var expectations: [TraceExpectation] }

    private func decode(_ yaml: String) throws -> [TraceExpectation] {
        try YAMLDecoder().decode(Manifest.self, from: yaml).expectations
    }

    @Test func decodesEveryTypeFromSnakeCaseYAML() throws {
        let yaml = """
        expectations:
          - type: count
            name: every yaw sample
            core: ingest
            event: datapoint
            where: {name: v1/1/yaw, seq: 3}
            equals: 1200
          - type: order
            sequence:
              - {event: stream_start}
              - {event: datapoint, where: {name: v1/1/yaw}}
              - {core: ingest, event: stream_end}
          - type: max_gap
            event: datapoint
            max_ms: 50
            start: {event: stream_start}
            end: {event: stream_end}
          - type: rate
            event: datapoint
            hz: 100
            tolerance_percent: 2.5
          - type: at
            event: stream_end
            t_ms: 2500
            tolerance_ms: 10
          - type: range
            event: datapoint
            field: value
            min: -180
            max: 180.5
          - type: equals
            event: stream_end
            field: cause
            value: end_message
            which: last
          - type: absent
            event: rejected
          - type: monotonic
            event: progress
            field: sent
            per: send
            ends_at: 2048
          - type: once_per
            event: completion
            key: send
            of: {event: api_call, where: {call: send}}
          - type: latency
            from: {event: api_call}
            to: {event: completion}
            key: send
            max_ms: 5000
        """
        let decoded = try decode(yaml)
        #expect(decoded.map(\.typeName) == TraceExpectation.knownTypes)
        #expect(decoded[0] == TraceExpectation(name: "every yaw sample", .count(
            .init(core: "ingest", event: "datapoint", where: ["name": .string("v1/1/yaw"), "seq": .int(3)]),
            .init(equals: 1200))))
        #expect(decoded[1].kind == .order([
            .init(event: "stream_start"), .init(event: "datapoint", where: ["name": .string("v1/1/yaw")]),
            .init(core: "ingest", event: "stream_end"),
        ]))
        #expect(decoded[2].kind == .maxGap(.init(event: "datapoint"), maxMs: 50,
                                          start: .init(event: "stream_start"), end: .init(event: "stream_end")))
        #expect(decoded[3].kind == .rate(.init(event: "datapoint"), hz: 100, tolerancePercent: 2.5))
        #expect(decoded[4].kind == .at(.init(event: "stream_end"), tMs: 2500, toleranceMs: 10))
        #expect(decoded[5].kind == .range(.init(event: "datapoint"), field: "value", min: -180, max: 180.5))
        #expect(decoded[6].kind == .equals(.init(event: "stream_end"), field: "cause", value: .string("end_message"), which: .last))
        #expect(decoded[7].kind == .absent(.init(event: "rejected")))
    }

    @Test func defaultsApplyWhenOptionalKeysAreLeftOut() throws {
        let decoded = try decode("""
        expectations:
          - {type: rate, event: datapoint, hz: 10}
          - {type: at, event: x, t_ms: 5}
          - {type: equals, event: x, field: f, value: true}
        """)
        #expect(decoded[0].kind == .rate(.init(event: "datapoint"), hz: 10, tolerancePercent: 5))
        #expect(decoded[1].kind == .at(.init(event: "x"), tMs: 5, toleranceMs: 0))
        #expect(decoded[2].kind == .equals(.init(event: "x"), field: "f", value: .bool(true), which: .every))
    }

    @Test func unknownTypeNamesTheIndexAndListsKnownTypes() {
        do {
            _ = try decode("""
            expectations:
              - {type: absent, event: x}
              - {type: cout, event: x}
            """)
            Issue.record("accepted an unknown type")
        } catch {
            let text = "\(error)"
            #expect(text.contains("expectation 1: unknown type 'cout'"), "\(text)")
            #expect(text.contains("known types: count, order, max_gap, rate, at, range, equals, absent"))
        }
    }

    @Test func unknownKeyIsRejectedWithTheAllowedKeys() {
        do {
            _ = try decode("""
            expectations:
              - {type: max_gap, event: x, max_msec: 5}
            """)
            Issue.record("accepted a misspelt key")
        } catch {
            let text = "\(error)"
            #expect(text.contains("expectation 0: unknown key 'max_msec'"), "\(text)")
            #expect(text.contains("max_ms"))
        }
    }

    @Test func countWithoutBoundsIsRejected() {
        #expect(throws: DecodingError.self) {
            _ = try decode("expectations:\n  - {type: count, event: x}\n")
        }
    }

    @Test func encodingThenDecodingGivesTheSameExpectations() throws {
        let original = [
            TraceExpectation(name: "n", .count(yaw, .init(min: 1, max: 3))),
            TraceExpectation(.order([.init(event: "a"), .init(core: "session", event: "b")])),
            TraceExpectation(.maxGap(yaw, maxMs: 12.5, start: nil, end: .init(event: "e"))),
            TraceExpectation(.range(yaw, field: "value", min: nil, max: 4)),
            TraceExpectation(.equals(yaw, field: "ok", value: .null, which: .first)),
        ]
        struct Wrapper: Codable { var expectations: [TraceExpectation] }
        let yaml = try YAMLEncoder().encode(Wrapper(expectations: original))
        #expect(try YAMLDecoder().decode(Wrapper.self, from: yaml).expectations == original)
    }

    @Test func wholeNumbersAreWrittenWithoutExponents() throws {
        let original = [
            TraceExpectation(.range(yaw, field: "value", min: -180, max: 180)),
            TraceExpectation(.rate(yaw, hz: 20, tolerancePercent: 2.5)),
        ]
        struct Wrapper: Codable { var expectations: [TraceExpectation] }
        let yaml = try YAMLEncoder().encode(Wrapper(expectations: original))
        #expect(yaml.contains("min: -180\n"), "YAML was:\n\(yaml)")
        #expect(yaml.contains("max: 180\n"), "YAML was:\n\(yaml)")
        #expect(yaml.contains("hz: 20\n"), "YAML was:\n\(yaml)")
        #expect(try YAMLDecoder().decode(Wrapper.self, from: yaml).expectations == original)
    }
}
#endif
