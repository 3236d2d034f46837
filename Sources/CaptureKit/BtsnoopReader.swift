/// Constants of the btsnoop format (as written by btmon `-w`, Android's `btsnoop_hci.log` and
/// Bumble). Every field is big-endian.
enum Btsnoop {
    static let magic: [UInt8] = Array("btsnoop\0".utf8)
    static let headerLength = 16
    static let recordHeaderLength = 24
    static let datalinkH1: UInt32 = 1001
    static let datalinkH4: UInt32 = 1002
    static let datalinkMonitor: UInt32 = 2001
    /// Microseconds from 0000-01-01 to 1970-01-01, the btsnoop timestamp origin.
    static let epochOffsetMicroseconds: Int64 = 0x00DC_DDB3_0F2F_8000
    static let flagReceived: UInt32 = 0x01
    static let flagCommandOrEvent: UInt32 = 0x02
    /// Bumble's writer marks commands and events with this bit instead of 0x02.
    static let flagCommandOrEventBumble: UInt32 = 0x10
}

/// Reads a btsnoop file: datalink 1001 (H1), 1002 (H4) or 2001 (BlueZ monitor).
///
/// Records are presented under pcap link types, so the rest of Tether sees one framing per kind:
/// - 1002 (H4) → ``LinkType/bluetoothHCIH4WithPHDR`` (201): a 4-byte big-endian direction (1 when
///   flag bit 0 says "received by host", else 0) is put before the record's bytes.
/// - 1001 (H1, no type byte) → 201 as well, with the H4 type byte synthesised from the flags:
///   command (1) when sent and flagged command/event, event (4) when received and flagged, ACL (2)
///   for data (H1 cannot tell SCO from ACL). Both the usual 0x02 command/event bit and Bumble's 0x10
///   are accepted.
/// - 2001 (monitor) → ``LinkType/bluetoothLinuxMonitor`` (254): flags are `(index << 16) | opcode`,
///   presented as the 4-byte header adapter index (u16 BE), opcode (u16 BE).
/// `originalLength` counts the synthesised header too. The record's cumulative-drops field is kept
/// in `interfaces[0].statistics.interfaceDropped`. Timestamps are µs since 0000-01-01, converted
/// to ns since 1970.
///
/// Use a reader from one thread at a time. Its stored state is `@exclusivity(unchecked)`, since the
/// runtime checks cost about 40% of the read rate: nothing calls back into a reader while it
/// parses (the `withNextFrame` body runs once parsing is done), so no two accesses overlap.
public final class BtsnoopReader: CaptureReader {
    public let format = CaptureFormat.btsnoop
    public var path: String { input.name }
    @exclusivity(unchecked) public private(set) var interfaces: [CaptureInterface] = []
    @exclusivity(unchecked) public private(set) var warnings: [CaptureWarning] = []
    public var bytesRead: UInt64 { input.offset }
    /// The datalink field of the header (1001, 1002 or 2001); 0 until the header was read.
    @exclusivity(unchecked) public private(set) var datalink: UInt32 = 0

    private let input: ByteInput
    @exclusivity(unchecked) private var finished = false
    @exclusivity(unchecked) private var recordNumber = 0

    @exclusivity(unchecked) private var currentTimestamp: Int64 = 0
    @exclusivity(unchecked) private var currentOriginal = 0
    @exclusivity(unchecked) private var currentData = UnsafeRawBufferPointer(start: nil, count: 0)

    /// Opens the file at `path`.
    public convenience init(path: String) throws(CaptureError) {
        try self.init(input: ByteInput(path: path))
    }

    /// Reads a file already in memory; `name` is used in messages.
    public convenience init(bytes: [UInt8], name: String = "<memory>") throws(CaptureError) {
        try self.init(input: ByteInput(bytes: bytes, name: name))
    }

    init(input: ByteInput) throws(CaptureError) {
        self.input = input
        let complete = try input.ensure(Btsnoop.headerLength)
        let p = UnsafeRawPointer(input.pointer)
        let magicBytes = min(8, input.available)
        if !(0..<magicBytes).allSatisfy({ p.load(fromByteOffset: $0, as: UInt8.self) == Btsnoop.magic[$0] }) {
            throw CaptureError(
                kind: .unrecognizedFormat, file: input.name, offset: 0, expected: "the btsnoop magic \"btsnoop\\0\"",
                found: hexBytes(p, count: magicBytes),
                hint: "Open the file with CaptureFile.open, which detects pcap, pcapng and PacketLogger too.")
        }
        guard complete else {
            warnings.append(input.truncationWarning(recordName: "the btsnoop header", number: 1, needed: Btsnoop.headerLength))
            finished = true
            return
        }
        let version = load32(p, 8, true)
        if version != 1 {
            throw CaptureError(
                kind: .malformed, file: input.name, offset: 8, expected: "btsnoop version 1", found: "version \(version)",
                hint: "Only version 1 exists; the header is damaged or this is not a btsnoop file.")
        }
        datalink = load32(p, 12, true)
        switch datalink {
        case Btsnoop.datalinkH1, Btsnoop.datalinkH4:
            interfaces = [CaptureInterface(linkType: .bluetoothHCIH4WithPHDR, nanosecondsPerTick: 1000)]
        case Btsnoop.datalinkMonitor:
            interfaces = [CaptureInterface(linkType: .bluetoothLinuxMonitor, nanosecondsPerTick: 1000)]
        default:
            let known: String
            switch datalink {
            case 1003: known = " (BCSP)"
            case 1004: known = " (H5/3-wire UART)"
            default: known = ""
            }
            throw CaptureError(
                kind: .unsupportedLinkType, file: input.name, offset: 12,
                expected: "btsnoop datalink 1001 (H1), 1002 (H4) or 2001 (BlueZ monitor)", found: "datalink \(datalink)\(known)",
                hint: "Re-record with btmon (`btmon -w file`) or Android's HCI snoop log, which write 2001 or 1002.")
        }
        input.consume(Btsnoop.headerLength)
    }

    private func end(needed: Int) -> Bool {
        finished = true
        if input.available > 0 {
            warnings.append(input.truncationWarning(recordName: "record", number: recordNumber &+ 1, needed: needed))
        }
        return false
    }

    @inline(__always)
    private func advance() throws(CaptureError) -> Bool {
        if finished { return false }
        guard try input.ensure(Btsnoop.recordHeaderLength) else { return end(needed: Btsnoop.recordHeaderLength) }
        let included = load32(input.pointer, 4, true)
        if included > UInt32(maxRecordLength) {
            throw CaptureError(
                kind: .malformed, file: input.name, offset: input.offset &+ 4, recordNumber: recordNumber &+ 1,
                expected: "an included length of at most \(maxRecordLength) bytes", found: "\(included)",
                hint: "The record header is damaged; records before this offset are intact.")
        }
        let total = Btsnoop.recordHeaderLength &+ Int(included)
        guard try input.ensure(total) else { return end(needed: total) }
        recordNumber &+= 1
        let p = input.pointer
        let original = Int(load32(p, 0, true))
        let flags = load32(p, 8, true)
        let drops = load32(p, 12, true)
        let micros = Int64(bitPattern: load64(p, 16, true)) &- Btsnoop.epochOffsetMicroseconds
        currentTimestamp = saturatingNs(micros, times: 1000)
        let payload = Btsnoop.recordHeaderLength
        let header: Int
        // The synthesised pseudo-header overwrites the tail of the record header just consumed,
        // so the frame is contiguous without a copy.
        switch datalink {
        case Btsnoop.datalinkMonitor:
            header = 4
            store16BE(p, payload &- 4, UInt16(truncatingIfNeeded: flags >> 16))
            store16BE(p, payload &- 2, UInt16(truncatingIfNeeded: flags))
        case Btsnoop.datalinkH1:
            header = 5
            let received = flags & Btsnoop.flagReceived != 0
            let commandOrEvent = flags & (Btsnoop.flagCommandOrEvent | Btsnoop.flagCommandOrEventBumble) != 0
            store32BE(p, payload &- 5, received ? 1 : 0)
            let h4Type: UInt8 = commandOrEvent ? (received ? 4 : 1) : 2
            p.storeBytes(of: h4Type, toByteOffset: payload &- 1, as: UInt8.self)
        default:
            header = 4
            store32BE(p, payload &- 4, flags & Btsnoop.flagReceived)
        }
        if drops != 0 || interfaces[0].statistics.interfaceDropped != nil {
            interfaces[0].statistics.interfaceDropped = UInt64(drops)
        }
        currentOriginal = original &+ header
        currentData = UnsafeRawBufferPointer(start: p + (payload &- header), count: Int(included) &+ header)
        input.consume(total)
        return true
    }

    public func next() throws(CaptureError) -> CaptureFrame? {
        guard try advance() else { return nil }
        return CaptureFrame(
            number: recordNumber, interfaceIndex: 0, timestampNs: currentTimestamp,
            originalLength: currentOriginal, data: Array(currentData))
    }

    public func withNextFrame(_ body: (FrameView) throws -> Void) throws -> Bool {
        guard try advance() else { return false }
        try body(FrameView(
            number: recordNumber, interfaceIndex: 0, timestampNs: currentTimestamp,
            originalLength: currentOriginal, data: currentData))
        return true
    }
}
