import CaptureKit
import CaptureSet
import Foundation
import Testing
import TetherTestSupport

/// The commands that read a set's manifest and its capture warn when the two disagree on an
/// interface's link type.
@Suite struct LinkTypeWarningTests {
    /// A sealed set whose only interface is Bluetooth HCI while its manifest calls it ingest UDP
    /// on Ethernet.
    static func makeContradictorySet(in folder: TemporaryFolder) throws -> String {
        let set = folder.path("Captures/mislabelled").path
        try CaptureSetDirectory.create(at: set, manifest: CaptureSetManifest(
            title: "HCI called UDP", recordedAt: "2026-11-22T00:45:00Z",
            interfaces: [ManifestInterface(index: 0, name: "lo", linkType: .ethernet, role: .ingestUDP, ingestPort: 12345)]))
        let writer = PcapngWriter()
        _ = try writer.addInterface(CaptureInterface(linkType: .bluetoothHCIH4WithPHDR))
        // HCI_Reset, sent by the host: direction 0, command indicator, opcode 0x0c03, no parameters.
        try writer.write(CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1_000, originalLength: 8, data: [0, 0, 0, 0, 1, 3, 0x0C, 0]))
        try Data(writer.bytes).write(to: URL(fileURLWithPath: set + "/capture.pcapng"))
        try CaptureSetDirectory.seal(at: set)
        return set
    }

    static let warning = "tether: warning: capture set mislabelled: interface #0 (lo) is BLUETOOTH_HCI_H4_WITH_PHDR (201) in capture.pcapng, but the manifest says role ingest-udp"

    @Test func inspectWarnsOnStderrAndStillShowsTheCapture() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeContradictorySet(in: folder)
        let result = try Tools.tether(["inspect", set])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains(Self.warning), "\(result.stderr)")
        #expect(result.stderr.contains("set `role: ble-hci`"), "\(result.stderr)")
        #expect(result.stdout.contains("Frames:      1"), "\(result.stdout)")
    }

    @Test func inspectJSONWarnsOnStderrAndKeepsStdoutOneObject() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeContradictorySet(in: folder)
        let result = try Tools.tether(["inspect", set, "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.contains(Self.warning), "\(result.stderr)")
        #expect(try JSONSerialization.jsonObject(with: result.stdoutBytes) is [String: Any])
    }

    @Test func replayWarnsOnStderr() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.makeContradictorySet(in: folder)
        let result = try Tools.tether(["replay", set])
        #expect(result.stderr.contains(Self.warning.replacingOccurrences(of: "tether: warning: ", with: "tether: warning: mislabelled: ")), "\(result.stderr)")
    }
}
