import CBluetooth
import Foundation
import Testing
import TetherTestSupport

@testable import LiveCapture

/// A test could not set up what it needs (a socket, tshark): the message says what.
struct TapTestSetupFailure: Error, CustomStringConvertible {
    var description: String
}

/// A blocking TCP connection with a receive timeout, so a broken tap fails a test instead of hanging it.
///
/// `@unchecked Sendable`: no lock. `fd` is a `let`, all that `send`, `receive` and `peerClosed`
/// use (a ``FakeController``'s thread and the test may both call them; the kernel orders the
/// socket calls), and it stays open until `deinit`. The one `var`, `closed`, is touched only by
/// `close()`, which the test's thread calls, and `deinit`, which runs after the last reference
/// is released.
final class TestConnection: @unchecked Sendable {
    let fd: Int32
    private var closed = false

    init(fd: Int32) {
        self.fd = fd
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var on: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &on, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Connects to 127.0.0.1:`port`.
    static func connect(port: UInt16) throws -> TestConnection {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TapTestSetupFailure(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = port.bigEndian
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            Glibc.close(fd)
            throw TapTestSetupFailure(description: "connect to 127.0.0.1:\(port): errno \(code)")
        }
        return TestConnection(fd: fd)
    }

    /// Connects to the Unix stream socket at `path`.
    static func connect(unixPath path: String) throws -> TestConnection {
        TestConnection(fd: try UnixSocketClient.connect(path))
    }

    deinit {
        close()
        Glibc.close(fd)
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw TapTestSetupFailure(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    /// Exactly `count` bytes, or what arrived before the peer closed or 10 s passed.
    func receive(_ count: Int) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while result.count < count {
            let got = buffer.withUnsafeMutableBytes { Glibc.recv(fd, $0.baseAddress, min($0.count, count - result.count), 0) }
            if got <= 0 { break }
            result += buffer[0..<got]
        }
        return result
    }

    /// Whether the peer closed: a read returns end of stream (within 10 s).
    func peerClosed() -> Bool {
        var byte: UInt8 = 0
        while true {
            let got = Glibc.recv(fd, &byte, 1, 0)
            if got == 0 { return true }
            if got < 0 { return errno == ECONNRESET }
        }
    }

    /// Shuts the connection down, so the peer sees the end at once, even while another thread
    /// is blocked reading it. The descriptor itself is closed in `deinit`, once no thread holds
    /// the connection: closed here, its number could be reused by another test's socket while a
    /// ``FakeController``'s thread is still about to read it.
    func close() {
        guard !closed else { return }
        closed = true
        shutdown(fd, Int32(SHUT_RDWR))
    }
}

/// A listening socket on 127.0.0.1, any free port.
///
/// `@unchecked Sendable`: immutable after `init`; its stored properties, `fd` and `port`, are
/// `let`s, and `accept()` only reads `fd`.
final class TestListener: @unchecked Sendable {
    let fd: Int32
    let port: UInt16

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard fd >= 0, bound == 0, listen(fd, 8) == 0 else { throw TapTestSetupFailure(description: "listen on 127.0.0.1: errno \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = UInt16(bigEndian: address.sin_port)
    }

    deinit { Glibc.close(fd) }

    /// The next connection, waiting at most 10 s.
    func accept() throws -> TestConnection {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&entry, 1, 10_000) == 1 else { throw TapTestSetupFailure(description: "no connection on port \(port) within 10 s") }
        let connection = Glibc.accept(fd, nil, nil)
        guard connection >= 0 else { throw TapTestSetupFailure(description: "accept: errno \(errno)") }
        return TestConnection(fd: connection)
    }
}

/// A fake HCI controller on one accepted connection, on a thread of its own: answers HCI_Reset
/// with Command Complete (status 0), every other command with Command Complete for its opcode,
/// and echoes each ACL packet. It reads with its own minimal H4 parser (not ``H4Framer``) and
/// keeps every byte it received.
///
/// `@unchecked Sendable`: every mutable field (`bytes`, `ended`) is read and written under `lock`;
/// its own thread writes them and the test reads them through `received` and `sawEnd`.
/// `connection` is a `let` (see ``TestConnection``).
final class FakeController: @unchecked Sendable {
    let connection: TestConnection
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var ended = false

    init(_ connection: TestConnection) {
        self.connection = connection
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    /// Everything received so far.
    var received: [UInt8] { lock.withLock { bytes } }
    /// Whether the host side closed (the connection reached end of stream).
    var sawEnd: Bool { lock.withLock { ended } }

    static func commandComplete(opcode: UInt16) -> [UInt8] {
        [0x04, 0x0E, 0x04, 0x01, UInt8(opcode & 0xFF), UInt8(opcode >> 8), 0x00]
    }

    private func read(_ count: Int) -> [UInt8]? {
        let got = connection.receive(count)
        lock.withLock { bytes += got }
        return got.count == count ? got : nil
    }

    private func serve() {
        while let type = read(1) {
            switch type[0] {
            case 0x01:
                guard let header = read(3), let parameters = read(Int(header[2])) else { break }
                _ = parameters
                try? connection.send(Self.commandComplete(opcode: UInt16(header[0]) | UInt16(header[1]) << 8))
                continue
            case 0x02:
                guard let header = read(4), let payload = read(Int(header[2]) | Int(header[3]) << 8) else { break }
                try? connection.send(type + header + payload)
                continue
            default:
                continue  // not a packet this fake knows: keep the byte, read on
            }
            break
        }
        lock.withLock { ended = true }
    }
}

/// Runs tshark on `path` with `-T fields`, one row per frame.
func tsharkRows(_ path: String, fields: [String]) throws -> [[String]] {
    let tshark = ["/usr/bin/tshark", "/usr/local/bin/tshark"].first { FileManager.default.isExecutableFile(atPath: $0) }
    guard let tshark else {
        throw TapTestSetupFailure(description: "tshark is required by this test and was not found. Run ./CI/test, which installs it, or: sudo apt-get install -y tshark")
    }
    let process = Process()
    process.executableURL = URL(fileURLWithPath: tshark)
    process.arguments = ["-r", path, "-T", "fields"] + fields.flatMap { ["-e", $0] }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw TapTestSetupFailure(description: "tshark -r \(path) exited \(process.terminationStatus)") }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
}

/// A pseudo-terminal pair: the test holds the master, the tap opens `slavePath` as a serial device.
///
/// `@unchecked Sendable`: immutable after `init`; its stored properties, `master` and `slavePath`,
/// are `let`s, and `read`/`write` only use the descriptor.
final class PseudoTerminal: @unchecked Sendable {
    let master: Int32
    let slavePath: String

    init() throws {
        // posix_openpt and friends are not visible to Swift here; /dev/ptmx and two ioctls do the same.
        master = open("/dev/ptmx", O_RDWR | O_NOCTTY)
        var unlock: Int32 = 0
        var number: UInt32 = 0
        let tiocsptlck: UInt = 0x4004_5431  // TIOCSPTLCK
        let tiocgptn: UInt = 0x8004_5430  // TIOCGPTN
        guard master >= 0, ioctl(master, tiocsptlck, &unlock) == 0, ioctl(master, tiocgptn, &number) == 0 else {
            throw TapTestSetupFailure(description: "opening a pseudo-terminal through /dev/ptmx failed: errno \(errno)")
        }
        slavePath = "/dev/pts/\(number)"
    }

    deinit { Glibc.close(master) }

    func write(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.write(master, $0.baseAddress, $0.count) }
    }

    /// Exactly `count` bytes, or fewer when 10 s pass.
    func read(_ count: Int) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while result.count < count {
            var entry = pollfd(fd: master, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 10_000) == 1 else { break }
            let got = buffer.withUnsafeMutableBytes { Glibc.read(master, $0.baseAddress, min($0.count, count - result.count)) }
            if got <= 0 { break }
            result += buffer[0..<got]
        }
        return result
    }
}

/// Collects what a tap reports, from its thread.
///
/// `@unchecked Sendable`: every mutable field (`packetList`, `noticeList`) is read and written
/// under `lock`; the tap's thread appends and the test reads through `packets` and `notices`.
final class TapLog: @unchecked Sendable {
    struct Packet: Equatable {
        var direction: H4Direction
        var timestampNs: Int64
        var bytes: [UInt8]
    }
    private let lock = NSLock()
    private var packetList: [Packet] = []
    private var noticeList: [String] = []

    var packets: [Packet] { lock.withLock { packetList } }
    var notices: [String] { lock.withLock { noticeList } }

    func attach(to tap: H4Tap) {
        tap.onPacket { [self] packet in
            let copy = Packet(direction: packet.direction, timestampNs: packet.timestampNs, bytes: Array(packet.bytes))
            lock.withLock { packetList.append(copy) }
        }
        tap.onNotice { [self] text in lock.withLock { noticeList.append(text) } }
    }
}

/// The link type 201 frame the tap should record for `packet`.
func phdrFrame(_ direction: H4Direction, _ packet: [UInt8]) -> [UInt8] {
    [0, 0, 0, UInt8(direction.rawValue)] + packet
}
