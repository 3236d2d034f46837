import CaptureKit

/// The IP layer: where the IPv4/IPv6 header, the addresses and the TCP or UDP segment sit in a
/// frame of an IP link type (Ethernet, Linux SLL and SLL2, raw, null/loop), and fixing the IPv4
/// header, TCP and UDP checksums after a rewrite (RFC 791, 793, 768, 8200; RFC 1624's
/// incremental update, so a checksum a sending host left to its NIC stays as wrong as it was).
enum IPRedaction {
    /// Where things are in one frame.
    struct Layout {
        var ipOffset: Int
        var isIPv4: Bool
        /// The addresses' offsets (source, destination) and length.
        var addressOffsets: [Int]
        var addressLength: Int
        /// The transport header's offset and protocol (6 TCP, 17 UDP), when this frame holds the
        /// whole transport header (not a later fragment).
        var transport: (offset: Int, proto: UInt8)?
        /// The end of the IP packet within the captured bytes.
        var end: Int
    }

    /// Whether frames of `linkType` carry IP.
    static func reads(_ linkType: LinkType) -> Bool {
        [LinkType.null, .ethernet, .raw, .loop, .linuxSLL, .linuxSLL2, .ipv4, .ipv6].contains(linkType)
    }

    /// The IP layout of a frame, or nil when it holds no IP packet this layer reads.
    static func layout(_ d: [UInt8], linkType: LinkType) -> Layout? {
        var at: Int
        switch linkType {
        case .ethernet:
            guard d.count >= 14 else { return nil }
            at = 12
            var type = UInt16(d[12]) << 8 | UInt16(d[13])
            while type == 0x8100 || type == 0x88A8 {
                guard d.count >= at + 6 else { return nil }
                at += 4
                type = UInt16(d[at]) << 8 | UInt16(d[at + 1])
            }
            guard type == 0x0800 || type == 0x86DD else { return nil }
            at += 2
        case .linuxSLL: at = 16
        case .linuxSLL2: at = 20
        case .null, .loop: at = 4
        case .raw, .ipv4, .ipv6: at = 0
        default: return nil
        }
        guard d.count > at else { return nil }
        switch d[at] >> 4 {
        case 4:
            let headerLength = Int(d[at] & 0x0F) * 4
            guard headerLength >= 20, d.count >= at + headerLength else { return nil }
            let total = Int(d[at + 2]) << 8 | Int(d[at + 3])
            let end = min(d.count, at + max(total, headerLength))
            let fragmentOffset = (Int(d[at + 6]) & 0x1F) << 8 | Int(d[at + 7])
            let more = d[at + 6] & 0x20 != 0
            let proto = d[at + 9]
            let whole = fragmentOffset == 0 && !more
            return Layout(ipOffset: at, isIPv4: true, addressOffsets: [at + 12, at + 16], addressLength: 4,
                          transport: whole && (proto == 6 || proto == 17) ? (at + headerLength, proto) : nil, end: end)
        case 6:
            guard d.count >= at + 40 else { return nil }
            let payload = Int(d[at + 4]) << 8 | Int(d[at + 5])
            let end = min(d.count, at + 40 + payload)
            let next = d[at + 6]
            return Layout(ipOffset: at, isIPv4: false, addressOffsets: [at + 8, at + 24], addressLength: 16,
                          transport: next == 6 || next == 17 ? (at + 40, next) : nil, end: end)
        default:
            return nil
        }
    }

    /// The TCP payload's range and ports of a frame, if it carries TCP.
    static func tcpPayload(_ d: [UInt8], _ layout: Layout) -> (range: Range<Int>, sourcePort: UInt16, destinationPort: UInt16)? {
        guard let (t, proto) = layout.transport, proto == 6, layout.end >= t + 20 else { return nil }
        let dataOffset = Int(d[t + 12] >> 4) * 4
        guard dataOffset >= 20, t + dataOffset <= layout.end else { return nil }
        return (t + dataOffset..<layout.end, UInt16(d[t]) << 8 | UInt16(d[t + 1]), UInt16(d[t + 2]) << 8 | UInt16(d[t + 3]))
    }

    /// The TCP or UDP payload's range of a frame, if it carries a whole transport header.
    static func transportPayload(_ d: [UInt8], _ layout: Layout) -> Range<Int>? {
        guard let (t, proto) = layout.transport else { return nil }
        if proto == 6 { return tcpPayload(d, layout)?.range }
        guard t + 8 <= layout.end else { return nil }
        return (t + 8)..<layout.end
    }

    /// One's-complement sum of `d[range]` as 16-bit big-endian words (not folded to 16 bits).
    static func sum(_ d: [UInt8], _ range: Range<Int>) -> UInt64 {
        var total: UInt64 = 0
        var i = range.lowerBound
        while i + 1 < range.upperBound {
            total += UInt64(d[i]) << 8 | UInt64(d[i + 1])
            i += 2
        }
        if i < range.upperBound { total += UInt64(d[i]) << 8 }
        return total
    }

    static func fold(_ value: UInt64) -> UInt16 {
        var v = value
        while v > 0xFFFF { v = (v & 0xFFFF) + (v >> 16) }
        return UInt16(v)
    }

    /// RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), with m and m' the sums over what changed.
    static func adjust(_ checksum: UInt16, oldSum: UInt64, newSum: UInt64) -> UInt16 {
        let value = UInt64(~checksum) + UInt64(~fold(oldSum)) + newSum
        return ~fold(value)
    }

    /// The sums a transport checksum covers that a rewrite can change: the pseudo-header's
    /// addresses and the captured segment.
    private static func coveredSum(_ d: [UInt8], _ layout: Layout, transport: Int) -> UInt64 {
        var total = sum(d, transport..<layout.end)
        for offset in layout.addressOffsets { total += sum(d, offset..<(offset + layout.addressLength)) }
        return total
    }

    /// Rewrites one frame: `edit` changes the bytes (addresses, payload strings); the IPv4 header,
    /// TCP and UDP checksums are then updated for what changed.
    static func rewrite(_ d: inout [UInt8], _ layout: Layout, edit: (inout [UInt8]) -> Void) {
        let ip = layout.ipOffset
        let headerEnd = layout.isIPv4 ? ip + Int(d[ip] & 0x0F) * 4 : ip + 40
        let oldHeader = layout.isIPv4 ? sum(d, ip..<headerEnd) : 0
        var checksumAt: Int?
        if let (t, proto) = layout.transport {
            let at = t + (proto == 6 ? 16 : 6)
            if at + 2 <= layout.end { checksumAt = at }
        }
        let oldTransport = layout.transport.map { coveredSum(d, layout, transport: $0.offset) } ?? 0
        let before = d
        edit(&d)
        guard d.count == before.count else { return }
        if layout.isIPv4 {
            let old = UInt16(d[ip + 10]) << 8 | UInt16(d[ip + 11])
            let new = adjust(old, oldSum: oldHeader, newSum: sum(d, ip..<headerEnd))
            d[ip + 10] = UInt8(new >> 8); d[ip + 11] = UInt8(new & 0xFF)
        }
        if let (t, proto) = layout.transport, let at = checksumAt {
            let old = UInt16(d[at]) << 8 | UInt16(d[at + 1])
            // A UDP checksum of 0 over IPv4 means "none": keep it so.
            if proto == 17, old == 0, layout.isIPv4 { return }
            var new = adjust(old, oldSum: oldTransport, newSum: coveredSum(d, layout, transport: t))
            if proto == 17, new == 0 { new = 0xFFFF }
            d[at] = UInt8(new >> 8); d[at + 1] = UInt8(new & 0xFF)
        }
    }
}
