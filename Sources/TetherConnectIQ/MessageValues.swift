import MonkeyC
import MonkeyCFoundation

/// Messages between the app's Foundation values and Monkey C values, as the SDK converts them:
/// ``FoundationValues`` with the Connect IQ rules. A message "must be one of NSString, NSNumber,
/// NSNull, NSArray, or NSDictionary; arrays and dictionaries may be nested" (`ConnectIQ.h`):
/// anything else (`Data`, `Date`, an app's own type) is refused, and the send completes with
/// `Failure_UnsupportedType`, as on the phone.
enum MessageValues {
    /// The Monkey C value of `value`.
    static func monkeyC(_ value: Any) throws(UnsupportedValue) -> MonkeyCValue {
        try FoundationValues.monkeyC(value, rules: .connectIQ, path: "message")
    }

    /// The Foundation value an app receives for a Monkey C value, and what could not be handed
    /// over as it came.
    static func foundation(_ value: MonkeyCValue) -> (value: Any, problems: [String]) {
        var problems: [String] = []
        let converted = FoundationValues.foundation(value, rules: .connectIQ, problems: &problems)
        return (converted, problems)
    }
}
