/// Record types of Apple PacketLogger files, and the BlueZ monitor opcodes Tether presents them as.
enum PacketLogger {
    static let recordHeaderLength = 13
    /// Length field value: 8 bytes of time + 1 type byte, with no payload.
    static let minimumLength: UInt32 = 9
    /// The largest first-record length taken as plausible when guessing the byte order (an HCI
    /// packet is under 64 KiB; notes are short).
    static let plausibleFirstLength: UInt32 = 0x0001_0100

    /// The monitor opcode for a PacketLogger type, and whether the type byte is kept before the
    /// payload (for types with no monitor equivalent, so nothing is lost).
    static func monitorOpcode(for type: UInt8) -> (opcode: UInt16, keepsType: Bool) {
        switch type {
        case 0x00: (2, false)  // HCI command → command
        case 0x01: (3, false)  // HCI event → event
        case 0x02: (4, false)  // ACL sent → ACL tx
        case 0x03: (5, false)  // ACL received → ACL rx
        case 0x08: (6, false)  // SCO sent → SCO tx
        case 0x09: (7, false)  // SCO received → SCO rx
        case 0xFC: (12, false) // note → system note (text)
        default: (11, true)    // new controller (FE) and anything else → vendor diagnostic
        }
    }

    /// Types seen in real files; used only to recognise a file that has no magic.
    static let knownTypes: Set<UInt8> = [0x00, 0x01, 0x02, 0x03, 0x08, 0x09, 0x0A, 0x0B, 0xF7, 0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF]

    /// The byte order of a file from its first 4 bytes: `true` for big-endian, `nil` when neither
    /// order gives a plausible length. When both do, the smaller length wins.
    static func byteOrder(firstLength bytes: UnsafeRawPointer) -> Bool? {
        let little = load32(bytes, 0, false)
        let big = load32(bytes, 0, true)
        let littleOK = little >= minimumLength && little <= plausibleFirstLength
        let bigOK = big >= minimumLength && big <= plausibleFirstLength
        switch (littleOK, bigOK) {
        case (true, true): return big < little
        case (true, false): return false
        case (false, true): return true
        case (false, false): return nil
        }
    }
}

/// Reads an Apple PacketLogger `.pklg` file (the iOS Bluetooth logging profile): no file header;
/// records of length (u32), seconds (u32), microseconds (u32), type (u8) and payload, where length
/// counts the 8 time bytes, the type and the payload. The byte order is taken from the first
/// record: the order in which its length is plausible (older files are big-endian, newer
/// little-endian).
///
/// Records are presented as ``LinkType/bluetoothLinuxMonitor`` (254) frames on adapter index 0, a
/// mapping that loses nothing: command → opcode 2, event → 3, ACL sent/received → 4/5, SCO
/// sent/received → 6/7, note (FC) → 12 system note (the text bytes as they are). New controller
/// (FE) and every other type become opcode 11 (vendor diagnostic) whose payload is the original
/// type byte followed by the record's payload, so the record can be rebuilt exactly.
///
/// Use a reader from one thread at a time. Its stored state is `@exclusivity(unchecked)`, since the
/// runtime checks cost about 40% of the read rate: nothing calls back into a reader while it
/// parses (the `withNextFrame` body runs once parsing is done), so no two accesses overlap.
public final class PacketLoggerReader: CaptureReader {
    public let format = CaptureFormat.packetLogger
    public var path: String { input.name }
    @exclusivity(unchecked) public private(set) var interfaces: [CaptureInterface] = [
        CaptureInterface(linkType: .bluetoothLinuxMonitor, name: "PacketLogger", nanosecondsPerTick: 1000)
    ]
    @exclusivity(unchecked) public private(set) var warnings: [CaptureWarning] = []
    public var bytesRead: UInt64 { input.offset }
    /// `true` when the file's fields are big-endian.
    @exclusivity(unchecked) public private(set) var isBigEndian = false

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
        guard try input.ensure(4) else { return }
        guard let big = PacketLogger.byteOrder(firstLength: input.pointer) else {
            throw CaptureError(
                kind: .malformed, file: input.name, offset: 0, recordNumber: 1,
                expected: "a first record length between \(PacketLogger.minimumLength) and \(PacketLogger.plausibleFirstLength) in either byte order",
                found: hexBytes(input.pointer, count: 4),
                hint: "This does not look like a PacketLogger file; export it again from PacketLogger (File › Save As .pklg).")
        }
        isBigEndian = big
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
        guard try input.ensure(4) else { return end(needed: PacketLogger.recordHeaderLength) }
        let length = load32(input.pointer, 0, isBigEndian)
        if length < PacketLogger.minimumLength || length > UInt32(maxRecordLength) {
            throw CaptureError(
                kind: .malformed, file: input.name, offset: input.offset, recordNumber: recordNumber &+ 1,
                expected: "a record length between \(PacketLogger.minimumLength) and \(maxRecordLength)", found: "\(length)",
                hint: "The record header is damaged; records before this offset are intact.")
        }
        let total = 4 &+ Int(length)
        guard try input.ensure(total) else { return end(needed: total) }
        recordNumber &+= 1
        let p = input.pointer
        let seconds = Int64(load32(p, 4, isBigEndian))
        let micros = Int64(load32(p, 8, isBigEndian))
        currentTimestamp = seconds &* 1_000_000_000 &+ micros &* 1000
        let type = p.load(fromByteOffset: 12, as: UInt8.self)
        let (opcode, keepsType) = PacketLogger.monitorOpcode(for: type)
        // The 4-byte monitor header overwrites time bytes already parsed, so no copy is needed.
        let start = keepsType ? 8 : 9
        store16BE(p, start, 0)
        store16BE(p, start &+ 2, opcode)
        currentData = UnsafeRawBufferPointer(start: p + start, count: total &- start)
        currentOriginal = total &- start
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
