/// The MQTT protocol levels Tether reads: the byte after the protocol name in CONNECT.
public enum MQTTVersion: UInt8, Sendable, Hashable, CustomStringConvertible {
    /// MQTT 3.1 (protocol name `MQIsdp`), laid out as 3.1.1 for every packet Tether reads.
    case v3_1 = 3
    /// MQTT 3.1.1, OASIS Standard 2014.
    case v3_1_1 = 4
    /// MQTT 5.0, OASIS Standard 2019: properties and reason codes.
    case v5 = 5

    /// `3.1`, `3.1.1` or `5.0`.
    public var description: String {
        switch self {
        case .v3_1: "3.1"
        case .v3_1_1: "3.1.1"
        case .v5: "5.0"
        }
    }
}

/// The control packet type, the high nibble of the fixed header's first byte (MQTT 5.0 §2.1.2).
public enum MQTTPacketType: UInt8, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    case connect = 1, connack, publish, puback, pubrec, pubrel, pubcomp
    case subscribe, suback, unsubscribe, unsuback, pingreq, pingresp, disconnect
    /// MQTT 5 only.
    case auth

    /// The name the standard gives it, upper case (`PUBLISH`).
    public var description: String {
        switch self {
        case .connect: "CONNECT"
        case .connack: "CONNACK"
        case .publish: "PUBLISH"
        case .puback: "PUBACK"
        case .pubrec: "PUBREC"
        case .pubrel: "PUBREL"
        case .pubcomp: "PUBCOMP"
        case .subscribe: "SUBSCRIBE"
        case .suback: "SUBACK"
        case .unsubscribe: "UNSUBSCRIBE"
        case .unsuback: "UNSUBACK"
        case .pingreq: "PINGREQ"
        case .pingresp: "PINGRESP"
        case .disconnect: "DISCONNECT"
        case .auth: "AUTH"
        }
    }

    /// The fixed-header flags the standard requires (§2.1.3); `nil` for PUBLISH, whose flags carry
    /// DUP, QoS and RETAIN.
    public var requiredFlags: UInt8? {
        switch self {
        case .publish: nil
        case .pubrel, .subscribe, .unsubscribe: 0b0010
        default: 0
        }
    }
}

/// A CONNECT's will: the message the broker publishes if the client vanishes.
public struct MQTTWill: Sendable, Hashable {
    /// Where the will is published.
    public var topic: String
    /// The will message.
    public var payload: [UInt8]
    /// The will's QoS (0–2).
    public var qos: UInt8
    /// Whether the will is retained.
    public var retain: Bool
    /// MQTT 5 will properties (empty before 5).
    public var properties: [MQTTProperty]
    /// A will from its parts.
    public init(topic: String, payload: [UInt8], qos: UInt8 = 0, retain: Bool = false, properties: [MQTTProperty] = []) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
        self.properties = properties
    }
}

/// CONNECT (§3.1).
public struct MQTTConnect: Sendable, Hashable {
    /// `MQTT`, or `MQIsdp` for 3.1.
    public var protocolName: String
    /// The protocol level byte as sent (3, 4, 5; other values are refused by the decoder).
    public var version: MQTTVersion
    /// Clean Session (3.1.1) / Clean Start (5).
    public var cleanSession: Bool
    /// Keep Alive in seconds.
    public var keepAlive: UInt16
    /// The Client Identifier (may be empty).
    public var clientID: String
    /// The will, when the Will Flag is set.
    public var will: MQTTWill?
    /// The User Name, when its flag is set.
    public var username: String?
    /// The Password, when its flag is set.
    public var password: [UInt8]?
    /// MQTT 5 CONNECT properties.
    public var properties: [MQTTProperty]
    /// A CONNECT from its parts.
    public init(
        protocolName: String? = nil, version: MQTTVersion, cleanSession: Bool = true, keepAlive: UInt16 = 60,
        clientID: String, will: MQTTWill? = nil, username: String? = nil, password: [UInt8]? = nil,
        properties: [MQTTProperty] = []
    ) {
        self.protocolName = protocolName ?? (version == .v3_1 ? "MQIsdp" : "MQTT")
        self.version = version
        self.cleanSession = cleanSession
        self.keepAlive = keepAlive
        self.clientID = clientID
        self.will = will
        self.username = username
        self.password = password
        self.properties = properties
    }
}

/// PUBLISH (§3.3).
public struct MQTTPublish: Sendable, Hashable {
    /// The Topic Name as sent (empty in MQTT 5 when a Topic Alias stands for it).
    public var topic: String
    /// 0, 1 or 2.
    public var qos: UInt8
    /// The DUP flag: a redelivery.
    public var dup: Bool
    /// The RETAIN flag.
    public var retain: Bool
    /// The Packet Identifier, present for QoS 1 and 2.
    public var packetID: UInt16?
    /// MQTT 5 PUBLISH properties.
    public var properties: [MQTTProperty]
    /// The application message.
    public var payload: [UInt8]
    /// A PUBLISH from its parts.
    public init(topic: String, qos: UInt8 = 0, dup: Bool = false, retain: Bool = false, packetID: UInt16? = nil, properties: [MQTTProperty] = [], payload: [UInt8]) {
        self.topic = topic
        self.qos = qos
        self.dup = dup
        self.retain = retain
        self.packetID = packetID
        self.properties = properties
        self.payload = payload
    }

    /// The MQTT 5 Topic Alias property, if sent.
    public var topicAlias: UInt16? {
        for property in properties { if case .topicAlias(let alias) = property { return alias } }
        return nil
    }
}

/// One topic filter of a SUBSCRIBE with its options byte (3.1.1: the requested QoS only).
public struct MQTTSubscription: Sendable, Hashable {
    /// The Topic Filter.
    public var topicFilter: String
    /// Bits 0–1: the requested (maximum) QoS. MQTT 5 adds No Local (bit 2), Retain As Published
    /// (bit 3) and Retain Handling (bits 4–5).
    public var options: UInt8
    /// The requested QoS.
    public var qos: UInt8 { options & 0x03 }
    /// A subscription from its filter and options byte.
    public init(topicFilter: String, options: UInt8) {
        self.topicFilter = topicFilter
        self.options = options
    }
}

/// The body of an MQTT control packet, by type.
public enum MQTTPacketBody: Sendable, Hashable {
    /// CONNECT.
    case connect(MQTTConnect)
    /// CONNACK: Session Present, the return code (3.1.1) or reason code (5), MQTT 5 properties.
    case connack(sessionPresent: Bool, reasonCode: UInt8, properties: [MQTTProperty])
    /// PUBLISH.
    case publish(MQTTPublish)
    /// PUBACK, PUBREC, PUBREL, PUBCOMP: the packet id; MQTT 5 adds a reason code (0 when left out)
    /// and properties.
    case acknowledgement(packetID: UInt16, reasonCode: UInt8, properties: [MQTTProperty])
    /// SUBSCRIBE.
    case subscribe(packetID: UInt16, properties: [MQTTProperty], subscriptions: [MQTTSubscription])
    /// SUBACK: one return or reason code per filter subscribed.
    case suback(packetID: UInt16, properties: [MQTTProperty], reasonCodes: [UInt8])
    /// UNSUBSCRIBE.
    case unsubscribe(packetID: UInt16, properties: [MQTTProperty], topicFilters: [String])
    /// UNSUBACK: MQTT 5 carries one reason code per filter; 3.1.1 none.
    case unsuback(packetID: UInt16, properties: [MQTTProperty], reasonCodes: [UInt8])
    /// PINGREQ or PINGRESP.
    case ping
    /// DISCONNECT (MQTT 5: reason code, 0 when left out, and properties) or AUTH (MQTT 5 only).
    case reason(reasonCode: UInt8, properties: [MQTTProperty])
}

/// One MQTT control packet.
public struct MQTTPacket: Sendable, Hashable {
    /// The control packet type.
    public var type: MQTTPacketType
    /// The low nibble of the fixed header's first byte as sent.
    public var flags: UInt8
    /// What the packet carries.
    public var body: MQTTPacketBody

    /// A packet from its parts; `flags` defaults to what the type requires (PUBLISH: from the body).
    public init(type: MQTTPacketType, flags: UInt8? = nil, body: MQTTPacketBody) {
        self.type = type
        self.body = body
        if let flags {
            self.flags = flags
        } else if case .publish(let publish) = body {
            self.flags = (publish.dup ? 0x08 : 0) | (publish.qos & 0x03) << 1 | (publish.retain ? 1 : 0)
        } else {
            self.flags = type.requiredFlags ?? 0
        }
    }

    /// The Packet Identifier, for the types that carry one.
    public var packetID: UInt16? {
        switch body {
        case .publish(let publish): publish.packetID
        case .acknowledgement(let id, _, _), .subscribe(let id, _, _), .suback(let id, _, _),
             .unsubscribe(let id, _, _), .unsuback(let id, _, _):
            id
        default: nil
        }
    }

    /// The PUBLISH's Topic Name, or the first Topic Filter of a SUBSCRIBE or UNSUBSCRIBE.
    public var topic: String? {
        switch body {
        case .publish(let publish): publish.topic
        case .subscribe(_, _, let subscriptions): subscriptions.first?.topicFilter
        case .unsubscribe(_, _, let filters): filters.first
        default: nil
        }
    }

    /// Every Topic Filter of a SUBSCRIBE or UNSUBSCRIBE (empty for other types).
    public var topicFilters: [String] {
        switch body {
        case .subscribe(_, _, let subscriptions): subscriptions.map(\.topicFilter)
        case .unsubscribe(_, _, let filters): filters
        default: []
        }
    }

    /// The packet's properties (MQTT 5; empty otherwise).
    public var properties: [MQTTProperty] {
        switch body {
        case .connect(let connect): connect.properties
        case .connack(_, _, let properties), .acknowledgement(_, _, let properties), .subscribe(_, let properties, _),
             .suback(_, let properties, _), .unsubscribe(_, let properties, _), .unsuback(_, let properties, _),
             .reason(_, let properties):
            properties
        case .publish(let publish): publish.properties
        case .ping: []
        }
    }
}
