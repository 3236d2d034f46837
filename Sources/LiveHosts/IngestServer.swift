import Foundation
import IngestCore
import NIOCore
import NIOPosix

/// What an ``IngestServer`` has seen so far, for a status line and for the end-of-run report.
public struct IngestServerStatus: Sendable, Hashable, CustomStringConvertible {
    /// The core's running totals (datagrams, accepted, rejections by reason, data points, streams…).
    public var counters: IngestCounters
    /// Chunks the sink kept.
    public var chunksStored: Int
    /// Data points in the chunks the sink kept.
    public var dataPointsStored: Int
    /// Chunks the sink refused and the server still holds (retried with the next chunk and on drain).
    public var chunksPending: Int
    /// The sink's last refusal, if any.
    public var lastStoreError: String?
    /// Socket errors the channels reported (reading went on).
    public var socketErrors: Int

    /// Streams started and not yet ended.
    public var streamsOpen: Int { counters.streamsStarted - counters.streamsEnded }

    /// A one-line summary: `datagrams 1203 · points 7200 stored 7200 · rejected 2 (not_json 1, oversize 1) · streams 1`.
    public var description: String {
        var line = "datagrams \(counters.datagrams) · points \(counters.dataPoints) stored \(dataPointsStored)"
        let rejected = counters.rejected
        if rejected > 0 {
            let reasons = counters.rejectedByReason.sorted { $0.key.rawValue < $1.key.rawValue }
                .map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
            line += " · rejected \(rejected) (\(reasons))"
        } else {
            line += " · rejected 0"
        }
        line += " · streams \(streamsOpen)"
        if chunksPending > 0 { line += " · UNSTORED chunks \(chunksPending)" }
        return line
    }
}

/// IngestCore on real UDP sockets: Motion's plugin port, bound on `127.0.0.1` and `[::1]`.
///
/// Both channels live on one event loop, so the core (a value type) is only ever touched there.
/// Time is the injected clock's elapsed time since ``start()``; after each datagram or timer the
/// server arms a wake-up at the core's next deadline, waited for on the same clock and handled on
/// the loop. Chunks go to the sink as soon as the core
/// makes them. ``stop()`` drains: the channels close, `finish` flushes every stream, the remaining
/// chunks are stored, the sink is closed.
public final class IngestServer: @unchecked Sendable {
    // Thread-safety: `core`, `pending`, `timer*`, `lastNow`, `elapsed` and `sleepUntil` are touched only on
    // `loop` (asserted); `published`, `phase`, `channels`, `notices` and `waiters` are guarded by
    // `lock`.

    /// Where and how the server listens.
    public struct Configuration: Sendable, Hashable {
        /// UDP port; 0 picks a free one (read it back from ``IngestServer/port``).
        public var port: Int
        /// The IPv4 address to bind.
        public var ipv4Host: String
        /// The IPv6 address to bind too, on the same port; `nil` for IPv4 only. A failure to bind it
        /// is a notice, not an error.
        public var ipv6Host: String?
        /// The core's limits and timers.
        public var core: IngestConfiguration
        /// Datagrams read per system call (`recvmmsg`).
        public var vectorReadMessageCount: Int
        /// Bytes kept of each datagram read. Above the core's 9216-byte limit, so an oversize
        /// datagram is still seen as oversize (a truncated one would look like broken JSON).
        public var readBytesPerDatagram: Int
        /// Requested `SO_RCVBUF`; the kernel may cap it at `net.core.rmem_max`.
        public var receiveBufferBytes: Int

        /// Defaults: port 12345 on 127.0.0.1 and ::1, 64 datagrams per read, 16 KiB each, 8 MiB buffer.
        public init(
            port: Int = 12345, ipv4Host: String = "127.0.0.1", ipv6Host: String? = "::1",
            core: IngestConfiguration = .init(), vectorReadMessageCount: Int = 64,
            readBytesPerDatagram: Int = 16_384, receiveBufferBytes: Int = 8 << 20
        ) {
            self.port = port
            self.ipv4Host = ipv4Host
            self.ipv6Host = ipv6Host
            self.core = core
            self.vectorReadMessageCount = vectorReadMessageCount
            self.readBytesPerDatagram = readBytesPerDatagram
            self.receiveBufferBytes = receiveBufferBytes
        }
    }

    private enum Phase { case idle, running, stopping, stopped }

    /// The configuration the server was made with.
    public let configuration: Configuration
    private let sink: any IngestSink
    private let clock: any Clock<Duration>
    private let eventHandler: (@Sendable (IngestEvent, Duration) -> Void)?
    private let group: MultiThreadedEventLoopGroup
    private let loop: any EventLoop

    // Loop-confined.
    private var core: IngestCore
    private var pending: [IngestChunk] = []
    private var timer: Task<Void, Never>?
    private var timerDeadline: Duration?
    private var timerGeneration = 0
    private var lastNow: Duration = .zero
    private var elapsed: (@Sendable () -> Duration)?
    private var sleepUntil: (@Sendable (Duration) async throws -> Void)?

    // Lock-guarded.
    private let lock = NSLock()
    private var published: IngestServerStatus
    private var phase: Phase = .idle
    private var channels: [any Channel] = []
    private var boundPort: Int?
    private var noticeList: [String] = []
    private var waiters: [CheckedContinuation<Result<IngestServerStatus, any Error>, Never>] = []
    private var outcome: Result<IngestServerStatus, any Error>?

    /// A server that will hand chunks to `sink`, measuring time on `clock` (a `ContinuousClock` in
    /// live use). `eventHandler`, if given, sees every core event on the event loop (for logging).
    public init(
        configuration: Configuration = .init(), sink: any IngestSink, clock: any Clock<Duration> = ContinuousClock(),
        eventHandler: (@Sendable (IngestEvent, Duration) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.sink = sink
        self.clock = clock
        self.eventHandler = eventHandler
        self.core = IngestCore(configuration: configuration.core)
        self.published = IngestServerStatus(counters: .init(), chunksStored: 0, dataPointsStored: 0, chunksPending: 0, lastStoreError: nil, socketErrors: 0)
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.loop = group.next()
    }

    /// The bound UDP port, once ``start()`` returned.
    public var port: Int? { lock.withLock { boundPort } }

    /// Things the user should know that did not stop the server (no IPv6 loopback, a smaller
    /// receive buffer than asked).
    public var notices: [String] { lock.withLock { noticeList } }

    /// The latest status; safe from any thread.
    public var status: IngestServerStatus { lock.withLock { published } }

    /// Binds the sockets and starts the clock. Returns the addresses bound (`127.0.0.1:12345`, `[::1]:12345`).
    /// - Throws: ``LiveHostError`` when the IPv4 socket cannot be bound (port in use, bad address).
    @discardableResult
    public func start() async throws -> [String] {
        try lock.withLock {
            guard phase == .idle else {
                throw LiveHostError(target: "ingest server", step: "start", detail: "already started", hint: "Create a new IngestServer to listen again.")
            }
            phase = .running
        }
        let clock = self.clock
        try await loop.submit {
            let timing = Self.timing(clock)
            self.elapsed = timing.elapsed
            self.sleepUntil = timing.sleepUntil
        }.get()

        let perRead = max(1, configuration.vectorReadMessageCount)
        // No SO_REUSEADDR: on Linux it lets a second UDP socket share the port and take the
        // datagrams, so a second server would silently starve the first instead of failing.
        let bootstrap = DatagramBootstrap(group: loop)
            .channelOption(ChannelOptions.socketOption(.so_rcvbuf), value: configuration.receiveBufferBytes)
            .channelOption(ChannelOptions.datagramVectorReadMessageCount, value: perRead)
            // With vector reads NIO splits one buffer evenly between the messages of a read.
            .channelOption(ChannelOptions.recvAllocator, value: FixedSizeRecvByteBufferAllocator(capacity: perRead * max(configuration.readBytesPerDatagram, configuration.core.maxDatagramBytes + 1)))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(IngestDatagramHandler(server: self))
                }
            }

        let v4Target = "\(configuration.ipv4Host):\(configuration.port)"
        let v4: any Channel
        do {
            v4 = try await bootstrap.bind(host: configuration.ipv4Host, port: configuration.port).get()
        } catch {
            lock.withLock { phase = .stopped }
            try? await group.shutdownGracefully()
            throw LiveHostError(
                target: v4Target, step: "bind UDP", detail: "\(error)",
                hint: "Is another ingest server (or Motion simulator) already on this port? Choose another with --port.")
        }
        let port = v4.localAddress?.port ?? configuration.port
        var bound = ["\(configuration.ipv4Host):\(port)"]
        var channels: [any Channel] = [v4]
        var notices: [String] = []
        if let host6 = configuration.ipv6Host {
            do {
                let v6 = try await bootstrap.bind(host: host6, port: port).get()
                channels.append(v6)
                bound.append("[\(host6)]:\(port)")
            } catch {
                notices.append("[\(host6)]:\(port): IPv6 loopback unavailable (\(error)); listening on IPv4 only")
            }
        }
        for channel in channels {
            if let actual = try? await channel.getOption(ChannelOptions.socketOption(.so_rcvbuf)).get(),
                actual < configuration.receiveBufferBytes
            {
                notices.append(
                    "SO_RCVBUF is \(actual) bytes, less than the \(configuration.receiveBufferBytes) asked; "
                        + "raise net.core.rmem_max for long bursts")
                break
            }
        }
        let stoppedMeanwhile = lock.withLock { () -> Bool in
            self.channels = channels
            self.boundPort = port
            self.noticeList += notices
            return phase != .running
        }
        if stoppedMeanwhile {
            // stop() came while binding and drained without these channels: close them here.
            for channel in channels { try? await channel.close() }
            throw LiveHostError(target: v4Target, step: "start", detail: "stopped while starting", hint: "Nothing to do: the server was asked to stop.")
        }
        return bound
    }

    /// Starts (if not started) and returns when ``stop()`` has drained the server.
    /// - Throws: what ``start()`` or the drain threw.
    public func run() async throws {
        if lock.withLock({ phase == .idle }) { try await start() }
        let result = await withCheckedContinuation { continuation in
            lock.withLock {
                if let outcome { continuation.resume(returning: outcome) } else { waiters.append(continuation) }
            }
        }
        _ = try result.get()
    }

    /// Closes the sockets, finishes the core, stores every remaining chunk and closes the sink.
    /// Safe to call more than once; later calls return the first outcome.
    /// - Throws: ``LiveHostError`` when chunks could not be stored (the status says how many).
    @discardableResult
    public func stop() async throws -> IngestServerStatus {
        let (shouldDrain, neverStarted, channels) = lock.withLock { () -> (Bool, Bool, [any Channel]) in
            switch phase {
            case .running:
                phase = .stopping
                return (true, false, self.channels)
            case .idle:
                phase = .stopped
                outcome = .success(published)
                return (false, true, [])
            case .stopping, .stopped:
                return (false, false, [])
            }
        }
        if neverStarted { try? await group.shutdownGracefully() }
        if !shouldDrain {
            let result = await withCheckedContinuation { continuation in
                lock.withLock {
                    if let outcome { continuation.resume(returning: outcome) } else if phase == .stopped {
                        continuation.resume(returning: .success(published))
                    } else {
                        waiters.append(continuation)
                    }
                }
            }
            return try result.get()
        }

        for channel in channels {
            do {
                try await channel.close()
            } catch ChannelError.alreadyClosed {
                // Closed already (for example by an error); nothing left to read from it.
            }
        }
        let result: Result<IngestServerStatus, any Error>
        do {
            result = .success(try await loop.submit { try self.drain() }.get())
        } catch {
            result = .failure(error)
        }
        try? await group.shutdownGracefully()
        let waiting = lock.withLock { () -> [CheckedContinuation<Result<IngestServerStatus, any Error>, Never>] in
            phase = .stopped
            outcome = result
            defer { waiters = [] }
            return waiters
        }
        for waiter in waiting { waiter.resume(returning: result) }
        return try result.get()
    }

    // MARK: On the loop

    fileprivate func receive(_ envelope: AddressedEnvelope<ByteBuffer>) {
        loop.preconditionInEventLoop()
        let remote = envelope.remoteAddress
        let source = DatagramSource(address: remote.ipAddress ?? "\(remote)", port: UInt16(clamping: remote.port ?? 0))
        let now = currentTime()
        let events = envelope.data.withUnsafeReadableBytes { core.receive($0, from: source, now: now) }
        handle(events, now: now)
        reschedule()
    }

    fileprivate func socketError(_ error: any Error) {
        loop.preconditionInEventLoop()
        lock.withLock { published.socketErrors += 1 }
    }

    private func currentTime() -> Duration {
        // The core requires time never to go backwards, whatever the injected clock does.
        let now = max(elapsed?() ?? .zero, lastNow)
        lastNow = now
        return now
    }

    private func handle(_ events: [IngestEvent], now: Duration) {
        for event in events {
            if case .chunkReady(let chunk) = event { pending.append(chunk) }
            eventHandler?(event, now)
        }
        storePending()
        publish()
    }

    /// Hands held chunks to the sink in order; stops at the first refusal and keeps the rest.
    private func storePending() {
        var stored = 0
        var points = 0
        var failure: String?
        while let chunk = pending.first {
            do {
                try sink.accept(chunk)
            } catch {
                failure = "\(error)"
                break
            }
            pending.removeFirst()
            stored += 1
            points += chunk.dataPoints.count
        }
        lock.withLock {
            published.chunksStored += stored
            published.dataPointsStored += points
            if let failure { published.lastStoreError = failure }
        }
    }

    private func publish() {
        let counters = core.counters
        let pendingCount = pending.count
        lock.withLock {
            published.counters = counters
            published.chunksPending = pendingCount
        }
    }

    /// Arms one wake-up at the core's next deadline. The wait runs on the injected clock (so a
    /// test clock drives the timers too); the timeout itself is handled on the loop.
    private func reschedule() {
        guard let deadline = core.nextDeadline else {
            cancelTimer()
            return
        }
        if timer != nil, timerDeadline == deadline { return }
        cancelTimer()
        timerGeneration &+= 1
        let generation = timerGeneration
        timerDeadline = deadline
        guard let sleepUntil else { return }
        let loop = self.loop
        timer = Task {
            do {
                try await sleepUntil(deadline)
            } catch {
                return  // Cancelled: a newer deadline replaced this one, or the server stopped.
            }
            // Once stopping began the drain finishes everything, and the loop may soon shut down.
            guard self.lock.withLock({ self.phase == .running }) else { return }
            loop.execute { self.timerFired(generation: generation) }
        }
    }

    private func cancelTimer() {
        timer?.cancel()
        timer = nil
        timerDeadline = nil
    }

    private func timerFired(generation: Int) {
        guard generation == timerGeneration, lock.withLock({ phase == .running }) else { return }
        timer = nil
        timerDeadline = nil
        let now = currentTime()
        handle(core.handleTimeout(now: now), now: now)
        reschedule()
    }

    private func drain() throws -> IngestServerStatus {
        loop.preconditionInEventLoop()
        cancelTimer()
        timerGeneration &+= 1
        let now = currentTime()
        handle(core.finish(now: now), now: now)
        var closeError: (any Error)?
        do { try sink.close() } catch { closeError = error }
        let status = lock.withLock { published }
        if !pending.isEmpty {
            let points = pending.reduce(0) { $0 + $1.dataPoints.count }
            throw LiveHostError(
                target: "ingest sink", step: "store chunks on shutdown",
                detail: "\(pending.count) chunks (\(points) data points) were not stored: \(status.lastStoreError ?? "unknown error")",
                hint: "Check the store's disk space and permissions; the datagrams are in the capture if one was recorded.")
        }
        if let closeError {
            throw LiveHostError(target: "ingest sink", step: "close", detail: "\(closeError)", hint: "Check the store's disk space and permissions.")
        }
        return status
    }

    // MARK: Helpers

    /// Opens the clock existential once: elapsed time since now, and a sleep until an elapsed time.
    private static func timing<C: Clock>(_ clock: C) -> (elapsed: @Sendable () -> Duration, sleepUntil: @Sendable (Duration) async throws -> Void)
    where C.Duration == Duration {
        let start = clock.now
        return (
            { start.duration(to: clock.now) },
            { offset in try await clock.sleep(until: start.advanced(by: offset), tolerance: nil) }
        )
    }
}

/// Passes each datagram of one channel to its server, on the server's loop.
private final class IngestDatagramHandler: ChannelInboundHandler {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    private let server: IngestServer

    init(server: IngestServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        server.receive(unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A UDP socket error (an ICMP unreachable, say) concerns one datagram; keep reading.
        server.socketError(error)
    }
}
