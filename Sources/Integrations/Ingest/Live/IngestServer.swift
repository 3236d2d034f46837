import IngestIntegration
import LiveHosts
import Foundation
import IngestCore
import NIOCore
import NIOPosix

/// IngestCore on real UDP sockets: Motion's plugin port, bound on `127.0.0.1` and `[::1]`.
///
/// Three threads share the work, so reading, parsing and storing each get a core when there are
/// cores to give. A reader thread (``DatagramReader``) polls the sockets and reads them in batches
/// (`recvmmsg`), copying each wake-up's datagrams into one batch for the core's loop (a SwiftNIO
/// event loop); the core (a value type) is only ever touched there. A core that falls behind makes
/// the reader stop reading (the kernel's receive buffer holds the traffic, and a full one drops
/// what the status reports as kernel drops) rather than queue without bound in memory. Time is the
/// injected clock's elapsed time since ``start()``; after each batch or timer the server arms a
/// wake-up at the core's next deadline: a task NIO schedules on the core's loop with the system's
/// clock, a wait on the injected clock with any other (a test's). Chunks go, as soon as the core
/// makes them, to a writer thread that hands them to the sink in batches: neither the reader nor
/// the core waits for a commit, so storage cannot stall reading. ``stop()`` drains: the reader
/// stops, the batches it read are parsed, the sockets close, `finish` flushes every stream, the
/// writer stores every remaining chunk, the sink is closed.
///
/// `@unchecked Sendable`: the loop-confined `var`s are touched only on `loop` (after `init`), the
/// lock-guarded ones only under `lock`; the `let`s never change after `init`, and `writer` (a
/// ``ChunkWriter``) locks for itself.
public final class IngestServer: @unchecked Sendable {
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
        /// Datagrams read per system call (`recvmmsg`), at most 64.
        public var vectorReadMessageCount: Int
        /// Bytes kept of each datagram read. Above the core's 9216-byte limit, so an oversize
        /// datagram is still seen as oversize (a truncated one would look like broken JSON).
        public var readBytesPerDatagram: Int
        /// Requested `SO_RCVBUF`; the kernel may cap it at `net.core.rmem_max`.
        public var receiveBufferBytes: Int
        /// When the kernel capped the receive buffer, ask again with `SO_RCVBUFFORCE`, which
        /// ignores `net.core.rmem_max` for a process with `CAP_NET_ADMIN` (root): a larger buffer
        /// rides out longer bursts. Without the capability the cap stays and a notice says so.
        public var forceReceiveBuffer: Bool
        /// Datagram reads (each of ``vectorReadMessageCount`` datagrams) per socket per wake-up of the reader.
        public var readsPerWakeup: Int
        /// Chunks waiting for the writer at which the server adds a notice that the store is
        /// falling behind (the chunks are kept in memory, never dropped).
        public var storeQueueWarningChunks: Int
        /// Batches of datagrams (one per wake-up of the reader) read and not yet parsed at which the reader
        /// stops reading until the core's loop has caught up to half as many: what the core has
        /// not parsed yet waits in the kernel's receive buffer, not in memory without bound.
        public var maxBatchesInFlight: Int = 16

        /// Defaults: port 12345 on 127.0.0.1 and ::1, 64 datagrams per read, 16 KiB each, 16
        /// reads per wake-up, a 32 MiB receive buffer (forced past `net.core.rmem_max` when
        /// allowed: at ~2 KiB of kernel memory per small datagram it holds about a quarter second
        /// at 60,000 datagrams/s, enough to ride out the loop being descheduled on a busy
        /// machine), a notice at 1000 chunks waiting for the store.
        public init(
            port: Int = 12345, ipv4Host: String = "127.0.0.1", ipv6Host: String? = "::1",
            core: IngestConfiguration = .init(), vectorReadMessageCount: Int = 64,
            readBytesPerDatagram: Int = 16_384, receiveBufferBytes: Int = 32 << 20,
            forceReceiveBuffer: Bool = true, readsPerWakeup: Int = 16, storeQueueWarningChunks: Int = 1000
        ) {
            self.forceReceiveBuffer = forceReceiveBuffer
            self.readsPerWakeup = readsPerWakeup
            self.storeQueueWarningChunks = storeQueueWarningChunks
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
    /// Where the core, its timers and the hand-over to the writer run.
    private let loop: any EventLoop
    private let writer: ChunkWriter

    // Loop-confined.
    private var core: IngestCore
    /// Chunks the core made during the current batch, handed to the writer at the batch's end.
    private var madeChunks: [IngestChunk] = []
    /// Whether the core's counters changed since they were last published.
    private var unpublished = false
    private var timer: WakeUp?
    private var timerDeadline: Duration?
    private var timerGeneration = 0
    private var lastNow: Duration = .zero
    private var elapsed: (@Sendable () -> Duration)?
    private var sleepUntil: (@Sendable (Duration) async throws -> Void)?
    /// The clock is the system's own: wake-ups are NIO tasks scheduled on the loop. Any other
    /// clock (a test's) is waited on with its own `sleep`, then the loop is entered.
    private var schedulesOnLoop = false

    /// One armed wake-up at the core's next deadline.
    private enum WakeUp {
        case onLoop(Scheduled<Void>)
        case onClock(Task<Void, Never>)

        func cancel() {
            switch self {
            case .onLoop(let scheduled): scheduled.cancel()
            case .onClock(let task): task.cancel()
            }
        }
    }

    // Lock-guarded.
    private let lock = NSLock()
    private var published: IngestServerStatus
    private var phase: Phase = .idle
    private var dropTally = ReceiveDropTally(sockets: 0)
    private var dropSampler: RepeatedTask?
    private var boundPort: Int?
    private var noticeList: [String] = []
    private var waiters: [CheckedContinuation<Result<IngestServerStatus, any Error>, Never>] = []
    private var outcome: Result<IngestServerStatus, any Error>?
    private var batchesInFlight = 0
    private var readingPaused = false
    private var sockets: [BoundUDPSocket] = []
    private var reader: DatagramReader?

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
        // Without a handler nobody looks at single points, so the core leaves their events out.
        self.core = IngestCore(configuration: configuration.core, reportsDataPoints: eventHandler != nil)
        self.published = IngestServerStatus(counters: .init(), chunksStored: 0, dataPointsStored: 0, chunksPending: 0, lastStoreError: nil, socketErrors: 0)
        self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        self.loop = group.next()
        self.writer = ChunkWriter(sink: sink)
        writer.setProgressHandler { [weak self] progress in self?.record(progress) }
    }

    /// The writer's report after each batch, from its thread: `published` stays the one place
    /// the status lives.
    private func record(_ progress: ChunkWriter.Progress) {
        lock.withLock {
            published.chunksStored += progress.storedChunks
            published.dataPointsStored += progress.storedPoints
            published.chunksPending = progress.heldChunks
            published.chunksQueued = progress.queuedChunks
            if let failure = progress.failure { published.lastStoreError = failure }
        }
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
        writer.start()
        let clock = self.clock
        try await loop.submit {
            let timing = Self.timing(clock)
            self.elapsed = timing.elapsed
            self.sleepUntil = timing.sleepUntil
            self.schedulesOnLoop = clock is ContinuousClock || clock is SuspendingClock
        }.get()

        let v4Target = "\(configuration.ipv4Host):\(configuration.port)"
        let v4: BoundUDPSocket
        do throws(BoundUDPSocket.Failure) {
            v4 = try BoundUDPSocket.bind(host: configuration.ipv4Host, port: configuration.port)
        } catch {
            await abandonStart()
            throw LiveHostError(
                target: v4Target, step: "bind UDP", detail: "\(error)",
                hint: "Is another ingest server (or Motion simulator) already on this port? Choose another with --port.")
        }
        let port = v4.port
        var bound = ["\(configuration.ipv4Host):\(port)"]
        var sockets = [v4]
        var notices: [String] = []
        if let host6 = configuration.ipv6Host {
            do throws(BoundUDPSocket.Failure) {
                sockets.append(try BoundUDPSocket.bind(host: host6, port: port))
                bound.append("[\(host6)]:\(port)")
            } catch {
                notices.append("[\(host6)]:\(port): IPv6 loopback unavailable (\(error)); listening on IPv4 only")
            }
        }
        var shortBuffer: Int?
        for socket in sockets {
            let actual = socket.requestReceiveBuffer(configuration.receiveBufferBytes, force: configuration.forceReceiveBuffer)
            if let actual, actual < configuration.receiveBufferBytes { shortBuffer = actual }
        }
        if let actual = shortBuffer {
            notices.append(
                "SO_RCVBUF is \(actual) bytes, less than the \(configuration.receiveBufferBytes) asked; "
                    + "raise net.core.rmem_max (or run as root, which may exceed it) for long bursts")
        }
        let reader: DatagramReader
        do throws(BoundUDPSocket.Failure) {
            reader = try DatagramReader(
                sockets: sockets,
                limits: .init(messagesPerRead: configuration.vectorReadMessageCount,
                              bytesPerDatagram: max(configuration.readBytesPerDatagram, configuration.core.maxDatagramBytes + 1),
                              readsPerWakeup: configuration.readsPerWakeup),
                deliver: { [unowned self] batch in self.deliver(batch) },
                isPaused: { [unowned self] in self.lock.withLock { self.readingPaused } },
                readFailed: { [unowned self] in self.lock.withLock { self.published.socketErrors += 1 } })
        } catch {
            for socket in sockets { socket.close() }
            await abandonStart()
            throw LiveHostError(target: v4Target, step: "start the reader", detail: "\(error)", hint: "The system is out of file descriptors; close some and try again.")
        }
        let stoppedMeanwhile = lock.withLock { () -> Bool in
            guard phase == .running else { return true }
            self.sockets = sockets
            self.reader = reader
            self.dropTally = ReceiveDropTally(sockets: sockets.count)
            if SocketReceiveDrops.isSupported { published.kernelDrops = 0 }
            self.boundPort = port
            self.noticeList += notices
            return false
        }
        if stoppedMeanwhile {
            // stop() came while binding and drained without these sockets: close them here.
            for socket in sockets { socket.close() }
            throw LiveHostError(target: v4Target, step: "start", detail: "stopped while starting", hint: "Nothing to do: the server was asked to stop.")
        }
        reader.start()
        if SocketReceiveDrops.isSupported {
            // NIO's own scheduling on the core's loop: the status line reads `status` four
            // times a second, so the drops are never more than a sample behind it.
            lock.withLock {
                // A stop() that came meanwhile has drained already; nothing left to sample.
                guard phase == .running else { return }
                dropSampler = loop.scheduleRepeatedTask(initialDelay: Self.dropSampleInterval, delay: Self.dropSampleInterval) { _ in
                    self.sampleKernelDrops()
                }
            }
        }
        return bound
    }

    /// Undoes a start that failed before anything was read: the writer ends without closing the
    /// sink (the caller still owns it) and the core's loop shuts down. Not when a ``stop()`` came
    /// meanwhile: it is draining already (writer, sink and loop), and finishing the writer a second
    /// time would wait on a writer thread that has ended, so neither call would return.
    private func abandonStart() async {
        let abandons = lock.withLock { () -> Bool in
            guard phase == .running else { return false }
            phase = .stopped
            return true
        }
        guard abandons else { return }
        _ = await writer.finish(closingSink: false)
        try? await group.shutdownGracefully()
    }

    /// How often the kernel's drop counters are read while serving.
    static let dropSampleInterval: TimeAmount = .milliseconds(250)

    /// Reads every socket's drop counter and publishes the total.
    private func sampleKernelDrops() {
        lock.withLock {
            for (index, socket) in sockets.enumerated() {
                guard let counter = SocketReceiveDrops.count(descriptor: socket.descriptor) else { continue }
                dropTally.record(counter, socket: index)
            }
            published.kernelDrops = dropTally.total
        }
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
        let (shouldDrain, neverStarted, sockets, reader) = lock.withLock { () -> (Bool, Bool, [BoundUDPSocket], DatagramReader?) in
            switch phase {
            case .running:
                phase = .stopping
                return (true, false, self.sockets, self.reader)
            case .idle:
                phase = .stopped
                outcome = .success(published)
                return (false, true, [], nil)
            case .stopping, .stopped:
                return (false, false, [], nil)
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

        // The reader delivers its last batch and ends: every batch it read is then queued on the
        // core's loop, ahead of the drain submitted below.
        await reader?.stop()
        // The last reading of the drop counters, while the sockets still exist (closing them
        // discards their counters); anything dropped after it was dropped while shutting down.
        let sampler = lock.withLock { () -> RepeatedTask? in
            defer { dropSampler = nil }
            return dropSampler
        }
        sampler?.cancel()
        if sampler != nil { sampleKernelDrops() }
        for socket in sockets { socket.close() }
        let result: Result<IngestServerStatus, any Error>
        do {
            try await loop.submit { self.drain() }.get()
            let outcome = await writer.finish(closingSink: true)
            result = .success(try finished(outcome))
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

    // MARK: On the reader's thread

    /// Hands one wake-up's datagrams to the core's loop, and pauses reading when too many
    /// batches wait for the core (the core's loop ends the pause once it has caught up).
    private func deliver(_ batch: DatagramBatch) {
        lock.withLock {
            batchesInFlight += 1
            if !readingPaused, batchesInFlight >= max(1, configuration.maxBatchesInFlight) {
                readingPaused = true
                published.readPauses += 1
            }
        }
        loop.execute { self.receive(batch) }
    }

    // MARK: On the core's loop

    private func receive(_ batch: DatagramBatch) {
        loop.preconditionInEventLoop()
        batch.forEach { datagram, source in
            let now = currentTime()
            core.receive(datagram, from: source, now: now) { event in collect(event, now: now) }
        }
        unpublished = true
        handOver()
        reschedule()
        let resume = lock.withLock { () -> DatagramReader? in
            batchesInFlight -= 1
            guard readingPaused, batchesInFlight <= max(1, configuration.maxBatchesInFlight) / 2 else { return nil }
            readingPaused = false
            return reader
        }
        // The reader asks whether it is paused before each wait, so a wake-up now cannot be missed.
        resume?.wake()
    }

    private func currentTime() -> Duration {
        // The core requires time never to go backwards, whatever the injected clock does.
        let now = max(elapsed?() ?? .zero, lastNow)
        lastNow = now
        return now
    }

    private func collect(_ events: [IngestEvent], now: Duration) {
        for event in events { collect(event, now: now) }
    }

    private func collect(_ event: IngestEvent, now: Duration) {
        if case .chunkReady(let chunk) = event { madeChunks.append(chunk) }
        eventHandler?(event, now)
    }

    /// Queues the chunks made since the last hand-over for the writer and publishes the counters.
    private func handOver() {
        var queued: Int?
        if !madeChunks.isEmpty {
            queued = writer.enqueue(madeChunks)
            madeChunks.removeAll(keepingCapacity: true)
        }
        guard unpublished || queued != nil else { return }
        unpublished = false
        let counters = core.counters
        let warning = max(1, configuration.storeQueueWarningChunks)
        lock.withLock {
            published.counters = counters
            if let queued {
                published.chunksQueued = queued
                if queued > published.chunksQueuedPeak {
                    if published.chunksQueuedPeak < warning, queued >= warning {
                        noticeList.append(
                            "the store is falling behind: \(queued) chunks wait in memory for the writer (none are dropped); "
                                + "check the disk holding the database")
                    }
                    published.chunksQueuedPeak = queued
                }
            }
        }
    }

    /// Arms one wake-up at the core's next deadline: a task NIO schedules on the loop when the
    /// clock is the system's, else a wait on the injected clock (so a test clock drives the
    /// timers too) that then enters the loop. A wake-up that comes early (the two clocks differ by
    /// a little) finds the core with nothing to do and arms the next one.
    private func reschedule() {
        guard let deadline = core.nextDeadline else {
            cancelTimer()
            return
        }
        // A wake-up already armed no later than the deadline stays: when it comes early the core
        // does nothing and the next one is armed then. Re-arming only for an earlier deadline
        // keeps a task per datagram out of the hot path.
        if timer != nil, let armed = timerDeadline, armed <= deadline { return }
        cancelTimer()
        timerGeneration &+= 1
        let generation = timerGeneration
        timerDeadline = deadline
        if schedulesOnLoop {
            let delay = (deadline - currentTime()).clampedNanoseconds
            timer = .onLoop(loop.scheduleTask(in: .nanoseconds(max(0, delay))) {
                self.timerFired(generation: generation)
            })
            return
        }
        guard let sleepUntil else { return }
        let loop = self.loop
        timer = .onClock(Task {
            do {
                try await sleepUntil(deadline)
            } catch {
                return  // Cancelled: a newer deadline replaced this one, or the server stopped.
            }
            // Once stopping began the drain finishes everything, and the loop may soon shut down.
            guard self.lock.withLock({ self.phase == .running }) else { return }
            loop.execute { self.timerFired(generation: generation) }
        })
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
        collect(core.handleTimeout(now: now), now: now)
        unpublished = true
        handOver()
        reschedule()
    }

    /// Flushes every stream and queues the last chunks for the writer (which ``stop()`` then waits for).
    private func drain() {
        loop.preconditionInEventLoop()
        cancelTimer()
        timerGeneration &+= 1
        let now = currentTime()
        collect(core.finish(now: now), now: now)
        unpublished = true
        handOver()
    }

    /// The final status once the writer has stored what it could and closed the sink.
    private func finished(_ outcome: ChunkWriter.Outcome) throws -> IngestServerStatus {
        let status = lock.withLock { () -> IngestServerStatus in
            published.chunksQueued = 0
            published.chunksPending = outcome.unstoredChunks
            return published
        }
        if outcome.unstoredChunks > 0 {
            throw LiveHostError(
                target: "ingest sink", step: "store chunks on shutdown",
                detail: "\(outcome.unstoredChunks) chunks (\(outcome.unstoredPoints) data points) were not stored: \(status.lastStoreError ?? "unknown error")",
                hint: "Check the store's disk space and permissions; the datagrams are in the capture if one was recorded.")
        }
        if let closeError = outcome.closeError {
            throw LiveHostError(target: "ingest sink", step: "close", detail: closeError, hint: "Check the store's disk space and permissions.")
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
