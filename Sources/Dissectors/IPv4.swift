/// The IPv4 header, RFC 791 §3.1: version/IHL (1), TOS (1), total length (u16 BE), identification
/// (u16 BE), flags (3 bits: reserved, DF, MF) + fragment offset in 8-byte units (13 bits), TTL (1),
/// protocol (1), header checksum (2), source (4), destination (4), options to IHL × 4 bytes.
///
/// The checksum is not verified: captures on `lo` and with checksum offload carry values the kernel
/// never filled in, and the bytes are what they are either way.
struct IPv4Header: Sendable, Hashable {
    static let minimumLength = 20

    var headerLength: Int
    var totalLength: Int
    var identification: UInt16
    var moreFragments: Bool
    /// In bytes (the field counts 8-byte units).
    var fragmentOffset: Int
    var proto: UInt8
    var source: IPAddress
    var destination: IPAddress

    var isFragment: Bool { moreFragments || fragmentOffset != 0 }

    /// Parses the header at `offset`; the payload is `offset + headerLength ..< offset + totalLength`
    /// (bytes past the total length are link-layer padding and are ignored).
    static func parse(_ frame: UnsafeRawBufferPointer, at offset: Int) -> Result<IPv4Header, DissectionProblem> {
        let available = frame.count - offset
        guard available >= minimumLength, let versionIHL = frame.u8(at: offset),
              let total = frame.u16be(at: offset + 2), let id = frame.u16be(at: offset + 4),
              let flagsOffset = frame.u16be(at: offset + 6), let proto = frame.u8(at: offset + 9),
              let source = frame.u32be(at: offset + 12),
              let destination = frame.u32be(at: offset + 16)
        else {
            return .failure(.short("IPv4", at: offset, need: minimumLength, what: "IPv4 header", have: available))
        }
        guard versionIHL >> 4 == 4 else {
            return .failure(DissectionProblem(
                layer: "IPv4", offset: offset, expected: "version 4", found: "version \(versionIHL >> 4)"))
        }
        let headerLength = Int(versionIHL & 0x0F) * 4
        guard headerLength >= minimumLength else {
            return .failure(DissectionProblem(
                layer: "IPv4", offset: offset, expected: "a header length (IHL) of at least 5 words",
                found: "IHL \(versionIHL & 0x0F)"))
        }
        guard headerLength <= available else {
            return .failure(.short("IPv4", at: offset, need: headerLength, what: "IPv4 header with options", have: available))
        }
        let totalLength = Int(total)
        guard totalLength >= headerLength else {
            return .failure(DissectionProblem(
                layer: "IPv4", offset: offset + 2, expected: "a total length of at least the header's \(headerLength) bytes",
                found: "total length \(totalLength)"))
        }
        guard totalLength <= available else {
            return .failure(DissectionProblem(
                layer: "IPv4", offset: offset + 2, expected: "\(totalLength) bytes as the total length says",
                found: "only \(available) captured (snap length too small, or a truncated frame)"))
        }
        return .success(IPv4Header(
            headerLength: headerLength, totalLength: totalLength, identification: id,
            moreFragments: flagsOffset & 0x2000 != 0, fragmentOffset: Int(flagsOffset & 0x1FFF) * 8,
            proto: proto, source: IPAddress(ipv4: source), destination: IPAddress(ipv4: destination)))
    }
}

/// IANA protocol numbers (https://www.iana.org/assignments/protocol-numbers), for summaries.
enum IPProtocol {
    static let hopByHop: UInt8 = 0
    static let icmp: UInt8 = 1
    static let tcp: UInt8 = 6
    static let udp: UInt8 = 17
    static let routing: UInt8 = 43
    static let fragment: UInt8 = 44
    static let esp: UInt8 = 50
    static let authentication: UInt8 = 51
    static let icmpv6: UInt8 = 58
    static let noNextHeader: UInt8 = 59
    static let destinationOptions: UInt8 = 60

    static func name(_ value: UInt8) -> String {
        switch value {
        case icmp: "ICMP"
        case 2: "IGMP"
        case tcp: "TCP"
        case udp: "UDP"
        case 47: "GRE"
        case esp: "ESP"
        case icmpv6: "ICMPv6"
        case noNextHeader: "no next header"
        case 132: "SCTP"
        case 136: "UDP-Lite"
        default: "protocol \(value)"
        }
    }
}
