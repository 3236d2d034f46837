import ArgumentParser
import CaptureSet
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Files the commands write (`--out`, `--trace`, `--junit`): checked before any work starts, and
/// written to a temporary file beside the target that is synced and renamed over it, so a failed
/// or interrupted command never truncates or half-writes an existing file.
enum OutputFile {
    /// Refuses an output path no file can be written at: empty, ending in `/`, a folder, a
    /// symbolic link that points nowhere, or in a folder that does not exist.
    /// - Throws: `ValidationError` (exit 64) saying what to give instead.
    static func check(_ path: String, option: String) throws {
        guard !path.isEmpty else {
            throw ValidationError("\(option) is empty; give the name of the file to write, e.g. \(option) out.pcapng.")
        }
        if path.hasSuffix("/") || FileIO.isDirectory(path) {
            throw ValidationError("\(option) \(path) is a folder; give a file name inside it, e.g. \(option) \(FileIO.join(path, "out"))…")
        }
        var info = stat()
        if lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFLNK, !FileIO.exists(path) {
            throw ValidationError("\(option) \(path) is a symbolic link to something that does not exist; remove the link or give another file name.")
        }
        do {
            _ = try FileIO.resolveOutput(path)
        } catch {
            throw ValidationError("\(option) \(error)")
        }
        let parent = FileIO.split(path).dir
        guard FileIO.isDirectory(parent) else {
            throw ValidationError("\(option) \(path): the folder \(parent) does not exist; create it first (mkdir -p \(parent)) or write elsewhere.")
        }
    }

    /// Refuses to write `path` when it is (after following links) one of `protected`: the files a
    /// command is reading from.
    /// - Throws: `ValidationError` (exit 64) naming both.
    static func refuseOverwriting(_ path: String, option: String, protected: [String], reading: String) throws {
        guard let target = CaptureSetDirectory.canonicalTarget(of: path) else { return }
        for file in protected {
            if let canonical = CaptureSetDirectory.canonicalTarget(of: file), canonical == target {
                throw ValidationError("\(option) \(path) is \(file), which this command reads from (\(reading)); write to another file.")
            }
        }
    }

    /// Refuses to write `path` inside the folder `set` (after following links).
    /// - Throws: `ValidationError` (exit 64) naming both.
    /// Refuses a new capture set's folder inside an existing set: the nested set would be
    /// invisible to `replay` and to every search for sets.
    static func refuseNewSetInsideSet(_ path: String, option: String) throws {
        if let enclosing = CaptureSetDirectory.enclosingSet(of: path) {
            throw ValidationError("\(option) \(path): \(CaptureSetError.insideCaptureSet(path: path, enclosing: enclosing))")
        }
    }

    static func refuseInside(_ path: String, option: String, set: String) throws {
        guard let target = CaptureSetDirectory.canonicalTarget(of: path),
              let folder = CaptureSetDirectory.canonicalTarget(of: set) else { return }
        if target == folder || target.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/") {
            throw ValidationError("\(option) \(path) is inside the capture set \(set), which this command reads from; write outside the set, e.g. \(option) \(FileIO.split(path).base).")
        }
    }

    /// The temporary name `write(to:_:)` uses beside `path`.
    static func temporaryPath(for path: String) -> String {
        FileIO.temporarySibling(of: path, purpose: "tmp")
    }

    /// Runs `body` with a temporary path beside `path`; when it returns, the file is synced and
    /// renamed over `path` (and the folder synced). When anything throws, the temporary file is
    /// removed and `path` is left as it was. A character device or FIFO at `path` (`/dev/null`,
    /// `/dev/stdout`, a named pipe) is handed to `body` itself, to write through in place: renaming
    /// over it would replace the device (``OutputPath``).
    static func write<Result>(to path: String, _ body: (String) throws -> Result) throws -> Result {
        let target: String
        switch try FileIO.resolveOutput(path) {
        case .writeThrough(let device):
            return try body(device)
        case .replaceAtomically(let file):
            target = file
        }
        return try writeReplacing(target, body)
    }

    private static func writeReplacing<Result>(_ path: String, _ body: (String) throws -> Result) throws -> Result {
        let temporary = temporaryPath(for: path)
        do {
            let result = try body(temporary)
            try FileSystemWrites.sync(temporary)
            try FileSystemWrites.rename(temporary, to: path)
            try FileSystemWrites.sync(FileIO.split(path).dir)
            return result
        } catch {
            try? FileSystemWrites.removeFile(temporary)
            throw error
        }
    }

    /// Writes `bytes` to `path` through a temporary file (see ``write(to:_:)``).
    static func write(bytes: [UInt8], to path: String) throws {
        if case .writeThrough(let device) = try FileIO.resolveOutput(path) {
            try FileIO.writeThrough(bytes, to: device)
            return
        }
        try write(to: path) { temporary in
            let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else {
                throw CommandFailure.failed("cannot create \(temporary) to write \(path): \(FileIO.errnoText()). Check the folder is writable.")
            }
            defer { close(descriptor) }
            var offset = 0
            while offset < bytes.count {
                let written = bytes.withUnsafeBytes { raw in systemWrite(descriptor, raw.baseAddress! + offset, raw.count - offset) }
                if written < 0 {
                    if errno == EINTR { continue }
                    throw CommandFailure.failed("cannot write \(path): \(FileIO.errnoText()). Check free disk space.")
                }
                offset += written
            }
        }
    }
}

/// `write(2)`, named apart from ``OutputFile/write(to:_:)``.
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(descriptor, buffer, count)
    #else
    Darwin.write(descriptor, buffer, count)
    #endif
}
