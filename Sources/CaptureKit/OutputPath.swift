#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// How a file Tether writes for the user (`--out`, `--trace`, `--junit`, a report) reaches the
/// path the user named, decided from what is at that path now.
///
/// Files are written to a temporary name beside the target and renamed over it, so a failed run
/// never leaves half a file. Renaming over something that is not a regular file is wrong, though:
/// as root, `--junit /dev/null` would replace `/dev/null` with a regular file for every process on
/// the machine. So a rename happens only where nothing is, or over a regular file; a character
/// device or a FIFO the user names (`/dev/null`, `/dev/stdout`, a named pipe) is written through in
/// place; anything else (a folder, a block device, a socket) is refused.
package enum OutputPath: Equatable, Sendable {
    /// Nothing is at `path`, or a regular file is: write a temporary file beside `path` and rename
    /// it over. `path` is the file a symbolic link names when the user gave a link, so the link
    /// stays a link.
    case replaceAtomically(path: String)
    /// A character device or FIFO, or a descriptor the process already has (`/dev/stdout`,
    /// `/dev/fd/N`, `/proc/self/fd/N`): open it for writing and write in place, without creating,
    /// renaming or syncing.
    case writeThrough(path: String)

    /// Why an output path cannot be written.
    package struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The path as the user gave it.
        package let path: String
        /// What is there, in words (`a folder`, `a block device`, `a socket`).
        package let what: String

        package var description: String {
            "\(path) is \(what); Tether writes a regular file (created, or replaced whole), or through to a character device such as /dev/null or a FIFO. Give a file name instead."
        }
    }

    /// Decides how `path` is written.
    /// - Throws: ``Refusal`` for a folder, block device, socket or other kind of file.
    package static func resolve(_ path: String) throws(Refusal) -> OutputPath {
        var linkInfo = stat()
        guard lstat(path, &linkInfo) == 0 else {
            // Nothing there (or unreadable; the write itself says why).
            return .replaceAtomically(path: path)
        }
        let isLink = (linkInfo.st_mode & S_IFMT) == S_IFLNK
        var info = linkInfo
        if isLink, stat(path, &info) != 0 {
            // A link to nothing: replacing the link is what the user can expect; callers that want
            // to refuse a dangling link do so before (the CLI does).
            return .replaceAtomically(path: path)
        }
        let kind = info.st_mode & S_IFMT
        // `/dev/stdout` is a link to `/proc/self/fd/1`, which may name a regular file the shell
        // opened: renaming over either would detach the output from the shell's descriptor.
        let systemPath = Self.namesADescriptor(path)
        switch kind {
        case S_IFREG:
            if systemPath { return .writeThrough(path: path) }
            guard isLink else { return .replaceAtomically(path: path) }
            guard let resolved = realpath(path, nil) else { return .replaceAtomically(path: path) }
            defer { free(resolved) }
            return .replaceAtomically(path: String(cString: resolved))
        case S_IFCHR, S_IFIFO:
            return .writeThrough(path: path)
        case S_IFDIR:
            throw Refusal(path: path, what: "a folder")
        case S_IFBLK:
            throw Refusal(path: path, what: "a block device")
        case S_IFSOCK:
            throw Refusal(path: path, what: "a socket")
        default:
            throw Refusal(path: path, what: "neither a regular file nor a device")
        }
    }

    /// Whether `path` names one of the process's own descriptors: `/dev/stdout`, `/dev/stderr`,
    /// `/dev/fd/N` or `/proc/…/fd/N`.
    static func namesADescriptor(_ path: String) -> Bool {
        if path == "/dev/stdout" || path == "/dev/stderr" || path.hasPrefix("/dev/fd/") { return true }
        let parts = path.split(separator: "/")
        return parts.count == 4 && parts[0] == "proc" && parts[2] == "fd"
    }

    /// Opens a ``writeThrough(path:)`` target for writing: no `O_CREAT` (it exists), `O_TRUNC` as
    /// a shell's `>` does (POSIX ignores it for a FIFO or terminal), close-on-exec.
    /// - Returns: the descriptor, or `nil` with `errno` set.
    package static func openForWritingThrough(_ path: String) -> Int32? {
        #if canImport(Glibc) || canImport(Musl)
        let fd = Glibc.open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        #else
        let fd = Darwin.open(path, O_WRONLY | O_TRUNC | O_CLOEXEC)
        #endif
        return fd >= 0 ? fd : nil
    }
}
