import BehaviourTrace
import CaptureKit
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture
import LiveHosts
import Testing
import TetherTestSupport

/// A test could not set up a socket; the message says which.
struct ChannelTestFailure: Error, CustomStringConvertible {
    var description: String
}

/// The channels between a live host and the processes it starts (the H4 tap's host side, the
/// bridge's JSON lines): Unix sockets in private folders that no other process can take over.
@Suite(.serialized) struct LiveHostChannelTests {
    static let reset: [UInt8] = [0x01, 0x03, 0x0C, 0x00]

    /// A listening TCP socket on 127.0.0.1 standing in for a controller: its backlog takes the
    /// tap's connection, and what the tap forwards waits in its buffer.
    final class Controller {
        let fd: Int32
        let port: UInt16

        init() throws {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = in_addr_t(0x7F00_0001).bigEndian
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let ok = withUnsafeMutablePointer(to: &address) { pointer in
                pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && listen(fd, 4) == 0 && getsockname(fd, $0, &length) == 0 }
            }
            guard fd >= 0, ok else { throw ChannelTestFailure(description: "listen on 127.0.0.1: errno \(errno)") }
            self.fd = fd
            port = UInt16(bigEndian: address.sin_port)
        }

        /// Takes the tap's connection and reads `count` bytes from it (fewer if the tap closes it
        /// or 10 s pass): what the tap forwarded, which it recorded first.
        func acceptAndRead(_ count: Int) -> [UInt8] {
            let connection = accept(fd, nil, nil)
            guard connection >= 0 else { return [] }
            defer { close(connection) }
            var timeout = timeval(tv_sec: 10, tv_usec: 0)
            setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var bytes = [UInt8](repeating: 0, count: count)
            var got = 0
            while got < count {
                let n = bytes[got...].withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                if n <= 0 { break }
                got += n
            }
            return Array(bytes[0..<got])
        }

        deinit { close(fd) }
    }

    /// A blocking connection to the Unix socket at `path` (a 10 s receive timeout bounds a broken peer).
    static func connect(unixPath path: String) throws -> Int32 {
        let fd = try UnixSocketClient.connect(path)
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    /// Sends `bytes`; `false` when the peer had already closed the connection.
    @discardableResult
    static func send(_ bytes: [UInt8], on fd: Int32) -> Bool {
        bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } == bytes.count
    }

    /// Whether the peer closed the connection (end of stream or a reset) before sending anything.
    static func closedByPeer(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        let got = recv(fd, &byte, 1, 0)
        return got == 0 || (got < 0 && errno == ECONNRESET)
    }

    /// The mode bits of a file or folder.
    static func mode(_ path: String) -> UInt32 {
        var status = stat()
        guard stat(path, &status) == 0 else { return 0 }
        return UInt32(status.st_mode) & 0o777
    }

    static func recording(in folder: TemporaryFolder, controller: Controller) throws -> LiveTapRecording {
        try LiveTapRecording(
            setPath: folder.path("set").path, title: "channel test", description: "a live recording's tap",
            transport: "tcp-client:127.0.0.1:\(controller.port)", apiDescription: "none")
    }

    static func socketPath(_ recording: LiveTapRecording) throws -> String {
        try #require(recording.hostTransport.hasPrefix("unix:"), "\(recording.hostTransport)")
        return String(recording.hostTransport.dropFirst("unix:".count))
    }

    @Test func aLiveRecordingsTapWaitsForItsBridgeOnAUnixSocketInAPrivateFolder() throws {
        let folder = try TemporaryFolder("live-channels")
        let controller = try Controller()
        let recording = try Self.recording(in: folder, controller: controller)
        let path = try Self.socketPath(recording)
        #expect(Self.mode((path as NSString).deletingLastPathComponent) == 0o700)
        #expect(Self.mode(path) == 0o600)
        _ = try recording.finish { _ in }
        #expect(!FileManager.default.fileExists(atPath: (path as NSString).deletingLastPathComponent), "the private folder outlived the run")
    }

    /// A child process standing in for the bridge: connects to the tap's socket, sends `bytes`,
    /// and stays connected until its stdin is closed.
    final class ChildHost {
        let process = Process()
        let stdin = Pipe()

        init(socketPath: String, sending bytes: [UInt8]) throws {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["python3", "-c", """
                import socket, sys
                s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                s.connect(sys.argv[1])
                s.sendall(bytes.fromhex(sys.argv[2]))
                sys.stdin.read()
                """, socketPath, bytes.map { String(format: "%02x", $0) }.joined()]
            process.standardInput = stdin
            try process.run()
        }

        /// Closes the connection (the child exits) and waits for the child.
        func end() {
            try? stdin.fileHandleForWriting.close()  // a child already gone has closed it too; waiting below is what matters
            process.waitUntilExit()
        }
    }

    /// The frames a finished recording holds on the tap's interface.
    static func tapFrames(_ recording: LiveTapRecording) throws -> [[UInt8]] {
        let (summary, _) = try recording.finish { _ in }
        let reader = try CaptureFile.open(path: summary.capturePath)
        var frames: [[UInt8]] = []
        while let frame = try reader.next() {
            if frame.interfaceIndex == 0 { frames.append(frame.data) }
        }
        return frames
    }

    @Test func aSecondConnectionToALiveRecordingsTapIsRefusedAndNothingItSendsIsRecorded() throws {
        let folder = try TemporaryFolder("live-channels")
        let controller = try Controller()
        let recording = try Self.recording(in: folder, controller: controller)
        let path = try Self.socketPath(recording)
        let bridge = try ChildHost(socketPath: path, sending: Self.reset)
        // Forwarded, so recorded, before the intruder comes: the tap records before it forwards.
        #expect(controller.acceptAndRead(Self.reset.count) == Self.reset)
        let intruder = try Self.connect(unixPath: path)
        defer { close(intruder) }
        Self.send([0x01, 0x01, 0x10, 0x00], on: intruder)  // Read Local Version: it must not be recorded
        #expect(Self.closedByPeer(intruder))
        bridge.end()
        #expect(try Self.tapFrames(recording) == [[0, 0, 0, 0] + Self.reset])
        #expect(recording.notices.contains { $0.contains("refused host") })
    }

    @Test func aProcessTheHostDidNotStartIsRefusedByALiveRecordingsTapEvenWhenItConnectsFirst() throws {
        let folder = try TemporaryFolder("live-channels")
        let controller = try Controller()
        let recording = try Self.recording(in: folder, controller: controller)
        let path = try Self.socketPath(recording)
        // This test process did not start itself: to the tap it is any local process of this user.
        let intruder = try Self.connect(unixPath: path)
        defer { close(intruder) }
        Self.send(Self.reset, on: intruder)
        #expect(Self.closedByPeer(intruder))
        let bridge = try ChildHost(socketPath: path, sending: [0x01, 0x01, 0x10, 0x00])
        #expect(controller.acceptAndRead(4) == [0x01, 0x01, 0x10, 0x00])
        bridge.end()
        #expect(try Self.tapFrames(recording) == [[0, 0, 0, 0, 0x01, 0x01, 0x10, 0x00]])
        #expect(recording.notices.contains { $0.contains("refused host process \(getpid())") && $0.contains("was not started by this process") })
    }

    // MARK: The bridge's JSON-lines channel

    /// A stand-in bridge: listens on its `--listen unix:PATH`, says READY, and greets its client
    /// as the real bridges do. With `impostor`, a forked child listens instead of the process
    /// Tether started.
    static func fakeBridge(in folder: TemporaryFolder, impostor: Bool) throws -> String {
        let script = folder.path(impostor ? "impostor_bridge.py" : "fake_bridge.py").path
        let serve = """
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(path)
            server.listen(1)
            print("READY unix:" + path, flush=True)
            conn, _ = server.accept()
            conn.sendall(b'{"ev":"bluetooth","ready":true}\\n')
            conn.recv(100)
            """
        let body = impostor
            ? "if os.fork() == 0:\n" + serve.split(separator: "\n").map { "    " + $0 }.joined(separator: "\n") + "\n    os._exit(0)\nos.wait()\n"
            : serve + "\n"
        try ("import os, socket, sys\npath = sys.argv[sys.argv.index('--listen') + 1][len('unix:'):]\n" + body)
            .write(toFile: script, atomically: true, encoding: .utf8)
        return script
    }

    @Test func aBridgeIsReachedOverAUnixSocketInAPrivateFolder() throws {
        let folder = try TemporaryFolder("live-channels")
        let bridge = try BLEBridge(script: try Self.fakeBridge(in: folder, impostor: false), transport: "tcp-client:127.0.0.1:9")
        #expect(Self.mode((bridge.socketPath as NSString).deletingLastPathComponent) == 0o700)
        var greeted = false
        try bridge.waitForBluetooth(transport: "tcp-client:127.0.0.1:9") { line in greeted = greeted || line["ev"] == .string("bluetooth") }
        #expect(greeted)
        bridge.shutdown()
        #expect(!FileManager.default.fileExists(atPath: (bridge.socketPath as NSString).deletingLastPathComponent), "the private folder outlived the bridge")
    }

    @Test func aBridgeSocketServedByAnotherProcessThanTheBridgeIsRefused() throws {
        let folder = try TemporaryFolder("live-channels")
        do {
            _ = try BLEBridge(script: try Self.fakeBridge(in: folder, impostor: true), transport: "tcp-client:127.0.0.1:9")
            Issue.record("the host talked to a process that is not the bridge it started")
        } catch {
            #expect("\(error)".contains("not the bridge Tether started"), "\(error)")
        }
    }
}
