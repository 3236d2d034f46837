#if canImport(CBluetooth)
import CBluetooth  // its <sys/socket.h> owns the socket declarations within this package (BlueZ: Linux only)
#endif
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A `HOST:PORT` the tap listens on for the host stack: `127.0.0.1:9000`, `[::1]:0`, `localhost:9000`.
/// Port 0 asks the system for a free port (``H4Tap/start()`` returns the one it got).
public struct H4ListenAddress: Sendable, Hashable, CustomStringConvertible {
    /// A numeric address or a name `getaddrinfo` resolves.
    public var host: String
    /// The TCP port, 0 for any free port.
    public var port: UInt16

    /// An address from its parts.
    public init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT` (IPv6 in brackets: `[::1]:9000`).
    /// - Throws: ``LiveCaptureError`` (`.misuse`) naming the text and the form expected.
    public init(parsing text: String) throws(LiveCaptureError) {
        guard let (host, port) = splitHostPort(text) else {
            throw LiveCaptureError(
                kind: .misuse, source: text, step: "parse the tap's listen address",
                detail: "expected HOST:PORT (e.g. 127.0.0.1:9000, [::1]:9000, or port 0 for any free port)",
                hint: "Give the address the host stack should connect to, such as 127.0.0.1:9000.")
        }
        self.init(host: host, port: port)
    }

    /// `HOST:PORT`, IPv6 hosts in brackets.
    public var description: String { joinHostPort(host, port) }
}

/// Where an ``H4Tap`` waits for its host stack.
public enum H4HostEndpoint: Sendable, Hashable, CustomStringConvertible {
    /// TCP on `HOST:PORT`: a host stack the user points at the tap (`tether record --ble-listen`).
    /// Anyone who can reach the address can connect; see ``H4Tap/listensBeyondLoopback``.
    case tcp(H4ListenAddress)
    /// A Unix stream socket at `path`, for a host stack Tether starts itself (a live host's
    /// bridge). Put it in a ``PrivateSocketDirectory``: only this user can then reach it, and the tap
    /// also refuses a peer of another user. Bumble's transport for it is `unix:PATH`.
    case unixSocket(path: String)

    /// `HOST:PORT`, or `unix:PATH`.
    public var description: String {
        switch self {
        case .tcp(let address): address.description
        case .unixSocket(let path): "unix:\(path)"
        }
    }
}

/// Where the tap reaches the HCI controller.
public enum H4ControllerAddress: Sendable, Hashable, CustomStringConvertible {
    /// A controller served as H4 over TCP (Bumble's `tcp-server:_:9002`, an HCI bridge).
    case tcp(host: String, port: UInt16)
    /// A controller on a serial device (a UART, a USB CDC-ACM dongle): raw mode, 8N1, at `baudRate`,
    /// with RTS/CTS hardware flow control when `flowControl`.
    case serial(path: String, baudRate: Int, flowControl: Bool)

    /// Baud rate used when a serial spec names none (Bumble's default, and Zephyr's `hci_uart`).
    public static let defaultBaudRate = 1_000_000

    /// Baud rates a serial device can be set to.
    public static let baudRates: [Int] = [
        9600, 19200, 38400, 57600, 115_200, 230_400, 460_800, 500_000, 576_000, 921_600,
        1_000_000, 1_152_000, 1_500_000, 2_000_000, 2_500_000, 3_000_000, 3_500_000, 4_000_000,
    ]

    /// Parses `tcp:HOST:PORT`, or `serial:PATH[,BAUD][,rtscts]` (as Bumble spells its serial
    /// transport; a bare `/dev/…` path is read as `serial:` with the defaults).
    /// - Throws: ``LiveCaptureError`` (`.misuse`) naming the text and the forms accepted.
    public init(parsing text: String) throws(LiveCaptureError) {
        func bad(_ detail: String) -> LiveCaptureError {
            LiveCaptureError(
                kind: .misuse, source: text, step: "parse the controller address", detail: detail,
                hint: "Write tcp:HOST:PORT for a controller served over TCP (e.g. tcp:127.0.0.1:9002), "
                    + "or serial:/dev/ttyUSB0[,BAUD][,rtscts] for a UART controller.")
        }
        if text.hasPrefix("tcp:") {
            guard let (host, port) = splitHostPort(String(text.dropFirst(4))), port != 0 else {
                throw bad("expected tcp:HOST:PORT with a port from 1 to 65535")
            }
            self = .tcp(host: host, port: port)
            return
        }
        let serialSpec: Substring
        if text.hasPrefix("serial:") {
            serialSpec = text.dropFirst(7)
        } else if text.hasPrefix("/dev/") {
            serialSpec = Substring(text)
        } else {
            throw bad("unknown controller transport")
        }
        let parts = serialSpec.split(separator: ",", omittingEmptySubsequences: false)
        guard let path = parts.first, !path.isEmpty else { throw bad("expected a device path after serial:") }
        var baud = Self.defaultBaudRate
        var flowControl = false
        for option in parts.dropFirst() {
            if option == "rtscts" {
                flowControl = true
            } else if let rate = Int(option), Self.baudRates.contains(rate) {
                baud = rate
            } else {
                throw bad("serial option '\(option)' is neither a baud rate (\(Self.baudRates.map(String.init).joined(separator: ", "))) nor rtscts")
            }
        }
        self = .serial(path: String(path), baudRate: baud, flowControl: flowControl)
    }

    /// The spec form: `tcp:HOST:PORT`, `serial:PATH,BAUD[,rtscts]`.
    public var description: String {
        switch self {
        case .tcp(let host, let port): "tcp:\(joinHostPort(host, port))"
        case .serial(let path, let baud, let flow): "serial:\(path),\(baud)\(flow ? ",rtscts" : "")"
        }
    }
}

/// `HOST:PORT` or `[V6]:PORT` split; `nil` when malformed.
func splitHostPort(_ text: String) -> (String, UInt16)? {
    let host: Substring
    let portText: Substring
    if text.hasPrefix("[") {
        guard let close = text.firstIndex(of: "]"), text[text.index(after: close)...].hasPrefix(":") else { return nil }
        host = text[text.index(after: text.startIndex)..<close]
        portText = text[text.index(close, offsetBy: 2)...]
    } else {
        guard let colon = text.lastIndex(of: ":") else { return nil }
        host = text[..<colon]
        portText = text[text.index(after: colon)...]
        if host.contains(":") { return nil }  // an IPv6 address needs brackets
    }
    guard !host.isEmpty, portText.allSatisfy(\.isASCII), let port = UInt16(portText) else { return nil }
    return (String(host), port)
}

func joinHostPort(_ host: String, _ port: UInt16) -> String {
    host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
}

/// One open descriptor of the tap: a TCP socket or a serial device. Non-blocking, close-on-exec.
struct TapDescriptor {
    var fd: Int32
    var isSocket: Bool
    /// Who is on the other end, for notices: `127.0.0.1:53210`, `/dev/ttyUSB0`, `process 812 (uid 1000)` on a Unix socket.
    var peer: String
    /// The user on the other end of a Unix socket, when the kernel says.
    var peerUID: UInt32? = nil
    /// The process on the other end of a Unix socket, when the kernel says.
    var peerPID: Int32? = nil
}

/// Thin POSIX helpers for the tap. Every failure becomes a ``LiveCaptureError`` naming the step.
enum TapIO {
    static func errorText(_ code: Int32) -> String { "\(String(cString: strerror(code))) (errno \(code))" }

    /// Resolves `host:port` to socket addresses, numeric hosts without a lookup.
    static func resolve(_ host: String, _ port: UInt16, passive: Bool, source: String) throws(LiveCaptureError) -> [(family: Int32, address: [UInt8])] {
        var hints = addrinfo()
        hints.ai_socktype = SystemCalls.streamSocket
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let code = getaddrinfo(host, String(port), &hints, &list)
        guard code == 0, let list else {
            throw LiveCaptureError(
                kind: .system, source: source, step: "resolve \(joinHostPort(host, port))",
                detail: String(cString: gai_strerror(code)), hint: "Use a numeric address such as 127.0.0.1, or a name this machine resolves.")
        }
        defer { freeaddrinfo(list) }
        var result: [(Int32, [UInt8])] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry {
            if let address = current.pointee.ai_addr {
                let bytes = UnsafeRawBufferPointer(start: address, count: Int(current.pointee.ai_addrlen))
                result.append((current.pointee.ai_family, Array(bytes)))
            }
            entry = current.pointee.ai_next
        }
        return result
    }

    static func setNonBlocking(_ fd: Int32) {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
    }

    static func setNoDelay(_ fd: Int32) {
        var on: Int32 = 1
        _ = setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// The numeric `HOST:PORT` of a socket address.
    static func describe(_ address: UnsafeRawBufferPointer) -> String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let code = address.withMemoryRebound(to: sockaddr.self) { pointer in
            getnameinfo(pointer.baseAddress, socklen_t(address.count), &host, socklen_t(host.count), &service, socklen_t(service.count), NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard code == 0 else { return "?" }
        func text(_ buffer: [CChar]) -> String {
            String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
        return joinHostPort(text(host), UInt16(text(service)) ?? 0)
    }

    /// A listening TCP socket on `address`; returns it, the port it is bound to, and whether the
    /// address it is bound to is a loopback one.
    static func listen(_ address: H4ListenAddress, source: String) throws(LiveCaptureError) -> (Int32, UInt16, loopback: Bool) {
        var lastError: LiveCaptureError? = nil
        for (family, bytes) in try resolve(address.host, address.port, passive: true, source: source) {
            let fd = SystemCalls.socket(family: family, type: SystemCalls.streamSocket, nonBlocking: true)
            guard fd >= 0 else {
                lastError = LiveCaptureError(kind: .system, source: source, step: "socket for \(address)", detail: errorText(errno), hint: "Check the address family of \(address.host).")
                continue
            }
            var on: Int32 = 1
            _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size))
            let bound = bytes.withUnsafeBytes { raw in
                raw.withMemoryRebound(to: sockaddr.self) { bind(fd, $0.baseAddress, socklen_t(raw.count)) }
            }
            guard bound == 0, SystemCalls.listen(fd, 4) == 0 else {
                let code = errno
                _ = SystemCalls.close(fd)
                lastError = LiveCaptureError(
                    kind: code == EACCES ? .permissionDenied : .system, source: source, step: "listen on \(address)", detail: errorText(code),
                    hint: code == EADDRINUSE ? "Another program uses port \(address.port); choose another, or port 0 for any free one."
                        : "Choose an address of this machine, such as 127.0.0.1:9000.")
                continue
            }
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &storage) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
            let port = withUnsafeBytes(of: &storage) { raw -> UInt16 in
                // sin_port and sin6_port sit at the same offset, in network order.
                UInt16(raw[2]) << 8 | UInt16(raw[3])
            }
            let loopback = withUnsafeBytes(of: &storage) { isLoopback(UnsafeRawBufferPointer(rebasing: $0[0..<Int(length)])) }
            return (fd, port, loopback)
        }
        throw lastError ?? LiveCaptureError(kind: .system, source: source, step: "listen on \(address)", detail: "no address to listen on", hint: "Use a numeric address such as 127.0.0.1.")
    }

    /// Accepts one pending connection, if any: non-blocking, close-on-exec, TCP_NODELAY.
    static func accept(_ listener: Int32) -> (TapDescriptor?, Int32) {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let fd = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SystemCalls.accept(listener, $0, &length) }
        }
        guard fd >= 0 else { return (nil, errno) }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        setNonBlocking(fd)
        setNoDelay(fd)
        SystemCalls.ignoreSIGPIPE(fd)
        let peer: String
        if Int32(storage.ss_family) == AF_UNIX {
            // A Unix peer has no address worth naming; the kernel's record of who connected is.
            let credentials = SystemCalls.peerCredentials(fd)
            peer = credentials.map { "process \($0.pid.map { "\($0) " } ?? "")(uid \($0.uid))" } ?? "a local process (the system does not say which)"
            return (TapDescriptor(fd: fd, isSocket: true, peer: peer, peerUID: credentials?.uid, peerPID: credentials?.pid), 0)
        }
        peer = withUnsafeBytes(of: &storage) { describe(UnsafeRawBufferPointer(rebasing: $0[0..<Int(length)])) }
        return (TapDescriptor(fd: fd, isSocket: true, peer: peer), 0)
    }

    /// Connects to a TCP controller (giving up after `timeoutMilliseconds` per address), or opens
    /// and configures a serial one.
    static func open(_ controller: H4ControllerAddress, source: String, timeoutMilliseconds: Int32 = 5000) throws(LiveCaptureError) -> TapDescriptor {
        switch controller {
        case .tcp(let host, let port):
            return try connect(host, port, source: source, timeoutMilliseconds: timeoutMilliseconds)
        case .serial(let path, let baud, let flow):
            return try openSerial(path, baudRate: baud, flowControl: flow, source: source)
        }
    }

    static func connect(_ host: String, _ port: UInt16, source: String, timeoutMilliseconds: Int32) throws(LiveCaptureError) -> TapDescriptor {
        let target = joinHostPort(host, port)
        var lastCode: Int32 = ECONNREFUSED
        for (family, bytes) in try resolve(host, port, passive: false, source: source) {
            let fd = SystemCalls.socket(family: family, type: SystemCalls.streamSocket, nonBlocking: true)
            guard fd >= 0 else { lastCode = errno; continue }
            let started = bytes.withUnsafeBytes { raw in
                raw.withMemoryRebound(to: sockaddr.self) { SystemCalls.connect(fd, $0.baseAddress, socklen_t(raw.count)) }
            }
            var code: Int32 = started == 0 ? 0 : errno
            if code == EINPROGRESS {
                var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                let ready = poll(&entry, 1, timeoutMilliseconds)
                if ready == 0 {
                    code = ETIMEDOUT
                } else {
                    var soError: Int32 = 0
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    _ = getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &length)
                    code = soError
                }
            }
            if code == 0 {
                setNoDelay(fd)
                return TapDescriptor(fd: fd, isSocket: true, peer: target)
            }
            lastCode = code
            _ = SystemCalls.close(fd)
        }
        throw LiveCaptureError(
            kind: .system, source: source, step: "connect to the controller at \(target)", detail: errorText(lastCode),
            hint: "Start the controller first and check HOST:PORT; for Bumble's virtual controllers: "
                + "python3 Harness/rigs/ciq_controllers.py tcp-server:127.0.0.1:9001 tcp-server:127.0.0.1:9002")
    }

    static func openSerial(_ path: String, baudRate: Int, flowControl: Bool, source: String) throws(LiveCaptureError) -> TapDescriptor {
        let fd = SystemCalls.open(path, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let code = errno
            throw LiveCaptureError(
                kind: code == EACCES || code == EPERM ? .permissionDenied : (code == ENOENT ? .noSuchDevice : .system),
                source: source, step: "open \(path)", detail: errorText(code),
                hint: code == EACCES || code == EPERM ? "Add the user to the dialout group, or run as root."
                    : "Check the device path (ls /dev/ttyUSB* /dev/ttyACM*) and that the controller is plugged in.")
        }
        var attributes = termios()
        guard tcgetattr(fd, &attributes) == 0 else {
            let code = errno
            _ = SystemCalls.close(fd)
            throw LiveCaptureError(kind: .system, source: source, step: "tcgetattr \(path)", detail: errorText(code), hint: "\(path) is not a serial device; give the controller's UART.")
        }
        cfmakeraw(&attributes)
        attributes.c_cflag |= tcflag_t(CLOCAL | CREAD)
        if flowControl {
            attributes.c_cflag |= tcflag_t(CRTSCTS)
        } else {
            attributes.c_cflag &= ~tcflag_t(CRTSCTS)
        }
        let speed = speedConstant(baudRate)
        guard cfsetispeed(&attributes, speed) == 0, cfsetospeed(&attributes, speed) == 0, tcsetattr(fd, TCSANOW, &attributes) == 0 else {
            let code = errno
            _ = SystemCalls.close(fd)
            throw LiveCaptureError(kind: .system, source: source, step: "set \(path) to \(baudRate) baud", detail: errorText(code), hint: "Choose a baud rate the adapter supports (115200 works everywhere).")
        }
        _ = tcflush(fd, TCIOFLUSH)
        return TapDescriptor(fd: fd, isSocket: false, peer: path)
    }

    /// A listening Unix stream socket at `path`, readable and writable by this user only. The
    /// directory should be private too (``PrivateSocketDirectory``): the mode of a socket file is
    /// not honoured for `connect` on every system, a directory's is.
    static func listenUnix(_ path: String, source: String) throws(LiveCaptureError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw LiveCaptureError(
                kind: .misuse, source: source, step: "listen on unix:\(path)",
                detail: "a Unix socket path is 1 to \(capacity - 1) bytes, this one is \(bytes.count)",
                hint: "Use a shorter folder for the socket (set TMPDIR to a short path such as /tmp).")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let fd = SystemCalls.socket(family: AF_UNIX, type: SystemCalls.streamSocket, nonBlocking: true)
        guard fd >= 0 else {
            throw LiveCaptureError(kind: .system, source: source, step: "socket for unix:\(path)", detail: errorText(errno), hint: "The process may be out of file descriptors; raise `ulimit -n`.")
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, chmod(path, 0o600) == 0, SystemCalls.listen(fd, 4) == 0 else {
            let code = errno
            _ = SystemCalls.close(fd)
            throw LiveCaptureError(
                kind: code == EACCES ? .permissionDenied : .system, source: source, step: "listen on unix:\(path)", detail: errorText(code),
                hint: code == EADDRINUSE ? "Something already is at \(path); use a fresh PrivateSocketDirectory for each run."
                    : "Check that the folder of \(path) exists and belongs to this user.")
        }
        return fd
    }

    /// The parent of process `pid` (Linux: field 4 of `/proc/PID/stat`), or `nil` where the
    /// system does not say or the process is gone (the caller refuses such a peer).
    static func parentProcess(of pid: Int32) -> Int32? {
        #if os(Linux)
        let stat: String
        do {
            stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        } catch {
            return nil
        }
        // "PID (COMM) STATE PPID …": COMM may hold spaces and parentheses, so read after the last ')'.
        guard let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        return fields.count > 1 ? Int32(fields[1]) : nil
        #else
        return nil
        #endif
    }

    /// Whether a bound socket address is a loopback one: 127.0.0.0/8, ::1, or ::ffff:127.x.y.z.
    /// A wildcard (0.0.0.0, ::) is not: it takes connections on every interface.
    static func isLoopback(_ address: UnsafeRawBufferPointer) -> Bool {
        guard address.count >= 2 else { return false }
        let family = Int32(address.load(as: sa_family_t.self))
        if family == AF_INET, address.count >= MemoryLayout<sockaddr_in>.size {
            // sin_addr follows the family and the port, in network order.
            return address[4] == 127
        }
        if family == AF_INET6, address.count >= MemoryLayout<sockaddr_in6>.size {
            // sin6_addr follows the family, the port and the flow label (offset 8).
            let bytes = Array(address[8..<24])
            if bytes == [UInt8](repeating: 0, count: 15) + [1] { return true }
            return bytes[0..<10].allSatisfy { $0 == 0 } && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        }
        return false
    }

    static func speedConstant(_ baud: Int) -> speed_t {
        #if os(Linux)
        // Linux's termios takes a code per rate (B115200 = 0o010002), and these are the rates it names.
        let table: [Int: Int32] = [
            9600: B9600, 19200: B19200, 38400: B38400, 57600: B57600, 115_200: B115200, 230_400: B230400,
            460_800: B460800, 500_000: B500000, 576_000: B576000, 921_600: B921600, 1_000_000: B1000000,
            1_152_000: B1152000, 1_500_000: B1500000, 2_000_000: B2000000, 2_500_000: B2500000,
            3_000_000: B3000000, 3_500_000: B3500000, 4_000_000: B4000000,
        ]
        return speed_t(table[baud] ?? B1000000)
        #else
        // BSD termios (Darwin) takes the rate itself as the speed value; the driver refuses one it
        // cannot set, and the caller reports that.
        return speed_t(baud)
        #endif
    }

    static func wallClockNanoseconds() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) &* 1_000_000_000 &+ Int64(now.tv_nsec)
    }
}
