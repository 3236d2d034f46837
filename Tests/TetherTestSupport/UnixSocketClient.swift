#if canImport(Glibc)
import Glibc
#endif

/// Why a test could not reach a Unix socket.
public struct UnixSocketClientError: Error, CustomStringConvertible {
    /// What failed, with the path and `errno`.
    public var description: String
}

/// A test's own client for Unix stream sockets, written apart from the code under test so a test
/// of a private channel does not reach it through that channel's own code.
public enum UnixSocketClient {
    /// A connected descriptor for the Unix stream socket at `path`; the caller closes it.
    public static func connect(_ path: String) throws -> Int32 {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw UnixSocketClientError(description: "socket(AF_UNIX) for \(path): errno \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw UnixSocketClientError(description: "socket path too long: \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw UnixSocketClientError(description: "connect to unix:\(path): errno \(code)")
        }
        return fd
    }
}
