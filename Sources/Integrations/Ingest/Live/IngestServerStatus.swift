import IngestIntegration
import LiveHosts
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
    /// Chunks made by the core and waiting for the writer thread to hand them to the sink; more
    /// than a few means the store is slower than the traffic (the queue is memory, not dropped).
    public var chunksQueued: Int = 0
    /// The most chunks that were waiting for the writer at once during this run.
    public var chunksQueuedPeak: Int = 0
    /// The sink's last refusal, if any.
    public var lastStoreError: String?
    /// Failed reads of the sockets (reading went on).
    public var socketErrors: Int
    /// Datagrams the kernel dropped on the server's sockets before the server read them (the
    /// receive buffer was full): lost before Tether saw them, so in no other count here. `nil`
    /// where the system keeps no such count (see ``SocketReceiveDrops``). Sampled a few times a
    /// second and once more as the server stops.
    public var kernelDrops: Int? = nil
    /// Times the sockets stopped reading because the core had too many reads still to parse
    /// (``IngestServer/Configuration/maxBatchesInFlight``); meanwhile the kernel's receive buffer
    /// holds the traffic, and what overflows it is counted in ``kernelDrops``.
    public var readPauses: Int = 0

    /// Streams started and not yet ended.
    public var streamsOpen: Int { counters.streamsStarted - counters.streamsEnded }

    /// A one-line summary: `datagrams 1203 · kernel drops 0 · points 7200 stored 7200 · rejected 2
    /// (not_json 1, oversize 1) · streams 1` (`kernel drops` only where the kernel counts them).
    public var description: String {
        var line = "datagrams \(counters.datagrams)"
        if let kernelDrops { line += " · kernel drops \(kernelDrops)" }
        line += " · points \(counters.dataPoints) stored \(dataPointsStored)"
        let rejected = counters.rejected
        if rejected > 0 {
            let reasons = counters.rejectedByReason.sorted { $0.key.rawValue < $1.key.rawValue }
                .map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")
            line += " · rejected \(rejected) (\(reasons))"
        } else {
            line += " · rejected 0"
        }
        line += " · streams \(streamsOpen)"
        if chunksQueued > 0 { line += " · store queue \(chunksQueued)" }
        if readPauses > 0 { line += " · read pauses \(readPauses)" }
        if chunksPending > 0 { line += " · UNSTORED chunks \(chunksPending)" }
        return line
    }
}
