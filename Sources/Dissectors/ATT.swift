/// An ATT opcode, Core v6.0 Vol 3 Part F §3.4.8 (table 3.37 "Attribute Protocol PDUs"). Bits 0–5
/// are the method, bit 6 the Command flag, bit 7 the Authentication Signature flag (§3.3.1). An
/// opcode the table does not list is a value, named by its number.
public struct ATTOpcode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The opcode byte as sent.
    public var rawValue: UInt8
    /// Wraps an opcode byte.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// Every opcode the specification defines, with Wireshark's names for them.
    public static let known: [UInt8: String] = [
        0x01: "Error Response",
        0x02: "Exchange MTU Request",
        0x03: "Exchange MTU Response",
        0x04: "Find Information Request",
        0x05: "Find Information Response",
        0x06: "Find By Type Value Request",
        0x07: "Find By Type Value Response",
        0x08: "Read By Type Request",
        0x09: "Read By Type Response",
        0x0A: "Read Request",
        0x0B: "Read Response",
        0x0C: "Read Blob Request",
        0x0D: "Read Blob Response",
        0x0E: "Read Multiple Request",
        0x0F: "Read Multiple Response",
        0x10: "Read By Group Type Request",
        0x11: "Read By Group Type Response",
        0x12: "Write Request",
        0x13: "Write Response",
        0x16: "Prepare Write Request",
        0x17: "Prepare Write Response",
        0x18: "Execute Write Request",
        0x19: "Execute Write Response",
        0x1B: "Handle Value Notification",
        0x1D: "Handle Value Indication",
        0x1E: "Handle Value Confirmation",
        0x20: "Read Multiple Variable Request",
        0x21: "Read Multiple Variable Response",
        0x23: "Multiple Handle Value Notification",
        0x52: "Write Command",
        0xD2: "Signed Write Command",
    ]

    /// `Write Request`, or `Unknown Opcode 0x99`.
    public var name: String { Self.known[rawValue] ?? "Unknown Opcode \(hex(rawValue, digits: 2))" }
    /// `true` for an opcode the specification defines.
    public var isKnown: Bool { Self.known[rawValue] != nil }
    /// The same as ``name``.
    public var description: String { name }

    /// Error Response (§3.4.1.1).
    public static let errorResponse = ATTOpcode(rawValue: 0x01)
    /// Exchange MTU Request (§3.4.2.1).
    public static let exchangeMTURequest = ATTOpcode(rawValue: 0x02)
    /// Exchange MTU Response (§3.4.2.2).
    public static let exchangeMTUResponse = ATTOpcode(rawValue: 0x03)
    /// Find Information Request (§3.4.3.1).
    public static let findInformationRequest = ATTOpcode(rawValue: 0x04)
    /// Find Information Response (§3.4.3.2).
    public static let findInformationResponse = ATTOpcode(rawValue: 0x05)
    /// Find By Type Value Request (§3.4.3.3).
    public static let findByTypeValueRequest = ATTOpcode(rawValue: 0x06)
    /// Find By Type Value Response (§3.4.3.4).
    public static let findByTypeValueResponse = ATTOpcode(rawValue: 0x07)
    /// Read By Type Request (§3.4.4.1).
    public static let readByTypeRequest = ATTOpcode(rawValue: 0x08)
    /// Read By Type Response (§3.4.4.2).
    public static let readByTypeResponse = ATTOpcode(rawValue: 0x09)
    /// Read Request (§3.4.4.3).
    public static let readRequest = ATTOpcode(rawValue: 0x0A)
    /// Read Response (§3.4.4.4).
    public static let readResponse = ATTOpcode(rawValue: 0x0B)
    /// Read Blob Request (§3.4.4.5).
    public static let readBlobRequest = ATTOpcode(rawValue: 0x0C)
    /// Read Blob Response (§3.4.4.6).
    public static let readBlobResponse = ATTOpcode(rawValue: 0x0D)
    /// Read Multiple Request (§3.4.4.7).
    public static let readMultipleRequest = ATTOpcode(rawValue: 0x0E)
    /// Read Multiple Response (§3.4.4.8).
    public static let readMultipleResponse = ATTOpcode(rawValue: 0x0F)
    /// Read By Group Type Request (§3.4.4.9).
    public static let readByGroupTypeRequest = ATTOpcode(rawValue: 0x10)
    /// Read By Group Type Response (§3.4.4.10).
    public static let readByGroupTypeResponse = ATTOpcode(rawValue: 0x11)
    /// Write Request (§3.4.5.1).
    public static let writeRequest = ATTOpcode(rawValue: 0x12)
    /// Write Response (§3.4.5.2).
    public static let writeResponse = ATTOpcode(rawValue: 0x13)
    /// Prepare Write Request (§3.4.6.1).
    public static let prepareWriteRequest = ATTOpcode(rawValue: 0x16)
    /// Prepare Write Response (§3.4.6.2).
    public static let prepareWriteResponse = ATTOpcode(rawValue: 0x17)
    /// Execute Write Request (§3.4.6.3).
    public static let executeWriteRequest = ATTOpcode(rawValue: 0x18)
    /// Execute Write Response (§3.4.6.4).
    public static let executeWriteResponse = ATTOpcode(rawValue: 0x19)
    /// Handle Value Notification (§3.4.7.1).
    public static let handleValueNotification = ATTOpcode(rawValue: 0x1B)
    /// Handle Value Indication (§3.4.7.2).
    public static let handleValueIndication = ATTOpcode(rawValue: 0x1D)
    /// Handle Value Confirmation (§3.4.7.3).
    public static let handleValueConfirmation = ATTOpcode(rawValue: 0x1E)
    /// Read Multiple Variable Request (§3.4.4.11).
    public static let readMultipleVariableRequest = ATTOpcode(rawValue: 0x20)
    /// Read Multiple Variable Response (§3.4.4.12).
    public static let readMultipleVariableResponse = ATTOpcode(rawValue: 0x21)
    /// Multiple Handle Value Notification (§3.4.7.4).
    public static let multipleHandleValueNotification = ATTOpcode(rawValue: 0x23)
    /// Write Command (§3.4.5.3).
    public static let writeCommand = ATTOpcode(rawValue: 0x52)
    /// Signed Write Command (§3.4.5.4).
    public static let signedWriteCommand = ATTOpcode(rawValue: 0xD2)

    /// ATT error codes, §3.4.1.1 table 3.4, and the Common Profile and Service Error Codes
    /// (Core Specification Supplement Part B).
    static func errorName(_ code: UInt8) -> String {
        switch code {
        case 0x01: "Invalid Handle"
        case 0x02: "Read Not Permitted"
        case 0x03: "Write Not Permitted"
        case 0x04: "Invalid PDU"
        case 0x05: "Insufficient Authentication"
        case 0x06: "Request Not Supported"
        case 0x07: "Invalid Offset"
        case 0x08: "Insufficient Authorization"
        case 0x09: "Prepare Queue Full"
        case 0x0A: "Attribute Not Found"
        case 0x0B: "Attribute Not Long"
        case 0x0C: "Encryption Key Size Too Short"
        case 0x0D: "Invalid Attribute Value Length"
        case 0x0E: "Unlikely Error"
        case 0x0F: "Insufficient Encryption"
        case 0x10: "Unsupported Group Type"
        case 0x11: "Insufficient Resources"
        case 0x12: "Database Out Of Sync"
        case 0x13: "Value Not Allowed"
        case 0x80...0x9F: "Application Error \(hex(code, digits: 2))"
        case 0xFC: "Write Request Rejected"
        case 0xFD: "Client Characteristic Configuration Descriptor Improperly Configured"
        case 0xFE: "Procedure Already in Progress"
        case 0xFF: "Out of Range"
        default: "Error \(hex(code, digits: 2))"
        }
    }
}

extension ATTRecord {
    /// The opcode's name, e.g. `Handle Value Notification`.
    public var opcodeName: String { opcode.name }
}
