import ReplayKit
import BehaviourTrace
import Testing

@Suite struct FrameMatcherTests {
    func matcher() -> FrameMatcher {
        FrameMatcher(core: "messaging", decode: { "p" + JSONLiteral.hex($0) })
    }

    @Test func equalBytesEmittedFirstAreMatched() {
        var m = matcher()
        let emitted = m.emitted([1, 2], channel: "d", timeNs: 10)
        #expect(emitted.map(\.event) == ["frame_emitted"])
        let paired = m.captured([1, 2], channel: "d", frame: 7, timeNs: 12)
        #expect(paired == [TraceEvent(timeNs: 12, core: "messaging", event: "frame_matched", fields: ["device": .string("d"), "frame": .int(7)])])
        #expect(m.matched == 1 && m.diverged == 0)
        #expect(m.finish(timeNs: 20).isEmpty)
    }

    @Test func emittedAndReorderedMatchEventsWriteTheLinesTheirDictionariesWrite() {
        var m = FrameMatcher(core: "session", reorderWindow: 2, decode: { "p" + JSONLiteral.hex($0) })
        let emitted = m.emitted([0xAB, 1], channel: "watch", timeNs: 3)
        let expected = TraceEvent(timeNs: 3, core: "session", event: "frame_emitted",
                                  fields: ["device": .string("watch"), "bytes": .string("ab01"), "packet": .string("pab01")])
        #expect(emitted == [expected])
        #expect(emitted.first?.jsonLine() == expected.jsonLine())
        _ = m.emitted([2], channel: "watch", timeNs: 4)
        let swapped = m.captured([2], channel: "watch", frame: 9, timeNs: 5)
        let reordered = TraceEvent(timeNs: 5, core: "session", event: "frame_matched",
                                   fields: ["device": .string("watch"), "frame": .int(9), "reordered": .bool(true)])
        #expect(swapped == [reordered])
        #expect(swapped.first?.jsonLine() == reordered.jsonLine())
        #expect(swapped.first?.field("reordered") == .bool(true))
    }

    @Test func capturedFrameWaitsForTheCoreToEmit() {
        var m = matcher()
        #expect(m.captured([9], channel: "d", frame: 3, timeNs: 5).isEmpty)
        let events = m.emitted([9], channel: "d", timeNs: 6)
        #expect(events.map(\.event) == ["frame_emitted", "frame_matched"])
    }

    @Test func differentBytesAreReportedWithBothDecodings() {
        var m = matcher()
        _ = m.emitted([1], channel: "d", timeNs: 1)
        let events = m.captured([2], channel: "d", frame: 4, timeNs: 2)
        #expect(events.count == 1)
        #expect(events[0].event == "frame_diverged")
        #expect(events[0].fields["kind"] == .string("different"))
        #expect(events[0].fields["expected"] == .string("02"))
        #expect(events[0].fields["emitted"] == .string("01"))
        #expect(events[0].fields["expected_packet"] == .string("p02"))
        #expect(m.firstDivergence?.frame == 4)
    }

    @Test func channelsArePairedSeparately() {
        var m = matcher()
        _ = m.emitted([1], channel: "a", timeNs: 1)
        #expect(m.captured([1], channel: "b", frame: 1, timeNs: 1).isEmpty)
        #expect(m.captured([1], channel: "a", frame: 2, timeNs: 1).map(\.event) == ["frame_matched"])
        let leftover = m.finish(timeNs: 3)
        #expect(leftover.map { $0.fields["kind"] } == [.string("missing")])
    }

    @Test func unpairedFramesAtTheEndAreMissingOrExtra() {
        var m = matcher()
        _ = m.captured([5], channel: "d", frame: 9, timeNs: 1)
        _ = m.emitted([6], channel: "e", timeNs: 2)
        let events = m.finish(timeNs: 3)
        #expect(events.map { $0.fields["kind"] } == [.string("missing"), .string("extra")])
        #expect(m.diverged == 2)
        #expect(m.firstDivergence?.kind == "missing")
        #expect(m.finish(timeNs: 4).isEmpty)
    }

    @Test func onlyTheFirstDivergenceIsKept() {
        var m = matcher()
        _ = m.emitted([1], channel: "d", timeNs: 1)
        _ = m.captured([2], channel: "d", frame: 1, timeNs: 1)
        _ = m.emitted([3], channel: "d", timeNs: 2)
        _ = m.captured([4], channel: "d", frame: 2, timeNs: 2)
        #expect(m.firstDivergence?.frame == 1)
        #expect(m.diverged == 2)
    }
}
