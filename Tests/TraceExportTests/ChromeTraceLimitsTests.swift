import BehaviourTrace
import Foundation
import TetherTestSupport
import Testing
import TraceExport

/// What the export cannot show exactly is said, never written wrong: no negative durations, no
/// wrapped ones, and numbers past ±2⁵³ warned about.
struct ChromeTraceLimitsTests {
    let send = TraceCorrelation("send → completion", start: .init("api_call", where: "call", is: "send"),
                                ends: [.init("completion")], key: "send")

    func event(_ t: Int64, _ name: TraceName, _ fields: [String: TraceValue]) -> TraceEvent {
        TraceEvent(timeNs: t, core: "messaging", event: name, fields: fields)
    }

    @Test func anAnswerEarlierThanItsRequestIsASliceOfDurationZeroAndAWarning() throws {
        var writer = ChromeTraceWriter(correlations: ["messaging": [send]])
        writer.add(event(9_000, "api_call", ["call": .string("send"), "send": .int(1)]))
        writer.add(event(1_000, "completion", ["send": .int(1)]))
        let bytes = writer.finish()
        let document = try ChromeTraceSchema.check(bytes)
        #expect(document.events(phase: "X").map { $0["dur"] as? Double } == [0])
        #expect(!String(decoding: bytes, as: UTF8.self).contains(#""dur":-"#))
        #expect(writer.warnings.contains { $0.contains("earlier than their request") })
    }

    @Test func aSliceAcrossTheWholeRangeOfTimeIsNotWrapped() throws {
        var writer = ChromeTraceWriter(correlations: ["messaging": [send]])
        writer.add(event(.min, "api_call", ["call": .string("send"), "send": .int(1)]))
        writer.add(event(.max, "completion", ["send": .int(1)]))
        let text = String(decoding: writer.finish(), as: UTF8.self)
        #expect(text.contains(#""dur":18446744073709551.615"#), "\(text)")
        #expect(writer.warnings.contains { $0.contains("2^53 ns") })
    }

    @Test func aLatencyPastInt64IsLeftOutAndSaidNotWrapped() {
        var writer = ChromeTraceWriter(correlations: ["messaging": [send]])
        writer.add(event(.min, "api_call", ["call": .string("send"), "send": .int(1)]))
        writer.add(event(0, "completion", ["send": .int(1)]))
        let text = String(decoding: writer.finish(), as: UTF8.self)
        #expect(!text.contains("latency_ns"), "\(text)")
        #expect(writer.warnings.contains { $0.contains("latency_ns does not fit") })
    }

    @Test func integersPastTwoToTheFiftyThreeAreWrittenExactlyAndWarnedAbout() {
        var writer = ChromeTraceWriter(correlations: [:])
        writer.add(event(1, "device_status", ["big": .int(9_007_199_254_740_993), "nested": .array([.int(-9_007_199_254_740_995)])]))
        let text = String(decoding: writer.finish(), as: UTF8.self)
        #expect(text.contains("9007199254740993"))
        #expect(writer.warnings.contains { $0.contains("2 integer field(s)") }, "\(writer.warnings)")
    }

    @Test func anOrdinaryTraceHasNoWarnings() {
        var writer = ChromeTraceWriter(correlations: ["messaging": [send]])
        writer.add(event(1_000, "api_call", ["call": .string("send"), "send": .int(1)]))
        writer.add(event(9_000, "completion", ["send": .int(1)]))
        _ = writer.finish()
        #expect(writer.warnings.isEmpty)
    }
}
