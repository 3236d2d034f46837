import Foundation
import MonkeyC

/// Which Foundation values an SDK lets an app send, and how received ones are handed back: the
/// one difference between the Connect IQ SDK's messages (`ConnectIQ.h`: NSString, NSNumber,
/// NSNull, NSArray, NSDictionary) and WatchConnectivity's property lists (no null; Data and Date
/// too; String keys only).
public struct FoundationValueRules: Sendable, Hashable {
    /// `Data` travels as a Monkey C byte array (and a byte array comes back as `Data`).
    public var data: Bool
    /// `Date` travels as a Double of seconds since 1970: Monkey C has no date type.
    public var date: Bool
    /// `NSNull` (and `nil` in an `Any`) travels as Monkey C null.
    public var null: Bool
    /// Dictionary keys may be other than `String`.
    public var nonStringKeys: Bool
    /// The accepted types, for the refusal's sentence.
    public var accepted: String

    /// A Connect IQ message: String, numbers, Bool, NSNull, arrays, dictionaries (any keys).
    public static let connectIQ = FoundationValueRules(
        data: false, date: false, null: true, nonStringKeys: true,
        accepted: "String, numbers, Bool, NSNull, arrays, dictionaries")
    /// A WatchConnectivity property list: String, numbers, Bool, Data, Date, arrays, `[String: Any]`.
    public static let propertyList = FoundationValueRules(
        data: true, date: true, null: false, nonStringKeys: false,
        accepted: "String, number, Bool, Data, Date, array, [String: Any]")

    /// Rules; see the properties.
    public init(data: Bool, date: Bool, null: Bool, nonStringKeys: Bool, accepted: String) {
        self.data = data
        self.date = date
        self.null = null
        self.nonStringKeys = nonStringKeys
        self.accepted = accepted
    }
}

/// Why a value cannot travel: the first value the rules refuse, by its path.
public struct UnsupportedValue: Error, Sendable, Hashable, CustomStringConvertible {
    /// `payload["samples"][1] is a Workout, which … cannot carry (…)`.
    public var description: String
}

/// Foundation values an app passes to an SDK, to and from the Monkey C values the cores carry,
/// as the SDKs convert them. One converter for both SDK facades, with their
/// ``FoundationValueRules``.
///
/// Outgoing: `String`; `Bool` (tested before numbers, and an `NSNumber` read by what it stores,
/// so that a Bool never becomes 1 nor `NSNumber(1)` `true`); `Int` and the fixed-width integers
/// (`int32` when it fits, else `int64`; a `UInt64` above `Int64.max` is refused); `Double`,
/// `CGFloat` (`double`) and `Float` (`float32`); then what the rules allow. Dictionary keys are
/// sorted, so the bytes sent do not depend on the process's hash seed: two runs send the same.
///
/// Incoming: `int32`/`int64` → `Int`, `float32`/`double` → `Double`, `char` → a one-scalar
/// `String`, `byteArray` → `Data`, `null` → `NSNull()`, arrays → `[Any]`, dictionaries →
/// `[String: Any]`, or `[AnyHashable: Any]` when the rules allow other keys and one is.
public enum FoundationValues {
    private static let maximumDepth = 64

    /// `value` as a Monkey C value; `path` names it in a refusal.
    /// - Throws: ``UnsupportedValue`` naming the first value the rules refuse.
    public static func monkeyC(_ value: Any, rules: FoundationValueRules, path: String) throws(UnsupportedValue) -> MonkeyCValue {
        try convert(value, rules: rules, path: path, depth: 0)
    }

    private static func convert(_ value: Any, rules: FoundationValueRules, path: String, depth: Int) throws(UnsupportedValue) -> MonkeyCValue {
        guard depth < maximumDepth else {
            throw UnsupportedValue(description: "\(path) is nested more than \(maximumDepth) levels deep")
        }
        // Optionals boxed in Any (a dictionary built from `String?` values) are looked through.
        if let optional = value as? OptionalBox {
            guard let wrapped = optional.wrapped else {
                guard rules.null else { throw UnsupportedValue(description: "\(path) is nil, which cannot travel (\(rules.accepted))") }
                return .null
            }
            return try convert(wrapped, rules: rules, path: path, depth: depth)
        }
        // An NSNumber (from JSONSerialization, or built by the app) is read by what it stores
        // before the Swift casts, which on Linux would turn NSNumber(1) into `true`.
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber { return Self.number(number) }
        switch value {
        case let v as Bool: return .bool(v)
        case let v as String: return .string(v)
        case let v as Substring: return .string(String(v))
        case let v as Int: return MonkeyCValue(v)
        case let v as Int8: return .int32(Int32(v))
        case let v as Int16: return .int32(Int32(v))
        case let v as Int32: return .int32(v)
        case let v as Int64: return Int32(exactly: v).map { .int32($0) } ?? .int64(v)
        case let v as UInt8: return .int32(Int32(v))
        case let v as UInt16: return .int32(Int32(v))
        case let v as UInt32: return Int32(exactly: v).map { .int32($0) } ?? .int64(Int64(v))
        case let v as UInt: return try unsigned(UInt64(v), path)
        case let v as UInt64: return try unsigned(v, path)
        case let v as Double: return .double(v)
        case let v as Float: return .float32(v)
        case let v as CGFloat: return .double(Double(v))
        case let v as NSNumber: return Self.number(v)
        case is NSNull where rules.null: return .null
        case let v as Date where rules.date: return .double(v.timeIntervalSince1970)
        case let v as Data where rules.data: return .byteArray([UInt8](v))
        case let v as [String: Any]:
            var pairs: [MonkeyCPair] = []
            for key in v.keys.sorted() {
                // The key comes from the dictionary's own keys; the guard keeps a broken invariant from trapping.
                guard let item = v[key] else { continue }
                pairs.append(MonkeyCPair(.string(key), try convert(item, rules: rules, path: "\(path)[\"\(key)\"]", depth: depth + 1)))
            }
            return .dictionary(pairs)
        case let v as [Any]:
            var items: [MonkeyCValue] = []
            for (index, item) in v.enumerated() {
                items.append(try convert(item, rules: rules, path: "\(path)[\(index)]", depth: depth + 1))
            }
            return .array(items)
        case let v as [AnyHashable: Any]:
            guard rules.nonStringKeys else {
                let badKey = v.keys.first { !($0.base is String) }
                throw UnsupportedValue(description: "\(path) is a dictionary with a key of type \(badKey.map { "\(type(of: $0.base))" } ?? "unknown"); only String keys can travel")
            }
            var pairs: [(key: String, pair: MonkeyCPair)] = []
            for (key, item) in v {
                let keyValue = try convert(key.base, rules: rules, path: "\(path) key \(key)", depth: depth + 1)
                pairs.append(("\(key)", MonkeyCPair(keyValue, try convert(item, rules: rules, path: "\(path)[\(key)]", depth: depth + 1))))
            }
            return .dictionary(pairs.sorted { $0.key < $1.key }.map(\.pair))
        default:
            throw UnsupportedValue(description: "\(path) is a \(type(of: value)), which cannot travel (\(rules.accepted))")
        }
    }

    private static func unsigned(_ number: UInt64, _ path: String) throws(UnsupportedValue) -> MonkeyCValue {
        guard let wide = Int64(exactly: number) else {
            throw UnsupportedValue(description: "\(path) is \(number), beyond the largest number Monkey C carries (Int64.max)")
        }
        return Int32(exactly: wide).map { .int32($0) } ?? .int64(wide)
    }

    /// An `NSNumber` by its stored type, so a double stays a double and a Bool a Bool.
    private static func number(_ number: NSNumber) -> MonkeyCValue {
        // A Bool NSNumber is a distinct class (`__NSCFBoolean`), but its `objCType` is `c`
        // on Linux, the same as an Int8's: the class tells them apart.
        if String(describing: type(of: number)).contains("Boolean") { return .bool(number.boolValue) }
        switch String(cString: number.objCType) {
        case "B": return .bool(number.boolValue)
        case "f": return .float32(number.floatValue)
        case "d": return .double(number.doubleValue)
        default:
            let wide = number.int64Value
            return Int32(exactly: wide).map { .int32($0) } ?? .int64(wide)
        }
    }

    /// A received Monkey C value as the Foundation value an app is handed. A dictionary key the
    /// rules do not allow (not a string, for a property list) is given as its description and
    /// said in `problems`: the peer broke the format, and the app should hear of it.
    public static func foundation(_ value: MonkeyCValue, rules: FoundationValueRules, problems: inout [String]) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .int32(let number): return Int(number)
        case .int64(let number): return Int(number)
        case .float32(let number): return Double(number)
        case .double(let number): return number
        case .char(let scalar): return Unicode.Scalar(scalar).map { String(Character($0)) } ?? String(scalar)
        case .string(let text): return text
        case .byteArray(let bytes): return Data(bytes)
        case .array(let items): return items.map { foundation($0, rules: rules, problems: &problems) }
        case .dictionary(let pairs): return dictionary(pairs, rules: rules, problems: &problems)
        }
    }

    /// A received Monkey C dictionary (see ``foundation(_:rules:problems:)``).
    public static func dictionary(_ pairs: [MonkeyCPair], rules: FoundationValueRules, problems: inout [String]) -> Any {
        let allStrings = pairs.allSatisfy { if case .string = $0.key { true } else { false } }
        if !allStrings, rules.nonStringKeys {
            var out: [AnyHashable: Any] = [:]
            for pair in pairs {
                guard let key = foundation(pair.key, rules: rules, problems: &problems) as? AnyHashable else {
                    problems.append("a received dictionary has a key (\(describe(pair.key))) that cannot be a dictionary key; its entry is left out")
                    continue
                }
                out[key] = foundation(pair.value, rules: rules, problems: &problems)
            }
            return out
        }
        var out: [String: Any] = [:]
        for pair in pairs {
            let key: String
            if case .string(let text) = pair.key {
                key = text
            } else {
                key = "\(pair.key)"
                problems.append("a received dictionary has a key that is not a string (\(describe(pair.key))); it is given to the app as \"\(key)\"")
            }
            out[key] = foundation(pair.value, rules: rules, problems: &problems)
        }
        return out
    }

    /// What kind of value it is, for a problem's sentence.
    public static func describe(_ value: MonkeyCValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a Bool"
        case .int32, .int64: "a number"
        case .float32, .double: "a floating number"
        case .char: "a Char"
        case .string: "a String"
        case .byteArray: "a ByteArray"
        case .array: "an Array"
        case .dictionary: "a Dictionary"
        }
    }
}

/// Lets ``FoundationValues`` see through an `Optional` boxed in `Any`, whatever its wrapped type.
private protocol OptionalBox {
    var wrapped: Any? { get }
}

extension Optional: OptionalBox {
    var wrapped: Any? {
        switch self {
        case .some(let value): value
        case .none: nil
        }
    }
}
