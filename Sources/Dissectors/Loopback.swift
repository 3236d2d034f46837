/// BSD loopback encapsulation.
///
/// - LINKTYPE_NULL (0), https://www.tcpdump.org/linktypes/LINKTYPE_NULL.html: a 4-byte address
///   family in the byte order of the host that wrote the capture, which the file does not say.
/// - LINKTYPE_LOOP (108), https://www.tcpdump.org/linktypes/LINKTYPE_LOOP.html: the same 4 bytes
///   in network byte order.
///
/// AF_INET is 2 everywhere; AF_INET6 is 10 on Linux, 24 on NetBSD/OpenBSD, 28 on FreeBSD and 30 on
/// macOS/iOS — a capture may come from any of them.
enum Loopback {
    static let headerLength = 4

    static func parseNull(_ frame: UnsafeRawBufferPointer) -> Result<LinkLayerResult, DissectionProblem> {
        guard let little = frame.u32le(at: 0), let big = frame.u32be(at: 0) else {
            return .failure(.short("NULL", at: 0, need: headerLength, what: "address family", have: frame.count))
        }
        // Families are small numbers, so whichever reading leaves the top half zero is the one the
        // writer used.
        let family = little & 0xFFFF_0000 == 0 ? little : big
        return .success(LinkLayerResult(network: network(family: family), offset: headerLength))
    }

    static func parseLoop(_ frame: UnsafeRawBufferPointer) -> Result<LinkLayerResult, DissectionProblem> {
        guard let family = frame.u32be(at: 0) else {
            return .failure(.short("LOOP", at: 0, need: headerLength, what: "address family", have: frame.count))
        }
        return .success(LinkLayerResult(network: network(family: family), offset: headerLength))
    }

    static func network(family: UInt32) -> NetworkLayer {
        switch family {
        case 2: .ipv4
        case 10, 24, 28, 30: .ipv6
        default: .other("address family \(family)")
        }
    }
}

/// LINKTYPE_RAW (101): the first nibble says IPv4 or IPv6
/// (https://www.tcpdump.org/linktypes/LINKTYPE_RAW.html). LINKTYPE_IPV4 (228) and LINKTYPE_IPV6
/// (229) fix the version instead.
enum RawIP {
    static func parse(_ frame: UnsafeRawBufferPointer) -> Result<LinkLayerResult, DissectionProblem> {
        guard let first = frame.u8(at: 0) else {
            return .failure(.short("RAW", at: 0, need: 1, what: "IP version", have: frame.count))
        }
        switch first >> 4 {
        case 4: return .success(LinkLayerResult(network: .ipv4, offset: 0))
        case 6: return .success(LinkLayerResult(network: .ipv6, offset: 0))
        default:
            return .failure(DissectionProblem(
                layer: "RAW", offset: 0, expected: "IP version 4 or 6 in the first nibble",
                found: "version \(first >> 4)"))
        }
    }
}
