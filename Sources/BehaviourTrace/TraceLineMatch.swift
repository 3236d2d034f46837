#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#else
import Darwin
#endif

/// Whether a trace line is the very line ``TraceEvent/jsonLine()`` writes for an event, decided by
/// walking the line's bytes against the event's values, without writing the event out: what a
/// baseline comparison does for nearly every line while a replay agrees with its baseline.
///
/// Only an ingest `datapoint` held inline (``DataPointFields``, nearly every event of a plugin
/// replay) is walked: `{"t_ns":…,"core":"…","event":"…","name":"…","source":"…","time_ns":…,"type":"…","value":…}`
/// with the value an integer, a double or a string. Anything else gives `nil`, and the caller
/// writes the event out and compares bytes. `true` means the line is the writer's line for the
/// event, so it parses to an event with the same time, core, name and fields; `false` means it is
/// not, and the caller parses it (it may still be the same event spelled otherwise).
enum TraceLineMatch {
    static func dataPoint(_ event: TraceEvent, line: UnsafeRawBufferPointer) -> Bool? {
        var scratch = TraceJSONBytes()
        return dataPoint(event, line: line, scratch: &scratch)
    }

    /// The same, with `scratch` to write a double's digits into (kept by the caller, so that its
    /// storage is reused from line to line).
    static func dataPoint(_ event: TraceEvent, line: UnsafeRawBufferPointer, scratch: inout TraceJSONBytes) -> Bool? {
        guard case .dataPoint(let point) = event.storage else { return nil }
        var cursor = Cursor(line)
        guard cursor.literal("{\"t_ns\":"), cursor.integer(event.timeNs),
              cursor.literal(",\"core\":"), cursor.name(event.core),
              cursor.literal(",\"event\":"), cursor.name(event.event),
              cursor.literal(",\"name\":"), cursor.name(point.name),
              cursor.literal(",\"source\":"), cursor.name(point.source),
              cursor.literal(",\"time_ns\":"), cursor.integer(point.timeNs),
              cursor.literal(",\"type\":"), cursor.name(point.type),
              cursor.literal(",\"value\":")
        else {
            // A text that needs escaping may be spelled otherwise in the line: left to the writer's bytes.
            return event.core.needsEscaping || event.event.needsEscaping || point.name.needsEscaping
                || point.source.needsEscaping || point.type.needsEscaping ? nil : false
        }
        let value: Bool
        switch point.value {
        case .int(let number): value = cursor.integer(number)
        case .double(let number): value = cursor.double(number, scratch: &scratch)
        case .string(let text):
            guard let same = cursor.string(text) else { return nil }
            value = same
        default: return nil
        }
        return value && cursor.literal("}") && cursor.atEnd
    }

    /// A reading position in a line.
    struct Cursor {
        let bytes: UnsafeRawBufferPointer
        var position = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        /// Whether `text` comes next (and steps over it).
        mutating func literal(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard bytes.count - position >= count else { return false }
            let same = memcmp(bytes.baseAddress! + position, text.utf8Start, count) == 0
            if same { position += count }
            return same
        }

        /// Whether the next token is `name` as the writer writes it: its quoted, escaped bytes.
        mutating func name(_ name: TraceName) -> Bool {
            name.entry._withUnsafeGuaranteedRef { entry in
                let count = entry.quotedJSON.count
                guard bytes.count - position >= count else { return false }
                let same = entry.quotedJSON.withUnsafeBytes { memcmp(bytes.baseAddress! + position, $0.baseAddress!, count) == 0 }
                if same { position += count }
                return same
            }
        }

        /// Whether the next token is `value` as the writer writes an integer: `-` then digits,
        /// no leading zero, followed by neither `.` nor an exponent. The digits are read into a
        /// number (a multiply and an add each) rather than the value cut into digits, which takes
        /// a division per digit.
        mutating func integer(_ value: Int64) -> Bool {
            let negative = position < bytes.count && bytes[position] == UInt8(ascii: "-")
            guard negative == (value < 0) else { return false }
            if negative { position += 1 }
            let first = position
            var magnitude: UInt64 = 0
            while position < bytes.count {
                let digit = bytes[position] &- UInt8(ascii: "0")
                guard digit < 10 else { break }
                let (times10, overflow1) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, overflow2) = times10.addingReportingOverflow(UInt64(digit))
                guard !overflow1, !overflow2 else { return false }
                magnitude = sum
                position += 1
            }
            let count = position - first
            guard count > 0, count == 1 || bytes[first] != UInt8(ascii: "0"), magnitude == value.magnitude else { return false }
            if position < bytes.count {
                let next = bytes[position]
                if next == UInt8(ascii: ".") || next == UInt8(ascii: "e") || next == UInt8(ascii: "E") { return false }
            }
            return true
        }

        /// Whether the next token is `value` written as the trace writer writes a double (its
        /// shortest digits, `.0` added when they have no fraction): the digits are written into
        /// `scratch` and compared, which costs less than reading the line's digits back into a
        /// double. Another spelling of the same value is no match; the caller then parses it.
        mutating func double(_ value: Double, scratch: inout TraceJSONBytes) -> Bool {
            guard value.isFinite else { return false }
            scratch.bytes.removeAll(keepingCapacity: true)
            scratch.appendDouble(value)
            let count = scratch.bytes.count
            guard bytes.count - position >= count else { return false }
            let same = scratch.bytes.withUnsafeBytes { memcmp(bytes.baseAddress! + position, $0.baseAddress!, count) == 0 }
            guard same else { return false }
            position += count
            if position < bytes.count {
                let next = bytes[position]
                if (next >= UInt8(ascii: "0") && next <= UInt8(ascii: "9")) || next == UInt8(ascii: "e") || next == UInt8(ascii: "E")
                    || next == UInt8(ascii: ".") { return false }
            }
            return true
        }

        /// Whether the next token is `text` as a JSON string: `nil` when `text` needs escaping
        /// (the caller compares written bytes instead), else whether the quoted bytes are its
        /// UTF-8 exactly.
        mutating func string(_ text: String) -> Bool? {
            if let result = text.utf8.withContiguousStorageIfAvailable({ quoted($0) }) { return result }
            var text = text
            return text.withUTF8 { quoted($0) }
        }

        private mutating func quoted(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool? {
            for byte in utf8 where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return nil }
            guard bytes.count - position >= utf8.count + 2, bytes[position] == UInt8(ascii: "\""),
                  bytes[position + 1 + utf8.count] == UInt8(ascii: "\"") else { return false }
            guard utf8.isEmpty || memcmp(bytes.baseAddress! + position + 1, utf8.baseAddress!, utf8.count) == 0 else { return false }
            position += utf8.count + 2
            return true
        }
    }
}
