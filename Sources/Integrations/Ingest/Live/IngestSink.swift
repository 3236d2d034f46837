import IngestIntegration
import LiveHosts
import Foundation
import IngestCore
import IngestStore

/// Where an ``IngestServer`` hands its chunks: the durable SQLite store in live use, anything else
/// (an upstream forwarder, a test collector) that can keep a chunk.
///
/// Called from the server's writer thread (never its event loop, so a slow sink does not stall
/// reading), one call at a time, with chunks in the order the core made them.
public protocol IngestSink: AnyObject, Sendable {
    /// Keeps one chunk. A throw means the chunk was not kept: the server holds it and tries again
    /// with the next chunk and when draining, so keeping the same chunk twice must keep it once.
    func accept(_ chunk: IngestChunk) throws
    /// Keeps several chunks, in order; the server calls this with whatever queued up while the
    /// previous call ran. A throw means some may not have been kept: the server holds them all and
    /// tries them all again, so keeping a chunk twice must keep it once. The default calls
    /// ``accept(_:)-(IngestChunk)`` for each; a store should keep them in one transaction.
    func accept(_ chunks: [IngestChunk]) throws
    /// Called once after the last chunk, when the server drains.
    func close() throws
}

extension IngestSink {
    /// Keeps the chunks one at a time, stopping at the first refusal.
    public func accept(_ chunks: [IngestChunk]) throws {
        for chunk in chunks { try accept(chunk) }
    }
}

/// A sink that keeps chunks in memory: for tests, and for serving without a store.
///
/// `@unchecked Sendable`: `kept` and `isClosed` are read and written under `lock` only.
public final class MemoryIngestSink: IngestSink, @unchecked Sendable {
    // Thread-safety: every member is guarded by `lock`; the server calls from its writer thread,
    // readers from anywhere.
    private let lock = NSLock()
    private var kept: [IngestChunk] = []
    private var isClosed = false

    /// An empty sink.
    public init() {}

    public func accept(_ chunk: IngestChunk) throws {
        lock.withLock { kept.append(chunk) }
    }

    public func accept(_ chunks: [IngestChunk]) throws {
        lock.withLock { kept.append(contentsOf: chunks) }
    }

    public func close() throws {
        lock.withLock { isClosed = true }
    }

    /// The chunks kept, in the order they came.
    public var chunks: [IngestChunk] { lock.withLock { kept } }
    /// Every data point kept, in order.
    public var dataPoints: [DataPoint] { lock.withLock { kept.flatMap(\.dataPoints) } }
    /// Whether the server closed the sink.
    public var closed: Bool { lock.withLock { isClosed } }
}

extension SQLiteIngestStore: IngestSink {
    /// Stores the chunk durably; a chunk stored before (a retry) is kept once.
    public func accept(_ chunk: IngestChunk) throws {
        _ = try store(chunk)
    }

    /// Stores the chunks durably in one transaction (all or none); chunks stored before are kept once.
    public func accept(_ chunks: [IngestChunk]) throws {
        _ = try store(chunks)
    }
}
