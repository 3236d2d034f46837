#if canImport(CBluetooth)
import CBluetooth  // its <sys/socket.h> owns the socket declarations within this package (BlueZ: Linux only)
#endif
import CaptureKit
import CaptureSet
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A proxy between an HCI host stack and its controller speaking H4, recording every packet.
///
/// The host connects to the tap's ``endpoint`` — TCP on a listen address, or a Unix socket in a
/// private directory when Tether starts the host itself; the tap connects to the controller
/// (over TCP, as Bumble serves its virtual controllers, or on a serial device). Bytes are forwarded
/// both ways unchanged and at once: each read is written to the other side before anything else
/// happens (TCP_NODELAY on every socket), and a copy of the stream is then cut into packets by an
/// ``H4Framer`` per direction. Each complete packet goes, with its direction and the time its last
/// byte arrived, to the ``onPacket(_:)`` handler and to the recorder given to
/// ``record(into:input:)`` as a `LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR` (201) frame.
///
/// - A framing error (bytes that are not H4) stops framing that direction for the rest of the
///   host connection, with a notice naming the direction and offset; forwarding goes on.
/// - When the host or the controller closes, the tap closes the other side, notes it, and waits
///   for the next host, for which it connects to the controller again. One host at a time: a
///   second host is refused (closed at once) with a notice.
/// - A tap that serves exactly one host (``Options/exactlyOneHost``, and always when it listens
///   beyond loopback, ``listensBeyondLoopback``) refuses every connection after the first, also
///   once the first has gone: nothing a later peer sends is forwarded or recorded.
/// - On a Unix socket the tap refuses a peer of another user (`SO_PEERCRED`) with a notice, and
///   with ``Options/onlyChildProcesses`` any process this one did not start.
/// - The recorder is flushed at least every ``Options/idleInterval`` plus its flush interval, also
///   when no traffic flows.
///
/// One thread serves both directions with `poll(2)`, and a packet is recorded before it is
/// forwarded, so packets are recorded in the order they were read and nothing the receiving side
/// does in answer (a reply, a host's own recorded record) is recorded before it. When a side does not
/// drain, the tap stops reading the side that feeds it rather than buffer without bound.
///
/// Lifecycle: `init` → optionally ``record(into:input:)``, ``onPacket(_:)``, ``onNotice(_:)`` →
/// ``open()`` (binds, connects the controller; optional, `start` does it) → ``start()`` → ``stop()``.
/// Stop the tap before finishing the recorder it writes to.
///
/// `@unchecked Sendable`: the "Guarded by" `var`s are used under `lock` or `finishedCondition` only.
/// The loop thread's are set by `open()` before `start()` makes the thread, then used by it alone,
/// except `wakeWrite`, which `stop()` writes to under `lock`, the lock the thread closes it under.
public final class H4Tap: @unchecked Sendable {
    // Thread-safety: members under "loop thread" are touched only by the thread `start()` makes
    // (or, before it exists and after it ended, by `open`/`stop` holding `lock`); everything else
    // is guarded by `lock`. `finishedCondition` signals the loop thread's end.

    /// Tuning.
    public struct Options: Sendable, Hashable {
        /// The longest packet accepted by the framers (indicator, header and payload).
        public var maximumPacketLength: Int
        /// The longest the loop waits without calling the recorder's `flushIfDue()`.
        public var idleInterval: Duration
        /// How long connecting to a TCP controller may take.
        public var connectTimeout: Duration
        /// Serve the first host only and refuse every later connection (a live host's own bridge
        /// is the one host there should ever be). A tap listening beyond loopback does so anyway.
        public var exactlyOneHost: Bool
        /// On a Unix socket, serve only a child process of this one (the bridge a live host
        /// started): any other process, even of this user and even one that connects first, is
        /// refused. Linux only (the parent comes from `/proc`); elsewhere the check is not made.
        public var onlyChildProcesses: Bool

        /// Defaults: any length the headers allow, 100 ms, 5 s, one host at a time (the next after
        /// it leaves), any process of this user on a Unix socket.
        public init(maximumPacketLength: Int = H4Framer.largestPacketLength, idleInterval: Duration = .milliseconds(100), connectTimeout: Duration = .seconds(5),
                    exactlyOneHost: Bool = false, onlyChildProcesses: Bool = false) {
            self.maximumPacketLength = maximumPacketLength
            self.idleInterval = idleInterval
            self.connectTimeout = connectTimeout
            self.exactlyOneHost = exactlyOneHost
            self.onlyChildProcesses = onlyChildProcesses
        }
    }

    /// Where the host stack connects.
    public let endpoint: H4HostEndpoint
    /// The TCP address the host stack connects to (port 0: see the port ``open()`` returns), or
    /// `nil` for a Unix socket.
    public var listenAddress: H4ListenAddress? {
        if case .tcp(let address) = endpoint { return address }
        return nil
    }
    /// Where the controller is.
    public let controller: H4ControllerAddress
    /// The options given.
    public let options: Options
    /// The interface block for the recording: link type 201, `if_name` `h4tap:<controller>`.
    public let interface: CaptureInterface

    /// The input to give ``Recorder`` (role `ble-hci`); pass its index to ``record(into:input:)``.
    public var recorderInput: RecorderInput { RecorderInput(interface: interface, role: .bleHCI) }

    private let lock = NSLock()
    private let finishedCondition = NSCondition()

    // Guarded by `lock`.
    private var opened = false
    private var threadStarted = false
    private var stopRequested = false
    private var boundPort: UInt16 = 0
    private var beyondLoopback = false
    private var stats = H4TapStatistics()
    private var noticeList: [String] = []
    private var droppedNotices = 0
    private var packetHandler: (@Sendable (H4TapPacket) -> Void)?
    private var noticeHandler: (@Sendable (String) -> Void)?
    private var recorder: Recorder?
    private var recorderInputIndex = 0
    private var recordFailure: LiveCaptureError?
    private var connectedHost: String?
    private var loopThread: pthread_t?
    // Guarded by `finishedCondition`.
    private var loopFinished = false

    // Loop thread (see above).
    private var wakeRead: Int32 = -1
    private var wakeWrite: Int32 = -1
    private var listener: Int32 = -1
    private var spareController: TapDescriptor?
    private var session: Session?
    private var frameBuffer: [UInt8] = []
    /// The first host served, once there was one (for a tap serving exactly one host).
    private var firstHost: String?
    /// The socket file to remove when the tap closes (a Unix endpoint it bound).
    private var boundSocketPath: String?

    /// One host connection and the controller connection serving it.
    private struct Session {
        var host: TapDescriptor
        var controller: TapDescriptor
        var framers: [H4Framer]
        /// Bytes read but not yet written, per direction (index = raw value): host→controller, controller→host.
        var pending: [[UInt8]] = [[], []]

        func source(_ direction: H4Direction) -> TapDescriptor { direction == .sent ? host : controller }
        func destination(_ direction: H4Direction) -> TapDescriptor { direction == .sent ? controller : host }
    }

    /// A tap for `controller` that will listen on `listen`.
    public convenience init(listen: H4ListenAddress, controller: H4ControllerAddress, options: Options = Options()) {
        self.init(endpoint: .tcp(listen), controller: controller, options: options)
    }

    /// A tap for `controller` whose host stack connects at `endpoint`.
    public init(endpoint: H4HostEndpoint, controller: H4ControllerAddress, options: Options = Options()) {
        self.endpoint = endpoint
        self.controller = controller
        self.options = options
        // A private socket's path is a random temporary name: it says nothing to a reader of the set.
        let hostSide: String
        switch endpoint {
        case .tcp(let address): hostSide = address.description
        case .unixSocket: hostSide = "a private Unix socket"
        }
        self.interface = CaptureInterface(
            linkType: .bluetoothHCIH4WithPHDR, name: "h4tap:\(controller)",
            description: "H4 tap: host stack on \(hostSide) ↔ controller \(controller)",
            snapLength: UInt32(4 + min(max(options.maximumPacketLength, 3), H4Framer.largestPacketLength)), nanosecondsPerTick: 1)
    }

    /// A tap listening on `listen` (`HOST:PORT`, e.g. `127.0.0.1:0`).
    /// - Throws: ``LiveCaptureError`` (`.misuse`) when `listen` is not `HOST:PORT`.
    public convenience init(listen: String, controller: H4ControllerAddress, options: Options = Options()) throws(LiveCaptureError) {
        self.init(listen: try H4ListenAddress(parsing: listen), controller: controller, options: options)
    }

    deinit {
        stop()
    }

    /// Writes every packet into `recorder` as input `input` (its index among the recorder's
    /// inputs, whose interface should be ``recorderInput``), and calls its `flushIfDue()` when
    /// idle. Start the recorder before packets can arrive. If a write fails, recording stops with a
    /// notice (``recordingFailure``) and forwarding goes on.
    public func record(into recorder: Recorder, input: Int) {
        lock.withLock {
            self.recorder = recorder
            self.recorderInputIndex = input
        }
    }

    /// Calls `handler` on the tap's thread with every complete packet, before it is recorded. The
    /// handler must return quickly (the tap forwards nothing while it runs) and must not call ``stop()``
    /// and wait; its packet's bytes are valid only during the call.
    public func onPacket(_ handler: @escaping @Sendable (H4TapPacket) -> Void) {
        lock.withLock { packetHandler = handler }
    }

    /// Calls `handler` with each notice (host connected or gone, controller gone, framing error),
    /// on the tap's thread, as it happens. Notices are also kept in ``notices``.
    public func onNotice(_ handler: @escaping @Sendable (String) -> Void) {
        lock.withLock { noticeHandler = handler }
    }

    /// Counts so far.
    public var statistics: H4TapStatistics { lock.withLock { stats } }

    /// Every notice so far, oldest first (at most 1000 are kept).
    public var notices: [String] {
        lock.withLock { noticeList + (droppedNotices > 0 ? ["\(droppedNotices) more notices were not kept"] : []) }
    }

    /// The error that stopped recording, if one did (forwarding went on).
    public var recordingFailure: LiveCaptureError? { lock.withLock { recordFailure } }

    /// The connected host's address, or `nil` while none is connected.
    public var hostPeer: String? { lock.withLock { connectedHost } }

    /// The port the host stack connects to (after ``open()``; 0 before, and for a Unix socket).
    public var port: UInt16 { lock.withLock { boundPort } }

    /// Whether the tap listens on an address other hosts can reach (after ``open()``): a TCP
    /// address that is not loopback, such as 0.0.0.0. Such a tap serves exactly one host, the
    /// first to connect, whoever that is; say so to the user (``exposureWarning``).
    public var listensBeyondLoopback: Bool { lock.withLock { beyondLoopback } }

    /// A warning for the user when the tap listens beyond loopback (after ``open()``), naming the
    /// address; `nil` otherwise.
    public var exposureWarning: String? {
        let (exposed, port) = lock.withLock { (beyondLoopback, boundPort) }
        guard exposed, let address = listenAddress else { return nil }
        let bound = H4ListenAddress(host: address.host, port: port)
        return "warning: the H4 tap listens on \(bound), beyond loopback: any host on the network that can reach this machine can connect "
            + "to it and talk to the controller \(controller). The tap serves exactly one host, the first to connect; later connections are "
            + "refused and reported, and nothing they send is recorded. Listen on 127.0.0.1 unless the host stack runs on another machine."
    }

    /// Serves exactly one host: asked for, or forced by listening beyond loopback.
    private var servesOneHost: Bool { options.exactlyOneHost || lock.withLock { beyondLoopback } }

    /// Connects to the controller (so a wrong address fails here, before anything is recorded) and
    /// starts listening for the host; connections wait until ``start()``. Calling it again does nothing.
    /// - Returns: the port the host stack should connect to.
    /// - Throws: ``LiveCaptureError``: the controller cannot be reached, the address cannot be
    ///   listened on, or (`.misuse`) the tap was stopped.
    @discardableResult
    public func open() throws(LiveCaptureError) -> UInt16 {
        try lock.locked { () throws(LiveCaptureError) -> UInt16 in
            if opened { return boundPort }
            guard !stopRequested else {
                throw LiveCaptureError(kind: .misuse, source: interface.name ?? "h4tap", step: "open", detail: "the tap was stopped", hint: "Make a new H4Tap.")
            }
            let source = interface.name ?? "h4tap"
            let controllerDescriptor = try TapIO.open(controller, source: source, timeoutMilliseconds: Self.milliseconds(options.connectTimeout))
            let (listenFD, port, loopback): (Int32, UInt16, Bool)
            do throws(LiveCaptureError) {
                switch endpoint {
                case .tcp(let address):
                    (listenFD, port, loopback) = try TapIO.listen(address, source: source)
                case .unixSocket(let path):
                    (listenFD, port, loopback) = (try TapIO.listenUnix(path, source: source), 0, true)
                    boundSocketPath = path
                }
            } catch {
                _ = SystemCalls.close(controllerDescriptor.fd)
                throw error
            }
            var pipeEnds: [Int32] = [-1, -1]
            guard pipe(&pipeEnds) == 0 else {
                let code = errno
                _ = SystemCalls.close(controllerDescriptor.fd)
                _ = SystemCalls.close(listenFD)
                throw LiveCaptureError(kind: .system, source: source, step: "pipe", detail: TapIO.errorText(code), hint: "The process may be out of file descriptors; raise `ulimit -n`.")
            }
            for end in pipeEnds {
                _ = fcntl(end, F_SETFD, FD_CLOEXEC)
                TapIO.setNonBlocking(end)
            }
            wakeRead = pipeEnds[0]
            wakeWrite = pipeEnds[1]
            listener = listenFD
            spareController = controllerDescriptor
            boundPort = port
            beyondLoopback = !loopback
            opened = true
            return port
        }
    }

    /// Opens (if ``open()`` was not called) and starts forwarding on a thread of its own.
    /// - Returns: the port the host stack should connect to.
    /// - Throws: what ``open()`` throws; (`.misuse`) when started twice or after ``stop()``.
    @discardableResult
    public func start() throws(LiveCaptureError) -> UInt16 {
        let port = try open()
        try lock.locked { () throws(LiveCaptureError) in
            guard !threadStarted, !stopRequested else {
                throw LiveCaptureError(
                    kind: .misuse, source: interface.name ?? "h4tap", step: "start",
                    detail: stopRequested ? "the tap was stopped" : "the tap was already started", hint: "Make a new H4Tap for another run.")
            }
            threadStarted = true
        }
        let thread = Thread { [self] in
            lock.withLock { loopThread = pthread_self() }
            runLoop()
            finishedCondition.withLock {
                loopFinished = true
                finishedCondition.broadcast()
            }
        }
        thread.name = "tether-h4tap"
        thread.start()
        return port
    }

    /// Stops forwarding, closes every connection and the listening socket, and returns once the
    /// tap's thread has ended (at once when called on that thread). Safe from any thread, any
    /// number of times; the packet and recorder callbacks are not called after it returns.
    public func stop() {
        let (running, onLoopThread) = lock.withLock { () -> (Bool, Bool) in
            stopRequested = true
            let onLoop = loopThread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
            if threadStarted, wakeWrite >= 0 {
                // Under the lock: the loop closes the pipe holding it, so the descriptor is still ours.
                var byte: UInt8 = 1
                _ = SystemCalls.write(wakeWrite, &byte, 1)
            }
            return (threadStarted, onLoop)
        }
        if running {
            guard !onLoopThread else { return }
            finishedCondition.withLock {
                while !loopFinished { finishedCondition.wait() }
            }
        } else {
            lock.withLock { closeEverything() }
        }
    }

    // MARK: - The loop thread

    private static func milliseconds(_ duration: Duration) -> Int32 {
        let (seconds, attoseconds) = duration.components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    private func runLoop() {
        frameBuffer = [UInt8](repeating: 0, count: 4 + H4Framer.largestPacketLength)
        var readBuffer = [UInt8](repeating: 0, count: 65_536)
        let clock = ContinuousClock()
        var lastIdle = clock.now
        let idleMilliseconds = max(1, Self.milliseconds(options.idleInterval))
        var entries: [pollfd] = []
        while !lock.withLock({ stopRequested }) {
            entries.removeAll(keepingCapacity: true)
            entries.append(pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0))
            entries.append(pollfd(fd: listener, events: Int16(POLLIN), revents: 0))
            if let session {
                entries.append(pollfd(fd: session.host.fd, events: Self.events(reading: session.pending[0].isEmpty, writing: !session.pending[1].isEmpty), revents: 0))
                entries.append(pollfd(fd: session.controller.fd, events: Self.events(reading: session.pending[1].isEmpty, writing: !session.pending[0].isEmpty), revents: 0))
            }
            let ready = poll(&entries, nfds_t(entries.count), idleMilliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                notice("h4tap: poll failed: \(TapIO.errorText(errno)); the tap stopped forwarding")
                break
            }
            if ready == 0 || clock.now - lastIdle >= options.idleInterval {
                idle()
                lastIdle = clock.now
            }
            if entries[0].revents != 0 {
                var scratch = [UInt8](repeating: 0, count: 64)
                _ = SystemCalls.read(wakeRead, &scratch, scratch.count)
                continue
            }
            if entries.count == 4 {
                service(entries[2].revents, side: .sent, buffer: &readBuffer)
                if session != nil { service(entries[3].revents, side: .received, buffer: &readBuffer) }
            }
            if entries[1].revents != 0 { acceptHosts() }
        }
        if let session { end(session, reason: "the tap stopped") }
        lock.withLock { closeEverything() }
    }

    private static func events(reading: Bool, writing: Bool) -> Int16 {
        Int16((reading ? POLLIN : 0) | (writing ? POLLOUT : 0))
    }

    /// Handles the poll result of one session descriptor: `side` `.sent` is the host's descriptor
    /// (it reads host→controller bytes and drains controller→host ones), `.received` the controller's.
    private func service(_ revents: Int16, side: H4Direction, buffer: inout [UInt8]) {
        guard revents != 0, let current = session else { return }
        let inbound = side
        let outbound: H4Direction = side == .sent ? .received : .sent
        let descriptor = current.source(inbound)
        if !current.pending[Int(outbound.rawValue)].isEmpty, revents & Int16(POLLOUT | POLLERR | POLLHUP) != 0 {
            guard drain(outbound) else { return }
        }
        guard let current = session else { return }
        if current.pending[Int(inbound.rawValue)].isEmpty, revents & Int16(POLLIN | POLLERR | POLLHUP) != 0 {
            readAndForward(inbound, buffer: &buffer)
        } else if revents & Int16(POLLERR | POLLHUP) != 0 {
            end(current, reason: "\(label(inbound)) \(descriptor.peer) hung up")
        }
    }

    private func label(_ source: H4Direction) -> String { source == .sent ? "the host" : "the controller" }

    /// Writes what is pending in `direction`; `false` when the session ended on a write error.
    private func drain(_ direction: H4Direction) -> Bool {
        guard var current = session else { return false }
        session = nil  // mutate the only copy: no copy-on-write of the buffers
        let index = Int(direction.rawValue)
        let destination = current.destination(direction)
        let (written, code) = current.pending[index].withUnsafeBytes { Self.write(destination, $0) }
        if written < 0 {
            end(current, reason: "writing to \(label(direction == .sent ? .received : .sent)) \(destination.peer) failed: \(TapIO.errorText(code))")
            return false
        }
        current.pending[index].removeFirst(written)
        session = current
        return true
    }

    /// Writes as much as the descriptor takes now: the count written (0 when it would block), or
    /// -1 and the errno.
    private static func write(_ destination: TapDescriptor, _ bytes: UnsafeRawBufferPointer) -> (Int, Int32) {
        var offset = 0
        while offset < bytes.count {
            let pointer = bytes.baseAddress! + offset
            let count = bytes.count - offset
            let written = destination.isSocket ? SystemCalls.sendNoSignal(destination.fd, pointer, count) : SystemCalls.write(destination.fd, pointer, count)
            if written > 0 { offset += written; continue }
            let code = errno
            if written < 0 && code == EINTR { continue }
            if written < 0 && (code == EAGAIN || code == EWOULDBLOCK) { break }
            return (-1, written == 0 ? EPIPE : code)
        }
        return (offset, 0)
    }

    private func readAndForward(_ direction: H4Direction, buffer: inout [UInt8]) {
        guard var current = session else { return }
        session = nil  // mutate the only copy: no copy-on-write of the framers' partial packets
        let source = current.source(direction)
        let destination = current.destination(direction)
        let count = buffer.withUnsafeMutableBytes { SystemCalls.read(source.fd, $0.baseAddress, $0.count) }
        if count < 0 {
            let code = errno
            if code == EAGAIN || code == EWOULDBLOCK || code == EINTR {
                session = current
                return
            }
            end(current, reason: "reading from \(label(direction)) \(source.peer) failed: \(TapIO.errorText(code))")
            return
        }
        if count == 0 {
            end(current, reason: "\(label(direction)) \(source.peer) closed the connection")
            return
        }
        let timestamp = TapIO.wallClockNanoseconds()
        var writeFailure: Int32?
        buffer.withUnsafeBytes { raw in
            let chunk = UnsafeRawBufferPointer(rebasing: raw[0..<count])
            // Record first, then forward: a host that reacts to these bytes and records its own
            // frame (an API call on another interface of the same recorder) must find them in the
            // file already, or the capture shows an effect before its cause. Framing and the
            // recorder's buffered write cost microseconds (CI/bench/h4-tap-latency).
            frame(chunk, direction: direction, timestamp: timestamp, session: &current)
            let (written, code) = Self.write(destination, chunk)
            if written < 0 {
                writeFailure = code
            } else if written < count {
                current.pending[Int(direction.rawValue)].append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[written...]))
            }
            lock.withLock {
                if direction == .sent { stats.sentBytes += count } else { stats.receivedBytes += count }
            }
        }
        if let writeFailure {
            end(current, reason: "writing to \(label(direction == .sent ? .received : .sent)) \(destination.peer) failed: \(TapIO.errorText(writeFailure))")
        } else {
            session = current
        }
    }

    private func frame(_ chunk: UnsafeRawBufferPointer, direction: H4Direction, timestamp: Int64, session current: inout Session) {
        let index = Int(direction.rawValue)
        guard current.framers[index].failure == nil else { return }
        let failure = current.framers[index].feed(chunk) { packet in
            deliver(packet, direction: direction, timestamp: timestamp)
        }
        if let failure {
            lock.withLock { stats.framingErrors += 1 }
            notice("\(interface.name ?? "h4tap"): framing error in the \(failure); recording of \(direction) stops until the host reconnects, forwarding goes on")
        }
    }

    private func deliver(_ packet: UnsafeRawBufferPointer, direction: H4Direction, timestamp: Int64) {
        let (handler, recorder, input) = lock.withLock { () -> ((@Sendable (H4TapPacket) -> Void)?, Recorder?, Int) in
            if direction == .sent { stats.sentPackets += 1 } else { stats.receivedPackets += 1 }
            return (packetHandler, self.recorder, recorderInputIndex)
        }
        handler?(H4TapPacket(direction: direction, timestampNs: timestamp, bytes: packet))
        guard let recorder else { return }
        let length = 4 + packet.count
        let result = frameBuffer.withUnsafeMutableBytes { out -> LiveCaptureError? in
            // LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR: the direction as a big-endian u32, then the packet.
            out.storeBytes(of: direction.rawValue.bigEndian, toByteOffset: 0, as: UInt32.self)
            UnsafeMutableRawBufferPointer(rebasing: out[4..<length]).copyMemory(from: packet)
            do throws(LiveCaptureError) {
                try recorder.write(LiveFrameView(timestampNs: timestamp, originalLength: length, data: UnsafeRawBufferPointer(rebasing: out[0..<length])), input: input)
                return nil
            } catch {
                return error
            }
        }
        if let result { recordingFailed(result) }
    }

    private func idle() {
        guard let recorder = lock.withLock({ recorder }) else { return }
        do throws(LiveCaptureError) {
            try recorder.flushIfDue()
        } catch {
            recordingFailed(error)
        }
    }

    private func recordingFailed(_ error: LiveCaptureError) {
        let first = lock.withLock { () -> Bool in
            guard recorder != nil else { return false }
            recorder = nil
            recordFailure = error
            return true
        }
        if first { notice("\(interface.name ?? "h4tap"): recording stopped: \(error) Forwarding goes on.") }
    }

    private func acceptHosts() {
        while true {
            let (accepted, code) = TapIO.accept(listener)
            guard let host = accepted else {
                if code == EAGAIN || code == EWOULDBLOCK || code == EINTR { return }
                if code == ECONNABORTED || code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                    notice("\(interface.name ?? "h4tap"): accepting a host failed: \(TapIO.errorText(code))")
                }
                return
            }
            if let uid = host.peerUID, uid != geteuid() {
                refuse(host, because: "it belongs to user \(uid), not to this process's user \(geteuid())")
                continue
            }
            if options.onlyChildProcesses, let pid = host.peerPID {
                // Fails closed: a peer whose parent cannot be read is refused too.
                let parent = TapIO.parentProcess(of: pid)
                if parent != getpid() {
                    refuse(host, because: "process \(pid) was not started by this process (\(parent.map { "its parent is \($0)" } ?? "its parent cannot be read from /proc/\(pid)/stat"))")
                    continue
                }
            }
            if servesOneHost, let first = firstHost {
                refuse(host, because: "the tap serves exactly one host and \(first) connected first")
                continue
            }
            if let current = session {
                refuse(host, because: "host \(current.host.peer) is connected and the tap serves one host at a time")
                continue
            }
            let controllerDescriptor: TapDescriptor
            if let spare = spareController, Self.stillOpen(spare) {
                controllerDescriptor = spare
                spareController = nil
            } else {
                if let spare = spareController { _ = SystemCalls.close(spare.fd) }
                spareController = nil
                do throws(LiveCaptureError) {
                    controllerDescriptor = try TapIO.open(controller, source: interface.name ?? "h4tap", timeoutMilliseconds: Self.milliseconds(options.connectTimeout))
                } catch {
                    notice("\(interface.name ?? "h4tap"): host \(host.peer) connected but the controller could not be reached (\(error)); closed the host connection, waiting for the next host")
                    _ = SystemCalls.close(host.fd)
                    continue
                }
            }
            firstHost = firstHost ?? host.peer
            let limit = options.maximumPacketLength
            session = Session(host: host, controller: controllerDescriptor, framers: [H4Framer(direction: .sent, maximumPacketLength: limit), H4Framer(direction: .received, maximumPacketLength: limit)])
            lock.withLock {
                stats.hostConnections += 1
                connectedHost = host.peer
            }
            notice("\(interface.name ?? "h4tap"): host \(host.peer) connected; forwarding to the controller \(controller)")
        }
    }

    /// Closes a host connection before reading anything from it, counts and notes it.
    private func refuse(_ host: TapDescriptor, because reason: String) {
        lock.withLock { stats.refusedHosts += 1 }
        notice("\(interface.name ?? "h4tap"): refused host \(host.peer): \(reason); nothing it sent was forwarded or recorded")
        _ = SystemCalls.close(host.fd)
    }

    /// A descriptor whose peer has not closed or failed (data waiting to be read is fine).
    private static func stillOpen(_ descriptor: TapDescriptor) -> Bool {
        // POLLRDHUP (Linux): the peer shut down its writing side. Elsewhere it is 0, and such a
        // peer is found by the read of 0 bytes that follows.
        let readHangUp = SystemCalls.pollReadHangUp
        var entry = pollfd(fd: descriptor.fd, events: Int16(POLLIN) | readHangUp, revents: 0)
        guard poll(&entry, 1, 0) >= 0 else { return false }
        return entry.revents & (Int16(POLLERR | POLLHUP | POLLNVAL) | readHangUp) == 0
    }

    /// Closes both sides of `ended` and notes why, what was lost, and what happens next.
    private func end(_ ended: Session, reason: String) {
        session = nil
        lock.withLock { connectedHost = nil }
        var text = "\(interface.name ?? "h4tap"): \(reason); closed the connections to the host \(ended.host.peer) and the controller \(controller)"
        for direction in H4Direction.allCases {
            let framer = ended.framers[Int(direction.rawValue)]
            let unsent = ended.pending[Int(direction.rawValue)].count
            if unsent > 0 { text += "; \(unsent) \(direction) bytes could not be delivered" }
            if framer.failure == nil, framer.hasPartialPacket { text += "; an unfinished \(direction) packet was not recorded" }
        }
        let stopping = lock.withLock { stopRequested }
        if !stopping {
            if servesOneHost {
                text += "; the tap serves exactly one host and accepts no other"
            } else if case .tcp(let address) = endpoint {
                text += "; waiting for the next host on \(H4ListenAddress(host: address.host, port: lock.withLock { boundPort }))"
            } else {
                text += "; waiting for the next host on \(endpoint)"
            }
        }
        // Noted before closing, so whoever sees a connection close finds the reason already noted.
        notice(text)
        _ = SystemCalls.close(ended.host.fd)
        _ = SystemCalls.close(ended.controller.fd)
    }

    private func notice(_ text: String) {
        let handler = lock.withLock { () -> (@Sendable (String) -> Void)? in
            if noticeList.count < 1000 { noticeList.append(text) } else { droppedNotices += 1 }
            return noticeHandler
        }
        handler?(text)
    }

    /// Closes every descriptor. Called holding `lock`, once the loop thread is gone or never ran.
    private func closeEverything() {
        if let session {
            _ = SystemCalls.close(session.host.fd)
            _ = SystemCalls.close(session.controller.fd)
            self.session = nil
        }
        if let spare = spareController { _ = SystemCalls.close(spare.fd) }
        spareController = nil
        for fd in [listener, wakeRead, wakeWrite] where fd >= 0 { _ = SystemCalls.close(fd) }
        // The socket file would outlive the socket; a stale one makes the next bind fail.
        if let path = boundSocketPath { _ = unlink(path) }
        boundSocketPath = nil
        listener = -1
        wakeRead = -1
        wakeWrite = -1
        connectedHost = nil
    }
}
