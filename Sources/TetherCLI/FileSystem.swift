#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The few file-system questions the commands ask, answered with POSIX calls.
enum FileSystem {
    /// `true` when anything exists at `path`.
    static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// `true` when `path` is a directory.
    static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// The size of the file at `path`, or `nil` when it cannot be read.
    static func size(_ path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt64(info.st_size)
    }

    /// `base/relative`, or `relative` itself when it is absolute.
    static func join(_ base: String, _ relative: String) -> String {
        if relative.hasPrefix("/") { return relative }
        return base.hasSuffix("/") ? base + relative : base + "/" + relative
    }

    /// The folder part of a path (`.` when there is none).
    static func parent(_ path: String) -> String {
        let trimmed = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        let parent = String(trimmed[..<slash])
        return parent.isEmpty ? "/" : parent
    }

    /// The last path component.
    static func baseName(_ path: String) -> String {
        let trimmed = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        guard let slash = trimmed.lastIndex(of: "/") else { return trimmed }
        return String(trimmed[trimmed.index(after: slash)...])
    }

    /// The system's reason for the last failed call.
    static var lastError: String { String(cString: strerror(errno)) }
}
