import Synchronization

/// A core's or an event's identity in a behaviour trace (`ingest`, `datapoint`, `frame_matched`):
/// an interned name, one machine word that copies without reference counting and compares by
/// identity, written to a trace line as the text it was made from.
///
/// Each integration declares its names once (a `static let` beside its adapter, or a string
/// literal: `let name: TraceName = "datapoint"`), so the engine, the checks, the diff and the
/// correlations move and compare words, not strings: every event carries two names, and a string
/// per name was a reference count per copy (issue 34's profile of the plugin hour).
///
/// Two names made from equal text are the same name, in any thread, for the life of the process:
/// the text is kept in a process-wide table and never released. Names a program declares are few;
/// names read from input (a trace file's `core` and `event`) go through ``init(readFrom:)``, which
/// stops adding to the table at ``inputLimit`` distinct names so that a file of made-up names
/// cannot grow it without bound.
public struct TraceName: Sendable, Hashable, Comparable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The table's entry for this text; it lives as long as the process (``Table`` keeps it), so
    /// holding it unretained is safe and keeps the name a plain word.
    @usableFromInline let entry: Unmanaged<Entry>

    /// The name for `text`, added to the process's table when new. For names a program declares;
    /// text read from input goes through ``init(readFrom:)``.
    public init(_ text: String) {
        entry = Self.table.withLock { $0.entry(for: text, budget: nil)! }
    }

    /// The name for a literal: `let event: TraceName = "datapoint"`.
    public init(stringLiteral text: String) {
        self.init(text)
    }

    /// The name for `text` read from input, or `nil` when it is new and the table already holds
    /// ``inputLimit`` names (then the input is not a trace Tether wrote: its traces have a few
    /// dozen names).
    public init?(readFrom text: String) {
        guard let entry = Self.table.withLock({ $0.entry(for: text, budget: .names) }) else { return nil }
        self.entry = entry
    }

    /// How many distinct names ``init(readFrom:)`` adds to the table before it refuses new text.
    public static let inputLimit = 65_536

    /// The name for a field's text (an ingest data point's source, name or type), interned so
    /// that the events holding it copy and compare words: `nil` when it is new and
    /// ``fieldTextLimit`` field texts have already been added. The caller then keeps the text as
    /// a `String`. Field texts come from captures and traces, so they have a budget of their own:
    /// a capture of made-up point names cannot use up the one trace files' core and event names
    /// are read with.
    public init?(fieldText text: String) {
        guard let entry = Self.table.withLock({ $0.entry(for: text, budget: .fieldTexts) }) else { return nil }
        self.entry = entry
    }

    /// Three field texts interned under one lock (a datapoint's source, name and type, for each
    /// line of a trace read back); `nil` when any of them is refused as ``init(fieldText:)`` would.
    static func fieldTexts(_ a: String, _ b: String, _ c: String) -> (TraceName, TraceName, TraceName)? {
        table.withLock { table in
            guard let a = table.entry(for: a, budget: .fieldTexts), let b = table.entry(for: b, budget: .fieldTexts),
                  let c = table.entry(for: c, budget: .fieldTexts) else { return nil }
            return (TraceName(entry: a), TraceName(entry: b), TraceName(entry: c))
        }
    }

    private init(entry: Unmanaged<Entry>) {
        self.entry = entry
    }

    /// How many distinct texts ``init(fieldText:)`` adds to the table before it refuses new ones.
    /// A plugin names a few dozen entries; a replay of many captures in one process, a few thousand.
    public static let fieldTextLimit = 16_384

    /// The text the name was made from, as a trace line writes it (unquoted, unescaped).
    public var text: String { entry._withUnsafeGuaranteedRef { $0.text } }

    /// The text.
    public var description: String { text }

    /// The name as a JSON string, quotes and escapes included: what a trace line holds.
    var quotedJSON: [UInt8] { entry._withUnsafeGuaranteedRef { $0.quotedJSON } }

    /// Whether writing the text as JSON escapes any of its bytes.
    var needsEscaping: Bool { entry._withUnsafeGuaranteedRef { $0.needsEscaping } }

    /// The same name: one table entry per text, so identity is equality of text.
    @inlinable
    public static func == (lhs: TraceName, rhs: TraceName) -> Bool {
        lhs.entry.toOpaque() == rhs.entry.toOpaque()
    }

    /// Hashes the entry's identity (equal names share one), not the text.
    @inlinable
    public func hash(into hasher: inout Hasher) {
        hasher.combine(entry.toOpaque())
    }

    /// Ordered by text, as `String` orders it, so sorted output reads alphabetically.
    public static func < (lhs: TraceName, rhs: TraceName) -> Bool {
        lhs != rhs && lhs.text < rhs.text
    }

    /// One name's text and what writing it needs, kept for the life of the process.
    @usableFromInline
    final class Entry: Sendable {
        let text: String
        let quotedJSON: [UInt8]
        let needsEscaping: Bool

        init(_ text: String) {
            self.text = text
            var json = TraceJSONBytes()
            json.appendString(text)
            quotedJSON = json.bytes
            needsEscaping = quotedJSON.count != text.utf8.count + 2
        }
    }

    /// Which limit a text read from input is added under (a declared name has none).
    enum Budget {
        /// Core and event names read from a trace (``inputLimit``).
        case names
        /// Field texts (``fieldTextLimit``).
        case fieldTexts
    }

    /// Every name made so far, by text. Entries are never removed: a name holds its entry
    /// unretained.
    struct Table {
        var entries: [String: Entry] = [:]
        /// How many entries each budget may add, and has added.
        let nameLimit: Int
        let fieldTextLimit: Int
        var namesAdded = 0
        var fieldTextsAdded = 0

        init(nameLimit: Int = TraceName.inputLimit, fieldTextLimit: Int = TraceName.fieldTextLimit) {
            self.nameLimit = nameLimit
            self.fieldTextLimit = fieldTextLimit
        }

        /// The entry for `text`, made when new unless `budget` (`nil`: none) has added its limit.
        mutating func entry(for text: String, budget: Budget?) -> Unmanaged<Entry>? {
            if let found = entries[text] { return Unmanaged.passUnretained(found) }
            switch budget {
            case nil: break
            case .names:
                guard namesAdded < nameLimit else { return nil }
                namesAdded += 1
            case .fieldTexts:
                guard fieldTextsAdded < fieldTextLimit else { return nil }
                fieldTextsAdded += 1
            }
            let made = Entry(text)
            entries[text] = made
            return Unmanaged.passUnretained(made)
        }
    }

    private static let table = Mutex(Table())
}
