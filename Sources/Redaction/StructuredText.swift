import JSONBytes

/// JSON text as redaction reads it: where each string is, and whether it is an object key or a
/// value (and under which key). A lenient scanner, not a parser: it never fails and never traps,
/// reads JSON Lines (each line starts afresh) and plain JSON alike, and gives bytes that are not
/// JSON as whatever strings they happen to spell.
enum JSONText {
    /// One string of the text.
    struct StringToken: Sendable, Hashable {
        /// The string's raw bytes, inside the quotes (escapes as written).
        var range: Range<Int>
        /// Whether the string is an object's key.
        var isKey: Bool
        /// For a value: the key of the member that holds it (for an array's element, the key of
        /// the member holding the array); nil at the top level.
        var key: String?
    }

    private struct Container {
        var isObject: Bool
        /// The key the container itself is held under.
        var heldUnder: String?
        var expectKey: Bool
        var lastKey: String?
    }

    /// Every string of `bytes`, in order.
    static func strings(in bytes: [UInt8]) -> [StringToken] {
        var tokens: [StringToken] = []
        var stack: [Container] = []
        var i = 0
        func valueKey() -> String? {
            guard let top = stack.last else { return nil }
            return top.isObject ? top.lastKey : top.heldUnder
        }
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "{"):
                stack.append(Container(isObject: true, heldUnder: valueKey(), expectKey: true, lastKey: nil))
            case UInt8(ascii: "["):
                stack.append(Container(isObject: false, heldUnder: valueKey(), expectKey: false, lastKey: nil))
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                if !stack.isEmpty { stack.removeLast() }
            case UInt8(ascii: ","):
                if let top = stack.indices.last, stack[top].isObject { stack[top].expectKey = true }
            case UInt8(ascii: ":"):
                if let top = stack.indices.last, stack[top].isObject { stack[top].expectKey = false }
            case 0x0A:
                // JSON Lines: every line is a document of its own.
                stack.removeAll()
            case UInt8(ascii: "\""):
                let start = i + 1
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: "\""), bytes[end] != 0x0A {
                    end += bytes[end] == UInt8(ascii: "\\") ? 2 : 1
                }
                end = min(end, bytes.count)
                if let top = stack.indices.last, stack[top].isObject, stack[top].expectKey {
                    tokens.append(StringToken(range: start..<end, isKey: true, key: nil))
                    let raw = bytes[start..<end]
                    stack[top].lastKey = raw.contains(UInt8(ascii: "\\"))
                        ? String(decoding: decode(raw) ?? Array(raw), as: UTF8.self) : String(decoding: raw, as: UTF8.self)
                } else {
                    tokens.append(StringToken(range: start..<end, isKey: false, key: valueKey()))
                }
                // Stay on a newline that ended an unterminated string, so the next line starts afresh.
                i = end < bytes.count && bytes[end] == 0x0A ? end : end + 1
                continue
            default:
                break
            }
            i += 1
        }
        return tokens
    }

    /// The string a JSON string's raw bytes (without quotes) stand for, or nil if an escape is
    /// malformed (``JSONStringEscaping/unescape(_:)``).
    static func decode(_ raw: ArraySlice<UInt8>) -> [UInt8]? { JSONStringEscaping.unescape(raw) }

    /// `bytes` escaped as a JSON string's contents, as Tether writes them (``JSONStringEscaping``).
    static func escape(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        JSONStringEscaping.appendContents(bytes, to: &out)
        return out
    }
}

/// YAML text as redaction reads it: where each mapping key, scalar value and comment is, and the
/// keys above each value. A lenient line scanner for block-style YAML as Tether writes manifests
/// (flow collections are read as one value): it never fails and never traps, and a line it cannot
/// place is read as a value, so the last search looks at it rather than passing it by.
enum YAMLText {
    /// How a scalar is written.
    enum Style: Sendable, Hashable {
        case plain, singleQuoted, doubleQuoted, block, flow
    }

    /// One scalar value, or one line of a scalar written over several lines.
    struct Scalar: Sendable, Hashable {
        /// The value's bytes on this line, inside its quotes.
        var range: Range<Int>
        var style: Style
        /// The keys from the top of the document to this value; the last is the value's own key
        /// (for an item of a sequence, the key holding the sequence).
        var path: [String]
        /// Whether `range` is the whole value (a scalar on one line).
        var isWhole: Bool
        /// Which block mapping holds the value's key: values of sibling keys share it (an
        /// expectation's `field` and `value`).
        var mapping: Int = 0

        /// The value's own key.
        var key: String? { path.last }
        /// The key above the value's own key.
        var parent: String? { path.count >= 2 ? path[path.count - 2] : nil }
    }

    /// What a text holds.
    struct Document: Sendable {
        var keys: [Range<Int>] = []
        var scalars: [Scalar] = []
        var comments: [Range<Int>] = []
    }

    /// Scans `bytes`.
    static func scan(_ bytes: [UInt8]) -> Document {
        var document = Document()
        var stack: [(indent: Int, key: String, mapping: Int)] = []
        var mappings = 0
        // A scalar that may continue on more indented lines: its key's column, style, path, mapping.
        var open: (indent: Int, style: Style, path: [String], closed: Bool, mapping: Int)?
        var lineStart = 0
        while lineStart <= bytes.count {
            var lineEnd = lineStart
            while lineEnd < bytes.count, bytes[lineEnd] != 0x0A { lineEnd += 1 }
            var contentEnd = lineEnd
            if contentEnd > lineStart, bytes[contentEnd - 1] == 0x0D { contentEnd -= 1 }
            defer { lineStart = lineEnd + 1 }
            var indent = 0
            while lineStart + indent < contentEnd, bytes[lineStart + indent] == UInt8(ascii: " ") { indent += 1 }
            let first = lineStart + indent
            if first >= contentEnd {
                if lineEnd >= bytes.count { break }
                continue
            }
            if let scalar = open {
                let quotedOpen = (scalar.style == .singleQuoted || scalar.style == .doubleQuoted) && !scalar.closed
                if quotedOpen || indent > scalar.indent {
                    var end = contentEnd
                    var closed = scalar.closed
                    if quotedOpen, let close = closingQuote(bytes, from: first, to: contentEnd, style: scalar.style) {
                        end = close
                        closed = true
                    } else if scalar.style == .plain {
                        end = plainEnd(bytes, from: first, to: contentEnd)
                    }
                    document.scalars.append(Scalar(range: first..<end, style: scalar.style, path: scalar.path, isWhole: false, mapping: scalar.mapping))
                    open = (scalar.indent, scalar.style, scalar.path, closed, scalar.mapping)
                    if lineEnd >= bytes.count { break }
                    continue
                }
                open = nil
            }
            if bytes[first] == UInt8(ascii: "#") {
                document.comments.append(first..<contentEnd)
                if lineEnd >= bytes.count { break }
                continue
            }
            if contentEnd - first >= 3, bytes[first..<(first + 3)].elementsEqual("---".utf8) || bytes[first..<(first + 3)].elementsEqual("...".utf8) {
                if lineEnd >= bytes.count { break }
                continue
            }
            // Sequence dashes: each `- ` opens an item whose keys stand two columns further in.
            var at = first
            var column = indent
            var newItem = false
            while at < contentEnd, bytes[at] == UInt8(ascii: "-"), at + 1 == contentEnd || bytes[at + 1] == UInt8(ascii: " ") {
                while let last = stack.last, last.indent > column { stack.removeLast() }
                at += 1
                column += 1
                while at < contentEnd, bytes[at] == UInt8(ascii: " ") { at += 1; column += 1 }
                newItem = true
            }
            guard at < contentEnd else {
                if lineEnd >= bytes.count { break }
                continue
            }
            var valueStart = at
            var path = stack.map(\.key)
            var mapping = stack.last?.mapping ?? 0
            if let (keyRange, key, after) = mappingKey(bytes, from: at, to: contentEnd) {
                var sibling: Int?
                while let last = stack.last, last.indent >= column {
                    if last.indent == column { sibling = last.mapping }
                    stack.removeLast()
                }
                if newItem || sibling == nil {
                    mappings += 1
                    mapping = mappings
                } else if let sibling {
                    mapping = sibling
                }
                stack.append((column, key, mapping))
                path = stack.map(\.key)
                document.keys.append(keyRange)
                valueStart = after
                while valueStart < contentEnd, bytes[valueStart] == UInt8(ascii: " ") { valueStart += 1 }
            }
            let keyColumn = column
            guard valueStart < contentEnd else {
                if lineEnd >= bytes.count { break }
                continue
            }
            switch bytes[valueStart] {
            case UInt8(ascii: "#"):
                document.comments.append(valueStart..<contentEnd)
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                let style: Style = bytes[valueStart] == UInt8(ascii: "'") ? .singleQuoted : .doubleQuoted
                if let close = closingQuote(bytes, from: valueStart + 1, to: contentEnd, style: style) {
                    document.scalars.append(Scalar(range: (valueStart + 1)..<close, style: style, path: path, isWhole: true, mapping: mapping))
                    comment(bytes, after: close + 1, to: contentEnd, into: &document)
                    open = (keyColumn, style, path, true, mapping)
                } else {
                    document.scalars.append(Scalar(range: (valueStart + 1)..<contentEnd, style: style, path: path, isWhole: false, mapping: mapping))
                    open = (keyColumn, style, path, false, mapping)
                }
            case UInt8(ascii: "|"), UInt8(ascii: ">"):
                comment(bytes, after: valueStart, to: contentEnd, into: &document)
                open = (keyColumn, .block, path, true, mapping)
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                document.scalars.append(Scalar(range: valueStart..<contentEnd, style: .flow, path: path, isWhole: true, mapping: mapping))
                open = (keyColumn, .flow, path, true, mapping)
            default:
                let end = plainEnd(bytes, from: valueStart, to: contentEnd)
                document.scalars.append(Scalar(range: valueStart..<end, style: .plain, path: path, isWhole: true, mapping: mapping))
                comment(bytes, after: end, to: contentEnd, into: &document)
                open = (keyColumn, .plain, path, true, mapping)
            }
            if lineEnd >= bytes.count { break }
        }
        // A value written over several lines is not whole on any one of them.
        for index in document.scalars.indices.dropFirst() where !document.scalars[index].isWhole {
            let previous = index - 1
            if document.scalars[previous].path == document.scalars[index].path { document.scalars[previous].isWhole = false }
        }
        return document
    }

    /// For each mapping, the text of its `key` scalar (an expectation's `field`), decoded.
    static func values(of key: String, in document: Document, bytes: [UInt8]) -> [Int: String] {
        var result: [Int: String] = [:]
        for scalar in document.scalars where scalar.isWhole && scalar.key == key {
            if let text = decode(bytes[scalar.range], style: scalar.style) { result[scalar.mapping] = String(decoding: text, as: UTF8.self) }
        }
        return result
    }

    /// A plain mapping key at `at` (`key: …` or `key:` at the end of the line, or a quoted key):
    /// its range, text and where its value starts.
    private static func mappingKey(_ b: [UInt8], from at: Int, to end: Int) -> (Range<Int>, String, Int)? {
        let first = b[at]
        if first == UInt8(ascii: "'") || first == UInt8(ascii: "\"") {
            let style: Style = first == UInt8(ascii: "'") ? .singleQuoted : .doubleQuoted
            guard let close = closingQuote(b, from: at + 1, to: end, style: style), close + 1 < end,
                  b[close + 1] == UInt8(ascii: ":"), close + 2 == end || b[close + 2] == UInt8(ascii: " ") else { return nil }
            let text = String(decoding: b[(at + 1)..<close], as: UTF8.self)
            return ((at + 1)..<close, text, close + 2)
        }
        let indicators: Set<UInt8> = Set("[]{},#&*!|>%@`".utf8)
        guard !indicators.contains(first) else { return nil }
        var i = at
        while i < end {
            if b[i] == UInt8(ascii: ":"), i + 1 == end || b[i + 1] == UInt8(ascii: " ") {
                var keyEnd = i
                while keyEnd > at, b[keyEnd - 1] == UInt8(ascii: " ") { keyEnd -= 1 }
                guard keyEnd > at else { return nil }
                return (at..<keyEnd, String(decoding: b[at..<keyEnd], as: UTF8.self), i + 1)
            }
            if b[i] == UInt8(ascii: "#"), i > at, b[i - 1] == UInt8(ascii: " ") { return nil }
            i += 1
        }
        return nil
    }

    /// Where a quoted scalar opened before `from` closes on this line (the quote's index), or nil.
    private static func closingQuote(_ b: [UInt8], from: Int, to end: Int, style: Style) -> Int? {
        var i = from
        while i < end {
            if style == .singleQuoted, b[i] == UInt8(ascii: "'") {
                if i + 1 < end, b[i + 1] == UInt8(ascii: "'") { i += 2; continue }
                return i
            }
            if style == .doubleQuoted {
                if b[i] == UInt8(ascii: "\\") { i += 2; continue }
                if b[i] == UInt8(ascii: "\"") { return i }
            }
            i += 1
        }
        return nil
    }

    /// Where a plain scalar starting at `from` ends on this line: before a ` #` comment and
    /// trailing spaces.
    private static func plainEnd(_ b: [UInt8], from: Int, to end: Int) -> Int {
        var i = from
        var stop = end
        while i < end {
            if b[i] == UInt8(ascii: "#"), i > from, b[i - 1] == UInt8(ascii: " ") { stop = i; break }
            i += 1
        }
        while stop > from, b[stop - 1] == UInt8(ascii: " ") { stop -= 1 }
        return stop
    }

    private static func comment(_ b: [UInt8], after: Int, to end: Int, into document: inout Document) {
        var i = after
        while i < end {
            if b[i] == UInt8(ascii: "#") { document.comments.append(i..<end); return }
            i += 1
        }
    }

    /// The text a single-line scalar stands for, or nil when an escape is beyond this reader.
    static func decode(_ raw: ArraySlice<UInt8>, style: Style) -> [UInt8]? {
        switch style {
        case .plain, .flow, .block:
            return Array(raw)
        case .singleQuoted:
            var out: [UInt8] = []
            var i = raw.startIndex
            while i < raw.endIndex {
                out.append(raw[i])
                i += raw[i] == UInt8(ascii: "'") && i + 1 < raw.endIndex && raw[i + 1] == UInt8(ascii: "'") ? 2 : 1
            }
            return out
        case .doubleQuoted:
            // YAML's double-quoted escapes include JSON's; the rest (\x, \U, \0…) are not read.
            return JSONText.decode(raw)
        }
    }

    /// Whether a plain scalar resolves to something other than a string under YAML 1.1 (a
    /// boolean, null or number), as the manifest reader resolves it.
    static func isNonString(_ text: [UInt8]) -> Bool {
        let word = String(decoding: text, as: UTF8.self)
        let special: Set<String> = [
            "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
            "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "~", "",
        ]
        if special.contains(word) { return true }
        return Double(word) != nil || Int(word) != nil || (word.hasPrefix("0x") && Int(word.dropFirst(2), radix: 16) != nil)
    }
}
