import Foundation
@testable import LiveHosts
import Testing

/// A bridge that ends before it is ready is reported with its exit status and its own last words,
/// not as a READY that never came.
@Suite struct BLEBridgeStartTests {
    let folder: String

    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-bridge-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    }

    /// A stand-in bridge: prints `lines` on stderr and exits with `status`.
    func fakeBridge(stderr lines: [String], status: Int) throws -> String {
        let path = folder + "/bridge.py"
        let prints = lines.map { "print(\($0.debugDescription), file=sys.stderr)" }.joined(separator: "\n")
        try "import sys\n\(prints)\nsys.exit(\(status))\n".write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func startError(_ script: String, stderrPath: String? = nil) -> LiveHostError? {
        do {
            _ = try BLEBridge(script: script, transport: "tcp-client:127.0.0.1:1", stderrPath: stderrPath)
            Issue.record("the bridge started")
            return nil
        } catch {
            return error
        }
    }

    @Test func aBridgeThatExitsIsReportedWithItsStatusAndLastLine() throws {
        let script = try fakeBridge(stderr: ["starting", "ciq_phone_bridge: [Errno 111] Connect call failed ('127.0.0.1', 1)"], status: 1)
        let error = try #require(startError(script))
        #expect(error.detail.contains("exited with status 1 before it was ready: starting | ciq_phone_bridge: [Errno 111] Connect call failed ('127.0.0.1', 1)"), "\(error)")
        #expect(!error.detail.contains("READY"), "\(error)")
    }

    @Test func aBridgeWithALogFileIsReportedWithTheLogsLastLines() throws {
        let script = try fakeBridge(stderr: ["Traceback (most recent call last):", "  File x", "ModuleNotFoundError: No module named 'bumble'"], status: 2)
        let log = folder + "/bridge.log"
        let error = try #require(startError(script, stderrPath: log))
        #expect(error.detail.contains("exited with status 2 before it was ready: Traceback (most recent call last): | File x | ModuleNotFoundError: No module named 'bumble'; its log is \(log)"), "\(error)")
    }

    @Test func aSilentBridgeIsReportedAsSilent() throws {
        let error = try #require(startError(try fakeBridge(stderr: [], status: 5)))
        #expect(error.detail.contains("exited with status 5 before it was ready without a word on stderr"), "\(error)")
    }

    @Test func theRealBridgeOnAnUnreachableTransportSaysTheConnectionWasRefused() throws {
        let bridge = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Harness/rigs/ciq_phone_bridge.py").path
        let error = try #require(startError(bridge))
        #expect(error.detail.contains("Connect call failed"), "\(error)")
        #expect(error.detail.contains("exited with status"), "\(error)")
    }
}
