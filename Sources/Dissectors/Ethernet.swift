/// What a link-layer header says comes next.
enum NetworkLayer: Sendable, Hashable {
    case ipv4
    case ipv6
    /// Not IP; the text names it for the summary (e.g. `ARP`, `address family 17`).
    case other(String)
}

/// Where the network-layer packet starts and what it is.
struct LinkLayerResult: Sendable, Hashable {
    var network: NetworkLayer
    /// Offset of the network-layer header within the frame.
    var offset: Int
}

/// EtherType values (IEEE 802 numbers registry, as used by Ethernet II and the Linux cooked headers).
enum EtherType {
    static let ipv4: UInt16 = 0x0800
    static let arp: UInt16 = 0x0806
    static let vlan: UInt16 = 0x8100
    static let ipv6: UInt16 = 0x86DD
    static let qinq: UInt16 = 0x88A8

    /// IP or a named other protocol; values below 0x0600 are 802.3 lengths, not types.
    static func network(_ type: UInt16) -> NetworkLayer {
        switch type {
        case ipv4: .ipv4
        case ipv6: .ipv6
        case arp: .other("ARP")
        case 0x8035: .other("RARP")
        case 0x88CC: .other("LLDP")
        case 0x8809: .other("Slow Protocols")
        case ..<0x0600: .other("IEEE 802.3 length \(type)")
        default: .other("EtherType \(hex(type, digits: 4))")
        }
    }
}

/// Ethernet II framing, LINKTYPE_ETHERNET (1) per https://www.tcpdump.org/linktypes.html and
/// IEEE 802.3 clause 3.2: destination MAC (6), source MAC (6), EtherType (u16 BE), optionally
/// preceded by IEEE 802.1Q / 802.1ad tags (4 bytes each: TPID 0x8100/0x88A8, TCI). No FCS is
/// captured on Linux. On `lo` both MACs are zero.
enum Ethernet {
    static let headerLength = 14

    static func parse(_ frame: UnsafeRawBufferPointer) -> Result<LinkLayerResult, DissectionProblem> {
        guard var type = frame.u16be(at: 12) else {
            return .failure(.short("Ethernet", at: 0, need: headerLength, what: "Ethernet header", have: frame.count))
        }
        var offset = headerLength
        // At most two tags (802.1ad outer, 802.1Q inner); more would be a malformed frame.
        var tags = 0
        while type == EtherType.vlan || type == EtherType.qinq {
            guard tags < 2 else {
                return .failure(DissectionProblem(
                    layer: "Ethernet", offset: offset - 2, expected: "at most two VLAN tags",
                    found: "a third tag"))
            }
            guard let inner = frame.u16be(at: offset + 2) else {
                return .failure(.short("Ethernet", at: offset, need: 4, what: "802.1Q tag", have: frame.count - offset))
            }
            type = inner
            offset += 4
            tags += 1
        }
        return .success(LinkLayerResult(network: EtherType.network(type), offset: offset))
    }
}
