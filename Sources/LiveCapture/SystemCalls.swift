#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The C library calls and constants whose spelling differs between Glibc (Linux) and Darwin
/// (macOS), under one spelling for the live targets: LiveCapture, LiveHosts and TetherCLI.
///
/// The calls are module-qualified here, once, because the types that make them often have members
/// of the same name (`close()`, `read`, `send`, `socket`, `listen`), which hide the C functions
/// from unqualified calls; and a qualified call names the module, which differs per system.
package enum SystemCalls {
    // MARK: Socket types and creation

    /// `SOCK_STREAM` as `socket()` takes it: Glibc imports the socket types as an enum, Darwin as integers.
    package static var streamSocket: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_STREAM.rawValue)
        #else
        SOCK_STREAM
        #endif
    }

    /// `SOCK_DGRAM` as `socket()` takes it.
    package static var datagramSocket: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_DGRAM.rawValue)
        #else
        SOCK_DGRAM
        #endif
    }

    /// `SOCK_RAW` as `socket()` takes it.
    package static var rawSocket: Int32 {
        #if canImport(Glibc)
        Int32(SOCK_RAW.rawValue)
        #else
        SOCK_RAW
        #endif
    }

    /// A new socket that is closed on exec, non-blocking when asked, and never raises SIGPIPE (see
    /// ``sendNoSignal(_:_:_:)``). Linux sets both flags in `socket()` itself; Darwin has no such
    /// flags, so they are set right after (Tether never forks, so nothing can inherit the
    /// descriptor in between).
    /// - Returns: the descriptor, or -1 with `errno` set.
    package static func socket(family: Int32, type: Int32, protocol: Int32 = 0, nonBlocking: Bool = false) -> Int32 {
        #if canImport(Glibc)
        var flags = Int32(SOCK_CLOEXEC.rawValue)
        if nonBlocking { flags |= Int32(SOCK_NONBLOCK.rawValue) }
        return Glibc.socket(family, type | flags, `protocol`)
        #else
        let fd = Darwin.socket(family, type, `protocol`)
        guard fd >= 0 else { return fd }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        if nonBlocking { _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) }
        ignoreSIGPIPE(fd)
        return fd
        #endif
    }

    /// Makes writes to a socket whose peer is gone fail with `EPIPE` rather than raise SIGPIPE,
    /// where that is a property of the socket (Darwin's `SO_NOSIGPIPE`). On Linux it is a flag of
    /// each send (``sendNoSignal(_:_:_:)``) and this does nothing. For sockets that
    /// ``socket(family:type:protocol:nonBlocking:)`` did not make, such as accepted ones.
    package static func ignoreSIGPIPE(_ fd: Int32) {
        #if canImport(Darwin)
        var on: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// `send(2)` that fails with `EPIPE` instead of raising SIGPIPE when the peer has gone: a
    /// host whose broker or controller went away must see an error, not be killed.
    package static func sendNoSignal(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.send(fd, buffer, count, Int32(MSG_NOSIGNAL))
        #else
        // SO_NOSIGPIPE, set when the socket was made or accepted, does the same.
        Darwin.send(fd, buffer, count, 0)
        #endif
    }

    // MARK: Plain calls

    /// `close(2)`.
    @discardableResult
    package static func close(_ fd: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.close(fd)
        #else
        Darwin.close(fd)
        #endif
    }

    /// `read(2)`.
    package static func read(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.read(fd, buffer, count)
        #else
        Darwin.read(fd, buffer, count)
        #endif
    }

    /// `write(2)`.
    package static func write(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
        #if canImport(Glibc)
        Glibc.write(fd, buffer, count)
        #else
        Darwin.write(fd, buffer, count)
        #endif
    }

    /// `recv(2)`.
    package static func recv(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int, _ flags: Int32 = 0) -> Int {
        #if canImport(Glibc)
        Glibc.recv(fd, buffer, count, flags)
        #else
        Darwin.recv(fd, buffer, count, flags)
        #endif
    }

    /// `open(2)` without creating (no mode).
    package static func open(_ path: String, _ flags: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.open(path, flags)
        #else
        Darwin.open(path, flags)
        #endif
    }

    /// `listen(2)`.
    package static func listen(_ fd: Int32, _ backlog: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.listen(fd, backlog)
        #else
        Darwin.listen(fd, backlog)
        #endif
    }

    /// `accept(2)`.
    package static func accept(_ fd: Int32, _ address: UnsafeMutablePointer<sockaddr>?, _ length: UnsafeMutablePointer<socklen_t>?) -> Int32 {
        #if canImport(Glibc)
        Glibc.accept(fd, address, length)
        #else
        Darwin.accept(fd, address, length)
        #endif
    }

    /// `connect(2)`.
    package static func connect(_ fd: Int32, _ address: UnsafePointer<sockaddr>?, _ length: socklen_t) -> Int32 {
        #if canImport(Glibc)
        Glibc.connect(fd, address, length)
        #else
        Darwin.connect(fd, address, length)
        #endif
    }

    /// `poll(2)` on `count` entries.
    package static func poll(_ entries: UnsafeMutablePointer<pollfd>, _ count: Int, _ timeoutMilliseconds: Int32) -> Int32 {
        #if canImport(Glibc)
        Glibc.poll(entries, nfds_t(count), timeoutMilliseconds)
        #else
        Darwin.poll(entries, nfds_t(count), timeoutMilliseconds)
        #endif
    }

    /// `rename(2)`.
    package static func rename(_ from: String, _ to: String) -> Int32 {
        #if canImport(Glibc)
        Glibc.rename(from, to)
        #else
        Darwin.rename(from, to)
        #endif
    }

    /// `exit(3)`: flushes C stdio and runs `atexit` handlers.
    package static func exit(_ status: Int32) -> Never {
        #if canImport(Glibc)
        Glibc.exit(status)
        #else
        Darwin.exit(status)
        #endif
    }

    /// The process and user on the other end of a connected Unix socket, as the kernel recorded
    /// them at `connect`/`listen`: Linux's `SO_PEERCRED`; Darwin's `getpeereid`, which gives no
    /// process. `nil` when the system does not say (not a Unix socket).
    package static func peerCredentials(_ fd: Int32) -> (pid: Int32?, uid: UInt32)? {
        #if os(Linux)
        // struct ucred: pid_t pid, uid_t uid, gid_t gid (unix(7)).
        var credentials: (Int32, UInt32, UInt32) = (0, 0, 0)
        var length = socklen_t(MemoryLayout<(Int32, UInt32, UInt32)>.size)
        guard getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &length) == 0 else { return nil }
        return (credentials.0, credentials.1)
        #else
        var uid: uid_t = 0
        var gid: gid_t = 0
        guard getpeereid(fd, &uid, &gid) == 0 else { return nil }
        return (nil, uid)
        #endif
    }

    /// `POLLRDHUP`: the peer shut down its writing side. Linux only; elsewhere 0, and a shut-down
    /// peer shows as readable with a read of 0 bytes instead.
    package static var pollReadHangUp: Int16 {
        #if os(Linux)
        0x2000
        #else
        0
        #endif
    }
}
