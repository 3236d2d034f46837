import BehaviourTrace
import Testing

/// ``CorrelationTracker``: requests paired with their answers as a trace streams by.
struct CorrelationTrackerTests {
    let send = TraceCorrelation("send → completion", start: .init("api_call", where: "call", is: "send"),
                                ends: [.init("completion")], key: "send",
                                progress: .init(event: "progress", done: "sent", total: "total"))

    func event(_ t: Int64, _ name: TraceName, _ fields: [String: TraceValue], core: TraceName = "messaging") -> TraceEvent {
        TraceEvent(timeNs: t, core: core, event: name, fields: fields)
    }

    @Test func aStartIsPairedWithTheEndOfTheSameKey() {
        let trace = [
            event(10, "api_call", ["call": .string("send"), "send": .int(1)]),
            event(20, "api_call", ["call": .string("send"), "send": .int(2)]),
            event(30, "completion", ["send": .int(2), "result": .string("Success")]),
            event(45, "completion", ["send": .int(1), "result": .string("Success")]),
        ]
        let pairs = CorrelationTracker.pairs(in: trace, correlations: ["messaging": [send]]).pairs
        #expect(pairs.map(\.key) == ["1", "2"])
        #expect(pairs.map(\.latencyNs) == [35, 10])
        #expect(pairs.map(\.endIndex) == [3, 2])
        #expect(pairs.allSatisfy { $0.endEvent == "completion" && $0.core == "messaging" })
    }

    @Test func aRequestNeverAnsweredStaysOpen() {
        let trace = [event(10, "api_call", ["call": .string("send"), "send": .int(1)])]
        let pair = CorrelationTracker.pairs(in: trace, correlations: ["messaging": [send]]).pairs.first
        #expect(pair?.endNs == nil && pair?.latencyNs == nil && pair?.startIndex == 0)
    }

    @Test func progressIsKeptOnlyForAnOpenPair() {
        let trace = [
            event(5, "progress", ["send": .int(1), "sent": .int(0), "total": .int(48)]),
            event(10, "api_call", ["call": .string("send"), "send": .int(1)]),
            event(20, "progress", ["send": .int(1), "sent": .int(20), "total": .int(48)]),
            event(30, "progress", ["send": .int(1), "sent": .int(48), "total": .int(48)]),
            event(30, "completion", ["send": .int(1)]),
            event(40, "progress", ["send": .int(1), "sent": .int(48), "total": .int(48)]),
        ]
        let progress = CorrelationTracker.pairs(in: trace, correlations: ["messaging": [send]]).progress
        #expect(progress.map(\.done) == [20, 48])
        #expect(progress.map(\.index) == [2, 3])
        #expect(progress.allSatisfy { $0.total == 48 && $0.key == "1" })
    }

    @Test func anotherCoresEventsAreNotPaired() {
        let trace = [
            event(10, "api_call", ["call": .string("send"), "send": .int(1)], core: "session"),
            event(20, "completion", ["send": .int(1)], core: "session"),
        ]
        #expect(CorrelationTracker.pairs(in: trace, correlations: ["messaging": [send]]).pairs.isEmpty)
    }

    @Test func aPatternFieldMustHoldItsValue() {
        let other = event(10, "api_call", ["call": .string("open_app"), "send": .int(1)])
        #expect(!send.starts[0].matches(other))
        #expect(TraceCorrelation.EventPattern("completion").matches(event(1, "completion", [:])))
        #expect(TraceCorrelation.EventPattern("api_call", where: "request", is: "2")
            .matches(event(1, "api_call", ["request": .int(2)])))
    }

    @Test func severalStartKindsShareOneKeyCounter() {
        let userInfo = TraceCorrelation("user info → finished",
                                        starts: [.init("api_call", where: "call", is: "transfer_user_info"),
                                                 .init("api_call", where: "call", is: "transfer_complication")],
                                        ends: [.init("user_info_transfer_did_finish")], key: "id")
        let trace = [
            event(10, "api_call", ["call": .string("transfer_user_info"), "id": .int(1)], core: "session"),
            event(11, "api_call", ["call": .string("transfer_complication"), "id": .int(2)], core: "session"),
            event(20, "user_info_transfer_did_finish", ["id": .int(2)], core: "session"),
            event(25, "user_info_transfer_did_finish", ["id": .int(1)], core: "session"),
        ]
        let pairs = CorrelationTracker.pairs(in: trace, correlations: ["session": [userInfo]]).pairs
        #expect(pairs.map(\.endNs) == [25, 20])
    }
}

/// A fault sweep identifies an event by several fields at once: the joined text must be exactly
/// each field's key text joined by `|`, `-` for a missing one, whatever the values hold.
@Test func joinedKeyTextIsEachKeyTextJoinedByBars() {
    let values: [TraceValue?] = [
        .string("127.0.0.1:50123"), .string("a|b \"quoted\" é"), nil, .int(-42), .double(0.1), .double(-0.0), .double(1e300),
        .bool(true), .null, .array([.int(1), .string("x")]), .object(["b": .int(2), "a": .double(1.5)]), .string(""),
    ]
    let expected = values.map { $0.map(TraceCorrelation.keyText) ?? "-" }.joined(separator: "|")
    #expect(TraceCorrelation.joinedKeyText(count: values.count) { values[$0] } == expected)
    #expect(TraceCorrelation.joinedKeyText(count: 0) { _ in nil } == "")
    #expect(TraceCorrelation.joinedKeyText(count: 1) { _ in .string("only") } == "only")
}
