/// The ATT records one frame completed, in order: nearly always exactly one, held inline, so that
/// dissecting a frame makes no array for it (a Multiple Handle Value Notification makes several,
/// and only then an array).
///
/// A collection of ``ATTRecord``, and an array literal: `frame.att.first`, `for record in
/// frame.att` and `frame.att == [record]` read as they would on an array.
public struct ATTRecords: RandomAccessCollection, MutableCollection, Sendable, Hashable, ExpressibleByArrayLiteral {
    private enum Storage: Sendable, Hashable {
        case none
        case one(ATTRecord)
        case several([ATTRecord])
    }

    private var storage: Storage

    /// No records.
    public init() { storage = .none }

    /// One record, inline.
    public init(_ record: ATTRecord) { storage = .one(record) }

    /// The records of `records`, in order.
    public init<S: Sequence>(_ records: S) where S.Element == ATTRecord {
        var iterator = records.makeIterator()
        guard let first = iterator.next() else {
            storage = .none
            return
        }
        guard let second = iterator.next() else {
            storage = .one(first)
            return
        }
        storage = .several([first, second] + IteratorSequence(iterator))
    }

    /// The records of the literal, in order.
    public init(arrayLiteral records: ATTRecord...) { self.init(records) }

    /// 0.
    public var startIndex: Int { 0 }

    /// How many records.
    public var endIndex: Int {
        switch storage {
        case .none: 0
        case .one: 1
        case .several(let records): records.count
        }
    }

    /// The record at `position` (`0..<count`).
    public subscript(position: Int) -> ATTRecord {
        get {
            switch storage {
            case .one(let record) where position == 0: return record
            case .several(let records): return records[position]
            default: preconditionFailure("ATTRecords: index \(position) out of range 0..<\(count)")
            }
        }
        set {
            switch storage {
            case .one where position == 0:
                storage = .one(newValue)
            case .several(var records):
                // Taken out first, so the array is changed in place rather than copied.
                storage = .none
                records[position] = newValue
                storage = .several(records)
            default:
                preconditionFailure("ATTRecords: index \(position) out of range 0..<\(count)")
            }
        }
    }

    /// Appends `record`.
    public mutating func append(_ record: ATTRecord) {
        switch storage {
        case .none: storage = .one(record)
        case .one(let first): storage = .several([first, record])
        case .several(var records):
            storage = .none
            records.append(record)
            storage = .several(records)
        }
    }

    /// Equal when they hold equal records in the same order.
    public static func == (lhs: ATTRecords, rhs: ATTRecords) -> Bool { lhs.elementsEqual(rhs) }

    /// Hashes the records in order, as ``==`` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        for record in self { hasher.combine(record) }
    }
}
