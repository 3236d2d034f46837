/// A Monkey C value as it travels in a Connect IQ app message (and in a device's settings file).
///
/// The cases are exactly the types of the serialization's type tags (docs/connectiq-link.md,
/// "Monkey C value serialization"). Containers nest freely.
///
/// Equality and hashing are *bitwise*: two floating values are equal when their bit patterns are
/// (so `NaN == NaN` when the payloads agree, and `0.0 != -0.0`), and two strings are equal when
/// their UTF-8 bytes are (not by Unicode canonical equivalence). That is what a serialization
/// round trip preserves. Dictionaries compare their pairs in order; see ``sortingDictionaryKeys()``
/// for the order ``MonkeyCSerialization/encode(_:)`` writes them in.
public enum MonkeyCValue: Sendable {
    /// `null` (tag `00`).
    case null
    /// A `Boolean` (tag `09`).
    case bool(Bool)
    /// A `Number`, 32-bit signed (tag `01`).
    case int32(Int32)
    /// A `Long`, 64-bit signed (tag `0E`).
    case int64(Int64)
    /// A `Float`, IEEE 754 binary32 (tag `02`).
    case float32(Float)
    /// A `Double`, IEEE 754 binary64 (tag `0F`).
    case double(Double)
    /// A `Char`: one Unicode code point as a 32-bit number (tag `13`). Not validated: any 32-bit value travels.
    case char(UInt32)
    /// A `String` (tag `03`, stored in the string block).
    case string(String)
    /// A `ByteArray` (tag `14`; the iOS SDK sends it for `NSData`).
    case byteArray([UInt8])
    /// An `Array` (tag `05`).
    case array([MonkeyCValue])
    /// A `Dictionary` (tag `0B`) as ordered pairs; a key may be any value.
    case dictionary([MonkeyCPair])
}

/// One key–value pair of a ``MonkeyCValue/dictionary(_:)``.
public struct MonkeyCPair: Sendable, Hashable {
    /// The key; Monkey C allows any value as a key.
    public var key: MonkeyCValue
    /// The value stored under ``key``.
    public var value: MonkeyCValue

    /// Creates a pair.
    public init(_ key: MonkeyCValue, _ value: MonkeyCValue) {
        self.key = key
        self.value = value
    }
}

// MARK: - Convenience construction

extension MonkeyCValue {
    /// An integer as the SDKs map it: `int32` when it fits in 32 bits, otherwise `int64`.
    public init(_ integer: Int) {
        if let narrow = Int32(exactly: integer) {
            self = .int32(narrow)
        } else {
            self = .int64(Int64(integer))
        }
    }

    /// A floating-point number as the iOS SDK sends an `NSNumber` holding a `double`: tag `0F`.
    /// Use ``float32(_:)`` to ask for a 32-bit float explicitly.
    public init(_ number: Double) {
        self = .double(number)
    }

    /// A string value.
    public init(_ text: String) {
        self = .string(text)
    }

    /// A boolean value.
    public init(_ flag: Bool) {
        self = .bool(flag)
    }

    /// A byte array value (tag `14`).
    public init(bytes: [UInt8]) {
        self = .byteArray(bytes)
    }

    /// A dictionary from string keys, pairs in the order of `pairs`.
    public static func object(_ pairs: KeyValuePairs<String, MonkeyCValue>) -> MonkeyCValue {
        .dictionary(pairs.map { MonkeyCPair(.string($0.key), $0.value) })
    }
}

extension MonkeyCValue: ExpressibleByNilLiteral {
    /// `nil` is Monkey C's `null`.
    public init(nilLiteral: ()) {
        self = .null
    }
}

extension MonkeyCValue: ExpressibleByBooleanLiteral {
    /// `true` / `false`.
    public init(booleanLiteral value: Bool) {
        self = .bool(value)
    }
}

extension MonkeyCValue: ExpressibleByIntegerLiteral {
    /// An integer literal: `int32` when it fits, else `int64` (see ``init(_:)-(Int)``).
    public init(integerLiteral value: Int) {
        self.init(value)
    }
}

extension MonkeyCValue: ExpressibleByFloatLiteral {
    /// A floating literal is a double (tag `0F`), as the iOS SDK sends it.
    public init(floatLiteral value: Double) {
        self = .double(value)
    }
}

extension MonkeyCValue: ExpressibleByStringLiteral {
    /// A string literal.
    public init(stringLiteral value: String) {
        self = .string(value)
    }
}

extension MonkeyCValue: ExpressibleByArrayLiteral {
    /// An array literal of values.
    public init(arrayLiteral elements: MonkeyCValue...) {
        self = .array(elements)
    }
}

extension MonkeyCValue: ExpressibleByDictionaryLiteral {
    /// A dictionary literal; the pairs keep the literal's order.
    public init(dictionaryLiteral elements: (MonkeyCValue, MonkeyCValue)...) {
        self = .dictionary(elements.map { MonkeyCPair($0.0, $0.1) })
    }
}

// MARK: - Bitwise equality and hashing

extension MonkeyCValue: Hashable {
    /// Bitwise equality: floats by bit pattern, strings by UTF-8 bytes, containers element by element in order.
    public static func == (lhs: MonkeyCValue, rhs: MonkeyCValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int32(a), .int32(b)): return a == b
        case let (.int64(a), .int64(b)): return a == b
        case let (.float32(a), .float32(b)): return a.bitPattern == b.bitPattern
        case let (.double(a), .double(b)): return a.bitPattern == b.bitPattern
        case let (.char(a), .char(b)): return a == b
        case let (.string(a), .string(b)): return a.utf8.elementsEqual(b.utf8)
        case let (.byteArray(a), .byteArray(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.dictionary(a), .dictionary(b)): return a == b
        default: return false
        }
    }

    /// Hashes consistently with the bitwise ``==(_:_:)``.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(typeRank)
        switch self {
        case .null: break
        case .bool(let b): hasher.combine(b)
        case .int32(let v): hasher.combine(v)
        case .int64(let v): hasher.combine(v)
        case .float32(let v): hasher.combine(v.bitPattern)
        case .double(let v): hasher.combine(v.bitPattern)
        case .char(let v): hasher.combine(v)
        case .string(let s):
            hasher.combine(s.utf8.count)
            for byte in s.utf8 { hasher.combine(byte) }
        case .byteArray(let bytes): hasher.combine(bytes)
        case .array(let items): hasher.combine(items)
        case .dictionary(let pairs): hasher.combine(pairs)
        }
    }
}

// MARK: - The canonical total order

extension MonkeyCValue {
    /// The rank of the value's type in the canonical order: null 0, bool 1, int32 2, int64 3,
    /// float32 4, double 5, char 6, string 7, byte array 8, array 9, dictionary 10.
    public var typeRank: Int {
        switch self {
        case .null: 0
        case .bool: 1
        case .int32: 2
        case .int64: 3
        case .float32: 4
        case .double: 5
        case .char: 6
        case .string: 7
        case .byteArray: 8
        case .array: 9
        case .dictionary: 10
        }
    }

    /// The canonical total order used to sort dictionary keys when encoding.
    ///
    /// Values of different types order by ``typeRank``. Within a type: `false < true`; integers
    /// and chars numerically; floats by IEEE 754 `totalOrder` (−NaN < −∞ < … < −0 < +0 < … < +∞ < +NaN,
    /// every bit pattern distinct); strings by their UTF-8 bytes, lexicographically (so `"a" < "b" < "ba"`);
    /// byte arrays lexicographically; arrays element by element, a prefix first; dictionaries pair by
    /// pair (key, then value), a prefix first. It agrees with ``==(_:_:)``: exactly one of `a < b`,
    /// `a == b`, `b < a` holds.
    public static func canonicallyPrecedes(_ lhs: MonkeyCValue, _ rhs: MonkeyCValue) -> Bool {
        canonicalCompare(lhs, rhs) < 0
    }

    /// −1, 0 or 1 as `lhs` precedes, equals or follows `rhs` in the canonical order.
    static func canonicalCompare(_ lhs: MonkeyCValue, _ rhs: MonkeyCValue) -> Int {
        let leftRank = lhs.typeRank, rightRank = rhs.typeRank
        if leftRank != rightRank { return leftRank < rightRank ? -1 : 1 }
        switch (lhs, rhs) {
        case (.null, .null): return 0
        case let (.bool(a), .bool(b)): return compare(a ? 1 : 0, b ? 1 : 0)
        case let (.int32(a), .int32(b)): return compare(a, b)
        case let (.int64(a), .int64(b)): return compare(a, b)
        case let (.float32(a), .float32(b)):
            return compare(orderedKey(a.bitPattern, signBit: 1 << 31), orderedKey(b.bitPattern, signBit: 1 << 31))
        case let (.double(a), .double(b)):
            return compare(orderedKey(a.bitPattern, signBit: 1 << 63), orderedKey(b.bitPattern, signBit: 1 << 63))
        case let (.char(a), .char(b)): return compare(a, b)
        case let (.string(a), .string(b)): return lexicographic(Array(a.utf8), Array(b.utf8), compare)
        case let (.byteArray(a), .byteArray(b)): return lexicographic(a, b, compare)
        case let (.array(a), .array(b)): return lexicographic(a, b, canonicalCompare)
        case let (.dictionary(a), .dictionary(b)):
            return lexicographic(a, b) { x, y in
                let keyOrder = canonicalCompare(x.key, y.key)
                return keyOrder != 0 ? keyOrder : canonicalCompare(x.value, y.value)
            }
        default:
            preconditionFailure("MonkeyCValue.canonicalCompare: equal type ranks for different cases")
        }
    }

    /// A copy whose dictionaries (at every depth) hold their pairs sorted by key in the canonical
    /// order, ties keeping their relative order: the shape ``MonkeyCSerialization/decode(_:maximumDepth:)``
    /// gives back after ``MonkeyCSerialization/encode(_:)``.
    public func sortingDictionaryKeys() -> MonkeyCValue {
        switch self {
        case .array(let items):
            return .array(items.map { $0.sortingDictionaryKeys() })
        case .dictionary(let pairs):
            let normalized = pairs.map { MonkeyCPair($0.key.sortingDictionaryKeys(), $0.value.sortingDictionaryKeys()) }
            return .dictionary(MonkeyCValue.canonicallySorted(normalized))
        default:
            return self
        }
    }

    /// Pairs sorted by key in the canonical order; equal keys keep their relative order.
    static func canonicallySorted(_ pairs: [MonkeyCPair]) -> [MonkeyCPair] {
        pairs.enumerated().sorted { left, right in
            let order = canonicalCompare(left.element.key, right.element.key)
            return order != 0 ? order < 0 : left.offset < right.offset
        }.map(\.element)
    }

    private static func compare<T: Comparable>(_ a: T, _ b: T) -> Int {
        a < b ? -1 : (a == b ? 0 : 1)
    }

    /// Maps an IEEE 754 bit pattern onto an unsigned integer whose order is `totalOrder`.
    private static func orderedKey<T: FixedWidthInteger & UnsignedInteger>(_ bits: T, signBit: T) -> T {
        bits & signBit != 0 ? ~bits : bits | signBit
    }

    private static func lexicographic<T>(_ a: [T], _ b: [T], _ element: (T, T) -> Int) -> Int {
        for (x, y) in zip(a, b) {
            let order = element(x, y)
            if order != 0 { return order }
        }
        return compare(a.count, b.count)
    }
}
