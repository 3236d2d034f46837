import BehaviourTrace
@testable import ReplayKit
import Testing

/// A variant stopped once recovered ends with its checker composed from the run without faults'
/// (``PromiseChecker/composed(shadow:sourceEnd:)``): the same verdict as a checker that saw the
/// variant's events up to that point and the other run's after it.
struct PromiseCheckerCompositionTests {
    let send = TraceCorrelation("send → completion", start: .init("api_call", where: "call", is: "send"), ends: [.init("completion")], key: "send")
    var promises: [(core: TraceName, promise: CorePromise)] {
        [(core: "c", promise: CorePromise("every send completes once", .exactlyOneEnd(correlation: "send → completion"))),
         (core: "c", promise: CorePromise("items in order", .exactlyOnceInOrder(event: "item", key: "id"))),
         (core: "c", promise: CorePromise("points kept", .preservedExceptDropped(event: "point", identity: ["v"])))]
    }

    func e(_ t: Int64, _ name: TraceName, _ fields: [String: TraceValue], core: TraceName = "c") -> TraceEvent {
        TraceEvent(timeNs: t, core: core, event: name, fields: fields)
    }

    /// Frames 1…6 of a run: per frame, the events it makes.
    typealias Run = [(frame: Int, events: [TraceEvent])]

    var plainRun: Run {
        [(1, [e(1, "api_call", ["call": .string("send"), "send": .int(1)]), e(1, "point", ["v": .int(1)])]),
         (2, [e(2, "point", ["v": .int(2)]), e(2, "item", ["id": .int(1)])]),
         (3, [e(3, "completion", ["send": .int(1)]), e(3, "point", ["v": .int(3)])]),
         (4, [e(4, "item", ["id": .int(2)]), e(4, "point", ["v": .int(4)])]),
         (5, [e(5, "api_call", ["call": .string("send"), "send": .int(2)])]),
         (6, [e(6, "completion", ["send": .int(2)]), e(6, "point", ["v": .int(6)])])]
    }

    func facts() -> PlainRunFacts {
        var recorder = PromiseChecker(promises: promises, correlations: ["c": [send]], plain: nil)
        for (frame, events) in plainRun {
            recorder.currentFrame = frame
            for event in events { recorder.observe(event) }
        }
        return recorder.facts()
    }

    /// A checker that read `run`'s frames up to `until` (all when `nil`).
    func checker(_ run: Run, facts: PlainRunFacts, until: Int? = nil) -> PromiseChecker {
        var checker = PromiseChecker(promises: promises, correlations: ["c": [send]], plain: facts)
        checker.startTakingOffAsItReads()
        for (frame, events) in run where frame <= (until ?? .max) {
            checker.reading(frame: frame)
            for event in events { checker.observe(event) }
        }
        return checker
    }

    @Test func aComposedCheckerGivesTheVerdictOfTheWholeVariant() throws {
        let facts = facts()
        // The variant loses frame 2 (its point and its item), then is back in step from frame 3 on:
        // what it saw after that is the plain run's. The lost item breaks a promise; the lost point
        // is excused (its frame was dropped).
        var variant = plainRun
        variant[1].events = [e(2, "fault_injected", ["action": .string("dropped"), "frame": .int(2)], core: "faults")]
        var whole = checker(Array(variant.prefix(2)) + Array(plainRun.dropFirst(2)), facts: facts)
        let expected = whole.verdict()
        #expect(expected.map(\.promise) == ["items in order"])

        let stoppedAt = checker(variant, facts: facts, until: 2)
        let shadow = checker(plainRun, facts: facts, until: 2)
        let sourceEnd = checker(plainRun, facts: facts)
        var composed = try #require(stoppedAt.composed(shadow: shadow, sourceEnd: sourceEnd))
        #expect(composed.verdict() == expected)
    }

    @Test func aPointInventedAfterTheStopIsStillFound() throws {
        // The run without faults itself makes a point the facts do not have (its own run differs
        // from the plain one): the composed checker carries that difference over.
        let facts = facts()
        var source = plainRun
        source[4].events.append(e(5, "point", ["v": .int(99)]))
        var whole = checker(Array(plainRun.prefix(3)) + Array(source.dropFirst(3)), facts: facts)
        let expected = whole.verdict()
        #expect(expected.first?.detail.contains("never made: 99") == true)
        var composed = try #require(checker(plainRun, facts: facts, until: 3).composed(shadow: checker(source, facts: facts, until: 3),
                                                                                      sourceEnd: checker(source, facts: facts)))
        #expect(composed.verdict() == expected)
    }

    @Test func aCheckerWhoseRequestsDifferFromTheOtherRunsIsNotComposed() {
        let facts = facts()
        var variant = plainRun
        variant[0].events = [e(1, "point", ["v": .int(1)])] // the send never started
        #expect(checker(variant, facts: facts, until: 2).composed(shadow: checker(plainRun, facts: facts, until: 2),
                                                                 sourceEnd: checker(plainRun, facts: facts)) == nil)
    }
}
