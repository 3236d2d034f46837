// The fuzz target compiles this file with JSONBytes' sources into one module (CI/fuzz/run).
#if canImport(JSONBytes)
import JSONBytes
#endif

/// One Motion plugin datagram, parsed and validated (docs/motion-plugin-udp.md, "Messages").
///
/// The JSON reader is hand-written over the datagram's bytes because the live server parses
/// hundreds of thousands of datagrams a second; ``DatagramParser`` adds fast paths for the data
/// messages a plugin sends all the time and falls back on the general reader (``JSONReader``,
/// ``MessageShape``) for everything else, so every rejection and its detail come from one place.
/// It is strict RFC 8259 JSON with one extension the protocol needs: a trailing comma before `]`
/// or `}` (the sample plugin sends one). It never traps: every index is checked against the
/// buffer before it is read.
///
/// A datagram is a unit: if any entry of `d` is bad, the whole datagram is rejected and none of
/// its entries is used, so a sink never holds half of a sample instant.
///
/// Order of checks, so that each datagram gets the most basic reason that applies: UTF-8, then
/// JSON syntax (including duplicate members, which make a message ambiguous), then the message
/// shape (member types, missing members), then per-entry contents in entry order (time, base64,
/// payload length or text encoding).
enum MotionMessage: Sendable, Hashable {
    /// One entry of a data message.
    struct Entry: Sendable, Hashable {
        var name: String
        var type: String
        var payload: [UInt8]
        var value: DataValue
    }

    case data(timeNs: Int64, entries: [Entry])
    case pluginName(String)
    case end
    case legacyV1(timeNs: Int64?, payload: [UInt8])

    /// A refused datagram: the reason and a detail naming the byte offset and what was expected.
    struct Rejection: Error, Sendable, Hashable {
        var reason: RejectionReason
        var detail: String
    }

    /// Parses one datagram. The caller has already checked its size.
    ///
    /// The same answer as ``parseWithGeneralReader(_:texts:)``, by the way ``IngestCore`` takes:
    /// ``DatagramParser``'s fast paths first, the general reader when they step aside.
    static func parse(_ bytes: UnsafeRawBufferPointer) throws(Rejection) -> MotionMessage {
        var parser = DatagramParser()
        try parser.parse(bytes)
        return parser.output.message
    }

    /// Parses one datagram with the general reader alone: UTF-8 check, ``JSONReader`` for the
    /// syntax, ``MessageShape`` for the shape and contents. Every rejection comes from here; the
    /// fast paths of ``DatagramParser`` only ever accept what this accepts, with the same result.
    /// Entry names and types are taken from `texts` when they repeat the previous datagram's (a
    /// plugin sends the same ones every time).
    static func parseWithGeneralReader(_ bytes: UnsafeRawBufferPointer, texts: inout EntryTextCache) throws(Rejection) -> MotionMessage {
        if let bad = UTF8Validation.firstInvalidOffset(bytes) {
            throw Rejection(reason: .notUTF8, detail: "byte \(bad): not valid UTF-8; a datagram is UTF-8 JSON text")
        }
        var reader = JSONReader(bytes)
        let shape = try reader.readMessageShape()
        return try shape.validate(JSONText(bytes: reader.bytes, unescaped: reader.unescaped), texts: &texts)
    }
}
