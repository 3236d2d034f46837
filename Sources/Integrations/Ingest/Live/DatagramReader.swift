import IngestIntegration
import LiveHosts
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CDatagramBatch
import Foundation
import CaptureSet
import IngestCore

/// Reads the ingest server's sockets on a thread of its own: `poll`, then up to
/// `readsPerWakeup` batched reads (`recvmmsg` on Linux) of each ready socket into one read
/// buffer, whose datagrams are gathered into one ``DatagramBatch`` per wake-up for `deliver`.
///
/// SwiftNIO's datagram channel made an envelope per datagram and formatted each sender's address
/// as text; here a sender is compared by its bytes and turned into text only when it changes, and
/// a datagram is copied once, from the read buffer into the batch.
///
/// `@unchecked Sendable`: `stopping`, `finished` and `hasFinished` are used under `lock` only; the
/// read buffers are locals of the reading thread, the `let`s never change after `init`, and `wake()`
/// only writes a byte to the wake-up pipe.
final class DatagramReader: @unchecked Sendable {
    // Thread-safety: `stopping`, `finished` and `hasFinished` are guarded by `lock`; the read
    // buffers, the batch and the sender caches belong to the reading thread; the wake pipe is
    // written from anywhere.

    struct Limits {
        /// Datagrams per read call (at most `TETHER_BATCH_MAX`).
        var messagesPerRead: Int
        /// Bytes kept of each datagram; a longer one is cut (the core then refuses it as oversize).
        var bytesPerDatagram: Int
        /// Read calls per socket per wake-up.
        var readsPerWakeup: Int
    }

    private let sockets: [BoundUDPSocket]
    private let limits: Limits
    /// Takes each wake-up's datagrams.
    private let deliver: @Sendable (DatagramBatch) -> Void
    /// Asked before each wait: true keeps the sockets unread until ``wake()``.
    private let isPaused: @Sendable () -> Bool
    /// Hears of each failed read; reading goes on.
    private let readFailed: @Sendable () -> Void
    private let wakeRead: Int32
    private let wakeWrite: Int32
    private let lock = NSLock()
    private var stopping = false
    private var finished: CheckedContinuation<Void, Never>?
    private var hasFinished = false

    /// A reader of `sockets`; nothing is read before ``start()``.
    /// - Throws: ``BoundUDPSocket/Failure`` when the wake-up pipe cannot be made.
    init(sockets: [BoundUDPSocket], limits: Limits, deliver: @escaping @Sendable (DatagramBatch) -> Void,
         isPaused: @escaping @Sendable () -> Bool, readFailed: @escaping @Sendable () -> Void) throws(BoundUDPSocket.Failure) {
        self.sockets = sockets
        self.limits = Limits(messagesPerRead: min(max(1, limits.messagesPerRead), Int(TETHER_BATCH_MAX)),
                             bytesPerDatagram: max(1, limits.bytesPerDatagram), readsPerWakeup: max(1, limits.readsPerWakeup))
        self.deliver = deliver
        self.isPaused = isPaused
        self.readFailed = readFailed
        var ends: [Int32] = [0, 0]
        guard pipe(&ends) == 0 else { throw BoundUDPSocket.Failure(step: "pipe", reason: FileIO.errnoText()) }
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = ends[0]
        wakeWrite = ends[1]
    }

    deinit {
        close(wakeRead)
        close(wakeWrite)
    }

    /// Starts the reading thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "tether-ingest-reader"
        thread.start()
    }

    /// Makes the thread look again (after a pause ends, or to stop).
    func wake() {
        var byte: UInt8 = 1
        // A full pipe already holds a wake-up; nothing is lost by not adding one.
        _ = write(wakeWrite, &byte, 1)
    }

    /// Stops reading and returns once the thread has delivered its last batch and ended.
    func stop() async {
        lock.withLock { stopping = true }
        wake()
        await withCheckedContinuation { continuation in
            let done = lock.withLock { () -> Bool in
                if hasFinished { return true }
                finished = continuation
                return false
            }
            if done { continuation.resume() }
        }
    }

    private func run() {
        let stride = limits.bytesPerDatagram
        let perRead = limits.messagesPerRead
        var buffer = [UInt8](repeating: 0, count: stride * perRead)
        var senders = [sockaddr_storage](repeating: sockaddr_storage(), count: perRead)
        var lengths = [Int](repeating: 0, count: perRead)
        var lastSender = [SenderAddress?](repeating: nil, count: sockets.count)
        var lastSource = [DatagramSource](repeating: DatagramSource(address: "", port: 0), count: sockets.count)
        var batch = DatagramBatch()
        var polled = [pollfd](repeating: pollfd(), count: sockets.count + 1)

        while !lock.withLock({ stopping }) {
            let paused = isPaused()
            polled[0] = pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)
            for (index, socket) in sockets.enumerated() {
                // A paused reader waits on the wake-up pipe alone.
                polled[index + 1] = pollfd(fd: paused ? -1 : socket.descriptor, events: Int16(POLLIN), revents: 0)
            }
            let ready = poll(&polled, nfds_t(polled.count), -1)
            if ready < 0 { continue }  // EINTR: look again
            if polled[0].revents != 0 {
                var sink = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &sink, sink.count) > 0 {}
            }
            if paused { continue }
            for (index, socket) in sockets.enumerated() where polled[index + 1].revents != 0 {
                for _ in 0..<limits.readsPerWakeup {
                    let count = buffer.withUnsafeMutableBufferPointer { bytes in
                        senders.withUnsafeMutableBufferPointer { senders in
                            lengths.withUnsafeMutableBufferPointer { lengths in
                                Int(tether_receive_batch(socket.descriptor, bytes.baseAddress, stride, UInt32(perRead),
                                                         senders.baseAddress, lengths.baseAddress))
                            }
                        }
                    }
                    if count < 0 {
                        readFailed()
                        break
                    }
                    buffer.withUnsafeBytes { bytes in
                        for message in 0..<count {
                            let sender = SenderAddress(senders[message])
                            if lastSender[index].map({ !$0.isSame(as: sender) }) ?? true {
                                lastSender[index] = sender
                                lastSource[index] = sender.source
                            }
                            let start = message * stride
                            batch.append(UnsafeRawBufferPointer(rebasing: bytes[start..<(start + lengths[message])]), from: lastSource[index])
                        }
                    }
                    if count < perRead { break }
                }
            }
            if !batch.isEmpty {
                let full = batch
                batch = DatagramBatch(sizedLike: full)
                deliver(full)
            }
        }
        let continuation = lock.withLock { () -> CheckedContinuation<Void, Never>? in
            hasFinished = true
            defer { finished = nil }
            return finished
        }
        continuation?.resume()
    }
}
