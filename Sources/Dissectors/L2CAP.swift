/// The L2CAP basic header, Core v6.0 Vol 3 Part A §3.1: PDU length (u16 LE, payload only), channel
/// ID (u16 LE). Fixed LE channels (§2.1, table 2.3): 0x0004 ATT, 0x0005 LE signalling, 0x0006
/// Security Manager; 0x0001 / 0x0002 / 0x0007 are BR/EDR; 0x0040 and up are dynamic.
struct L2CAPBasicHeader: Sendable, Hashable {
    static let length = 4
    static let attChannel: UInt16 = 0x0004
    static let leSignallingChannel: UInt16 = 0x0005
    static let smpChannel: UInt16 = 0x0006

    var payloadLength: Int
    var channelID: UInt16

    /// `context` is only read for a problem (replay parses every PDU and reports none).
    static func parse(_ buffer: UnsafeRawBufferPointer, context: @autoclosure () -> String?) -> Result<L2CAPBasicHeader, DissectionProblem> {
        guard let length = buffer.u16le(at: 0), let cid = buffer.u16le(at: 2) else {
            return .failure(.short("L2CAP", at: 0, need: Self.length, what: "basic header", have: buffer.count, context: context()))
        }
        guard buffer.has(Int(length), at: Self.length) else {
            return .failure(.short("L2CAP", at: Self.length, need: Int(length), what: "payload as the basic header says", have: buffer.count - Self.length, context: context()))
        }
        return .success(L2CAPBasicHeader(payloadLength: Int(length), channelID: cid))
    }

    /// The channel's name for summaries.
    static func channelName(_ cid: UInt16) -> String {
        switch cid {
        case 0x0001: "BR/EDR Signalling"
        case 0x0002: "Connectionless"
        case attChannel: "ATT"
        case leSignallingChannel: "LE Signalling"
        case smpChannel: "SMP"
        case 0x0007: "BR/EDR Security Manager"
        case 0x0040...0x007F: "dynamic channel \(hex(cid, digits: 4))"
        default: "channel \(hex(cid, digits: 4))"
        }
    }

    /// Signalling command codes, Core v6.0 Vol 3 Part A §4 (table 4.2).
    static func signallingCommandName(_ code: UInt8) -> String {
        switch code {
        case 0x01: "Command Reject"
        case 0x02: "Connection Request"
        case 0x03: "Connection Response"
        case 0x04: "Configuration Request"
        case 0x05: "Configuration Response"
        case 0x06: "Disconnection Request"
        case 0x07: "Disconnection Response"
        case 0x08: "Echo Request"
        case 0x09: "Echo Response"
        case 0x0A: "Information Request"
        case 0x0B: "Information Response"
        case 0x12: "Connection Parameter Update Request"
        case 0x13: "Connection Parameter Update Response"
        case 0x14: "LE Credit Based Connection Request"
        case 0x15: "LE Credit Based Connection Response"
        case 0x16: "Flow Control Credit Indication"
        case 0x17: "Credit Based Connection Request"
        case 0x18: "Credit Based Connection Response"
        case 0x19: "Credit Based Reconfigure Request"
        case 0x1A: "Credit Based Reconfigure Response"
        default: "command \(hex(code, digits: 2))"
        }
    }

    /// Security Manager command codes, Core v6.0 Vol 3 Part H §3.3 (table 3.4).
    static func smpCommandName(_ code: UInt8) -> String {
        switch code {
        case 0x01: "Pairing Request"
        case 0x02: "Pairing Response"
        case 0x03: "Pairing Confirm"
        case 0x04: "Pairing Random"
        case 0x05: "Pairing Failed"
        case 0x06: "Encryption Information"
        case 0x07: "Central Identification"
        case 0x08: "Identity Information"
        case 0x09: "Identity Address Information"
        case 0x0A: "Signing Information"
        case 0x0B: "Security Request"
        case 0x0C: "Pairing Public Key"
        case 0x0D: "Pairing DHKey Check"
        case 0x0E: "Pairing Keypress Notification"
        default: "command \(hex(code, digits: 2))"
        }
    }
}
