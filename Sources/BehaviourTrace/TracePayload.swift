/// The fields of a trace event held as a value of the emitting module's own type, instead of a
/// dictionary: a module that writes one kind of event many times declares its fields once, as a
/// struct, and builds each event without hashing a key or allocating a dictionary.
///
/// The trace does not change: ``TraceJSONWriter`` writes a payload's fields as it writes the same
/// fields held in a dictionary (keys sorted), and an event with a payload equals, digests and
/// hashes as the event with the same fields in a dictionary (a baseline read back from its file
/// holds dictionaries). ``TraceEvent/fields`` and ``TraceEvent/field(_:)`` read any payload.
///
/// ```swift
/// struct FrameMatched: TracePayload {
///     var device: String
///     var frame: Int64
///     var fieldCount: Int { 2 }
///     func field(_ key: String) -> TraceValue? {
///         switch key {
///         case "device": .string(device)
///         case "frame": .int(frame)
///         default: nil
///         }
///     }
///     func forEachField(_ body: (String, TraceValue) -> Void) {
///         body("device", .string(device))
///         body("frame", .int(frame))
///     }
/// }
/// let event = TraceEvent(timeNs: 0, core: "messaging", event: "frame_matched",
///                        payload: FrameMatched(device: "fenix", frame: 12))
/// ```
public protocol TracePayload: Sendable, Hashable {
    /// How many fields ``forEachField(_:)`` gives.
    var fieldCount: Int { get }
    /// The value of the field named `key`; `nil` when this value has no field of that name.
    func field(_ key: String) -> TraceValue?
    /// Calls `body` with every field, keys in ascending `String` order (the order a trace line
    /// writes them). A key must not be `t_ns`, `core` or `event`, and must not repeat.
    func forEachField(_ body: (String, TraceValue) -> Void)
}

extension TracePayload {
    /// Whether `other` is a value of this type equal to this one.
    func isEqual(to other: any TracePayload) -> Bool {
        guard let other = other as? Self else { return false }
        return self == other
    }

}

extension DataPointFields: TracePayload {
    @usableFromInline package var fieldCount: Int { Self.keys.count }

    @usableFromInline package func field(_ key: String) -> TraceValue? { self[key] }

    @usableFromInline package func forEachField(_ body: (String, TraceValue) -> Void) {
        body("name", .string(name))
        body("source", .string(source))
        body("time_ns", .int(timeNs))
        body("type", .string(type))
        body("value", value)
    }
}

extension ChunkFields: TracePayload {
    @usableFromInline package var fieldCount: Int { Self.keys.count }

    @usableFromInline package func field(_ key: String) -> TraceValue? { self[key] }

    @usableFromInline package func forEachField(_ body: (String, TraceValue) -> Void) {
        body("bytes", .int(bytes))
        body("points", .int(points))
        body("sequence", .int(sequence))
        body("source", .string(source))
    }
}
