import CaptureKit
@testable import Dissectors
import MQTT
import Testing
import TetherTestSupport

/// One TCP connection between a client (127.0.0.1:50123) and a broker (127.0.0.1:1883), built
/// segment by segment so a test reads as the capture it describes.
struct TCPConversation {
    var clientPort: UInt16 = 50123
    var brokerPort: UInt16 = 1883
    var clientISN: UInt32 = 1000
    var brokerISN: UInt32 = 5000

    /// A segment from the client with data starting `offset` bytes into its stream.
    func client(_ offset: Int, _ payload: [UInt8], flags: UInt8 = TCPSegment.ack | TCPSegment.psh) -> [UInt8] {
        ipv4(proto: 6, payload: tcp(source: clientPort, destination: brokerPort, sequence: clientISN &+ 1 &+ UInt32(offset), flags: flags, payload: payload))
    }

    func broker(_ offset: Int, _ payload: [UInt8], flags: UInt8 = TCPSegment.ack | TCPSegment.psh) -> [UInt8] {
        ipv4(proto: 6, payload: tcp(source: brokerPort, destination: clientPort, sequence: brokerISN &+ 1 &+ UInt32(offset), flags: flags, payload: payload))
    }

    var clientSYN: [UInt8] { ipv4(proto: 6, payload: tcp(source: clientPort, destination: brokerPort, sequence: clientISN, flags: TCPSegment.syn, payload: [])) }
    var brokerSYNACK: [UInt8] { ipv4(proto: 6, payload: tcp(source: brokerPort, destination: clientPort, sequence: brokerISN, flags: TCPSegment.syn | TCPSegment.ack, payload: [])) }
}

func encoded(_ packet: MQTTPacket, _ version: MQTTVersion = .v3_1_1) -> [UInt8] {
    (try? packet.encoded(version: version)) ?? []
}

func publish(_ topic: String, _ payload: String, qos: UInt8 = 0, id: UInt16? = nil, properties: [MQTTProperty] = []) -> MQTTPacket {
    MQTTPacket(type: .publish, body: .publish(MQTTPublish(topic: topic, qos: qos, packetID: id, properties: properties, payload: Array(payload.utf8))))
}

func connect(_ version: MQTTVersion) -> MQTTPacket {
    MQTTPacket(type: .connect, body: .connect(MQTTConnect(version: version, clientID: "widget-demo")))
}

/// The MQTT type names each frame completed, frame by frame.
func mqttTypes(_ frames: [[UInt8]], dissector: inout FrameDissector) -> [[String]] {
    frames.map { frame in dissector.dissect(frame, .ipv4).mqtt.map { $0.packet.map { "\($0.type)" } ?? "malformed" } }
}

@Suite struct TCPReassemblyTests {
    let c = TCPConversation()

    @Test func aPacketSplitOverThreeSegmentsBelongsToTheThird() {
        let bytes = encoded(publish("tether/demo/thing/properties", "{\"power\":1}"))
        var dissector = FrameDissector()
        let frames = [c.clientSYN, c.client(0, Array(bytes[0..<3])), c.client(3, Array(bytes[3..<10])), c.client(10, Array(bytes[10...]))]
        #expect(mqttTypes(frames, dissector: &dissector) == [[], [], [], ["PUBLISH"]])
    }

    @Test func severalPacketsInOneSegmentAreAllListedInOrder() {
        let bytes = encoded(connect(.v3_1_1)) + encoded(publish("a", "1")) + [0xC0, 0x00]
        var dissector = FrameDissector()
        #expect(mqttTypes([c.clientSYN, c.client(0, bytes)], dissector: &dissector) == [[], ["CONNECT", "PUBLISH", "PINGREQ"]])
    }

    @Test func anOutOfOrderSegmentWaitsForTheGapAndTheFillerCompletesThePackets() {
        let bytes = encoded(publish("a", "first")) + encoded(publish("b", "second"))
        let cut1 = 4, cut2 = 12
        var dissector = FrameDissector()
        let first = dissector.dissect(c.client(0, Array(bytes[0..<cut1])), .ipv4)
        let third = dissector.dissect(c.client(cut2, Array(bytes[cut2...])), .ipv4)
        let second = dissector.dissect(c.client(cut1, Array(bytes[cut1..<cut2])), .ipv4)
        #expect(first.mqtt.isEmpty)
        #expect(third.mqtt.isEmpty)
        #expect(third.tcpAnalysis?.isOutOfOrder == true)
        #expect(second.mqtt.map(\.topic) == ["a", "b"])
        #expect(second.tcpAnalysis?.deliveredBytes == bytes.count - cut1)
    }

    @Test func aRetransmittedSegmentIsMarkedAndItsPacketsAreNotListedTwice() {
        let bytes = encoded(publish("a", "once", qos: 1, id: 9))
        var dissector = FrameDissector()
        let original = dissector.dissect(c.client(0, bytes), .ipv4)
        let again = dissector.dissect(c.client(0, bytes), .ipv4)
        #expect(original.mqtt.count == 1)
        #expect(again.mqtt.isEmpty)
        #expect(again.tcpAnalysis?.isRetransmission == true)
        #expect(again.summary.contains("(retransmission)"))
    }

    @Test func anOverlappingSegmentDeliversOnlyItsNewBytes() {
        let bytes = encoded(publish("a", "x")) + encoded(publish("b", "y"))
        var dissector = FrameDissector()
        // The first segment stops inside the first packet; the second repeats two of its bytes.
        _ = dissector.dissect(c.client(0, Array(bytes[0..<4])), .ipv4)
        let overlap = dissector.dissect(c.client(2, Array(bytes[2...])), .ipv4)
        #expect(overlap.tcpAnalysis?.overlapsDeliveredData == true)
        #expect(overlap.mqtt.map(\.topic) == ["a", "b"])
    }

    @Test func sequenceNumbersWrapPastTwoToThe32() {
        var wrapping = c
        wrapping.clientISN = 0xFFFF_FFF8
        let bytes = encoded(publish("wrap", String(repeating: "z", count: 30)))
        var dissector = FrameDissector()
        let frames = [wrapping.clientSYN, wrapping.client(0, Array(bytes[0..<5])), wrapping.client(5, Array(bytes[5..<20])), wrapping.client(20, Array(bytes[20...]))]
        #expect(mqttTypes(frames, dissector: &dissector) == [[], [], [], ["PUBLISH"]])
    }

    @Test func bothDirectionsAreReassembledOnTheirOwn() {
        let connectBytes = encoded(connect(.v3_1_1))
        let connack = encoded(MQTTPacket(type: .connack, body: .connack(sessionPresent: false, reasonCode: 0, properties: [])))
        var dissector = FrameDissector()
        let frames = [c.clientSYN, c.brokerSYNACK, c.client(0, Array(connectBytes[0..<6])), c.broker(0, connack), c.client(6, Array(connectBytes[6...]))]
        let records = frames.map { dissector.dissect($0, .ipv4).mqtt }
        #expect(records[3].map(\.fromClient) == [false])
        #expect(records[4].map(\.fromClient) == [true])
        #expect(records[4].first?.packet?.type == .connect)
    }

    @Test func anRSTThenANewSYNOnTheSamePortsStartsAFreshConnection() {
        let half = Array(encoded(publish("lost", "never completed")).prefix(5))
        var dissector = FrameDissector()
        _ = dissector.dissect(c.clientSYN, .ipv4)
        _ = dissector.dissect(c.client(0, half), .ipv4)
        let reset = dissector.dissect(c.broker(0, [], flags: TCPSegment.rst), .ipv4)
        #expect(reset.tcpAnalysis?.resetsConnection == true)
        var fresh = c
        fresh.clientISN = 777_000
        _ = dissector.dissect(fresh.clientSYN, .ipv4)
        let next = dissector.dissect(fresh.client(0, encoded(publish("new", "1"))), .ipv4)
        #expect(next.mqtt.map(\.topic) == ["new"])
        #expect(next.problem == nil)
    }

    @Test func aGapBeyondTheBoundIsDeclaredLostAndTheDirectionStopsBeingReadAsMQTT() {
        var dissector = FrameDissector()
        _ = dissector.dissect(c.clientSYN, .ipv4)
        _ = dissector.dissect(c.client(0, encoded(publish("a", "before"))), .ipv4)
        // 1100 segments past a missing one: more than the 1024 segments held behind a gap.
        var sawLoss: DissectedFrame?
        let chunk = encoded(publish("b", "after"))
        for index in 0..<1100 {
            let frame = dissector.dissect(c.client(100_000 + index * chunk.count, chunk), .ipv4)
            if frame.tcpAnalysis?.lostBytes ?? 0 > 0 { sawLoss = frame }
            #expect(frame.mqtt.isEmpty)
        }
        let loss = try? #require(sawLoss)
        guard case .tcpBytesNotCaptured(let lostBytes, _, let stopsMQTT)? = loss?.problem?.kind else {
            Issue.record("expected the TCP gap as the frame's problem, got \(String(describing: loss?.problems))")
            return
        }
        // The stream held the first PUBLISH, then nothing until relative offset 100,000.
        #expect(lostBytes == 100_000 - encoded(publish("a", "before")).count)
        #expect(stopsMQTT)
        #expect(loss?.problem?.layer == "TCP")
        #expect(loss?.problemDescription?.contains("were never captured") == true)
        #expect(loss?.problemDescription?.contains("MQTT is no longer read on this direction") == true)
    }

    @Test func aPortThatIsNotMQTTsHasNoMQTTRecords() {
        var http = c
        http.brokerPort = 8080
        var dissector = FrameDissector()
        let result = dissector.dissect(http.client(0, encoded(publish("a", "looks like MQTT"))), .ipv4)
        #expect(result.mqtt.isEmpty)
        #expect(result.tcp?.destinationPort == 8080)
    }

    @Test func anExtraMQTTPortIsReadAsMQTT() {
        var other = c
        other.brokerPort = 11883
        var dissector = FrameDissector()
        dissector.mqttPorts = [1883, 11883]
        #expect(dissector.dissect(other.client(0, encoded(publish("a", "1"))), .ipv4).mqtt.count == 1)
    }

    @Test func reassemblerHoldsAtMostItsFlowBound() {
        var reassembler = TCPReassembler(maximumFlows: 8)
        for port in 0..<100 {
            let segment = TCPSegment(
                sourceAddress: IPAddress(bytes: loopback4), sourcePort: UInt16(10_000 + port), destinationAddress: IPAddress(bytes: loopback4),
                destinationPort: 1883, sequenceNumber: 1, acknowledgmentNumber: 0, flags: TCPSegment.ack, window: 0, payload: [1])
            _ = reassembler.add(segment) { _ in }
        }
        #expect(reassembler.flowCount <= 8)
    }
}

@Suite struct MQTTOverTCPTests {
    let c = TCPConversation()

    @Test func aV5ConnectionsPacketsAreReadWithProperties() {
        let connack = MQTTPacket(type: .connack, body: .connack(sessionPresent: false, reasonCode: 0, properties: [.topicAliasMaximum(10)]))
        var dissector = FrameDissector()
        _ = dissector.dissect(c.client(0, encoded(connect(.v5), .v5)), .ipv4)
        let reply = dissector.dissect(c.broker(0, encoded(connack, .v5)), .ipv4)
        #expect(reply.mqtt.first?.packet == connack)
        #expect(reply.mqtt.first?.version == .v5)
        #expect(reply.mqtt.first?.versionAssumed == false)
    }

    @Test func withoutAConnectTheLevelIsAssumed311AndSaidSo() {
        var dissector = FrameDissector()
        let result = dissector.dissect(c.client(0, encoded(publish("a", "1"))), .ipv4)
        #expect(result.mqtt.first?.versionAssumed == true)
        #expect(result.mqtt.first?.version == .v3_1_1)
    }

    @Test func aTopicAliasIsResolvedPerDirection() {
        var dissector = FrameDissector()
        let connectBytes = encoded(connect(.v5), .v5)
        let setAlias = encoded(publish("tether/demo/thing/status", "1", properties: [.topicAlias(1)]), .v5)
        let useAlias = encoded(publish("", "3", properties: [.topicAlias(1)]), .v5)
        _ = dissector.dissect(c.client(0, connectBytes), .ipv4)
        _ = dissector.dissect(c.client(connectBytes.count, setAlias), .ipv4)
        let used = dissector.dissect(c.client(connectBytes.count + setAlias.count, useAlias), .ipv4)
        #expect(used.mqtt.first?.topic == "tether/demo/thing/status")
        // The broker's direction has its own aliases: alias 1 means nothing there yet.
        let unknown = dissector.dissect(c.broker(0, useAlias), .ipv4)
        #expect(unknown.mqtt.first?.topic == nil)
        #expect(unknown.problems == [DissectionProblem(layer: "MQTT PUBLISH", kind: .mqttTopicAliasUnset(alias: 1))])
        #expect(unknown.mqtt.first?.problem == unknown.problem)
        #expect(unknown.problemDescription?.contains("Topic Alias 1 was never set") == true)
    }

    @Test func aMalformedPacketIsAProblemAndTheNextOneIsStillRead() {
        var dissector = FrameDissector()
        let bad: [UInt8] = [0x82, 0x02, 0x00, 0x01]  // SUBSCRIBE without a topic filter
        let result = dissector.dissect(c.client(0, bad + encoded(publish("ok", "1"))), .ipv4)
        #expect(result.mqtt.count == 2)
        #expect(result.mqtt[0].packet == nil)
        #expect(result.mqtt[0].typeNumber == 8)
        #expect(result.mqtt[1].topic == "ok")
        #expect(result.problem?.layer == "MQTT SUBSCRIBE")
        guard case .mqttPacket(let error, let stopsStream)? = result.problem?.kind else {
            Issue.record("expected an MQTT packet problem, got \(String(describing: result.problem))")
            return
        }
        #expect(error.offset == 4)
        #expect(!stopsStream)
        #expect(result.problemDescription?.hasPrefix("MQTT SUBSCRIBE: at offset 4") == true)
        #expect(result.summary.hasPrefix("MQTT SUBSCRIBE (malformed, 4 bytes), PUBLISH ok QoS 0 (1 bytes) — TCP 127.0.0.1:50123 → 127.0.0.1:1883"))
    }

    @Test func summaryNamesTopicQoSAndId() {
        var dissector = FrameDissector()
        let result = dissector.dissect(c.client(0, encoded(publish("tether/demo/thing/properties", "{}", qos: 1, id: 42))), .ipv4)
        #expect(result.summary == "MQTT PUBLISH tether/demo/thing/properties QoS 1 id 42 (2 bytes) — TCP 127.0.0.1:50123 → 127.0.0.1:1883 [PSH, ACK] seq 1 len 36")
    }

    @Test func randomTCPPayloadsToTheBrokerPortNeverTrap() {
        var random = SplitMix64(seed: 1883)
        var dissector = FrameDissector()
        var offset = 0
        for _ in 0..<3000 {
            let length = Int(random.next() % 64)
            let payload = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let jitter = Int(random.next() % 5) - 2
            _ = dissector.dissect(c.client(max(0, offset + jitter * 10), payload), .ipv4)
            offset += length
        }
    }
}

@Suite struct FlowTableTests {
    func key(_ n: Int) -> TCPFlowKey {
        let segment = TCPSegment(
            sourceAddress: IPAddress(bytes: [10, 0, UInt8(n >> 8 & 0xFF), UInt8(n & 0xFF)]), sourcePort: UInt16(truncatingIfNeeded: 40_000 + n % 7),
            destinationAddress: IPAddress(bytes: loopback4), destinationPort: 1883,
            sequenceNumber: 0, acknowledgmentNumber: 0, flags: 0, window: 0, payload: [])
        return TCPFlowKey(segment)
    }

    @Test func behavesAsADictionaryUnderSeededInsertsAndRemovals() {
        var random = SplitMix64(seed: 99)
        var table = FlowTable<Int>()
        var model: [TCPFlowKey: Int] = [:]
        for step in 0..<20_000 {
            let k = key(Int(random.next() % 600))
            switch random.next() % 3 {
            case 0, 1:
                table[k] = step
                model[k] = step
            default:
                #expect(table.removeValue(forKey: k) == model.removeValue(forKey: k))
            }
            if step % 997 == 0 {
                #expect(table.count == model.count)
                for (k, v) in model { #expect(table[k] == v) }
            }
        }
        #expect(Set(table.entries.map(\.key)) == Set(model.keys))
    }

    @Test func withValueInsertsChangesAndRemovesInPlaceAsADictionaryWould() {
        var random = SplitMix64(seed: 7)
        var table = FlowTable<[Int]>()
        var model: [TCPFlowKey: [Int]] = [:]
        for step in 0..<20_000 {
            let k = key(Int(random.next() % 600))
            let removes = random.next() % 4 == 0
            let seen = table.withValue(forKey: k) { value -> [Int]? in
                let before = value
                if removes { value = nil } else { value = (value ?? []) + [step] }
                return before
            }
            #expect(seen == model[k])
            if removes { model[k] = nil } else { model[k, default: []].append(step) }
            if step % 997 == 0 {
                #expect(table.count == model.count)
                for (k, v) in model { #expect(table[k] == v) }
            }
        }
        #expect(Set(table.entries.map(\.key)) == Set(model.keys))
    }
}
