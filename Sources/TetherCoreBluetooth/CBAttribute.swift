import Foundation

// The GATT objects an app holds (`CBService`, `CBCharacteristic`, `CBDescriptor`): one object per
// attribute of a peripheral, made when discovery reports it and kept for the peripheral's life,
// so `===`, `==`, `Set` and dictionary keys behave as apps rely on them. Each knows its handle
// (not part of Apple's API): what the facade names to the `central` core.

/// A service, characteristic or descriptor of a peripheral (`CBAttribute`).
///
/// `@unchecked Sendable` because an `NSObject` subclass cannot be checked: its own stored properties
/// are `let`s (a ``CBUUID`` and a handle); each subclass justifies the mutable state it adds.
open class CBAttribute: NSObject, @unchecked Sendable {
    /// The attribute's type.
    open var uuid: CBUUID { attributeUUID }

    let attributeUUID: CBUUID
    /// The attribute's handle in the peripheral's database (a service's declaration handle).
    let handle: UInt16

    init(uuid: CBUUID, handle: UInt16) {
        self.attributeUUID = uuid
        self.handle = handle
        super.init()
    }
}

/// A service of a peripheral (`CBService`).
///
/// `@unchecked Sendable`: no lock; discovery fills its mutable properties in callbacks, on the
/// thread that drives the session, the only thread the app reads them on.
open class CBService: CBAttribute, @unchecked Sendable {
    /// The peripheral the service belongs to.
    open internal(set) weak var peripheral: CBPeripheral?
    /// Whether it is a primary service.
    open internal(set) var isPrimary: Bool
    /// Its included services, once discovered (`discoverIncludedServices(_:for:)`); `nil` before.
    open internal(set) var includedServices: [CBService]?
    /// Its characteristics discovered so far; `nil` before any discovery.
    open internal(set) var characteristics: [CBCharacteristic]?
    /// The last handle of its group.
    let endHandle: UInt16

    init(uuid: CBUUID, startHandle: UInt16, endHandle: UInt16, isPrimary: Bool, peripheral: CBPeripheral) {
        self.isPrimary = isPrimary
        self.endHandle = endHandle
        self.peripheral = peripheral
        super.init(uuid: uuid, handle: startHandle)
    }

    open override var description: String {
        "<CBService: \(Unmanaged.passUnretained(self).toOpaque()), isPrimary = \(isPrimary ? "YES" : "NO"), UUID = \(uuid.description)>"
    }
}

/// A characteristic of a service (`CBCharacteristic`).
///
/// `@unchecked Sendable`: no lock; its mutable properties change in callbacks, on the thread that
/// drives the session, the only thread the app reads them on.
open class CBCharacteristic: CBAttribute, @unchecked Sendable {
    /// The service it belongs to.
    open internal(set) weak var service: CBService?
    /// What it allows.
    open internal(set) var properties: CBCharacteristicProperties
    /// The latest value read or notified; `nil` before any.
    open internal(set) var value: Data?
    /// Its descriptors discovered so far; `nil` before any discovery.
    open internal(set) var descriptors: [CBDescriptor]?
    /// Whether notifications or indications are on.
    open internal(set) var isNotifying = false
    /// Deprecated by Apple and always `false` there.
    @available(*, deprecated, message: "Apple deprecated isBroadcasted; it is always false")
    open var isBroadcasted: Bool { false }

    /// The value's handle (``CBAttribute/handle`` is the declaration's).
    let valueHandle: UInt16

    init(uuid: CBUUID, declarationHandle: UInt16, valueHandle: UInt16, properties: CBCharacteristicProperties, service: CBService) {
        self.properties = properties
        self.valueHandle = valueHandle
        self.service = service
        super.init(uuid: uuid, handle: declarationHandle)
    }

    open override var description: String {
        "<CBCharacteristic: \(Unmanaged.passUnretained(self).toOpaque()), UUID = \(uuid.description), properties = 0x\(String(properties.rawValue, radix: 16, uppercase: true)), "
            + "value = \(value.map { "{length = \($0.count), bytes = 0x\($0.map { String(format: "%02x", $0) }.joined())}" } ?? "(null)"), notifying = \(isNotifying ? "YES" : "NO")>"
    }
}

/// A descriptor of a characteristic (`CBDescriptor`).
///
/// `@unchecked Sendable`: no lock; ``value`` changes in callbacks, on the thread that drives the
/// session, the only thread the app reads it on.
open class CBDescriptor: CBAttribute, @unchecked Sendable {
    /// The characteristic it belongs to.
    open internal(set) weak var characteristic: CBCharacteristic?
    /// The latest value read, typed as Apple types it: `NSNumber` for Extended Properties
    /// (0x2900), Client and Server Characteristic Configuration (0x2902, 0x2903); `String` for
    /// User Description (0x2901); `Data` for everything else.
    open internal(set) var value: Any?

    init(uuid: CBUUID, handle: UInt16, characteristic: CBCharacteristic) {
        self.characteristic = characteristic
        super.init(uuid: uuid, handle: handle)
    }

    /// `bytes` as Apple types this descriptor's value.
    func typedValue(_ bytes: Data) -> Any {
        switch uuid.uuidString {
        case CBUUIDCharacteristicExtendedPropertiesString, CBUUIDClientCharacteristicConfigurationString, CBUUIDServerCharacteristicConfigurationString:
            let number = bytes.prefix(2).enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            return NSNumber(value: number)
        case CBUUIDCharacteristicUserDescriptionString:
            return String(decoding: bytes, as: UTF8.self)
        default:
            return bytes
        }
    }
}
