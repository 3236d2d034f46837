// One Connect IQ app-message link packet: one ATT write (phone → watch) or notification
// (watch → phone), no further framing (docs/connectiq-link.md, "Packets"). Byte 0 says the kind:
//
//   0x00              command, byte 1 the command id
//   0xF0 | conn       transfer control on connection `conn`, byte 1 the control id
//   seq << 4 | conn   data, seq 0–14, payload from byte 1
//
// Integers of the link are little-endian; UUIDs go most significant byte first.

/// Which side sent a packet. Command layouts depend on it: `00 01 …` from the phone is a
/// connect request, from the watch a connect response.
public enum LinkDirection: String, Sendable, Hashable {
    /// Phone → watch (ATT write without response).
    case phone
    /// Watch → phone (ATT notification).
    case watch
}

/// A command packet (byte 0 `0x00`). Each case has one layout; which side sends it is in its name.
public enum LinkCommand: Sendable, Hashable {
    /// Phone → watch `00 01 uuid flags`: open a connection to an app (flags bit 0: force open; the SDK sends 1).
    case connectRequest(app: IQUUID, flags: UInt8)
    /// Watch → phone `00 01 status uuid conn flags`; flags bit 0: large packets. A 20-byte answer
    /// (flags cut off) decodes with `flags: nil`, which means no large packets.
    case connectResponse(status: ConnectStatus, app: IQUUID, connection: UInt8, flags: UInt8?)
    /// Phone → watch `00 02 conn`: close a connection.
    case disconnectRequest(connection: UInt8)
    /// Watch → phone `00 02 status conn`.
    case disconnectResponse(status: ConnectionStatus, connection: UInt8)
    /// Watch → phone `00 03 uuid conn`: the watch opened a connection for an app.
    case watchOpened(app: IQUUID, connection: UInt8)
    /// Phone → watch `00 03 status conn`: the answer to ``watchOpened(app:connection:)``.
    case watchOpenedAnswer(status: ConnectionStatus, connection: UInt8)
    /// Watch → phone `00 04 conn`: the watch closed a connection.
    case watchClosed(connection: UInt8)
    /// Phone → watch `00 04 status conn`: the answer to ``watchClosed(connection:)``.
    case watchClosedAnswer(status: ConnectionStatus, connection: UInt8)
    /// Phone → watch `00 05 uuid`: is the app installed, which version?
    case appInfoRequest(app: IQUUID)
    /// Watch → phone `00 05 uuid version(u16 LE)`; `0xFFFF` means not installed.
    case appInfoResponse(app: IQUUID, version: UInt16)
    /// Phone → watch `00 06 uuid`: ask the watch to open the app.
    case openAppRequest(app: IQUUID)
    /// Watch → phone `00 06 uuid code`.
    case openAppResponse(app: IQUUID, code: OpenAppCode)

    /// The command id (byte 1).
    public var identifier: UInt8 {
        switch self {
        case .connectRequest, .connectResponse: 1
        case .disconnectRequest, .disconnectResponse: 2
        case .watchOpened, .watchOpenedAnswer: 3
        case .watchClosed, .watchClosedAnswer: 4
        case .appInfoRequest, .appInfoResponse: 5
        case .openAppRequest, .openAppResponse: 6
        }
    }
}

/// A transfer-control packet (byte 0 `0xF0 | conn`).
public enum LinkControl: Sendable, Hashable {
    /// `F·c 00 flags len(u32 LE)`: a transfer of `length` bytes starts.
    case first(flags: TransferFlags, length: UInt32)
    /// `F·c 01 seq crc16(u16 LE)`: all data sent; `sequence` is the seq of the final data packet
    /// (0 when there was none), `crc` the CRC-16/ARC of every transferred byte.
    case last(sequence: UInt8, crc: UInt16)
    /// `F·c 02 type status seq`.
    case ack(type: AckType, status: AckStatus, sequence: UInt8)
    /// `F·c 03 seq`: asks the receiver to acknowledge up to `sequence`.
    case ackRequest(sequence: UInt8)
    /// `F·c 04 …`: capabilities; the layout is not public, so the bytes after the id are kept as they are.
    case capabilities([UInt8])
    /// `F·c 05 key(16) isResponse`: the XXTEA key of the following transfer.
    case encryptionKey(key: [UInt8], isResponse: Bool)
    /// `F·c 06 …`: asks for a key; any bytes after the id are kept.
    case keyRequest([UInt8])

    /// The control id (byte 1).
    public var identifier: UInt8 {
        switch self {
        case .first: 0
        case .last: 1
        case .ack: 2
        case .ackRequest: 3
        case .capabilities: 4
        case .encryptionKey: 5
        case .keyRequest: 6
        }
    }
}

/// Why bytes could not be read as the packet their first bytes announce.
public enum LinkPacketProblem: Sendable, Hashable, CustomStringConvertible {
    /// A zero-length ATT value.
    case empty
    /// A command or control byte with no id byte after it.
    case missingIdentifier
    /// A known packet of the wrong size.
    case wrongLength(packet: String, expected: [Int], found: Int)
    /// A byte whose value the layout does not allow.
    case invalidValue(field: String, offset: Int, value: UInt8)

    /// What was expected.
    public var description: String {
        switch self {
        case .empty:
            "an empty packet; expected at least one byte"
        case .missingIdentifier:
            "a command or control byte without the id byte that must follow it"
        case let .wrongLength(packet, expected, found):
            "\(packet) of \(found) bytes; expected \(expected.map(String.init).joined(separator: " or "))"
        case let .invalidValue(field, offset, value):
            "\(field) at byte \(offset) is 0x\(String(value, radix: 16)); expected 0 or 1"
        }
    }
}

/// One link packet. Decoding is total: every byte string is some case, and
/// `LinkPacket.decode(bytes, from: side).encode() == bytes` for all bytes.
public enum LinkPacket: Sendable, Hashable {
    /// A command (byte 0 `0x00`).
    case command(LinkCommand)
    /// Transfer control on a connection (byte 0 `0xF0 | connection`).
    case control(connection: UInt8, LinkControl)
    /// A data packet: `sequence` 0–14, `connection` 0–15, any number of payload bytes.
    case data(sequence: UInt8, connection: UInt8, payload: [UInt8])
    /// A command or control id this codec does not know; the bytes are kept.
    case unknown([UInt8])
    /// A known command or control of the wrong size or with an impossible value; the bytes are kept.
    case malformed([UInt8], LinkPacketProblem)

    /// The first byte of a control packet, without the connection.
    public static let controlMarker: UInt8 = 0xF0
    /// Data sequence numbers run 0...14 (15 would be a control byte).
    public static let sequenceModulus = 15

    // MARK: Encoding

    /// The packet's bytes.
    ///
    /// Connections must be 0–15 and data sequence numbers 0–14: the core never builds anything
    /// else, and ``decode(_:from:)`` never yields anything else.
    public func encode() -> [UInt8] {
        switch self {
        case .command(let command):
            return [0x00, command.identifier] + LinkPacket.commandBody(command)
        case let .control(connection, control):
            precondition(connection <= 0x0F, "LinkPacket.encode: control connection \(connection) is not 0–15")
            var bytes: [UInt8] = [LinkPacket.controlMarker | connection, control.identifier]
            switch control {
            case let .first(flags, length):
                bytes.append(flags.rawValue)
                bytes += LinkPacket.littleEndian(length)
            case let .last(sequence, crc):
                bytes.append(sequence)
                bytes += LinkPacket.littleEndian(crc)
            case let .ack(type, status, sequence):
                bytes += [type.rawValue, status.rawValue, sequence]
            case .ackRequest(let sequence):
                bytes.append(sequence)
            case .capabilities(let payload), .keyRequest(let payload):
                bytes += payload
            case let .encryptionKey(key, isResponse):
                bytes += key
                bytes.append(isResponse ? 1 : 0)
            }
            return bytes
        case let .data(sequence, connection, payload):
            precondition(sequence < 15 && connection <= 0x0F, "LinkPacket.encode: data seq \(sequence) conn \(connection) out of range")
            precondition(sequence != 0 || connection != 0, "LinkPacket.encode: data seq 0 conn 0 would be a command byte")
            return [sequence << 4 | connection] + payload
        case .unknown(let bytes), .malformed(let bytes, _):
            return bytes
        }
    }

    private static func commandBody(_ command: LinkCommand) -> [UInt8] {
        switch command {
        case let .connectRequest(app, flags):
            return app.bytes + [flags]
        case let .connectResponse(status, app, connection, flags):
            return [status.rawValue] + app.bytes + [connection] + (flags.map { [$0] } ?? [])
        case .disconnectRequest(let connection), .watchClosed(let connection):
            return [connection]
        case let .disconnectResponse(status, connection), let .watchOpenedAnswer(status, connection),
             let .watchClosedAnswer(status, connection):
            return [status.rawValue, connection]
        case let .watchOpened(app, connection):
            return app.bytes + [connection]
        case .appInfoRequest(let app), .openAppRequest(let app):
            return app.bytes
        case let .appInfoResponse(app, version):
            return app.bytes + littleEndian(version)
        case let .openAppResponse(app, code):
            return app.bytes + [code.rawValue]
        }
    }

    private static func littleEndian<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<(T.bitWidth / 8)).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    // MARK: Decoding

    /// Reads one ATT value sent by `sender`. Never fails: what does not parse is ``unknown(_:)``
    /// or ``malformed(_:_:)`` with the bytes kept.
    public static func decode(_ bytes: [UInt8], from sender: LinkDirection) -> LinkPacket {
        guard let first = bytes.first else { return .malformed(bytes, .empty) }
        if first == 0x00 { return decodeCommand(bytes, from: sender) }
        if first & 0xF0 == controlMarker { return decodeControl(bytes, connection: first & 0x0F) }
        return .data(sequence: first >> 4, connection: first & 0x0F, payload: Array(bytes.dropFirst()))
    }

    private static func decodeCommand(_ bytes: [UInt8], from sender: LinkDirection) -> LinkPacket {
        guard bytes.count >= 2 else { return .malformed(bytes, .missingIdentifier) }
        let body = Array(bytes.dropFirst(2))
        func uuid(at offset: Int) -> IQUUID { IQUUID(bytes: body[offset..<(offset + 16)])! }
        func wrong(_ name: String, _ expected: Int...) -> LinkPacket {
            .malformed(bytes, .wrongLength(packet: name, expected: expected, found: bytes.count))
        }
        let command: LinkCommand
        switch (bytes[1], sender) {
        case (1, .phone):
            guard bytes.count == 19 else { return wrong("connect request", 19) }
            command = .connectRequest(app: uuid(at: 0), flags: body[16])
        case (1, .watch):
            guard bytes.count == 20 || bytes.count == 21 else { return wrong("connect response", 21, 20) }
            command = .connectResponse(
                status: ConnectStatus(rawValue: body[0]), app: uuid(at: 1), connection: body[17],
                flags: bytes.count == 21 ? body[18] : nil)
        case (2, .phone):
            guard bytes.count == 3 else { return wrong("disconnect request", 3) }
            command = .disconnectRequest(connection: body[0])
        case (2, .watch):
            guard bytes.count == 4 else { return wrong("disconnect response", 4) }
            command = .disconnectResponse(status: ConnectionStatus(rawValue: body[0]), connection: body[1])
        case (3, .watch):
            guard bytes.count == 19 else { return wrong("watch-opens command", 19) }
            command = .watchOpened(app: uuid(at: 0), connection: body[16])
        case (3, .phone):
            guard bytes.count == 4 else { return wrong("watch-opens answer", 4) }
            command = .watchOpenedAnswer(status: ConnectionStatus(rawValue: body[0]), connection: body[1])
        case (4, .watch):
            guard bytes.count == 3 else { return wrong("watch-closes command", 3) }
            command = .watchClosed(connection: body[0])
        case (4, .phone):
            guard bytes.count == 4 else { return wrong("watch-closes answer", 4) }
            command = .watchClosedAnswer(status: ConnectionStatus(rawValue: body[0]), connection: body[1])
        case (5, .phone):
            guard bytes.count == 18 else { return wrong("app info request", 18) }
            command = .appInfoRequest(app: uuid(at: 0))
        case (5, .watch):
            guard bytes.count == 20 else { return wrong("app info response", 20) }
            command = .appInfoResponse(app: uuid(at: 0), version: UInt16(body[16]) | UInt16(body[17]) << 8)
        case (6, .phone):
            guard bytes.count == 18 else { return wrong("open app request", 18) }
            command = .openAppRequest(app: uuid(at: 0))
        case (6, .watch):
            guard bytes.count == 19 else { return wrong("open app response", 19) }
            command = .openAppResponse(app: uuid(at: 0), code: OpenAppCode(rawValue: body[16]))
        default:
            return .unknown(bytes)
        }
        return .command(command)
    }

    private static func decodeControl(_ bytes: [UInt8], connection: UInt8) -> LinkPacket {
        guard bytes.count >= 2 else { return .malformed(bytes, .missingIdentifier) }
        func wrong(_ name: String, _ expected: Int) -> LinkPacket {
            .malformed(bytes, .wrongLength(packet: name, expected: [expected], found: bytes.count))
        }
        let control: LinkControl
        switch bytes[1] {
        case 0:
            guard bytes.count == 7 else { return wrong("first", 7) }
            let length = (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[3 + $1]) << (8 * UInt32($1)) }
            control = .first(flags: TransferFlags(rawValue: bytes[2]), length: length)
        case 1:
            guard bytes.count == 5 else { return wrong("last", 5) }
            control = .last(sequence: bytes[2], crc: UInt16(bytes[3]) | UInt16(bytes[4]) << 8)
        case 2:
            guard bytes.count == 5 else { return wrong("ack", 5) }
            control = .ack(type: AckType(rawValue: bytes[2]), status: AckStatus(rawValue: bytes[3]), sequence: bytes[4])
        case 3:
            guard bytes.count == 3 else { return wrong("ack request", 3) }
            control = .ackRequest(sequence: bytes[2])
        case 4:
            control = .capabilities(Array(bytes.dropFirst(2)))
        case 5:
            guard bytes.count == 19 else { return wrong("encryption key", 19) }
            guard bytes[18] <= 1 else {
                return .malformed(bytes, .invalidValue(field: "isResponse", offset: 18, value: bytes[18]))
            }
            control = .encryptionKey(key: Array(bytes[2..<18]), isResponse: bytes[18] == 1)
        case 6:
            control = .keyRequest(Array(bytes.dropFirst(2)))
        default:
            return .unknown(bytes)
        }
        return .control(connection: connection, control)
    }

    // MARK: Summary

    /// One line for `tether inspect` and traces, e.g. `data seq 3 conn 1, 19 bytes`,
    /// `ack first success conn 1`, `command connect → 0180e520-5f7e-11e4-9803-0800200c9a66 force-open`.
    /// `→` marks phone → watch, `←` watch → phone.
    public var summary: String {
        switch self {
        case .command(let command):
            return LinkPacket.summary(of: command)
        case let .control(connection, control):
            let conn = "conn \(connection)"
            switch control {
            case let .first(flags, length):
                var words = ["first \(conn), \(length) bytes"]
                if flags.contains(.encrypted) { words.append("encrypted") }
                if flags.contains(.transient) { words.append("transient") }
                let other = flags.subtracting([.encrypted, .transient])
                if !other.isEmpty { words.append("flags 0x\(String(flags.rawValue, radix: 16))") }
                return words.joined(separator: ", ")
            case let .last(sequence, crc):
                return "last seq \(sequence) crc 0x\(LinkPacket.hex(crc)) \(conn)"
            case let .ack(type, status, sequence):
                let seq = sequence == 0 ? "" : " seq \(sequence)"
                return "ack \(type) \(status)\(seq) \(conn)"
            case .ackRequest(let sequence):
                return "ack request seq \(sequence) \(conn)"
            case .capabilities(let payload):
                return "capabilities \(conn), \(payload.count) bytes"
            case let .encryptionKey(key, isResponse):
                return "encryption key \(conn) \(LinkPacket.hex(bytes: key))" + (isResponse ? " (response)" : "")
            case .keyRequest(let payload):
                return "key request \(conn)" + (payload.isEmpty ? "" : ", \(payload.count) bytes")
            }
        case let .data(sequence, connection, payload):
            return LinkPacket.dataSummary(sequence: sequence, connection: connection, payloadCount: payload.count)
        case .unknown(let bytes):
            return "unknown packet " + bytes.map(LinkPacket.hex).joined(separator: " ")
        case let .malformed(bytes, problem):
            return "malformed packet (\(problem)): " + bytes.map(LinkPacket.hex).joined(separator: " ")
        }
    }

    private static func summary(of command: LinkCommand) -> String {
        switch command {
        case let .connectRequest(app, flags):
            let force = flags & 1 != 0 ? " force-open" : ""
            let other = flags & ~1 != 0 ? " flags 0x\(String(flags, radix: 16))" : ""
            return "command connect → \(app)\(force)\(other)"
        case let .connectResponse(status, app, connection, flags):
            let large = (flags ?? 0) & 1 != 0 ? " large-packets" : ""
            return "command connect ← \(status) \(app) conn \(connection)\(large)"
        case .disconnectRequest(let connection):
            return "command disconnect → conn \(connection)"
        case let .disconnectResponse(status, connection):
            return "command disconnect ← \(status) conn \(connection)"
        case let .watchOpened(app, connection):
            return "command watch-opens ← \(app) conn \(connection)"
        case let .watchOpenedAnswer(status, connection):
            return "command watch-opens → \(status) conn \(connection)"
        case .watchClosed(let connection):
            return "command watch-closes ← conn \(connection)"
        case let .watchClosedAnswer(status, connection):
            return "command watch-closes → \(status) conn \(connection)"
        case .appInfoRequest(let app):
            return "command app-info → \(app)"
        case let .appInfoResponse(app, version):
            return "command app-info ← \(app) " + (version == 0xFFFF ? "not installed" : "version \(version)")
        case .openAppRequest(let app):
            return "command open-app → \(app)"
        case let .openAppResponse(app, code):
            return "command open-app ← \(app) \(code)"
        }
    }

    /// `decode(bytes, from: sender).summary`, without decoding a data packet: most packets of a
    /// transfer are data, and replay writes every written packet's summary into the trace (the
    /// decoding copied the payload, and the interpolation cost more than the rest of the event).
    public static func summary(of bytes: [UInt8], from sender: LinkDirection) -> String {
        if let first = bytes.first, first != 0x00, first & 0xF0 != controlMarker {
            return dataSummary(sequence: first >> 4, connection: first & 0x0F, payloadCount: bytes.count - 1)
        }
        return decode(bytes, from: sender).summary
    }

    /// `data seq S conn C, N bytes`, written digit by digit straight into the string's storage.
    static func dataSummary(sequence: UInt8, connection: UInt8, payloadCount: Int) -> String {
        // 64 bytes hold the longest: "data seq 15 conn 15, " (21), 20 characters of an Int, " bytes".
        String(unsafeUninitializedCapacity: 64) { text in
            var count = 0
            func append(_ ascii: StaticString) {
                ascii.withUTF8Buffer { bytes in
                    for byte in bytes {
                        text[count] = byte
                        count += 1
                    }
                }
            }
            func append(_ number: Int) {
                if number < 0 {
                    text[count] = UInt8(ascii: "-")
                    count += 1
                }
                let start = count
                var rest = number.magnitude
                repeat {
                    text[count] = UInt8(ascii: "0") + UInt8(rest % 10)
                    count += 1
                    rest /= 10
                } while rest > 0
                text[start..<count].reverse()
            }
            append("data seq ")
            append(Int(sequence))
            append(" conn ")
            append(Int(connection))
            append(", ")
            append(payloadCount)
            append(" bytes")
            return count
        }
    }

    /// `value` in lower-case hex, zero-padded to its width (`0a`, `bb3d`). Written straight into
    /// the string: every key packet's summary has sixteen of them, and `String(_:radix:)` with
    /// padding and joining was most of what writing the phone's packets into the trace cost.
    private static func hex<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> String {
        let digits = T.bitWidth / 4
        return String(unsafeUninitializedCapacity: digits) { text in
            for index in 0..<digits {
                text[index] = hexDigit(UInt8(truncatingIfNeeded: value >> (4 * (digits - 1 - index))) & 0xF)
            }
            return digits
        }
    }

    /// `bytes` in lower-case hex, two digits each, nothing between them.
    private static func hex(bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: 2 * bytes.count) { text in
            for (index, byte) in bytes.enumerated() {
                text[2 * index] = hexDigit(byte >> 4)
                text[2 * index + 1] = hexDigit(byte & 0xF)
            }
            return 2 * bytes.count
        }
    }

    private static func hexDigit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }
}
