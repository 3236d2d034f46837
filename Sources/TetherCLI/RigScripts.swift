import ArgumentParser
import CaptureSet
import Foundation

/// Finding the Python rigs (`Harness/rigs/*.py`) a command starts: the BLE bridges of `emulate`,
/// `live messaging` and `live session`.
///
/// A rig is a program Tether runs, so it is looked for only where the user put it on purpose: a
/// folder given with `--rigs` or `TETHER_RIGS`, else `Harness/rigs/` beside the running binary
/// (the binary's own path from `/proc/self/exe`, its folder and up to five parents, which finds
/// the checkout a `swift build` binary lives in). Never the working directory: a file planted
/// there would run with the user's rights.
enum RigScripts {
    /// Where a rig was found, said once on stderr so the user knows which program ran.
    struct Located: Equatable {
        /// The script's path.
        let path: String
        /// How it was found, in words: `--rigs`, `TETHER_RIGS`, `beside the binary …`.
        let source: String
    }

    /// The environment variable naming a rigs folder.
    static let environmentVariable = "TETHER_RIGS"

    /// Finds `Harness/rigs/NAME`.
    /// - Parameters:
    ///   - option: `--rigs DIR` when the command has it and it was given.
    ///   - environment: the process's environment (a parameter for the tests).
    ///   - binary: the running binary's path (a parameter for the tests).
    /// - Throws: `CommandFailure` naming every place looked in and what to pass instead.
    static func locate(_ name: String, option: String? = nil,
                       environment: [String: String] = ProcessInfo.processInfo.environment,
                       binary: String? = RigScripts.runningBinary()) throws -> Located {
        if let option {
            return try inFolder(option, name: name, source: "--rigs")
        }
        if let folder = environment[environmentVariable], !folder.isEmpty {
            return try inFolder(folder, name: name, source: environmentVariable)
        }
        var looked: [String] = []
        if let binary {
            var folder = FileIO.split(binary).dir
            for _ in 0..<6 {
                let candidate = FileIO.join(folder, "Harness/rigs/\(name)")
                looked.append(candidate)
                if isRegularFile(candidate) {
                    return Located(path: candidate, source: "beside the binary \(binary)")
                }
                let parent = FileIO.split(folder).dir
                if parent == folder || parent.isEmpty { break }
                folder = parent
            }
        }
        let places = looked.isEmpty ? "nowhere (the running binary's path is unknown)" : looked.joined(separator: ", ")
        throw CommandFailure.failed(
            "cannot find the rig \(name): looked in \(places). Pass --rigs DIR (where a command has it) or set "
                + "\(environmentVariable)=DIR to the folder holding \(name), e.g. \(environmentVariable)=/path/to/tether/Harness/rigs.")
    }

    private static func inFolder(_ folder: String, name: String, source: String) throws -> Located {
        let candidate = FileIO.join(folder, name)
        guard isRegularFile(candidate) else {
            throw CommandFailure.failed("\(source) \(folder) has no \(name); give the folder that holds Tether's rigs (the repository's Harness/rigs).")
        }
        // Made absolute so that the bridge runs the same file whatever folder it starts in.
        let absolute = candidate.hasPrefix("/") ? candidate : FileIO.join(FileManager.default.currentDirectoryPath, candidate)
        return Located(path: absolute, source: source)
    }

    private static func isRegularFile(_ path: String) -> Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && !isFolder.boolValue
    }

    /// The running binary's absolute path, links resolved: `/proc/self/exe` on Linux, else the
    /// first argument when it is absolute. `nil` when neither is known; never the working
    /// directory's idea of `argv[0]`.
    static func runningBinary() -> String? {
        #if os(Linux)
        if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"), resolved.hasPrefix("/") {
            return resolved
        }
        #endif
        if let bundle = Bundle.main.executablePath, bundle.hasPrefix("/") { return bundle }
        return nil
    }
}
