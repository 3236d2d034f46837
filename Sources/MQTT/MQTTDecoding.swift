/// Why bytes are not a valid MQTT control packet: where, what the standard expects there, what was
/// found. `type` is set once the fixed header named one, so a dissector can still say which packet
/// it was.
public struct MQTTDecodeError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The packet type the first byte named, when it named a valid one.
    public var type: MQTTPacketType?
    /// Offset within the packet (0 is the fixed header's first byte).
    public var offset: Int
    /// What the standard expects there.
    public var expected: String
    /// What was there.
    public var found: String

    /// An error at `offset`.
    public init(type: MQTTPacketType?, offset: Int, expected: String, found: String) {
        self.type = type
        self.offset = offset
        self.expected = expected
        self.found = found
    }

    /// `MQTT PUBLISH: at offset 7: expected …; found …`.
    public var description: String {
        "MQTT\(type.map { " \($0)" } ?? ""): at offset \(offset): expected \(expected); found \(found)"
    }
}

/// The fixed header (§2.1.1): the type and flags byte, then the Remaining Length as a Variable Byte
/// Integer of one to four bytes.
public struct MQTTFixedHeader: Sendable, Hashable {
    /// The first byte: type in the high nibble, flags in the low.
    public var firstByte: UInt8
    /// The number of bytes after the fixed header.
    public var remainingLength: Int
    /// The fixed header's own length, 2 to 5 bytes.
    public var headerLength: Int
    /// The whole packet's length.
    public var packetLength: Int { headerLength + remainingLength }

    /// What the start of a byte stream says about the next packet.
    public enum Scan: Sendable, Hashable {
        /// The fixed header is complete.
        case header(MQTTFixedHeader)
        /// More bytes are needed to read the Remaining Length.
        case needMore
        /// The Remaining Length runs past four bytes: the stream cannot be framed from here on.
        case malformed(MQTTDecodeError)
    }

    /// Reads the fixed header at the start of `bytes`.
    public static func scan(_ bytes: UnsafeRawBufferPointer) -> Scan {
        guard bytes.count >= 2 else { return .needMore }
        var value = 0
        var multiplier = 1
        for index in 1...4 {
            guard index < bytes.count else { return .needMore }
            let byte = bytes[index]
            value += Int(byte & 0x7F) * multiplier
            if byte & 0x80 == 0 {
                return .header(MQTTFixedHeader(firstByte: bytes[0], remainingLength: value, headerLength: index + 1))
            }
            multiplier *= 128
        }
        return .malformed(MQTTDecodeError(
            type: MQTTPacketType(rawValue: bytes[0] >> 4), offset: 1,
            expected: "a Remaining Length of at most four bytes (§1.5.5)",
            found: "a fifth byte with the continuation bit set"))
    }
}

extension MQTTPacket {
    /// Decodes one whole control packet, fixed header included. `version` is the connection's
    /// protocol level (from its CONNECT); a CONNECT names its own.
    public init(decoding bytes: [UInt8], version: MQTTVersion) throws(MQTTDecodeError) {
        let result = bytes.withUnsafeBytes { MQTTPacket.decode($0, version: version) }
        self = try result.get()
    }

    /// Decodes one whole control packet, fixed header included, without throwing (for dissectors
    /// that keep going after a bad packet).
    public static func decode(_ bytes: UnsafeRawBufferPointer, version: MQTTVersion) -> Result<MQTTPacket, MQTTDecodeError> {
        let header: MQTTFixedHeader
        switch MQTTFixedHeader.scan(bytes) {
        case .header(let scanned): header = scanned
        case .malformed(let error): return .failure(error)
        case .needMore:
            return .failure(MQTTDecodeError(
                type: bytes.isEmpty ? nil : MQTTPacketType(rawValue: bytes[0] >> 4), offset: bytes.count,
                expected: "a whole fixed header", found: "the end of the packet after \(bytes.count) bytes"))
        }
        guard let type = MQTTPacketType(rawValue: header.firstByte >> 4) else {
            return .failure(MQTTDecodeError(type: nil, offset: 0, expected: "a control packet type 1–15", found: "type 0 (reserved)"))
        }
        guard header.packetLength == bytes.count else {
            return .failure(MQTTDecodeError(
                type: type, offset: 1, expected: "a Remaining Length of \(bytes.count - header.headerLength) bytes, the rest of the packet",
                found: "\(header.remainingLength)"))
        }
        let flags = header.firstByte & 0x0F
        if let required = type.requiredFlags, flags != required {
            return .failure(MQTTDecodeError(
                type: type, offset: 0, expected: "fixed-header flags \(binary(required)) for \(type) (§2.1.3)", found: binary(flags)))
        }
        var reader = MQTTReader(bytes: bytes, offset: header.headerLength, type: type)
        do throws(MQTTDecodeError) {
            let body = try decodeBody(type: type, flags: flags, version: version, reader: &reader)
            if reader.remaining > 0 {
                throw reader.error(expected: "the end of the \(type) packet", found: "\(reader.remaining) more bytes")
            }
            return .success(MQTTPacket(type: type, flags: flags, body: body))
        } catch {
            return .failure(error)
        }
    }

    private static func decodeBody(
        type: MQTTPacketType, flags: UInt8, version: MQTTVersion, reader: inout MQTTReader
    ) throws(MQTTDecodeError) -> MQTTPacketBody {
        let v5 = version == .v5
        switch type {
        case .connect:
            return .connect(try decodeConnect(&reader))
        case .connack:
            let ackFlags = try reader.byte("the Connect Acknowledge Flags")
            guard ackFlags & 0xFE == 0 else {
                throw reader.error(at: reader.offset - 1, expected: "Connect Acknowledge Flags bits 7–1 zero", found: binary(ackFlags))
            }
            let code = try reader.byte(v5 ? "the Connect Reason Code" : "the Connect Return Code")
            let properties = v5 ? try reader.properties() : []
            return .connack(sessionPresent: ackFlags & 1 == 1, reasonCode: code, properties: properties)
        case .publish:
            let qos = (flags >> 1) & 0x03
            guard qos != 3 else {
                throw reader.error(at: 0, expected: "a PUBLISH QoS of 0, 1 or 2", found: "QoS 3 (both QoS bits set)")
            }
            let topic = try reader.string("the Topic Name")
            let packetID = qos > 0 ? try reader.packetID() : nil
            let properties = v5 ? try reader.properties() : []
            let payload = reader.rest()
            return .publish(MQTTPublish(
                topic: topic, qos: qos, dup: flags & 0x08 != 0, retain: flags & 0x01 != 0,
                packetID: packetID, properties: properties, payload: payload))
        case .puback, .pubrec, .pubrel, .pubcomp:
            let id = try reader.packetID()
            guard v5, reader.remaining > 0 else { return .acknowledgement(packetID: id, reasonCode: 0, properties: []) }
            let code = try reader.byte("the Reason Code")
            let properties = reader.remaining > 0 ? try reader.properties() : []
            return .acknowledgement(packetID: id, reasonCode: code, properties: properties)
        case .subscribe:
            let id = try reader.packetID()
            let properties = v5 ? try reader.properties() : []
            var subscriptions: [MQTTSubscription] = []
            repeat {
                let filter = try reader.string("a Topic Filter")
                let options = try reader.byte("the Subscription Options")
                let reserved: UInt8 = v5 ? 0xC0 : 0xFC
                guard options & reserved == 0, options & 0x03 != 3, !v5 || (options >> 4) & 0x03 != 3 else {
                    throw reader.error(at: reader.offset - 1, expected: v5 ? "Subscription Options with QoS ≤ 2, Retain Handling ≤ 2 and bits 7–6 zero" : "a Requested QoS byte of 0, 1 or 2", found: binary(options))
                }
                subscriptions.append(MQTTSubscription(topicFilter: filter, options: options))
            } while reader.remaining > 0
            return .subscribe(packetID: id, properties: properties, subscriptions: subscriptions)
        case .suback:
            let id = try reader.packetID()
            let properties = v5 ? try reader.properties() : []
            let codes = reader.rest()
            guard !codes.isEmpty else {
                throw reader.error(expected: "at least one return code", found: "none")
            }
            return .suback(packetID: id, properties: properties, reasonCodes: codes)
        case .unsubscribe:
            let id = try reader.packetID()
            let properties = v5 ? try reader.properties() : []
            var filters: [String] = []
            repeat { filters.append(try reader.string("a Topic Filter")) } while reader.remaining > 0
            return .unsubscribe(packetID: id, properties: properties, topicFilters: filters)
        case .unsuback:
            let id = try reader.packetID()
            guard v5 else { return .unsuback(packetID: id, properties: [], reasonCodes: []) }
            let properties = try reader.properties()
            return .unsuback(packetID: id, properties: properties, reasonCodes: reader.rest())
        case .pingreq, .pingresp:
            return .ping
        case .disconnect, .auth:
            guard v5 else {
                if type == .auth {
                    throw reader.error(at: 0, expected: "AUTH only on an MQTT 5 connection", found: "AUTH on MQTT \(version)")
                }
                return .reason(reasonCode: 0, properties: [])
            }
            guard reader.remaining > 0 else { return .reason(reasonCode: 0, properties: []) }
            let code = try reader.byte("the Reason Code")
            let properties = reader.remaining > 0 ? try reader.properties() : []
            return .reason(reasonCode: code, properties: properties)
        }
    }

    private static func decodeConnect(_ reader: inout MQTTReader) throws(MQTTDecodeError) -> MQTTConnect {
        let name = try reader.string("the Protocol Name")
        let levelOffset = reader.offset
        let level = try reader.byte("the Protocol Level")
        guard let version = MQTTVersion(rawValue: level) else {
            throw reader.error(at: levelOffset, expected: "Protocol Level 3 (3.1), 4 (3.1.1) or 5 (5.0)", found: "\(level)")
        }
        let expectedName = version == .v3_1 ? "MQIsdp" : "MQTT"
        guard name == expectedName else {
            throw reader.error(at: levelOffset - name.utf8.count - 2, expected: "Protocol Name \"\(expectedName)\" for level \(level)", found: "\"\(name)\"")
        }
        let flags = try reader.byte("the Connect Flags")
        guard flags & 0x01 == 0 else {
            throw reader.error(at: reader.offset - 1, expected: "Connect Flags bit 0 (reserved) zero", found: binary(flags))
        }
        let willFlag = flags & 0x04 != 0
        let willQoS = (flags >> 3) & 0x03
        guard willQoS != 3, willFlag || (willQoS == 0 && flags & 0x20 == 0) else {
            throw reader.error(at: reader.offset - 1, expected: "Will QoS ≤ 2, and Will QoS and Will Retain zero without the Will Flag", found: binary(flags))
        }
        let keepAlive = try reader.u16("the Keep Alive")
        let v5 = version == .v5
        let properties = v5 ? try reader.properties() : []
        let clientID = try reader.string("the Client Identifier")
        var will: MQTTWill?
        if willFlag {
            let willProperties = v5 ? try reader.properties() : []
            let topic = try reader.string("the Will Topic")
            let payload = try reader.binary("the Will Message")
            will = MQTTWill(topic: topic, payload: payload, qos: willQoS, retain: flags & 0x20 != 0, properties: willProperties)
        }
        let username = flags & 0x80 != 0 ? try reader.string("the User Name") : nil
        let password = flags & 0x40 != 0 ? try reader.binary("the Password") : nil
        return MQTTConnect(
            protocolName: name, version: version, cleanSession: flags & 0x02 != 0, keepAlive: keepAlive,
            clientID: clientID, will: will, username: username, password: password, properties: properties)
    }
}

func binary(_ value: UInt8) -> String {
    let digits = String(value, radix: 2)
    return "0b" + String(repeating: "0", count: max(0, (value > 0x0F ? 8 : 4) - digits.count)) + digits
}

/// Bounds-checked reads through one packet; every read past the end throws an error naming the field.
struct MQTTReader {
    let bytes: UnsafeRawBufferPointer
    var offset: Int
    let type: MQTTPacketType

    init(bytes: UnsafeRawBufferPointer, offset: Int, type: MQTTPacketType) {
        self.bytes = bytes
        self.offset = offset
        self.type = type
    }

    var remaining: Int { bytes.count - offset }

    func error(at position: Int? = nil, expected: String, found: String) -> MQTTDecodeError {
        MQTTDecodeError(type: type, offset: position ?? offset, expected: expected, found: found)
    }

    private func short(_ need: Int, _ what: String) -> MQTTDecodeError {
        error(expected: "\(need) bytes of \(what)", found: "only \(remaining) left in the packet")
    }

    mutating func byte(_ what: String) throws(MQTTDecodeError) -> UInt8 {
        guard remaining >= 1 else { throw short(1, what) }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func u16(_ what: String) throws(MQTTDecodeError) -> UInt16 {
        guard remaining >= 2 else { throw short(2, what) }
        defer { offset += 2 }
        return UInt16(bytes[offset]) << 8 | UInt16(bytes[offset + 1])
    }

    mutating func u32(_ what: String) throws(MQTTDecodeError) -> UInt32 {
        guard remaining >= 4 else { throw short(4, what) }
        defer { offset += 4 }
        return UInt32(bytes[offset]) << 24 | UInt32(bytes[offset + 1]) << 16 | UInt32(bytes[offset + 2]) << 8 | UInt32(bytes[offset + 3])
    }

    mutating func packetID() throws(MQTTDecodeError) -> UInt16 {
        let at = offset
        let id = try u16("the Packet Identifier")
        guard id != 0 else { throw error(at: at, expected: "a non-zero Packet Identifier (§2.2.1)", found: "0") }
        return id
    }

    mutating func variableByteInteger(_ what: String) throws(MQTTDecodeError) -> UInt32 {
        var value: UInt32 = 0
        let start = offset
        for index in 0..<4 {
            let byte = try self.byte(what)
            value |= UInt32(byte & 0x7F) << (7 * UInt32(index))
            if byte & 0x80 == 0 { return value }
        }
        throw error(at: start, expected: "\(what) as a Variable Byte Integer of at most four bytes", found: "a fifth byte")
    }

    /// The two-byte length before a string or binary field. Its description is built only for an
    /// error: interpolating it on every call allocated once per PUBLISH.
    private mutating func fieldLength(_ what: String) throws(MQTTDecodeError) -> Int {
        guard remaining >= 2 else { throw short(2, "the length of \(what)") }
        defer { offset += 2 }
        return Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
    }

    mutating func binary(_ what: String) throws(MQTTDecodeError) -> [UInt8] {
        let length = try fieldLength(what)
        guard remaining >= length else { throw short(length, what) }
        defer { offset += length }
        return [UInt8](UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]))
    }

    mutating func string(_ what: String) throws(MQTTDecodeError) -> String {
        let start = offset
        let length = try fieldLength(what)
        guard remaining >= length else { throw short(length, what) }
        let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)])
        // Topics are nearly always ASCII: one pass decides, and ASCII needs no further validation.
        var ascii = true
        for byte in slice where byte == 0 || byte >= 0x80 {
            ascii = false
            break
        }
        let text: String
        if ascii {
            text = String(decoding: slice, as: UTF8.self)
        } else {
            guard let validated = String(validating: slice, as: UTF8.self) else {
                throw error(at: start + 2, expected: "\(what) in UTF-8 (§1.5.4)", found: "\(length) bytes that are not UTF-8")
            }
            guard !slice.contains(0) else {
                throw error(at: start + 2, expected: "\(what) without U+0000 (§1.5.4)", found: "a NUL character")
            }
            text = validated
        }
        offset += length
        return text
    }

    mutating func rest() -> [UInt8] {
        defer { offset = bytes.count }
        return [UInt8](UnsafeRawBufferPointer(rebasing: bytes[offset...]))
    }

    mutating func properties() throws(MQTTDecodeError) -> [MQTTProperty] {
        let lengthOffset = offset
        let length = Int(try variableByteInteger("the Property Length"))
        guard remaining >= length else {
            throw error(at: lengthOffset, expected: "\(length) bytes of properties as the Property Length says", found: "only \(remaining) left in the packet")
        }
        let end = offset + length
        var properties: [MQTTProperty] = []
        while offset < end {
            let idOffset = offset
            let identifier = try byte("a Property Identifier")
            guard let layout = MQTTProperty.layout(of: identifier) else {
                throw error(at: idOffset, expected: "a property identifier MQTT 5 defines (§2.2.2.2)", found: "0x" + String(identifier, radix: 16))
            }
            let property: MQTTProperty
            switch layout {
            case .byte:
                let value = try byte("a byte property")
                switch identifier {
                case 0x01: property = .payloadFormatIndicator(value)
                case 0x17: property = .requestProblemInformation(value)
                case 0x19: property = .requestResponseInformation(value)
                case 0x24: property = .maximumQoS(value)
                case 0x25: property = .retainAvailable(value)
                case 0x28: property = .wildcardSubscriptionAvailable(value)
                case 0x29: property = .subscriptionIdentifierAvailable(value)
                default: property = .sharedSubscriptionAvailable(value)
                }
            case .twoByte:
                let value = try u16("a two-byte property")
                switch identifier {
                case 0x13: property = .serverKeepAlive(value)
                case 0x21: property = .receiveMaximum(value)
                case 0x22: property = .topicAliasMaximum(value)
                default: property = .topicAlias(value)
                }
            case .fourByte:
                let value = try u32("a four-byte property")
                switch identifier {
                case 0x02: property = .messageExpiryInterval(value)
                case 0x11: property = .sessionExpiryInterval(value)
                case 0x18: property = .willDelayInterval(value)
                default: property = .maximumPacketSize(value)
                }
            case .variableByteInteger:
                property = .subscriptionIdentifier(try variableByteInteger("the Subscription Identifier"))
            case .string:
                let value = try string("a string property")
                switch identifier {
                case 0x03: property = .contentType(value)
                case 0x08: property = .responseTopic(value)
                case 0x12: property = .assignedClientIdentifier(value)
                case 0x15: property = .authenticationMethod(value)
                case 0x1A: property = .responseInformation(value)
                case 0x1C: property = .serverReference(value)
                default: property = .reasonString(value)
                }
            case .binary:
                let value = try binary("a binary property")
                property = identifier == 0x09 ? .correlationData(value) : .authenticationData(value)
            case .stringPair:
                let name = try string("a User Property name")
                property = .userProperty(name, try string("a User Property value"))
            }
            properties.append(property)
        }
        guard offset == end else {
            throw error(at: lengthOffset, expected: "properties ending where the Property Length says", found: "the last one running \(offset - end) bytes past it")
        }
        return properties
    }
}
