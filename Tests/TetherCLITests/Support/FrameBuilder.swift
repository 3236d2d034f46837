import CaptureKit

/// Hand-built frames for the end-to-end tests, laid out byte by byte from the specifications so
/// the tests do not trust the code they check.
enum FrameBuilder {
    /// Ethernet II (zero MACs, as libpcap gives on `lo`) + IPv4 (no options, DF clear) + UDP
    /// (checksum 0, "none", RFC 768).
    static func ethernetUDP(source: [UInt8], sourcePort: UInt16, destination: [UInt8], destinationPort: UInt16, payload: [UInt8]) -> [UInt8] {
        var frame = [UInt8](repeating: 0, count: 12) + [0x08, 0x00]
        let totalLength = 20 + 8 + payload.count
        var ip: [UInt8] = [0x45, 0x00, UInt8(totalLength >> 8), UInt8(totalLength & 0xFF), 0x12, 0x34, 0x00, 0x00, 64, 17, 0, 0]
        ip += source + destination
        var sum: UInt32 = 0
        for index in stride(from: 0, to: ip.count, by: 2) { sum += UInt32(ip[index]) << 8 | UInt32(ip[index + 1]) }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        let checksum = ~UInt16(sum)
        ip[10] = UInt8(checksum >> 8)
        ip[11] = UInt8(checksum & 0xFF)
        let udpLength = 8 + payload.count
        let udp: [UInt8] = [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xFF), UInt8(destinationPort >> 8), UInt8(destinationPort & 0xFF),
                            UInt8(udpLength >> 8), UInt8(udpLength & 0xFF), 0, 0]
        frame += ip + udp + payload
        return frame
    }

    /// LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR: 4-byte big-endian direction (1 = received by the host),
    /// H4 type 2 (ACL), ACL header (handle, PB = first automatically flushable), L2CAP basic header
    /// on the ATT channel (CID 4), then the ATT PDU.
    static func h4ATT(received: Bool, connectionHandle: UInt16 = 0x0040, att: [UInt8]) -> [UInt8] {
        let l2capLength = att.count
        let aclLength = 4 + l2capLength
        let handleAndFlags = connectionHandle | 0x2000
        return [0, 0, 0, received ? 1 : 0, 0x02,
                UInt8(handleAndFlags & 0xFF), UInt8(handleAndFlags >> 8),
                UInt8(aclLength & 0xFF), UInt8(aclLength >> 8),
                UInt8(l2capLength & 0xFF), UInt8(l2capLength >> 8), 0x04, 0x00] + att
    }

    /// The frames the JSON and round-trip tests use: two UDP datagrams on an Ethernet interface and
    /// an ATT notification on an HCI interface, with ns timestamps and comments.
    static func sampleFrames() -> (interfaces: [CaptureInterface], frames: [CaptureFrame]) {
        let interfaces = [
            CaptureInterface(linkType: .ethernet, name: "lo", snapLength: 262_144),
            CaptureInterface(linkType: .bluetoothHCIH4WithPHDR, name: "hci0"),
        ]
        let base: Int64 = 1_700_000_000_123_456_789
        let udp1 = ethernetUDP(source: [127, 0, 0, 1], sourcePort: 50123, destination: [127, 0, 0, 1], destinationPort: 12345, payload: Array("{\"name\":\"a\"}".utf8))
        let udp2 = ethernetUDP(source: [127, 0, 0, 1], sourcePort: 50123, destination: [127, 0, 0, 1], destinationPort: 12345, payload: Array(repeating: 0x41, count: 512))
        let notification = h4ATT(received: true, att: [0x1B, 0x10, 0x00, 0x01, 0x02])
        let frames = [
            CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: base, originalLength: udp1.count, data: udp1, comments: ["first datagram"]),
            CaptureFrame(number: 2, interfaceIndex: 1, timestampNs: base + 1_000_001, originalLength: notification.count, data: notification),
            CaptureFrame(number: 3, interfaceIndex: 0, timestampNs: base + 2_000_000_007, originalLength: udp2.count, data: udp2, comments: ["second datagram", "512 bytes"]),
        ]
        return (interfaces, frames)
    }

    /// Write frames as pcapng with CaptureKit's writer.
    static func writePcapng(_ interfaces: [CaptureInterface], _ frames: [CaptureFrame], to path: String) throws {
        let writer = try PcapngWriter(path: path)
        for interface in interfaces { _ = try writer.addInterface(interface) }
        for frame in frames { try writer.write(frame) }
        try writer.close()
    }

    /// Every frame of a capture file, read with CaptureKit.
    static func readAll(_ path: String) throws -> (interfaces: [CaptureInterface], frames: [CaptureFrame], warnings: [CaptureWarning]) {
        let reader = try CaptureFile.open(path: path)
        var frames: [CaptureFrame] = []
        while let frame = try reader.next() { frames.append(frame) }
        return (reader.interfaces, frames, reader.warnings)
    }
}
