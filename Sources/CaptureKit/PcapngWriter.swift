/// Writes pcapng incrementally, block by block, to a file or to memory.
///
/// The file has one section (Section Header with `shb_userappl` "Tether"), little-endian. Each
/// ``addInterface(_:)`` writes an Interface Description Block with `if_tsresol` 9, so every
/// timestamp is stored in nanoseconds exactly; frames are Enhanced Packet Blocks carrying comments
/// (`opt_comment`), custom options (2988/2989 with their PEN) and `epb_flags`. Bytes reach the OS
/// when 1 MiB has gathered, on ``flush(sync:)`` and on ``close()``: a recorder that flushes on an
/// interval never loses more than the last interval, and CaptureKit's reader keeps every complete
/// block of a file cut off mid-block.
public final class PcapngWriter {
    private let output: ByteOutput
    /// The interfaces added so far; a frame's `interfaceIndex` indexes this.
    public private(set) var interfaces: [CaptureInterface] = []
    /// Frames written so far.
    public private(set) var frameCount = 0

    /// Creates (or truncates) the file at `path` and writes the Section Header Block.
    /// - Parameter comment: an optional section comment.
    public init(path: String, comment: String? = nil) throws(CaptureError) {
        output = try ByteOutput(path: path)
        writeSectionHeader(comment: comment)
    }

    /// A writer that keeps the file in memory; read it with ``bytes``.
    public init(comment: String? = nil) {
        output = ByteOutput()
        writeSectionHeader(comment: comment)
    }

    /// Everything written so far, for a writer made with ``init(comment:)``; empty for a file writer.
    public var bytes: [UInt8] { output.isMemory ? output.buffer : [] }

    /// Bytes written so far (the file's size once flushed).
    public var bytesWritten: UInt64 { output.offset }

    private static func optionLength(_ valueLength: Int) -> Int { 4 &+ ((valueLength &+ 3) & ~3) }

    private func option(_ code: UInt16, _ value: [UInt8]) {
        output.u16(code)
        output.u16(UInt16(truncatingIfNeeded: value.count))
        output.bytes(value)
        output.pad(value.count)
    }

    private func option(_ code: UInt16, u64 value: UInt64) {
        output.u16(code)
        output.u16(8)
        output.u64(value)
    }

    private func writeSectionHeader(comment: String?) {
        let application = Array("Tether".utf8)
        let commentBytes = comment.map { Array($0.utf8.prefix(0xFFFF)) }
        var optionsLength = Self.optionLength(application.count) + 4
        if let commentBytes { optionsLength += Self.optionLength(commentBytes.count) }
        let total = UInt32(28 + optionsLength)
        output.u32(PcapngBlock.sectionHeader)
        output.u32(total)
        output.u32(PcapngBlock.byteOrderMagic)
        output.u16(1)
        output.u16(0)
        output.u64(UInt64.max) // section length unknown (-1): the file is written incrementally
        if let commentBytes { option(PcapngBlock.optComment, commentBytes) }
        option(PcapngBlock.shbUserAppl, application)
        output.u32(0) // opt_endofopt
        output.u32(total)
    }

    private func misuse(_ expected: String, _ found: String, _ hint: String) -> CaptureError {
        CaptureError(kind: .misuse, file: output.name, offset: output.offset, recordNumber: nil,
                     expected: expected, found: found, hint: hint)
    }

    private func textOption(_ text: String, what: String) throws(CaptureError) -> [UInt8] {
        let bytes = Array(text.utf8)
        if bytes.count > 0xFFFF {
            throw misuse("\(what) of at most 65535 UTF-8 bytes", "\(bytes.count) bytes", "Shorten the text.")
        }
        return bytes
    }

    /// Writes an Interface Description Block and returns the new interface's index (0, 1, …),
    /// which frames name in ``CaptureFrame/interfaceIndex``. Name, description, comments, link type
    /// and snap length are written; the resolution is always nanoseconds, whatever the interface
    /// says. Statistics are not written here (see ``writeStatistics(interfaceIndex:_:)``).
    @discardableResult
    public func addInterface(_ interface: CaptureInterface) throws(CaptureError) -> Int {
        try output.checkOpen()
        guard interface.linkType.rawValue <= 0xFFFF else {
            throw misuse("a link type that fits pcapng's 16 bits", "\(interface.linkType.rawValue)",
                         "Use a registered LINKTYPE_ value.")
        }
        let name = try interface.name.map { s throws(CaptureError) in try textOption(s, what: "if_name") }
        let description = try interface.description.map { s throws(CaptureError) in try textOption(s, what: "if_description") }
        var comments: [[UInt8]] = []
        for comment in interface.comments { comments.append(try textOption(comment, what: "an interface comment")) }
        var optionsLength = Self.optionLength(1) + 4
        if let name { optionsLength += Self.optionLength(name.count) }
        if let description { optionsLength += Self.optionLength(description.count) }
        for c in comments { optionsLength += Self.optionLength(c.count) }
        let total = UInt32(20 + optionsLength)
        output.u32(PcapngBlock.interfaceDescription)
        output.u32(total)
        output.u16(UInt16(interface.linkType.rawValue))
        output.u16(0)
        output.u32(interface.snapLength)
        for c in comments { option(PcapngBlock.optComment, c) }
        if let name { option(PcapngBlock.ifName, name) }
        if let description { option(PcapngBlock.ifDescription, description) }
        option(PcapngBlock.ifTsresol, [9])
        output.u32(0)
        output.u32(total)
        var stored = interface
        stored.nanosecondsPerTick = 1
        stored.section = 0
        stored.statistics = InterfaceStatistics()
        interfaces.append(stored)
        try output.flushIfFull()
        return interfaces.count - 1
    }

    private func checkInterface(_ index: Int) throws(CaptureError) {
        guard index >= 0 && index < interfaces.count else {
            throw misuse("an interface index below \(interfaces.count)", "interface \(index)",
                         "Call addInterface first and use the index it returns.")
        }
    }

    /// Writes `frame` as an Enhanced Packet Block on its interface, with its comments, custom
    /// options and flags. `frame.number` is ignored (frames are numbered by position).
    public func write(_ frame: CaptureFrame) throws(CaptureError) {
        var comments: [[UInt8]] = []
        for comment in frame.comments { comments.append(try textOption(comment, what: "a packet comment")) }
        for custom in frame.customOptions where custom.value.count > 0xFFFF - 4 {
            throw misuse("a custom option value of at most 65531 bytes", "\(custom.value.count) bytes", "Split the value.")
        }
        try withBorrowedBytes(frame.data) { data throws(CaptureError) in
            try writePacket(interfaceIndex: frame.interfaceIndex, timestampNs: frame.timestampNs,
                            originalLength: frame.originalLength, data: data, flags: frame.flags,
                            comments: comments, customOptions: frame.customOptions)
        }
    }

    /// Writes a frame whose bytes are borrowed (a ``FrameView``'s, or a capture buffer's) as an
    /// Enhanced Packet Block, without allocating: the recorder's and benchmark's fast path.
    public func write(
        interfaceIndex: Int, timestampNs: Int64, originalLength: Int, data: UnsafeRawBufferPointer, flags: UInt32? = nil
    ) throws(CaptureError) {
        try writePacket(interfaceIndex: interfaceIndex, timestampNs: timestampNs, originalLength: originalLength,
                        data: data, flags: flags, comments: [], customOptions: [])
    }

    /// Writes a borrowed ``FrameView`` (as from ``CaptureReader/withNextFrame(_:)``) without allocating.
    public func write(_ view: FrameView) throws(CaptureError) {
        try write(interfaceIndex: view.interfaceIndex, timestampNs: view.timestampNs,
                  originalLength: view.originalLength, data: view.data)
    }

    private func writePacket(
        interfaceIndex: Int, timestampNs: Int64, originalLength: Int, data: UnsafeRawBufferPointer, flags: UInt32?,
        comments: [[UInt8]], customOptions: [CustomOption]
    ) throws(CaptureError) {
        try output.checkOpen()
        try checkInterface(interfaceIndex)
        let dataLength = data.count
        guard dataLength <= maxRecordLength - 64 else {
            throw misuse("a frame of at most \(maxRecordLength - 64) bytes", "\(dataLength) bytes", "Split the data.")
        }
        var optionsLength = 0
        for c in comments { optionsLength &+= Self.optionLength(c.count) }
        for c in customOptions { optionsLength &+= Self.optionLength(4 &+ c.value.count) }
        if flags != nil { optionsLength &+= 8 }
        if optionsLength > 0 { optionsLength &+= 4 }
        let total = UInt32(32 &+ ((dataLength &+ 3) & ~3) &+ optionsLength)
        let ticks = UInt64(bitPattern: timestampNs)
        output.u32(PcapngBlock.enhancedPacket)
        output.u32(total)
        output.u32(UInt32(interfaceIndex))
        output.u32(UInt32(truncatingIfNeeded: ticks >> 32))
        output.u32(UInt32(truncatingIfNeeded: ticks))
        output.u32(UInt32(dataLength))
        output.u32(UInt32(clamping: max(originalLength, 0)))
        output.bytes(data)
        output.pad(dataLength)
        for c in comments { option(PcapngBlock.optComment, c) }
        if let flags {
            output.u16(PcapngBlock.epbFlags)
            output.u16(4)
            output.u32(flags)
        }
        for c in customOptions {
            output.u16(c.isUTF8 ? PcapngBlock.optCustomUTF8 : PcapngBlock.optCustomBinary)
            output.u16(UInt16(4 &+ c.value.count))
            output.u32(c.privateEnterpriseNumber)
            output.bytes(c.value)
            output.pad(4 &+ c.value.count)
        }
        if optionsLength > 0 { output.u32(0) }
        output.u32(total)
        frameCount &+= 1
        try output.flushIfFull()
    }

    /// Writes an Interface Statistics Block for an interface: `isb_ifrecv`, `isb_ifdrop` and
    /// `isb_osdrop` for the counters present, timestamped with `stats.timestampNs` (0 if absent).
    public func writeStatistics(interfaceIndex: Int, _ stats: InterfaceStatistics) throws(CaptureError) {
        try output.checkOpen()
        try checkInterface(interfaceIndex)
        let counters: [(UInt16, UInt64?)] = [
            (PcapngBlock.isbIfRecv, stats.received), (PcapngBlock.isbIfDrop, stats.interfaceDropped),
            (PcapngBlock.isbOsDrop, stats.osDropped),
        ]
        let present = counters.filter { $0.1 != nil }
        let optionsLength = present.isEmpty ? 0 : present.count * 12 + 4
        let total = UInt32(24 + optionsLength)
        let ticks = UInt64(bitPattern: stats.timestampNs ?? 0)
        output.u32(PcapngBlock.interfaceStatistics)
        output.u32(total)
        output.u32(UInt32(interfaceIndex))
        output.u32(UInt32(truncatingIfNeeded: ticks >> 32))
        output.u32(UInt32(truncatingIfNeeded: ticks))
        for (code, value) in present { option(code, u64: value ?? 0) }
        if !present.isEmpty { output.u32(0) }
        output.u32(total)
        interfaces[interfaceIndex].statistics = stats
        try output.flushIfFull()
    }

    /// Hands every buffered byte to the OS (write(2)); with `sync`, also waits until it is on disk
    /// (fsync). A no-op for a memory writer.
    public func flush(sync: Bool = false) throws(CaptureError) {
        try output.flush(sync: sync)
    }

    /// Flushes and closes the file. Writing afterwards is a `.misuse` error; closing twice is fine.
    public func close() throws(CaptureError) {
        try output.close()
    }
}
