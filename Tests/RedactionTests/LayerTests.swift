import CaptureKit
import Dissectors
import MQTT
import Testing
@testable import Redaction

/// Frames laid out byte by byte from the specifications, so the tests do not trust the code they check.
enum Frames {
    static func h4ATT(received: Bool, att: [UInt8]) -> [UInt8] {
        let handle: UInt16 = 0x0040 | 0x2000
        return [0, 0, 0, received ? 1 : 0, 0x02, UInt8(handle & 0xFF), UInt8(handle >> 8),
                UInt8((4 + att.count) & 0xFF), 0, UInt8(att.count & 0xFF), 0, 0x04, 0x00] + att
    }

    /// Ethernet + IPv4 + TCP carrying `payload`, all checksums correct.
    static func ethernetTCP(source: [UInt8], destination: [UInt8], sourcePort: UInt16, destinationPort: UInt16, payload: [UInt8]) -> [UInt8] {
        let total = 20 + 20 + payload.count
        var ip: [UInt8] = [0x45, 0, UInt8(total >> 8), UInt8(total & 0xFF), 0, 1, 0x40, 0, 64, 6, 0, 0] + source + destination
        let ipSum = checksum(ip)
        ip[10] = UInt8(ipSum >> 8); ip[11] = UInt8(ipSum & 0xFF)
        var tcp: [UInt8] = [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xFF), UInt8(destinationPort >> 8), UInt8(destinationPort & 0xFF),
                            0, 0, 0, 1, 0, 0, 0, 0, 0x50, 0x18, 0xFF, 0xFF, 0, 0, 0, 0] + payload
        let pseudo = source + destination + [0, 6, UInt8((tcp.count) >> 8), UInt8(tcp.count & 0xFF)]
        let tcpSum = checksum(pseudo + tcp)
        tcp[16] = UInt8(tcpSum >> 8); tcp[17] = UInt8(tcpSum & 0xFF)
        return [UInt8](repeating: 0, count: 12) + [0x08, 0x00] + ip + tcp
    }

    static func checksum(_ bytes: [UInt8]) -> UInt16 {
        var sum: UInt32 = 0
        var i = 0
        while i + 1 < bytes.count { sum += UInt32(bytes[i]) << 8 | UInt32(bytes[i + 1]); i += 2 }
        if i < bytes.count { sum += UInt32(bytes[i]) << 8 }
        while sum > 0xFFFF { sum = (sum & 0xFFFF) + (sum >> 16) }
        return ~UInt16(sum)
    }

    /// Whether the IPv4 header and TCP checksums of an Ethernet frame verify.
    static func checksumsVerify(_ frame: [UInt8]) -> Bool {
        let ip = Array(frame[14..<34])
        let tcp = Array(frame[34...])
        let pseudo = Array(ip[12..<20]) + [0, 6, UInt8(tcp.count >> 8), UInt8(tcp.count & 0xFF)]
        return checksum(ip) == 0 && checksum(pseudo + tcp) == 0
    }

    static func connect(clientID: String, username: String, password: String) throws -> [UInt8] {
        try MQTTPacket(type: .connect, body: .connect(MQTTConnect(
            protocolName: "MQTT", version: .v3_1_1, cleanSession: true, keepAlive: 30, clientID: clientID,
            will: nil, username: username, password: Array(password.utf8), properties: []))).encoded(version: .v3_1_1)
    }
}

@Suite struct GATTRedactionTests {
    @Test func deviceNameReadResponseIsReplaced() {
        let name = Array("Kai's Fenix".utf8)
        let frames = [
            CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1, originalLength: 16, data: Frames.h4ATT(received: false, att: [0x0A, 0x03, 0x00])),
            CaptureFrame(number: 2, interfaceIndex: 0, timestampNs: 2, originalLength: 0, data: Frames.h4ATT(received: true, att: [0x0B] + name)),
        ]
        let interfaces = [CaptureInterface(linkType: .bluetoothHCIH4WithPHDR)]
        var map = RedactionMap()
        let reads = GATTRedaction.discover(frames, interfaces: interfaces, namedHandles: [3: (nil, "2a00")], into: &map)
        #expect(reads == [2])
        var data = frames[1].data
        let names = map.entries.map { ByteSubstitution($0.original, $0.placeholder, boundary: .none) }
        #expect(GATTRedaction.rewrite(&data, linkType: .bluetoothHCIH4WithPHDR, names: names) == 1)
        #expect(data.count == frames[1].data.count)
        #expect(ByteSubstitution.containsAny([name], in: data) == nil)
    }
}

@Suite struct MQTTAndIPRedactionTests {
    static let client: [UInt8] = [127, 0, 0, 1]
    static let broker: [UInt8] = [10, 1, 2, 3]

    func connectFrame() throws -> CaptureFrame {
        let payload = try Frames.connect(clientID: "phone-7f3a9", username: "kai@example.com", password: "hunter2!")
        let data = Frames.ethernetTCP(source: Self.client, destination: Self.broker, sourcePort: 40000, destinationPort: 1883, payload: payload)
        return CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1, originalLength: data.count, data: data)
    }

    @Test func connectClientIDUsernameAndPasswordAreReplacedAndStillDecode() throws {
        let frame = try connectFrame()
        var map = RedactionMap()
        MQTTRedaction.discover([frame], interfaces: [CaptureInterface(linkType: .ethernet)], ports: [1883], into: &map)
        #expect(map.originals(of: .clientID) == [Array("phone-7f3a9".utf8)])
        #expect(map.originals(of: .username) == [Array("kai@example.com".utf8)])
        #expect(map.originals(of: .password) == [Array("hunter2!".utf8)])
        var data = frame.data
        let layout = try #require(IPRedaction.layout(data, linkType: .ethernet))
        IPRedaction.rewrite(&data, layout) { bytes in
            let tcp = IPRedaction.tcpPayload(bytes, layout)!
            #expect(MQTTRedaction.rewrite(&bytes, payload: tcp.range, map: map).values.reduce(0, +) == 3)
        }
        #expect(Frames.checksumsVerify(data))
        var dissector = FrameDissector()
        let dissected = dissector.dissect(CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1, originalLength: data.count, data: data), linkType: .ethernet)
        guard case .connect(let connect)? = dissected.mqtt.first?.packet?.body else {
            Issue.record("no CONNECT after redaction: \(dissected.mqtt)")
            return
        }
        #expect(connect.clientID.utf8.count == 11 && connect.clientID != "phone-7f3a9")
        #expect(connect.username.map { Array($0.utf8) } == map.placeholder(for: Array("kai@example.com".utf8)))
        #expect(connect.password == map.placeholder(for: Array("hunter2!".utf8)))
    }

    @Test func ipAddressesAreReplacedWithChecksumsStillValid() throws {
        var data = try connectFrame().data
        #expect(Frames.checksumsVerify(data))
        var map = RedactionMap()
        let layout = try #require(IPRedaction.layout(data, linkType: .ethernet))
        for offset in layout.addressOffsets { map.ip(Array(data[offset..<(offset + 4)])) }
        IPRedaction.rewrite(&data, layout) { bytes in
            for offset in layout.addressOffsets {
                bytes.replaceSubrange(offset..<(offset + 4), with: map.placeholder(for: Array(bytes[offset..<(offset + 4)]))!)
            }
        }
        #expect(Array(data[26..<30]) == [192, 0, 2, 1])
        #expect(Array(data[30..<34]) == [192, 0, 2, 2])
        #expect(Frames.checksumsVerify(data))
    }
}
