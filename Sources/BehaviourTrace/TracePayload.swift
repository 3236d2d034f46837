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
///     func forEachField(_ body: (String, TraceValue) -> Void) {
///         body("device", .string(device))
///         body("frame", .int(frame))
///     }
/// }
/// let event = TraceEvent(timeNs: 0, core: "messaging", event: "frame_matched",
///                        payload: FrameMatched(device: "fenix", frame: 12))
/// ```
///
/// Only ``forEachField(_:)`` must be written: ``fieldCount`` and ``field(_:)`` have defaults that
/// call it, which a payload written very often (a datapoint) replaces with direct answers.
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

    /// How many fields ``forEachField(_:)`` gives, counted by calling it: a payload that writes
    /// many events may say it directly.
    public var fieldCount: Int {
        var count = 0
        forEachField { _, _ in count += 1 }
        return count
    }

    /// The field named `key`, found by calling ``forEachField(_:)``: a payload read often by
    /// name may look it up directly.
    public func field(_ key: String) -> TraceValue? {
        var found: TraceValue?
        forEachField { name, value in
            if found == nil, name == key { found = value }
        }
        return found
    }

    /// Whether `self` and `other` write the same fields: for a payload whose `==` must hold
    /// exactly when two events' lines are the same, because it keeps something no field writes
    /// (a deadline on another clock) or writes two of its values alike (two number types that
    /// are both a JSON integer). ``TraceEvent``'s equality and hashing assume that of a payload.
    public func writesSameFields(as other: Self) -> Bool {
        var left: [(String, TraceValue)] = []
        left.reserveCapacity(fieldCount)
        forEachField { left.append(($0, $1)) }
        var index = 0, same = true
        other.forEachField { key, value in
            guard same else { return }
            if index < left.count, left[index].0 == key, left[index].1 == value { index += 1 } else { same = false }
        }
        return same && index == left.count
    }

    /// Hashes the fields as they are written: the counterpart of ``writesSameFields(as:)``.
    public func hashWrittenFields(into hasher: inout Hasher) {
        forEachField { key, value in
            hasher.combine(key)
            hasher.combine(value)
        }
    }
}

/// A payload whose equality and hash are those of the fields it writes
/// (``TracePayload/writesSameFields(as:)``, ``TracePayload/hashWrittenFields(into:)``), not of the
/// values it holds: one that holds more than its line writes (a deadline on another clock, a
/// service's characteristics) conforms to this instead of writing `==` and `hash(into:)` itself,
/// so two events whose lines are the same compare and hash alike.
public protocol TracePayloadComparedByWrittenFields: TracePayload {}

extension TracePayloadComparedByWrittenFields {
    /// Whether both write the same fields.
    public static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.writesSameFields(as: rhs)
    }

    /// Hashes the fields as they are written.
    public func hash(into hasher: inout Hasher) {
        hashWrittenFields(into: &hasher)
    }
}

extension DataPointFields: TracePayload {
    @usableFromInline package var fieldCount: Int { Self.keys.count }

    @usableFromInline package func field(_ key: String) -> TraceValue? { self[key] }

    @usableFromInline package func forEachField(_ body: (String, TraceValue) -> Void) {
        body("name", .string(name.text))
        body("source", .string(source.text))
        body("time_ns", .int(timeNs))
        body("type", .string(type.text))
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
