import BehaviourTrace
import Foundation
import MonkeyC
import MonkeyCFoundation
import MonkeyCTrace

/// Why a `[String: Any]` cannot travel: the first value that is not a property-list type, by
/// its path in the dictionary.
struct PayloadError: Error, Sendable, CustomStringConvertible {
    /// `payload["a"][2] is a Foo, which cannot travel (…)`.
    var description: String

    /// The framework's error for it.
    var wcError: WCError { WCError(.payloadUnsupportedTypes, detail: description) }
}

/// WatchConnectivity payloads (property-list dictionaries as `[String: Any]`) to and from the
/// Monkey C values SessionCore carries: ``FoundationValues`` with the property-list rules (no
/// null, `Data` and `Date` too, `String` keys only), as the framework refuses what is not a
/// property list.
enum Payload {
    /// The dictionary as a Monkey C dictionary, keys in sorted order so the record does not
    /// depend on the process's hash seed.
    static func monkeyC(_ dictionary: [String: Any]) throws(PayloadError) -> MonkeyCValue {
        do throws(UnsupportedValue) {
            return try FoundationValues.monkeyC(dictionary, rules: .propertyList, path: "payload")
        } catch {
            throw PayloadError(description: error.description)
        }
    }

    /// The dictionary as the JSON value a record carries.
    static func traceValue(_ dictionary: [String: Any]) throws(PayloadError) -> TraceValue {
        MonkeyCJSON.traceValue(try monkeyC(dictionary))
    }

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
        guard case .dictionary(let pairs) = value else {
            return ([:], ["the event's value is \(FoundationValues.describe(value)), not a dictionary"])
        }
        var problems: [String] = []
        let dictionary = FoundationValues.dictionary(pairs, rules: .propertyList, problems: &problems) as? [String: Any] ?? [:]
        return (dictionary, problems)
    }
}
