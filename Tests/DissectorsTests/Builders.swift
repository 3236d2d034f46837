import CaptureKit
@testable import Dissectors
import TetherTestSupport

// Hand-built frames. Each builder writes the layout its layer's spec gives, so a test reads as
// "this packet, under that link type".

func be16(_ value: UInt16) -> [UInt8] { [UInt8(value >> 8), UInt8(value & 0xFF)] }
func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
func be32(_ value: UInt32) -> [UInt8] { [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)] }

let loopback4: [UInt8] = [127, 0, 0, 1]
let loopback6: [UInt8] = Array(repeating: 0, count: 15) + [1]

/// RFC 768 header + payload (checksum left zero).
func udp(source: UInt16 = 50123, destination: UInt16 = 12345, payload: [UInt8]) -> [UInt8] {
    be16(source) + be16(destination) + be16(UInt16(8 + payload.count)) + [0, 0] + payload
}

/// RFC 9293 header (data offset 5, no options) + payload (checksum left zero).
func tcp(source: UInt16 = 50123, destination: UInt16 = 1883, sequence: UInt32, acknowledgment: UInt32 = 0,
         flags: UInt8 = TCPSegment.ack | TCPSegment.psh, payload: [UInt8]) -> [UInt8] {
    be16(source) + be16(destination) + be32(sequence) + be32(acknowledgment) + [0x50, flags] + be16(65535) + [0, 0, 0, 0] + payload
}

/// RFC 791 header (IHL 5) + payload. `fragmentField` is flags<<13 | offset/8.
func ipv4(source: [UInt8] = loopback4, destination: [UInt8] = loopback4, proto: UInt8 = 17,
          identification: UInt16 = 0x1c46, fragmentField: UInt16 = 0, payload: [UInt8]) -> [UInt8] {
    [0x45, 0] + be16(UInt16(20 + payload.count)) + be16(identification) + be16(fragmentField)
        + [64, proto, 0, 0] + source + destination + payload
}

/// RFC 8200 fixed header + payload.
func ipv6(source: [UInt8] = loopback6, destination: [UInt8] = loopback6, next: UInt8, payload: [UInt8]) -> [UInt8] {
    [0x60, 0, 0, 0] + be16(UInt16(payload.count)) + [next, 64] + source + destination + payload
}

/// IPv4 fragments of `payload` (the IP payload, e.g. a UDP header and data) for an MTU.
func ipv4Fragments(of payload: [UInt8], mtu: Int = 1500, identification: UInt16 = 0x1c46) -> [[UInt8]] {
    let chunk = (mtu - 20) / 8 * 8
    var fragments: [[UInt8]] = []
    var offset = 0
    while offset < payload.count {
        let end = min(offset + chunk, payload.count)
        let more: UInt16 = end < payload.count ? 0x2000 : 0
        fragments.append(ipv4(identification: identification, fragmentField: more | UInt16(offset / 8), payload: Array(payload[offset..<end])))
        offset = end
    }
    return fragments
}

/// Every IP link type, with the bytes it puts in front of a packet.
enum IPLinkCase: String, CaseIterable, Sendable, CustomStringConvertible {
    case ethernet, linuxSLL, linuxSLL2, nullLittleEndian, nullBigEndian, loop, raw, ipv4Only, ipv6Only

    var description: String { rawValue }

    var linkType: LinkType {
        switch self {
        case .ethernet: .ethernet
        case .linuxSLL: .linuxSLL
        case .linuxSLL2: .linuxSLL2
        case .nullLittleEndian, .nullBigEndian: .null
        case .loop: .loop
        case .raw: .raw
        case .ipv4Only: .ipv4
        case .ipv6Only: .ipv6
        }
    }

    /// IPv4-only and IPv6-only link types carry just their own version.
    var carriesIPv4: Bool { self != .ipv6Only }
    var carriesIPv6: Bool { self != .ipv4Only }

    func frame(_ packet: [UInt8], version: Int) -> [UInt8] {
        let etherType: UInt16 = version == 4 ? 0x0800 : 0x86DD
        switch self {
        case .ethernet: return Array(repeating: 0, count: 12) + be16(etherType) + packet
        case .linuxSLL: return be16(0) + be16(772) + be16(6) + Array(repeating: 0, count: 8) + be16(etherType) + packet
        case .linuxSLL2: return be16(etherType) + [0, 0] + be32(1) + be16(772) + [0, 6] + Array(repeating: 0, count: 8) + packet
        // NULL in little-endian from Linux (AF_INET6 10), big-endian from macOS (AF_INET6 30).
        case .nullLittleEndian: return (version == 4 ? [2, 0, 0, 0] : [10, 0, 0, 0]) + packet
        case .nullBigEndian: return (version == 4 ? [0, 0, 0, 2] : [0, 0, 0, 30]) + packet
        case .loop: return be32(version == 4 ? 2 : 24) + packet
        case .raw, .ipv4Only, .ipv6Only: return packet
        }
    }
}

func captureFrame(_ data: [UInt8], number: Int = 1, flags: UInt32? = nil) -> CaptureFrame {
    CaptureFrame(number: number, interfaceIndex: 0, timestampNs: 0, originalLength: data.count, data: data, flags: flags)
}

extension FrameDissector {
    mutating func dissect(_ data: [UInt8], _ linkType: LinkType, flags: UInt32? = nil) -> DissectedFrame {
        dissect(captureFrame(data, flags: flags), linkType: linkType)
    }
}

extension UDPExtractor {
    mutating func datagram(_ data: [UInt8], _ linkType: LinkType) -> UDPExtraction {
        data.withUnsafeBytes { datagram(from: $0, linkType: linkType) }
    }
}

// MARK: Bluetooth

/// LINKTYPE 201: 4-byte big-endian direction (0 sent, 1 received), H4 type, packet.
func phdr(_ direction: HCIDirection, _ h4: [UInt8]) -> [UInt8] {
    be32(direction == .received ? 1 : 0) + h4
}

/// H4 ACL packet: handle | PB << 12, length, data.
func aclPacket(handle: UInt16 = 0x0040, boundary: UInt16 = 0b10, _ data: [UInt8]) -> [UInt8] {
    [0x02] + le16(handle | boundary << 12) + le16(UInt16(data.count)) + data
}

/// L2CAP basic header + payload.
func l2cap(cid: UInt16 = 4, _ payload: [UInt8]) -> [UInt8] {
    le16(UInt16(payload.count)) + le16(cid) + payload
}

/// A 201 frame carrying one whole ATT PDU.
func attFrame(_ direction: HCIDirection, handle: UInt16 = 0x0040, _ pdu: [UInt8]) -> [UInt8] {
    phdr(direction, aclPacket(handle: handle, l2cap(pdu)))
}

func hciEvent(_ code: UInt8, _ parameters: [UInt8]) -> [UInt8] {
    [0x04, code, UInt8(parameters.count)] + parameters
}

func hciCommand(_ opcode: UInt16, _ parameters: [UInt8]) -> [UInt8] {
    [0x01] + le16(opcode) + [UInt8(parameters.count)] + parameters
}

/// The little-endian bytes ATT sends for a 128-bit UUID written in the usual text form.
func uuidLE(_ text: String) -> [UInt8] {
    let hexDigits = Array(text.filter { $0 != "-" })
    var bytes: [UInt8] = []
    var index = 0
    while index + 1 < hexDigits.count {
        bytes.append(UInt8(String(hexDigits[index...index + 1]), radix: 16) ?? 0)
        index += 2
    }
    return bytes.reversed()
}

