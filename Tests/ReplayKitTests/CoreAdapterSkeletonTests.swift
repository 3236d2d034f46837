import BehaviourTrace
import CaptureKit
import CaptureSet
import ReplayKit
import Testing

/// The part every recorded-core adapter shares (``CoreAdapterSkeleton``): reading `api-calls`
/// records, routing through the feed order, merging deadlines, and the summary's shared half.
@Suite struct CoreAdapterSkeletonTests {
    struct Call: Equatable { var name: String }
    struct DecodeError: Error, CustomStringConvertible { var description: String }
    typealias Skeleton = CoreAdapterSkeleton<String, Call>

    static func decode(_ record: [String: TraceValue]) throws(DecodeError) -> Call {
        guard case .string(let name)? = record["call"] else { throw DecodeError(description: "no \"call\" member") }
        return Call(name: name)
    }

    func skeleton(feedOrder: FeedOrderPrescan = .init(), matching: FrameMatchingMode = .strict, takesUnlabelled: Bool = false) -> Skeleton {
        Skeleton(core: "demo", matching: matching, matcher: FrameMatcher(core: "demo", decode: { _ in "" }),
                 feedOrder: feedOrder, takesUnlabelledRecords: takesUnlabelled)
    }

    /// Reads `record` as the API-call frame `number`, captured at `timestampNs` (virtual `virtualNs`).
    func read(_ skeleton: inout Skeleton, _ record: APICallRecord, number: Int = 1, virtualNs: Int64 = 0, timestampNs: Int64 = 0) -> Skeleton.RecordReading {
        let frame = ReplayFrame(number: number, virtualTimeNs: virtualNs, timestampNs: timestampNs,
                                interface: ReplayInterface(index: 0, linkType: .user0, role: .apiCalls), apiCall: record)
        skeleton.saw(frame)
        return skeleton.readCall(frame, now: .nanoseconds(virtualNs), decode: Self.decode)
    }

    func names(_ routed: Skeleton.Routed) -> [String] {
        routed.map {
            switch $0 {
            case .link(let name): "link:\(name)"
            case .call(let call): "call:\(call.name)"
            }
        }
    }

    @Test func aRecordOfAnotherCoreIsPassedOverAndCountsNothing() {
        var skeleton = skeleton()
        guard case .otherCore = read(&skeleton, .parsed(["core": .string("other"), "call": .string("send")])) else {
            Issue.record("a record of another core was taken")
            return
        }
        #expect(skeleton.apiCalls == 0 && skeleton.malformedRecords == 0)
    }

    @Test func aRecordWithoutACoreIsTakenOnlyWhereUnlabelledRecordsAre() {
        var strict = skeleton()
        guard case .otherCore = read(&strict, .parsed(["call": .string("send")])) else {
            Issue.record("an unlabelled record was taken by a skeleton that takes none")
            return
        }
        var lenient = skeleton(takesUnlabelled: true)
        guard case .parsed(let call, _) = read(&lenient, .parsed(["call": .string("send")])) else {
            Issue.record("an unlabelled record was not taken")
            return
        }
        #expect(call == Call(name: "send"))
    }

    @Test func aRecordThatDoesNotReadIsReportedNamingItsFrame() {
        var skeleton = skeleton()
        guard case .malformed(let event) = read(&skeleton, .malformed("frame 7: not a JSON object"), number: 7) else {
            Issue.record("a record that does not read was not reported")
            return
        }
        #expect(event.event == "api_record_malformed")
        #expect(event.fields["frame"] == .int(7))
        #expect(event.fields["detail"] == .string("frame 7: not a JSON object"))
        #expect(skeleton.malformedRecords == 1 && skeleton.apiCalls == 0)
    }

    @Test func aCallThatDoesNotDecodeIsReportedInTheDecodersWords() {
        var skeleton = skeleton()
        guard case .malformed(let event) = read(&skeleton, .parsed(["core": .string("demo")]), number: 3) else {
            Issue.record("a call that does not decode was not reported")
            return
        }
        #expect(event.fields["detail"] == .string("no \"call\" member"))
        #expect(event.fields["frame"] == .int(3))
        #expect(skeleton.malformedRecords == 1)
    }

    @Test func aDecodedCallIsCountedAndRoutedAtOnceWithoutAFeedOrder() {
        var skeleton = skeleton()
        guard case .parsed(let call, let record) = read(&skeleton, .parsed(["core": .string("demo"), "call": .string("send")])) else {
            Issue.record("the call was not decoded")
            return
        }
        #expect(skeleton.apiCalls == 1)
        #expect(names(skeleton.route(call, frame: 1, record: record, now: .zero)) == ["call:send"])
        #expect(names(skeleton.route("notify", timestampNs: 5, now: .zero)) == ["link:notify"])
        #expect(names(skeleton.releaseAll()).isEmpty)
    }

    @Test func withAFeedOrderACallStampedBeforeAConsumedLinkInputWaitsForIt() {
        let plan = FeedOrderPrescan(calls: [.init(frame: 2, timestampNs: 100, linkInputs: 1)])
        var skeleton = skeleton(feedOrder: plan)
        let record: [String: TraceValue] = ["core": .string("demo"), "call": .string("send"), "link_inputs": .int(1)]
        #expect(names(skeleton.route(Call(name: "send"), frame: 2, record: record, now: .zero)).isEmpty)
        #expect(names(skeleton.route("ack", timestampNs: 101, now: .microseconds(1))) == ["link:ack", "call:send"])
    }

    @Test func aRespondersAnswerIsStampedOnTheCapturesClock() {
        // The live core got the call (stamped 1,100 ns on the capture's clock) before any link input.
        let plan = FeedOrderPrescan(calls: [.init(frame: 2, timestampNs: 1_100, linkInputs: 0)])
        var skeleton = skeleton(feedOrder: plan)
        _ = read(&skeleton, .parsed(["core": .string("other")]), virtualNs: 5, timestampNs: 1_005)
        #expect(skeleton.captureEpochNs == 1_000)
        // Virtual 50 ns is 1,050 ns on the capture's clock: before the call, so it waits for it.
        #expect(names(skeleton.routeAnswer("answer", now: .nanoseconds(50))).isEmpty)
        let record: [String: TraceValue] = ["core": .string("demo"), "call": .string("send"), "link_inputs": .int(0)]
        #expect(names(skeleton.route(Call(name: "send"), frame: 2, record: record, now: .nanoseconds(100))) == ["call:send", "link:answer"])
    }

    @Test func theNextDeadlineIsTheEarliestOfTheCoreTheOthersAndTheFeedOrder() {
        var skeleton = skeleton(feedOrder: FeedOrderPrescan(calls: [.init(frame: 2, timestampNs: 100, linkInputs: 1)]))
        #expect(skeleton.nextDeadline(core: nil) == nil)
        #expect(skeleton.nextDeadline(core: .seconds(3), 2_000_000_000) == .seconds(2))
        #expect(skeleton.nextDeadline(core: nil, nil, 4_000) == .nanoseconds(4_000))
        let record: [String: TraceValue] = ["core": .string("demo"), "call": .string("send"), "link_inputs": .int(1)]
        _ = skeleton.route(Call(name: "send"), frame: 2, record: record, now: .zero)
        // The held call is released after the feed order's longest hold.
        #expect(skeleton.nextDeadline(core: .seconds(3), 2_000_000_000) == FeedOrderQueue<String, Call>.maximumHold)
    }

    @Test func theSummaryCarriesTheSharedCountsBesideTheCoresOwn() {
        var skeleton = skeleton()
        _ = read(&skeleton, .parsed(["core": .string("demo"), "call": .string("send")]))
        _ = read(&skeleton, .malformed("bad"), number: 2)
        let events = skeleton.finish(now: .seconds(1), fields: ["links": .int(2)], responderMade: 4, reportsUnsent: true)
        #expect(events.count == 1)
        let summary = events[0]
        #expect(summary.event == "summary" && summary.core == "demo" && summary.timeNs == 1_000_000_000)
        #expect(summary.fields == [
            "links": .int(2), "api_calls": .int(1), "frame_matching": .string("strict"), "frames_matched": .int(0),
            "frames_diverged": .int(0), "frames_unsent": .int(0), "malformed_api_records": .int(1), "responder_made": .int(4),
        ])
    }

    @Test func theSummaryLeavesOutWhatDidNotHappen() {
        var skeleton = skeleton()
        let summary = skeleton.finish(now: .zero, fields: [:])[0]
        #expect(summary.fields["malformed_api_records"] == nil)
        #expect(summary.fields["responder_made"] == nil)
        #expect(summary.fields["frames_unsent"] == nil)
        #expect(summary.fields["first_divergence"] == nil)
    }

    @Test func anUnpairedCapturedFrameIsADivergenceAtTheEnd() {
        var skeleton = skeleton()
        #expect(skeleton.captured([1, 2], channel: "c", frame: 9, now: .zero).isEmpty)
        let events = skeleton.finish(now: .seconds(1), fields: [:])
        #expect(events.map(\.event) == ["frame_diverged", "summary"])
        #expect(events.last?.fields["frames_diverged"] == .int(1))
        #expect(events.last?.fields["first_divergence"] != nil)
    }

    @Test func withMatchingOffNothingIsCompared() {
        var skeleton = skeleton(matching: .off)
        #expect(skeleton.captured([1, 2], channel: "c", frame: 9, now: .zero).isEmpty)
        #expect(skeleton.linkDown(channel: "c", now: .zero).isEmpty)
        let events = skeleton.finish(now: .seconds(1), fields: [:])
        #expect(events.map(\.event) == ["summary"])
        #expect(events[0].fields["frame_matching"] == .string("off"))
    }
}
