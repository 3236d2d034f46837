import CaptureKit
import Foundation
import Testing
import TetherTestSupport

/// Files Tether writes are read by tshark (Wireshark 4.0) as Tether meant them.
@Suite struct TsharkAgreementTests {
    /// `1700000000.123456789` → nanoseconds, exactly (no floating point).
    static func epochNanoseconds(_ text: String) -> Int64? {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, let seconds = Int64(parts[0]) else { return nil }
        var fraction = String(parts[1])
        guard fraction.count <= 9 else { return nil }
        while fraction.count < 9 { fraction += "0" }
        guard let nanoseconds = Int64(fraction) else { return nil }
        return seconds * 1_000_000_000 + nanoseconds
    }

    @Test func tsharkSeesTheFramesTimestampsAndCommentsTetherWrote() throws {
        let folder = try TemporaryFolder("cli-tests")
        let path = folder.path("written.pcapng").path
        let interfaces = [
            CaptureInterface(linkType: .ethernet, name: "lo"),
            CaptureInterface(linkType: .linuxSLL2, name: "any"),
        ]
        var frames: [CaptureFrame] = []
        let base: Int64 = 1_763_771_400_000_000_001
        for index in 0..<7 {
            let payload = Array("datagram \(index)".utf8)
            let data = FrameBuilder.ethernetUDP(source: [127, 0, 0, 1], sourcePort: 40000, destination: [127, 0, 0, 1], destinationPort: 12345, payload: payload)
            // Offsets with odd nanoseconds, so a microsecond rounding anywhere would show.
            let time = base + Int64(index) * 1_000_000_333 + Int64(index * index)
            let comments = index == 2 ? ["stall begins"] : index == 5 ? ["two notes", "on one frame"] : []
            frames.append(CaptureFrame(number: index + 1, interfaceIndex: 0, timestampNs: time, originalLength: data.count, data: data, comments: comments))
        }
        try FrameBuilder.writePcapng(interfaces, frames, to: path)

        let rows = try Tools.tsharkFields(URL(fileURLWithPath: path), fields: ["frame.number", "frame.time_epoch", "frame.comment"])
        try #require(rows.count == frames.count, "tshark read \(rows.count) frames, Tether wrote \(frames.count)")
        for (row, frame) in zip(rows, frames) {
            #expect(row.first == String(frame.number))
            let seen = row.count > 1 ? Self.epochNanoseconds(row[1]) : nil
            #expect(seen == frame.timestampNs, "frame \(frame.number): tshark says \(row.count > 1 ? row[1] : "nothing"), Tether wrote \(frame.timestampNs) ns")
            let comments = row.count > 2 && !row[2].isEmpty ? row[2].split(separator: ",").map(String.init) : []
            #expect(comments == frame.comments, "frame \(frame.number): tshark's comments \(comments), Tether wrote \(frame.comments)")
        }
    }

    @Test func tsharkSeesEachInterfaceWithItsLinkType() throws {
        let folder = try TemporaryFolder("cli-tests")
        let path = folder.path("interfaces.pcapng").path
        let sample = FrameBuilder.sampleFrames()
        try FrameBuilder.writePcapng(sample.interfaces, sample.frames, to: path)
        // frame.interface_id and the encapsulation's link type per frame.
        let rows = try Tools.tsharkFields(URL(fileURLWithPath: path), fields: ["frame.number", "frame.interface_id", "frame.encap_type"])
        #expect(rows.map { $0.count > 1 ? $0[1] : "" } == sample.frames.map { String($0.interfaceIndex) })
        // Wireshark's encapsulation numbers: 1 Ethernet, 99 Bluetooth H4 with phdr.
        #expect(rows.map { $0.count > 2 ? $0[2] : "" } == ["1", "99", "1"])
    }
}
