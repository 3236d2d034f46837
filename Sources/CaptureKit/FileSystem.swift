#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why a file operation failed, naming the path. Lives beside the helpers in ``FileSystem`` so
/// that modules which write or read files (traces, baselines, capture sets) share one set of
/// primitives without depending on each other; each of them turns this into its own error.
package enum FileSystemError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The operating system refused an operation (`open`, `read`, `write`, `rename`, `mkdir`…);
    /// `reason` is its own words (``FileSystem/errnoText(_:)``).
    case io(path: String, operation: String, reason: String)
    /// An output path names something Tether does not write over: a folder, a block device, a
    /// socket (`what` says which; see ``OutputPath``).
    case notAnOutputFile(path: String, what: String)

    /// For ``io(path:operation:reason:)``, the system's reason alone (for a caller whose own error
    /// already names the file); `nil` for the other case.
    package var ioReason: String? {
        if case .io(_, let operation, let reason) = self { return "\(operation) failed: \(reason)" }
        return nil
    }

    /// The problem, the path, and what to do next. `CaptureSetError` shows these same words for
    /// its matching cases (tests compare the texts), so they are written here only.
    package var description: String {
        switch self {
        case let .io(path, operation, reason):
            return "\(path): \(operation) failed: \(reason). Check that the path exists and is readable/writable."
        case let .notAnOutputFile(path, what):
            return OutputPath.Refusal(path: path, what: what).description
        }
    }
}

/// Small POSIX file helpers that report failures as ``FileSystemError`` with the system's own
/// reason, which Foundation's file APIs tend to hide. Kept in CaptureKit (which depends on
/// nothing) so that any module can use them; `CaptureSet`'s `FileIO` is these same helpers with
/// its own error type.
package enum FileSystem {
    /// The system's message for `code` (the last failure's by default).
    package static func errnoText(_ code: Int32 = errno) -> String {
        guard let text = strerror(code) else { return "errno \(code)" }
        return String(cString: text)
    }

    /// `true` when anything exists at `path` (following symbolic links).
    package static func exists(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0
    }

    /// `true` when `path` is a folder (following symbolic links).
    package static func isDirectory(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & mode_t(S_IFMT)) == mode_t(S_IFDIR)
    }

    /// `true` when `path` is a regular file (following symbolic links).
    package static func isRegularFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & mode_t(S_IFMT)) == mode_t(S_IFREG)
    }

    /// The file's size in bytes, following symbolic links; `nil` when it cannot be examined.
    package static func size(_ path: String) -> UInt64? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        return UInt64(clamping: st.st_size)
    }

    /// `true` when `path` itself (not what it points to) is a symbolic link.
    package static func isSymbolicLink(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && (st.st_mode & mode_t(S_IFMT)) == mode_t(S_IFLNK)
    }

    /// The canonical absolute path (`realpath(3)`: symbolic links, `.` and `..` resolved), or `nil`
    /// when `path` does not exist or cannot be resolved.
    package static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Where `path` would be once written: its canonical path when it exists; otherwise the
    /// canonical path of its nearest existing ancestor with the missing components appended.
    /// A dangling symbolic link is followed by hand so that writing through it is judged by where
    /// it points. `nil` when no ancestor can be resolved.
    package static func canonicalTarget(_ path: String) -> String? {
        if let real = realPath(path) { return real }
        var missing: [String] = []
        var current = path
        var hops = 0
        while true {
            if isSymbolicLink(current), hops < 40 {
                hops += 1
                var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
                let n = readlink(current, &buffer, buffer.count - 1)
                guard n >= 0 else { return nil }
                let target = String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
                current = target.hasPrefix("/") ? target : join(split(current).dir, target)
                if let real = realPath(current) { return ([real] + missing.reversed()).joined(separator: "/") }
                continue
            }
            let (dir, base) = split(current)
            missing.append(base)
            if let real = realPath(dir) {
                let prefix = real == "/" ? "" : real
                return ([prefix] + missing.reversed()).joined(separator: "/")
            }
            if dir == current || dir == "/" || dir == "." { return nil }
            current = dir
        }
    }

    /// A read-only descriptor of the regular file at `path`; a FIFO, device or folder is refused
    /// before anything blocks on it (``RegularFile``).
    package static func openRegular(_ path: String) throws(FileSystemError) -> Int32 {
        switch RegularFile.open(path) {
        case .success(let fd): return fd
        case .failure(let refusal): throw .io(path: path, operation: "open", reason: refusal.reason)
        }
    }

    /// Reads a whole (small) file such as a manifest.
    package static func readAll(_ path: String) throws(FileSystemError) -> [UInt8] {
        let fd = try openRegular(path)
        defer { close(fd) }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "read", reason: errnoText())
            }
            if n == 0 { break }
            out.append(contentsOf: chunk[0..<n])
        }
        return out
    }

    /// Calls `body` with successive pieces of the file, in a fixed-size buffer: constant memory.
    package static func forEachChunk(
        _ path: String, chunkSize: Int = 1 << 20, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws(FileSystemError) {
        let fd = try openRegular(path)
        defer { close(fd) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        while true {
            let n = read(fd, buffer.baseAddress, chunkSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw .io(path: path, operation: "read", reason: errnoText())
            }
            if n == 0 { return }
            body(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
        }
    }

    /// The longest name a folder entry may have on the file systems Tether runs on (`NAME_MAX`).
    package static let maximumNameBytes = 255

    /// A hidden name beside `path` for a temporary file or folder that will be renamed over it
    /// (`.NAME.PURPOSE-PID`): the one rule every writer uses, so that a target whose own name
    /// nearly fills `NAME_MAX` still gets a temporary name that fits. A long name is cut (on a
    /// character boundary) and followed by 16 hex digits of its FNV-1a hash, so two long targets
    /// in one folder still get different names.
    package static func temporarySibling(of path: String, purpose: String) -> String {
        let (dir, base) = split(path)
        let suffix = ".\(purpose)-\(getpid())"
        return join(dir, "." + fitted(base, bytes: maximumNameBytes - 1 - suffix.utf8.count) + suffix)
    }

    /// `name` when it has at most `bytes` UTF-8 bytes; else its start, cut on a character
    /// boundary, and `-` with 16 hex digits of its FNV-1a hash, in `bytes` in all: a name derived
    /// from another (a temporary file, a report page) that always fits, and that stays apart from
    /// other long names sharing its start.
    package static func fitted(_ name: String, bytes: Int) -> String {
        guard name.utf8.count > bytes else { return name }
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3 }
        let digest = String(hash, radix: 16)
        let tag = "-" + String(repeating: "0", count: 16 - digest.count) + digest
        var prefix = ""
        for character in name where prefix.utf8.count + character.utf8.count <= bytes - tag.utf8.count { prefix.append(character) }
        return prefix + tag
    }

    /// Writes a file the user named as an output (`--out`, `--trace`, `--junit`): atomically over
    /// nothing or a regular file (``writeAtomically(_:to:)``), through to a character device or
    /// FIFO in place, and never over a folder, block device or socket (``OutputPath``).
    /// - Throws: ``FileSystemError/notAnOutputFile(path:what:)`` or
    ///   ``FileSystemError/io(path:operation:reason:)``.
    package static func writeOutput(_ bytes: [UInt8], to path: String) throws(FileSystemError) {
        switch try resolveOutput(path) {
        case .replaceAtomically(let target):
            try writeAtomically(bytes, to: target)
        case .writeThrough(let target):
            try writeThrough(bytes, to: target)
        }
    }

    /// ``OutputPath/resolve(_:)`` with its refusal as a ``FileSystemError``.
    package static func resolveOutput(_ path: String) throws(FileSystemError) -> OutputPath {
        do {
            return try OutputPath.resolve(path)
        } catch {
            throw .notAnOutputFile(path: error.path, what: error.what)
        }
    }

    /// Writes `bytes` in place to a character device or FIFO (see ``OutputPath/writeThrough(path:)``).
    package static func writeThrough(_ bytes: [UInt8], to path: String) throws(FileSystemError) {
        guard let fd = OutputPath.openForWritingThrough(path) else {
            throw .io(path: path, operation: "open for writing", reason: errnoText())
        }
        var failure = writeAll(bytes, to: fd, naming: path)
        if close(fd) != 0, failure == nil {
            failure = .io(path: path, operation: "close", reason: errnoText())
        }
        if let failure { throw failure }
    }

    /// Writes all of `bytes` to `fd` (retrying short writes and `EINTR`); the failure, naming
    /// `path`, or `nil`.
    private static func writeAll(_ bytes: [UInt8], to fd: Int32, naming path: String) -> FileSystemError? {
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { all -> Int in
                guard let base = all.baseAddress else { return 0 }
                return write(fd, base + written, all.count - written)
            }
            if n < 0 {
                if errno == EINTR { continue }
                return .io(path: path, operation: "write", reason: errnoText())
            }
            written += n
        }
        return nil
    }

    /// Writes `bytes` to a temporary file beside `path`, syncs it and renames it over `path`, so a
    /// reader sees the old file or the new one, never half of one. The temporary file is removed
    /// on any failure.
    package static func writeAtomically(_ bytes: [UInt8], to path: String) throws(FileSystemError) {
        let temp = temporarySibling(of: path, purpose: "tmp")
        let fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw .io(path: temp, operation: "create", reason: errnoText()) }
        var failure = writeAll(bytes, to: fd, naming: temp)
        if failure == nil, fsync(fd) != 0 {
            failure = .io(path: temp, operation: "fsync", reason: errnoText())
        }
        if close(fd) != 0, failure == nil {
            failure = .io(path: temp, operation: "close", reason: errnoText())
        }
        if failure == nil, rename(temp, path) != 0 {
            failure = .io(path: path, operation: "rename \(temp) to", reason: errnoText())
        }
        if let failure {
            unlink(temp)
            throw failure
        }
    }

    /// Creates a folder and any missing parents (`mkdir -p`).
    package static func makeDirectories(_ path: String) throws(FileSystemError) {
        var created: [String] = []
        try makeDirectories(path, created: &created)
    }

    /// Creates a folder and any missing parents, appending each folder it made to `created`,
    /// outermost first, so that a caller whose write then fails can take them away again.
    package static func makeDirectories(_ path: String, created: inout [String]) throws(FileSystemError) {
        if path.isEmpty || isDirectory(path) { return }
        let (parent, _) = split(path)
        if !parent.isEmpty, parent != path, parent != "/", !exists(parent) {
            try makeDirectories(parent, created: &created)
        }
        if mkdir(path, 0o755) == 0 {
            created.append(path)
        } else if errno != EEXIST {
            throw .io(path: path, operation: "create folder", reason: errnoText())
        }
    }

    /// Entries of a folder, without `.` and `..`, unsorted.
    package static func listDirectory(_ path: String) throws(FileSystemError) -> [String] {
        guard let dir = opendir(path) else { throw .io(path: path, operation: "opendir", reason: errnoText()) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }

    /// A path's folder (`.` when it has none) and last component, trailing slashes ignored.
    package static func split(_ path: String) -> (dir: String, base: String) {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return (".", String(trimmed)) }
        let dir = trimmed[..<slash]
        return (dir.isEmpty ? "/" : String(dir), String(trimmed[trimmed.index(after: slash)...]))
    }

    /// `name` inside `dir`, or `name` itself when it is absolute or `dir` is `.`.
    package static func join(_ dir: String, _ name: String) -> String {
        if name.hasPrefix("/") { return name }
        if dir.isEmpty || dir == "." { return name }
        return dir.hasSuffix("/") ? dir + name : dir + "/" + name
    }
}
