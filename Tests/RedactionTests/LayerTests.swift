import Foundation
import CaptureKit
import Dissectors
import MQTT
import Testing
import TetherTestSupport
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
        let reads = GATTRedaction.discover(frames, interfaces: interfaces, namedHandles: [3: GATTHandleName(characteristic: BluetoothUUID(0x2A00))], into: &map)
        #expect(reads == [2])
        var data = frames[1].data
        let names = map.entries.map { ByteSubstitution($0.original, $0.placeholder, boundary: .none) }
        #expect(GATTRedaction.rewrite(&data, linkType: .bluetoothHCIH4WithPHDR, names: names) == 1)
        #expect(data.count == frames[1].data.count)
        #expect(ByteSubstitution.containsAny([name], in: data) == nil)
    }
}

extension GATTRedactionTests {
    @Test func deviceNameWriteRequestIsReplaced() {
        let name = Array("Kai's Fenix".utf8)
        let frames = [CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1, originalLength: 0, data: Frames.h4ATT(received: false, att: [0x12, 0x03, 0x00] + name))]
        var map = RedactionMap()
        let found = GATTRedaction.discover(frames, interfaces: [CaptureInterface(linkType: .bluetoothHCIH4WithPHDR)], namedHandles: [3: GATTHandleName(characteristic: BluetoothUUID(0x2A00))], into: &map)
        #expect(found == [1])
        #expect(map.originals(of: .name) == [name])
    }

    @Test func deviceNameReadByTypeResponseIsReplaced() {
        let name = Array("Kai's Fenix".utf8)
        let frames = [
            // Read By Type Request for 0x2A00 over the whole handle range, then its response:
            // entry length, then the handle and the value.
            CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: 1, originalLength: 0, data: Frames.h4ATT(received: false, att: [0x08, 0x01, 0x00, 0xFF, 0xFF, 0x00, 0x2A])),
            CaptureFrame(number: 2, interfaceIndex: 0, timestampNs: 2, originalLength: 0, data: Frames.h4ATT(received: true, att: [0x09, UInt8(2 + name.count), 0x03, 0x00] + name)),
        ]
        var map = RedactionMap()
        let found = GATTRedaction.discover(frames, interfaces: [CaptureInterface(linkType: .bluetoothHCIH4WithPHDR)], namedHandles: [:], into: &map)
        #expect(found == [2])
        var data = frames[1].data
        let names = map.entries.map { ByteSubstitution($0.original, $0.placeholder, boundary: .none) }
        #expect(GATTRedaction.rewrite(&data, linkType: .bluetoothHCIH4WithPHDR, names: names) == 1)
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

/// MQTT values in every packet of the connection, whichever way it goes.
@Suite struct MQTTConnectionTests {
    static let client: [UInt8] = [10, 9, 8, 7]
    static let broker: [UInt8] = [10, 1, 2, 3]

    /// A set with one Ethernet interface carrying `payloads` (client → broker when the flag is set).
    static func set(_ payloads: [(fromClient: Bool, bytes: [UInt8])], in folder: TemporaryFolder) throws -> String {
        let path = folder.path("mqtt").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try Data("""
            schema_version: 1
            title: MQTT both ways
            recorded_at: '2026-01-01T00:00:00Z'
            tether_version: 0.1.0
            status: complete
            capture_file: capture.pcapng
            interfaces:
            - index: 0
              link_type: 1
              role: mqtt-tcp
            devices: []
            annotations: []
            gatt_handles: []
            expectations: []
            baselines: {}

            """.utf8).write(to: URL(fileURLWithPath: path + "/manifest.yaml"))
        let writer = try PcapngWriter(path: path + "/capture.pcapng")
        _ = try writer.addInterface(CaptureInterface(linkType: .ethernet))
        var sequence: [Bool: UInt32] = [true: 1, false: 1]
        for (number, (fromClient, bytes)) in payloads.enumerated() {
            var data = fromClient
                ? Frames.ethernetTCP(source: client, destination: broker, sourcePort: 40000, destinationPort: 1883, payload: bytes)
                : Frames.ethernetTCP(source: broker, destination: client, sourcePort: 1883, destinationPort: 40000, payload: bytes)
            // Each direction's sequence numbers follow on, so the dissector reads one stream per way.
            let seq = sequence[fromClient, default: 1]
            data[38] = UInt8(seq >> 24); data[39] = UInt8((seq >> 16) & 0xFF); data[40] = UInt8((seq >> 8) & 0xFF); data[41] = UInt8(seq & 0xFF)
            data[50] = 0; data[51] = 0
            let tcp = Array(data[34...])
            let sum = Frames.checksum(Array(data[26..<34]) + [0, 6, UInt8(tcp.count >> 8), UInt8(tcp.count & 0xFF)] + tcp)
            data[50] = UInt8(sum >> 8); data[51] = UInt8(sum & 0xFF)
            sequence[fromClient] = seq + UInt32(bytes.count)
            try writer.write(CaptureFrame(number: number + 1, interfaceIndex: 0, timestampNs: Int64(number + 1) * 1000, originalLength: data.count, data: data))
        }
        try writer.close()
        return path
    }

    @Test func clientIDInPublishPayloadsIsReplacedInBothDirections() throws {
        let folder = try TemporaryFolder("redact-mqtt-publish")
        let id = "phone-7f3a9"
        let connect = try Frames.connect(clientID: id, username: "kai@example.com", password: "hunter2!")
        let connack = try MQTTPacket(type: .connack, body: .connack(sessionPresent: false, reasonCode: 0, properties: [])).encoded(version: .v3_1_1)
        let up = try MQTTPacket(type: .publish, body: .publish(MQTTPublish(topic: "status/\(id)", payload: Array(#"{"from":"\#(id)","n":1}"#.utf8)))).encoded(version: .v3_1_1)
        let down = try MQTTPacket(type: .publish, body: .publish(MQTTPublish(topic: "cmd/\(id)", payload: Array(#"{"to":"\#(id)"}"#.utf8)))).encoded(version: .v3_1_1)
        let set = try Self.set([(true, connect), (false, connack), (true, up), (false, down)], in: folder)
        let out = folder.path("out").path
        _ = try SetRedactor.redact(set: set, to: out)
        let (_, frames) = try CommittedSetsTests.frames(out + "/capture.pcapng")
        for frame in frames {
            #expect(ByteSubstitution.containsAny([Array(id.utf8)], in: frame.data) == nil, "frame \(frame.number)")
            #expect(Frames.checksumsVerify(frame.data), "frame \(frame.number)")
        }
    }

    @Test func clientIDSplitOverTwoSegmentsIsReplacedInBoth() throws {
        let folder = try TemporaryFolder("redact-mqtt-split")
        let id = "phone-7f3a9"
        let connect = try Frames.connect(clientID: id, username: "kai@example.com", password: "hunter2!")
        let up = try MQTTPacket(type: .publish, body: .publish(MQTTPublish(topic: "t", payload: Array(#"{"from":"\#(id)"}"#.utf8)))).encoded(version: .v3_1_1)
        let cut = try #require(up.indices.first { up[$0...].starts(with: Array("phone".utf8)) }) + 3
        let set = try Self.set([(true, connect), (true, Array(up[..<cut])), (true, Array(up[cut...]))], in: folder)
        let out = folder.path("out").path
        _ = try SetRedactor.redact(set: set, to: out)
        let (_, frames) = try CommittedSetsTests.frames(out + "/capture.pcapng")
        let stream = frames.dropFirst().flatMap { Array($0.data[54...]) }
        #expect(ByteSubstitution.containsAny([Array(id.utf8)], in: stream) == nil)
        #expect(stream.count == up.count)
        for frame in frames { #expect(Frames.checksumsVerify(frame.data), "frame \(frame.number)") }
    }

    @Test func clientIDABrokerAssignsIsReplaced() throws {
        let folder = try TemporaryFolder("redact-mqtt-assigned")
        let assigned = "auto-5C1E7A"
        let connect = try MQTTPacket(type: .connect, body: .connect(MQTTConnect(
            protocolName: "MQTT", version: .v5, cleanSession: true, keepAlive: 30, clientID: "",
            will: nil, username: nil, password: nil, properties: []))).encoded(version: .v5)
        let connack = try MQTTPacket(type: .connack, body: .connack(sessionPresent: false, reasonCode: 0, properties: [.assignedClientIdentifier(assigned)]))
            .encoded(version: .v5)
        let up = try MQTTPacket(type: .publish, body: .publish(MQTTPublish(topic: "status/\(assigned)", payload: Array("up".utf8)))).encoded(version: .v5)
        let set = try Self.set([(true, connect), (false, connack), (true, up)], in: folder)
        let out = folder.path("out").path
        let report = try SetRedactor.redact(set: set, to: out)
        #expect(report.map.originals(of: .clientID) == [Array(assigned.utf8)])
        let capture = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out + "/capture.pcapng")))
        #expect(ByteSubstitution.containsAny([Array(assigned.utf8)], in: capture) == nil)
    }
}
