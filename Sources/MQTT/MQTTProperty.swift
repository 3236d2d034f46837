/// An MQTT 5 property (§2.2.2.2), by identifier. Every identifier the standard defines has a case;
/// the decoder refuses any other, because its value's length cannot be known.
public enum MQTTProperty: Sendable, Hashable {
    /// 0x01 Payload Format Indicator (0 bytes, 1 UTF-8).
    case payloadFormatIndicator(UInt8)
    /// 0x02 Message Expiry Interval, seconds.
    case messageExpiryInterval(UInt32)
    /// 0x03 Content Type.
    case contentType(String)
    /// 0x08 Response Topic.
    case responseTopic(String)
    /// 0x09 Correlation Data.
    case correlationData([UInt8])
    /// 0x0B Subscription Identifier (a Variable Byte Integer).
    case subscriptionIdentifier(UInt32)
    /// 0x11 Session Expiry Interval, seconds.
    case sessionExpiryInterval(UInt32)
    /// 0x12 Assigned Client Identifier.
    case assignedClientIdentifier(String)
    /// 0x13 Server Keep Alive, seconds.
    case serverKeepAlive(UInt16)
    /// 0x15 Authentication Method.
    case authenticationMethod(String)
    /// 0x16 Authentication Data.
    case authenticationData([UInt8])
    /// 0x17 Request Problem Information.
    case requestProblemInformation(UInt8)
    /// 0x18 Will Delay Interval, seconds.
    case willDelayInterval(UInt32)
    /// 0x19 Request Response Information.
    case requestResponseInformation(UInt8)
    /// 0x1A Response Information.
    case responseInformation(String)
    /// 0x1C Server Reference.
    case serverReference(String)
    /// 0x1F Reason String.
    case reasonString(String)
    /// 0x21 Receive Maximum.
    case receiveMaximum(UInt16)
    /// 0x22 Topic Alias Maximum.
    case topicAliasMaximum(UInt16)
    /// 0x23 Topic Alias.
    case topicAlias(UInt16)
    /// 0x24 Maximum QoS.
    case maximumQoS(UInt8)
    /// 0x25 Retain Available.
    case retainAvailable(UInt8)
    /// 0x26 User Property: a name and a value.
    case userProperty(String, String)
    /// 0x27 Maximum Packet Size.
    case maximumPacketSize(UInt32)
    /// 0x28 Wildcard Subscription Available.
    case wildcardSubscriptionAvailable(UInt8)
    /// 0x29 Subscription Identifier Available.
    case subscriptionIdentifierAvailable(UInt8)
    /// 0x2A Shared Subscription Available.
    case sharedSubscriptionAvailable(UInt8)

    /// The property identifier byte.
    public var identifier: UInt8 {
        switch self {
        case .payloadFormatIndicator: 0x01
        case .messageExpiryInterval: 0x02
        case .contentType: 0x03
        case .responseTopic: 0x08
        case .correlationData: 0x09
        case .subscriptionIdentifier: 0x0B
        case .sessionExpiryInterval: 0x11
        case .assignedClientIdentifier: 0x12
        case .serverKeepAlive: 0x13
        case .authenticationMethod: 0x15
        case .authenticationData: 0x16
        case .requestProblemInformation: 0x17
        case .willDelayInterval: 0x18
        case .requestResponseInformation: 0x19
        case .responseInformation: 0x1A
        case .serverReference: 0x1C
        case .reasonString: 0x1F
        case .receiveMaximum: 0x21
        case .topicAliasMaximum: 0x22
        case .topicAlias: 0x23
        case .maximumQoS: 0x24
        case .retainAvailable: 0x25
        case .userProperty: 0x26
        case .maximumPacketSize: 0x27
        case .wildcardSubscriptionAvailable: 0x28
        case .subscriptionIdentifierAvailable: 0x29
        case .sharedSubscriptionAvailable: 0x2A
        }
    }

    /// How an identifier's value is laid out (§2.2.2.2's table), or `nil` for an identifier the
    /// standard does not define.
    enum ValueLayout {
        case byte, twoByte, fourByte, variableByteInteger, string, binary, stringPair
    }

    static func layout(of identifier: UInt8) -> ValueLayout? {
        switch identifier {
        case 0x01, 0x17, 0x19, 0x24, 0x25, 0x28, 0x29, 0x2A: .byte
        case 0x13, 0x21, 0x22, 0x23: .twoByte
        case 0x02, 0x11, 0x18, 0x27: .fourByte
        case 0x0B: .variableByteInteger
        case 0x03, 0x08, 0x12, 0x15, 0x1A, 0x1C, 0x1F: .string
        case 0x09, 0x16: .binary
        case 0x26: .stringPair
        default: nil
        }
    }
}
