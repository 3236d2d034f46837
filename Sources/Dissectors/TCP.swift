/// A TCP segment recovered from a frame: RFC 9293 §3.1's header fields Tether uses, and the payload.
public struct TCPSegment: Sendable, Hashable {
    /// The IP source address.
    public var sourceAddress: IPAddress
    /// The source port.
    public var sourcePort: UInt16
    /// The IP destination address.
    public var destinationAddress: IPAddress
    /// The destination port.
    public var destinationPort: UInt16
    /// The Sequence Number as sent.
    public var sequenceNumber: UInt32
    /// The Acknowledgment Number as sent (meaningful when ``flags`` has ACK).
    public var acknowledgmentNumber: UInt32
    /// The control bits: CWR ECE URG ACK PSH RST SYN FIN, bit 7 to bit 0.
    public var flags: UInt8
    /// The receive window as sent (unscaled).
    public var window: UInt16
    /// The segment's data.
    public var payload: [UInt8]

    /// FIN: the sender has no more data.
    public static let fin: UInt8 = 0x01
    /// SYN: synchronize sequence numbers.
    public static let syn: UInt8 = 0x02
    /// RST: reset the connection.
    public static let rst: UInt8 = 0x04
    /// PSH: push.
    public static let psh: UInt8 = 0x08
    /// ACK: the acknowledgment number is valid.
    public static let ack: UInt8 = 0x10

    /// A segment from its fields.
    public init(
        sourceAddress: IPAddress, sourcePort: UInt16, destinationAddress: IPAddress, destinationPort: UInt16,
        sequenceNumber: UInt32, acknowledgmentNumber: UInt32, flags: UInt8, window: UInt16, payload: [UInt8]
    ) {
        self.sourceAddress = sourceAddress
        self.sourcePort = sourcePort
        self.destinationAddress = destinationAddress
        self.destinationPort = destinationPort
        self.sequenceNumber = sequenceNumber
        self.acknowledgmentNumber = acknowledgmentNumber
        self.flags = flags
        self.window = window
        self.payload = payload
    }

    /// `[SYN, ACK]`-style flag names, as Wireshark lists them.
    public var flagNames: String { Self.flagNameTable[Int(flags)] }

    /// Every control-bit combination's names, made once: summaries name a segment's flags per frame.
    private static let flagNameTable: [String] = (0..<256).map { value in
        let names: [(Int, String)] = [(0x80, "CWR"), (0x40, "ECE"), (0x20, "URG"), (0x02, "SYN"), (0x01, "FIN"), (0x04, "RST"), (0x08, "PSH"), (0x10, "ACK")]
        return "[" + names.filter { value & $0.0 != 0 }.map(\.1).joined(separator: ", ") + "]"
    }
}

/// The TCP header, RFC 9293 §3.1: source port, destination port, sequence number, acknowledgment
/// number (all big-endian), data offset (4 bits, in 32-bit words, at least 5), reserved (4 bits),
/// control bits (1 byte), window, checksum, urgent pointer, options to the data offset.
///
/// The checksum is not verified, for the reason IPv4's is not (see ``IPv4Header``).
enum TCPHeader {
    static let minimumLength = 20

    /// Parses the segment at `offset`; its bytes end at `end` (from the IP header's lengths). With
    /// `copyingPayload` false the segment's ``TCPSegment/payload`` stays empty and `payloadRange`
    /// says where the data lies in `buffer`.
    static func parse(
        _ buffer: UnsafeRawBufferPointer, at offset: Int, end: Int, source: IPAddress, destination: IPAddress, context: String?,
        copyingPayload: Bool = true
    ) -> Result<(segment: TCPSegment, payloadRange: Range<Int>), DissectionProblem> {
        let available = min(end, buffer.count) - offset
        guard available >= minimumLength, let sourcePort = buffer.u16be(at: offset), let destinationPort = buffer.u16be(at: offset + 2),
              let sequence = buffer.u32be(at: offset + 4), let acknowledgment = buffer.u32be(at: offset + 8),
              let dataOffset = buffer.u8(at: offset + 12), let flags = buffer.u8(at: offset + 13),
              let window = buffer.u16be(at: offset + 14)
        else {
            return .failure(.short("TCP", at: offset, need: minimumLength, what: "TCP header", have: available, context: context))
        }
        let headerLength = Int(dataOffset >> 4) * 4
        guard headerLength >= minimumLength else {
            return .failure(DissectionProblem(
                layer: "TCP", offset: offset + 12, expected: "a data offset of at least 5 words",
                found: "\(dataOffset >> 4)", context: context))
        }
        guard headerLength <= available else {
            return .failure(.short("TCP", at: offset, need: headerLength, what: "TCP header with options", have: available, context: context))
        }
        let range = (offset + headerLength)..<(offset + available)
        let payload = copyingPayload ? (buffer.bytes(at: range.lowerBound, count: range.count) ?? []) : []
        return .success((TCPSegment(
            sourceAddress: source, sourcePort: sourcePort, destinationAddress: destination, destinationPort: destinationPort,
            sequenceNumber: sequence, acknowledgmentNumber: acknowledgment, flags: flags, window: window, payload: payload), range))
    }
}
