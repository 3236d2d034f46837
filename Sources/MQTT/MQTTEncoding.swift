/// Why a packet cannot be encoded: a field too long for its length prefix, or a body the version
/// cannot carry.
public struct MQTTEncodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var reason: String
    /// An error with its reason.
    public init(_ reason: String) { self.reason = reason }
    /// The reason.
    public var description: String { "cannot encode the MQTT packet: \(reason)" }
}

extension MQTTPacket {
    /// The packet's bytes on a connection speaking `version`: the fixed header, then the variable
    /// header and payload (§2). Properties are written only for MQTT 5.
    public func encoded(version: MQTTVersion) throws(MQTTEncodeError) -> [UInt8] {
        var body = MQTTWriter()
        let v5 = version == .v5
        switch self.body {
        case .connect(let connect):
            try body.string(connect.protocolName)
            body.bytes.append(connect.version.rawValue)
            var flags: UInt8 = connect.cleanSession ? 0x02 : 0
            if let will = connect.will { flags |= 0x04 | (will.qos & 0x03) << 3 | (will.retain ? 0x20 : 0) }
            if connect.password != nil { flags |= 0x40 }
            if connect.username != nil { flags |= 0x80 }
            body.bytes.append(flags)
            body.u16(connect.keepAlive)
            let connectV5 = connect.version == .v5
            if connectV5 { try body.properties(connect.properties) }
            try body.string(connect.clientID)
            if let will = connect.will {
                if connectV5 { try body.properties(will.properties) }
                try body.string(will.topic)
                try body.binary(will.payload)
            }
            if let username = connect.username { try body.string(username) }
            if let password = connect.password { try body.binary(password) }
        case .connack(let sessionPresent, let code, let properties):
            body.bytes.append(sessionPresent ? 1 : 0)
            body.bytes.append(code)
            if v5 { try body.properties(properties) }
        case .publish(let publish):
            try body.string(publish.topic)
            if publish.qos > 0 {
                guard let id = publish.packetID else { throw MQTTEncodeError("a QoS \(publish.qos) PUBLISH needs a packet id") }
                body.u16(id)
            }
            if v5 { try body.properties(publish.properties) }
            body.bytes.append(contentsOf: publish.payload)
        case .acknowledgement(let id, let code, let properties):
            body.u16(id)
            if v5, code != 0 || !properties.isEmpty {
                body.bytes.append(code)
                if !properties.isEmpty { try body.properties(properties) }
            }
        case .subscribe(let id, let properties, let subscriptions):
            guard !subscriptions.isEmpty else { throw MQTTEncodeError("SUBSCRIBE needs at least one topic filter") }
            body.u16(id)
            if v5 { try body.properties(properties) }
            for subscription in subscriptions {
                try body.string(subscription.topicFilter)
                body.bytes.append(subscription.options)
            }
        case .suback(let id, let properties, let codes):
            body.u16(id)
            if v5 { try body.properties(properties) }
            body.bytes.append(contentsOf: codes)
        case .unsubscribe(let id, let properties, let filters):
            guard !filters.isEmpty else { throw MQTTEncodeError("UNSUBSCRIBE needs at least one topic filter") }
            body.u16(id)
            if v5 { try body.properties(properties) }
            for filter in filters { try body.string(filter) }
        case .unsuback(let id, let properties, let codes):
            body.u16(id)
            if v5 {
                try body.properties(properties)
                body.bytes.append(contentsOf: codes)
            }
        case .ping:
            break
        case .reason(let code, let properties):
            if !v5 {
                guard type == .disconnect else { throw MQTTEncodeError("AUTH exists only in MQTT 5") }
            } else if code != 0 || !properties.isEmpty {
                body.bytes.append(code)
                if !properties.isEmpty { try body.properties(properties) }
            }
        }
        guard body.bytes.count <= 268_435_455 else {
            throw MQTTEncodeError("\(body.bytes.count) bytes exceed the Remaining Length's limit of 268,435,455")
        }
        var packet: [UInt8] = [type.rawValue << 4 | (flags & 0x0F)]
        packet.reserveCapacity(body.bytes.count + 5)
        MQTTWriter.appendVariableByteInteger(UInt32(body.bytes.count), to: &packet)
        packet.append(contentsOf: body.bytes)
        return packet
    }
}

struct MQTTWriter {
    var bytes: [UInt8] = []

    mutating func u16(_ value: UInt16) {
        bytes.append(UInt8(value >> 8))
        bytes.append(UInt8(value & 0xFF))
    }

    mutating func u32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func binary(_ value: [UInt8]) throws(MQTTEncodeError) {
        guard value.count <= 65_535 else { throw MQTTEncodeError("\(value.count) bytes do not fit a two-byte length") }
        u16(UInt16(value.count))
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) throws(MQTTEncodeError) {
        try binary(Array(value.utf8))
    }

    static func appendVariableByteInteger(_ value: UInt32, to bytes: inout [UInt8]) {
        var rest = value
        repeat {
            var byte = UInt8(rest & 0x7F)
            rest >>= 7
            if rest > 0 { byte |= 0x80 }
            bytes.append(byte)
        } while rest > 0
    }

    mutating func properties(_ properties: [MQTTProperty]) throws(MQTTEncodeError) {
        var encoded = MQTTWriter()
        for property in properties {
            encoded.bytes.append(property.identifier)
            switch property {
            case .payloadFormatIndicator(let v), .requestProblemInformation(let v), .requestResponseInformation(let v),
                 .maximumQoS(let v), .retainAvailable(let v), .wildcardSubscriptionAvailable(let v),
                 .subscriptionIdentifierAvailable(let v), .sharedSubscriptionAvailable(let v):
                encoded.bytes.append(v)
            case .serverKeepAlive(let v), .receiveMaximum(let v), .topicAliasMaximum(let v), .topicAlias(let v):
                encoded.u16(v)
            case .messageExpiryInterval(let v), .sessionExpiryInterval(let v), .willDelayInterval(let v), .maximumPacketSize(let v):
                encoded.u32(v)
            case .subscriptionIdentifier(let v):
                guard v <= 268_435_455 else { throw MQTTEncodeError("Subscription Identifier \(v) exceeds 268,435,455") }
                Self.appendVariableByteInteger(v, to: &encoded.bytes)
            case .contentType(let s), .responseTopic(let s), .assignedClientIdentifier(let s), .authenticationMethod(let s),
                 .responseInformation(let s), .serverReference(let s), .reasonString(let s):
                try encoded.string(s)
            case .correlationData(let b), .authenticationData(let b):
                try encoded.binary(b)
            case .userProperty(let name, let value):
                try encoded.string(name)
                try encoded.string(value)
            }
        }
        Self.appendVariableByteInteger(UInt32(encoded.bytes.count), to: &bytes)
        bytes.append(contentsOf: encoded.bytes)
    }
}
