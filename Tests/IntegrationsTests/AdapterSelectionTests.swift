@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
import CaptureKit
import CaptureSet
import ReplayKit
import TetherIntegrations
import Testing

@Suite struct AdapterSelectionTests {
    func manifest(_ interfaces: [ManifestInterface], sections: [ManifestSection] = []) -> CaptureSetManifest {
        CaptureSetManifest(title: "t", recordedAt: "2026-11-22T00:00:00Z", interfaces: interfaces, sections: sections)
    }

    func cores(_ manifest: CaptureSetManifest, path: String = "m/manifest.yaml") throws -> [String] {
        try TetherIntegrations.builtIn.select(for: manifest, manifestPath: path).map(\.name)
    }

    func section(_ name: String, _ yaml: String) throws -> ManifestSection {
        let text = "schema_version: 1\ntitle: t\nrecorded_at: x\ntether_version: x\n\(name):\n" + yaml
        return try #require(try CaptureSetDirectory.decodeManifest(text, path: "m/manifest.yaml").section(named: name))
    }

    @Test func aBareCaptureReplaysIngestOnly() throws {
        #expect(try cores(manifest([])) == ["ingest"])
    }

    @Test func ingestUDPChoosesIngest() throws {
        #expect(try cores(manifest([ManifestInterface(index: 0, linkType: .ethernet, role: .ingestUDP)])) == ["ingest"])
    }

    @Test func bleAndAPICallsChooseMessaging() throws {
        let m = manifest([
            ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
            ManifestInterface(index: 1, linkType: .user0, role: .apiCalls),
        ])
        #expect(try cores(m) == ["messaging"])
    }

    @Test func udpAndBLEInOneSetChooseBoth() throws {
        let m = manifest([
            ManifestInterface(index: 0, linkType: .ethernet, role: .ingestUDP),
            ManifestInterface(index: 1, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
        ])
        #expect(try cores(m) == ["ingest", "messaging"])
    }

    @Test func aBLEInterfaceForTheSessionCoreIsSessionsNotMessagings() throws {
        let m = manifest([ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI, core: "session")])
        #expect(try cores(m) == ["session"])
    }

    @Test func theAPICallsOfASessionRecordingAreNotMessagings() throws {
        let m = manifest([
            ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
            ManifestInterface(index: 1, linkType: .user0, role: .apiCalls),
        ], sections: [try section("session", "  role: phone\n")])
        #expect(try cores(m) == ["session"])
    }

    @Test func aMessagingSectionAloneChoosesMessaging() throws {
        let m = manifest([ManifestInterface(index: 0, linkType: .bluetoothHCIH4WithPHDR, role: .context)],
                         sections: [try section("messaging", "  devices: []\n")])
        #expect(try cores(m) == ["messaging"])
    }

    @Test func mqttAndAppGroupChooseWidget() throws {
        let m = manifest([
            ManifestInterface(index: 0, linkType: .ethernet, role: .mqttTCP),
            ManifestInterface(index: 1, linkType: .user1, role: .appGroup),
            ManifestInterface(index: 2, linkType: .user0, role: .apiCalls),
        ])
        #expect(try cores(m) == ["widget"])
    }

    @Test func aMisspeltCoreIsRefusedNamingTheRegisteredCores() throws {
        let text = """
            schema_version: 1
            title: t
            recorded_at: x
            tether_version: x
            interfaces:
              - index: 0
                link_type: 201
                role: ble-hci
                core: mesaging
            """
        let m = try CaptureSetDirectory.decodeManifest(text, path: "sets/x/manifest.yaml")
        let error = #expect(throws: ReplayError.self) { try cores(m, path: "sets/x/manifest.yaml") }
        let message = error?.description ?? ""
        #expect(message.hasPrefix("sets/x/manifest.yaml:9: `interfaces[0].core`"))
        #expect(message.contains("\"mesaging\" is not a registered core"))
        #expect(message.contains("did you mean \"messaging\"?"))
        #expect(message.contains("registered cores: ingest, messaging, session, widget"))
    }

    @Test func aCoreThatDoesNotReplayTheRoleIsRefused() throws {
        let m = manifest([ManifestInterface(index: 0, linkType: .ethernet, role: .ingestUDP, core: "session")])
        let error = #expect(throws: ReplayError.self) { try cores(m) }
        #expect(error?.description.contains("core session does not replay `ingest-udp` interfaces") == true)
    }

    @Test func aSectionNoCoreClaimsIsRefusedWithItsLine() throws {
        let text = "schema_version: 1\ntitle: t\nrecorded_at: x\ntether_version: x\nheart_rate:\n  no_data_timeout_ms: 5000\n"
        let m = try CaptureSetDirectory.decodeManifest(text, path: "sets/hr/manifest.yaml")
        let error = #expect(throws: ReplayError.self) { try cores(m, path: "sets/hr/manifest.yaml") }
        let message = error?.description ?? ""
        #expect(message.hasPrefix("sets/hr/manifest.yaml:5: `heart_rate`"))
        #expect(message.contains("no registered core claims the section `heart_rate`"))
    }

    @Test func aMisspeltSectionSuggestsTheRightOne() throws {
        let text = "schema_version: 1\ntitle: t\nrecorded_at: x\ntether_version: x\nsesion:\n  role: phone\n"
        let m = try CaptureSetDirectory.decodeManifest(text, path: "m.yaml")
        let error = #expect(throws: ReplayError.self) { try cores(m) }
        #expect(error?.description.contains("did you mean \"session\"?") == true)
    }

    @Test func aRegistryWithTwoCoresOfOneNameIsRefused() {
        let registry = TetherIntegrations.builtIn.adding(IngestIntegration())
        guard case .failure(let error) = registry.validated() else {
            Issue.record("a duplicate core was accepted")
            return
        }
        #expect(error.description == "core ingest is registered twice")
    }

    @Test func aSettingIsParsedWithinItsBounds() throws {
        let setting = try SettingOverride.parse("messaging.settings.window_size=4", registry: TetherIntegrations.builtIn).get()
        #expect(setting.core == "messaging" && setting.key == "settings.window_size" && setting.value.scalarText == "4")
        guard case .failure(let error) = SettingOverride.parse("messaging.settings.window_size=16", registry: TetherIntegrations.builtIn) else {
            Issue.record("16 was accepted")
            return
        }
        #expect(error.message.contains("from 1 to 15"))
    }

    @Test func aDurationSettingIsStoredInMilliseconds() throws {
        let setting = try SettingOverride.parse("ingest.idle_timeout_ms=2.5s", registry: TetherIntegrations.builtIn).get()
        #expect(setting.value.scalarText == "2500")
    }

    @Test func aBareNumberForAMillisecondKeyIsRefusedRatherThanReadAsSeconds() {
        guard case .failure(let error) = SettingOverride.parse("session.settings.message_reply_timeout_ms=1000", registry: TetherIntegrations.builtIn) else {
            Issue.record("1000 was accepted (as 1000 s)")
            return
        }
        #expect(error.message.contains("1000ms or 1000s"))
    }

    @Test func aSettingOfAnUnknownCoreNamesTheRegisteredOnes() {
        guard case .failure(let error) = SettingOverride.parse("mesaging.settings.window_size=4", registry: TetherIntegrations.builtIn) else {
            Issue.record("accepted")
            return
        }
        #expect(error.message.contains("did you mean \"messaging\"?"))
    }

    @Test func ingestOverridesLaterFieldsWin() {
        let manifest = IngestOverrides(idleTimeoutMs: 2000, flushIntervalMs: 50, flushBytes: nil)
        let cli = IngestOverrides(idleTimeoutMs: 500)
        #expect(manifest.overridden(by: cli) == IngestOverrides(idleTimeoutMs: 500, flushIntervalMs: 50, flushBytes: nil))
        #expect(manifest.overridden(by: nil) == manifest)
    }
}
