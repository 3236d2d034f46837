@testable import MQTT
import Testing
import TetherTestSupport

/// Bytes from hex text with any spacing.
func bytes(_ text: String) -> [UInt8] {
    let digits = text.filter(\.isHexDigit)
    var result: [UInt8] = []
    var index = digits.startIndex
    while index < digits.endIndex {
        let next = digits.index(index, offsetBy: 2)
        result.append(UInt8(digits[index..<next], radix: 16)!)
        index = next
    }
    return result
}

@Suite struct MQTTVectorTests {
    @Test func connect311MatchesTheStandardsLayout() throws {
        let packet = MQTTPacket(type: .connect, body: .connect(MQTTConnect(version: .v3_1_1, keepAlive: 60, clientID: "a")))
        let encoded = try packet.encoded(version: .v3_1_1)
        #expect(encoded == bytes("10 0d 0004 4d515454 04 02 003c 0001 61"))
        #expect(try MQTTPacket(decoding: encoded, version: .v3_1_1) == packet)
    }

    @Test func qos1PublishCarriesTopicIdAndPayload() throws {
        let packet = try MQTTPacket(decoding: bytes("32 09 0003 612f62 000a 6869"), version: .v3_1_1)
        guard case .publish(let publish) = packet.body else { Issue.record("not a PUBLISH: \(packet)"); return }
        #expect(publish.topic == "a/b")
        #expect(publish.qos == 1)
        #expect(publish.packetID == 10)
        #expect(publish.payload == Array("hi".utf8))
        #expect(packet.packetID == 10)
    }

    @Test func subscribeListsItsFiltersWithRequestedQoS() throws {
        let packet = try MQTTPacket(decoding: bytes("82 08 0001 0003 612f23 01"), version: .v3_1_1)
        #expect(packet.topicFilters == ["a/#"])
        guard case .subscribe(let id, _, let subscriptions) = packet.body else { Issue.record("not SUBSCRIBE"); return }
        #expect(id == 1)
        #expect(subscriptions.map(\.qos) == [1])
    }

    @Test func emptyPacketsAreTwoBytes() throws {
        #expect(try MQTTPacket(type: .pingreq, body: .ping).encoded(version: .v3_1_1) == [0xC0, 0x00])
        #expect(try MQTTPacket(type: .pingresp, body: .ping).encoded(version: .v5) == [0xD0, 0x00])
        #expect(try MQTTPacket(type: .disconnect, body: .reason(reasonCode: 0, properties: [])).encoded(version: .v5) == [0xE0, 0x00])
    }

    @Test(arguments: [
        (127, "7f"), (128, "8001"), (16_383, "ff7f"), (16_384, "808001"),
        (2_097_151, "ffff7f"), (2_097_152, "80808001"), (268_435_455, "ffffff7f"),
    ])
    func remainingLengthUsesTheStandardsVariableByteIntegers(_ value: Int, _ encoding: String) {
        var encoded: [UInt8] = []
        MQTTWriter.appendVariableByteInteger(UInt32(value), to: &encoded)
        #expect(encoded == bytes(encoding))
        let header = ([0x30] + encoded).withUnsafeBytes { MQTTFixedHeader.scan($0) }
        #expect(header == .header(MQTTFixedHeader(firstByte: 0x30, remainingLength: value, headerLength: 1 + encoded.count)))
    }

    @Test func v5PublishWithPropertiesRoundTrips() throws {
        let publish = MQTTPublish(
            topic: "tether/demo/thing/properties", qos: 2, dup: true, retain: true, packetID: 513,
            properties: [.payloadFormatIndicator(1), .messageExpiryInterval(30), .topicAlias(3), .responseTopic("r"),
                         .correlationData([1, 2]), .userProperty("k", "v"), .subscriptionIdentifier(300), .contentType("application/json")],
            payload: Array("{\"a\":1}".utf8))
        let packet = MQTTPacket(type: .publish, body: .publish(publish))
        #expect(packet.flags == 0b1101)
        let encoded = try packet.encoded(version: .v5)
        #expect(try MQTTPacket(decoding: encoded, version: .v5) == packet)
    }

    @Test func everyV5PacketTypeRoundTrips() throws {
        let packets: [MQTTPacket] = [
            MQTTPacket(type: .connect, body: .connect(MQTTConnect(
                version: .v5, cleanSession: false, keepAlive: 30, clientID: "widget-demo",
                will: MQTTWill(topic: "w", payload: [9], qos: 1, retain: true, properties: [.willDelayInterval(5)]),
                username: "u", password: [1, 2, 3], properties: [.sessionExpiryInterval(60), .receiveMaximum(10), .topicAliasMaximum(8)]))),
            MQTTPacket(type: .connack, body: .connack(sessionPresent: true, reasonCode: 0, properties: [.assignedClientIdentifier("x"), .maximumQoS(1)])),
            MQTTPacket(type: .puback, body: .acknowledgement(packetID: 7, reasonCode: 0x10, properties: [.reasonString("no subscribers")])),
            MQTTPacket(type: .pubrec, body: .acknowledgement(packetID: 7, reasonCode: 0, properties: [])),
            MQTTPacket(type: .pubrel, body: .acknowledgement(packetID: 7, reasonCode: 0x92, properties: [])),
            MQTTPacket(type: .pubcomp, body: .acknowledgement(packetID: 7, reasonCode: 0, properties: [.userProperty("a", "b")])),
            MQTTPacket(type: .subscribe, body: .subscribe(packetID: 2, properties: [.subscriptionIdentifier(1)], subscriptions: [
                MQTTSubscription(topicFilter: "a/+", options: 0b0010_1101), MQTTSubscription(topicFilter: "b", options: 0)])),
            MQTTPacket(type: .suback, body: .suback(packetID: 2, properties: [], reasonCodes: [1, 0x80])),
            MQTTPacket(type: .unsubscribe, body: .unsubscribe(packetID: 3, properties: [], topicFilters: ["a/+", "b"])),
            MQTTPacket(type: .unsuback, body: .unsuback(packetID: 3, properties: [], reasonCodes: [0, 0x11])),
            MQTTPacket(type: .disconnect, body: .reason(reasonCode: 0x8E, properties: [.reasonString("taken over")])),
            MQTTPacket(type: .auth, body: .reason(reasonCode: 0x18, properties: [.authenticationMethod("SCRAM"), .authenticationData([0])])),
        ]
        for packet in packets {
            let encoded = try packet.encoded(version: .v5)
            #expect(try MQTTPacket(decoding: encoded, version: .v5) == packet, "\(packet.type)")
        }
    }

    @Test func every311PacketTypeRoundTrips() throws {
        let packets: [MQTTPacket] = [
            MQTTPacket(type: .connect, body: .connect(MQTTConnect(version: .v3_1, clientID: "old", username: "u"))),
            MQTTPacket(type: .connack, body: .connack(sessionPresent: false, reasonCode: 5, properties: [])),
            MQTTPacket(type: .publish, body: .publish(MQTTPublish(topic: "t", payload: []))),
            MQTTPacket(type: .puback, body: .acknowledgement(packetID: 1, reasonCode: 0, properties: [])),
            MQTTPacket(type: .pubrel, body: .acknowledgement(packetID: 65535, reasonCode: 0, properties: [])),
            MQTTPacket(type: .subscribe, body: .subscribe(packetID: 4, properties: [], subscriptions: [MQTTSubscription(topicFilter: "#", options: 2)])),
            MQTTPacket(type: .suback, body: .suback(packetID: 4, properties: [], reasonCodes: [2])),
            MQTTPacket(type: .unsubscribe, body: .unsubscribe(packetID: 5, properties: [], topicFilters: ["#"])),
            MQTTPacket(type: .unsuback, body: .unsuback(packetID: 5, properties: [], reasonCodes: [])),
            MQTTPacket(type: .pingreq, body: .ping),
            MQTTPacket(type: .disconnect, body: .reason(reasonCode: 0, properties: [])),
        ]
        for packet in packets {
            let encoded = try packet.encoded(version: .v3_1_1)
            #expect(try MQTTPacket(decoding: encoded, version: .v3_1_1) == packet, "\(packet.type)")
        }
    }

    @Test func aConnectNamesItsOwnLevelWhateverTheConnectionAssumed() throws {
        let encoded = try MQTTPacket(type: .connect, body: .connect(MQTTConnect(version: .v5, clientID: "c", properties: [.receiveMaximum(5)]))).encoded(version: .v5)
        guard case .connect(let connect) = try MQTTPacket(decoding: encoded, version: .v3_1_1).body else { Issue.record("not CONNECT"); return }
        #expect(connect.version == .v5)
        #expect(connect.properties == [.receiveMaximum(5)])
    }
}

@Suite struct MQTTMalformedTests {
    @Test func aFifthRemainingLengthByteIsUnframeable() {
        let scan = bytes("30 ff ff ff ff 01").withUnsafeBytes { MQTTFixedHeader.scan($0) }
        guard case .malformed(let error) = scan else { Issue.record("expected malformed, got \(scan)"); return }
        #expect(error.offset == 1)
        #expect(error.type == .publish)
    }

    @Test func reservedTypeZeroIsRefused() {
        #expect(throws: MQTTDecodeError.self) { try MQTTPacket(decoding: [0x00, 0x00], version: .v3_1_1) }
    }

    @Test func subscribeWithoutFlagBit1IsRefusedNamingTheFlags() {
        do {
            _ = try MQTTPacket(decoding: bytes("80 08 0001 0003 612f23 01"), version: .v3_1_1)
            Issue.record("decoded a SUBSCRIBE with flags 0")
        } catch {
            #expect(error.type == .subscribe)
            #expect(error.offset == 0)
            #expect(error.description.contains("0b0010"))
        }
    }

    @Test func publishWithQoS3IsRefused() {
        #expect(throws: MQTTDecodeError.self) { try MQTTPacket(decoding: bytes("36 05 0001 61 0001"), version: .v3_1_1) }
    }

    @Test func topicThatIsNotUTF8IsRefusedAtItsOffset() {
        do {
            _ = try MQTTPacket(decoding: bytes("30 04 0002 c328"), version: .v3_1_1)
            Issue.record("decoded a topic that is not UTF-8")
        } catch {
            #expect(error.offset == 4)
            #expect(error.description.contains("UTF-8"))
        }
    }

    @Test func packetIdZeroIsRefused() {
        #expect(throws: MQTTDecodeError.self) { try MQTTPacket(decoding: bytes("40 02 0000"), version: .v3_1_1) }
    }

    @Test func unknownPropertyIdentifierIsRefused() {
        // PUBACK id 1, reason 0, properties length 2: identifier 0x7f is not defined.
        do {
            _ = try MQTTPacket(decoding: bytes("40 06 0001 00 02 7f00"), version: .v5)
            Issue.record("decoded an undefined property")
        } catch {
            #expect(error.offset == 6)
        }
    }

    @Test func propertyRunningPastThePropertyLengthIsRefused() {
        // CONNACK properties length 2, but a four-byte Session Expiry Interval follows.
        #expect(throws: MQTTDecodeError.self) { try MQTTPacket(decoding: bytes("20 08 00 00 02 11 00000000"), version: .v5) }
    }

    @Test func trailingBytesAfterA311AckAreRefused() {
        #expect(throws: MQTTDecodeError.self) { try MQTTPacket(decoding: bytes("40 03 0001 00"), version: .v3_1_1) }
    }

    @Test func authOnA311ConnectionIsRefused() {
        #expect(throws: MQTTDecodeError.self) { try MQTTPacket(decoding: [0xF0, 0x00], version: .v3_1_1) }
    }

    @Test func unknownProtocolLevelIsRefused() {
        #expect(throws: MQTTDecodeError.self) { try MQTTPacket(decoding: bytes("10 0d 0004 4d515454 06 02 003c 0001 61"), version: .v3_1_1) }
    }

    @Test func randomBytesNeverTrapTheDecoder() {
        var random = SplitMix64(seed: 42)
        for _ in 0..<20_000 {
            let length = Int(random.next() % 40)
            var packet = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            if packet.count >= 2 { packet[1] = UInt8(packet.count - 2) & 0x7F }
            for version in [MQTTVersion.v3_1_1, .v5] {
                _ = packet.withUnsafeBytes { MQTTPacket.decode($0, version: version) }
            }
        }
    }
}

@Suite struct MQTTStreamFramerTests {
    static let stream: [UInt8] = bytes("c000") + bytes("32 09 0003 612f62 000a 6869") + bytes("82 08 0001 0003 612f23 01") + bytes("d000")

    func frame(_ chunks: [[UInt8]], framer: inout MQTTStreamFramer) -> [[UInt8]] {
        var packets: [[UInt8]] = []
        for chunk in chunks {
            chunk.withUnsafeBytes { buffer in
                framer.feed(buffer) { item in
                    if case .packet(let bytes) = item { packets.append(Array(bytes)) }
                }
            }
        }
        return packets
    }

    @Test func packetsAreTheSameWhateverTheSegmentation() {
        var whole = MQTTStreamFramer()
        let expected = frame([Self.stream], framer: &whole)
        #expect(expected.count == 4)
        var random = SplitMix64(seed: 7)
        for _ in 0..<200 {
            var chunks: [[UInt8]] = []
            var position = 0
            while position < Self.stream.count {
                let size = 1 + Int(random.next() % 6)
                chunks.append(Array(Self.stream[position..<min(position + size, Self.stream.count)]))
                position += size
            }
            var framer = MQTTStreamFramer()
            #expect(frame(chunks, framer: &framer) == expected)
            #expect(framer.pendingBytes == 0)
        }
    }

    @Test func aPacketLongerThanTheBoundIsSkippedByItsLength() {
        var framer = MQTTStreamFramer(maximumPacketLength: 8)
        var items: [String] = []
        let long = bytes("30 0a 0001 61") + [UInt8](repeating: 0x41, count: 7)
        for chunk in [Array(long[0..<3]), Array(long[3...]) + bytes("c000")] {
            chunk.withUnsafeBytes { buffer in
                framer.feed(buffer) { item in
                    switch item {
                    case .packet(let bytes): items.append("packet \(bytes.count)")
                    case .skipped(_, let length): items.append("skipped \(length)")
                    case .unframeable: items.append("lost")
                    }
                }
            }
        }
        #expect(items == ["skipped 12", "packet 2"])
    }

    @Test func aMalformedFixedHeaderStopsTheStream() {
        var framer = MQTTStreamFramer()
        var items: [String] = []
        for chunk in [bytes("c000 30ffffff"), bytes("ff01 c000")] {
            chunk.withUnsafeBytes { buffer in
                framer.feed(buffer) { item in
                    switch item {
                    case .packet: items.append("packet")
                    case .skipped: items.append("skipped")
                    case .unframeable: items.append("lost")
                    }
                }
            }
        }
        #expect(items == ["packet", "lost"])
        #expect(framer.isLost)
    }
}
