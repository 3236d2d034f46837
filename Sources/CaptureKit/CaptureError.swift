/// A capture file Tether cannot read past. Every case names the file, the byte offset, the block or
/// record number (1-based) when there is one, what was expected and what was found; its
/// `description` adds what to do next.
public struct CaptureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, for callers that react differently to each.
    public enum Kind: Sendable, Hashable {
        /// The first bytes match no format CaptureKit reads.
        case unrecognizedFormat
        /// A header field or length is impossible (for example a block length below its minimum).
        case malformed
        /// A link type CaptureKit cannot represent (for example a btsnoop datalink other than
        /// 1001, 1002, 2001).
        case unsupportedLinkType
        /// A comment or name option that is not valid UTF-8.
        case invalidText
        /// A frame names an interface the file never described.
        case unknownInterface
        /// The operating system refused to open, read or write the file.
        case io
        /// A writer was used wrongly (for example a frame on an interface that was never added).
        case misuse
    }
    /// What went wrong.
    public var kind: Kind
    /// The file, as given (or `<memory>`).
    public var file: String
    /// Byte offset in the file where the bad data starts.
    public var offset: UInt64
    /// The block (pcapng) or record (other formats) number, 1-based, when there is one.
    public var recordNumber: Int?
    /// What the reader expected to find there.
    public var expected: String
    /// What it found.
    public var found: String
    /// What the user can do about it.
    public var hint: String

    /// An error; `hint` should say what the user can do next.
    public init(kind: Kind, file: String, offset: UInt64, recordNumber: Int? = nil, expected: String, found: String, hint: String) {
        self.kind = kind
        self.file = file
        self.offset = offset
        self.recordNumber = recordNumber
        self.expected = expected
        self.found = found
        self.hint = hint
    }

    /// One line: where, what was expected, what was found, and the hint.
    public var description: String {
        var where_ = "\(file): offset \(offset)"
        if let recordNumber { where_ += " (record \(recordNumber))" }
        return "\(where_): expected \(expected), found \(found). \(hint)"
    }
}
