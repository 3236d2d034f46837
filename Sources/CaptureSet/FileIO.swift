import CaptureKit
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The POSIX file helpers of ``FileSystem`` (in CaptureKit), reporting failures as
/// ``CaptureSetError/io(path:operation:reason:)`` and ``CaptureSetError/notAnOutputFile(path:what:)``
/// so that CaptureSet's callers see one error type. Every helper delegates: the file code itself
/// lives once, in CaptureKit, where modules that do not depend on CaptureSet use it too.
package enum FileIO {
    /// The system's message for `code` (the last failure's by default).
    package static func errnoText(_ code: Int32 = errno) -> String { FileSystem.errnoText(code) }

    /// `true` when anything exists at `path` (following symbolic links).
    package static func exists(_ path: String) -> Bool { FileSystem.exists(path) }

    /// `true` when `path` is a folder (following symbolic links).
    package static func isDirectory(_ path: String) -> Bool { FileSystem.isDirectory(path) }

    /// `true` when `path` is a regular file (following symbolic links).
    package static func isRegularFile(_ path: String) -> Bool { FileSystem.isRegularFile(path) }

    /// The file's size in bytes, following symbolic links; `nil` when it cannot be examined.
    package static func size(_ path: String) -> UInt64? { FileSystem.size(path) }

    /// `true` when `path` itself (not what it points to) is a symbolic link.
    package static func isSymbolicLink(_ path: String) -> Bool { FileSystem.isSymbolicLink(path) }

    /// The canonical absolute path, or `nil` (``FileSystem/realPath(_:)``).
    package static func realPath(_ path: String) -> String? { FileSystem.realPath(path) }

    /// Where `path` would be once written (``FileSystem/canonicalTarget(_:)``).
    package static func canonicalTarget(_ path: String) -> String? { FileSystem.canonicalTarget(path) }

    /// A read-only descriptor of the regular file at `path` (``FileSystem/openRegular(_:)``).
    package static func openRegular(_ path: String) throws(CaptureSetError) -> Int32 {
        try converting { () throws(FileSystemError) in try FileSystem.openRegular(path) }
    }

    /// Reads a whole (small) file such as a manifest.
    package static func readAll(_ path: String) throws(CaptureSetError) -> [UInt8] {
        try converting { () throws(FileSystemError) in try FileSystem.readAll(path) }
    }

    /// Calls `body` with successive pieces of the file, in a fixed-size buffer: constant memory.
    package static func forEachChunk(
        _ path: String, chunkSize: Int = 1 << 20, _ body: (UnsafeRawBufferPointer) -> Void
    ) throws(CaptureSetError) {
        try converting { () throws(FileSystemError) in try FileSystem.forEachChunk(path, chunkSize: chunkSize, body) }
    }

    /// The longest name a folder entry may have (``FileSystem/maximumNameBytes``).
    package static let maximumNameBytes = FileSystem.maximumNameBytes

    /// A hidden name beside `path` for a temporary file or folder that will be renamed over it
    /// (``FileSystem/temporarySibling(of:purpose:)``).
    package static func temporarySibling(of path: String, purpose: String) -> String {
        FileSystem.temporarySibling(of: path, purpose: purpose)
    }

    /// `name`, cut to fit `bytes` with a hash of the whole (``FileSystem/fitted(_:bytes:)``).
    package static func fitted(_ name: String, bytes: Int) -> String { FileSystem.fitted(name, bytes: bytes) }

    /// Writes a file the user named as an output (``FileSystem/writeOutput(_:to:)``).
    /// - Throws: ``CaptureSetError/notAnOutputFile(path:what:)`` or
    ///   ``CaptureSetError/io(path:operation:reason:)``.
    package static func writeOutput(_ bytes: [UInt8], to path: String) throws(CaptureSetError) {
        try converting { () throws(FileSystemError) in try FileSystem.writeOutput(bytes, to: path) }
    }

    /// ``OutputPath/resolve(_:)`` with its refusal as a ``CaptureSetError``.
    package static func resolveOutput(_ path: String) throws(CaptureSetError) -> OutputPath {
        try converting { () throws(FileSystemError) in try FileSystem.resolveOutput(path) }
    }

    /// Writes `bytes` in place to a character device or FIFO (``FileSystem/writeThrough(_:to:)``).
    package static func writeThrough(_ bytes: [UInt8], to path: String) throws(CaptureSetError) {
        try converting { () throws(FileSystemError) in try FileSystem.writeThrough(bytes, to: path) }
    }

    /// Replaces `path` with `bytes` atomically (``FileSystem/writeAtomically(_:to:)``).
    package static func writeAtomically(_ bytes: [UInt8], to path: String) throws(CaptureSetError) {
        try converting { () throws(FileSystemError) in try FileSystem.writeAtomically(bytes, to: path) }
    }

    /// Creates a folder and any missing parents (`mkdir -p`).
    package static func makeDirectories(_ path: String) throws(CaptureSetError) {
        try converting { () throws(FileSystemError) in try FileSystem.makeDirectories(path) }
    }

    /// Creates a folder and any missing parents, appending each folder it made to `created`,
    /// outermost first (``FileSystem/makeDirectories(_:created:)``).
    package static func makeDirectories(_ path: String, created: inout [String]) throws(CaptureSetError) {
        try converting { () throws(FileSystemError) in try FileSystem.makeDirectories(path, created: &created) }
    }

    /// Entries of a folder, without `.` and `..`, unsorted.
    package static func listDirectory(_ path: String) throws(CaptureSetError) -> [String] {
        try converting { () throws(FileSystemError) in try FileSystem.listDirectory(path) }
    }

    /// A path's folder (`.` when it has none) and last component, trailing slashes ignored.
    package static func split(_ path: String) -> (dir: String, base: String) { FileSystem.split(path) }

    /// `name` inside `dir`, or `name` itself when it is absolute or `dir` is `.`.
    package static func join(_ dir: String, _ name: String) -> String { FileSystem.join(dir, name) }

    /// Runs one ``FileSystem`` call and rethrows its failure as the ``CaptureSetError`` with the
    /// same case and fields, so every wrapper above converts the same way.
    private static func converting<T>(_ body: () throws(FileSystemError) -> T) throws(CaptureSetError) -> T {
        do {
            return try body()
        } catch {
            throw CaptureSetError(error)
        }
    }
}

extension CaptureSetError {
    /// The ``CaptureSetError`` case with the same fields as `error` (the two types share
    /// ``FileSystemError``'s cases, and their descriptions agree word for word).
    package init(_ error: FileSystemError) {
        switch error {
        case let .io(path, operation, reason): self = .io(path: path, operation: operation, reason: reason)
        case let .notAnOutputFile(path, what): self = .notAnOutputFile(path: path, what: what)
        }
    }
}
