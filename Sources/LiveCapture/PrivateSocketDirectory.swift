import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A fresh directory only this user can enter (made by `mkdtemp(3)`, mode 0700), for the Unix
/// sockets between a live host and the processes it starts: the H4 tap's host side and a Bumble
/// bridge's JSON-lines channel.
///
/// Why not TCP on loopback: any local process can connect to a loopback port, and the first to
/// connect was served — another process could take the bridge's place in front of the tap and
/// have its packets recorded as the host's. A socket in this directory can only be reached by a
/// process of the same user that knows the name, and whoever listens there also checks the
/// peer's user (`SO_PEERCRED`) and serves exactly one. Bumble names such a transport `unix:PATH`.
///
/// Call ``remove()`` when the run is over; the sockets in it must be closed first.
public final class PrivateSocketDirectory: Sendable {
    /// The directory, e.g. `/tmp/tether-Ab12Cd`.
    public let path: String

    /// Makes the directory under `$TMPDIR` (or `/tmp` when that is unset, or too long a path
    /// for a Unix socket inside it).
    /// - Throws: ``LiveCaptureError`` when the directory cannot be made, or is not private
    ///   after all (a system whose `mkdtemp` ignores the mode).
    public init(prefix: String = "tether") throws(LiveCaptureError) {
        // A socket path holds at most 107 bytes (sockaddr_un); leave room for the name inside.
        let environment = ProcessInfo.processInfo.environment["TMPDIR"].map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
        let base = environment.flatMap { !$0.isEmpty && $0.utf8.count <= 60 ? $0 : nil } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            let code = errno
            throw LiveCaptureError(
                kind: code == EACCES ? .permissionDenied : .system, source: base, step: "make a private folder for the live sockets",
                detail: TapIO.errorText(code), hint: "Check that \(base) exists and is writable, or set TMPDIR to a folder that is.")
        }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var status = stat()
        guard stat(path, &status) == 0, status.st_uid == geteuid(), status.st_mode & 0o077 == 0 else {
            throw LiveCaptureError(
                kind: .system, source: path, step: "check the private folder for the live sockets",
                detail: "the folder is not owned by this user with mode 0700",
                hint: "Set TMPDIR to a folder on a file system that honours permissions.")
        }
        self.path = path
    }

    /// The path of a socket named `name` in the directory.
    public func socketPath(_ name: String) -> String { "\(path)/\(name)" }

    /// Removes the directory and whatever is left in it (socket files outlive their sockets).
    /// - Throws: ``LiveCaptureError`` naming the directory when it cannot be removed.
    public func remove() throws(LiveCaptureError) {
        do {
            try FileManager.default.removeItem(atPath: path)
        } catch {
            throw LiveCaptureError(
                kind: .system, source: path, step: "remove the private folder of the live sockets", detail: error.localizedDescription,
                hint: "Remove \(path) by hand; nothing in it is needed after the run.")
        }
    }
}
