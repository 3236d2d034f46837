import CaptureKit
import CaptureSet
import Replay
import Testing

@Suite struct AdapterSelectionTests {
    func manifest(_ interfaces: [ManifestInterface], messaging: ManifestMessaging? = nil) -> CaptureSetManifest {
        CaptureSetManifest(title: "t", recordedAt: "2026-11-22T00:00:00Z", interfaces: interfaces, messaging: messaging)
    }

    @Test func aBareCaptureReplaysIngestOnly() {
        #expect(ReplayAdapterSelection.cores(for: nil) == ["ingest"])
        #expect(ReplayAdapterSelection.cores(for: manifest([])) == ["ingest"])
    }

    @Test func ingestUDPChoosesIngest() {
        #expect(ReplayAdapterSelection.cores(for: manifest([ManifestInterface(index: 0, linkType: .ethernet, role: .ingestUDP)])) == ["ingest"])
    }

    @Test func bleAndAPICallsChooseMessaging() {
        let m = manifest([
            ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
            ManifestInterface(index: 1, linkType: .user0, role: .apiCalls),
        ])
        #expect(ReplayAdapterSelection.cores(for: m) == ["messaging"])
    }

    @Test func udpAndBLEInOneSetChooseBoth() {
        let m = manifest([
            ManifestInterface(index: 0, linkType: .ethernet, role: .ingestUDP),
            ManifestInterface(index: 1, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
        ])
        #expect(ReplayAdapterSelection.cores(for: m) == ["ingest", "messaging"])
    }

    @Test func aBLEInterfaceForTheSessionCoreIsSessionsNotMessagings() {
        let m = manifest([ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI, core: "session")])
        #expect(ReplayAdapterSelection.cores(for: m) == ["session"])
    }

    @Test func theAPICallsOfASessionRecordingAreNotMessagings() {
        var m = manifest([
            ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
            ManifestInterface(index: 1, linkType: .user0, role: .apiCalls),
        ])
        m.session = ManifestSession(role: "phone")
        #expect(ReplayAdapterSelection.cores(for: m) == ["session"])
    }

    @Test func aMessagingSectionAloneChoosesMessaging() {
        let m = manifest([ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .context)], messaging: ManifestMessaging())
        #expect(ReplayAdapterSelection.cores(for: m) == ["messaging"])
    }
}
