// CBUUID as Swift sees it on iOS (`CBUUID.h`), with two things Tether needs on top: `uuid128`, to
// compare with the recording's UUIDs, and `fromAttribute(littleEndian:)`, because ATT carries a
// UUID in the opposite byte order to `init(data:)`.
//
// A CBUUID keeps the form it was made from, as CoreBluetooth does: "180D" stays a 16-bit UUID
// (`data` has 2 bytes, `uuidString` is "180D"), a 36-character string stays 128 bits even when it
// lies on the Bluetooth base UUID. Equality and hashing go through the full 128-bit value instead,
// so the 16-, 32- and 128-bit spellings of one Bluetooth-base UUID are one key in a `Set` or a
// `Dictionary`: an app that scans with `CBUUID(string: "0x180D")` and compares with a service the
// recording spelled out in 128 bits must find it.
//
// Apple raises `NSInternalInconsistencyException` ("String … does not represent a valid UUID") for
// a string that is none of the accepted forms; Swift cannot catch that, so the app dies. Tether
// never traps on an app's input: a malformed string makes a *malformed* CBUUID that keeps the text
// (`uuidString` and `description` give it back), has empty `data`, equals only another malformed
// CBUUID with the same text (case-insensitively) and never a well-formed one, so it matches no
// service, characteristic or descriptor. `isWellFormed` tells the behaviour classes, which should
// report it on the trace — on a device the same line would have crashed the app.

/// The UUID of an attribute, as defined by Bluetooth (`CBUUID`): a service, a characteristic or a
/// descriptor.
///
/// Equal when the 128-bit values are equal, whatever form each was made from; see the top of the file.
///
/// `@unchecked Sendable` because an `NSObject` subclass cannot be checked: immutable, so shared freely
/// between threads; its one stored property, `form`, is a `let` of a Sendable enum.
public final class CBUUID: NSObject, NSCopying, @unchecked Sendable {
    /// The form the UUID was made from, kept because `uuidString` and `data` give it back.
    private enum Form: Sendable {
        case bits16(UInt16)
        case bits32(UInt32)
        case bits128(UUID)
        /// Text no accepted form matches (see the top of the file).
        case malformed(String)
    }

    private let form: Form

    private init(form: Form) {
        self.form = form
        super.init()
    }

    /// A UUID from its text: 4 hex digits (16 bits, "180D"), 8 hex digits (32 bits), either with an
    /// optional "0x" prefix, or 36 characters with hyphens (128 bits,
    /// "68753A44-4D6F-1226-9C60-0050E4C00067"); hex digits in either case.
    ///
    /// CoreBluetooth accepts the "0x" prefix too (apps and Apple's own daemons pass "0x180D"), and
    /// rejects the 32-digit form without hyphens, which stays malformed here as well. Where Apple
    /// raises an exception this makes a malformed CBUUID instead (see the top of the file).
    public convenience init(string theString: String) {
        self.init(form: Self.parse(theString))
    }

    /// A UUID from its bytes, most significant first as Bluetooth writes UUIDs in text: 2 bytes for
    /// 16 bits, 4 for 32 bits, 16 for 128 bits.
    ///
    /// Any other length makes a malformed CBUUID whose text is the bytes in hex (Apple raises an
    /// exception). For the little-endian bytes of an ATT PDU use `fromAttribute(littleEndian:)`.
    public convenience init(data theData: Data) {
        let bytes = [UInt8](theData)
        switch bytes.count {
        case 2:
            self.init(form: .bits16(UInt16(bytes[0]) << 8 | UInt16(bytes[1])))
        case 4:
            self.init(form: .bits32(bytes.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }))
        case 16:
            self.init(form: .bits128(Self.uuid(fromBigEndian: bytes)))
        default:
            self.init(form: .malformed(bytes.map { Self.hex(UInt64($0), digits: 2) }.joined()))
        }
    }

    /// A 128-bit UUID from a Foundation UUID.
    public convenience init(nsuuid theUUID: UUID) {
        self.init(form: .bits128(theUUID))
    }

    /// The same as `init(nsuuid:)`, under the second spelling the SDK also exposes to Swift.
    public convenience init(NSUUID theUUID: UUID) {
        self.init(form: .bits128(theUUID))
    }

    /// The UUID an ATT PDU carries: 2 or 16 bytes, least significant first (Core Specification,
    /// Vol 3, Part F, 3.2.1 and 3.3). Nil for any other length, since ATT has no other UUID size;
    /// the caller decides what a malformed PDU means.
    ///
    /// Two bytes give a 16-bit CBUUID (`uuidString` "2A37", as iOS reports a discovered
    /// characteristic); sixteen give a 128-bit one as sent, even on the Bluetooth base UUID.
    public static func fromAttribute(littleEndian bytes: [UInt8]) -> CBUUID? {
        switch bytes.count {
        case 2: CBUUID(form: .bits16(UInt16(bytes[1]) << 8 | UInt16(bytes[0])))
        case 16: CBUUID(form: .bits128(uuid(fromBigEndian: bytes.reversed())))
        default: nil
        }
    }

    /// The UUID as text: "180D" for 16 bits, "12345678" for 32 bits, 36 upper-case characters for
    /// 128 bits; a malformed CBUUID's text as it was given.
    public var uuidString: String {
        switch form {
        case .bits16(let value): Self.hex(UInt64(value), digits: 4)
        case .bits32(let value): Self.hex(UInt64(value), digits: 8)
        case .bits128(let uuid): uuid.uuidString.uppercased()
        case .malformed(let text): text
        }
    }

    /// The UUID's bytes, most significant first: 2, 4 or 16 of them, as it was made. Empty for a
    /// malformed CBUUID.
    public var data: Data {
        switch form {
        case .bits16(let value): Data([UInt8(value >> 8), UInt8(value & 0xFF)])
        case .bits32(let value): Data((0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) })
        case .bits128(let uuid): Data(Self.bytes(of: uuid))
        case .malformed: Data()
        }
    }

    /// The full 128-bit value, a 16- or 32-bit UUID placed on the Bluetooth base UUID
    /// 00000000-0000-1000-8000-00805F9B34FB (Core Specification, Vol 3, Part B, 2.5.1), to
    /// compare with a recording's UUIDs. A malformed CBUUID gives the nil UUID (all zeros); check
    /// `isWellFormed` first.
    public var uuid128: UUID {
        switch form {
        case .bits16(let value): Self.onBase(UInt32(value))
        case .bits32(let value): Self.onBase(value)
        case .bits128(let uuid): uuid
        case .malformed: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        }
    }

    /// False for a CBUUID made from text or data no accepted form matches — the call that would
    /// have crashed the app on a device. Not in the SDK.
    public var isWellFormed: Bool {
        if case .malformed = form { false } else { true }
    }

    /// The attribute's name where CoreBluetooth prints one ("Heart Rate", "Battery Level",
    /// "Client Characteristic Configuration"), otherwise `uuidString`.
    ///
    /// The table holds only names seen in iOS's own output; Apple prints the number for many
    /// assigned UUIDs (Heart Rate Measurement prints "2A37"), so a UUID not listed prints as
    /// its number here too.
    public override var description: String {
        guard isWellFormed, let name = Self.names[uuid128] else { return uuidString }
        return name
    }

    /// Equal to another CBUUID with the same 128-bit value, whatever the forms; a malformed one
    /// only to a malformed one with the same text, ignoring case.
    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBUUID else { return false }
        switch (form, other.form) {
        case (.malformed(let mine), .malformed(let theirs)):
            return mine.uppercased() == theirs.uppercased()
        case (.malformed, _), (_, .malformed):
            return false
        default:
            return uuid128 == other.uuid128
        }
    }

    /// Consistent with `isEqual(_:)`: the 128-bit value, or a malformed CBUUID's upper-cased text.
    public override var hash: Int {
        var hasher = Hasher()
        switch form {
        case .malformed(let text):
            hasher.combine(true)
            hasher.combine(text.uppercased())
        default:
            hasher.combine(false)
            hasher.combine(uuid128)
        }
        return hasher.finalize()
    }

    /// The CBUUID itself: it is immutable.
    public func copy(with zone: NSZone? = nil) -> Any {
        self
    }

    // MARK: Parsing and formatting

    private static func parse(_ text: String) -> Form {
        var digits = Substring(text)
        if digits.count == 6 || digits.count == 10, digits.lowercased().hasPrefix("0x") {
            digits = digits.dropFirst(2)
        }
        switch digits.count {
        case 4:
            if let value = UInt16(digits, radix: 16), digits.allSatisfy(\.isHexDigit) { return .bits16(value) }
        case 8:
            if let value = UInt32(digits, radix: 16), digits.allSatisfy(\.isHexDigit) { return .bits32(value) }
        case 36 where digits.count == text.count:
            if let uuid = uuid(hyphenated: digits) { return .bits128(uuid) }
        default:
            break
        }
        return .malformed(text)
    }

    /// 8-4-4-4-12 hex digits. Parsed here rather than by `UUID(uuidString:)` so the accepted forms
    /// are the same on every platform.
    private static func uuid(hyphenated text: Substring) -> UUID? {
        let characters = Array(text)
        var bytes: [UInt8] = []
        var index = 0
        while index < characters.count {
            if [8, 13, 18, 23].contains(index) {
                guard characters[index] == "-" else { return nil }
                index += 1
                continue
            }
            guard index + 1 < characters.count, characters[index].isHexDigit, characters[index + 1].isHexDigit,
                  let byte = UInt8(String(characters[index...index + 1]), radix: 16) else { return nil }
            bytes.append(byte)
            index += 2
        }
        return bytes.count == 16 ? uuid(fromBigEndian: bytes) : nil
    }

    private static func uuid(fromBigEndian b: [UInt8]) -> UUID {
        UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    private static func bytes(of uuid: UUID) -> [UInt8] {
        withUnsafeBytes(of: uuid.uuid) { Array($0) }
    }

    /// `value` as the first 32 bits of the Bluetooth base UUID.
    private static func onBase(_ value: UInt32) -> UUID {
        var b: [UInt8] = [0, 0, 0, 0, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB]
        for i in 0..<4 { b[i] = UInt8(truncatingIfNeeded: value >> (24 - 8 * i)) }
        return uuid(fromBigEndian: b)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// Names iOS prints for these UUIDs, each seen in CoreBluetooth's own `description` output.
    private static let names: [UUID: String] = {
        let short: [(UInt32, String)] = [
            (0x1805, "Current Time"),
            (0x180A, "Device Information"),
            (0x180D, "Heart Rate"),
            (0x180F, "Battery"),
            (0x2902, "Client Characteristic Configuration"),
            (0x2A0F, "Local Time Information"),
            (0x2A19, "Battery Level"),
            (0x2A23, "System ID"),
            (0x2A24, "Model Number String"),
            (0x2A25, "Serial Number String"),
            (0x2A26, "Firmware Revision String"),
            (0x2A27, "Hardware Revision String"),
            (0x2A28, "Software Revision String"),
            (0x2A29, "Manufacturer Name String"),
            (0x2A2A, "IEEE Regulatory Certification"),
            (0x2A2B, "Current Time"),
            (0x2A50, "PnP ID"),
        ]
        var table = Dictionary(uniqueKeysWithValues: short.map { (onBase($0.0), $0.1) })
        // Apple's Continuity service, which iPhones and Apple Watches expose.
        if let continuity = uuid(hyphenated: "D0611E78-BBB4-4591-A5F8-487910AE4366") {
            table[continuity] = "Continuity"
        }
        return table
    }()
}

// The descriptor UUIDs CoreBluetooth names (`CBUUID.h`, "Characteristic Descriptors"). Values as
// the SDK defines them; each is the descriptor's assigned number in the Bluetooth SIG's list.

/// The Characteristic Extended Properties descriptor (0x2900).
public let CBUUIDCharacteristicExtendedPropertiesString: String = "2900"
/// The Characteristic User Description descriptor (0x2901).
public let CBUUIDCharacteristicUserDescriptionString: String = "2901"
/// The Client Characteristic Configuration descriptor (0x2902): the CCCD an app writes through
/// `setNotifyValue(_:for:)`.
public let CBUUIDClientCharacteristicConfigurationString: String = "2902"
/// The Server Characteristic Configuration descriptor (0x2903).
public let CBUUIDServerCharacteristicConfigurationString: String = "2903"
/// The Characteristic Presentation Format descriptor (0x2904).
public let CBUUIDCharacteristicFormatString: String = "2904"
/// The Characteristic Aggregate Format descriptor (0x2905).
public let CBUUIDCharacteristicAggregateFormatString: String = "2905"
/// The Valid Range descriptor (0x2906).
public let CBUUIDCharacteristicValidRangeString: String = "2906"
/// The Observation Schedule descriptor (iOS 18). Apple's value is not verified: "2910" is the
/// Bluetooth SIG's assigned number for Observation Schedule, which the constant's name points to.
public let CBUUIDCharacteristicObservationScheduleString: String = "2910"
/// Apple's characteristic that holds the PSM of an L2CAP channel offered by the service that
/// contains it (a 128-bit UUID of Apple's, not a SIG number).
public let CBUUIDL2CAPPSMCharacteristicString: String = "ABDD3056-28FA-441D-A470-55A75A52553A"
