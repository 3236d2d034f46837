/// A 128-bit UUID as the Connect IQ link carries it: 16 bytes, most significant first, so
/// `0180E520-…` travels as `01 80 E5 20 …` (docs/connectiq-link.md, "Byte order").
///
/// Pure Swift (the cores import no Foundation). Text form: the usual 8-4-4-4-12 hex groups,
/// printed lower case; parsing accepts either case.
public struct IQUUID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The first 8 bytes, big-endian.
    public var high: UInt64
    /// The last 8 bytes, big-endian.
    public var low: UInt64

    /// A UUID from its two halves.
    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A UUID from exactly 16 bytes, most significant first; `nil` for any other count.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var high: UInt64 = 0, low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    /// Parses `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` (hex digits of either case); `nil` otherwise.
    public init?(_ text: String) {
        // One pass over the UTF-8 (replay reads a device UUID for every frame): 36 bytes, dashes at
        // 8, 13, 18 and 23, hex digits elsewhere. Any non-ASCII character makes it longer or fails.
        var high: UInt64 = 0, low: UInt64 = 0, nibbles = 0, position = 0
        for byte in text.utf8 {
            defer { position += 1 }
            guard position < 36 else { return nil }
            if position == 8 || position == 13 || position == 18 || position == 23 {
                guard byte == UInt8(ascii: "-") else { return nil }
                continue
            }
            guard let value = IQUUID.hexValue(byte) else { return nil }
            if nibbles < 16 { high = high << 4 | UInt64(value) } else { low = low << 4 | UInt64(value) }
            nibbles += 1
        }
        guard position == 36 else { return nil }
        self.init(high: high, low: low)
    }

    /// The 16 bytes, most significant first, as they go on the wire.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: high >> (56 - 8 * UInt64($0))) }
            + (0..<8).map { UInt8(truncatingIfNeeded: low >> (56 - 8 * UInt64($0))) }
    }

    /// `0180e520-5f7e-11e4-9803-0800200c9a66` style, lower case.
    public var description: String {
        let digits: StaticString = "0123456789abcdef"
        var text: [UInt8] = []
        text.reserveCapacity(36)
        digits.withUTF8Buffer { hex in
            for index in 0..<32 {
                if index == 8 || index == 12 || index == 16 || index == 20 { text.append(UInt8(ascii: "-")) }
                let word = index < 16 ? high : low
                let nibble = Int(truncatingIfNeeded: word >> UInt64(60 - 4 * (index % 16))) & 0x0F
                text.append(hex[nibble])
            }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// Orders by the 16 bytes, as unsigned numbers.
    public static func < (lhs: IQUUID, rhs: IQUUID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }

    /// The loopback test app of the iOS SDK, `0180E520-5F7E-11E4-9803-0800200C9A66`: an "echo" app for rigs.
    public static let loopbackTestApp = IQUUID(high: 0x0180_E520_5F7E_11E4, low: 0x9803_0800_200C_9A66)

    private static func hexValue(_ character: UInt8) -> UInt8? {
        switch character {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): character - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): character - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): character - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
