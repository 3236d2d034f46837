/// An ATT PDU as the specification lays out its parameters (Core v6.0 Vol 3 Part F §3.4), read
/// from an ``ATTRecord`` (``ATTRecord/pdu``): an adapter matches the PDUs it cares about by case
/// and gets their parameters typed, instead of reading an opcode and slicing bytes.
///
/// The record keeps what the dissector recovered (opcode, handle, value) because replay reads
/// little more than writes and notifications; this view is made when asked, from those fields.
/// Discovery and Read Multiple PDUs, whose parameters are lists, are ``other(_:parameters:)``:
/// their content is what ``GATTDatabase`` learns from them.
public enum ATTPDU: Sendable, Hashable {
    /// §3.4.1.1: the request that failed, the handle it was about, and why.
    case errorResponse(requestOpcodeInError: ATTOpcode, attributeHandleInError: UInt16, errorCode: ATTErrorCode)
    /// §3.4.2.1: the client's receive MTU.
    case exchangeMTURequest(clientRxMTU: UInt16)
    /// §3.4.2.2: the server's receive MTU.
    case exchangeMTUResponse(serverRxMTU: UInt16)
    /// §3.4.4.3.
    case readRequest(attributeHandle: UInt16)
    /// §3.4.4.4: the value read (the handle, when the request was seen, is the record's).
    case readResponse(attributeValue: [UInt8])
    /// §3.4.4.5.
    case readBlobRequest(attributeHandle: UInt16, valueOffset: UInt16)
    /// §3.4.4.6.
    case readBlobResponse(partAttributeValue: [UInt8])
    /// §3.4.5.1.
    case writeRequest(attributeHandle: UInt16, attributeValue: [UInt8])
    /// §3.4.5.2 (the handle written, when the request was seen, is the record's).
    case writeResponse
    /// §3.4.5.3.
    case writeCommand(attributeHandle: UInt16, attributeValue: [UInt8])
    /// §3.4.5.4 (the 12-byte Authentication Signature is not kept).
    case signedWriteCommand(attributeHandle: UInt16, attributeValue: [UInt8])
    /// §3.4.6.1.
    case prepareWriteRequest(attributeHandle: UInt16, valueOffset: UInt16, partAttributeValue: [UInt8])
    /// §3.4.6.2: the server echoes the request.
    case prepareWriteResponse(attributeHandle: UInt16, valueOffset: UInt16, partAttributeValue: [UInt8])
    /// §3.4.6.3: 0x00 cancels the prepared writes, 0x01 writes them.
    case executeWriteRequest(flags: UInt8)
    /// §3.4.6.4.
    case executeWriteResponse
    /// §3.4.7.1.
    case handleValueNotification(attributeHandle: UInt16, attributeValue: [UInt8])
    /// §3.4.7.4: one handle and value of a Multiple Handle Value Notification (the dissector
    /// makes a record for each).
    case multipleHandleValueNotification(attributeHandle: UInt16, attributeValue: [UInt8])
    /// §3.4.7.2.
    case handleValueIndication(attributeHandle: UInt16, attributeValue: [UInt8])
    /// §3.4.7.3 (the handle confirmed, when the indication was seen, is the record's).
    case handleValueConfirmation
    /// Any other PDU, and a record whose fields do not have its opcode's layout: the opcode and
    /// the parameters as the record holds them (after the opcode, and after the handle when the
    /// record has one).
    case other(ATTOpcode, parameters: [UInt8])
}

/// An ATT Error Response's error code, §3.4.1.1 table 3.4 (and the Common Profile and Service Error
/// Codes of the Core Specification Supplement): a value, so a code the tables do not list is kept.
public struct ATTErrorCode: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    /// The code as sent.
    public var rawValue: UInt8
    /// Wraps a code.
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `Attribute Not Found`, `Application Error 0x80`, or `Error 0x42` for an unlisted code.
    public var description: String { ATTOpcode.errorName(rawValue) }

    /// Invalid Handle (0x01).
    public static let invalidHandle = ATTErrorCode(rawValue: 0x01)
    /// Read Not Permitted (0x02).
    public static let readNotPermitted = ATTErrorCode(rawValue: 0x02)
    /// Write Not Permitted (0x03).
    public static let writeNotPermitted = ATTErrorCode(rawValue: 0x03)
    /// Insufficient Authentication (0x05).
    public static let insufficientAuthentication = ATTErrorCode(rawValue: 0x05)
    /// Request Not Supported (0x06).
    public static let requestNotSupported = ATTErrorCode(rawValue: 0x06)
    /// Attribute Not Found (0x0A): the normal end of a discovery.
    public static let attributeNotFound = ATTErrorCode(rawValue: 0x0A)
    /// Insufficient Encryption (0x0F).
    public static let insufficientEncryption = ATTErrorCode(rawValue: 0x0F)
}

extension ATTRecord {
    /// The PDU with its parameters typed (``ATTPDU``), read from ``opcode``, ``handle``,
    /// ``value`` and ``valueOffset`` as the dissector filled them.
    public var pdu: ATTPDU {
        func u16(_ bytes: [UInt8]) -> UInt16? { bytes.withUnsafeBytes { $0.u16le(at: 0) } }
        switch opcode {
        case .errorResponse:
            guard let handle, value.count == 2 else { break }
            return .errorResponse(requestOpcodeInError: ATTOpcode(rawValue: value[0]), attributeHandleInError: handle,
                                  errorCode: ATTErrorCode(rawValue: value[1]))
        case .exchangeMTURequest:
            // Read from the first two bytes, as the dissector's summary reads it.
            guard let mtu = u16(value) else { break }
            return .exchangeMTURequest(clientRxMTU: mtu)
        case .exchangeMTUResponse:
            guard let mtu = u16(value) else { break }
            return .exchangeMTUResponse(serverRxMTU: mtu)
        case .readRequest:
            guard let handle, value.isEmpty else { break }
            return .readRequest(attributeHandle: handle)
        case .readResponse:
            return .readResponse(attributeValue: value)
        case .readBlobRequest:
            guard let handle, let offset = u16(value) else { break }
            return .readBlobRequest(attributeHandle: handle, valueOffset: offset)
        case .readBlobResponse:
            return .readBlobResponse(partAttributeValue: value)
        case .writeRequest:
            guard let handle else { break }
            return .writeRequest(attributeHandle: handle, attributeValue: value)
        case .writeResponse:
            guard value.isEmpty else { break }
            return .writeResponse
        case .writeCommand:
            guard let handle else { break }
            return .writeCommand(attributeHandle: handle, attributeValue: value)
        case .signedWriteCommand:
            guard let handle else { break }
            return .signedWriteCommand(attributeHandle: handle, attributeValue: value)
        case .prepareWriteRequest:
            guard let handle, let valueOffset else { break }
            return .prepareWriteRequest(attributeHandle: handle, valueOffset: valueOffset, partAttributeValue: value)
        case .prepareWriteResponse:
            guard let handle, let valueOffset else { break }
            return .prepareWriteResponse(attributeHandle: handle, valueOffset: valueOffset, partAttributeValue: value)
        case .executeWriteRequest:
            guard value.count == 1 else { break }
            return .executeWriteRequest(flags: value[0])
        case .executeWriteResponse:
            guard value.isEmpty else { break }
            return .executeWriteResponse
        case .handleValueNotification:
            guard let handle else { break }
            return .handleValueNotification(attributeHandle: handle, attributeValue: value)
        case .multipleHandleValueNotification:
            guard let handle else { break }
            return .multipleHandleValueNotification(attributeHandle: handle, attributeValue: value)
        case .handleValueIndication:
            guard let handle else { break }
            return .handleValueIndication(attributeHandle: handle, attributeValue: value)
        case .handleValueConfirmation:
            guard value.isEmpty else { break }
            return .handleValueConfirmation
        default:
            break
        }
        return .other(opcode, parameters: value)
    }
}
