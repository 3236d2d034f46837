import Foundation
import CaptureKit
import Testing
import TetherTestSupport

/// `tether inspect --json` has the documented shape (docs/cli.md).
@Suite struct InspectJSONTests {
    static func inspectJSON(_ arguments: [String]) throws -> [String: Any] {
        let result = try Tools.tetherSucceeds(["inspect"] + arguments + ["--json"])
        return try #require(try JSONSerialization.jsonObject(with: result.stdoutBytes) as? [String: Any], "not a JSON object: \(result.stdout)")
    }

    static func sampleFile(_ folder: TemporaryFolder) throws -> String {
        let sample = FrameBuilder.sampleFrames()
        let path = folder.path("sample.pcapng").path
        try FrameBuilder.writePcapng(sample.interfaces, sample.frames, to: path)
        return path
    }

    @Test func summaryCountsFramesInTotalAndPerInterface() throws {
        let folder = try TemporaryFolder("cli-tests")
        let json = try Self.inspectJSON([try Self.sampleFile(folder)])
        #expect(json["frames"] as? Int == 3)
        #expect(json["format"] as? String == "pcapng")
        let interfaces = try #require(json["interfaces"] as? [[String: Any]])
        #expect(interfaces.map { $0["linktype"] as? Int } == [1, 201])
        #expect(interfaces.map { $0["frames"] as? Int } == [2, 1])
        #expect(json["first_time_ns"] as? Int == 1_700_000_000_123_456_789)
        #expect(json["frame_list"] == nil, "the frame list appears only with --frames")
    }

    @Test func framesCarryNumberTimeAndInterface() throws {
        let folder = try TemporaryFolder("cli-tests")
        let json = try Self.inspectJSON([try Self.sampleFile(folder), "--frames"])
        let frames = try #require(json["frame_list"] as? [[String: Any]])
        #expect(frames.map { $0["number"] as? Int } == [1, 2, 3])
        #expect(frames.map { $0["time_ns"] as? Int } == [1_700_000_000_123_456_789, 1_700_000_000_124_456_790, 1_700_000_002_123_456_796])
        #expect(frames.map { $0["interface"] as? Int } == [0, 1, 0])
        #expect(frames[2]["comments"] as? [String] == ["second datagram", "512 bytes"])
    }

    @Test func udpFramesCarryAddressesPortsAndLength() throws {
        let folder = try TemporaryFolder("cli-tests")
        let json = try Self.inspectJSON([try Self.sampleFile(folder), "--frames"])
        let frames = try #require(json["frame_list"] as? [[String: Any]])
        let udp = try #require(frames[2]["udp"] as? [String: Any])
        #expect(udp["src"] as? String == "127.0.0.1")
        #expect(udp["src_port"] as? Int == 50123)
        #expect(udp["dst"] as? String == "127.0.0.1")
        #expect(udp["dst_port"] as? Int == 12345)
        #expect(udp["length"] as? Int == 512)
        #expect(frames[2]["att"] == nil)
    }

    @Test func attFramesCarryOpcodeHandleAndHexValue() throws {
        let folder = try TemporaryFolder("cli-tests")
        let json = try Self.inspectJSON([try Self.sampleFile(folder), "--frames"])
        let frames = try #require(json["frame_list"] as? [[String: Any]])
        let att = try #require(frames[1]["att"] as? [String: Any])
        #expect(att["opcode"] as? Int == 0x1B)
        #expect(att["handle"] as? Int == 0x0010)
        #expect(att["value"] as? String == "0102")
        #expect((frames[1]["att_all"] as? [[String: Any]])?.count == 1)
        #expect(frames[1]["direction"] as? String == "received")
        #expect(frames[1]["udp"] == nil)
    }

    @Test func aFrameThatDoesNotDissectCarriesItsProblemsAsTextAndAsObjects() throws {
        let folder = try TemporaryFolder("cli-tests")
        let interfaces = [CaptureInterface(linkType: .bluetoothHCIH4WithPHDR, name: "hci0")]
        // A notification too short for its handle: ATT's problem, at a frame offset.
        let short = FrameBuilder.h4ATT(received: true, att: [0x1B, 0x10])
        let frames = [CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1_700_000_000_000_000_000, originalLength: short.count, data: short)]
        let path = folder.path("short.pcapng").path
        try FrameBuilder.writePcapng(interfaces, frames, to: path)
        let json = try Self.inspectJSON([path, "--frames"])
        let frame = try #require((json["frame_list"] as? [[String: Any]])?.first)
        let text = try #require(frame["problem"] as? String)
        #expect(text.hasPrefix("ATT: at frame offset 13: expected 3 bytes of Handle Value Notification"))
        let problems = try #require(frame["problems"] as? [[String: Any]])
        #expect(problems.count == 1)
        #expect(problems.first?["layer"] as? String == "ATT")
        #expect(problems.first?["kind"] as? String == "layout")
        #expect(problems.first?["offset"] as? Int == 13)
        #expect(problems.first?["context"] == nil, "a frame offset has no context")
        #expect(problems.first?["text"] as? String == text)
    }

    @Test func aTruncatedFileGivesItsFramesAndAWarningOnStderr() throws {
        let folder = try TemporaryFolder("cli-tests")
        let path = try Self.sampleFile(folder)
        var bytes = try Data(contentsOf: URL(fileURLWithPath: path))
        bytes.removeLast(10)
        try bytes.write(to: URL(fileURLWithPath: path))
        let result = try Tools.tetherSucceeds(["inspect", path, "--json"])
        let json = try #require(try JSONSerialization.jsonObject(with: result.stdoutBytes) as? [String: Any])
        #expect(json["frames"] as? Int == 2)
        #expect((json["warnings"] as? [String])?.count == 1)
        #expect(result.stderr.contains("warning"), "stderr: \(result.stderr)")
    }

    @Test func aMissingPathExitsWithTheValidationCodeAndSaysWhatToDo() throws {
        let result = try Tools.tether(["inspect", "/nonexistent/capture.pcapng"])
        #expect(result.status == 64)
        #expect(result.stderr.contains("does not exist"))
    }

    @Test func textOutputListsFramesWithTheirDissection() throws {
        let folder = try TemporaryFolder("cli-tests")
        let result = try Tools.tetherSucceeds(["inspect", try Self.sampleFile(folder), "--frames"])
        #expect(result.stdout.contains("UDP 127.0.0.1:50123 → 127.0.0.1:12345 512 bytes"), "\(result.stdout)")
        #expect(result.stdout.contains("Frames:      3"))
        #expect(result.stdout.contains("# second datagram"))
    }
}
