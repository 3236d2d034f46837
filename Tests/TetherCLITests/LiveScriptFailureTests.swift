import Foundation
import Testing
import TetherTestSupport

/// A script step that cannot run shows in the exit status, a value Monkey C cannot hold is an
/// error, and a bridge that cannot reach its transport says why.
@Suite(.serialized) struct LiveScriptFailureTests {

    func write(_ folder: TemporaryFolder, _ text: String) throws -> String {
        let script = folder.path("script.yaml")
        try text.write(to: script, atomically: true, encoding: .utf8)
        return script.path
    }

    /// Runs `tether live messaging` with `script` against one Bumble controller (no watch: these
    /// steps fail before anything goes on the air).
    func runAgainstAController(_ script: String) throws -> ProcessResult {
        let folder = try TemporaryFolder("cli-tests")
        let (controllers, ports) = try LiveMessagingEndToEndTests.twoControllers(in: folder)
        defer { controllers.stop() }
        return try Tools.tether(["live", "messaging", "--hci", "tcp-client:127.0.0.1:\(ports[1])", "--peer", "F0:F0:F0:F0:F0:F0",
                                 "--script", script])
    }

    @Test func aSendToAnAppThatIsNotAUUIDFailsTheRun() throws {
        let folder = try TemporaryFolder("cli-tests")
        let result = try runAgainstAController(try write(folder, "steps:\n  - send: {app: not-a-uuid, message: 1}\n"))
        #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains("step 1: send: the core refused the call: app not-a-uuid"), "\(result.stderr)")
    }

    @Test func aFloat32BeyondItsRangeFailsTheStepNamingTheValue() throws {
        let folder = try TemporaryFolder("cli-tests")
        let result = try runAgainstAController(try write(folder, """
            steps:
              - send: {app: 0180E520-5F7E-11E4-9803-0800200C9A66, message: {$float32: 1.0e+300}}
            """))
        #expect(result.status == 1, "\(result.stdout)\n\(result.stderr)")
        #expect(result.stderr.contains("step 1: send:"), "\(result.stderr)")
        #expect(result.stderr.contains("{\"$float32\": 1e+300} is beyond a float32's range"), "\(result.stderr)")
    }

    @Test func anIntegerBeyondALongIsRefusedBeforeTheRunStarts() throws {
        let folder = try TemporaryFolder("cli-tests")
        let script = try write(folder, "steps:\n  - send: {app: 0180E520-5F7E-11E4-9803-0800200C9A66, message: 100000000000000000000000}\n")
        let result = try Tools.tether(["live", "messaging", "--hci", "tcp-client:127.0.0.1:1", "--peer", "F0:F0:F0:F0:F0:F0", "--script", script])
        #expect(result.status == 64)
        #expect(result.stderr.contains("step 1: send.message: 100000000000000000000000 is an integer outside Monkey C's range"), "\(result.stderr)")
    }

    @Test func anUnreachableTransportIsReportedWithTheBridgesReason() throws {
        _ = try Tools.pythonWithBumble()
        let folder = try TemporaryFolder("cli-tests")
        let script = try write(folder, "steps:\n  - wait: 1s\n")
        let result = try Tools.tether(["live", "messaging", "--hci", "tcp-client:127.0.0.1:1", "--peer", "F0:F0:F0:F0:F0:F0", "--script", script])
        #expect(result.status == 1)
        #expect(result.stderr.contains("exited with status 1 before it was ready"), "\(result.stderr)")
        #expect(result.stderr.contains("Connect call failed"), "\(result.stderr)")
        #expect(!result.stderr.contains("did not say READY"), "\(result.stderr)")
    }
}
