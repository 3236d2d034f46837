import BehaviourTrace
import ReplayKit
import Testing

/// What every recorded core's driver offers its adapter (``ReplayedCore``).
@Suite struct ReplayedCoreTests {
    struct Timer: ReplayedCore {
        var nextDeadline: Duration?
        var fired: [Duration] = []
        mutating func apply(_ call: String, now: Duration) -> (actions: [String], events: [TraceEvent]) { ([call], []) }
        mutating func handleTimeout(now: Duration) -> [String] {
            fired.append(now)
            nextDeadline = nil
            return ["fired"]
        }
    }

    @Test func aTimerNotYetDueIsNotFired() {
        var core = Timer(nextDeadline: .seconds(2))
        #expect(core.timersDue(now: .seconds(1)) == nil)
        #expect(core.fired.isEmpty)
    }

    @Test func aTimerDueIsFiredOnce() {
        var core = Timer(nextDeadline: .seconds(2))
        #expect(core.timersDue(now: .seconds(2)) == ["fired"])
        #expect(core.timersDue(now: .seconds(3)) == nil)
        #expect(core.fired == [.seconds(2)])
    }
}
