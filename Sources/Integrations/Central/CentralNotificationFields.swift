import BehaviourTrace

/// The fields of a `central` `notification` event, held as the recorded values rather than a
/// dictionary: a notifying peripheral (a heart-rate strap, a sensor streaming samples) sends one
/// per frame, which is the one event of this core written per frame; the value's hex is written
/// only when the line is, or the field read.
///
/// Everything held is written (the notification's capture time is the event's `t_ns`, not a
/// field), so the synthesised equality is that of the line.
struct CentralNotificationFields: TracePayload {
    /// The capture frame it arrived in.
    var frame: Int
    /// The value handle it carried.
    var handle: UInt16
    /// A Handle Value Indication rather than a Notification.
    var isIndication: Bool
    /// Its value.
    var value: [UInt8]

    var fieldCount: Int { 4 }

    /// The field named `key`, answered directly: the CoreBluetooth facade reads a notification's
    /// `handle` and `value` per frame, and a walk of every field would write the value's hex for each.
    func field(_ key: String) -> TraceValue? {
        switch key {
        case "frame": .int(Int64(frame))
        case "handle": .int(Int64(handle))
        case "indication": .bool(isIndication)
        case "value": .string(JSONLiteral.hex(value))
        default: nil
        }
    }

    /// Keys in ascending order: `frame`, `handle`, `indication`, `value`.
    func forEachField(_ body: (String, TraceValue) -> Void) {
        body("frame", .int(Int64(frame)))
        body("handle", .int(Int64(handle)))
        body("indication", .bool(isIndication))
        body("value", .string(JSONLiteral.hex(value)))
    }
}
