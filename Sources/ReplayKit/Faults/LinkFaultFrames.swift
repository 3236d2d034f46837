import CaptureKit
import Dissectors

/// The frames a fault puts on a link, written in the capture's own link type so the engine's
/// dissectors read them as they read captured ones (docs/faults.md).
enum LinkFaultFrames {
    /// A BLE frame: its bytes and the pcapng `epb_flags` that give its direction.
    struct Frame: Sendable, Hashable {
        var bytes: [UInt8]
        var flags: UInt32?
    }

    /// HCI Disconnection Complete (event 0x05) for `handle`, status 0, `reason` (0x08, connection
    /// timeout, is what a link out of range gives), as the controller passes it to the host.
    static func disconnectionComplete(handle: UInt16, reason: UInt8 = 0x08, linkType: LinkType) -> Frame? {
        let event: [UInt8] = [0x05, 0x04, 0x00, UInt8(handle & 0xFF), UInt8((handle >> 8) & 0x0F), reason]
        switch linkType {
        case .bluetoothHCIH4WithPHDR: return Frame(bytes: [0, 0, 0, 1, 0x04] + event, flags: nil)
        case .bluetoothHCIH4: return Frame(bytes: [0x04] + event, flags: 1)
        case .bluetoothLinuxMonitor: return Frame(bytes: [0, 0, 0, 3] + event, flags: nil)
        default: return nil
        }
    }

    /// An ACL packet from the controller on `handle` carrying one ATT PDU on the ATT channel.
    static func inboundATT(handle: UInt16, pdu: [UInt8], linkType: LinkType) -> Frame? {
        let l2capLength = UInt16(pdu.count)
        let aclLength = l2capLength + 4
        // Packet boundary 0b10 (first automatically flushable), as controllers send LE data.
        let acl: [UInt8] = [UInt8(handle & 0xFF), UInt8((handle >> 8) & 0x0F) | 0x20, UInt8(aclLength & 0xFF), UInt8(aclLength >> 8),
                            UInt8(l2capLength & 0xFF), UInt8(l2capLength >> 8), 0x04, 0x00] + pdu
        switch linkType {
        case .bluetoothHCIH4WithPHDR: return Frame(bytes: [0, 0, 0, 1, 0x02] + acl, flags: nil)
        case .bluetoothHCIH4: return Frame(bytes: [0x02] + acl, flags: 1)
        case .bluetoothLinuxMonitor: return Frame(bytes: [0, 0, 0, 5] + acl, flags: nil)
        default: return nil
        }
    }

    /// An ACL packet carrying an ATT Exchange MTU Request or Response, with the MTU it states
    /// replaced by `size`, and the MTU it recorded; `nil` for any other packet (or a fragment).
    static func exchangeMTU(_ bytes: [UInt8], size: UInt16, linkType: LinkType) -> (bytes: [UInt8], recorded: UInt16)? {
        let acl: Int
        switch linkType {
        case .bluetoothHCIH4WithPHDR: acl = 5
        case .bluetoothHCIH4: acl = 1
        case .bluetoothLinuxMonitor: acl = 4
        default: return nil
        }
        // ACL header (4), L2CAP length and channel (4), then the 3-byte ATT PDU on channel 0x0004.
        let opcode = acl + 8
        guard bytes.count >= opcode + 3, bytes[acl + 6] == 0x04, bytes[acl + 7] == 0x00,
              bytes[opcode] == 0x02 || bytes[opcode] == 0x03 else { return nil }
        let recorded = UInt16(bytes[opcode + 1]) | UInt16(bytes[opcode + 2]) << 8
        var copy = bytes
        copy[opcode + 1] = UInt8(size & 0xFF)
        copy[opcode + 2] = UInt8(size >> 8)
        return (copy, recorded)
    }

    /// The connection handle of an HCI ACL packet, `nil` for anything else.
    static func aclHandle(_ bytes: UnsafeRawBufferPointer, linkType: LinkType) -> UInt16? {
        guard PeerFrameClassifier.isACL(bytes, linkType: linkType) else { return nil }
        let offset: Int
        switch linkType {
        case .bluetoothHCIH4WithPHDR: offset = 5
        case .bluetoothHCIH4: offset = 1
        default: offset = 4
        }
        guard bytes.count >= offset + 2 else { return nil }
        return UInt16(bytes[offset]) | (UInt16(bytes[offset + 1] & 0x0F) << 8)
    }

    /// Where the IP header starts under `linkType`, for the link types Tether records IP on.
    static func ipOffset(_ bytes: [UInt8], linkType: LinkType) -> Int? {
        switch linkType {
        case .ethernet:
            guard bytes.count >= 14 else { return nil }
            var offset = 12
            // 802.1Q tags.
            while offset + 2 <= bytes.count, bytes[offset] == 0x81, bytes[offset + 1] == 0x00 { offset += 4 }
            return offset + 2 <= bytes.count ? offset + 2 : nil
        case .raw, .ipv4, .ipv6: return 0
        case .null, .loop: return bytes.count >= 4 ? 4 : nil
        case .linuxSLL: return bytes.count >= 16 ? 16 : nil
        case .linuxSLL2: return bytes.count >= 20 ? 20 : nil
        default: return nil
        }
    }

    /// The frame with its UDP payload cut to `keep` bytes and the IP and UDP lengths made to
    /// agree (the UDP checksum is cleared); `nil` when the frame is not IPv4/IPv6 UDP on a link
    /// type this knows.
    static func truncatedUDP(_ bytes: [UInt8], keep: Int, linkType: LinkType) -> [UInt8]? {
        guard let ip = ipOffset(bytes, linkType: linkType), ip < bytes.count else { return nil }
        let version = bytes[ip] >> 4
        var frame = bytes
        let udp: Int
        if version == 4 {
            let ihl = Int(bytes[ip] & 0x0F) * 4
            guard ihl >= 20, bytes.count >= ip + ihl + 8, bytes[ip + 9] == 17 else { return nil }
            udp = ip + ihl
            let payload = Int(UInt16(bytes[udp + 4]) << 8 | UInt16(bytes[udp + 5])) - 8
            let kept = max(0, min(keep, payload, bytes.count - udp - 8))
            frame = Array(bytes[..<(udp + 8 + kept)])
            let total = UInt16(ihl + 8 + kept)
            frame[ip + 2] = UInt8(total >> 8); frame[ip + 3] = UInt8(total & 0xFF)
            frame[ip + 10] = 0; frame[ip + 11] = 0
            let sum = internetChecksum(frame[ip..<(ip + ihl)])
            frame[ip + 10] = UInt8(sum >> 8); frame[ip + 11] = UInt8(sum & 0xFF)
            setUDPLength(&frame, udp: udp, kept: kept)
        } else if version == 6 {
            guard bytes.count >= ip + 48, bytes[ip + 6] == 17 else { return nil }
            udp = ip + 40
            let payload = Int(UInt16(bytes[udp + 4]) << 8 | UInt16(bytes[udp + 5])) - 8
            let kept = max(0, min(keep, payload, bytes.count - udp - 8))
            frame = Array(bytes[..<(udp + 8 + kept)])
            let length = UInt16(8 + kept)
            frame[ip + 4] = UInt8(length >> 8); frame[ip + 5] = UInt8(length & 0xFF)
            setUDPLength(&frame, udp: udp, kept: kept)
        } else {
            return nil
        }
        return frame
    }

    private static func setUDPLength(_ frame: inout [UInt8], udp: Int, kept: Int) {
        let length = UInt16(8 + kept)
        frame[udp + 4] = UInt8(length >> 8); frame[udp + 5] = UInt8(length & 0xFF)
        frame[udp + 6] = 0; frame[udp + 7] = 0
    }

    /// A TCP segment with RST and ACK set, from `from` to `to` (the flow's endpoints, IPv4), at
    /// sequence number `sequence`, acknowledging `acknowledgment`: the broker resetting the
    /// connection. Written as the captured frame was framed (`template` gives the link-layer
    /// header), `nil` for IPv6 or an unknown link type.
    static func tcpReset(template: [UInt8], linkType: LinkType, flow: TCPFlowKey, sequence: UInt32, acknowledgment: UInt32) -> [UInt8]? {
        guard let ip = ipOffset(template, linkType: linkType), ip < template.count, template[ip] >> 4 == 4,
              let source = flow.sourceAddress.ipv4Bytes, let destination = flow.destinationAddress.ipv4Bytes else { return nil }
        var frame = Array(template[..<ip])
        var header: [UInt8] = [0x45, 0, 0, 40, 0, 0, 0x40, 0, 64, 6, 0, 0] + source + destination
        let sum = internetChecksum(header[...])
        header[10] = UInt8(sum >> 8); header[11] = UInt8(sum & 0xFF)
        frame += header
        var tcp: [UInt8] = [UInt8(flow.sourcePort >> 8), UInt8(flow.sourcePort & 0xFF), UInt8(flow.destinationPort >> 8), UInt8(flow.destinationPort & 0xFF)]
        tcp += bigEndian(sequence) + bigEndian(acknowledgment)
        tcp += [0x50, 0x14, 0, 0, 0, 0, 0, 0]
        // The checksum over the IPv4 pseudo-header, as a receiver would check it.
        let pseudo = source + destination + [0, 6, 0, 20] + tcp
        let checksum = internetChecksum(pseudo[...])
        tcp[16] = UInt8(checksum >> 8); tcp[17] = UInt8(checksum & 0xFF)
        frame += tcp
        return frame
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }

    /// RFC 1071's one's-complement sum.
    static func internetChecksum(_ bytes: ArraySlice<UInt8>) -> UInt16 {
        var sum: UInt32 = 0
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            sum += UInt32(bytes[index]) << 8 | UInt32(bytes[index + 1])
            index += 2
        }
        if index < bytes.endIndex { sum += UInt32(bytes[index]) << 8 }
        while sum >> 16 != 0 { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }
}

extension IPAddress {
    /// The four bytes of an IPv4 address, `nil` for IPv6.
    var ipv4Bytes: [UInt8]? {
        isIPv4 ? bytes : nil
    }
}
