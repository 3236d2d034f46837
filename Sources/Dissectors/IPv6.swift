/// The IPv6 fixed header, RFC 8200 §3: version/traffic class/flow label (4), payload length (u16
/// BE), next header (1), hop limit (1), source (16), destination (16); then a chain of extension
/// headers (§4): Hop-by-Hop Options (0), Routing (43), Destination Options (60) and the other
/// RFC 8200-shaped headers whose length byte counts 8-byte units beyond the first; Authentication
/// (51, RFC 4302 §2.2) counts 4-byte units beyond the first two; Fragment (44, §4.5) is 8 bytes:
/// next header, reserved, offset (13 bits, 8-byte units) + 2 reserved bits + M flag, identification
/// (u32 BE).
struct IPv6Header: Sendable, Hashable {
    static let fixedLength = 40

    var payloadLength: Int
    var nextHeader: UInt8
    var source: IPAddress
    var destination: IPAddress

    static func parse(_ frame: UnsafeRawBufferPointer, at offset: Int) -> Result<IPv6Header, DissectionProblem> {
        let available = frame.count - offset
        guard available >= fixedLength, let first = frame.u8(at: offset),
              let payloadLength = frame.u16be(at: offset + 4), let next = frame.u8(at: offset + 6),
              let sourceHigh = frame.u64be(at: offset + 8), let sourceLow = frame.u64be(at: offset + 16),
              let destinationHigh = frame.u64be(at: offset + 24), let destinationLow = frame.u64be(at: offset + 32)
        else {
            return .failure(.short("IPv6", at: offset, need: fixedLength, what: "IPv6 header", have: available))
        }
        guard first >> 4 == 6 else {
            return .failure(DissectionProblem(layer: "IPv6", offset: offset, expected: "version 6", found: "version \(first >> 4)"))
        }
        if payloadLength == 0 && next == IPProtocol.hopByHop {
            return .failure(DissectionProblem(
                layer: "IPv6", offset: offset + 4, expected: "a payload length (jumbograms are not supported)",
                found: "payload length 0 with a Hop-by-Hop header"))
        }
        guard Int(payloadLength) <= available - fixedLength else {
            return .failure(DissectionProblem(
                layer: "IPv6", offset: offset + 4, expected: "\(payloadLength) payload bytes as the payload length says",
                found: "only \(available - fixedLength) captured (snap length too small, or a truncated frame)"))
        }
        return .success(IPv6Header(
            payloadLength: Int(payloadLength), nextHeader: next,
            source: IPAddress(ipv6High: sourceHigh, low: sourceLow), destination: IPAddress(ipv6High: destinationHigh, low: destinationLow)))
    }

    /// What the extension-header chain leads to.
    enum ChainEnd: Sendable, Hashable {
        /// An upper-layer header `proto` at `offset`, running to the end of the payload.
        case upper(proto: UInt8, offset: Int)
        /// A Fragment header: the fragment's data starts at `dataOffset`.
        case fragment(nextHeader: UInt8, fragmentOffset: Int, moreFragments: Bool, identification: UInt32, dataOffset: Int)
    }

    /// Walks extension headers starting with `next` at `offset`, within `..<end`. An atomic fragment
    /// (offset 0, M clear; RFC 8200 §4.5, RFC 6946) is stepped over like any other header.
    static func walk(_ buffer: UnsafeRawBufferPointer, next: UInt8, offset: Int, end: Int, context: String? = nil) -> Result<ChainEnd, DissectionProblem> {
        var proto = next
        var position = offset
        // A real chain is a handful of headers; the cap stops a crafted loop of 2-byte headers.
        for _ in 0..<32 {
            switch proto {
            case IPProtocol.hopByHop, IPProtocol.routing, IPProtocol.destinationOptions, 135, 139, 140, 253, 254:
                guard position + 2 <= end, let nh = buffer.u8(at: position), let units = buffer.u8(at: position + 1) else {
                    return .failure(.short("IPv6", at: position, need: 2, what: "extension header", have: end - position, context: context))
                }
                let length = (Int(units) + 1) * 8
                guard position + length <= end else {
                    return .failure(.short("IPv6", at: position, need: length, what: "extension header \(proto)", have: end - position, context: context))
                }
                proto = nh
                position += length
            case IPProtocol.authentication:
                guard position + 2 <= end, let nh = buffer.u8(at: position), let units = buffer.u8(at: position + 1) else {
                    return .failure(.short("IPv6", at: position, need: 2, what: "Authentication header", have: end - position, context: context))
                }
                let length = (Int(units) + 2) * 4
                guard position + length <= end else {
                    return .failure(.short("IPv6", at: position, need: length, what: "Authentication header", have: end - position, context: context))
                }
                proto = nh
                position += length
            case IPProtocol.fragment:
                guard position + 8 <= end, let nh = buffer.u8(at: position), let field = buffer.u16be(at: position + 2),
                      let id = buffer.u32be(at: position + 4)
                else {
                    return .failure(.short("IPv6", at: position, need: 8, what: "Fragment header", have: end - position, context: context))
                }
                let fragmentOffset = Int(field >> 3) * 8
                let more = field & 1 != 0
                if fragmentOffset == 0 && !more {
                    proto = nh
                    position += 8
                    continue
                }
                return .success(.fragment(nextHeader: nh, fragmentOffset: fragmentOffset, moreFragments: more, identification: id, dataOffset: position + 8))
            default:
                return .success(.upper(proto: proto, offset: position))
            }
        }
        return .failure(DissectionProblem(
            layer: "IPv6", offset: position, expected: "an upper-layer header within 32 extension headers",
            found: "a longer chain", context: context))
    }
}
