import Foundation
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A program running beside the test (`serve`, `record`), with its output in files so it can be
/// read while it runs.
final class BackgroundProcess: @unchecked Sendable {
    let process = Process()
    let stdoutURL: URL
    let stderrURL: URL
    let arguments: [String]

    init(_ program: URL, _ arguments: [String], in folder: TemporaryFolder, name: String) throws {
        self.arguments = arguments
        stdoutURL = folder.path("\(name).stdout")
        stderrURL = folder.path("\(name).stderr")
        FileManager.default.createFile(atPath: stdoutURL.path, contents: nil)
        FileManager.default.createFile(atPath: stderrURL.path, contents: nil)
        process.executableURL = program
        process.arguments = arguments
        process.standardOutput = try FileHandle(forWritingTo: stdoutURL)
        process.standardError = try FileHandle(forWritingTo: stderrURL)
        process.standardInput = FileHandle.nullDevice
        try process.run()
    }

    var stdout: String { (try? String(contentsOf: stdoutURL, encoding: .utf8)) ?? "" }
    var stderr: String { (try? String(contentsOf: stderrURL, encoding: .utf8)) ?? "" }

    /// Poll `condition` every 50 ms until it gives a value, the process exits, or `limit` passes.
    /// The limit only guards against a hang; the test's checks never depend on how long it took.
    func waitFor<T>(_ what: String, limit: Duration = .seconds(120), _ condition: () throws -> T?) throws -> T {
        let clock = ContinuousClock()
        let deadline = clock.now + limit
        while clock.now < deadline {
            if let value = try condition() { return value }
            if !process.isRunning {
                throw BackgroundFailure(description: "\(arguments.joined(separator: " ")) exited \(process.terminationStatus) while waiting for \(what): \(stderr)")
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
        throw BackgroundFailure(description: "gave up waiting for \(what) from \(arguments.joined(separator: " ")); stdout: \(stdout) stderr: \(stderr)")
    }

    /// SIGINT, then wait for the exit status.
    @discardableResult
    func interruptAndWait() -> Int32 {
        if process.isRunning { process.interrupt() }
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// SIGTERM, then SIGKILL once `grace` has passed: a program stuck in its shutdown (or started
    /// with SIGTERM blocked, as Foundation's `Process` can leave it) must not hang the suite.
    func stop(grace: Duration = .seconds(5)) {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + grace
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.02) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    /// Lines of standard output so far.
    var stdoutLines: [Substring] { stdout.split(separator: "\n") }

    deinit {
        stop()
    }
}

/// A background program did not get where the test needed it.
struct BackgroundFailure: Error, CustomStringConvertible {
    var description: String
}
