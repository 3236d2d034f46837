/// A Bluetooth UUID: 16-, 32- or 128-bit, Core v6.0 Vol 3 Part B §2.5.1. Shorter forms are values
/// within the Bluetooth Base UUID `00000000-0000-1000-8000-00805f9b34fb`.
///
/// ATT carries UUIDs little-endian (Vol 3 Part F §3.2.1); ``init(littleEndian:)`` reverses them.
/// Text is lowercase: `0x180d` for a UUID in the 16-bit range of the base, `0x12345678` for the
/// 32-bit range, the full 8-4-4-4-12 form otherwise.
public struct BluetoothUUID: Sendable, Hashable, CustomStringConvertible {
    /// The 128-bit value in big-endian (textual) order.
    public var bytes: [UInt8]

    static let baseSuffix: [UInt8] = [0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]

    /// A UUID from its 16- or 32-bit short form.
    public init(_ short: UInt32) {
        bytes = [UInt8(short >> 24), UInt8((short >> 16) & 0xFF), UInt8((short >> 8) & 0xFF), UInt8(short & 0xFF)] + Self.baseSuffix
    }

    /// A 128-bit UUID from 16 bytes in textual (big-endian) order.
    public init(bigEndian bytes: [UInt8]) { self.bytes = bytes }

    /// Parses `0x180d`, `180d`, `0x12345678` or the full `6a4ecd28-0000-1000-8000-001234567890`
    /// form (any case), as a manifest would write them; `nil` for anything else.
    public init?(_ text: String) {
        var digits = Substring(text.lowercased())
        if digits.hasPrefix("0x") { digits = digits.dropFirst(2) }
        let isFull = digits.count == 36
        if isFull {
            let dashes = digits.enumerated().filter { $0.element == "-" }.map(\.offset)
            guard dashes == [8, 13, 18, 23] else { return nil }
        }
        let hexDigits = Array(digits.filter { $0 != "-" })
        guard hexDigits.allSatisfy(\.isHexDigit) else { return nil }
        switch hexDigits.count {
        case 4, 8:
            guard !isFull, let value = UInt32(String(hexDigits), radix: 16) else { return nil }
            self.init(value)
        case 32 where isFull:
            var bytes: [UInt8] = []
            var index = 0
            while index < 32 {
                guard let byte = UInt8(String(hexDigits[index...index + 1]), radix: 16) else { return nil }
                bytes.append(byte)
                index += 2
            }
            self.init(bigEndian: bytes)
        default:
            return nil
        }
    }

    /// A UUID from 2, 4 or 16 little-endian bytes as ATT sends them; `nil` for any other length.
    public init?<C: Collection>(littleEndian: C) where C.Element == UInt8 {
        let reversed = Array(littleEndian.reversed())
        switch reversed.count {
        case 2: self.init(UInt32(reversed[0]) << 8 | UInt32(reversed[1]))
        case 4: self.init(UInt32(reversed[0]) << 24 | UInt32(reversed[1]) << 16 | UInt32(reversed[2]) << 8 | UInt32(reversed[3]))
        case 16: self.init(bigEndian: reversed)
        default: return nil
        }
    }

    /// The 16- or 32-bit value when the UUID lies within the Bluetooth Base UUID.
    public var shortValue: UInt32? {
        guard bytes.count == 16, bytes[4..<16].elementsEqual(Self.baseSuffix) else { return nil }
        return UInt32(bytes[0]) << 24 | UInt32(bytes[1]) << 16 | UInt32(bytes[2]) << 8 | UInt32(bytes[3])
    }

    /// `0x180d`, `0x12345678`, or the full lowercase form.
    public var description: String {
        if let short = shortValue {
            return hex(short, digits: short <= 0xFFFF ? 4 : 8)
        }
        // Written byte by byte: replay names every ATT record's characteristic with this text.
        let grouped = bytes.count == 16
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2 + 4)
        for (index, byte) in bytes.enumerated() {
            if grouped, index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(Self.hexDigits[Int(byte >> 4)])
            text.append(Self.hexDigits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// The first group and an ellipsis for a 128-bit UUID (`6a4ecd28-…`); the whole text otherwise.
    public var abbreviated: String {
        if shortValue != nil { return description }
        return String(description.prefix(8)) + "-…"
    }

    /// «Primary Service» (Core v6.0 Vol 3 Part G §3.1).
    public static let primaryService = BluetoothUUID(0x2800)
    /// «Secondary Service».
    public static let secondaryService = BluetoothUUID(0x2801)
    /// «Include» (§3.2).
    public static let include = BluetoothUUID(0x2802)
    /// «Characteristic» declaration (§3.3.1).
    public static let characteristic = BluetoothUUID(0x2803)
    /// «Client Characteristic Configuration» descriptor (§3.3.3.3).
    public static let clientCharacteristicConfiguration = BluetoothUUID(0x2902)
}

/// What GATT discovery in a capture told about one connection's attribute handles: services
/// (Core v6.0 Vol 3 Part G §4.4, Read By Group Type / Find By Type Value on «Primary Service»),
/// characteristic declarations (§4.6, Read By Type on «Characteristic»: properties u8, value handle
/// u16 LE, UUID) and descriptors (§4.7, Find Information). Bounded by construction: every table is
/// keyed by a 16-bit handle.
public struct GATTDatabase: Sendable, Hashable {
    /// A service and the handle range it owns.
    public struct Service: Sendable, Hashable {
        /// The service declaration's handle.
        public var startHandle: UInt16
        /// The last handle of the service (End Group Handle).
        public var endHandle: UInt16
        /// The service UUID.
        public var uuid: BluetoothUUID
        /// `false` for a secondary service.
        public var isPrimary: Bool

        /// A service owning `startHandle...endHandle`.
        public init(startHandle: UInt16, endHandle: UInt16, uuid: BluetoothUUID, isPrimary: Bool = true) {
            self.startHandle = startHandle
            self.endHandle = endHandle
            self.uuid = uuid
            self.isPrimary = isPrimary
        }
    }

    /// A characteristic from its declaration.
    public struct Characteristic: Sendable, Hashable {
        /// The declaration's handle.
        public var declarationHandle: UInt16
        /// The handle of the characteristic value.
        public var valueHandle: UInt16
        /// Characteristic Properties bits (§3.3.1.1).
        public var properties: UInt8
        /// The characteristic UUID.
        public var uuid: BluetoothUUID

        /// A characteristic declared at `declarationHandle` whose value lives at `valueHandle`.
        public init(declarationHandle: UInt16, valueHandle: UInt16, properties: UInt8, uuid: BluetoothUUID) {
            self.declarationHandle = declarationHandle
            self.valueHandle = valueHandle
            self.properties = properties
            self.uuid = uuid
        }
    }

    /// Where a handle sits, as far as discovery told.
    public struct Location: Sendable, Hashable {
        /// The service whose range holds the handle.
        public var service: BluetoothUUID?
        /// The characteristic the handle is the value of, or the declaration or a descriptor of.
        public var characteristic: BluetoothUUID?
        /// The descriptor type, when the handle is a descriptor Find Information named (e.g. `0x2902`).
        public var descriptor: BluetoothUUID?
    }

    /// Services by start handle.
    public private(set) var services: [UInt16: Service] = [:]
    /// Characteristics by declaration handle.
    public private(set) var characteristics: [UInt16: Characteristic] = [:]
    /// Attribute types by handle, from Find Information responses.
    public private(set) var attributeTypes: [UInt16: BluetoothUUID] = [:]

    /// An empty database.
    public init() {}

    /// Records a service (from discovery, or from a manifest that names handles).
    public mutating func addService(_ service: Service) { services[service.startHandle] = service }

    /// Records a characteristic declaration.
    public mutating func addCharacteristic(_ characteristic: Characteristic) {
        characteristics[characteristic.declarationHandle] = characteristic
    }

    /// Records an attribute's type (Find Information).
    public mutating func addAttributeType(_ uuid: BluetoothUUID, handle: UInt16) { attributeTypes[handle] = uuid }

    /// What is known about `handle`.
    public func locate(_ handle: UInt16) -> Location {
        var location = Location()
        let service = services.values.filter { $0.startHandle <= handle && handle <= $0.endHandle }
            .max { $0.startHandle < $1.startHandle }
        location.service = service?.uuid
        // The owning characteristic is the last declaration at or before the handle, inside the same
        // service when the service is known.
        let owner = characteristics.values.filter { c in
            c.declarationHandle <= handle && (service.map { $0.startHandle <= c.declarationHandle } ?? true)
        }.max { $0.declarationHandle < $1.declarationHandle }
        let type = attributeTypes[handle]
        if let owner {
            location.characteristic = owner.uuid
            if handle > owner.valueHandle, let type, !Self.isDeclaration(type) {
                location.descriptor = type
            }
        } else if let type, !Self.isDeclaration(type) {
            // Without declarations, Find Information still tells value types apart from descriptors.
            if Self.isDescriptor(type) { location.descriptor = type } else { location.characteristic = type }
        }
        return location
    }

    static func isDeclaration(_ uuid: BluetoothUUID) -> Bool {
        guard let short = uuid.shortValue else { return false }
        return (0x2800...0x28FF).contains(short)
    }

    static func isDescriptor(_ uuid: BluetoothUUID) -> Bool {
        guard let short = uuid.shortValue else { return false }
        return (0x2900...0x29FF).contains(short)
    }
}
