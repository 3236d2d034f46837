/// A link-layer header type, as registered in the tcpdump.org LINKTYPE_ list and used in pcap's
/// global header and pcapng's Interface Description Block.
///
/// Unknown values are values, not errors: a reader keeps the frames of an interface whose link
/// type it cannot dissect, and a dissector says it does not know the type.
public struct LinkType: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// `LINKTYPE_NULL` (0): 4-byte address family in the capturing host's byte order.
    public static let null = LinkType(rawValue: 0)
    /// `LINKTYPE_ETHERNET` (1): what libpcap gives on Linux `lo`, with zero MAC addresses.
    public static let ethernet = LinkType(rawValue: 1)
    /// `LINKTYPE_RAW` (101): IPv4 or IPv6 at once.
    public static let raw = LinkType(rawValue: 101)
    /// `LINKTYPE_LOOP` (108): 4-byte address family in network byte order.
    public static let loop = LinkType(rawValue: 108)
    /// `LINKTYPE_LINUX_SLL` (113): 16-byte Linux cooked header.
    public static let linuxSLL = LinkType(rawValue: 113)
    /// `LINKTYPE_BLUETOOTH_HCI_H4` (187): H4 type byte, then the HCI packet; no direction.
    public static let bluetoothHCIH4 = LinkType(rawValue: 187)
    /// `LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR` (201): 4-byte big-endian direction, then H4.
    public static let bluetoothHCIH4WithPHDR = LinkType(rawValue: 201)
    /// `LINKTYPE_IPV4` (228).
    public static let ipv4 = LinkType(rawValue: 228)
    /// `LINKTYPE_IPV6` (229).
    public static let ipv6 = LinkType(rawValue: 229)
    /// `LINKTYPE_BLUETOOTH_LE_LL` (251).
    public static let bluetoothLELL = LinkType(rawValue: 251)
    /// `LINKTYPE_BLUETOOTH_LINUX_MONITOR` (254): adapter index (u16 BE), opcode (u16 BE), payload.
    public static let bluetoothLinuxMonitor = LinkType(rawValue: 254)
    /// `LINKTYPE_BLUETOOTH_LE_LL_WITH_PHDR` (256).
    public static let bluetoothLELLWithPHDR = LinkType(rawValue: 256)
    /// `LINKTYPE_LINUX_SLL2` (276): 20-byte Linux cooked header, what libpcap gives on `any`.
    public static let linuxSLL2 = LinkType(rawValue: 276)
    /// `LINKTYPE_USER0` (147): Tether's app API-call records, one UTF-8 JSON object per frame
    /// (docs/capture-set.md). Wireshark shows them as user data, or as JSON with the shipped Lua
    /// dissector (`Harness/wireshark/connectiq.lua`).
    public static let user0 = LinkType(rawValue: 147)
    /// `LINKTYPE_USER1` (148): Tether's App Group container events, one UTF-8 JSON object per
    /// frame, recorded from inotify (docs/app-group-link.md).
    public static let user1 = LinkType(rawValue: 148)

    /// The registry name without the `LINKTYPE_` prefix, or the number for a type Tether does not know.
    public var name: String {
        switch self {
        case .null: "NULL"
        case .ethernet: "ETHERNET"
        case .raw: "RAW"
        case .loop: "LOOP"
        case .linuxSLL: "LINUX_SLL"
        case .bluetoothHCIH4: "BLUETOOTH_HCI_H4"
        case .bluetoothHCIH4WithPHDR: "BLUETOOTH_HCI_H4_WITH_PHDR"
        case .ipv4: "IPV4"
        case .ipv6: "IPV6"
        case .bluetoothLELL: "BLUETOOTH_LE_LL"
        case .bluetoothLinuxMonitor: "BLUETOOTH_LINUX_MONITOR"
        case .bluetoothLELLWithPHDR: "BLUETOOTH_LE_LL_WITH_PHDR"
        case .linuxSLL2: "LINUX_SLL2"
        case .user0: "USER0"
        case .user1: "USER1"
        default: "LINKTYPE_\(rawValue)"
        }
    }

    public var description: String { "\(name) (\(rawValue))" }
}
