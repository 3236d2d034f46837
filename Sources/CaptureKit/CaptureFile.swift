/// Opens a capture file of any format CaptureKit reads, choosing the reader from the first bytes.
public enum CaptureFile {
    /// The bytes ``detectFormat(_:)`` needs to recognise every format (PacketLogger, which has no
    /// magic, needs its first record header).
    public static let detectionLength = 13

    /// Opens the file at `path` with the reader its first bytes call for.
    /// - Throws: ``CaptureError`` of kind `.io` when the file cannot be opened, `.unrecognizedFormat`
    ///   when its first bytes match no format, or whatever the reader finds wrong with the header.
    public static func open(path: String) throws(CaptureError) -> any CaptureReader {
        try open(input: ByteInput(path: path))
    }

    /// Reads a capture already in memory; `name` is used in messages.
    public static func open(bytes: [UInt8], name: String = "<memory>") throws(CaptureError) -> any CaptureReader {
        try open(input: ByteInput(bytes: bytes, name: name))
    }

    /// Same as ``open(bytes:name:)`` with a chosen buffer size, so tests can make records straddle reads.
    static func open(bytes: [UInt8], name: String = "<memory>", bufferSize: Int) throws(CaptureError) -> any CaptureReader {
        try open(input: ByteInput(bytes: bytes, name: name, bufferSize: bufferSize))
    }

    static func open(input: ByteInput) throws(CaptureError) -> any CaptureReader {
        let first = try input.peek(detectionLength)
        guard let format = detectFormat(first) else {
            let found = first.isEmpty ? "an empty file" : "the bytes \(hexBytes(Array(first.prefix(4))))"
            throw CaptureError(
                kind: .unrecognizedFormat, file: input.name, offset: 0, expected: "a capture file magic", found: found,
                hint: "Tether reads pcap (a1 b2 c3 d4 / a1 b2 3c 4d, either byte order), pcapng (0a 0d 0d 0a), "
                    + "btsnoop (\"btsnoop\\0\") and Apple PacketLogger .pklg; convert other formats with Wireshark's `editcap -F pcapng`.")
        }
        return try reader(for: format, input: input)
    }

    static func reader(for format: CaptureFormat, input: ByteInput) throws(CaptureError) -> any CaptureReader {
        switch format {
        case .pcap: try PcapReader(input: input)
        case .pcapng: try PcapngReader(input: input)
        case .btsnoop: try BtsnoopReader(input: input)
        case .packetLogger: try PacketLoggerReader(input: input)
        }
    }

    /// The format the first bytes of a file announce, or `nil`.
    ///
    /// pcap, pcapng and btsnoop are told by their magic (4 bytes are enough). PacketLogger has no
    /// magic: it is recognised when the first record's length is plausible in one byte order and
    /// its type byte is a known PacketLogger type, which needs ``detectionLength`` bytes.
    public static func detectFormat(_ firstBytes: [UInt8]) -> CaptureFormat? {
        guard firstBytes.count >= 4 else { return nil }
        let head = firstBytes.withUnsafeBytes { load32($0.baseAddress!, 0, true) }
        switch head {
        case 0xA1B2_C3D4, 0xD4C3_B2A1, 0xA1B2_3C4D, 0x4D3C_B2A1: return .pcap
        case PcapngBlock.sectionHeader: return .pcapng
        case 0x6274_736E: // "btsn"
            if firstBytes.count >= 8, Array(firstBytes[0..<8]) != Btsnoop.magic { return nil }
            return .btsnoop
        default:
            break
        }
        guard firstBytes.count >= PacketLogger.recordHeaderLength else { return nil }
        let order = firstBytes.withUnsafeBytes { PacketLogger.byteOrder(firstLength: $0.baseAddress!) }
        guard order != nil, PacketLogger.knownTypes.contains(firstBytes[12]) else { return nil }
        return .packetLogger
    }
}
