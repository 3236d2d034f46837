import ReplayKit
import BehaviourTrace

/// Hand-written JSON for output that is streamed frame by frame: Foundation's encoder needs the
/// whole value in memory, and `inspect --json --frames` must run in constant memory.
enum JSONText {
    /// A JSON string literal, escaped as traces escape them.
    static func string(_ text: String) -> String { JSONLiteral.string(text) }

    /// A JSON string literal or `null`.
    static func string(_ text: String?) -> String { text.map { string($0) } ?? "null" }

    /// An array of strings.
    static func strings(_ texts: [String]) -> String { JSONLiteral.strings(texts) }

    /// An object from already-encoded values, keys in the given order (so output is stable).
    static func object(_ members: [(String, String)]) -> String { JSONLiteral.object(members) }

    /// Lower-case hex of bytes, no separators, as traces write opaque bytes.
    static func hex<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 { JSONLiteral.hex(Array(bytes)) }
}
