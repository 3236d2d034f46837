/// The text a ``JSONString`` points into: the datagram, and the unescaped bytes of the strings
/// that had escapes (all of one datagram's in one buffer).
struct JSONText {
    let bytes: UnsafeRawBufferPointer
    let unescaped: [UInt8]
}

/// A string value as a byte range: of the datagram when it has no escapes (the common case, no
/// copy), else of the reader's unescaped bytes. Plain data, so the shapes that hold it are copied
/// without reference counting on the hot path.
enum JSONString: Sendable, Hashable {
    case raw(Range<Int>)
    case unescaped(Range<Int>)

    func withBytes<R>(in buffer: JSONText, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        switch self {
        case .raw(let range): return body(UnsafeRawBufferPointer(rebasing: buffer.bytes[range]))
        case .unescaped(let range): return buffer.unescaped.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[range])) }
        }
    }

    /// The string quoted for a rejection detail, cut to 40 characters and with control characters
    /// escaped: it is sender-controlled text going into logs.
    func excerpt(in buffer: JSONText) -> String {
        let text = string(in: buffer)
        let head = text.prefix(40).debugDescription
        return text.count > 40 ? head + "…" : head
    }

    func string(in buffer: JSONText) -> String {
        // The datagram was checked to be UTF-8 and unescaping writes valid UTF-8, so decoding
        // cannot substitute anything.
        withBytes(in: buffer) { String(decoding: $0, as: UTF8.self) }
    }
}
