import BehaviourTrace
import Foundation
import MonkeyC
import MonkeyCTrace

/// Why a `[String: Any]` cannot travel: the first value that is not a property-list type, by
/// its path in the dictionary.
struct PayloadError: Error, Sendable, CustomStringConvertible {
    /// `payload["a"][2] is a Foo, not a property-list type`.
    var description: String

    /// The framework's error for it.
    var wcError: WCError { WCError(.payloadUnsupportedTypes, detail: description) }
}

/// WatchConnectivity payloads (property-list dictionaries as `[String: Any]`) to and from the
/// Monkey C values SessionCore carries.
///
/// Outgoing: `String`; `Bool` (tested before numbers: an `NSNumber` holding a Bool must not
/// become 1); `Int` and the fixed-width integers (`int32` when it fits, else `int64`; a
/// `UInt64` above `Int64.max` has no Monkey C type and is refused); `Double`, `CGFloat` and
/// `Float` (`double` / `float32`); `Data` (`byteArray`); `Date` (a
/// `double` of seconds since 1970: Monkey C has no date, so the watch sees a number); arrays;
/// dictionaries with `String` keys. Anything else (`NSNull`, a custom class, a non-string key)
/// is refused, as the framework refuses what is not a property list.
///
/// Incoming: `int32`/`int64` → `Int`, `double` → `Double`, `float32` → `Float`, `byteArray` →
/// `Data`, `char` → a one-scalar `String`, `null` → `NSNull()`, arrays → `[Any]`,
/// dictionaries → `[String: Any]` (a non-string key is written with its description and named
/// in a warning: a property list never has one, so the peer broke the format).
enum Payload {
    /// The dictionary as a Monkey C dictionary, keys in sorted order so the record does not
    /// depend on the process's hash seed.
    static func monkeyC(_ dictionary: [String: Any]) throws(PayloadError) -> MonkeyCValue {
        try monkeyC(dictionary: dictionary, path: "payload", depth: 0)
    }

    /// The dictionary as the JSON value a record carries.
    static func traceValue(_ dictionary: [String: Any]) throws(PayloadError) -> TraceValue {
        MonkeyCJSON.traceValue(try monkeyC(dictionary))
    }

    private static let maximumDepth = 64

    private static func monkeyC(dictionary: [String: Any], path: String, depth: Int) throws(PayloadError) -> MonkeyCValue {
        var pairs: [MonkeyCPair] = []
        for key in dictionary.keys.sorted() {
            // The key comes from the dictionary's own keys, so the lookup cannot miss; the guard
            // keeps a broken invariant from trapping.
            guard let value = dictionary[key] else { continue }
            pairs.append(MonkeyCPair(.string(key), try monkeyC(value, path: "\(path)[\"\(key)\"]", depth: depth + 1)))
        }
        return .dictionary(pairs)
    }

    private static func monkeyC(_ value: Any, path: String, depth: Int) throws(PayloadError) -> MonkeyCValue {
        guard depth < maximumDepth else {
            throw PayloadError(description: "\(path) is nested more than \(maximumDepth) levels deep")
        }
        // Optionals boxed in Any (`[String: Any]` built from `String?` values) are unwrapped;
        // `nil` has no property-list type.
        if let optional = value as? OptionalBox {
            guard let wrapped = optional.wrapped else {
                throw PayloadError(description: "\(path) is nil, which is not a property-list type")
            }
            return try monkeyC(wrapped, path: path, depth: depth)
        }
        // An NSNumber (from JSONSerialization, or built by the app) is read by what it stores
        // before the Swift casts, which on Linux would turn NSNumber(1) into `true`.
        if type(of: value) is NSNumber.Type, let number = value as? NSNumber {
            return Self.number(number)
        }
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
        case let v as UInt:
            guard let wide = Int64(exactly: v) else {
                throw PayloadError(description: "\(path) is \(v), beyond the largest number Monkey C carries (Int64.max)")
            }
            return Int32(exactly: wide).map { .int32($0) } ?? .int64(wide)
        case let v as UInt64:
            guard let wide = Int64(exactly: v) else {
                throw PayloadError(description: "\(path) is \(v), beyond the largest number Monkey C carries (Int64.max)")
            }
            return Int32(exactly: wide).map { .int32($0) } ?? .int64(wide)
        case let v as Double: return .double(v)
        case let v as Float: return .float32(v)
        case let v as CGFloat: return .double(Double(v))
        case let v as Date: return .double(v.timeIntervalSince1970)
        case let v as Data: return .byteArray([UInt8](v))
        case let v as NSNumber: return Self.number(v)
        case let v as [String: Any]: return try monkeyC(dictionary: v, path: path, depth: depth)
        case let v as [Any]:
            var items: [MonkeyCValue] = []
            for (index, item) in v.enumerated() {
                items.append(try monkeyC(item, path: "\(path)[\(index)]", depth: depth + 1))
            }
            return .array(items)
        case let v as [AnyHashable: Any]:
            let badKey = v.keys.first { !($0.base is String) }
            throw PayloadError(description: "\(path) is a dictionary with a key of type \(badKey.map { "\(type(of: $0.base))" } ?? "unknown"); property lists need String keys")
        default:
            throw PayloadError(description: "\(path) is a \(type(of: value)), which is not a property-list type (String, number, Bool, Data, Date, array, [String: Any])")
        }
    }

    /// An `NSNumber` the casts above did not take (one built with `NSNumber(value:)`): by its
    /// stored type, so a double stays a double.
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

    // MARK: incoming

    /// A received JSON value (an event's `value`) as the dictionary the app is handed; problems
    /// are returned for the caller to warn about, never hidden.
    static func dictionary(_ json: TraceValue?) -> (value: [String: Any], problems: [String]) {
        guard let json else { return ([:], ["the event has no value"]) }
        let value: MonkeyCValue
        do throws(MonkeyCJSONError) {
            value = try MonkeyCJSON.monkeyCValue(json)
        } catch {
            return ([:], ["the event's value is not a Monkey C value: \(error.description)"])
        }
        var problems: [String] = []
        guard case .dictionary(let pairs) = value else {
            return ([:], ["the event's value is \(describe(value)), not a dictionary"])
        }
        return (dictionary(pairs, problems: &problems), problems)
    }

    private static func dictionary(_ pairs: [MonkeyCPair], problems: inout [String]) -> [String: Any] {
        var out: [String: Any] = [:]
        for pair in pairs {
            let key: String
            if case .string(let text) = pair.key {
                key = text
            } else {
                key = "\(pair.key)"
                problems.append("a received dictionary has a key that is not a string (\(describe(pair.key))); it is given to the app as \"\(key)\"")
            }
            out[key] = any(pair.value, problems: &problems)
        }
        return out
    }

    private static func any(_ value: MonkeyCValue, problems: inout [String]) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let b): return b
        case .int32(let i): return Int(i)
        case .int64(let i): return Int(i)
        case .float32(let f): return f
        case .double(let d): return d
        case .char(let c): return Unicode.Scalar(c).map { String(Character($0)) } ?? String(c)
        case .string(let s): return s
        case .byteArray(let bytes): return Data(bytes)
        case .array(let items): return items.map { any($0, problems: &problems) }
        case .dictionary(let pairs): return dictionary(pairs, problems: &problems)
        }
    }

    private static func describe(_ value: MonkeyCValue) -> String {
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

/// Lets ``Payload`` see through an `Optional` boxed in `Any`, whatever its wrapped type.
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
