import JSONBytes

/// What kind of value a placeholder stands for: the counts of `tether redact` are per kind.
public enum RedactedKind: String, Sendable, Hashable, CaseIterable, Comparable {
    /// A Bluetooth device address (BD_ADDR).
    case address
    /// A device name (advertising Local Name and Broadcast Name, Remote Name, Local Name, the
    /// GATT Device Name, a manifest's device name) or an annotation's author.
    case name
    /// A secret of 16 or 32 octets: an IRK, LTK, CSRK or BR/EDR link key, out-of-band data (the
    /// hash C and randomizer R, the Security Manager TK, the LE Secure Connections confirmation
    /// and random values), a Broadcast Code or an LE DHKey.
    case key
    /// A BR/EDR PIN code (PIN Code Request Reply).
    case pin
    /// A Secure Simple Pairing passkey or numeric comparison value (4 octets).
    case passkey
    /// An MQTT client identifier.
    case clientID = "client_id"
    /// An MQTT user name.
    case username
    /// An MQTT password.
    case password
    /// An account name the widget core derives its client id and topics from.
    case account
    /// An IPv4 or IPv6 address (only with ``RedactionOptions/ip``).
    case ip

    /// Orders kinds as they are declared.
    public static func < (lhs: RedactedKind, rhs: RedactedKind) -> Bool {
        (allCases.firstIndex(of: lhs) ?? 0) < (allCases.firstIndex(of: rhs) ?? 0)
    }
}

/// The set-wide table of original values and their placeholders.
///
/// A placeholder is derived from a counter per kind (the first address seen becomes the first
/// address placeholder), never from the value, so nothing of the original leaks; the same original
/// always gets the same placeholder within one set. Every placeholder has its original's length, so
/// lengths, TCP sequence numbers and offsets stay valid.
public struct RedactionMap: Sendable {
    /// One original value and its placeholder.
    public struct Entry: Sendable, Hashable {
        /// What the value is.
        public var kind: RedactedKind
        /// The value as found (an address or key in wire order).
        public var original: [UInt8]
        /// What replaces it: the same length.
        public var placeholder: [UInt8]
    }

    /// Every value registered, in the order first seen.
    public private(set) var entries: [Entry] = []
    private var index: [[UInt8]: Int] = [:]
    private var placeholders: Set<[UInt8]> = []
    private var counters: [RedactedKind: Int] = [:]

    /// An empty map.
    public init() {}

    /// The placeholder of `original`, if it was registered.
    public func placeholder(for original: [UInt8]) -> [UInt8]? {
        index[original].map { entries[$0].placeholder }
    }

    /// Originals of `kind`, in the order they were first seen.
    public func originals(of kind: RedactedKind) -> [[UInt8]] {
        entries.filter { $0.kind == kind }.map(\.original)
    }

    /// Registers a Bluetooth device address, given as on the wire (least significant byte first).
    /// The all-zero and all-ones addresses identify nothing and are left alone. The placeholder
    /// keeps the two top bits of the most significant byte (static random `11`, resolvable `01`,
    /// non-resolvable `00`), so an address keeps its address type's meaning.
    @discardableResult
    public mutating func address(wire: [UInt8]) -> [UInt8] {
        guard wire.count == 6, wire.contains(where: { $0 != 0 }), wire.contains(where: { $0 != 0xFF }) else { return wire }
        if let known = placeholder(for: wire) { return known }
        let top = wire[5] & 0xC0
        let made = fresh(.address) { n in
            [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8((n >> 24) & 0xFF), 0x00, top | 0x2D]
        }
        return register(.address, wire, made)
    }

    /// Registers a secret of 16 or 32 octets (IRK, LTK, link key, OOB value, DHKey), as on the
    /// wire. All zeros (an absent key) and all ones (an unset OOB value) are left alone.
    @discardableResult
    public mutating func key(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 16 || bytes.count == 32, bytes.contains(where: { $0 != 0 }), bytes.contains(where: { $0 != 0xFF }) else { return bytes }
        if let known = placeholder(for: bytes) { return known }
        let made = fresh(.key) { n in
            [UInt8(n & 0xFF), UInt8((n >> 8) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8((n >> 24) & 0xFF)]
                + [UInt8](repeating: 0, count: bytes.count - 5) + [0x4B]
        }
        return register(.key, bytes, made)
    }

    /// Registers a passkey or numeric comparison value (4 octets, little-endian, 0–999999). The
    /// placeholder is another number of that range.
    @discardableResult
    public mutating func passkey(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 4 else { return bytes }
        if let known = placeholder(for: bytes) { return known }
        let made = fresh(.passkey) { n in
            let value = UInt32(n % 1_000_000)
            return [UInt8(value & 0xFF), UInt8((value >> 8) & 0xFF), UInt8((value >> 16) & 0xFF), 0]
        }
        return register(.passkey, bytes, made)
    }

    /// Registers a string-like value (name, client id, user name, password, account). The
    /// placeholder is the kind's prefix and a counter, padded to the original's length. A client
    /// id that contains an already registered value (an account) gets that value replaced instead,
    /// so `widget-demo` follows `demo` and what the core derives from the account still matches.
    @discardableResult
    public mutating func string(_ kind: RedactedKind, _ original: [UInt8]) -> [UInt8] {
        guard !original.isEmpty else { return original }
        if let known = placeholder(for: original) { return known }
        if kind == .clientID || kind == .username {
            var derived = original
            let replaced = ByteSubstitution.apply(substitutions(of: [.account]), to: &derived)
            if replaced > 0 { return register(kind, original, derived) }
        }
        let prefix: [UInt8] = Array(kind.placeholderPrefix.utf8)
        let made = fresh(kind) { n in
            let digits = Array(String(n).utf8)
            let length = original.count
            if length >= prefix.count + digits.count {
                return prefix + [UInt8](repeating: UInt8(ascii: "0"), count: length - prefix.count - digits.count) + digits
            }
            // Too short for the whole prefix: its first letter, then the counter.
            if length >= 1 + digits.count {
                return [prefix[0]] + [UInt8](repeating: UInt8(ascii: "0"), count: length - 1 - digits.count) + digits
            }
            // Too short for a letter and the counter: the counter in letters, as many as fit.
            var letters: [UInt8] = []
            var m = n
            for _ in 0..<length {
                letters.append(UInt8(ascii: "a") + UInt8(m % 26))
                m /= 26
            }
            return letters
        }
        return register(kind, original, made)
    }

    /// Registers an IPv4 (4 bytes) or IPv6 (16 bytes) address. Placeholders come from the
    /// documentation ranges: 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24 and 2001:db8::/32.
    @discardableResult
    public mutating func ip(_ bytes: [UInt8]) -> [UInt8] {
        guard bytes.count == 4 || bytes.count == 16 else { return bytes }
        if let known = placeholder(for: bytes) { return known }
        let made = fresh(.ip) { n in
            if bytes.count == 4 {
                let nets: [[UInt8]] = [[192, 0, 2], [198, 51, 100], [203, 0, 113]]
                if n <= 3 * 254 { return nets[(n - 1) / 254] + [UInt8((n - 1) % 254 + 1)] }
                // Beyond the documentation ranges: the reserved 240.0.0.0/4.
                let m = n - 3 * 254
                return [0xF0 | UInt8((m >> 24) & 0x0F), UInt8((m >> 16) & 0xFF), UInt8((m >> 8) & 0xFF), UInt8(m & 0xFF)]
            }
            return [0x20, 0x01, 0x0D, 0xB8] + [UInt8](repeating: 0, count: 8)
                + [UInt8((n >> 24) & 0xFF), UInt8((n >> 16) & 0xFF), UInt8((n >> 8) & 0xFF), UInt8(n & 0xFF)]
        }
        return register(.ip, bytes, made)
    }

    /// Every way a registered value of `kinds` appears in text and in byte strings, longest first:
    /// the value itself (strings, raw bytes), and for binary values the hex spellings a trace or
    /// manifest uses (`F0:F0:…` upper and lower case, in both byte orders, with and without
    /// colons, alone or on a byte boundary inside a longer hex string such as a payload), and for
    /// strings their UTF-8 in hex (an API-call record's file contents) and, where it differs,
    /// their percent-encoding and JSON escaping. Passkeys have no text form: they are only ever
    /// replaced in the HCI parameters that hold them.
    public func substitutions(of kinds: Set<RedactedKind> = Set(RedactedKind.allCases), raw: Bool = false) -> [ByteSubstitution] {
        var result: [ByteSubstitution] = []
        for entry in entries where kinds.contains(entry.kind) {
            switch entry.kind {
            case .passkey:
                continue
            case .address, .key:
                if raw {
                    result.append(ByteSubstitution(entry.original, entry.placeholder, boundary: .none))
                    result.append(ByteSubstitution(entry.original.reversed(), entry.placeholder.reversed(), boundary: .none))
                }
                for order in [false, true] {
                    let o = order ? Array(entry.original.reversed()) : entry.original
                    let p = order ? Array(entry.placeholder.reversed()) : entry.placeholder
                    // Displayed most significant byte first: the wire order reversed is the usual form.
                    let od = Array(o.reversed()), pd = Array(p.reversed())
                    for upper in [true, false] {
                        for separator in [":", ""] where entry.kind == .address || separator.isEmpty {
                            result.append(ByteSubstitution(
                                Array(Hex.spell(od, upper: upper, separator: separator).utf8),
                                Array(Hex.spell(pd, upper: upper, separator: separator).utf8), boundary: .hex))
                        }
                        // Inside a longer hex string (a payload a trace spells), on a byte boundary.
                        result.append(ByteSubstitution(
                            Array(Hex.spell(od, upper: upper, separator: "").utf8),
                            Array(Hex.spell(pd, upper: upper, separator: "").utf8), boundary: .hexAligned))
                    }
                }
            case .ip:
                if raw {
                    result.append(ByteSubstitution(entry.original, entry.placeholder, boundary: .none))
                } else if entry.original.count == 4 {
                    result.append(ByteSubstitution(
                        Array(entry.original.map(String.init).joined(separator: ".").utf8),
                        Array(entry.placeholder.map(String.init).joined(separator: ".").utf8), boundary: .dotted))
                }
            case .name, .pin, .clientID, .username, .password, .account:
                result.append(ByteSubstitution(entry.original, entry.placeholder, boundary: raw ? .wordOrLengthPrefix : .word))
                if !raw, entry.original.count >= 3 {
                    for upper in [false, true] {
                        result.append(ByteSubstitution(
                            Array(Hex.spell(entry.original, upper: upper, separator: "").utf8),
                            Array(Hex.spell(entry.placeholder, upper: upper, separator: "").utf8), boundary: .hexWord))
                    }
                    let encoded = Percent.encode(entry.original)
                    if encoded != entry.original {
                        result.append(ByteSubstitution(encoded, Percent.encode(entry.placeholder), boundary: .word))
                    }
                }
                let escaped = JSONText.escape(entry.original)
                if !raw, escaped != entry.original {
                    result.append(ByteSubstitution(escaped, JSONText.escape(entry.placeholder), boundary: .word))
                }
            }
        }
        return result.sorted { $0.original.count > $1.original.count }
    }

    /// The next placeholder of `kind` that is neither an original nor another placeholder. A
    /// space that runs out (26 one-letter names) gives up after 4096 tries and reuses one: two
    /// originals then share a placeholder, which leaks nothing.
    private mutating func fresh(_ kind: RedactedKind, _ make: (Int) -> [UInt8]) -> [UInt8] {
        var candidate: [UInt8] = []
        for _ in 0..<4096 {
            let n = counters[kind, default: 0] + 1
            counters[kind] = n
            candidate = make(n)
            if index[candidate] == nil, !placeholders.contains(candidate) { return candidate }
        }
        return candidate
    }

    private mutating func register(_ kind: RedactedKind, _ original: [UInt8], _ placeholder: [UInt8]) -> [UInt8] {
        index[original] = entries.count
        entries.append(Entry(kind: kind, original: original, placeholder: placeholder))
        placeholders.insert(placeholder)
        return placeholder
    }
}

extension RedactedKind {
    /// The start of a string placeholder of this kind.
    var placeholderPrefix: String {
        switch self {
        case .name: "dev"
        case .pin: "pin"
        case .clientID: "client"
        case .username: "user"
        case .password: "pass"
        case .account: "acct"
        case .address, .key, .passkey, .ip: "x"
        }
    }
}

/// Spelling bytes in hex.
enum Hex {
    static func spell(_ bytes: [UInt8], upper: Bool, separator: String) -> String {
        let digits = Array((upper ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var text: [UInt8] = []
        for (i, byte) in bytes.enumerated() {
            if i > 0 { text += Array(separator.utf8) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// Percent-encoding as a URL query value spells it (the device list URL of the messaging core).
enum Percent {
    /// The bytes a percent-encoded query value stands for (`+` is a space), or nil when a `%` is
    /// not followed by two hex digits.
    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        var i = text.startIndex
        while i < text.endIndex {
            switch text[i] {
            case UInt8(ascii: "%"):
                guard i + 2 < text.endIndex, let high = JSONHexDigit.value(text[i + 1]), let low = JSONHexDigit.value(text[i + 2]) else { return nil }
                out.append(high << 4 | low)
                i += 3
            case UInt8(ascii: "+"):
                out.append(0x20)
                i += 1
            default:
                out.append(text[i])
                i += 1
            }
        }
        return out
    }

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            if ByteSubstitution.isWord(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "~") {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0F)]]
            }
        }
        return out
    }
}
