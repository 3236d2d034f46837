import Foundation
import TetherTestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A program running beside the test (`serve`, `record`), with its output in files so it can be
/// read while it runs.
///
/// `@unchecked Sendable`: immutable after `init`; every stored property is a `let` (URLs, the
/// arguments, and Foundation's `Process`, which keeps its own state and which swift-corelibs-foundation
/// itself declares `@unchecked Sendable`). The methods only read the output files and query or
/// signal the process; each test drives its processes from its own thread.
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

    /// SIGINT, then wait for the exit status (`nil` when it has not exited within `limit`: it is
    /// then killed, so a program that missed the signal fails its test instead of hanging the suite).
    @discardableResult
    func interruptAndWait(limit: Duration = .seconds(60)) -> Int32? {
        if process.isRunning { process.interrupt() }
        return exitStatus(within: limit)
    }

    /// The exit status once the program has exited, waiting at most `limit`; `nil` when it is still
    /// running then (it is killed).
    func exitStatus(within limit: Duration = .seconds(60)) -> Int32? {
        let deadline = ContinuousClock.now + limit
        while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            return nil
        }
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

/// Starts `program` with its standard output on a pipe, reads until a line starting with `ready`
/// has come, then sends `signal` at once (within microseconds of the line, which polling a file
/// is too slow for) and returns the exit status, `nil` when it had not exited within `limit`
/// (it is then killed), with what it wrote.
func signalOnReadyLine(_ program: URL, _ arguments: [String], ready: String, signal: Int32,
                       limit: Duration = .seconds(60)) throws -> (status: Int32?, stdout: String, stderr: String) {
    let process = Process()
    let output = Pipe()
    let errors = Pipe()
    process.executableURL = program
    process.arguments = arguments
    process.standardOutput = output
    process.standardError = errors
    process.standardInput = FileHandle.nullDevice
    try process.run()
    var seen = Data()
    while !String(decoding: seen, as: UTF8.self).split(separator: "\n").contains(where: { $0.hasPrefix(ready) }) {
        let more = output.fileHandleForReading.availableData
        if more.isEmpty { break }
        seen += more
    }
    kill(process.processIdentifier, signal)
    let deadline = ContinuousClock.now + limit
    while process.isRunning && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.01) }
    let exited = !process.isRunning
    if !exited { kill(process.processIdentifier, SIGKILL) }
    process.waitUntilExit()
    seen += output.fileHandleForReading.readDataToEndOfFile()
    let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    return (exited ? process.terminationStatus : nil, String(decoding: seen, as: UTF8.self), stderr)
}

/// A background program did not get where the test needed it.
struct BackgroundFailure: Error, CustomStringConvertible {
    var description: String
}
