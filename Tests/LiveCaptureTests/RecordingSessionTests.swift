import CaptureSet
import Foundation
import LiveCapture
import Testing
import TetherTestSupport

/// `tether record`'s body as a library: open, start, stop, run to a sealed set.
@Suite struct RecordingSessionTests {
    @Test func anAppGroupRecordingIsSealedWithTheChangesMadeWhileItRan() async throws {
        let scratch = try TemporaryFolder("recording-session")
        let container = scratch.path("group").path
        try FileManager.default.createDirectory(atPath: container, withIntermediateDirectories: true)
        var request = RecordingRequest(setPath: scratch.path("set").path)
        request.appGroup = container
        request.title = "two files written"
        let session = try RecordingSession(request)
        #expect(session.parts == ["App Group \(container)"])
        #expect(!FileManager.default.fileExists(atPath: request.setPath), "opening must not create the set")
        try session.start()
        try Data("a".utf8).write(to: URL(fileURLWithPath: container + "/settings.json"))
        try Data("b".utf8).write(to: URL(fileURLWithPath: container + "/flag"))
        session.mark("both written")
        Task {
            try await Task.sleep(for: .milliseconds(500))
            session.stop()
        }
        let summary = try await session.run()
        #expect(summary.frames >= 2)
        #expect(summary.annotations.map(\.text) == ["both written"])
        let manifest = try CaptureSetDirectory.readManifest(at: request.setPath)
        #expect(manifest.title == "two files written")
        #expect(manifest.status == .complete)
        #expect(manifest.interfaces.map(\.role) == [.appGroup])
    }

    @Test func aSourceThatCannotBeOpenedLeavesNoSetBehind() throws {
        let scratch = try TemporaryFolder("recording-session")
        var request = RecordingRequest(setPath: scratch.path("set").path)
        request.appGroup = scratch.path("no-such-folder").path
        #expect(throws: LiveCaptureError.self) { _ = try RecordingSession(request) }
        #expect(!FileManager.default.fileExists(atPath: request.setPath))
    }
    @Test func aTapListeningBeyondLoopbackIsAWarningNamingItsAddress() throws {
        let scratch = try TemporaryFolder("recording-session")
        let controller = try TestListener()
        var request = RecordingRequest(setPath: scratch.path("set").path)
        request.ble = .tap(.tcp(host: "127.0.0.1", port: controller.port), listen: H4ListenAddress(host: "0.0.0.0", port: 0))
        let session = try RecordingSession(request)
        let port = try #require(session.tap?.port)
        #expect(session.warnings.count == 1)
        #expect(session.warnings.first?.contains("listens on 0.0.0.0:\(port), beyond loopback: any host on the network") == true)
        session.stop()
    }

    @Test func aTapOnLoopbackIsNoWarning() throws {
        let scratch = try TemporaryFolder("recording-session")
        let controller = try TestListener()
        var request = RecordingRequest(setPath: scratch.path("set").path)
        request.ble = .tap(.tcp(host: "127.0.0.1", port: controller.port), listen: H4ListenAddress(host: "127.0.0.1", port: 0))
        let session = try RecordingSession(request)
        #expect(session.warnings.isEmpty)
        session.stop()
    }
}
