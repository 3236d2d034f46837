/// Reads a classic libpcap file: a 24-byte global header, then records of a 16-byte header
/// (`ts_sec`, `ts_frac`, `incl_len`, `orig_len`) and `incl_len` bytes.
///
/// The magic `a1b2c3d4` means µs fractions, `a1b23c4d` ns; the order its bytes appear in gives the
/// file's byte order. The link type is the low 26 bits of the header's last field: bits 28–31 may
/// carry an FCS length and bit 26 says whether they do (as libpcap's `LT_FCS_LENGTH_PRESENT`), so
/// both are ignored. The file has one interface, index 0.
///
/// Use a reader from one thread at a time. Its stored state is `@exclusivity(unchecked)`, since the
/// runtime checks cost about 40% of the read rate: nothing calls back into a reader while it
/// parses (the `withNextFrame` body runs once parsing is done), so no two accesses overlap.
public final class PcapReader: CaptureReader {
    public let format = CaptureFormat.pcap
    public var path: String { input.name }
    @exclusivity(unchecked) public private(set) var interfaces: [CaptureInterface] = []
    @exclusivity(unchecked) public private(set) var warnings: [CaptureWarning] = []
    public var bytesRead: UInt64 { input.offset }
    /// `true` when the file's fields are big-endian.
    @exclusivity(unchecked) public private(set) var isBigEndian = false
    /// `true` for the `a1b23c4d` magic (nanosecond fractions).
    @exclusivity(unchecked) public private(set) var isNanosecond = false

    private let input: ByteInput
    @exclusivity(unchecked) private var finished = false
    @exclusivity(unchecked) private var recordNumber = 0
    @exclusivity(unchecked) private var fracMultiplier: Int64 = 1000

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
        guard try input.ensure(24) else {
            if input.available >= 4, !Self.readMagic(input) {
                throw badMagic()
            }
            warnings.append(input.truncationWarning(recordName: "the pcap global header", number: 1, needed: 24))
            finished = true
            return
        }
        guard Self.readMagic(input) else { throw badMagic() }
        let p = input.pointer
        let magic = load32(p, 0, false)
        isBigEndian = magic == 0xD4C3_B2A1 || magic == 0x4D3C_B2A1
        isNanosecond = magic == 0xA1B2_3C4D || magic == 0x4D3C_B2A1
        fracMultiplier = isNanosecond ? 1 : 1000
        let major = load16(p, 4, isBigEndian)
        if major != 2 {
            throw CaptureError(
                kind: .malformed, file: input.name, offset: 4, expected: "pcap version 2.x",
                found: "version \(major).\(load16(p, 6, isBigEndian))",
                hint: "This is not a pcap file Tether can read; open it in Wireshark and save it as pcapng.")
        }
        let snap = load32(p, 16, isBigEndian)
        let link = load32(p, 20, isBigEndian) & 0x03FF_FFFF
        interfaces = [
            CaptureInterface(
                linkType: LinkType(rawValue: link), snapLength: snap,
                nanosecondsPerTick: isNanosecond ? 1 : 1000)
        ]
        input.consume(24)
    }

    private static func readMagic(_ input: ByteInput) -> Bool {
        let magic = load32(input.pointer, 0, false)
        return magic == 0xA1B2_C3D4 || magic == 0xD4C3_B2A1 || magic == 0xA1B2_3C4D || magic == 0x4D3C_B2A1
    }

    private func badMagic() -> CaptureError {
        CaptureError(
            kind: .unrecognizedFormat, file: input.name, offset: 0,
            expected: "a pcap magic (a1 b2 c3 d4 or a1 b2 3c 4d, either byte order)",
            found: hexBytes(input.pointer, count: min(4, input.available)),
            hint: "Open the file with CaptureFile.open, which detects pcapng, btsnoop and PacketLogger too.")
    }

    /// Parses the next record into the `current…` fields; `false` at the end or at a cut-off tail.
    @inline(__always)
    private func advance() throws(CaptureError) -> Bool {
        if finished { return false }
        guard try input.ensure(16) else { return end(needed: 16) }
        var p = UnsafeRawPointer(input.pointer)
        let big = isBigEndian
        let included = load32(p, 8, big)
        if included > UInt32(maxRecordLength) {
            throw CaptureError(
                kind: .malformed, file: input.name, offset: input.offset &+ 8, recordNumber: recordNumber &+ 1,
                expected: "a captured length of at most \(maxRecordLength) bytes", found: "\(included)",
                hint: "The record header is damaged; frames before this offset are intact (try `editcap` to cut the file there).")
        }
        let total = 16 &+ Int(included)
        guard try input.ensure(total) else { return end(needed: total) }
        p = UnsafeRawPointer(input.pointer)
        recordNumber &+= 1
        let seconds = Int64(load32(p, 0, big))
        let fraction = Int64(load32(p, 4, big))
        currentTimestamp = seconds &* 1_000_000_000 &+ fraction &* fracMultiplier
        currentOriginal = Int(load32(p, 12, big))
        currentData = UnsafeRawBufferPointer(start: p + 16, count: Int(included))
        input.consume(total)
        return true
    }

    private func end(needed: Int) -> Bool {
        finished = true
        if input.available > 0 {
            warnings.append(input.truncationWarning(recordName: "record", number: recordNumber &+ 1, needed: needed))
        }
        return false
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
