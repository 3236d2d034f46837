#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Opening a file Tether reads (a capture, a manifest, a baseline, a script, a trace) only when it
/// is a regular file.
///
/// A FIFO where a baseline should be blocks `open(2)` until a writer comes, and then `read(2)`
/// until it writes: replay would wait for ever. A device or a socket is no better. So the file is
/// opened without blocking, examined with `fstat`, and refused unless it is a regular file; only
/// then is the descriptor made blocking again for the reads that follow.
package enum RegularFile {
    /// Why a path was not opened.
    package enum Refusal: Error, Sendable, Hashable {
        /// `open(2)` failed with this `errno`.
        case system(Int32)
        /// It is something other than a regular file; the words say what (`a FIFO`, `a folder`).
        case notRegular(String)

        /// The reason in words, for an error message.
        package var reason: String {
            switch self {
            case .system(let code): return String(cString: strerror(code))
            case .notRegular(let what): return "it is \(what), not a regular file"
            }
        }
    }

    /// A read-only, close-on-exec descriptor of the regular file at `path` (symbolic links followed).
    package static func open(_ path: String) -> Result<Int32, Refusal> {
        #if canImport(Glibc) || canImport(Musl)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        #else
        let fd = Darwin.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        #endif
        guard fd >= 0 else { return .failure(.system(errno)) }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let code = errno
            _ = close(fd)
            return .failure(.system(code))
        }
        let type = info.st_mode & mode_t(S_IFMT)
        guard type == mode_t(S_IFREG) else {
            _ = close(fd)
            return .failure(.notRegular(describe(type)))
        }
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
        return .success(fd)
    }

    /// What is at `path` (links followed) when it is not a regular file, in words (`a character
    /// device`); `nil` for a regular file or nothing at all.
    package static func otherKind(of path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let type = info.st_mode & mode_t(S_IFMT)
        return type == mode_t(S_IFREG) ? nil : describe(type)
    }

    static func describe(_ type: mode_t) -> String {
        switch type {
        case mode_t(S_IFDIR): "a folder"
        case mode_t(S_IFIFO): "a FIFO (named pipe)"
        case mode_t(S_IFCHR): "a character device"
        case mode_t(S_IFBLK): "a block device"
        case mode_t(S_IFSOCK): "a socket"
        default: "a special file"
        }
    }
}
