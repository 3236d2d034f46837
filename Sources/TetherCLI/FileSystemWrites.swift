#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture

/// File-system changes the commands make, each failure a ``CommandFailure`` naming the path and the
/// system's reason.
enum FileSystemWrites {
    /// `mkdir -p`.
    static func makeDirectories(_ path: String) throws {
        if path.isEmpty || FileSystem.isDirectory(path) { return }
        let parent = FileSystem.parent(path)
        if parent != path { try makeDirectories(parent) }
        if mkdir(path, 0o755) != 0 && errno != EEXIST {
            throw CommandFailure.failed("cannot create the folder \(path): \(FileSystem.lastError)")
        }
    }

    /// `rename(2)`: atomic within one file system.
    static func rename(_ from: String, to: String) throws {
        if SystemCalls.rename(from, to) != 0 {
            throw CommandFailure.failed("cannot rename \(from) to \(to): \(FileSystem.lastError)")
        }
    }

    /// `fsync(2)` a file or folder by path, so a rename that follows is durable.
    static func sync(_ path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw CommandFailure.failed("cannot open \(path) to sync it: \(FileSystem.lastError)") }
        defer { close(descriptor) }
        if fsync(descriptor) != 0 { throw CommandFailure.failed("cannot sync \(path): \(FileSystem.lastError)") }
    }

    /// `rm -rf` of a tree Tether made (does not follow symbolic links). Missing is fine.
    static func removeTree(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            guard let directory = opendir(path) else {
                throw CommandFailure.failed("cannot list \(path) to remove it: \(FileSystem.lastError)")
            }
            var entries: [String] = []
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { entries.append(name) }
            }
            closedir(directory)
            for name in entries { try removeTree(FileSystem.join(path, name)) }
            if rmdir(path) != 0 { throw CommandFailure.failed("cannot remove \(path): \(FileSystem.lastError)") }
        } else if unlink(path) != 0 {
            throw CommandFailure.failed("cannot remove \(path): \(FileSystem.lastError)")
        }
    }

    /// Remove one file; missing is fine.
    static func removeFile(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT {
            throw CommandFailure.failed("cannot remove \(path): \(FileSystem.lastError)")
        }
    }
}
