/// A JSON value inside a trace event. Objects keep their keys sorted when written, so a trace is
/// byte-identical for identical behaviour.
public enum TraceValue: Sendable, Hashable {
    case string(String)
    case int(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case array([TraceValue])
    case object([String: TraceValue])
}

/// One line of a behaviour trace: what a core did, at which virtual instant.
///
/// The trace format is public (see docs/trace-format.md): every line is a JSON object with at
/// least `t_ns` (virtual nanoseconds since the capture's first frame), `core` (`ingest`,
/// `messaging`, `session`) and `event`; the other keys depend on the event.
///
/// Fields shaped like an ingest `datapoint` (exactly `source`, `name`, `type` as strings,
/// `time_ns` as an integer, and `value`) are held inline instead of in a dictionary: they are
/// nearly every event of a plugin replay, and a dictionary per event was most of its cost. So are
/// fields shaped like an ingest `chunk` (exactly `source` as a string, `sequence`, `points` and
/// `bytes` as integers), the next most frequent. The choice depends on the fields alone, but for
/// a datapoint whose texts the name table no longer takes (``TraceName/fieldTextLimit``), which
/// stays in a dictionary: equality, hashing, the digest and the writer treat both forms alike;
/// ``fields`` reads and writes any of them as a dictionary.
public struct TraceEvent: Sendable, Hashable {
    /// Virtual nanoseconds since the capture's first frame.
    public var timeNs: Int64
    /// Which core produced it.
    public var core: TraceName
    /// The event name, e.g. `datapoint`, `rejected`, `stream_start`.
    public var event: TraceName
    /// The fields, in whichever form they take (see the type's comment). Equality and hashing
    /// rely on that form being the canonical one for the fields, so only ``Storage/init(_:)``
    /// and ``init(timeNs:core:event:dataPoint:)`` make it.
    @usableFromInline var storage: Storage

    /// Every other key of the line. Reading it from fields held otherwise than in a dictionary
    /// (an inline `datapoint`, a ``TracePayload``) builds one; ``field(_:)`` reads one key without.
    public var fields: [String: TraceValue] {
        get {
            if case .dictionary(let fields) = storage { return fields }
            var fields = [String: TraceValue](minimumCapacity: storage.count)
            storage.forEachField { key, value in fields[key] = value }
            return fields
        }
        set { storage = Storage(newValue) }
    }

    /// Creates an event; `fields` are every key of the line but `t_ns`, `core` and `event`.
    public init(timeNs: Int64, core: TraceName, event: TraceName, fields: [String: TraceValue] = [:]) {
        self.timeNs = timeNs
        self.core = core
        self.event = event
        self.storage = Storage(fields)
    }

    /// An event whose fields are a chunk's, held inline; inlinable for the reason
    /// ``init(timeNs:core:event:dataPoint:)`` is.
    @inlinable
    package init(timeNs: Int64, core: TraceName, event: TraceName, chunk: ChunkFields) {
        self.timeNs = timeNs
        self.core = core
        self.event = event
        self.storage = .chunk(chunk)
    }

    /// An event whose fields are a datapoint's, held inline. Inlinable, as is
    /// ``DataPointFields/init(source:name:type:timeNs:value:)``: built by a call into this module,
    /// the event was returned in pieces and copied whole twice more on its way to the caller's
    /// closure, each copy stalling on the stores of the one before (a tenth of a plugin replay).
    @inlinable
    package init(timeNs: Int64, core: TraceName, event: TraceName, dataPoint: DataPointFields) {
        self.timeNs = timeNs
        self.core = core
        self.event = event
        self.storage = .dataPoint(dataPoint)
    }

    /// An event whose fields are `payload`'s (``TracePayload``): written, compared and digested
    /// as the same fields in a dictionary would be.
    public init(timeNs: Int64, core: TraceName, event: TraceName, payload: some TracePayload) {
        self.timeNs = timeNs
        self.core = core
        self.event = event
        self.storage = .payload(payload)
    }

    /// The value of one field, `nil` when the event has none of that name; the same as
    /// `fields[key]` without building the dictionary of an inline `datapoint`.
    public func field(_ key: String) -> TraceValue? {
        storage.field(key)
    }

    /// Whether `self` and `other` have equal fields (their times, cores and event names aside).
    public func hasSameFields(as other: TraceEvent) -> Bool {
        storage == other.storage
    }

    /// The forms of an event's fields.
    ///
    /// A dictionary holds a chunk's fields never, and a datapoint's only when its texts could not
    /// be interned (``init(_:)`` makes them inline otherwise); any form may hold the same fields
    /// as a ``TracePayload``: equality and hashing are therefore over the fields, whatever holds them.
    @usableFromInline
    enum Storage: Sendable, Hashable {
        /// Any fields that are not shaped like a datapoint's or a chunk's, and a datapoint's whose
        /// texts the name table did not take.
        case dictionary([String: TraceValue])
        /// Exactly a datapoint's five fields, its texts interned.
        case dataPoint(DataPointFields)
        /// Exactly a chunk's four fields.
        case chunk(ChunkFields)
        /// A module's own type for its fields.
        case payload(any TracePayload)

        /// How many fields.
        var count: Int {
            switch self {
            case .dictionary(let fields): return fields.count
            case .dataPoint(let point): return point.fieldCount
            case .chunk(let chunk): return chunk.fieldCount
            case .payload(let payload): return payload.fieldCount
            }
        }

        /// The value of field `key`.
        func field(_ key: String) -> TraceValue? {
            switch self {
            case .dictionary(let fields): return fields[key]
            case .dataPoint(let point): return point[key]
            case .chunk(let chunk): return chunk[key]
            case .payload(let payload): return payload.field(key)
            }
        }

        /// Every field, keys in ascending order.
        func forEachField(_ body: (String, TraceValue) -> Void) {
            switch self {
            case .dictionary(let fields):
                for key in fields.keys.sorted() { body(key, fields[key]!) }
            case .dataPoint(let point): point.forEachField(body)
            case .chunk(let chunk): chunk.forEachField(body)
            case .payload(let payload): payload.forEachField(body)
            }
        }

        @usableFromInline
        static func == (lhs: Storage, rhs: Storage) -> Bool {
            switch (lhs, rhs) {
            case (.dictionary(let a), .dictionary(let b)): return a == b
            case (.dataPoint(let a), .dataPoint(let b)): return a == b
            case (.chunk(let a), .chunk(let b)): return a == b
            case (.payload(let a), .payload(let b)) where type(of: a) == type(of: b): return a.isEqual(to: b)
            default:
                // Two forms: the same fields held differently (a payload against the dictionary a
                // baseline's line parses to), compared key by key.
                guard lhs.count == rhs.count else { return false }
                var same = true
                lhs.forEachField { key, value in
                    if same, rhs.field(key) != value { same = false }
                }
                return same
            }
        }

        /// The fields in key order, so that equal fields hash alike in any form.
        @usableFromInline
        func hash(into hasher: inout Hasher) {
            hasher.combine(count)
            forEachField { key, value in
                hasher.combine(key)
                hasher.combine(value)
            }
        }

        /// The canonical form of `fields`: inline when they are shaped like a datapoint's or a chunk's.
        init(_ fields: [String: TraceValue]) {
            if fields.count == ChunkFields.keys.count,
               case .string(let source)? = fields["source"],
               case .int(let sequence)? = fields["sequence"],
               case .int(let points)? = fields["points"],
               case .int(let bytes)? = fields["bytes"] {
                self = .chunk(ChunkFields(source: source, sequence: sequence, points: points, bytes: bytes))
                return
            }
            if let shape = DataPointFields.shape(of: fields),
               let point = DataPointFields(interningSource: shape.source, name: shape.name, type: shape.type, timeNs: shape.timeNs, value: shape.value) {
                self = .dataPoint(point)
            } else {
                self = .dictionary(fields)
            }
        }
    }
}

/// The fields of an ingest `datapoint` event with a `value`: `source`, `name`, `type`,
/// `time_ns` and `value`, held without a dictionary. The three texts are interned
/// (``TraceName/init(fieldText:)``): a plugin replay makes nearly every event one of these, and
/// three strings an event were six reference counts as it was made and dropped.
@usableFromInline
package struct DataPointFields: Sendable, Hashable {
    /// The keys, in the order a trace line writes them (sorted).
    static let keys = ["name", "source", "time_ns", "type", "value"]

    @usableFromInline var source: TraceName
    @usableFromInline var name: TraceName
    @usableFromInline var type: TraceName
    @usableFromInline var timeNs: Int64
    @usableFromInline var value: TraceValue

    /// The five fields, the texts already interned (the ingest integration keeps its entries'
    /// names, so a point costs no look-up).
    @inlinable
    package init(source: TraceName, name: TraceName, type: TraceName, timeNs: Int64, value: TraceValue) {
        self.source = source
        self.name = name
        self.type = type
        self.timeNs = timeNs
        self.value = value
    }

    /// The five fields, the texts interned here; `nil` when the table takes no more field texts
    /// (the fields then stay in a dictionary, which every reader treats alike).
    package init?(interningSource source: String, name: String, type: String, timeNs: Int64, value: TraceValue) {
        guard let (source, name, type) = TraceName.fieldTexts(source, name, type) else { return nil }
        self.init(source: source, name: name, type: type, timeNs: timeNs, value: value)
    }

    /// The value of the field named `key`, as the dictionary form would have it.
    subscript(key: String) -> TraceValue? {
        switch key {
        case "source": return .string(source.text)
        case "name": return .string(name.text)
        case "type": return .string(type.text)
        case "time_ns": return .int(timeNs)
        case "value": return value
        default: return nil
        }
    }

    /// The texts and values of `fields` when they are exactly a datapoint's, else `nil`: the
    /// shape ``TraceEvent`` holds inline when it can intern the texts.
    static func shape(of fields: [String: TraceValue])
        -> (source: String, name: String, type: String, timeNs: Int64, value: TraceValue)? {
        guard fields.count == keys.count,
              case .string(let source)? = fields["source"],
              case .string(let name)? = fields["name"],
              case .string(let type)? = fields["type"],
              case .int(let timeNs)? = fields["time_ns"],
              let value = fields["value"] else { return nil }
        return (source, name, type, timeNs, value)
    }
}

extension DataPointFields {
    /// The fields of `members` when they are exactly a datapoint's (keys distinct, as a parsed
    /// line's are) and their texts could be interned, else `nil`.
    init?(_ members: [(key: String, value: TraceValue)]) {
        guard members.count == Self.keys.count else { return nil }
        var source: String?, name: String?, type: String?, timeNs: Int64?, value: TraceValue?
        for member in members {
            switch (member.key, member.value) {
            case ("source", .string(let text)): source = text
            case ("name", .string(let text)): name = text
            case ("type", .string(let text)): type = text
            case ("time_ns", .int(let ns)): timeNs = ns
            case ("value", let any): value = any
            default: return nil
            }
        }
        guard let source, let name, let type, let timeNs, let value else { return nil }
        self.init(interningSource: source, name: name, type: type, timeNs: timeNs, value: value)
    }
}

/// The fields of an ingest `chunk` event: `source`, `sequence`, `points` and `bytes`, held
/// without a dictionary (one per chunk, a copy of a template, was most of a chunk event's cost).
@usableFromInline
package struct ChunkFields: Sendable, Hashable {
    /// The keys, in the order a trace line writes them (sorted).
    static let keys = ["bytes", "points", "sequence", "source"]

    @usableFromInline var source: String
    @usableFromInline var sequence: Int64
    @usableFromInline var points: Int64
    @usableFromInline var bytes: Int64

    /// The four fields (the ingest integration makes them straight from its core's chunk).
    @inlinable
    package init(source: String, sequence: Int64, points: Int64, bytes: Int64) {
        self.source = source
        self.sequence = sequence
        self.points = points
        self.bytes = bytes
    }

    /// The value of the field named `key`, as the dictionary form would have it.
    subscript(key: String) -> TraceValue? {
        switch key {
        case "source": return .string(source)
        case "sequence": return .int(sequence)
        case "points": return .int(points)
        case "bytes": return .int(bytes)
        default: return nil
        }
    }

}
