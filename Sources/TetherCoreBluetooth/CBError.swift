// CoreBluetooth's two error types as Swift sees them (`CBError.h`): a struct per domain with a
// nested `Code`, and every code also a static member of the struct (`CBError.connectionTimeout`
// is a `CBError.Code`), so `if error.code == CBError.connectionTimeout`, `switch error.code`,
// `catch CBError.peripheralDisconnected` and `(error as NSError).code` all work as on iOS.
//
// Each conforms to CustomNSError, so `error as NSError` gives the SDK's domain and code and
// `error.localizedDescription` the message iOS shows. Messages come from iOS's own output where it
// could be seen (marked "iOS's text"); the others are Tether's wording.

/// The domain of `CBError`s.
public let CBErrorDomain: String = "CBErrorDomain"

/// The domain of `CBATTError`s.
public let CBATTErrorDomain: String = "CBATTErrorDomain"

/// An error CoreBluetooth reports for a Bluetooth transaction (`CBError`).
///
/// Equal when the codes are equal; `detail` is for the trace and does not count.
public struct CBError: Error, Hashable, Sendable, CustomStringConvertible, CustomNSError {
    /// The codes, with the SDK's raw values (`CBError` in `CBError.h`).
    ///
    /// Not modelled: `channelSoundingConfigurationFailed` and `channelSoundingProcedureFailed`
    /// (iOS 26), whose raw values could not be checked.
    public enum Code: Int, Sendable, Hashable {
        /// An unknown error.
        case unknown = 0
        /// The parameters were invalid.
        case invalidParameters = 1
        /// The attribute handle was invalid.
        case invalidHandle = 2
        /// The device is not connected.
        case notConnected = 3
        /// The device ran out of space for the operation.
        case outOfSpace = 4
        /// The operation was cancelled.
        case operationCancelled = 5
        /// The connection timed out (the supervision timeout ended the link).
        case connectionTimeout = 6
        /// The peripheral disconnected.
        case peripheralDisconnected = 7
        /// The UUID is not allowed.
        case uuidNotAllowed = 8
        /// The peripheral is already advertising.
        case alreadyAdvertising = 9
        /// The connection failed.
        case connectionFailed = 10
        /// The device already has as many connections as it can.
        case connectionLimitReached = 11
        /// The device is unknown.
        case unknownDevice = 12
        /// The operation is not supported.
        case operationNotSupported = 13
        /// The peer removed its pairing information; the bond must be made again.
        case peerRemovedPairingInformation = 14
        /// Encrypting the link timed out.
        case encryptionTimedOut = 15
        /// Too many LE devices are paired.
        case tooManyLEPairedDevices = 16
        /// The app went over the number of notifications allowed in the background (watchOS).
        case leGattExceededBackgroundNotificationLimit = 17
        /// The app is near the number of notifications allowed in the background (watchOS).
        case leGattNearBackgroundNotificationLimit = 18

        /// The SDK's misspelt name for `unknownDevice`, kept for old code.
        @available(*, deprecated, renamed: "unknownDevice")
        public static var unkownDevice: Code { .unknownDevice }

        /// Matches a thrown `CBError` with this code, for `catch CBError.connectionTimeout`.
        public static func ~= (match: Code, error: any Error) -> Bool {
            (error as? CBError)?.code == match
        }
    }

    /// The domain, "CBErrorDomain".
    public static let errorDomain = "CBErrorDomain"

    /// What went wrong.
    public let code: Code

    /// Tether's note on the cause, for the trace (the recorded HCI reason, the failing request);
    /// not part of equality and not shown by `localizedDescription`, which gives iOS's message.
    public let detail: String?

    /// An error with `code`, and optionally a note on its cause for the trace.
    public init(_ code: Code, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// The code's raw value, as `NSError.code`.
    public var errorCode: Int { code.rawValue }

    /// The message as `NSLocalizedDescriptionKey`, so `localizedDescription` gives it.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: Self.message(for: code)] }

    /// The error as an `NSError` in "CBErrorDomain", built directly rather than through bridging.
    public var nsError: NSError {
        NSError(domain: Self.errorDomain, code: errorCode, userInfo: errorUserInfo)
    }

    /// The message, the code's name and raw value, and `detail` when there is one.
    public var description: String {
        var text = "\(Self.message(for: code)) (CBError.\(code), \(code.rawValue))"
        if let detail { text += ": \(detail)" }
        return text
    }

    /// Equal when the codes are equal.
    public static func == (lhs: CBError, rhs: CBError) -> Bool {
        lhs.code == rhs.code
    }

    /// Hashes the code alone, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
    }

    /// The message `localizedDescription` gives for `code`.
    static func message(for code: Code) -> String {
        switch code {
        case .unknown: "Unknown error."  // iOS's text
        case .invalidParameters: "One or more parameters were invalid."  // iOS's words; the full stop is not confirmed
        case .invalidHandle: "The specified handle is invalid."
        case .notConnected: "The specified device is not connected."  // iOS's text
        case .outOfSpace: "The device has run out of space."
        case .operationCancelled: "The operation was cancelled."
        case .connectionTimeout: "The connection has timed out unexpectedly."  // iOS's text
        case .peripheralDisconnected: "The specified device has disconnected from us."  // iOS's text
        case .uuidNotAllowed: "The specified UUID is not allowed."
        case .alreadyAdvertising: "The peripheral is already advertising."
        case .connectionFailed: "The connection failed."
        case .connectionLimitReached: "The device has reached its maximum number of connections."
        case .unknownDevice: "The specified device is unknown."
        case .operationNotSupported: "The operation is not supported."
        case .peerRemovedPairingInformation: "Peer removed pairing information"  // iOS's text, no full stop
        case .encryptionTimedOut: "Failed to encrypt the connection, the connection has timed out unexpectedly."  // iOS's text
        case .tooManyLEPairedDevices: "Too many LE devices are paired."
        case .leGattExceededBackgroundNotificationLimit: "The background notification limit was exceeded."
        case .leGattNearBackgroundNotificationLimit: "The background notification limit is nearly reached."
        }
    }

    // Every code as a static member of the struct, as Swift imports the SDK's error codes.

    /// `Code.unknown`.
    public static var unknown: Code { .unknown }
    /// `Code.invalidParameters`.
    public static var invalidParameters: Code { .invalidParameters }
    /// `Code.invalidHandle`.
    public static var invalidHandle: Code { .invalidHandle }
    /// `Code.notConnected`.
    public static var notConnected: Code { .notConnected }
    /// `Code.outOfSpace`.
    public static var outOfSpace: Code { .outOfSpace }
    /// `Code.operationCancelled`.
    public static var operationCancelled: Code { .operationCancelled }
    /// `Code.connectionTimeout`.
    public static var connectionTimeout: Code { .connectionTimeout }
    /// `Code.peripheralDisconnected`.
    public static var peripheralDisconnected: Code { .peripheralDisconnected }
    /// `Code.uuidNotAllowed`.
    public static var uuidNotAllowed: Code { .uuidNotAllowed }
    /// `Code.alreadyAdvertising`.
    public static var alreadyAdvertising: Code { .alreadyAdvertising }
    /// `Code.connectionFailed`.
    public static var connectionFailed: Code { .connectionFailed }
    /// `Code.connectionLimitReached`.
    public static var connectionLimitReached: Code { .connectionLimitReached }
    /// `Code.unknownDevice`.
    public static var unknownDevice: Code { .unknownDevice }
    /// The SDK's misspelt name for `unknownDevice`.
    @available(*, deprecated, renamed: "unknownDevice")
    public static var unkownDevice: Code { .unknownDevice }
    /// `Code.operationNotSupported`.
    public static var operationNotSupported: Code { .operationNotSupported }
    /// `Code.peerRemovedPairingInformation`.
    public static var peerRemovedPairingInformation: Code { .peerRemovedPairingInformation }
    /// `Code.encryptionTimedOut`.
    public static var encryptionTimedOut: Code { .encryptionTimedOut }
    /// `Code.tooManyLEPairedDevices`.
    public static var tooManyLEPairedDevices: Code { .tooManyLEPairedDevices }
    /// `Code.leGattExceededBackgroundNotificationLimit`.
    public static var leGattExceededBackgroundNotificationLimit: Code { .leGattExceededBackgroundNotificationLimit }
    /// `Code.leGattNearBackgroundNotificationLimit`.
    public static var leGattNearBackgroundNotificationLimit: Code { .leGattNearBackgroundNotificationLimit }
}

/// An error a GATT server (the remote peripheral) answered with: the error code of an ATT Error
/// Response (`CBATTError`).
///
/// Equal when the codes are equal; `detail` does not count.
public struct CBATTError: Error, Hashable, Sendable, CustomStringConvertible, CustomNSError {
    /// The ATT error codes (Core Specification, Vol 3, Part F, 3.4.1.1), with the SDK's names.
    ///
    /// The SDK imports this as an Objective-C enum, and Swift lets such an enum hold any raw
    /// value; iOS passes a peripheral's error byte through unchanged, so an application error
    /// (0x80–0x9F) or a common profile error (0xE0–0xFF) arrives as a code with no name. A Swift
    /// enum cannot hold an unnamed value, so `unnamed` carries those, and `init(rawValue:)` never
    /// fails, as with the SDK. It is an enum rather than a struct of constants so that an app's
    /// `switch` ending in `@unknown default` compiles (over a struct that is an error; here it is
    /// at most a warning about `unnamed`). Equality and hashing go by the raw value, so
    /// `.unnamed(5)` equals `.insufficientAuthentication`.
    public enum Code: RawRepresentable, Hashable, Sendable {
        /// The request succeeded (0x00; never sent in an Error Response).
        case success
        /// The attribute handle is invalid on this server (0x01).
        case invalidHandle
        /// The attribute cannot be read (0x02).
        case readNotPermitted
        /// The attribute cannot be written (0x03).
        case writeNotPermitted
        /// The PDU was invalid (0x04).
        case invalidPdu
        /// The link must be authenticated first (0x05).
        case insufficientAuthentication
        /// The server does not support the request (0x06).
        case requestNotSupported
        /// The offset is past the end of the value (0x07).
        case invalidOffset
        /// The client must be authorized first (0x08).
        case insufficientAuthorization
        /// Too many prepared writes are queued (0x09).
        case prepareQueueFull
        /// No attribute in the handle range (0x0A).
        case attributeNotFound
        /// The attribute cannot be read or written with Read Blob or Prepare Write (0x0B).
        case attributeNotLong
        /// The link's encryption key is too short (0x0C).
        case insufficientEncryptionKeySize
        /// The value's length is wrong for the operation (0x0D).
        case invalidAttributeValueLength
        /// The request failed for an unlikely reason (0x0E).
        case unlikelyError
        /// The link must be encrypted first (0x0F).
        case insufficientEncryption
        /// The attribute type is not a grouping type (0x10).
        case unsupportedGroupType
        /// The server has not the resources to complete the request (0x11).
        case insufficientResources
        /// Any other code: reserved values, application errors (0x80–0x9F) and common profile
        /// and service errors (0xE0–0xFF). Not in the SDK; see the type's comment.
        case unnamed(Int)

        private static let named: [Code] = [
            .success, .invalidHandle, .readNotPermitted, .writeNotPermitted, .invalidPdu,
            .insufficientAuthentication, .requestNotSupported, .invalidOffset, .insufficientAuthorization,
            .prepareQueueFull, .attributeNotFound, .attributeNotLong, .insufficientEncryptionKeySize,
            .invalidAttributeValueLength, .unlikelyError, .insufficientEncryption, .unsupportedGroupType,
            .insufficientResources,
        ]

        /// The code for `rawValue`, named when the SDK names it. Never nil.
        public init?(rawValue: Int) {
            self = (0..<Self.named.count).contains(rawValue) ? Self.named[rawValue] : .unnamed(rawValue)
        }

        /// The code of an ATT Error Response's error field.
        public init(attErrorCode byte: UInt8) {
            self = Code(rawValue: Int(byte)) ?? .unnamed(Int(byte))
        }

        /// The code's value, as in the ATT Error Response.
        public var rawValue: Int {
            switch self {
            case .success: 0x00
            case .invalidHandle: 0x01
            case .readNotPermitted: 0x02
            case .writeNotPermitted: 0x03
            case .invalidPdu: 0x04
            case .insufficientAuthentication: 0x05
            case .requestNotSupported: 0x06
            case .invalidOffset: 0x07
            case .insufficientAuthorization: 0x08
            case .prepareQueueFull: 0x09
            case .attributeNotFound: 0x0A
            case .attributeNotLong: 0x0B
            case .insufficientEncryptionKeySize: 0x0C
            case .invalidAttributeValueLength: 0x0D
            case .unlikelyError: 0x0E
            case .insufficientEncryption: 0x0F
            case .unsupportedGroupType: 0x10
            case .insufficientResources: 0x11
            case .unnamed(let value): value
            }
        }

        /// Equal when the raw values are equal, named or not.
        public static func == (lhs: Code, rhs: Code) -> Bool {
            lhs.rawValue == rhs.rawValue
        }

        /// Hashes the raw value, consistent with `==`.
        public func hash(into hasher: inout Hasher) {
            hasher.combine(rawValue)
        }

        /// Matches a thrown `CBATTError` with this code, for `catch CBATTError.readNotPermitted`.
        public static func ~= (match: Code, error: any Error) -> Bool {
            (error as? CBATTError)?.code == match
        }
    }

    /// The domain, "CBATTErrorDomain".
    public static let errorDomain = "CBATTErrorDomain"

    /// The server's error code.
    public let code: Code

    /// Tether's note on the cause, for the trace (the request and handle that failed); not part
    /// of equality and not shown by `localizedDescription`.
    public let detail: String?

    /// An error with `code`, and optionally a note for the trace.
    public init(_ code: Code, detail: String? = nil) {
        self.code = code
        self.detail = detail
    }

    /// The code's raw value, as `NSError.code`: the ATT error byte.
    public var errorCode: Int { code.rawValue }

    /// The message as `NSLocalizedDescriptionKey`, so `localizedDescription` gives it.
    public var errorUserInfo: [String: Any] { [NSLocalizedDescriptionKey: Self.message(for: code)] }

    /// The error as an `NSError` in "CBATTErrorDomain", built directly rather than through
    /// bridging.
    public var nsError: NSError {
        NSError(domain: Self.errorDomain, code: errorCode, userInfo: errorUserInfo)
    }

    /// The message, the code's name and value in hex, and `detail` when there is one.
    public var description: String {
        let hex = String(code.rawValue, radix: 16, uppercase: true)
        var text = "\(Self.message(for: code)) (CBATTError.\(code), 0x\(hex.count < 2 ? "0" + hex : hex))"
        if let detail { text += ": \(detail)" }
        return text
    }

    /// Equal when the codes are equal.
    public static func == (lhs: CBATTError, rhs: CBATTError) -> Bool {
        lhs.code == rhs.code
    }

    /// Hashes the code alone, consistent with `==`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
    }

    /// The message `localizedDescription` gives for `code`.
    static func message(for code: Code) -> String {
        switch code {
        case .success: "The operation succeeded."
        case .invalidHandle: "The handle is invalid."  // iOS's text
        case .readNotPermitted: "Reading is not permitted."  // iOS's text
        case .writeNotPermitted: "Writing is not permitted."  // iOS's text
        case .invalidPdu: "The PDU is invalid."
        case .insufficientAuthentication: "Authentication is insufficient."  // iOS's text
        case .requestNotSupported: "The request is not supported."  // iOS's text
        case .invalidOffset: "The offset is invalid."
        case .insufficientAuthorization: "Authorization is insufficient."
        case .prepareQueueFull: "The prepare queue is full."
        case .attributeNotFound: "The attribute could not be found."
        case .attributeNotLong: "The attribute is not long."
        case .insufficientEncryptionKeySize: "The encryption key size is insufficient."
        case .invalidAttributeValueLength: "The value's length is invalid."  // iOS's text
        case .unlikelyError: "Unlikely error."  // iOS's text
        case .insufficientEncryption: "Encryption is insufficient."  // iOS's text
        case .unsupportedGroupType: "The group type is not supported."
        case .insufficientResources: "Resources are insufficient."
        case .unnamed(let value):
            switch value {
            case 0x80...0x9F: "Application error."
            case 0xE0...0xFF: "Common profile or service error."
            default: "Unknown ATT error."
            }
        }
    }

    // Every named code as a static member of the struct, as Swift imports the SDK's error codes.

    /// `Code.success`.
    public static var success: Code { .success }
    /// `Code.invalidHandle`.
    public static var invalidHandle: Code { .invalidHandle }
    /// `Code.readNotPermitted`.
    public static var readNotPermitted: Code { .readNotPermitted }
    /// `Code.writeNotPermitted`.
    public static var writeNotPermitted: Code { .writeNotPermitted }
    /// `Code.invalidPdu`.
    public static var invalidPdu: Code { .invalidPdu }
    /// `Code.insufficientAuthentication`.
    public static var insufficientAuthentication: Code { .insufficientAuthentication }
    /// `Code.requestNotSupported`.
    public static var requestNotSupported: Code { .requestNotSupported }
    /// `Code.invalidOffset`.
    public static var invalidOffset: Code { .invalidOffset }
    /// `Code.insufficientAuthorization`.
    public static var insufficientAuthorization: Code { .insufficientAuthorization }
    /// `Code.prepareQueueFull`.
    public static var prepareQueueFull: Code { .prepareQueueFull }
    /// `Code.attributeNotFound`.
    public static var attributeNotFound: Code { .attributeNotFound }
    /// `Code.attributeNotLong`.
    public static var attributeNotLong: Code { .attributeNotLong }
    /// `Code.insufficientEncryptionKeySize`.
    public static var insufficientEncryptionKeySize: Code { .insufficientEncryptionKeySize }
    /// `Code.invalidAttributeValueLength`.
    public static var invalidAttributeValueLength: Code { .invalidAttributeValueLength }
    /// `Code.unlikelyError`.
    public static var unlikelyError: Code { .unlikelyError }
    /// `Code.insufficientEncryption`.
    public static var insufficientEncryption: Code { .insufficientEncryption }
    /// `Code.unsupportedGroupType`.
    public static var unsupportedGroupType: Code { .unsupportedGroupType }
    /// `Code.insufficientResources`.
    public static var insufficientResources: Code { .insufficientResources }
}
