import BehaviourTrace
import Foundation
import TetherTestSupport
import Testing
import TraceExport

/// ``ChromeTraceWriter``: the trace-event JSON Perfetto and chrome://tracing read, checked against
/// the format's rules (Perfetto's trace processor cannot be fetched here, so a schema check stands
/// in for it: `ChromeTraceSchema`).
struct ChromeTraceWriterTests {
    let send = TraceCorrelation("send → completion", start: .init("api_call", where: "call", is: "send"),
                                ends: [.init("completion")], key: "send",
                                progress: .init(event: "progress", done: "sent", total: "total"))

    func event(_ t: Int64, _ name: TraceName, _ fields: [String: TraceValue]) -> TraceEvent {
        TraceEvent(timeNs: t, core: "messaging", event: name, fields: fields)
    }

    func export(_ trace: [TraceEvent], frames: [(Int, Int64, String)] = []) throws -> ChromeTraceSchema.Document {
        var writer = ChromeTraceWriter(correlations: ["messaging": [send]])
        for event in trace { writer.add(event) }
        for (interface, t, summary) in frames {
            writer.addFrame(interface: interface, timeNs: t, summary: summary, length: 7, interfaceName: "bluetooth-hci-h4")
        }
        return try ChromeTraceSchema.check(writer.finish())
    }

    @Test func everyEventIsAnInstantOnItsCoresTrack() throws {
        let document = try export([
            event(1_000, "api_call", ["call": .string("bluetooth_state")]),
            event(2_500, "device_status", ["status": .string("Connected")]),
        ])
        let instants = document.events(phase: "i")
        #expect(instants.map { $0["name"] as? String } == ["call bluetooth_state", "device_status"])
        #expect(Set(instants.map { document.threadName(of: $0) }) == ["messaging"])
        #expect((instants[1]["args"] as? [String: Any])?["status"] as? String == "Connected")
    }

    @Test func nanosecondsAreWrittenAsExactMicroseconds() throws {
        var writer = ChromeTraceWriter(correlations: [:])
        writer.add(event(1_234_567, "device_status", [:]))
        writer.add(event(5, "device_status", [:]))
        let text = String(decoding: writer.finish(), as: UTF8.self)
        #expect(text.contains(#""ts":1234.567"#))
        #expect(text.contains(#""ts":0.005"#))
    }

    @Test func aRequestAndItsAnswerAreOneSlice() throws {
        let document = try export([
            event(1_000, "api_call", ["call": .string("send"), "send": .int(1)]),
            event(9_000, "completion", ["send": .int(1)]),
            event(10_000, "api_call", ["call": .string("send"), "send": .int(2)]),
            event(12_000, "completion", ["send": .int(2)]),
        ])
        let slices = document.events(phase: "X")
        #expect(slices.map { $0["name"] as? String } == ["send → completion 1", "send → completion 2"])
        #expect(slices.map { $0["dur"] as? Double } == [8, 2])
        #expect(Set(slices.map { document.threadName(of: $0) }) == ["messaging: send → completion"])
        #expect(document.events(phase: "b").isEmpty)
    }

    @Test func overlappingRequestsBecomeAsyncSlices() throws {
        let document = try export([
            event(1_000, "api_call", ["call": .string("send"), "send": .int(1)]),
            event(2_000, "api_call", ["call": .string("send"), "send": .int(2)]),
            event(3_000, "completion", ["send": .int(1)]),
            event(4_000, "completion", ["send": .int(2)]),
        ])
        #expect(document.events(phase: "X").isEmpty)
        #expect(document.events(phase: "b").count == 2 && document.events(phase: "e").count == 2)
    }

    @Test func anUnansweredRequestLastsToTheTracesEnd() throws {
        let document = try export([
            event(1_000, "api_call", ["call": .string("send"), "send": .int(1)]),
            event(7_000, "timeout", ["what": .string("window-ack")]),
        ])
        let slice = try #require(document.events(phase: "X").first)
        #expect(slice["dur"] as? Double == 6)
        #expect((slice["args"] as? [String: Any])?["answered"] as? Bool == false)
    }

    @Test func progressIsACounterInPercent() throws {
        let document = try export([
            event(1_000, "api_call", ["call": .string("send"), "send": .int(1)]),
            event(2_000, "progress", ["send": .int(1), "sent": .int(12), "total": .int(48)]),
            event(3_000, "progress", ["send": .int(1), "sent": .int(48), "total": .int(48)]),
            event(3_000, "completion", ["send": .int(1)]),
        ])
        let counters = document.events(phase: "C")
        #expect(counters.compactMap { ($0["args"] as? [String: Any])?["1"] as? Double } == [25, 100])
    }

    @Test func framesGetATrackPerInterface() throws {
        let document = try export([event(0, "device_status", [:])],
                                  frames: [(0, 10, "ATT Write Command 0x0012"), (1, 20, "UDP 1 → 2"), (0, 30, "")])
        let frames = document.events(phase: "i").filter { $0["cat"] as? String == "frame" }
        #expect(frames.count == 3)
        #expect(frames.map { document.threadName(of: $0) } == [
            "interface 0 (bluetooth-hci-h4)", "interface 1 (bluetooth-hci-h4)", "interface 0 (bluetooth-hci-h4)"])
        #expect(frames[2]["name"] as? String == "frame")
    }

    @Test func textThatNeedsEscapingStaysValidJSON() throws {
        let document = try export([event(0, "api_call", ["call": .string("say \"hi\"\n\u{1}"), "text": .string("a\\b")])])
        #expect(document.events(phase: "i").first?["name"] as? String == "call say \"hi\"\n\u{1}")
    }
}
