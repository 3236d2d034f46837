import Foundation
import Testing
import TetherTestSupport

/// The result of running a program to completion.
struct ProcessResult: Sendable {
    var status: Int32
    var stdout: String
    var stderr: String
    var stdoutBytes: Data
}

/// Why a test could not run a program it needs. Tests that need tshark or Bumble fail with this
/// (they never skip): `./CI/test` installs both, so a missing tool is a broken set-up to fix.
struct MissingTool: Error, CustomStringConvertible {
    var tool: String
    var install: String
    var description: String {
        "\(tool) is required by this test and was not found. Run ./CI/test, which installs it, or install it by hand: \(install)"
    }
}

/// Paths and programs the end-to-end tests use.
enum Tools {
    /// The repository root, found from this file's location.
    static let repositoryRoot: URL = {
        // Resolved, so a development package that links Tests/ in still finds the real root.
        var url = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        // Tests/TetherCLITests/Support/Tools.swift → four levels up is the root.
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url
    }()

    /// The Bumble GATT rig that writes a btsnoop file.
    static var bumbleRig: URL { repositoryRoot.appendingPathComponent("Harness/rigs/bumble_gatt_exchange.py") }

    /// The `tether` binary built beside the test bundle (`swift build --build-tests` builds both
    /// into the same folder), or `$TETHER_BINARY` when set.
    static func tetherBinary() throws -> URL {
        if let override = ProcessInfo.processInfo.environment["TETHER_BINARY"] {
            return URL(fileURLWithPath: override)
        }
        let runner = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        var folder = runner.deletingLastPathComponent()
        // The runner may be the bundle's executable inside `Foo.xctest/…`: climb out of the bundle.
        while folder.pathComponents.count > 1 {
            let candidate = folder.appendingPathComponent("tether")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
            if folder.lastPathComponent == "debug" || folder.lastPathComponent == "release" { break }
            folder.deleteLastPathComponent()
        }
        throw MissingTool(tool: "the tether binary (next to \(runner.path))", install: "swift build --build-tests, then swift test --skip-build")
    }

    /// The full path of a program on `PATH`, or a ``MissingTool`` error saying how to install it.
    static func require(_ program: String, install: String) throws -> URL {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(folder)).appendingPathComponent(program)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw MissingTool(tool: program, install: install)
    }

    /// tshark, required.
    static func tshark() throws -> URL {
        try require("tshark", install: "sudo apt-get install -y tshark")
    }

    /// python3 with Bumble importable, required.
    static func pythonWithBumble() throws -> URL {
        let python = try require("python3", install: "sudo apt-get install -y python3 python3-pip")
        let check = try run(python, ["-c", "import bumble"])
        guard check.status == 0 else {
            throw MissingTool(tool: "the Python package bumble", install: "python3 -m pip install bumble")
        }
        return python
    }

    /// Run a program to completion. Output goes through files, so neither pipe can fill and block.
    static func run(_ program: URL, _ arguments: [String], currentDirectory: URL? = nil, environment extra: [String: String] = [:]) throws -> ProcessResult {
        let scratch = try TemporaryFolder("cli-tests")
        let outURL = scratch.url.appendingPathComponent("stdout")
        let errURL = scratch.url.appendingPathComponent("stderr")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        let process = Process()
        process.executableURL = program
        process.arguments = arguments
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        // Help text wraps at COLUMNS; a fixed width keeps the committed help files comparable
        // whatever terminal the tests run from.
        var environment = ProcessInfo.processInfo.environment
        environment["COLUMNS"] = "100"
        environment.merge(extra) { _, new in new }
        process.environment = environment
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        try out.close()
        try err.close()
        let outData = try Data(contentsOf: outURL)
        return ProcessResult(
            status: process.terminationStatus,
            stdout: String(decoding: outData, as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self),
            stdoutBytes: outData)
    }

    /// Run `tether` with arguments.
    static func tether(_ arguments: [String], currentDirectory: URL? = nil, environment: [String: String] = [:]) throws -> ProcessResult {
        try run(try tetherBinary(), arguments, currentDirectory: currentDirectory, environment: environment)
    }

    /// Run `tether` and require exit status 0, recording its stderr in the failure otherwise.
    @discardableResult
    static func tetherSucceeds(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> ProcessResult {
        let result = try tether(arguments)
        #expect(result.status == 0, "tether \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// Run tshark on a file with `-T fields` and return the rows (tab-separated fields).
    static func tsharkFields(_ file: URL, filter: String? = nil, fields: [String]) throws -> [[String]] {
        var arguments = ["-r", file.path, "-T", "fields", "-E", "separator=/t", "-E", "occurrence=a", "-E", "aggregator=,"]
        if let filter { arguments += ["-Y", filter] }
        for field in fields { arguments += ["-e", field] }
        let result = try run(try tshark(), arguments)
        guard result.status == 0 else {
            throw TsharkFailed(arguments: arguments, status: result.status, stderr: result.stderr)
        }
        return result.stdout.split(separator: "\n", omittingEmptySubsequences: true).map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
    }

    /// Make btsnoop files with the Bumble GATT rig: `phone.btsnoop` (returned) and
    /// `watch.btsnoop` in `folder`.
    static func bumbleCapture(in folder: TemporaryFolder) throws -> URL {
        let python = try pythonWithBumble()
        let output = folder.path("phone.btsnoop")
        let result = try run(python, [bumbleRig.path, output.path, "--watch-snoop", folder.path("watch.btsnoop").path])
        guard result.status == 0 else {
            throw RigFailed(status: result.status, stderr: result.stderr)
        }
        return output
    }
}

/// tshark exited non-zero.
struct TsharkFailed: Error, CustomStringConvertible {
    var arguments: [String]
    var status: Int32
    var stderr: String
    var description: String { "tshark \(arguments.joined(separator: " ")) exited \(status): \(stderr)" }
}

/// The Bumble rig exited non-zero.
struct RigFailed: Error, CustomStringConvertible {
    var status: Int32
    var stderr: String
    var description: String { "Harness/rigs/bumble_gatt_exchange.py exited \(status): \(stderr)" }
}

