import CaptureKit

extension TraceFile {
    /// Writes `events` to `path`, replacing a regular file atomically so a reader never sees half a
    /// baseline, and writing through to a character device or FIFO (`/dev/null`, `/dev/stdout`)
    /// without replacing it.
    /// - Throws: `TraceFileError` when the file cannot be written, or `path` is a folder, block
    ///   device or socket.
    public static func write(_ events: [TraceEvent], to path: String) throws {
        do throws(FileSystemError) {
            try FileSystem.writeOutput(encodeBytes(events), to: path)
        } catch {
            throw TraceFileError(path: path, operation: "write trace file", reason: error.ioReason ?? "\(error)")
        }
    }
}
