import CaptureKit
import Dissectors
import Foundation
import Testing
import TetherTestSupport

/// `tether record --redact`: a real BLE recording (Bumble through the H4 tap) redacted as it ends.
@Suite struct RecordRedactTests {
    @Test func recordRedactLeavesOnlyTheRedactedSet() throws {
        let folder = try TemporaryFolder("cli-record-redact")
        let (set, stdout) = try RecordBLETests.recordBumbleExchange(in: folder, extra: ["--redact"])
        #expect(stdout.contains("redacted into \(set): "), "\(stdout)")
        #expect(stdout.contains(" address"), "\(stdout)")
        let hidden = folder.path("Captures/.bumble-tap.unredacted").path
        #expect(!FileManager.default.fileExists(atPath: hidden))
        let (interfaces, frames) = try RecordBLETests.frames(set + "/capture.pcapng")
        #expect(interfaces.map(\.linkType) == [.bluetoothHCIH4WithPHDR])
        // Still a whole, readable recording: the connection and the GATT exchange are there.
        var dissector = FrameDissector()
        let dissected = frames.map { dissector.dissect($0, linkType: .bluetoothHCIH4WithPHDR) }
        #expect(dissected.allSatisfy { $0.problem == nil }, "\(dissected.compactMap(\.problem))")
        #expect(dissected.contains { $0.summary.contains("LE Connection Complete") || $0.summary.contains("LE Enhanced Connection Complete") })
        #expect(dissected.flatMap(\.att).contains { $0.opcode == .readResponse && $0.value == [1, 2, 3] })
        let manifest = try String(contentsOfFile: set + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("status: complete"))
        try Tools.tetherSucceeds(["inspect", set])
    }
}
