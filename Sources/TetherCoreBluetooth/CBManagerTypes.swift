// The value types of CoreBluetooth's central role, with the names and raw values Swift gives the
// SDK's Objective-C enums and options (`CBManager.h`, `CBPeripheral.h`, `CBCharacteristic.h`,
// `CBCentralManager.h`, `CBAttribute.h`).
//
// None of them declares CustomStringConvertible. Printing an enum case already gives its name
// ("poweredOn") through reflection, and apps commonly add `extension CBManagerState:
// CustomStringConvertible` themselves, which is clean against the SDK; a conformance declared here
// would make theirs a warning and silently replace their `description` in string interpolation.

/// The state of a manager and of the Bluetooth radio behind it (`CBManagerState`).
public enum CBManagerState: Int, Sendable, Hashable {
    /// Not known yet; an update follows.
    case unknown = 0
    /// The connection to the system's Bluetooth service was lost for a moment; an update follows.
    case resetting = 1
    /// This device has no Bluetooth Low Energy central role.
    case unsupported = 2
    /// The app is not allowed to use Bluetooth.
    case unauthorized = 3
    /// Bluetooth is switched off.
    case poweredOff = 4
    /// Bluetooth is on and usable.
    case poweredOn = 5
}

/// Whether the user allowed the app to use Bluetooth (`CBManagerAuthorization`).
public enum CBManagerAuthorization: Int, Sendable, Hashable {
    /// The user has not been asked yet.
    case notDetermined = 0
    /// Not allowed, and the user cannot change that (parental controls, device management).
    case restricted = 1
    /// The user refused.
    case denied = 2
    /// The user allowed it, at any time.
    case allowedAlways = 3
}

/// Where a peripheral's connection with this central stands (`CBPeripheralState`).
public enum CBPeripheralState: Int, Sendable, Hashable {
    /// Not connected.
    case disconnected = 0
    /// A connection is being made.
    case connecting = 1
    /// Connected.
    case connected = 2
    /// The connection is being closed.
    case disconnecting = 3
}

/// What a characteristic lets a central do with its value (`CBCharacteristicProperties`): the
/// properties byte of the characteristic declaration (Core Specification, Vol 3, Part G, 3.3.1.1),
/// plus two bits of Apple's own above it.
public struct CBCharacteristicProperties: OptionSet, Sendable, Hashable {
    /// The bits, as the SDK numbers them.
    public let rawValue: UInt

    /// Properties from their bits; bits the SDK does not name are kept.
    public init(rawValue: UInt) {
        self.rawValue = rawValue
    }

    /// The value can be broadcast in advertising data, configured through a Server
    /// Characteristic Configuration descriptor.
    public static let broadcast = CBCharacteristicProperties(rawValue: 0x01)
    /// The value can be read.
    public static let read = CBCharacteristicProperties(rawValue: 0x02)
    /// The value can be written without a response.
    public static let writeWithoutResponse = CBCharacteristicProperties(rawValue: 0x04)
    /// The value can be written, with a response.
    public static let write = CBCharacteristicProperties(rawValue: 0x08)
    /// The value can be notified (no confirmation from the central).
    public static let notify = CBCharacteristicProperties(rawValue: 0x10)
    /// The value can be indicated (the central confirms each one).
    public static let indicate = CBCharacteristicProperties(rawValue: 0x20)
    /// The value can be written with an authentication signature, without a response.
    public static let authenticatedSignedWrites = CBCharacteristicProperties(rawValue: 0x40)
    /// More properties are in the Characteristic Extended Properties descriptor.
    public static let extendedProperties = CBCharacteristicProperties(rawValue: 0x80)
    /// Only a trusted (paired) device can enable notifications. Apple's bit; no Bluetooth
    /// characteristic declaration carries it.
    public static let notifyEncryptionRequired = CBCharacteristicProperties(rawValue: 0x100)
    /// Only a trusted (paired) device can enable indications. Apple's bit, like the one above.
    public static let indicateEncryptionRequired = CBCharacteristicProperties(rawValue: 0x200)
}

/// How `writeValue(_:for:type:)` writes a characteristic (`CBCharacteristicWriteType`).
public enum CBCharacteristicWriteType: Int, Sendable, Hashable {
    /// A Write Request: the peripheral answers, and the delegate hears
    /// `peripheral(_:didWriteValueFor:error:)`.
    case withResponse = 0
    /// A Write Command: no answer and no callback.
    case withoutResponse = 1
}

/// Features of the Bluetooth hardware a central can ask about (`CBCentralManagerFeature` in
/// Objective-C; Swift apps write `CBCentralManager.Feature`, a typealias on the class).
public struct CBCentralManagerFeature: OptionSet, Sendable, Hashable {
    /// The bits, as the SDK numbers them.
    public let rawValue: UInt

    /// Features from their bits.
    public init(rawValue: UInt) {
        self.rawValue = rawValue
    }

    /// Extended scanning and enhanced connection creation (Bluetooth 5).
    public static let extendedScanAndConnect = CBCentralManagerFeature(rawValue: 1)
}

/// Read, write and encryption permissions of an attribute's value (`CBAttributePermissions`).
/// Used by the peripheral role, which Tether does not model; here so code that mentions it
/// compiles.
public struct CBAttributePermissions: OptionSet, Sendable, Hashable {
    /// The bits, as the SDK numbers them.
    public let rawValue: UInt

    /// Permissions from their bits.
    public init(rawValue: UInt) {
        self.rawValue = rawValue
    }

    /// The value can be read.
    public static let readable = CBAttributePermissions(rawValue: 0x01)
    /// The value can be written.
    public static let writeable = CBAttributePermissions(rawValue: 0x02)
    /// Only a trusted device can read the value.
    public static let readEncryptionRequired = CBAttributePermissions(rawValue: 0x04)
    /// Only a trusted device can write the value.
    public static let writeEncryptionRequired = CBAttributePermissions(rawValue: 0x08)
}

/// A change in a peer's connection, reported to a central that registered for connection events
/// (`CBConnectionEvent`, iOS 13).
public enum CBConnectionEvent: Int, Sendable, Hashable {
    /// The peer disconnected from this device.
    case peerDisconnected = 0
    /// The peer connected to this device.
    case peerConnected = 1
}
