/// The H4 (UART transport) packet indicator that precedes every HCI packet in LINKTYPE 187/201
/// captures: Bluetooth Core Specification v6.0, Vol 4, Part A, §2 ("Protocol", table 2.1).
enum H4PacketType: UInt8, Sendable {
    case command = 0x01
    case acl = 0x02
    case sco = 0x03
    case event = 0x04
    case iso = 0x05
}

/// An HCI command packet header, Core v6.0 Vol 4 Part E §5.4.1: opcode (u16 LE; OGF in the top 6
/// bits, OCF in the low 10), parameter total length (u8), parameters.
struct HCICommandHeader: Sendable, Hashable {
    static let length = 3
    var opcode: UInt16
    var parameterLength: Int

    var ogf: UInt16 { opcode >> 10 }
    var ocf: UInt16 { opcode & 0x03FF }

    /// `LE Set Scan Enable`, or `0x2042 (OGF 0x08, OCF 0x042)` for one without a name.
    var name: String {
        HCINames.commandName(opcode)
            ?? "\(hex(opcode, digits: 4)) (OGF \(hex(ogf, digits: 2)), OCF \(hex(ocf, digits: 3)))"
    }

    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Result<HCICommandHeader, DissectionProblem> {
        guard let opcode = buffer.u16le(at: offset), let length = buffer.u8(at: offset + 2) else {
            return .failure(.short("HCI Command", at: offset, need: Self.length, what: "command header", have: buffer.count - offset))
        }
        guard buffer.has(Int(length), at: offset + Self.length) else {
            return .failure(.short("HCI Command", at: offset + Self.length, need: Int(length), what: "parameters as the header says", have: buffer.count - offset - Self.length))
        }
        return .success(HCICommandHeader(opcode: opcode, parameterLength: Int(length)))
    }
}

/// An HCI event packet header, Core v6.0 Vol 4 Part E §5.4.4: event code (u8), parameter total
/// length (u8), parameters. Command Complete (§7.7.14): Num_HCI_Command_Packets (u8), opcode (u16
/// LE), return parameters. Command Status (§7.7.15): status, Num_HCI_Command_Packets, opcode.
/// Disconnection Complete (§7.7.5): status, connection handle (u16 LE, 12 bits), reason. LE Meta
/// (§7.7.65): subevent code, then the subevent's parameters.
struct HCIEventHeader: Sendable, Hashable {
    static let length = 2
    static let disconnectionComplete: UInt8 = 0x05
    static let commandComplete: UInt8 = 0x0E
    static let commandStatus: UInt8 = 0x0F
    static let numberOfCompletedPackets: UInt8 = 0x13
    static let leMeta: UInt8 = 0x3E

    var code: UInt8
    var parameterLength: Int

    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Result<HCIEventHeader, DissectionProblem> {
        guard let code = buffer.u8(at: offset), let length = buffer.u8(at: offset + 1) else {
            return .failure(.short("HCI Event", at: offset, need: Self.length, what: "event header", have: buffer.count - offset))
        }
        guard buffer.has(Int(length), at: offset + Self.length) else {
            return .failure(.short("HCI Event", at: offset + Self.length, need: Int(length), what: "parameters as the header says", have: buffer.count - offset - Self.length))
        }
        return .success(HCIEventHeader(code: code, parameterLength: Int(length)))
    }
}

/// The HCI ACL data packet header, Core v6.0 Vol 4 Part E §5.4.2: handle (12 bits), packet boundary
/// flag (2 bits), broadcast flag (2 bits) in a u16 LE; data total length (u16 LE).
struct HCIACLHeader: Sendable, Hashable {
    static let length = 4
    var handle: UInt16
    /// 0b00 first non-flushable, 0b10 first flushable, 0b01 continuing, 0b11 complete (BR/EDR).
    var packetBoundary: UInt8
    var broadcast: UInt8
    var dataLength: Int

    var isContinuation: Bool { packetBoundary == 0b01 }

    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Result<HCIACLHeader, DissectionProblem> {
        guard let field = buffer.u16le(at: offset), let length = buffer.u16le(at: offset + 2) else {
            return .failure(.short("ACL", at: offset, need: Self.length, what: "ACL header", have: buffer.count - offset))
        }
        guard buffer.has(Int(length), at: offset + Self.length) else {
            return .failure(.short("ACL", at: offset + Self.length, need: Int(length), what: "data as the ACL header says", have: buffer.count - offset - Self.length))
        }
        return .success(HCIACLHeader(
            handle: field & 0x0FFF, packetBoundary: UInt8((field >> 12) & 0x3), broadcast: UInt8(field >> 14),
            dataLength: Int(length)))
    }
}

/// The HCI synchronous (SCO/eSCO) data packet header, Core v6.0 Vol 4 Part E §5.4.3: handle (12
/// bits), packet status flag (2 bits), reserved (2 bits) in a u16 LE; data total length (u8).
struct HCISCOHeader: Sendable, Hashable {
    static let length = 3
    var handle: UInt16
    var dataLength: Int

    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Result<HCISCOHeader, DissectionProblem> {
        guard let field = buffer.u16le(at: offset), let length = buffer.u8(at: offset + 2) else {
            return .failure(.short("SCO", at: offset, need: Self.length, what: "SCO header", have: buffer.count - offset))
        }
        guard buffer.has(Int(length), at: offset + Self.length) else {
            return .failure(.short("SCO", at: offset + Self.length, need: Int(length), what: "data as the SCO header says", have: buffer.count - offset - Self.length))
        }
        return .success(HCISCOHeader(handle: field & 0x0FFF, dataLength: Int(length)))
    }
}

/// The HCI ISO data packet header, Core v6.0 Vol 4 Part E §5.4.5: handle (12 bits), PB flag (2
/// bits), TS flag (1 bit), reserved (1 bit) in a u16 LE; ISO data load length (14 bits) + 2
/// reserved bits in a u16 LE.
struct HCIISOHeader: Sendable, Hashable {
    static let length = 4
    var handle: UInt16
    var dataLength: Int

    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int) -> Result<HCIISOHeader, DissectionProblem> {
        guard let field = buffer.u16le(at: offset), let lengthField = buffer.u16le(at: offset + 2) else {
            return .failure(.short("ISO", at: offset, need: Self.length, what: "ISO header", have: buffer.count - offset))
        }
        let length = Int(lengthField & 0x3FFF)
        guard buffer.has(length, at: offset + Self.length) else {
            return .failure(.short("ISO", at: offset + Self.length, need: Self.length, what: "data as the ISO header says", have: buffer.count - offset - Self.length))
        }
        return .success(HCIISOHeader(handle: field & 0x0FFF, dataLength: length))
    }
}
