/// The file formats CaptureKit reads. Found from a file's first bytes, never from its name.
public enum CaptureFormat: String, Sendable, Hashable, CaseIterable {
    /// Classic libpcap: `a1b2c3d4` (µs) or `a1b23c4d` (ns), either byte order.
    case pcap
    /// pcapng: blocks, one or more sections.
    case pcapng
    /// btsnoop: datalink 1001 (H1), 1002 (H4) or 2001 (BlueZ monitor).
    case btsnoop
    /// Apple PacketLogger `.pklg`, either byte order.
    case packetLogger
}

/// One capture interface (a pcapng Interface Description Block, or the single implied interface of
/// a pcap, btsnoop or PacketLogger file).
///
/// btsnoop and PacketLogger records are presented with the link type Tether would write them under:
/// btsnoop 1001/1002 as ``LinkType/bluetoothHCIH4WithPHDR`` (the reader synthesises the 4-byte
/// direction header and, for H1, the H4 type byte), btsnoop 2001 and PacketLogger as
/// ``LinkType/bluetoothLinuxMonitor`` (the reader synthesises the 4-byte index/opcode header;
/// PacketLogger notes become system notes, and types with no monitor equivalent become vendor
/// diagnostics that keep the original type byte, so nothing is lost).
/// This way every frame a reader returns is bytes under a registered link type, and the dissectors
/// and the pcapng writer need to know nothing about the source format.
public struct CaptureInterface: Sendable, Hashable {
    /// The link type of every frame on this interface.
    public var linkType: LinkType
    /// `if_name`, when the file gives one.
    public var name: String?
    /// `if_description`, when the file gives one.
    public var description: String?
    /// The snapshot length; 0 means none was set.
    public var snapLength: UInt32
    /// Nanoseconds per timestamp unit in the file (1000 for µs, 1 for ns). Informational: every
    /// ``CaptureFrame/timestampNs`` is already in nanoseconds.
    public var nanosecondsPerTick: Double
    /// The pcapng section this interface belongs to, counted from 0 (always 0 for other formats).
    public var section: Int
    /// Drop counts and other statistics seen for this interface (pcapng ISB; btsnoop cumulative drops).
    public var statistics: InterfaceStatistics
    /// Comments on the interface block.
    public var comments: [String]

    public init(
        linkType: LinkType, name: String? = nil, description: String? = nil, snapLength: UInt32 = 0,
        nanosecondsPerTick: Double = 1, section: Int = 0,
        statistics: InterfaceStatistics = .init(), comments: [String] = []
    ) {
        self.linkType = linkType
        self.name = name
        self.description = description
        self.snapLength = snapLength
        self.nanosecondsPerTick = nanosecondsPerTick
        self.section = section
        self.statistics = statistics
        self.comments = comments
    }
}

/// Counters from an Interface Statistics Block (or their btsnoop equivalent). `nil` means absent.
public struct InterfaceStatistics: Sendable, Hashable {
    /// `isb_ifrecv`: packets received by the interface.
    public var received: UInt64?
    /// `isb_ifdrop`: packets dropped by the interface (or libpcap's `ps_drop + ps_ifdrop`).
    public var interfaceDropped: UInt64?
    /// `isb_osdrop`: packets dropped by the operating system.
    public var osDropped: UInt64?
    /// Timestamp of the statistics block, ns since the Unix epoch.
    public var timestampNs: Int64?

    public init(received: UInt64? = nil, interfaceDropped: UInt64? = nil, osDropped: UInt64? = nil, timestampNs: Int64? = nil) {
        self.received = received
        self.interfaceDropped = interfaceDropped
        self.osDropped = osDropped
        self.timestampNs = timestampNs
    }

    /// Every drop counter that is present, added up.
    public var totalDropped: UInt64 { (interfaceDropped ?? 0) + (osDropped ?? 0) }
}

/// A custom option (pcapng codes 2988 UTF-8 / 2989 binary) carried on a packet or block.
public struct CustomOption: Sendable, Hashable {
    /// The IANA Private Enterprise Number that owns the option.
    public var privateEnterpriseNumber: UInt32
    /// The option's value after the PEN.
    public var value: [UInt8]
    /// `true` for code 2988 (value is UTF-8 text), `false` for 2989 (binary).
    public var isUTF8: Bool

    public init(privateEnterpriseNumber: UInt32, value: [UInt8], isUTF8: Bool) {
        self.privateEnterpriseNumber = privateEnterpriseNumber
        self.value = value
        self.isUTF8 = isUTF8
    }
}

/// One captured frame, owning its bytes.
public struct CaptureFrame: Sendable, Hashable {
    /// 1-based position in the file, counting frames of every interface, as Wireshark numbers them.
    public var number: Int
    /// Index into the reader's ``CaptureReader/interfaces`` (global across pcapng sections).
    public var interfaceIndex: Int
    /// Capture time, nanoseconds since the Unix epoch.
    public var timestampNs: Int64
    /// Length on the wire; `data.count` is the captured length.
    public var originalLength: Int
    /// The frame's bytes under its interface's link type.
    public var data: [UInt8]
    /// Packet comments (`opt_comment`), in file order.
    public var comments: [String]
    /// Custom options on the packet.
    public var customOptions: [CustomOption]
    /// `epb_flags`, when present (direction in bits 0–1: 1 inbound, 2 outbound).
    public var flags: UInt32?

    public init(
        number: Int, interfaceIndex: Int, timestampNs: Int64, originalLength: Int, data: [UInt8],
        comments: [String] = [], customOptions: [CustomOption] = [], flags: UInt32? = nil
    ) {
        self.number = number
        self.interfaceIndex = interfaceIndex
        self.timestampNs = timestampNs
        self.originalLength = originalLength
        self.data = data
        self.comments = comments
        self.customOptions = customOptions
        self.flags = flags
    }
}

/// Something a reader noticed that does not stop reading, chiefly a file that ends early.
public struct CaptureWarning: Sendable, Hashable, CustomStringConvertible {
    /// What kind of thing was noticed.
    public enum Kind: Sendable, Hashable {
        /// The last block or record is cut off; every complete frame before it was kept.
        case truncated
        /// A block or option was skipped because Tether does not know it (it is kept out of frames).
        case skippedUnknown
        /// Anything else worth telling the user.
        case other
    }
    /// What kind of thing was noticed.
    public var kind: Kind
    /// The file, as given to the reader (or `<memory>`).
    public var file: String
    /// Byte offset in the file where the problem starts.
    public var offset: UInt64
    /// A sentence saying what happened and what it means for the user.
    public var message: String

    /// A warning about `file` at `offset`.
    public init(kind: Kind, file: String, offset: UInt64, message: String) {
        self.kind = kind
        self.file = file
        self.offset = offset
        self.message = message
    }

    /// One line: file, offset and message.
    public var description: String { "\(file): offset \(offset): \(message)" }
}
