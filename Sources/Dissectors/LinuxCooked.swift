/// Linux "cooked" capture headers, what libpcap produces for the `any` device and for devices
/// without a link-layer header.
///
/// - SLL, LINKTYPE_LINUX_SLL (113), https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL.html:
///   16 bytes, big-endian: packet type (2), ARPHRD type (2), address length (2), address (8),
///   protocol type (2).
/// - SLL2, LINKTYPE_LINUX_SLL2 (276), https://www.tcpdump.org/linktypes/LINKTYPE_LINUX_SLL2.html:
///   20 bytes, big-endian: protocol type (2), reserved (2), interface index (4), ARPHRD type (2),
///   packet type (1), address length (1), address (8).
///
/// The protocol type is an EtherType, except for a few small values (1 Novell 802.3, 4 802.2 LLC,
/// …) and for ARPHRD_NETLINK (824), where it is a netlink family.
enum LinuxCooked {
    static let sllLength = 16
    static let sll2Length = 20
    static let arphrdNetlink: UInt16 = 824

    static func parseSLL(_ frame: UnsafeRawBufferPointer) -> Result<LinkLayerResult, DissectionProblem> {
        guard frame.has(sllLength, at: 0), let arphrd = frame.u16be(at: 2), let proto = frame.u16be(at: 14) else {
            return .failure(.short("Linux SLL", at: 0, need: sllLength, what: "cooked header", have: frame.count))
        }
        return .success(LinkLayerResult(network: network(protocol: proto, arphrd: arphrd), offset: sllLength))
    }

    static func parseSLL2(_ frame: UnsafeRawBufferPointer) -> Result<LinkLayerResult, DissectionProblem> {
        guard frame.has(sll2Length, at: 0), let proto = frame.u16be(at: 0), let arphrd = frame.u16be(at: 8) else {
            return .failure(.short("Linux SLL2", at: 0, need: sll2Length, what: "cooked header", have: frame.count))
        }
        return .success(LinkLayerResult(network: network(protocol: proto, arphrd: arphrd), offset: sll2Length))
    }

    private static func network(protocol proto: UInt16, arphrd: UInt16) -> NetworkLayer {
        if arphrd == arphrdNetlink { return .other("Netlink family \(proto)") }
        switch proto {
        case 0x0001: return .other("Novell 802.3")
        case 0x0004: return .other("IEEE 802.2 LLC")
        case 0x000C: return .other("CAN")
        default: return EtherType.network(proto)
        }
    }
}
