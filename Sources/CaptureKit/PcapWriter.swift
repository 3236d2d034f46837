/// Writes classic pcap with nanosecond timestamps (magic `a1b23c4d`, little-endian), one link
/// type for the whole file: what libpcap-based tools read most easily (benchmarks feed it to
/// `pcap_next_ex`).
public final class PcapWriter {
    private let output: ByteOutput
    /// The file's link type.
    public let linkType: LinkType
    /// Frames written so far.
    public private(set) var frameCount = 0

    /// Creates (or truncates) the file at `path` and writes the global header.
    public init(path: String, linkType: LinkType, snapLength: UInt32 = 262_144) throws(CaptureError) {
        output = try ByteOutput(path: path)
        self.linkType = linkType
        writeHeader(snapLength: snapLength)
    }

    /// A writer that keeps the file in memory; read it with ``bytes``.
    public init(linkType: LinkType, snapLength: UInt32 = 262_144) {
        output = ByteOutput()
        self.linkType = linkType
        writeHeader(snapLength: snapLength)
    }

    /// Everything written so far, for a memory writer; empty for a file writer.
    public var bytes: [UInt8] { output.isMemory ? output.buffer : [] }

    private func writeHeader(snapLength: UInt32) {
        output.u32(0xA1B2_3C4D)
        output.u16(2)
        output.u16(4)
        output.u32(0)
        output.u32(0)
        output.u32(snapLength)
        output.u32(linkType.rawValue)
    }

    /// Writes one record from borrowed bytes, without allocating. Timestamps before 1970 or after
    /// 2106 do not fit pcap's unsigned 32-bit seconds and are a `.misuse` error.
    public func write(timestampNs: Int64, originalLength: Int, data: UnsafeRawBufferPointer) throws(CaptureError) {
        try output.checkOpen()
        let seconds = timestampNs / 1_000_000_000
        guard timestampNs >= 0, seconds <= Int64(UInt32.max) else {
            throw CaptureError(kind: .misuse, file: output.name, offset: output.offset, expected: "a timestamp between 1970 and 2106",
                               found: "\(timestampNs) ns", hint: "Write pcapng instead, which has 64-bit timestamps.")
        }
        guard data.count <= maxRecordLength else {
            throw CaptureError(kind: .misuse, file: output.name, offset: output.offset, expected: "a frame of at most \(maxRecordLength) bytes",
                               found: "\(data.count) bytes", hint: "Split the data.")
        }
        output.u32(UInt32(seconds))
        output.u32(UInt32(timestampNs % 1_000_000_000))
        output.u32(UInt32(data.count))
        output.u32(UInt32(clamping: max(originalLength, data.count)))
        output.bytes(data)
        frameCount &+= 1
        try output.flushIfFull()
    }

    /// Writes one frame (its interface index, comments and options are not representable and are ignored).
    public func write(_ frame: CaptureFrame) throws(CaptureError) {
        try withBorrowedBytes(frame.data) { data throws(CaptureError) in
            try write(timestampNs: frame.timestampNs, originalLength: frame.originalLength, data: data)
        }
    }

    /// Hands buffered bytes to the OS; with `sync`, waits until they are on disk.
    public func flush(sync: Bool = false) throws(CaptureError) { try output.flush(sync: sync) }

    /// Flushes and closes the file.
    public func close() throws(CaptureError) { try output.close() }
}
