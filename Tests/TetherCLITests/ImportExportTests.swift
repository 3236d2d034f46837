import CaptureKit
import CaptureSet
import Foundation
import Testing
import TetherTestSupport

/// `import` makes a set Tether reads back as the source; `export` gives the frames back out.
@Suite struct ImportExportTests {
    @Test func pcapngImportThenExportKeepsFramesTimestampsCommentsAndInterfaces() throws {
        let folder = try TemporaryFolder("cli-tests")
        let sample = FrameBuilder.sampleFrames()
        let source = folder.path("source.pcapng").path
        try FrameBuilder.writePcapng(sample.interfaces, sample.frames, to: source)
        let set = folder.path("Captures/sample").path
        try Tools.tetherSucceeds(["import", source, "--out", set, "--title", "sample"])
        let exported = folder.path("exported.pcapng").path
        try Tools.tetherSucceeds(["export", set, "--format", "pcapng", "--out", exported])

        let back = try FrameBuilder.readAll(exported)
        #expect(back.warnings.isEmpty)
        #expect(back.interfaces.map(\.linkType) == sample.interfaces.map(\.linkType))
        #expect(back.interfaces.map(\.name) == sample.interfaces.map(\.name))
        #expect(back.frames.map(\.timestampNs) == sample.frames.map(\.timestampNs))
        #expect(back.frames.map(\.data) == sample.frames.map(\.data))
        #expect(back.frames.map(\.interfaceIndex) == sample.frames.map(\.interfaceIndex))
        #expect(back.frames.map(\.comments) == sample.frames.map(\.comments))
    }

    @Test func importWritesASealedSetWithRolesAndCommentAnnotations() throws {
        let folder = try TemporaryFolder("cli-tests")
        let sample = FrameBuilder.sampleFrames()
        let source = folder.path("source.pcapng").path
        try FrameBuilder.writePcapng(sample.interfaces, sample.frames, to: source)
        let set = folder.path("Captures/sample").path
        try Tools.tetherSucceeds(["import", source, "--out", set])

        let loaded = try CaptureSetDirectory.load(set, verify: true)
        #expect(loaded.verified)
        #expect(loaded.manifest.status == .complete)
        #expect(loaded.manifest.interfaces.map(\.role) == [.ingestUDP, .bleHCI])
        #expect(loaded.manifest.interfaces.first?.ingestPort == 12345)
        #expect(loaded.manifest.annotations.map(\.frame) == [1, 3, 3])
        #expect(loaded.manifest.annotations.map(\.timeNs) == [0, 2_000_000_007, 2_000_000_007])
        // Nothing is left behind beside the set.
        let siblings = try FileManager.default.contentsOfDirectory(atPath: folder.path("Captures").path)
        #expect(siblings == ["sample"])
    }

    @Test func btsnoopImportThenExportGivesTheSameRecords() throws {
        let folder = try TemporaryFolder("cli-tests")
        let source = folder.path("source.btsnoop").path
        let writer = try BtsnoopWriter(path: source, datalink: .h4)
        var originals: [CaptureFrame] = []
        for index in 0..<5 {
            let data = FrameBuilder.h4ATT(received: index % 2 == 0, att: [0x1B, 0x10, 0x00, UInt8(index)])
            // btsnoop keeps microseconds.
            let frame = CaptureFrame(number: index + 1, interfaceIndex: 0, timestampNs: 1_700_000_000_000_000_000 + Int64(index) * 1_250_000, originalLength: data.count, data: data)
            try writer.write(frame, linkType: .bluetoothHCIH4WithPHDR)
            originals.append(frame)
        }
        try writer.close()

        let set = folder.path("Captures/ble").path
        try Tools.tetherSucceeds(["import", source, "--out", set])
        let exported = folder.path("exported.btsnoop").path
        try Tools.tetherSucceeds(["export", set, "--format", "btsnoop", "--out", exported])
        #expect(try Data(contentsOf: URL(fileURLWithPath: exported)) == Data(contentsOf: URL(fileURLWithPath: source)))
    }

    @Test func importRefusesAnExistingSetFolder() throws {
        let folder = try TemporaryFolder("cli-tests")
        let sample = FrameBuilder.sampleFrames()
        let source = folder.path("source.pcapng").path
        try FrameBuilder.writePcapng(sample.interfaces, sample.frames, to: source)
        let result = try Tools.tether(["import", source, "--out", folder.url.path])
        #expect(result.status == 64)
        #expect(result.stderr.contains("already exists"))
    }

    @Test func btsnoopExportOfAUDPOnlySetFailsWithAReason() throws {
        let folder = try TemporaryFolder("cli-tests")
        let frame = FrameBuilder.ethernetUDP(source: [127, 0, 0, 1], sourcePort: 1, destination: [127, 0, 0, 1], destinationPort: 12345, payload: [1])
        let source = folder.path("udp.pcapng").path
        try FrameBuilder.writePcapng([CaptureInterface(linkType: .ethernet)], [CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1, originalLength: frame.count, data: frame)], to: source)
        let set = folder.path("udp-set").path
        try Tools.tetherSucceeds(["import", source, "--out", set])
        let result = try Tools.tether(["export", set, "--format", "btsnoop", "--out", folder.path("x.btsnoop").path])
        #expect(result.status == 1)
        #expect(result.stderr.contains("pcapng"), "the message should point to pcapng: \(result.stderr)")
    }
}
