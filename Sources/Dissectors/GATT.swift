/// A Bluetooth UUID: 16-, 32- or 128-bit, Core v6.0 Vol 3 Part B §2.5.1. Shorter forms are values
/// within the Bluetooth Base UUID `00000000-0000-1000-8000-00805f9b34fb`.
///
/// ATT carries UUIDs little-endian (Vol 3 Part F §3.2.1); ``init(littleEndian:)`` reverses them.
/// Text is lowercase: `0x180d` for a UUID in the 16-bit range of the base, `0x12345678` for the
/// 32-bit range, the full 8-4-4-4-12 form otherwise.
public struct BluetoothUUID: Sendable, Hashable, CustomStringConvertible {
    /// The first 8 bytes of the 128-bit value, big-endian (the text's first three groups).
    public let high: UInt64
    /// The last 8 bytes, big-endian (the text's last two groups).
    public let low: UInt64

    /// The Bluetooth Base UUID's last 12 bytes, as the low 32 bits of ``high`` and all of ``low``.
    private static let baseHighBits: UInt64 = 0x0000_1000
    private static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

    /// A UUID from its two halves, each big-endian: `BluetoothUUID(high: 0x6a4ecd28_667b_11e3,
    /// low: 0x949a_0800200c9a66)` is `6a4ecd28-667b-11e3-949a-0800200c9a66`.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A UUID from its 16- or 32-bit short form.
    public init(_ short: UInt32) {
        self.init(high: UInt64(short) << 32 | Self.baseHighBits, low: Self.baseLow)
    }

    /// A 128-bit UUID from 16 bytes in textual (big-endian) order. Bytes past the 16th are
    /// ignored and missing ones read as zero.
    public init<C: Collection>(bigEndian bytes: C) where C.Element == UInt8 {
        var high: UInt64 = 0, low: UInt64 = 0
        var index = 0
        for byte in bytes.prefix(16) {
            if index < 8 { high |= UInt64(byte) << (56 - 8 * UInt64(index)) } else { low |= UInt64(byte) << (120 - 8 * UInt64(index)) }
            index += 1
        }
        self.init(high: high, low: low)
    }

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
            guard let high = UInt64(String(hexDigits[0..<16]), radix: 16),
                  let low = UInt64(String(hexDigits[16..<32]), radix: 16) else { return nil }
            self.init(high: high, low: low)
        default:
            return nil
        }
    }

    /// A UUID from 2, 4 or 16 little-endian bytes as ATT sends them; `nil` for any other length.
    public init?<C: Collection>(littleEndian: C) where C.Element == UInt8 {
        switch littleEndian.count {
        case 2, 4:
            var value: UInt32 = 0
            for (index, byte) in littleEndian.enumerated() { value |= UInt32(byte) << (8 * UInt32(index)) }
            self.init(value)
        case 16:
            self.init(bigEndian: littleEndian.reversed())
        default:
            return nil
        }
    }

    /// The 128-bit value in big-endian (textual) order: always 16 bytes.
    public var bytes: [UInt8] {
        (0..<16).map { index in
            UInt8(truncatingIfNeeded: index < 8 ? high >> (56 - 8 * UInt64(index)) : low >> (120 - 8 * UInt64(index)))
        }
    }

    /// The 16- or 32-bit value when the UUID lies within the Bluetooth Base UUID.
    public var shortValue: UInt32? {
        guard high & 0xFFFF_FFFF == Self.baseHighBits, low == Self.baseLow else { return nil }
        return UInt32(truncatingIfNeeded: high >> 32)
    }

    /// `0x180d`, `0x12345678`, or the full lowercase form.
    public var description: String {
        if let short = shortValue {
            return hex(short, digits: short <= 0xFFFF ? 4 : 8)
        }
        // Written digit by digit into the string's own storage: inspect and the timeline name
        // every ATT record's characteristic with this text.
        return String(unsafeUninitializedCapacity: 36) { text in
            var position = 0
            for nibble in 0..<32 {
                if nibble == 8 || nibble == 12 || nibble == 16 || nibble == 20 {
                    text[position] = UInt8(ascii: "-")
                    position += 1
                }
                let word = nibble < 16 ? high : low
                let digit = Int(truncatingIfNeeded: word >> (60 - 4 * UInt64(nibble % 16))) & 0x0F
                text[position] = Self.hexDigits[digit]
                position += 1
            }
            return position
        }
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

/// A handle named by hand, for a capture that starts after GATT discovery (a manifest's
/// `gatt_handles` entry): the characteristic whose value it holds, and its service when known.
public struct GATTHandleName: Sendable, Hashable {
    /// The owning service, when the name gives it.
    public var service: BluetoothUUID?
    /// The characteristic whose value the handle holds.
    public var characteristic: BluetoothUUID

    /// Names a handle.
    public init(service: BluetoothUUID? = nil, characteristic: BluetoothUUID) {
        self.service = service
        self.characteristic = characteristic
    }

    /// A name from a manifest's texts (`0x2a37`, `6a4ecd28-667b-11e3-949a-0800200c9a66`…);
    /// `nil` when either text is not a UUID. Capture sets refuse such a manifest when they load
    /// it (`CaptureSetDirectory`), naming the field, so a name read from a set always parses.
    public init?(service: String?, characteristic: String) {
        guard let characteristicUUID = BluetoothUUID(characteristic) else { return nil }
        var serviceUUID: BluetoothUUID?
        if let service {
            guard let parsed = BluetoothUUID(service) else { return nil }
            serviceUUID = parsed
        }
        self.init(service: serviceUUID, characteristic: characteristicUUID)
    }

    /// The names of a manifest's `gatt_handles` by handle, from each entry's handle and texts: the
    /// first entry of a handle wins, and an entry whose texts are not UUIDs names nothing (see
    /// ``init(service:characteristic:)``). A manifest from disk cannot hold such an entry (it is
    /// refused when it loads); for one built in code, the replay engine warns.
    public static func table<S: Sequence>(_ entries: S) -> [UInt16: GATTHandleName]
    where S.Element == (handle: UInt16, service: String?, characteristic: String) {
        var table: [UInt16: GATTHandleName] = [:]
        for entry in entries where table[entry.handle] == nil {
            if let name = GATTHandleName(service: entry.service, characteristic: entry.characteristic) { table[entry.handle] = name }
        }
        return table
    }
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
