@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import CaptureSet
import ReplayKit
import BehaviourTrace
import Testing
import Yams

/// The expectation kinds messaging needed: monotonic, once_per, latency.
@Suite struct MessagingExpectationTests {
    func e(_ t: Int64, _ event: TraceName, _ fields: [String: TraceValue]) -> TraceEvent {
        TraceEvent(timeNs: t, core: "messaging", event: event, fields: fields)
    }

    func progress(_ send: Int64, _ sent: Int64, _ total: Int64, at t: Int64) -> TraceEvent {
        e(t, "progress", ["send": .int(send), "sent": .int(sent), "total": .int(total)])
    }

    var monotonicToTotal: TraceExpectation {
        TraceExpectation(.monotonic(.init(core: "messaging", event: "progress"), field: "sent", per: "send", endsAt: nil, endsAtField: "total"))
    }

    @Test func monotonicPassesWhenEveryGroupGrowsToItsTotal() {
        let trace = [progress(1, 0, 40, at: 0), progress(2, 0, 10, at: 1), progress(1, 20, 40, at: 2), progress(1, 40, 40, at: 3), progress(2, 10, 10, at: 4)]
        #expect(Expectations.evaluate(monotonicToTotal, trace: trace).passed)
    }

    @Test func monotonicFailsWhenAValueFalls() {
        let trace = [progress(1, 20, 40, at: 0), progress(1, 10, 40, at: 1), progress(1, 40, 40, at: 2)]
        let result = Expectations.evaluate(monotonicToTotal, trace: trace)
        #expect(!result.passed)
        #expect(result.measured.contains("fell from 20 to 10"))
    }

    @Test func monotonicFailsWhenAGroupStopsShortOfItsTotal() {
        let result = Expectations.evaluate(monotonicToTotal, trace: [progress(1, 0, 40, at: 0), progress(1, 20, 40, at: 1)])
        #expect(!result.passed)
        #expect(result.measured.contains("ended at 20, not 40"))
    }

    @Test func monotonicFailsWithNothingToCheck() {
        #expect(!Expectations.evaluate(monotonicToTotal, trace: []).passed)
    }

    var oncePerSend: TraceExpectation {
        TraceExpectation(.oncePer(.init(event: "completion"), key: "send", of: .init(event: "api_call", where: ["call": .string("send")])))
    }

    func call(_ send: Int64, at t: Int64) -> TraceEvent { e(t, "api_call", ["call": .string("send"), "send": .int(send)]) }
    func completion(_ send: Int64, at t: Int64) -> TraceEvent { e(t, "completion", ["send": .int(send), "result": .string("Success")]) }

    @Test func oncePerPassesWithOneCompletionPerSend() {
        #expect(Expectations.evaluate(oncePerSend, trace: [call(1, at: 0), call(2, at: 1), completion(2, at: 2), completion(1, at: 3)]).passed)
    }

    @Test func oncePerFailsOnATwiceCompletedSend() {
        let result = Expectations.evaluate(oncePerSend, trace: [call(1, at: 0), completion(1, at: 1), completion(1, at: 2)])
        #expect(!result.passed)
        #expect(result.measured.contains("send 1: 2"))
    }

    @Test func oncePerFailsOnANeverCompletedSend() {
        #expect(!Expectations.evaluate(oncePerSend, trace: [call(1, at: 0), call(2, at: 1), completion(1, at: 2)]).passed)
    }

    @Test func oncePerFailsOnACompletionWithoutASend() {
        let result = Expectations.evaluate(oncePerSend, trace: [call(1, at: 0), completion(1, at: 1), completion(9, at: 2)])
        #expect(!result.passed)
        #expect(result.measured.contains("send 9"))
    }

    func latency(min: Double?, max: Double?) -> TraceExpectation {
        TraceExpectation(.latency(from: .init(event: "api_call"), to: .init(event: "completion"), key: "send", minMs: min, maxMs: max))
    }

    @Test func latencyMeasuresEachPairByItsKey() {
        let trace = [call(1, at: 0), call(2, at: 1_000_000), completion(2, at: 6_000_000), completion(1, at: 5_000_000_000)]
        #expect(Expectations.evaluate(latency(min: nil, max: 5000), trace: trace).passed)
        #expect(!Expectations.evaluate(latency(min: nil, max: 4999), trace: trace).passed)
        #expect(!Expectations.evaluate(latency(min: 5.1, max: nil), trace: trace).passed)
    }

    @Test func latencyFailsWhenAnAnswerNeverComes() {
        let result = Expectations.evaluate(latency(min: nil, max: 10), trace: [call(1, at: 0)])
        #expect(!result.passed)
        #expect(result.measured.contains("no completion"))
    }

    @Test func newKindsReadAndWriteManifestYAML() throws {
        let yaml = """
        - type: monotonic
          event: progress
          field: sent
          per: send
          ends_at_field: total
        - type: once_per
          event: completion
          key: send
          of: {event: api_call, where: {call: send}}
        - type: latency
          from: {event: api_call}
          to: {event: completion}
          key: send
          min_ms: 5000
          max_ms: 5500
        """
        let decoded = try YAMLDecoder().decode([TraceExpectation].self, from: yaml)
        #expect(decoded.map(\.typeName) == ["monotonic", "once_per", "latency"])
        let again = try YAMLDecoder().decode([TraceExpectation].self, from: try YAMLEncoder().encode(decoded))
        #expect(again == decoded)
    }

    @Test func latencyWithoutBoundsIsRefused() {
        #expect(throws: DecodingError.self) {
            try YAMLDecoder().decode([TraceExpectation].self, from: "- {type: latency, from: {event: a}, to: {event: b}, key: k}")
        }
    }
}
