import Testing

@testable import ReplayKit

/// What a fault list can make a run do: repeated faults on one frame add work linearly, a list has
/// a stated length limit, and an over-long duration says the limit instead of "not a duration".
@Suite struct FaultListBoundsTests {
    @Test func eachDuplicateOnAFrameAddsOneCopyNotADoubling() throws {
        let faults = try (0..<8).map { _ in try Fault(parsing: "duplicate:frames=1-1213") }
        let deliveries = PeerFrameFaults(faults).deliveries(ofFrame: 7, kind: .datagram, capturedAt: .seconds(1))
        #expect(deliveries.count == 9)
    }

    @Test func aDelayAfterDuplicatesMovesEveryCopy() throws {
        let faults = try ["duplicate:frame=3", "duplicate:frame=3", "delay:frame=3:by=5ms"].map(Fault.init(parsing:))
        let deliveries = PeerFrameFaults(faults).deliveries(ofFrame: 3, kind: .datagram, capturedAt: .zero)
        #expect(deliveries == [.milliseconds(5), .milliseconds(5), .milliseconds(5)])
    }

    @Test func aSingleDuplicateStillDeliversTwice() throws {
        let deliveries = PeerFrameFaults([try Fault(parsing: "duplicate:frame=3")]).deliveries(ofFrame: 3, kind: .datagram, capturedAt: .zero)
        #expect(deliveries == [.zero, .zero])
    }

    @Test func aFaultListLongerThanTheLimitIsRefusedSayingTheLimit() {
        let texts = Array(repeating: "duplicate:frames=1-1213", count: Fault.maximumPerRun + 1)
        #expect(throws: FaultSpecError.self) { try Fault.checkCount(texts) }
        do {
            try Fault.checkCount(texts)
        } catch {
            #expect(error.description.contains("at most \(Fault.maximumPerRun) faults"))
        }
        #expect(throws: Never.self) { try Fault.checkCount(Array(texts.prefix(Fault.maximumPerRun))) }
    }

    @Test(arguments: ["delay:frame=3:by=9223372036s", "delay:frame=3:by=86401s", "delay:frame=3:by=1e30s"])
    func aDurationPastADayIsRefusedSayingTheLimit(text: String) {
        do {
            _ = try Fault(parsing: text)
            Issue.record("\(text) was accepted")
        } catch {
            // 1e30s is not digits and a point: that one is "not a duration", the others the limit.
            if text.contains("1e30") {
                #expect(error.problem.contains("not a duration"))
            } else {
                #expect(error.problem.contains("longer than a fault's longest duration, a day (86400s)"), "\(error.problem)")
            }
        }
    }

    @Test(arguments: ["drop:from=500ms", "drop:to=2s", "drop:from=1s:to=2s", "drop:from=0ns:to=2s"])
    func aFaultsTextReadsBackAsTheSameFault(text: String) throws {
        let fault = try Fault(parsing: text)
        #expect(try Fault(parsing: fault.description) == fault, "\(fault.description)")
    }

    @Test func aDayExactlyIsAccepted() throws {
        guard case .delay(_, let by) = try Fault(parsing: "delay:frame=3:by=86400s") else { Issue.record("not a delay"); return }
        #expect(by == .seconds(86_400))
    }
}
