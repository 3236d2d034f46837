/// Why some bytes could not be dissected: the layer, where in the frame, what the layer expected and
/// what it found. Dissectors return this as a value (it ends up in ``DissectedFrame/problem``); it is
/// never thrown across a frame (it conforms to `Error` only to ride in `Result`), because one bad frame must not stop a capture from being read.
struct DissectionProblem: Error, Sendable, Hashable, CustomStringConvertible {
    /// The protocol layer that refused the bytes, e.g. `IPv4` or `ACL`.
    var layer: String
    /// Byte offset within the frame (or within `context`, when that is set).
    var offset: Int
    /// What the layer needed there.
    var expected: String
    /// What was there instead.
    var found: String
    /// Set when the offset is not within the frame itself, e.g. "the L2CAP PDU reassembled from
    /// ACL fragments".
    var context: String?

    init(layer: String, offset: Int, expected: String, found: String, context: String? = nil) {
        self.layer = layer
        self.offset = offset
        self.expected = expected
        self.found = found
        self.context = context
    }

    var description: String {
        let place = context.map { "offset \(offset) of \($0)" } ?? "frame offset \(offset)"
        return "\(layer): at \(place): expected \(expected); found \(found)"
    }

    /// The usual case: a header or field runs past the captured bytes.
    static func short(_ layer: String, at offset: Int, need: Int, what: String, have: Int, context: String? = nil) -> DissectionProblem {
        DissectionProblem(
            layer: layer, offset: offset, expected: "\(need) bytes of \(what)",
            found: "only \(max(have, 0)) bytes left", context: context)
    }
}
