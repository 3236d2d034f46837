import BehaviourTrace
import MonkeyC

/// Why a JSON value is not a Monkey C value.
public struct MonkeyCJSONError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong.
    public var description: String
}

/// Monkey C values as JSON, in traces and API-call records.
///
/// A JSON integer is an `int32` when it fits, else an `int64`; a non-integer number a `double`;
/// strings, booleans, null, arrays as themselves; an object with string keys a dictionary (keys in
/// sorted order). What JSON cannot say directly is an object with one `$` key: `{"$float32": 1.5}`,
/// `{"$int64": 3}`, `{"$char": 65}`, `{"$bytes": "00ff"}` (hex), and a dictionary whose keys are not
/// all strings `{"$pairs": [[key, value], …]}`.
public enum MonkeyCJSON {
    /// The JSON form of a Monkey C value.
    public static func traceValue(_ value: MonkeyCValue) -> TraceValue {
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int32(let i): return .int(Int64(i))
        case .int64(let i): return Int32(exactly: i) != nil ? .object(["$int64": .int(i)]) : .int(i)
        case .float32(let f): return .object(["$float32": .double(Double(f))])
        case .double(let d): return .double(d)
        case .char(let c): return .object(["$char": .int(Int64(c))])
        case .string(let s): return .string(s)
        case .byteArray(let bytes): return .object(["$bytes": .string(JSONLiteral.hex(bytes))])
        case .array(let items): return .array(items.map(traceValue))
        case .dictionary(let pairs):
            var object: [String: TraceValue] = [:]
            for pair in pairs {
                guard case .string(let key) = pair.key, object[key] == nil, !key.hasPrefix("$") else {
                    return .object(["$pairs": .array(pairs.map { .array([traceValue($0.key), traceValue($0.value)]) })])
                }
                object[key] = traceValue(pair.value)
            }
            return .object(object)
        }
    }

    /// The Monkey C value a JSON value stands for.
    public static func monkeyCValue(_ value: TraceValue, depth: Int = 0) throws(MonkeyCJSONError) -> MonkeyCValue {
        guard depth < 64 else { throw MonkeyCJSONError(description: "nested more than 64 levels deep") }
        switch value {
        case .null: return .null
        case .bool(let b): return .bool(b)
        case .int(let i): return Int32(exactly: i).map { .int32($0) } ?? .int64(i)
        case .double(let d): return .double(d)
        case .string(let s): return .string(s)
        case .array(let items):
            var out: [MonkeyCValue] = []
            for item in items { out.append(try monkeyCValue(item, depth: depth + 1)) }
            return .array(out)
        case .object(let object):
            if object.count == 1, let (key, inner) = object.first, key.hasPrefix("$") {
                switch (key, inner) {
                case ("$float32", .double(let d)): return .float32(try float32(d))
                case ("$float32", .int(let i)): return .float32(Float(i))
                case ("$int64", .int(let i)): return .int64(i)
                case ("$char", .int(let c)) where c >= 0 && c <= Int64(UInt32.max): return .char(UInt32(c))
                case ("$bytes", .string(let hex)):
                    guard let bytes = decodeHex(hex) else { throw MonkeyCJSONError(description: "\"$bytes\" must be hex digits in pairs") }
                    return .byteArray(bytes)
                case ("$pairs", .array(let pairs)):
                    var out: [MonkeyCPair] = []
                    for pair in pairs {
                        guard case .array(let kv) = pair, kv.count == 2 else {
                            throw MonkeyCJSONError(description: "\"$pairs\" must hold [key, value] lists")
                        }
                        out.append(MonkeyCPair(try monkeyCValue(kv[0], depth: depth + 1), try monkeyCValue(kv[1], depth: depth + 1)))
                    }
                    return .dictionary(out)
                default:
                    throw MonkeyCJSONError(description: "unknown or ill-typed special form {\"\(key)\": …}; known: $float32 (number), $int64 (integer), $char (integer), $bytes (hex), $pairs (list of [key, value])")
                }
            }
            var out: [MonkeyCPair] = []
            for key in object.keys.sorted() {
                out.append(MonkeyCPair(.string(key), try monkeyCValue(object[key]!, depth: depth + 1)))
            }
            return .dictionary(out)
        }
    }

    /// `number` as a float32, refused when it does not fit one: a finite number beyond ±3.4028235e+38
    /// would become infinity, a non-zero one below float32's smallest (1.4e-45) zero, each a value
    /// the script never wrote. Infinity and NaN written as such stay what they are.
    static func float32(_ number: Double) throws(MonkeyCJSONError) -> Float {
        let single = Float(number)
        if single.isInfinite, number.isFinite {
            throw MonkeyCJSONError(description: "{\"$float32\": \(number)} is beyond a float32's range (±\(Float.greatestFiniteMagnitude)); write a plain number to send it as a Double")
        }
        if single == 0, number != 0 {
            throw MonkeyCJSONError(description: "{\"$float32\": \(number)} is too small for a float32 (the smallest is \(Float.leastNonzeroMagnitude)) and would become 0; write a plain number to send it as a Double")
        }
        return single
    }

    /// Bytes from hex digits in pairs (either case); `nil` for anything else.
    public static func decodeHex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(digits.count / 2)
        var i = 0
        while i < digits.count {
            guard let hi = nibble(digits[i]), let lo = nibble(digits[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
