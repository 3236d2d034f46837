import BehaviourTrace
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import LiveCapture
import Foundation

/// A live host's BLE stack: a Bumble bridge process — `Harness/rigs/ciq_phone_bridge.py` (a GATT
/// client: the Connect IQ phone, or the session phone with `--profile session`) or
/// `Harness/rigs/session_watch_bridge.py` (the session watch's GATT server) — that relays the link's
/// writes and notifications as newline-delimited JSON (docs/ble-rigs.md has the protocols).
///
/// The channel is a Unix socket in a ``PrivateSocketDirectory`` made for this bridge: only this
/// user can reach it, the bridge serves exactly one client of this user, and the host checks that
/// the peer it reached is the bridge process it started (`SO_PEERCRED`). A loopback TCP port, as
/// before, let any local process connect first and take the host's place.
///
/// Why a bridge and not a Swift HCI host: Bumble is a complete, maintained LE host (SMP, GATT
/// client and server, every transport: TCP, serial, USB dongles); writing one in Swift would
/// duplicate it for no gain in what is tested, since the code under test is the core, and the H4
/// tap still records every HCI packet of the real stack.
///
/// `@unchecked Sendable`: no lock; `socket`, `buffer` and `socketsRemoved` are used only on the thread
/// that made it (a live host makes it in its synchronous `run()` and uses it there alone); the stderr
/// pipe's handler, on Foundation's thread, touches only the ``OutputTail``.
public final class BLEBridge: @unchecked Sendable {
    // One thread uses an instance (the live host's loop); no locking.

    /// The bridge process.
    public let process: Process
    /// The bridge's socket (`--listen unix:PATH`).
    public let socketPath: String
    private let sockets: PrivateSocketDirectory
    private var socketsRemoved = false
    private var socket: Int32 = -1
    private var buffer: [UInt8] = []

    /// Starts the bridge with `python3 script --hci transport --listen unix:PATH` (PATH in a
    /// private folder made for it), waits for its `READY` line (at most `startTimeout`), connects,
    /// and checks that the bridge itself answered.
    public init(python: String = "python3", script: String, transport: String, extraArguments: [String] = [],
                stderrPath: String? = nil, startTimeout: Duration = .seconds(30)) throws(LiveHostError) {
        let sockets: PrivateSocketDirectory
        do throws(LiveCaptureError) {
            sockets = try PrivateSocketDirectory()
        } catch {
            throw LiveHostError.bridge("cannot make a private folder for the bridge's socket: \(error)")
        }
        let socketPath = sockets.socketPath("bridge.sock")
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [python, script, "--hci", transport, "--listen", "unix:\(socketPath)"] + extraArguments
        let stdout = Pipe()
        process.standardOutput = stdout
        // The bridge's stderr says why it failed (a refused connection to the transport, a missing
        // module): kept, so a bridge that exits before READY is reported with its own words.
        let stderrTail = OutputTail()
        if let stderrPath {
            guard FileManager.default.createFile(atPath: stderrPath, contents: nil) else {
                Self.remove(sockets)
                throw LiveHostError.bridge("cannot create the bridge log \(stderrPath); check the folder exists and is writable")
            }
            process.standardError = FileHandle(forWritingAtPath: stderrPath)
        } else {
            // Passed on to this process's stderr as it comes, as when it was inherited, and its tail kept.
            let stderr = Pipe()
            process.standardError = stderr
            stderr.fileHandleForReading.readabilityHandler = { handle in
                let data = handle.availableData
                if data.isEmpty { handle.readabilityHandler = nil } else { FileHandle.standardError.write(data) }
                stderrTail.append(data)
            }
        }
        do {
            try process.run()
        } catch {
            Self.remove(sockets)
            throw LiveHostError.bridge("cannot start \(python) \(script): \(error.localizedDescription). Is python3 installed, with Bumble (`./CI/test` installs it)?")
        }
        self.process = process
        self.sockets = sockets
        self.socketPath = socketPath
        // Read the READY line on this thread, bounded by a poll timeout.
        let fd = stdout.fileHandleForReading.fileDescriptor
        var line: [UInt8] = []
        let deadline = ContinuousClock.now + startTimeout
        var ready = false
        var stdoutEnded = false
        while !ready {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { break }
            var pfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ms = Int32(min(1000, max(1, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000)))
            guard poll(&pfd, 1, ms) >= 0 else { continue }
            if pfd.revents == 0 { if !process.isRunning { stdoutEnded = true; break } else { continue } }
            var byte: UInt8 = 0
            let n = read(fd, &byte, 1)
            if n <= 0 { stdoutEnded = true; break }
            if byte == 0x0A {
                ready = String(decoding: line, as: UTF8.self).hasPrefix("READY ")
                line = []
            } else {
                line.append(byte)
            }
        }
        guard ready else {
            // Its stdout ended or the time is up. A bridge that closed its stdout is exiting: give it
            // a moment to finish, so its status and last words can be reported.
            if stdoutEnded {
                let exitDeadline = ContinuousClock.now + .seconds(2)
                while process.isRunning, ContinuousClock.now < exitDeadline { usleep(10_000) }
            }
            let log = stderrPath.map { "; its log is \($0)" } ?? ""
            guard !process.isRunning else {
                process.terminate()
                removeSockets()
                throw LiveHostError.bridge("the BLE bridge (\(script) --hci \(transport)) did not say READY within \(startTimeout)"
                    + log + ". Check that the controller is reachable at \(transport).")
            }
            removeSockets()
            let said = stderrPath.map { Self.lastLines(ofFile: $0) } ?? stderrTail.lastLines(waitingForEnd: .seconds(2))
            let status = process.terminationReason == .uncaughtSignal ? "was killed by signal \(process.terminationStatus)" : "exited with status \(process.terminationStatus)"
            throw LiveHostError.bridge("the BLE bridge (\(script) --hci \(transport)) \(status) before it was ready"
                + (said.isEmpty ? " without a word on stderr" : ": \(said)") + log
                + ". Check that the controller is reachable at \(transport) and that the bridge runs (python3 with Bumble)")
        }
        do throws(LiveHostError) {
            socket = try Self.connect(socketPath, expecting: process.processIdentifier)
        } catch {
            process.terminate()
            removeSockets()
            throw error
        }
    }

    /// Connects to the bridge's socket and checks that the process on the other end is the bridge
    /// (`pid`): the socket's folder is private, this makes sure of it.
    private static func connect(_ path: String, expecting pid: Int32) throws(LiveHostError) -> Int32 {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw LiveHostError.bridge("the bridge's socket path \(path) is too long for a Unix socket; set TMPDIR to a short folder such as /tmp")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        let s = SystemCalls.socket(family: AF_UNIX, type: SystemCalls.streamSocket)
        guard s >= 0 else { throw LiveHostError.bridge("socket(AF_UNIX): \(String(cString: strerror(errno)))") }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { SystemCalls.connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            SystemCalls.close(s)
            throw LiveHostError.bridge("cannot connect to the BLE bridge on unix:\(path): \(reason)")
        }
        if let peer = SystemCalls.peerCredentials(s), let peerPID = peer.pid, peerPID != pid {
            SystemCalls.close(s)
            throw LiveHostError.bridge("the process on unix:\(path) is pid \(peerPID), not the bridge Tether started (pid \(pid)); "
                + "something else listens in Tether's private folder: check which process that is")
        }
        return s
    }

    /// Removes the bridge's socket folder once (`shutdown`, a failed start and `deinit` may all ask).
    private func removeSockets() {
        guard !socketsRemoved else { return }
        socketsRemoved = true
        Self.remove(sockets)
    }

    /// Removes the bridge's socket folder; a failure is said on stderr, since the run's outcome
    /// does not depend on it but the user may want the folder gone.
    private static func remove(_ sockets: PrivateSocketDirectory) {
        do throws(LiveCaptureError) {
            try sockets.remove()
        } catch {
            FileHandle.standardError.write(Data("tether: note: \(error)\n".utf8))
        }
    }

    /// The socket, for `poll`.
    public var fileDescriptor: Int32 { socket }

    /// Sends one command object as a line.
    public func send(_ members: [String: TraceValue]) throws(LiveHostError) {
        let bytes = Array((JSONLiteral.text(.object(members)) + "\n").utf8)
        var offset = 0
        while offset < bytes.count {
            // A bridge that has died must give the error below, not a SIGPIPE that ends the host.
            let n = bytes[offset...].withUnsafeBytes { SystemCalls.sendNoSignal(socket, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw LiveHostError.bridge("the BLE bridge closed its socket (\(String(cString: strerror(errno)))); see its log")
            }
            offset += n
        }
    }

    /// Reads what is available without blocking and returns the complete lines as objects.
    /// A line that is not a JSON object is returned as `{"ev": "bad_line", "text": …}`.
    /// - Returns: `nil` when the bridge closed the socket.
    public func readAvailable() -> [[String: TraceValue]]? {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if n == 0 { return nil }
        if n < 0 { return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? [] : nil }
        buffer += chunk[0..<n]
        var out: [[String: TraceValue]] = []
        while let newline = buffer.firstIndex(of: 0x0A) {
            let line = Array(buffer[..<newline])
            buffer.removeSubrange(...newline)
            guard !line.isEmpty else { continue }
            do throws(TraceFormatError) {
                out.append(try JSONLiteral.parseObject(line, label: "bridge line"))
            } catch {
                out.append(["ev": .string("bad_line"), "text": .string(String(decoding: line, as: UTF8.self))])
            }
        }
        return out
    }

    /// Waits up to `timeout` (at most a second) for the bridge, then returns the complete lines it
    /// sent (none when it stayed quiet); `nil` when it closed its socket. The one place a live host
    /// waits on its bridge.
    public func lines(waitingAtMost timeout: Duration) -> [[String: TraceValue]]? {
        var pfd = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        let ms = timeout <= .zero ? 0 : Int32(min(1000, timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000 + 1))
        _ = poll(&pfd, 1, ms)
        guard pfd.revents != 0 else { return [] }
        return readAvailable()
    }

    /// Waits (at most `limit`) until the bridge reports its controller up (`{"ev":"bluetooth"}`),
    /// giving every line, that one included, to `handle` in order.
    public func waitForBluetooth(within limit: Duration = .seconds(15), transport: String,
                                 handle: ([String: TraceValue]) throws(LiveHostError) -> Void) throws(LiveHostError) {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            guard let lines = lines(waitingAtMost: .milliseconds(200)) else {
                throw LiveHostError.bridge("the BLE bridge exited before its controller was up")
            }
            for line in lines { try handle(line) }
            if lines.contains(where: { $0["ev"] == .string("bluetooth") }) { return }
        }
        throw LiveHostError.bridge("the BLE bridge's controller did not come up within \(limit) (transport \(transport))")
    }

    /// Asks the bridge to quit, waits up to two seconds, then terminates it.
    public func shutdown() {
        try? send(["op": .string("quit")]) // the bridge may already be gone; terminating below covers it
        if socket >= 0 { close(socket); socket = -1 }
        let deadline = ContinuousClock.now + .seconds(2)
        while process.isRunning && ContinuousClock.now < deadline { usleep(20_000) }
        if process.isRunning { process.terminate() }
        removeSockets()
    }

    deinit {
        if socket >= 0 { close(socket) }
        removeSockets()
    }

    /// The last few non-empty lines of a bridge log, joined with ` | `. A log that cannot be read
    /// only makes the message shorter: the message names the log's path as well.
    static func lastLines(ofFile path: String) -> String {
        guard let handle = FileHandle(forReadingAtPath: path) else { return "" }
        defer { try? handle.close() } // read-only: closing cannot lose anything
        let size = (try? handle.seekToEnd()) ?? 0
        try? handle.seek(toOffset: size > OutputTail.limit ? size - UInt64(OutputTail.limit) : 0)
        let data = (try? handle.readToEnd()) ?? Data()
        return OutputTail.lastLines(of: [UInt8](data))
    }
}

/// The last bytes a process wrote to a pipe (at most ``limit``), filled from the pipe's
/// readability handler and read once the process has exited.
///
/// `@unchecked Sendable`: `bytes` and `ended` are read and written under `lock` only: the pipe's
/// handler writes them on Foundation's thread while the host's thread reads them.
final class OutputTail: @unchecked Sendable {
    // The handler runs on Foundation's thread, the reader on the host's: one lock guards both.
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var ended = false
    /// How much is kept: enough for a traceback's last lines.
    static let limit = 4096

    /// Adds what the pipe gave; empty data is its end.
    func append(_ data: Data) {
        lock.lock()
        defer { lock.unlock() }
        if data.isEmpty { ended = true; return }
        bytes += data
        if bytes.count > Self.limit { bytes.removeFirst(bytes.count - Self.limit) }
    }

    /// The last lines, once the pipe ended (waiting at most `limit` for its end, which comes
    /// just after the process exits).
    func lastLines(waitingForEnd limit: Duration) -> String {
        let deadline = ContinuousClock.now + limit
        while true {
            lock.lock()
            let (done, kept) = (ended, bytes)
            lock.unlock()
            if done || ContinuousClock.now >= deadline { return Self.lastLines(of: kept) }
            usleep(10_000)
        }
    }

    /// The last three non-empty lines of `bytes`, joined with ` | `.
    static func lastLines(of bytes: [UInt8]) -> String {
        let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return lines.suffix(3).joined(separator: " | ")
    }
}
