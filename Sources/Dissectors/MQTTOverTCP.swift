import MQTT

/// An MQTT control packet found in a reassembled TCP stream.
public struct MQTTRecord: Sendable, Hashable {
    /// The direction it travelled (sender → receiver).
    public var flow: TCPFlowKey
    /// `true` when the client sent it (towards the broker's port).
    public var fromClient: Bool
    /// The fixed header's first byte: the type in the high nibble, flags in the low.
    public var firstByte: UInt8
    /// The whole packet's length, fixed header included.
    public var length: Int
    /// The protocol level it was read with: the connection's CONNECT, or 3.1.1 when the capture
    /// holds no CONNECT for it (``versionAssumed``).
    public var version: MQTTVersion
    /// `true` when no CONNECT told the version.
    public var versionAssumed: Bool
    /// The decoded packet; `nil` when it was malformed or longer than the dissector holds
    /// (``problem`` says which).
    public var packet: MQTTPacket?
    /// For PUBLISH, the topic: the Topic Name, or what an MQTT 5 Topic Alias stood for on this
    /// direction of the connection. For SUBSCRIBE and UNSUBSCRIBE, the first Topic Filter.
    public var topic: String?
    /// Why the packet could not be read, or its topic not known, if so.
    public var problem: DissectionProblem?

    /// The control packet type number, 1–15 (0 is reserved and appears only in malformed packets).
    public var typeNumber: UInt8 { firstByte >> 4 }
}

/// Finds MQTT control packets in TCP connections to a broker port: keeps, per connection, the
/// protocol level its CONNECT named, one ``MQTTStreamFramer`` per direction and each direction's MQTT
/// 5 Topic Aliases. Bounded like the reassembler under it: at most ``maximumConnections``
/// connections (least recently used forgotten), packets up to ``maximumPacketLength`` bytes held.
struct MQTTTracker: Sendable {
    struct Connection: Sendable {
        var version: MQTTVersion = .v3_1_1
        var versionKnown = false
        var toServer: MQTTStreamFramer
        var toClient: MQTTStreamFramer
        var aliasesToServer: [UInt16: String] = [:]
        var aliasesToClient: [UInt16: String] = [:]
        var lastUse: UInt64 = 0
    }

    var ports: Set<UInt16>
    let maximumConnections: Int
    let maximumPacketLength: Int
    private var connections = FlowTable<Connection>()
    private var clock: UInt64 = 0

    init(ports: Set<UInt16>, maximumConnections: Int = 1024, maximumPacketLength: Int = 1 << 20) {
        self.ports = ports
        self.maximumConnections = max(maximumConnections, 1)
        self.maximumPacketLength = maximumPacketLength
    }

    /// The client → broker direction of the segment's connection, when it is one to a broker port.
    func clientFlow(_ segment: TCPSegment) -> TCPFlowKey? {
        if ports.contains(segment.destinationPort) { return TCPFlowKey(segment) }
        if ports.contains(segment.sourcePort) { return TCPFlowKey(segment).reversed }
        return nil
    }

    /// Forgets a connection (RST, or a new SYN from the client).
    mutating func forget(client: TCPFlowKey) {
        connections[client] = nil
    }

    /// Starts one direction afresh (a SYN with a new sequence number, or a direction joined mid-stream).
    mutating func restart(_ flow: TCPFlowKey, client: TCPFlowKey) {
        guard var connection = connections[client] else { return }
        if flow == client {
            // A new connection on the same ports: nothing of the old one carries over.
            connections[client] = nil
            return
        }
        connection.toClient = MQTTStreamFramer(maximumPacketLength: maximumPacketLength)
        connection.aliasesToClient = [:]
        connections[client] = connection
    }

    /// Bytes of `flow` went missing: its packets can no longer be framed.
    mutating func abandon(_ flow: TCPFlowKey, client: TCPFlowKey) {
        withConnection(client) { connection in
            if flow == client { connection.toServer.abandon() } else { connection.toClient.abandon() }
        }
    }

    /// Feeds in-order bytes of `flow`; the packets they complete are appended to `records`.
    mutating func feed(_ bytes: UnsafeRawBufferPointer, flow: TCPFlowKey, client: TCPFlowKey, into records: inout [MQTTRecord]) {
        let fromClient = flow == client
        let maximumPacketLength = self.maximumPacketLength
        withConnection(client) { connection in
            // The framer is taken out (the connection keeps an empty one meanwhile), so its buffer
            // is uniquely owned while the packets it completes change the connection.
            let empty = MQTTStreamFramer(maximumPacketLength: maximumPacketLength)
            var framer = fromClient ? connection.toServer : connection.toClient
            if fromClient { connection.toServer = empty } else { connection.toClient = empty }
            framer.feed(bytes) { item in
                switch item {
                case .packet(let packetBytes):
                    records.append(Self.record(packetBytes, fromClient: fromClient, flow: flow, connection: &connection))
                case .skipped(let firstByte, let length):
                    records.append(MQTTRecord(
                        flow: flow, fromClient: fromClient, firstByte: firstByte, length: length, version: connection.version,
                        versionAssumed: !connection.versionKnown, packet: nil, topic: nil,
                        problem: DissectionProblem(layer: "MQTT", kind: .mqttPacketTooLong(length: length, limit: maximumPacketLength))))
                case .unframeable(let error):
                    records.append(MQTTRecord(
                        flow: flow, fromClient: fromClient, firstByte: bytes.first ?? 0, length: 0, version: connection.version,
                        versionAssumed: !connection.versionKnown, packet: nil, topic: nil,
                        problem: DissectionProblem(error, stopsStream: true)))
                }
            }
            if fromClient { connection.toServer = framer } else { connection.toClient = framer }
        }
    }

    /// Runs `body` on the connection where it lies in the table (one lookup), made when new; the
    /// least recently used connection is forgotten when there are too many.
    private mutating func withConnection(_ client: TCPFlowKey, _ body: (inout Connection) -> Void) {
        clock &+= 1
        let clock = self.clock
        let maximumPacketLength = self.maximumPacketLength
        connections.withValue(forKey: client) { stored in
            var connection = stored.take() ?? Connection(
                toServer: MQTTStreamFramer(maximumPacketLength: maximumPacketLength),
                toClient: MQTTStreamFramer(maximumPacketLength: maximumPacketLength))
            connection.lastUse = clock
            body(&connection)
            stored = connection
        }
        // The connection just used is the most recent, so it is never the one forgotten.
        if connections.count > maximumConnections, let oldest = connections.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key {
            connections[oldest] = nil
        }
    }

    private static func record(_ bytes: UnsafeRawBufferPointer, fromClient: Bool, flow: TCPFlowKey, connection: inout Connection) -> MQTTRecord {
        let firstByte = bytes[0]
        // A CONNECT is read the same at every level (it names its own).
        let decoded = MQTTPacket.decode(bytes, version: connection.version)
        if fromClient, firstByte >> 4 == MQTTPacketType.connect.rawValue, case .success(let packet) = decoded, case .connect(let connect) = packet.body {
            // The CONNECT names the level every later packet of the connection is read with.
            connection.version = connect.version
            connection.versionKnown = true
        }
        var topic: String? = nil
        var problem: DissectionProblem? = nil
        var packet: MQTTPacket? = nil
        switch decoded {
        case .failure(let error):
            problem = DissectionProblem(error, stopsStream: false)
        case .success(let decodedPacket):
            if case .publish(let publish) = decodedPacket.body {
                topic = publish.topic
                if let alias = publish.topicAlias {
                    if publish.topic.isEmpty {
                        topic = fromClient ? connection.aliasesToServer[alias] : connection.aliasesToClient[alias]
                        if topic == nil {
                            problem = DissectionProblem(layer: "MQTT PUBLISH", kind: .mqttTopicAliasUnset(alias: alias))
                        }
                    } else if fromClient {
                        connection.aliasesToServer[alias] = publish.topic
                    } else {
                        connection.aliasesToClient[alias] = publish.topic
                    }
                }
            } else {
                topic = decodedPacket.topic
            }
            packet = decodedPacket
        }
        // Built in one step: filled in field by field, the record was copied once more.
        return MQTTRecord(
            flow: flow, fromClient: fromClient, firstByte: firstByte, length: bytes.count, version: connection.version,
            versionAssumed: !connection.versionKnown, packet: packet, topic: topic, problem: problem)
    }
}

/// One-line descriptions of MQTT records for `tether inspect --frames`.
enum MQTTSummary {
    static func describe(_ record: MQTTRecord) -> String {
        let name = MQTTPacketType(rawValue: record.typeNumber)?.description ?? "type \(record.typeNumber)"
        guard let packet = record.packet else {
            return record.problem.map { _ in "\(name) (malformed, \(record.length) bytes)" } ?? name
        }
        switch packet.body {
        case .connect(let connect):
            return "CONNECT v\(connect.version) client \"\(connect.clientID)\" keep alive \(connect.keepAlive)s" + (connect.cleanSession ? " clean" : "")
        case .connack(let sessionPresent, let code, _):
            return "CONNACK code \(code)" + (sessionPresent ? " session present" : "")
        case .publish(let publish):
            var text = "PUBLISH \(record.topic ?? "?") QoS \(publish.qos)"
            if let id = publish.packetID { text += " id \(id)" }
            if publish.dup { text += " DUP" }
            if publish.retain { text += " RETAIN" }
            if let alias = publish.topicAlias { text += " alias \(alias)" }
            return text + " (\(publish.payload.count) bytes)"
        case .acknowledgement(let id, let code, _):
            return "\(name) id \(id)" + (code == 0 ? "" : " reason \(hex(code, digits: 2))")
        case .subscribe(let id, _, let subscriptions):
            return "SUBSCRIBE id \(id) " + subscriptions.map { "\($0.topicFilter) (QoS \($0.qos))" }.joined(separator: ", ")
        case .suback(let id, _, let codes):
            return "SUBACK id \(id) codes " + codes.map { String($0) }.joined(separator: ", ")
        case .unsubscribe(let id, _, let filters):
            return "UNSUBSCRIBE id \(id) " + filters.joined(separator: ", ")
        case .unsuback(let id, _, let codes):
            return "UNSUBACK id \(id)" + (codes.isEmpty ? "" : " codes " + codes.map { String($0) }.joined(separator: ", "))
        case .ping:
            return name
        case .reason(let code, _):
            return code == 0 ? name : "\(name) reason \(hex(code, digits: 2))"
        }
    }
}

extension DissectionProblem {
    /// A packet that does not decode, of the layer its type names (`MQTT PUBLISH`, or `MQTT`
    /// when the first byte named no valid type).
    init(_ error: MQTTDecodeError, stopsStream: Bool) {
        self.init(layer: "MQTT" + (error.type.map { " \($0)" } ?? ""), kind: .mqttPacket(error, stopsStream: stopsStream))
    }
}
