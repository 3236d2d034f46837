import CaptureKit
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// Opening trace files for reading: kept apart from TraceJSON.swift, which the trace fuzzer compiles
// on its own, because it needs the file system (CaptureKit's RegularFile).

extension TraceFileError {
    /// Why the trace file at `path` cannot be opened for reading, in words that say what to do;
    /// `nil` when it can. Both trace readers ask, so they word it alike.
    static func unreadable(_ path: String) -> TraceFileError? {
        switch openForReading(path) {
        case .success(let fd):
            _ = close(fd)
            return nil
        case .failure(let error):
            return error
        }
    }

    /// A descriptor of the regular trace file at `path`, or why it cannot be read (a FIFO or a
    /// device is refused before anything blocks on it).
    static func openForReading(_ path: String) -> Result<Int32, TraceFileError> {
        switch RegularFile.open(path) {
        case .success(let fd): return .success(fd)
        case .failure(.system(let code)): return .failure(cannotOpen(path, errno: code))
        case .failure(.notRegular(let what)):
            if what == "a folder" { return .failure(cannotOpen(path, errno: EISDIR)) }
            return .failure(TraceFileError(path: path, operation: "read trace file", reason: "it is \(what), not a regular file",
                                           hint: "give the trace's .jsonl file itself; Tether does not read traces from pipes or devices"))
        }
    }

    /// A trace file that `open(2)` refused with `code`.
    static func cannotOpen(_ path: String, errno code: Int32) -> TraceFileError {
        let reason: String
        let hint: String?
        switch code {
        case ENOENT: (reason, hint) = ("there is no such file", "check the path (a set's baseline is written by `tether replay --update-baseline`)")
        case EISDIR: (reason, hint) = ("it is a folder, not a trace file", "name the .jsonl file inside it")
        case EACCES, EPERM: (reason, hint) = ("permission denied", "make the file readable by this user")
        default: (reason, hint) = (String(cString: strerror(code)), nil)
        }
        return TraceFileError(path: path, operation: "read trace file", reason: reason, hint: hint)
    }
}

extension TraceFile {
    /// Reads every event of the trace file at `path`. Blank lines are skipped.
    /// - Throws: `TraceFileError` when the file cannot be opened; `TraceFormatError` for the first
    ///   malformed line.
    public static func read(_ path: String) throws -> [TraceEvent] {
        let reader = try TraceFileReader(path: path)
        var events: [TraceEvent] = []
        while let event = try reader.next() { events.append(event) }
        return events
    }

}
