import BehaviourTrace
import CaptureKit
import LiveCapture
import LiveHosts
import Testing

/// What a live run reports about its recording: nothing it knows of the recording is left out.
@Suite struct LiveRunOutcomeTests {
    static func recording(interfaces: [RecordedInterfaceSummary], notices: [String] = []) -> RecordingSummary {
        RecordingSummary(setPath: "/tmp/widget-set", capturePath: "/tmp/widget-set/capture.pcapng", frames: 40,
                         interfaces: interfaces, annotations: [], sha256: String(repeating: "0", count: 64), notices: notices)
    }

    @Test func anInterfaceThatDroppedPacketsIsNamedWithItsCounts() {
        let outcome = LiveRunOutcome(trace: [], failedSteps: [], recording: Self.recording(interfaces: [
            RecordedInterfaceSummary(index: 0, name: "lo", linkType: .linuxSLL2, frames: 30,
                                     statistics: InterfaceStatistics(received: 33, interfaceDropped: 2, osDropped: 1)),
        ]))
        #expect(outcome.notices.count == 1)
        let notice = outcome.notices.first ?? ""
        #expect(notice.contains("interface #0 (lo, LINUX_SLL2) of /tmp/widget-set dropped 3 packets of 33 received"))
        #expect(notice.contains("record again"))
    }

    @Test func interfacesWithoutDropsOrWithoutCountsAddNothing() {
        let outcome = LiveRunOutcome(trace: [], failedSteps: [], recording: Self.recording(interfaces: [
            RecordedInterfaceSummary(index: 0, name: "lo", linkType: .linuxSLL2, frames: 30, statistics: InterfaceStatistics(received: 30, interfaceDropped: 0)),
            RecordedInterfaceSummary(index: 1, name: "app-group", linkType: .user1, frames: 5, statistics: nil),
            RecordedInterfaceSummary(index: 2, name: "api-calls", linkType: .user0, frames: 5, statistics: nil),
        ]))
        #expect(outcome.notices.isEmpty)
    }

    @Test func theRunsNoticesComeFirstThenTheRecordingsOwnThenItsDrops() {
        let outcome = LiveRunOutcome(trace: [], failedSteps: ["step 3 failed"], recording: Self.recording(interfaces: [
            RecordedInterfaceSummary(index: 0, name: "hci", linkType: .bluetoothHCIH4WithPHDR, frames: 10,
                                     statistics: InterfaceStatistics(osDropped: 1)),
        ], notices: ["lo: the capture delivers microsecond timestamps; recording with microsecond precision"]),
            notices: ["refused host 127.0.0.1:5000"])
        #expect(outcome.notices.count == 3)
        #expect(outcome.notices.first == "refused host 127.0.0.1:5000")
        #expect(outcome.notices.dropFirst().first?.contains("microsecond") == true)
        // Without `received`, the count stands alone, in the singular for one packet.
        #expect(outcome.notices.last?.contains("dropped 1 packet while recording") == true)
        #expect(outcome.failedSteps == ["step 3 failed"])
    }

    @Test func aRunWithoutARecordingKeepsOnlyItsOwnNotices() {
        let outcome = LiveRunOutcome(trace: [], failedSteps: [], recording: nil, notices: ["the controller closed the connection"])
        #expect(outcome.notices == ["the controller closed the connection"])
    }
}
