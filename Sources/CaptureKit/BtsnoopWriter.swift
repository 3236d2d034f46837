/// Writes btsnoop (version 1) incrementally, to a file or to memory.
///
/// - Datalink 1002 (H4) takes ``LinkType/bluetoothHCIH4WithPHDR`` (201) frames: the 4-byte
///   direction header is stripped; flag bit 0 is set for frames received by the host, bit 1 for
///   commands and events (H4 type 1 or 4).
/// - Datalink 2001 (BlueZ monitor) takes ``LinkType/bluetoothLinuxMonitor`` (254) frames: the
///   4-byte index/opcode header becomes the flags `(index << 16) | opcode`.
/// Timestamps are stored in µs (btsnoop's resolution), so sub-µs digits are lost.
public final class BtsnoopWriter {
    /// The btsnoop datalinks Tether writes.
    public enum Datalink: UInt32, Sendable {
        /// 1002: H4 (UART), type byte first; what Android and real devices write.
        case h4 = 1002
        /// 2001: BlueZ monitor records, as btmon writes.
        case monitor = 2001

        /// The link type frames must have to be written under this datalink.
        public var linkType: LinkType { self == .h4 ? .bluetoothHCIH4WithPHDR : .bluetoothLinuxMonitor }
    }

    private let output: ByteOutput
    /// The file's datalink.
    public let datalink: Datalink
    /// Frames written so far.
    public private(set) var frameCount = 0
    /// Written into each record's cumulative-drops field; set it from the source's drop counter.
    public var cumulativeDrops: UInt32 = 0

    /// Creates (or truncates) the file at `path` and writes the header.
    public init(path: String, datalink: Datalink) throws(CaptureError) {
        output = try ByteOutput(path: path)
        self.datalink = datalink
        writeHeader()
    }

    /// A writer that keeps the file in memory; read it with ``bytes``.
    public init(datalink: Datalink) {
        output = ByteOutput()
        self.datalink = datalink
        writeHeader()
    }

    /// Everything written so far, for a memory writer; empty for a file writer.
    public var bytes: [UInt8] { output.isMemory ? output.buffer : [] }

    private func writeHeader() {
        output.bytes(Btsnoop.magic)
        output.u32BE(1)
        output.u32BE(datalink.rawValue)
    }

    /// Writes `frame`, whose bytes are under `linkType`; it must be the datalink's link type
    /// (201 for `.h4`, 254 for `.monitor`), else a `.misuse` error says which is needed.
    public func write(_ frame: CaptureFrame, linkType: LinkType) throws(CaptureError) {
        try withBorrowedBytes(frame.data) { data throws(CaptureError) in
            try write(timestampNs: frame.timestampNs, originalLength: frame.originalLength, data: data, linkType: linkType)
        }
    }

    /// Writes one frame from borrowed bytes under `linkType`; see ``write(_:linkType:)``.
    public func write(timestampNs: Int64, originalLength: Int, data: UnsafeRawBufferPointer, linkType: LinkType) throws(CaptureError) {
        try output.checkOpen()
        guard linkType == datalink.linkType else {
            throw CaptureError(
                kind: .misuse, file: output.name, offset: output.offset, recordNumber: frameCount + 1,
                expected: "a frame of link type \(datalink.linkType) for btsnoop datalink \(datalink.rawValue)", found: "a frame of link type \(linkType)",
                hint: "btsnoop 1002 holds HCI H4 with direction (201) and 2001 holds BlueZ monitor records (254); write other link types to pcapng.")
        }
        guard data.count >= 4 else {
            throw CaptureError(
                kind: .misuse, file: output.name, offset: output.offset, recordNumber: frameCount + 1,
                expected: "a frame with its 4-byte \(linkType.name) header", found: "\(data.count) bytes",
                hint: "Frames under this link type start with a 4-byte pseudo-header.")
        }
        guard data.count <= maxRecordLength else {
            throw CaptureError(kind: .misuse, file: output.name, offset: output.offset, expected: "a frame of at most \(maxRecordLength) bytes",
                               found: "\(data.count) bytes", hint: "Split the data.")
        }
        let base = data.baseAddress!
        let flags: UInt32
        switch datalink {
        case .h4:
            let received: UInt32 = load32(base, 0, true) != 0 ? Btsnoop.flagReceived : 0
            let h4Type = data.count > 4 ? data[4] : 0
            flags = received | (h4Type == 1 || h4Type == 4 ? Btsnoop.flagCommandOrEvent : 0)
        case .monitor:
            flags = UInt32(load16(base, 0, true)) << 16 | UInt32(load16(base, 2, true))
        }
        let payload = UnsafeRawBufferPointer(rebasing: data[4...])
        let micros = timestampNs >= 0 ? timestampNs / 1000 : (timestampNs &- 999) / 1000
        output.u32BE(UInt32(clamping: max(originalLength &- 4, payload.count)))
        output.u32BE(UInt32(payload.count))
        output.u32BE(flags)
        output.u32BE(cumulativeDrops)
        output.u64BE(UInt64(bitPattern: micros &+ Btsnoop.epochOffsetMicroseconds))
        output.bytes(payload)
        frameCount &+= 1
        try output.flushIfFull()
    }

    /// Hands buffered bytes to the OS; with `sync`, waits until they are on disk.
    public func flush(sync: Bool = false) throws(CaptureError) { try output.flush(sync: sync) }

    /// Flushes and closes the file.
    public func close() throws(CaptureError) { try output.close() }
}
