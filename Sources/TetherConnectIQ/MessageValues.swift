import MonkeyC

/// Messages between the app's Foundation values and Monkey C values, as the SDK converts them: a
/// message "must be one of NSString, NSNumber, NSNull, NSArray, or NSDictionary; arrays and
/// dictionaries may be nested" (`ConnectIQ.h`). Anything else (`Data`, `Date`, an app's own type)
/// is refused, and the send completes with `Failure_UnsupportedType`, as on the phone.
enum MessageValues {
    /// Why a value cannot be sent: the path to it and its type.
    struct Unsupported: Error, CustomStringConvertible {
        var path: String
        var type: String
        var description: String { "\(path) is a \(type), which a Connect IQ message cannot carry (String, numbers, Bool, NSNull, arrays, dictionaries)" }
    }

    /// The Monkey C value of `value`. Dictionary keys are sorted (string keys by their text, others
    /// by their description) so that a message's bytes do not depend on Swift's per-process hash
    /// seed: two runs of the same app send the same bytes.
    static func monkeyC(_ value: Any, path: String = "message", depth: Int = 0) throws(Unsupported) -> MonkeyCValue {
        guard depth < 32 else { throw Unsupported(path: path, type: "value nested more than 32 levels deep") }
        switch value {
        case is NSNull: return .null
        case let optional as Optional<Any>:
            // An `Any` holding `nil` (an app's `[String: Any?]` flattened).
            guard let inner = optional else { return .null }
            if type(of: inner) == type(of: value) { break }
            return try monkeyC(inner, path: path, depth: depth + 1)
        }
        switch value {
        case let flag as Bool: return .bool(flag)
        case let text as String: return .string(text)
        case let text as Substring: return .string(String(text))
        case let number as Int: return Int32(exactly: number).map { .int32($0) } ?? .int64(Int64(number))
        case let number as Int8: return .int32(Int32(number))
        case let number as Int16: return .int32(Int32(number))
        case let number as Int32: return .int32(number)
        case let number as Int64: return Int32(exactly: number).map { .int32($0) } ?? .int64(number)
        case let number as UInt8: return .int32(Int32(number))
        case let number as UInt16: return .int32(Int32(number))
        case let number as UInt32: return Int32(exactly: number).map { .int32($0) } ?? .int64(Int64(number))
        case let number as UInt: return try unsigned(UInt64(number), path)
        case let number as UInt64: return try unsigned(number, path)
        case let number as Float: return .float32(number)
        case let number as Double: return .double(number)
        case let number as NSNumber: return .double(number.doubleValue)
        case let items as [Any]:
            var out: [MonkeyCValue] = []
            for (index, item) in items.enumerated() { out.append(try monkeyC(item, path: "\(path)[\(index)]", depth: depth + 1)) }
            return .array(out)
        case let dictionary as [String: Any]:
            var pairs: [MonkeyCPair] = []
            for key in dictionary.keys.sorted() {
                pairs.append(MonkeyCPair(.string(key), try monkeyC(dictionary[key]!, path: "\(path)[\"\(key)\"]", depth: depth + 1)))
            }
            return .dictionary(pairs)
        case let dictionary as [AnyHashable: Any]:
            var pairs: [MonkeyCPair] = []
            for key in dictionary.keys.sorted(by: { String(describing: $0) < String(describing: $1) }) {
                let keyValue = try monkeyC(key.base, path: "\(path) key \(key)", depth: depth + 1)
                pairs.append(MonkeyCPair(keyValue, try monkeyC(dictionary[key]!, path: "\(path)[\(key)]", depth: depth + 1)))
            }
            return .dictionary(pairs)
        default:
            throw Unsupported(path: path, type: String(describing: type(of: value)))
        }
    }

    private static func unsigned(_ number: UInt64, _ path: String) throws(Unsupported) -> MonkeyCValue {
        guard let signed = Int64(exactly: number) else { throw Unsupported(path: path, type: "UInt64 beyond Int64.max") }
        return Int32(exactly: signed).map { .int32($0) } ?? .int64(signed)
    }

    /// The Foundation value an app receives for a Monkey C value: `Int` for Number and Long,
    /// `Double` for Float and Double, `String` (a Char as a one-character string), `Bool`,
    /// `NSNull`, `Data` for a ByteArray, `[Any]`, and `[String: Any]` (`[AnyHashable: Any]` when a
    /// key is not a string).
    static func foundation(_ value: MonkeyCValue) -> Any {
        switch value {
        case .null: return NSNull()
        case .bool(let flag): return flag
        case .int32(let number): return Int(number)
        case .int64(let number): return Int(number)
        case .float32(let number): return Double(number)
        case .double(let number): return number
        case .char(let scalar): return Unicode.Scalar(scalar).map { String(Character($0)) } ?? ""
        case .string(let text): return text
        case .byteArray(let bytes): return Data(bytes)
        case .array(let items): return items.map(foundation)
        case .dictionary(let pairs):
            if pairs.allSatisfy({ if case .string = $0.key { true } else { false } }) {
                var out: [String: Any] = [:]
                for pair in pairs { if case .string(let key) = pair.key { out[key] = foundation(pair.value) } }
                return out
            }
            var out: [AnyHashable: Any] = [:]
            for pair in pairs {
                if let key = foundation(pair.key) as? AnyHashable { out[key] = foundation(pair.value) }
            }
            return out
        }
    }
}
