import IngestIntegration
import LiveHosts
import IngestCore

/// The datagrams of one read from a socket, copied out of the channel's buffer into one array so
/// the socket's loop can hand them to the core's loop as a unit (one task per read, not per
/// datagram) and reuse nothing the channel still owns.
struct DatagramBatch: Sendable {
    /// Every datagram's bytes, one after another.
    private var bytes: [UInt8] = []
    /// Where each datagram ends in `bytes`.
    private var ends: [Int] = []
    /// Each datagram's sender; a stream's datagrams share one source's strings.
    private var sources: [DatagramSource] = []

    /// An empty batch with room for about as much as `previous` held.
    init(sizedLike previous: DatagramBatch? = nil) {
        guard let previous else { return }
        bytes.reserveCapacity(previous.bytes.count)
        ends.reserveCapacity(previous.ends.count)
        sources.reserveCapacity(previous.sources.count)
    }

    /// Number of datagrams.
    var count: Int { ends.count }
    var isEmpty: Bool { ends.isEmpty }

    /// Adds a copy of `datagram`, sent by `source`.
    mutating func append(_ datagram: UnsafeRawBufferPointer, from source: DatagramSource) {
        datagram.withMemoryRebound(to: UInt8.self) { bytes.append(contentsOf: $0) }
        ends.append(bytes.count)
        sources.append(source)
    }

    /// Calls `body` with each datagram and its sender, in the order they were read.
    func forEach(_ body: (UnsafeRawBufferPointer, DatagramSource) -> Void) {
        bytes.withUnsafeBytes { raw in
            var start = 0
            for index in ends.indices {
                body(UnsafeRawBufferPointer(rebasing: raw[start..<ends[index]]), sources[index])
                start = ends[index]
            }
        }
    }
}
