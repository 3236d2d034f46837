import IngestIntegration
import LiveHosts
import Foundation
import IngestCore

/// Hands chunks to an ``IngestSink`` on a thread of its own, so a slow commit never stalls the
/// event loop that drains the sockets (a stalled loop lets the kernel's receive buffer overflow,
/// and UDP has no backpressure to slow the sender instead).
///
/// Chunks wait in an unbounded in-memory queue: nothing accepted is ever dropped. Whatever has
/// queued up when the thread comes round is stored in one ``IngestSink/accept(_:)-([IngestChunk])``
/// call (one transaction for the SQLite store), up to ``maxBatch`` chunks, so a writer that falls
/// behind catches up with fewer, larger commits. A refused batch is held and tried again with the
/// next chunks and once more on ``finish(closingSink:)``.
///
/// `@unchecked Sendable`: every `var` but `held` is read and written under `condition` only; `held`
/// belongs to the writer thread (or, if it never started, to the one ``finish(closingSink:)`` call).
final class ChunkWriter: @unchecked Sendable {
    // Thread-safety: `queue`, `finishing`, `closesSink`, `completion`, `progress` and `thread` are
    // guarded by `condition`; `held` is touched only by the writer thread (or, if it never
    // started, by the one caller of `finish`).

    /// What the writer reports after each batch, from its thread.
    struct Progress {
        var storedChunks: Int
        var storedPoints: Int
        /// Chunks refused and held for a retry (after this batch).
        var heldChunks: Int
        /// Chunks queued behind this batch.
        var queuedChunks: Int
        var failure: String?
    }

    /// How a finished writer left things.
    struct Outcome: Sendable {
        var unstoredChunks: Int
        var unstoredPoints: Int
        var closeError: String?
    }

    /// Chunks per sink call: bounds one transaction when the writer is far behind.
    static let maxBatch = 256

    private let sink: any IngestSink
    private var progress: (@Sendable (Progress) -> Void)?
    private let condition = NSCondition()
    private var queue: [IngestChunk] = []
    private var finishing = false
    private var closesSink = true
    private var completion: (@Sendable (Outcome) -> Void)?
    private var held: [IngestChunk] = []
    private var thread: Thread?

    init(sink: any IngestSink) {
        self.sink = sink
    }

    /// Sets who hears about each batch (before ``start()``).
    func setProgressHandler(_ handler: @escaping @Sendable (Progress) -> Void) {
        condition.withLock { progress = handler }
    }

    /// Starts the writer thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "tether-ingest-writer"
        condition.withLock { self.thread = thread }
        thread.start()
    }

    /// Queues chunks for the writer; returns the queue's length afterwards. Never blocks on the sink.
    @discardableResult
    func enqueue(_ chunks: [IngestChunk]) -> Int {
        condition.lock()
        defer { condition.unlock() }
        queue.append(contentsOf: chunks)
        condition.signal()
        return queue.count
    }

    /// Stores everything queued (one last try for held chunks), closes the sink if asked, ends the
    /// thread and returns what could not be stored. Nothing may be queued after this call.
    func finish(closingSink: Bool) async -> Outcome {
        await withCheckedContinuation { continuation in
            condition.lock()
            finishing = true
            closesSink = closingSink
            completion = { continuation.resume(returning: $0) }
            let started = thread != nil
            condition.signal()
            condition.unlock()
            if !started {
                // Never started: store on the caller's thread instead.
                run()
            }
        }
    }

    private func run() {
        while true {
            condition.lock()
            while queue.isEmpty && !finishing { condition.wait() }
            let take = min(queue.count, Self.maxBatch)
            let batch = Array(queue.prefix(take))
            queue.removeFirst(take)
            let remaining = queue.count
            let last = finishing && remaining == 0
            condition.unlock()

            if held.isEmpty { held = batch } else { held.append(contentsOf: batch) }
            if !held.isEmpty {
                var report = Progress(storedChunks: 0, storedPoints: 0, heldChunks: 0, queuedChunks: remaining)
                do {
                    try sink.accept(held)
                    report.storedChunks = held.count
                    report.storedPoints = held.reduce(0) { $0 + $1.dataPointCount }
                    held.removeAll(keepingCapacity: true)
                } catch {
                    report.failure = "\(error)"
                    report.heldChunks = held.count
                }
                condition.withLock { progress }?(report)
            }
            if last { break }
        }
        var outcome = Outcome(unstoredChunks: held.count, unstoredPoints: held.reduce(0) { $0 + $1.dataPointCount })
        let (closes, completion) = condition.withLock { (closesSink, self.completion) }
        if closes {
            do { try sink.close() } catch { outcome.closeError = "\(error)" }
        }
        completion?(outcome)
    }
}
