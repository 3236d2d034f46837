#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What the first bytes of a would-be SQLite store say, read without opening it as a database:
/// SQLite itself would switch a foreign file to WAL mode or add a journal before it noticed.
public enum SQLiteFileHeader: Sendable, Hashable {
    /// No file, or an empty one: a new store may be made there.
    case absentOrEmpty
    /// It begins with SQLite's 16-byte magic string (sqlite.org/fileformat.html, section 1.3).
    case sqlite
    /// It has bytes but not SQLite's magic string (another kind of file, or a damaged store).
    case notSQLite(firstBytes: [UInt8])
    /// It exists but cannot be read, or is not a regular file (a folder, a FIFO, a device: SQLite
    /// could block on one or write into it).
    case unreadable(reason: String)

    /// `"SQLite format 3\0"`.
    public static let magic: [UInt8] = Array("SQLite format 3".utf8) + [0]

    /// Reads at most the first 16 bytes of `path`.
    public static func inspect(_ path: String) -> SQLiteFileHeader {
        var info = stat()
        guard stat(path, &info) == 0 else {
            return errno == ENOENT ? .absentOrEmpty : .unreadable(reason: String(cString: strerror(errno)))
        }
        // Before any open: opening a FIFO to read it waits for a writer, for ever.
        guard (info.st_mode & S_IFMT) == S_IFREG else {
            return .unreadable(reason: (info.st_mode & S_IFMT) == S_IFDIR ? "it is a folder, not a file" : "it is not a regular file (a FIFO, a device or a socket)")
        }
        guard info.st_size > 0 else { return .absentOrEmpty }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return .unreadable(reason: String(cString: strerror(errno))) }
        defer { _ = closeDescriptor(fd) }
        var bytes = [UInt8](repeating: 0, count: magic.count)
        let count = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
        guard count >= 0 else { return .unreadable(reason: String(cString: strerror(errno))) }
        let first = Array(bytes[..<count])
        return first == magic ? .sqlite : .notSQLite(firstBytes: first)
    }

    /// The first bytes in hex, for a message (`89 50 4e 47 …`).
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        return bytes.map { String(decoding: [digits[Int($0 >> 4)], digits[Int($0 & 15)]], as: UTF8.self) }.joined(separator: " ")
    }
}

private func closeDescriptor(_ fd: Int32) -> Int32 {
    #if canImport(Glibc)
    Glibc.close(fd)
    #elseif canImport(Darwin)
    Darwin.close(fd)
    #endif
}
