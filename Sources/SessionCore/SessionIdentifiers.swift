/// A device's identity on the session link: 16 bytes, written like a UUID
/// (`54450001-5345-5353-494f-4e4c494e4b01`). The phone names itself and its paired watch with one,
/// the watch names itself and its paired phone with one; the handshake carries them most
/// significant byte first (docs/session-link.md, "Handshake").
///
/// Codable as its text form; decoding refuses anything that is not 32 hex digits in the 8-4-4-4-12
/// layout, so a decoded value always holds exactly 16 bytes.
public struct SessionDeviceID: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The 16 bytes, most significant first.
    public let bytes: [UInt8]

    /// An identity from exactly 16 bytes; `nil` for any other count.
    public init?(bytes: [UInt8]) {
        guard bytes.count == 16 else { return nil }
        self.bytes = bytes
    }

    /// An identity from its text form, 8-4-4-4-12 hex digits in either case; `nil` otherwise.
    public init?(_ text: String) {
        let groups = text.split(separator: "-", omittingEmptySubsequences: false)
        guard groups.map(\.count) == [8, 4, 4, 4, 12] else { return nil }
        let digits = Array(groups.joined().utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var index = 0
        while index < digits.count {
            guard let high = SessionDeviceID.hexValue(digits[index]), let low = SessionDeviceID.hexValue(digits[index + 1]) else {
                return nil
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        self.bytes = bytes
    }

    /// Lower-case 8-4-4-4-12 text.
    public var description: String {
        var text = ""
        for (index, byte) in bytes.enumerated() {
            if [4, 6, 8, 10].contains(index) { text += "-" }
            text += SessionDeviceID.hexDigits(byte)
        }
        return text
    }

    /// The 32 lower-case hex digits without dashes (used in storage keys).
    public var compactHex: String {
        bytes.map(SessionDeviceID.hexDigits).joined()
    }

    /// Byte-wise order, so snapshots list peers in a stable order.
    public static func < (lhs: SessionDeviceID, rhs: SessionDeviceID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    /// Decodes the text form; throws `DecodingError.dataCorrupted` for anything else.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let value = SessionDeviceID(text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "expected a device identity as 8-4-4-4-12 hex digits, found \"\(text)\""
            )
        }
        self = value
    }

    /// Encodes the text form.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }

    static func hexDigits(_ byte: UInt8) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
    }

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Names one interactive message (`sendMessage` / `sendMessageData`) in one direction: the id the
/// sender's core gave it, which is also its id on the wire (channels 0x02/0x03, and the
/// `inReplyTo` of its reply). Ids of received messages are the peer's.
public struct SessionMessageID: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The wire id.
    public var rawValue: UInt32
    /// Wraps a wire id.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// A literal id.
    public init(integerLiteral value: UInt32) { self.rawValue = value }
    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `message N`.
    public var description: String { "message \(rawValue)" }
}

/// Names one `transferUserInfo` or `transferCurrentComplicationUserInfo` transfer; also its id on the
/// wire (channels 0x05/0x06). The two channels share one counter, so an id names one transfer.
public struct UserInfoTransferID: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The wire id.
    public var rawValue: UInt32
    /// Wraps a wire id.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// A literal id.
    public init(integerLiteral value: UInt32) { self.rawValue = value }
    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `user info N`.
    public var description: String { "user info \(rawValue)" }
}

/// Names one `transferFile` transfer; also its id on the wire (channels 0x07/0x08).
public struct FileTransferID: RawRepresentable, Sendable, Hashable, Comparable, Codable, CustomStringConvertible, ExpressibleByIntegerLiteral {
    /// The wire id.
    public var rawValue: UInt32
    /// Wraps a wire id.
    public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// A literal id.
    public init(integerLiteral value: UInt32) { self.rawValue = value }
    /// Numeric order.
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
    /// `file N`.
    public var description: String { "file \(rawValue)" }
}
