import Foundation
// The fuzz target compiles this file with JSONBytes' sources into one module (CI/fuzz/run).
#if canImport(JSONBytes)
import JSONBytes
#endif

// The behaviour trace on disk: JSON Lines, one `TraceEvent` per line (docs/trace-format.md).
//
// Both directions are written by hand. Foundation's JSONSerialization turns every number into an
// NSNumber and loses whether `1` was an integer or `1.0` a double; a trace must read back to the
// very same `TraceValue`s, so the encoder here and the parser (TraceJSONParser.swift) keep that
// distinction exactly.

/// A trace line that is not valid trace JSON: names the file, the 1-based line, the 1-based byte
/// column, what the parser expected there and what it found.
public struct TraceFormatError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The trace file (or a caller-chosen label for in-memory text).
    public var file: String
    /// 1-based line number.
    public var line: Int
    /// 1-based byte column within the line (UTF-8 bytes, not characters).
    public var column: Int
    /// What the parser expected at that column, e.g. `a ',' or '}' after an object member`.
    public var expected: String
    /// What it found instead, e.g. `end of line` or `'x'`.
    public var found: String

    /// Creates an error for `file:line:column`.
    public init(file: String, line: Int, column: Int, expected: String, found: String) {
        self.file = file
        self.line = line
        self.column = column
        self.expected = expected
        self.found = found
    }

    /// `file:line:column: expected X, found Y` plus a hint on what to do.
    public var description: String {
        "\(file):\(line):\(column): expected \(expected), found \(found) "
            + "(each trace line must be one JSON object with t_ns, core and event; see docs/trace-format.md)"
    }
}

/// A trace or report file that could not be read or written at all (as opposed to malformed
/// content).
public struct TraceFileError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The path involved.
    public var path: String
    /// What was attempted, e.g. `read trace file`, `write JUnit report`.
    public var operation: String
    /// What went wrong, e.g. the system's message.
    public var reason: String
    /// What to do about it; `nil` gives a general hint for reading or for writing.
    public var hint: String?

    /// Creates an I/O error for `path`.
    public init(path: String, operation: String, reason: String, hint: String? = nil) {
        self.path = path
        self.operation = operation
        self.reason = reason
        self.hint = hint
    }

    /// `cannot read trace file PATH: REASON; WHAT TO DO`.
    public var description: String {
        "cannot \(operation) \(path): \(reason); \(hint ?? generalHint)"
    }

    private var generalHint: String {
        operation.hasPrefix("read")
            ? "check that the path exists and is readable"
            : "check that its folder exists and is writable and that the disk has room"
    }
}

extension TraceEvent {
    /// Keys that the line carries at top level; a field of the same name is never written twice.
    static let reservedKeys: Set<String> = ["t_ns", "core", "event"]

    /// This event as one line of trace JSON, without the trailing newline.
    ///
    /// Keys come in a fixed order: `t_ns`, `core`, `event`, then every other field sorted by key
    /// (Unicode scalar order of the NFC form: byte order for ASCII keys); nested objects are
    /// sorted the same way. No whitespace is written.
    /// A field named `t_ns`, `core` or `event` in `fields` is not written: the top-level property
    /// of the same name is the one that counts.
    public func jsonLine() -> String {
        var out = TraceJSONBytes()
        out.appendEvent(self)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// Replaces the contents of `out` with ``jsonLine()``'s bytes, reusing its storage: what a
    /// caller that encodes an event per step (a baseline comparison) uses instead of a `String`.
    public func encodeJSONLine(into out: inout [UInt8]) {
        var writer = TraceJSONBytes()
        swap(&writer.bytes, &out)
        writer.bytes.removeAll(keepingCapacity: true)
        writer.appendEvent(self)
        swap(&writer.bytes, &out)
    }

    /// Appends the event's fields (every key but `t_ns`, `core` and `event`) to `out` as one
    /// compact JSON object, keys sorted as a trace line writes them: `{}` when it has none.
    public func appendFieldsJSON(to out: inout [UInt8]) {
        var writer = TraceJSONBytes()
        swap(&writer.bytes, &out)
        writer.appendFieldsObject(self)
        swap(&writer.bytes, &out)
    }

    /// Parses one line of trace JSON.
    ///
    /// - Parameters:
    ///   - jsonLine: the line, without its newline (surrounding JSON whitespace is allowed).
    ///   - lineNumber: its 1-based line number, used in errors.
    ///   - file: the file name, used in errors.
    /// - Throws: `TraceFormatError` naming file, line, column and what was expected, when the line
    ///   is not a JSON object, has a duplicate key, or lacks an integer `t_ns` or a string `core` /
    ///   `event`.
    public init(jsonLine: String, lineNumber: Int, file: String) throws(TraceFormatError) {
        var parser = TraceJSONParser(bytes: Array(jsonLine.utf8), line: lineNumber, file: file)
        self = try parser.parseEvent()
    }
}

/// Bounds on what a trace reader accepts, so a hostile or damaged file cannot make it allocate
/// without limit.
public enum TraceLimits {
    /// The environment variable that raises ``maximumLineBytes``.
    public static let maximumLineBytesVariable = "TETHER_TRACE_MAX_LINE_BYTES"
    /// The longest line read: 16 MiB, or what ``maximumLineBytesVariable`` says. The longest lines
    /// Tether writes (an API call carrying a 64 KiB message as JSON) are under 1 MiB.
    public static var maximumLineBytes: Int {
        if let text = ProcessInfo.processInfo.environment[maximumLineBytesVariable], let n = Int(text), n > 0 { return n }
        return 16 << 20
    }

    /// The error for a line longer than ``maximumLineBytes``.
    public static func lineTooLong(file: String, line: Int) -> TraceFormatError {
        TraceFormatError(file: file, line: line, column: maximumLineBytes + 1,
                         expected: "a line of at most \(maximumLineBytes) bytes (set \(maximumLineBytesVariable) higher to read longer lines)",
                         found: "a longer line")
    }
}

/// Reading and writing whole trace files (JSON Lines, UTF-8, `\n` after every line).
public enum TraceFile {
    /// The whole trace as text: one `jsonLine()` per event, each followed by `\n`.
    public static func encode(_ events: [TraceEvent]) -> String {
        String(decoding: encodeBytes(events), as: UTF8.self)
    }

    /// The whole trace as UTF-8 bytes, exactly the bytes of ``encode(_:)``. Written straight into
    /// one growing buffer: building a `String` per line costs more than the JSON itself.
    public static func encodeBytes(_ events: [TraceEvent]) -> [UInt8] {
        var out = TraceJSONBytes()
        // Ingest lines average a little under 180 bytes; one reservation avoids most regrowth.
        out.bytes.reserveCapacity(events.count * 176)
        for event in events {
            out.appendEvent(event)
            out.bytes.append(0x0A)
        }
        return out.bytes
    }

    /// Parses trace text (the bytes of a whole file). `file` labels errors.
    /// - Throws: `TraceFormatError` for the first malformed line.
    public static func decode(_ bytes: [UInt8], file: String) throws(TraceFormatError) -> [TraceEvent] {
        var events: [TraceEvent] = []
        var lineStart = 0
        var lineNumber = 1
        let limit = TraceLimits.maximumLineBytes
        while lineStart <= bytes.count {
            var lineEnd = lineStart
            while lineEnd < bytes.count && bytes[lineEnd] != 0x0A { lineEnd += 1 }
            if lineEnd - lineStart > limit {
                throw TraceLimits.lineTooLong(file: file, line: lineNumber)
            }
            let line = Array(bytes[lineStart..<lineEnd])
            if !line.allSatisfy(TraceJSONParser.isWhitespace) {
                var parser = TraceJSONParser(bytes: line, line: lineNumber, file: file)
                events.append(try parser.parseEvent())
            }
            lineStart = lineEnd + 1
            lineNumber += 1
        }
        return events
    }

    /// Parses trace text held in a string. `file` labels errors.
    /// - Throws: `TraceFormatError` for the first malformed line.
    public static func decode(_ text: String, file: String) throws(TraceFormatError) -> [TraceEvent] {
        try decode(Array(text.utf8), file: file)
    }
}

/// The deterministic writer for trace values.
enum TraceJSONWriter {
    /// Swift's String order: Unicode scalar order of the NFC form, independent of locale (byte
    /// order for ASCII keys). It agrees with String equality, which is what dictionary keys use.
    static func keyOrder(_ a: String, _ b: String) -> Bool {
        a < b
    }
}

/// JSON text for tools that stream their own JSON (`tether inspect --json`), written by the same
/// writer as traces so escaping and number formats agree everywhere.
public enum JSONLiteral {
    /// A JSON object from already-encoded values, keys in the given order (so output is stable).
    public static func object(_ members: [(String, String)]) -> String {
        "{" + members.map { string($0.0) + ":" + $0.1 }.joined(separator: ",") + "}"
    }

    /// A JSON array of strings.
    public static func strings(_ texts: [String]) -> String { "[" + texts.map { string($0) }.joined(separator: ",") + "]" }

    /// A JSON string literal, escaped per RFC 8259 §7.
    public static func string(_ text: String) -> String {
        var out = TraceJSONBytes()
        out.appendString(text)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// Any trace value as compact JSON, object keys sorted.
    public static func value(_ value: TraceValue) -> String {
        var out = TraceJSONBytes()
        out.appendValue(value)
        return String(decoding: out.bytes, as: UTF8.self)
    }

    /// The JSON text of a value, written as traces write it (keys sorted, no whitespace).
    public static func text(_ value: TraceValue) -> String { self.value(value) }

    /// Parses one JSON object (with the trace reader's rules: integers and doubles kept apart,
    /// duplicate keys refused). `label` names the input in errors (for example `frame 12`).
    public static func parseObject(_ bytes: some Collection<UInt8>, label: String) throws(TraceFormatError) -> [String: TraceValue] {
        var parser = TraceJSONParser(bytes: Array(bytes), line: 1, file: label)
        return try parser.parseObject()
    }

    /// The bytes of hex text as ``hex(_:)`` writes it (either case); `nil` for an odd length or a
    /// character that is not a hex digit.
    public static func bytes(fromHex text: String) -> [UInt8]? {
        let utf8 = text.utf8
        guard utf8.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var high: UInt8?
        for c in utf8 {
            let nibble: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): nibble = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): nibble = c - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): nibble = c - UInt8(ascii: "A") + 10
            default: return nil
            }
            if let h = high { out.append(h << 4 | nibble); high = nil } else { high = nibble }
        }
        return out
    }

    /// Lower-case hex of `bytes`, no separators: how traces write opaque bytes.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: bytes.count * 2) { (out: UnsafeMutableBufferPointer<UInt8>) -> Int in
            digits.withUTF8Buffer { digits in
                for (i, b) in bytes.enumerated() {
                    out[2 * i] = digits[Int(b >> 4)]
                    out[2 * i + 1] = digits[Int(b & 0x0f)]
                }
            }
            return bytes.count * 2
        }
    }
}

/// The one trace JSON writer, over UTF-8 bytes, without a `String` per value. It is the `TextOutputStream` a `Double` prints
/// itself into, so a double's shortest text goes straight into the buffer.
struct TraceJSONBytes: TextOutputStream {
    var bytes: [UInt8] = []

    mutating func write(_ string: String) {
        bytes.append(contentsOf: string.utf8)
    }

    /// `Double.write(to:)` hands its digits over as ASCII; taking them as bytes skips a `String`.
    mutating func _writeASCII(_ buffer: UnsafeBufferPointer<UInt8>) {
        bytes.append(contentsOf: buffer)
    }

    mutating func appendLiteral(_ text: StaticString) {
        text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    /// A name as a JSON string: its entry keeps the quoted, escaped bytes, so nothing is escaped
    /// per event.
    mutating func appendName(_ name: TraceName) {
        name.entry._withUnsafeGuaranteedRef { bytes.append(contentsOf: $0.quotedJSON) }
    }

    /// One event as ``TraceEvent/jsonLine()`` writes it, without the newline.
    mutating func appendEvent(_ event: TraceEvent) {
        appendLiteral("{\"t_ns\":")
        appendInt(event.timeNs)
        appendLiteral(",\"core\":")
        appendName(event.core)
        appendLiteral(",\"event\":")
        appendName(event.event)
        appendFieldMembers(event)
        bytes.append(UInt8(ascii: "}"))
    }

    /// The event's fields as `,"key":value` members in key order (a leading comma on each).
    private mutating func appendFieldMembers(_ event: TraceEvent) {
        switch event.storage {
        case .dictionary(let fields):
            appendMembers(fields, skippingReserved: true)
        case .dataPoint(let point):
            // The keys of `DataPointFields.keys`, in that (sorted) order: what `appendMembers`
            // writes for the same fields as a dictionary, without sorting them per event.
            appendLiteral(",\"name\":")
            appendName(point.name)
            appendLiteral(",\"source\":")
            appendName(point.source)
            appendLiteral(",\"time_ns\":")
            appendInt(point.timeNs)
            appendLiteral(",\"type\":")
            appendName(point.type)
            appendLiteral(",\"value\":")
            appendValue(point.value)
        case .chunk, .payload:
            // Keys come in order (`TracePayload.forEachField`): what `appendMembers` writes for
            // the same fields as a dictionary, without sorting them per event.
            event.storage.forEachField { key, value in
                guard !Self.isReserved(key) else { return }
                bytes.append(UInt8(ascii: ","))
                appendString(key)
                bytes.append(UInt8(ascii: ":"))
                appendValue(value)
            }
        }
    }

    /// The event's fields (every key but `t_ns`, `core` and `event`) as one JSON object, keys
    /// sorted: `{}` for none.
    mutating func appendFieldsObject(_ event: TraceEvent) {
        let open = bytes.count
        bytes.append(UInt8(ascii: "{"))
        appendFieldMembers(event)
        // Every member was written with a leading comma; the first one's goes.
        if bytes.count > open + 1 { bytes.remove(at: open + 1) }
        bytes.append(UInt8(ascii: "}"))
    }

    /// `"key":value` for every member in key order, comma-separated (the caller writes the braces).
    /// An event's fields (`skippingReserved`) follow `t_ns`, `core` and `event`, so each of them
    /// gets a leading comma, and a field named like one of those three is left out.
    private mutating func appendMembers(_ members: [String: TraceValue], skippingReserved: Bool) {
        // One pass over the dictionary, sorted in place: no second lookup per key.
        var sorted: [(key: String, value: TraceValue)] = []
        sorted.reserveCapacity(members.count)
        for member in members where !(skippingReserved && Self.isReserved(member.key)) {
            sorted.append(member)
        }
        sorted.sort { TraceJSONWriter.keyOrder($0.key, $1.key) }
        var first = !skippingReserved
        for member in sorted {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            appendString(member.key)
            bytes.append(UInt8(ascii: ":"))
            appendValue(member.value)
        }
    }

    /// ``TraceEvent/reservedKeys`` without hashing: compared with small literals.
    private static func isReserved(_ key: String) -> Bool {
        key == "t_ns" || key == "core" || key == "event"
    }

    mutating func appendValue(_ value: TraceValue) {
        switch value {
        case .string(let s):
            appendString(s)
        case .int(let i):
            appendInt(i)
        case .double(let d):
            appendDouble(d)
        case .bool(let b):
            if b { appendLiteral("true") } else { appendLiteral("false") }
        case .null:
            appendLiteral("null")
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { bytes.append(UInt8(ascii: ",")) }
                appendValue(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let members):
            bytes.append(UInt8(ascii: "{"))
            appendMembers(members, skippingReserved: false)
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Decimal digits, as `String(i)` writes them.
    mutating func appendInt(_ i: Int64) {
        if i < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = i.magnitude
        // 20 digits hold UInt64.max.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var start = 20
            repeat {
                start -= 1
                digits[start] = UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[start..<20]))
        }
    }

    /// Swift's shortest round-trip text, which always carries a `.` or an exponent, so a double
    /// never re-reads as an integer. JSON has no NaN or infinity: those are written as the strings
    /// `"NaN"`, `"Infinity"`, `"-Infinity"`.
    mutating func appendDouble(_ d: Double) {
        if d.isNaN { appendLiteral("\"NaN\""); return }
        if d.isInfinite {
            if d < 0 { appendLiteral("\"-Infinity\"") } else { appendLiteral("\"Infinity\"") }
            return
        }
        let start = bytes.count
        d.write(to: &self)
        // Guard the int/double distinction even if a future description drops the fraction.
        var i = start
        while i < bytes.count {
            switch bytes[i] {
            case UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E"): return
            default: i += 1
            }
        }
        appendLiteral(".0")
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// A JSON string literal, escaped as every Tether JSON writer escapes (``JSONStringEscaping``).
    mutating func appendString(_ s: String) {
        JSONStringEscaping.append(s, to: &bytes)
    }
}
