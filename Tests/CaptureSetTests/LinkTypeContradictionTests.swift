import CaptureKit
import Foundation
import Testing
@testable import CaptureSet

/// A manifest that says one thing about an interface while its capture holds another warns.
@Suite struct LinkTypeContradictionTests {
    /// A sealed set named `name` whose capture has one interface per link type in `captured` (each
    /// with one frame, in order; `late` interfaces are described only after the first frame, as a
    /// copied capture may) and whose manifest describes them as `described`.
    static func makeSet(name: String = "walk", captured: [LinkType], late: Int = 0, described: [ManifestInterface]) throws -> (folder: String, set: String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-linktype-\(UUID().uuidString)").path
        let set = folder + "/" + name
        try CaptureSetDirectory.create(at: set, manifest: CaptureSetManifest(
            title: "link types", recordedAt: "2026-11-22T00:45:00Z", interfaces: described))
        let writer = PcapngWriter()
        let early = captured.count - late
        for type in captured.prefix(early) { _ = try writer.addInterface(CaptureInterface(linkType: type)) }
        for (index, type) in captured.enumerated() {
            if index >= early { _ = try writer.addInterface(CaptureInterface(linkType: type)) }
            try writer.write(CaptureFrame(number: index + 1, interfaceIndex: index, timestampNs: Int64(index) * 1000, originalLength: 4, data: [1, 2, 3, 4]))
        }
        try Data(writer.bytes).write(to: URL(fileURLWithPath: set + "/capture.pcapng"))
        try CaptureSetDirectory.seal(at: set)
        return (folder, set)
    }

    static func linkTypeWarnings(_ set: LoadedCaptureSet) -> [String] {
        set.warnings.filter { $0.contains("so replay would misread its frames") }
    }

    @Test func aBluetoothCaptureUnderAnIngestManifestWarnsNamingAllAndWhatToDo() throws {
        let (folder, path) = try Self.makeSet(
            captured: [.bluetoothHCIH4WithPHDR],
            described: [ManifestInterface(index: 0, name: "lo", linkType: .ethernet, role: .ingestUDP, ingestPort: 12345)])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let warnings = Self.linkTypeWarnings(try CaptureSetDirectory.load(path))
        #expect(warnings == [
            "capture set walk: interface #0 (lo) is BLUETOOTH_HCI_H4_WITH_PHDR (201) in capture.pcapng, but the manifest says "
                + "role ingest-udp, which carries one of ETHERNET (1), LINUX_SLL (113), LINUX_SLL2 (276), RAW (101), IPV4 (228), "
                + "IPV6 (229), NULL (0), LOOP (108) and link_type 1 (ETHERNET), so replay would misread its frames. "
                + "Fix `interfaces[0]` in manifest.yaml: set `link_type: 201` and set `role: ble-hci`; "
                + "or, if the manifest is right, restore the capture file it was written for.",
        ])
    }

    @Test func aRoleThatCannotCarryTheLinkTypeWarnsEvenWhenLinkTypeAgrees() throws {
        let (folder, path) = try Self.makeSet(
            captured: [.user0],
            described: [ManifestInterface(index: 0, name: "api-calls", linkType: .user0, role: .appGroup)])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let warnings = Self.linkTypeWarnings(try CaptureSetDirectory.load(path))
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("says role app-group, which carries USER1 (148), so") == true, "\(warnings)")
        #expect(warnings.first?.contains("Fix `interfaces[0]` in manifest.yaml: set `role: api-calls`;") == true, "\(warnings)")
    }

    @Test func aLinkTypeFieldThatDisagreesWithTheCaptureWarnsEvenWhenTheRoleFits() throws {
        let (folder, path) = try Self.makeSet(
            captured: [.ethernet],
            described: [ManifestInterface(index: 0, name: "any", linkType: .linuxSLL2, role: .ingestUDP)])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let warnings = Self.linkTypeWarnings(try CaptureSetDirectory.load(path))
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("interface #0 (any) is ETHERNET (1) in capture.pcapng, but the manifest says link_type 276 (LINUX_SLL2), so") == true, "\(warnings)")
        #expect(warnings.first?.contains("set `link_type: 1`;") == true, "\(warnings)")
    }

    @Test func anInterfaceDescribedAfterTheFirstFrameIsStillChecked() throws {
        let (folder, path) = try Self.makeSet(
            captured: [.ethernet, .bluetoothLinuxMonitor], late: 1,
            described: [
                ManifestInterface(index: 0, linkType: .ethernet, role: .ingestUDP),
                ManifestInterface(index: 1, linkType: .user1, role: .appGroup),
            ])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let warnings = Self.linkTypeWarnings(try CaptureSetDirectory.load(path))
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("interface #1 is BLUETOOTH_LINUX_MONITOR (254)") == true, "\(warnings)")
        #expect(warnings.first?.contains("set `role: ble-monitor`") == true, "\(warnings)")
    }

    @Test func aManifestThatAgreesWithItsCaptureLoadsWithoutLinkTypeWarnings() throws {
        let (folder, path) = try Self.makeSet(
            captured: [.ethernet, .bluetoothHCIH4WithPHDR, .user0, .user1, .linuxSLL2],
            described: [
                ManifestInterface(index: 0, linkType: .ethernet, role: .mqttTCP),
                ManifestInterface(index: 1, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI),
                ManifestInterface(index: 2, linkType: .user0, role: .apiCalls),
                ManifestInterface(index: 3, linkType: .user1, role: .appGroup),
                ManifestInterface(index: 4, linkType: .linuxSLL2, role: .context),
            ])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let set = try CaptureSetDirectory.load(path)
        #expect(set.warnings.isEmpty, "\(set.warnings)")
    }

    @Test func anInterfaceTheCaptureNeverDescribesIsNotJudged() throws {
        let (folder, path) = try Self.makeSet(
            captured: [.ethernet],
            described: [
                ManifestInterface(index: 0, linkType: .ethernet, role: .ingestUDP),
                ManifestInterface(index: 3, linkType: .user0, role: .apiCalls),
            ])
        defer { try? FileManager.default.removeItem(atPath: folder) }
        #expect(Self.linkTypeWarnings(try CaptureSetDirectory.load(path)).isEmpty)
    }

    @Test(arguments: [
        (InterfaceRole.ingestUDP, LinkType.linuxSLL2, true), (.ingestUDP, .bluetoothHCIH4WithPHDR, false),
        (.mqttTCP, .ethernet, true), (.mqttTCP, .user1, false),
        (.bleHCI, .bluetoothHCIH4, true), (.bleHCI, .bluetoothLinuxMonitor, false),
        (.bleMonitor, .bluetoothLinuxMonitor, true), (.bleMonitor, .bluetoothHCIH4WithPHDR, false),
        (.appGroup, .user1, true), (.appGroup, .user0, false),
        (.apiCalls, .user0, true), (.apiCalls, .ethernet, false),
        (.context, .bluetoothLELL, true), (InterfaceRole(rawValue: "someday"), .user0, true),
    ])
    func eachRoleAcceptsExactlyItsLinkTypes(_ role: InterfaceRole, _ linkType: LinkType, _ accepted: Bool) {
        #expect(role.accepts(linkType) == accepted)
    }
}
