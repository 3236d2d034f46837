#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture
import CaptureSet

/// File-system changes the commands make, each failure a ``CommandFailure`` naming the path and the
/// system's reason.
enum FileSystemWrites {
    /// `mkdir -p`.
    static func makeDirectories(_ path: String) throws {
        do throws(CaptureSetError) {
            try FileIO.makeDirectories(path)
        } catch {
            guard case .io(let folder, _, let reason) = error else { throw error }
            throw CommandFailure.failed("cannot create the folder \(folder): \(reason)")
        }
    }

    /// `rename(2)`: atomic within one file system.
    static func rename(_ from: String, to: String) throws {
        if SystemCalls.rename(from, to) != 0 {
            throw CommandFailure.failed("cannot rename \(from) to \(to): \(FileIO.errnoText())")
        }
    }

    /// `fsync(2)` a file or folder by path, so a rename that follows is durable.
    static func sync(_ path: String) throws {
        let descriptor = open(path, O_RDONLY)
        guard descriptor >= 0 else { throw CommandFailure.failed("cannot open \(path) to sync it: \(FileIO.errnoText())") }
        defer { close(descriptor) }
        if fsync(descriptor) != 0 { throw CommandFailure.failed("cannot sync \(path): \(FileIO.errnoText())") }
    }

    /// `rm -rf` of a tree Tether made (does not follow symbolic links). Missing is fine.
    static func removeTree(_ path: String) throws {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        if (info.st_mode & S_IFMT) == S_IFDIR {
            guard let directory = opendir(path) else {
                throw CommandFailure.failed("cannot list \(path) to remove it: \(FileIO.errnoText())")
            }
            var entries: [String] = []
            while let entry = readdir(directory) {
                let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                    String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
                }
                if name != "." && name != ".." { entries.append(name) }
            }
            closedir(directory)
            for name in entries { try removeTree(FileIO.join(path, name)) }
            if rmdir(path) != 0 { throw CommandFailure.failed("cannot remove \(path): \(FileIO.errnoText())") }
        } else if unlink(path) != 0 {
            throw CommandFailure.failed("cannot remove \(path): \(FileIO.errnoText())")
        }
    }

    /// Remove one file; missing is fine.
    static func removeFile(_ path: String) throws {
        if unlink(path) != 0 && errno != ENOENT {
            throw CommandFailure.failed("cannot remove \(path): \(FileIO.errnoText())")
        }
    }
}
