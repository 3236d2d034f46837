import Testing

@testable import ReplayKit
import BehaviourTrace

#if canImport(CaptureSet)
import CaptureSet
#endif

/// `start` at index 0, samples every 10 ms from t=1 s at indices 1…, one sample left out, `end` last.
private func samples(_ count: Int, dropping dropped: Set<Int> = []) -> [TraceEvent] {
    var events = [TraceEvent(timeNs: 900_000_000, core: "ingest", event: "stream_start")]
    for i in 0..<count where !dropped.contains(i) {
        events.append(TraceEvent(timeNs: 1_000_000_000 + Int64(i) * 10_000_000, core: "ingest", event: "datapoint",
                                 fields: ["value": .int(Int64(i))]))
    }
    events.append(TraceEvent(timeNs: 2_000_000_000, core: "ingest", event: "stream_end"))
    return events
}

private let point = TraceExpectation.Selector(core: "ingest", event: "datapoint")

private func result(_ kind: TraceExpectation.Kind, _ trace: [TraceEvent]) -> ExpectationResult {
    Expectations.evaluate([TraceExpectation(kind)], trace: trace)[0]
}

/// The trace positions an expectation keeps as the events it measured (what the timeline report
/// links it to).
@Suite struct ExpectationEvidenceTests {
    @Test func absentKeepsTheOffendingEventFirst() {
        let trace = samples(3) + [TraceEvent(timeNs: 3_000_000_000, core: "ingest", event: "rejected")]
        let r = result(.absent(.init(core: "ingest", event: "rejected")), trace)
        #expect(!r.passed)
        #expect(r.evidence == [ExpectationEvidence(index: 5, timeNs: 3_000_000_000, role: .offending)])
    }

    @Test func maxGapKeepsBothEndsOfTheLargestGap() {
        // Sample 5 dropped: the largest gap runs from sample 4 (index 5) to sample 6 (index 6).
        let r = result(.maxGap(point, maxMs: 15, start: nil, end: nil), samples(10, dropping: [5]))
        #expect(!r.passed)
        #expect(r.evidence == [
            ExpectationEvidence(index: 5, timeNs: 1_040_000_000, role: .gapStart),
            ExpectationEvidence(index: 6, timeNs: 1_060_000_000, role: .gapEnd),
        ])
    }

    @Test func maxGapKeepsItsWindowEdges() {
        let r = result(.maxGap(point, maxMs: 500, start: .init(event: "stream_start"), end: .init(event: "stream_end")), samples(3))
        // The window: start (index 0) and end (index 4); the largest gap is the last sample → end.
        #expect(r.evidence.map(\.index) == [0, 3, 4])
        #expect(r.evidence.first?.role == .window)
        #expect(r.evidence.last?.role == .gapEnd)
    }

    @Test func orderKeepsTheStepsItFound() {
        let r = result(.order([.init(event: "stream_start"), point, .init(event: "stream_end")]), samples(4))
        #expect(r.passed)
        #expect(r.evidence.map(\.index) == [0, 1, 5])
    }

    @Test func latencyKeepsThePairThatBrokeTheBound() {
        let trace = [
            TraceEvent(timeNs: 0, core: "messaging", event: "api_call", fields: ["send": .int(1)]),
            TraceEvent(timeNs: 10_000_000, core: "messaging", event: "completion", fields: ["send": .int(1)]),
            TraceEvent(timeNs: 20_000_000, core: "messaging", event: "api_call", fields: ["send": .int(2)]),
            TraceEvent(timeNs: 900_000_000, core: "messaging", event: "completion", fields: ["send": .int(2)]),
        ]
        let r = result(.latency(from: .init(event: "api_call"), to: .init(event: "completion"), key: "send", minMs: nil, maxMs: 100), trace)
        #expect(!r.passed)
        #expect(r.evidence == [
            ExpectationEvidence(index: 2, timeNs: 20_000_000, role: .from),
            ExpectationEvidence(index: 3, timeNs: 900_000_000, role: .to),
        ])
    }

    @Test func latencyKeepsTheUnansweredStart() {
        let trace = [
            TraceEvent(timeNs: 0, core: "messaging", event: "api_call", fields: ["send": .int(1)]),
            TraceEvent(timeNs: 5, core: "messaging", event: "api_call", fields: ["send": .int(2)]),
            TraceEvent(timeNs: 10, core: "messaging", event: "completion", fields: ["send": .int(2)]),
        ]
        let r = result(.latency(from: .init(event: "api_call"), to: .init(event: "completion"), key: "send", minMs: nil, maxMs: 100), trace)
        #expect(!r.passed)
        #expect(r.evidence == [ExpectationEvidence(index: 0, timeNs: 0, role: .from)])
    }

    @Test func rangeKeepsTheFirstValueOutside() {
        let r = result(.range(point, field: "value", min: 0, max: 2), samples(5))
        #expect(!r.passed)
        #expect(r.evidence.contains(ExpectationEvidence(index: 4, timeNs: 1_030_000_000, role: .offending)))
    }

    @Test func monotonicKeepsTheFallAndTheEventBeforeIt() {
        var trace = samples(3)
        trace.insert(TraceEvent(timeNs: 1_025_000_000, core: "ingest", event: "datapoint", fields: ["value": .int(0)]), at: 3)
        let r = result(.monotonic(point, field: "value", per: nil, endsAt: nil, endsAtField: nil), trace)
        #expect(!r.passed)
        #expect(r.evidence.map(\.index) == [2, 3])
        #expect(r.evidence.map(\.role) == [.matched, .offending])
    }

    @Test func aLongRunKeepsItsFirstAndLastEventsWithinTheLimit() {
        let trace = samples(10_000)
        let r = result(.count(point, .init(equals: 10_000)), trace)
        #expect(r.passed)
        #expect(r.evidence.count == ExpectationEvidence.limit)
        #expect(r.evidenceOmitted == 10_000 - ExpectationEvidence.limit)
        #expect(r.evidence.first?.index == 1)
        #expect(r.evidence.last?.index == 10_000)
        #expect(r.evidence.map(\.index) == r.evidence.map(\.index).sorted(), "in trace order")
    }

    @Test func theStreamingEvaluatorCountsPositionsAcrossTheWholeTrace() {
        let trace = samples(3) + [TraceEvent(timeNs: 3_000_000_000, core: "ingest", event: "rejected")]
        var evaluator = ExpectationEvaluator([TraceExpectation(.absent(.init(event: "rejected")))])
        for event in trace { evaluator.observe(event) }
        #expect(evaluator.results() == Expectations.evaluate([TraceExpectation(.absent(.init(event: "rejected")))], trace: trace))
    }
}
