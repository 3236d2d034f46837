import BehaviourTrace
import ReplayKit
import Testing

/// The feed-order rule (``FeedOrderQueue``): replay feeds a core its calls and link inputs in the
/// order the live core got them, whatever the timestamps say.
@Suite struct FeedOrderTests {
    typealias Queue = FeedOrderQueue<String, String>
    static let second: Int64 = 1_000_000_000

    /// The items as `link:NAME` / `call:NAME`, to compare whole arrays.
    func names(_ items: [Queue.Item]) -> [String] {
        items.map {
            switch $0 {
            case .link(let name): "link:\(name)"
            case .call(let name): "call:\(name)"
            }
        }
    }

    func planned(_ calls: (frame: Int, timestampNs: Int64, linkInputs: Int)...) -> [FeedOrderPrescan.PlannedCall] {
        calls.map { FeedOrderPrescan.PlannedCall(frame: $0.frame, timestampNs: $0.timestampNs, linkInputs: $0.linkInputs) }
    }

    @Test func withoutPlannedCallsEverythingPassesInCaptureOrder() {
        var queue = Queue(planned: [])
        #expect(!queue.ordersAnything)
        #expect(names(queue.link("n1", timestampNs: 100, nowNs: 0)) == ["link:n1"])
        #expect(names(queue.call("send", frame: 2, linkInputs: nil, nowNs: 0)) == ["call:send"])
        #expect(names(queue.link("n2", timestampNs: 101, nowNs: 1)) == ["link:n2"])
        #expect(queue.nextReleaseNs == nil)
        #expect(queue.callsHeld == 0 && queue.linksHeld == 0 && queue.forcedReleases == 0)
        #expect(queue.releaseAll().isEmpty)
    }

    /// Direction 1: the call is stamped before a link input the live core had already consumed.
    @Test func callStampedBeforeAConsumedLinkInputWaitsForIt() {
        var queue = Queue(planned: planned((frame: 2, timestampNs: 100, linkInputs: 1)))
        #expect(names(queue.call("send", frame: 2, linkInputs: 1, nowNs: 0)).isEmpty)
        #expect(queue.nextReleaseNs == Self.second)
        #expect(names(queue.link("ack", timestampNs: 101, nowNs: 1_000)) == ["link:ack", "call:send"])
        #expect(queue.callsHeld == 1 && queue.linksHeld == 0 && queue.forcedReleases == 0)
        #expect(queue.nextReleaseNs == nil)
    }

    /// Direction 2: the link input is stamped before a call the live core had been given first.
    @Test func linkInputStampedBeforeACallTheLiveCoreGotFirstWaitsForTheCall() {
        var queue = Queue(planned: planned((frame: 3, timestampNs: 200, linkInputs: 0)))
        #expect(names(queue.link("first", timestampNs: 150, nowNs: 50)).isEmpty)
        #expect(names(queue.link("data", timestampNs: 160, nowNs: 60)).isEmpty)
        #expect(names(queue.call("send", frame: 3, linkInputs: 0, nowNs: 100)) == ["call:send", "link:first", "link:data"])
        #expect(queue.linksHeld == 2 && queue.callsHeld == 0 && queue.forcedReleases == 0)
        #expect(queue.linkInputsFed == 2)
    }

    @Test func aLinkInputTheCallHadSeenIsNotHeld() {
        var queue = Queue(planned: planned((frame: 3, timestampNs: 200, linkInputs: 1)))
        #expect(names(queue.link("ack", timestampNs: 150, nowNs: 50)) == ["link:ack"])
        #expect(names(queue.call("send", frame: 3, linkInputs: 1, nowNs: 100)) == ["call:send"])
        #expect(queue.callsHeld == 0 && queue.linksHeld == 0)
    }

    @Test func aLinkInputIsNotHeldForACallMoreThanTheMaximumHoldAway() {
        let hold = Queue.maximumHold.replayNanoseconds
        var near = Queue(planned: planned((frame: 3, timestampNs: 100 + hold, linkInputs: 0)))
        #expect(names(near.link("n", timestampNs: 100, nowNs: 0)).isEmpty)
        var far = Queue(planned: planned((frame: 3, timestampNs: 100 + hold + 1, linkInputs: 0)))
        #expect(names(far.link("n", timestampNs: 100, nowNs: 0)) == ["link:n"])
    }

    @Test func callsKeepTheirOrderBehindAHeldCall() {
        var queue = Queue(planned: planned((frame: 2, timestampNs: 100, linkInputs: 1), (frame: 3, timestampNs: 101, linkInputs: 1)))
        #expect(names(queue.call("a", frame: 2, linkInputs: 1, nowNs: 0)).isEmpty)
        #expect(names(queue.call("b", frame: 3, linkInputs: 1, nowNs: 1)).isEmpty)
        #expect(names(queue.link("n", timestampNs: 102, nowNs: 2)) == ["link:n", "call:a", "call:b"])
    }

    @Test func aCallWaitsForAsManyLinkInputsAsItNames() {
        var queue = Queue(planned: planned((frame: 2, timestampNs: 100, linkInputs: 2)))
        #expect(names(queue.call("send", frame: 2, linkInputs: 2, nowNs: 0)).isEmpty)
        #expect(names(queue.link("n1", timestampNs: 101, nowNs: 1)) == ["link:n1"])
        #expect(names(queue.link("n2", timestampNs: 102, nowNs: 2)) == ["link:n2", "call:send"])
    }

    @Test func aHeldCallIsReleasedAtExactlyTheMaximumHold() {
        var queue = Queue(planned: planned((frame: 2, timestampNs: 100, linkInputs: 5)))
        #expect(names(queue.call("send", frame: 2, linkInputs: 5, nowNs: 10)).isEmpty)
        let release = 10 + Queue.maximumHold.replayNanoseconds
        #expect(queue.nextReleaseNs == release)
        #expect(names(queue.releaseDue(nowNs: release - 1)).isEmpty)
        #expect(names(queue.releaseDue(nowNs: release)) == ["call:send"])
        #expect(queue.forcedReleases == 1)
        #expect(queue.nextReleaseNs == nil)
    }

    @Test func aHeldLinkInputIsReleasedAtExactlyTheMaximumHold() {
        var queue = Queue(planned: planned((frame: 9, timestampNs: 100, linkInputs: 0)))
        #expect(names(queue.link("n", timestampNs: 100, nowNs: 10)).isEmpty)
        let release = 10 + Queue.maximumHold.replayNanoseconds
        #expect(queue.nextReleaseNs == release)
        #expect(names(queue.releaseDue(nowNs: release - 1)).isEmpty)
        #expect(names(queue.releaseDue(nowNs: release)) == ["link:n"])
        #expect(queue.forcedReleases == 1 && queue.linkInputsFed == 1)
    }

    @Test func whatIsStillHeldAtTheEndIsReleasedInOrder() {
        var queue = Queue(planned: planned((frame: 2, timestampNs: 100, linkInputs: 3)))
        _ = queue.call("a", frame: 2, linkInputs: 3, nowNs: 0)
        _ = queue.call("b", frame: 4, linkInputs: nil, nowNs: 0)
        #expect(names(queue.releaseAll()) == ["call:a", "call:b"])
        #expect(queue.forcedReleases == 2)
        #expect(queue.nextReleaseNs == nil)
    }

    @Test func aRecordWithoutTheFieldImposesNothing() {
        var queue = Queue(planned: planned((frame: 5, timestampNs: 500, linkInputs: 1)))
        #expect(names(queue.call("bluetooth_state", frame: 1, linkInputs: nil, nowNs: 0)) == ["call:bluetooth_state"])
        #expect(names(queue.link("up", timestampNs: 10, nowNs: 10)) == ["link:up"])
    }

    @Test(arguments: [
        (["link_inputs": TraceValue.int(3)], Optional(3)),
        (["link_inputs": TraceValue.int(0)], Optional(0)),
        (["link_inputs": TraceValue.int(-1)], nil),
        (["link_inputs": TraceValue.string("3")], nil),
        ([:], nil),
    ] as [([String: TraceValue], Int?)])
    func theRecordFieldIsAWholeNumberFromZero(record: [String: TraceValue], expected: Int?) {
        #expect(FeedOrderPrescan.linkInputs(of: record) == expected)
    }
}
