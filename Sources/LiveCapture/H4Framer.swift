/// The HCI packet indicator: the byte in front of every packet on an H4 (UART) transport.
///
/// Bluetooth Core Specification, Vol 4 (Host Controller Interface), Part A (UART Transport Layer),
/// §2 "Protocol": 0x01 command, 0x02 ACL data, 0x03 synchronous (SCO) data, 0x04 event, 0x05 ISO
/// data. The header after the indicator, and where its length field sits, come from Vol 4 Part E
/// §5.4 (HCI data formats).
public enum HCIPacketIndicator: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// HCI Command: opcode (u16 LE), parameter length (u8).
    case command = 0x01
    /// HCI ACL Data: handle and flags (u16 LE), data length (u16 LE).
    case acl = 0x02
    /// HCI Synchronous Data: handle and flags (u16 LE), data length (u8).
    case sco = 0x03
    /// HCI Event: event code (u8), parameter length (u8).
    case event = 0x04
    /// HCI ISO Data: handle and flags (u16 LE), data load length (u16 LE, low 14 bits; the top two
    /// bits are reserved and not part of the length).
    case iso = 0x05

    /// Bytes of the packet header after the indicator byte.
    public var headerLength: Int {
        switch self {
        case .command: 3
        case .acl: 4
        case .sco: 3
        case .event: 2
        case .iso: 4
        }
    }

    /// The largest payload the header's length field can announce.
    public var largestPayload: Int {
        switch self {
        case .command, .sco, .event: 255
        case .acl: 65_535
        case .iso: 16_383
        }
    }

    /// The payload length the header announces. `header` holds exactly ``headerLength`` bytes
    /// (the bytes after the indicator).
    func payloadLength(header: UnsafeRawBufferPointer) -> Int {
        switch self {
        case .command, .sco: Int(header[2])
        case .event: Int(header[1])
        case .acl: Int(header[2]) | Int(header[3]) << 8
        case .iso: (Int(header[2]) | Int(header[3]) << 8) & 0x3FFF
        }
    }

    /// `command`, `ACL`, `SCO`, `event` or `ISO`.
    public var description: String {
        switch self {
        case .command: "command"
        case .acl: "ACL"
        case .sco: "SCO"
        case .event: "event"
        case .iso: "ISO"
        }
    }
}

/// Which way an HCI packet went, seen from the host; the raw value is the 4-byte direction of
/// `LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR` (201), written big-endian (libpcap's Bluetooth capture and
/// Wireshark's reader: bit 0 set means received by the host).
public enum H4Direction: UInt32, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Host to controller (commands, outgoing data).
    case sent = 0
    /// Controller to host (events, incoming data).
    case received = 1

    /// `host→controller` or `controller→host`.
    public var description: String {
        switch self {
        case .sent: "host→controller"
        case .received: "controller→host"
        }
    }
}

/// The byte stream of one direction of an H4 transport is not H4 at some offset. H4 has no way to
/// find the next packet boundary after such a byte, so framing that stream ends there.
public struct H4FramingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public enum Problem: Sendable, Hashable {
        /// A byte where a packet indicator belongs is not one of 0x01…0x05.
        case unknownPacketIndicator(UInt8)
        /// The header announces a packet longer than the framer accepts (its
        /// ``H4Framer/maximumPacketLength``).
        case packetTooLong(indicator: HCIPacketIndicator, packetLength: Int, maximum: Int)
    }

    /// The stream concerned.
    public var direction: H4Direction
    /// Offset in the stream (bytes since the stream began) of the indicator byte of the packet at fault.
    public var offset: Int
    /// What was found there.
    public var problem: Problem

    /// Makes an error; see the properties.
    public init(direction: H4Direction, offset: Int, problem: Problem) {
        self.direction = direction
        self.offset = offset
        self.problem = problem
    }

    /// One sentence naming the stream, the offset, what was expected and what was found.
    public var description: String {
        switch problem {
        case .unknownPacketIndicator(let byte):
            "\(direction) stream, byte offset \(offset): expected an H4 packet indicator (0x01 command, 0x02 ACL, "
                + "0x03 SCO, 0x04 event, 0x05 ISO), found 0x\(hexByte(byte)); the peers do not speak H4 or the stream lost bytes"
        case .packetTooLong(let indicator, let length, let maximum):
            "\(direction) stream, byte offset \(offset): the \(indicator) header announces a \(length)-byte packet "
                + "(indicator and header included), more than the \(maximum) bytes accepted"
        }
    }
}

func hexByte(_ byte: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// Cuts one direction of an H4 byte stream into packets, incrementally: feed the bytes as they
/// arrive, in chunks of any size, and get every packet they complete.
///
/// Total: any bytes give packets or one ``H4FramingError`` (an unknown indicator, or a length above
/// ``maximumPacketLength``). After an error the framer only counts bytes, since H4 cannot find the
/// next boundary. Memory is bounded by ``maximumPacketLength``: a packet that arrives whole inside
/// one chunk is handed out in place, and only a packet split across chunks is copied.
public struct H4Framer: Sendable {
    /// The longest packet the field widths allow: indicator, 4-byte ACL header, 65535 bytes.
    public static let largestPacketLength = 1 + 4 + 65_535

    /// The direction named in errors.
    public let direction: H4Direction
    /// The longest packet (indicator, header and payload) accepted; a header announcing more is a
    /// framing error.
    public let maximumPacketLength: Int
    /// Bytes fed so far.
    public private(set) var bytesFed = 0
    /// Packets completed so far.
    public private(set) var packetsFramed = 0
    /// The error that ended framing, if one did.
    public private(set) var failure: H4FramingError?

    // The packet being assembled across chunks: its bytes so far, its full length once the header
    // is complete, and its stream offset.
    private var partial: [UInt8] = []
    private var partialLength: Int?
    private var partialOffset = 0

    /// A framer for the stream going `direction`.
    /// - Parameter maximumPacketLength: the longest packet accepted, at least 3 (clamped to
    ///   ``largestPacketLength``; the default accepts every length the headers can express).
    public init(direction: H4Direction, maximumPacketLength: Int = H4Framer.largestPacketLength) {
        self.direction = direction
        self.maximumPacketLength = min(max(maximumPacketLength, 3), Self.largestPacketLength)
    }

    /// Whether bytes of an unfinished packet are held.
    public var hasPartialPacket: Bool { !partial.isEmpty }

    /// Frames `bytes`, calling `packet` with each packet they complete, in stream order: the
    /// indicator byte, the header and the payload, borrowed for the duration of the call.
    /// - Returns: the framing error these bytes ran into, or `nil`. Once framing has failed, later
    ///   calls return `nil` and only count bytes (``failure`` keeps the error).
    @discardableResult
    public mutating func feed(_ bytes: UnsafeRawBufferPointer, _ packet: (UnsafeRawBufferPointer) -> Void) -> H4FramingError? {
        let base = bytesFed
        bytesFed += bytes.count
        guard failure == nil else { return nil }
        var index = 0
        while index < bytes.count {
            if partial.isEmpty {
                // At a packet boundary: hand out whole packets straight from the chunk.
                guard let indicator = HCIPacketIndicator(rawValue: bytes[index]) else {
                    return fail(at: base + index, .unknownPacketIndicator(bytes[index]))
                }
                let headerEnd = index + 1 + indicator.headerLength
                if headerEnd <= bytes.count {
                    let length = 1 + indicator.headerLength
                        + indicator.payloadLength(header: UnsafeRawBufferPointer(rebasing: bytes[(index + 1)..<headerEnd]))
                    if length > maximumPacketLength {
                        return fail(at: base + index, .packetTooLong(indicator: indicator, packetLength: length, maximum: maximumPacketLength))
                    }
                    if index + length <= bytes.count {
                        packetsFramed += 1
                        packet(UnsafeRawBufferPointer(rebasing: bytes[index..<(index + length)]))
                        index += length
                        continue
                    }
                    partialLength = length
                }
                partialOffset = base + index
                partial.reserveCapacity(min(partialLength ?? 1 + indicator.headerLength, maximumPacketLength))
                partial.append(bytes[index])
                index += 1
                continue
            }
            // Inside a packet split across chunks: fill up to the header, then to the whole packet.
            let indicator = HCIPacketIndicator(rawValue: partial[0])!  // checked when it was stored
            let headerEnd = 1 + indicator.headerLength
            let goal = partialLength ?? headerEnd
            let take = min(goal - partial.count, bytes.count - index)
            partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[index..<(index + take)]))
            index += take
            guard partial.count == goal else { continue }
            if partialLength == nil {
                let length = partial.withUnsafeBytes {
                    headerEnd + indicator.payloadLength(header: UnsafeRawBufferPointer(rebasing: $0[1..<headerEnd]))
                }
                if length > maximumPacketLength {
                    let offset = partialOffset
                    partial.removeAll()
                    return fail(at: offset, .packetTooLong(indicator: indicator, packetLength: length, maximum: maximumPacketLength))
                }
                partialLength = length
                partial.reserveCapacity(length)
                if length > headerEnd { continue }
            }
            packetsFramed += 1
            partial.withUnsafeBytes { packet($0) }
            partial.removeAll(keepingCapacity: true)
            partialLength = nil
        }
        return nil
    }

    private mutating func fail(at offset: Int, _ problem: H4FramingError.Problem) -> H4FramingError {
        let error = H4FramingError(direction: direction, offset: offset, problem: problem)
        failure = error
        partial = []
        partialLength = nil
        return error
    }
}
