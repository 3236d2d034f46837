import ArgumentParser
import Durations
import LiveHosts

/// Parsers for numeric command-line values, used as `@Option(transform:)` so that a bad value
/// exits 64 with a sentence naming the option, the value and the accepted range, and never reaches
/// an integer conversion that could trap.
enum OptionValues {
    /// Seconds from `text`: plain seconds (`8`, `0.5`) or a number with a unit of
    /// ``DurationText`` (`500ms`, `8s`, `2m`, `1h`). The result must lie in `range`.
    /// - Throws: `ValidationError` naming `option`, the text and the range.
    static func seconds(_ text: String, option: String, range: ClosedRange<Double>, allowZero: Bool = false) throws -> Double {
        let accepted = "a duration from \(describe(range.lowerBound)) to \(describe(range.upperBound)), "
            + "in seconds or with a unit (500ms, 8s, 2m, 1h)"
        guard let seconds = DurationText.seconds(text) else {
            throw ValidationError("\(option) \(text) is not a duration; give \(accepted).")
        }
        guard range.contains(seconds), allowZero || seconds > 0 else {
            throw ValidationError("\(option) \(text) is out of range; give \(accepted).")
        }
        return seconds
    }

    /// A whole number from `text` within `range`.
    /// - Throws: `ValidationError` naming `option`, the text and the range.
    static func integer<Value: FixedWidthInteger>(_ text: String, option: String, range: ClosedRange<Value>) throws -> Value {
        guard let value = Value(text.trimmingWhitespace()), range.contains(value) else {
            throw ValidationError("\(option) \(text) is not accepted; give a whole number from \(range.lowerBound) to \(range.upperBound).")
        }
        return value
    }

    /// A finite decimal number from `text` within `range`.
    /// - Throws: `ValidationError` naming `option`, the text and the range.
    static func decimal(_ text: String, option: String, range: ClosedRange<Double>, excludingLowerBound: Bool = false) throws -> Double {
        let lower = excludingLowerBound ? "more than \(describe(range.lowerBound))" : "from \(describe(range.lowerBound))"
        guard let value = Double(text.trimmingWhitespace()), value.isFinite, range.contains(value),
              !excludingLowerBound || value > range.lowerBound else {
            throw ValidationError("\(option) \(text) is not accepted; give a number \(lower) to \(describe(range.upperBound)).")
        }
        return value
    }

    /// A bound as people write it: `3600`, `0.001`.
    static func describe(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// Nanoseconds of a number of seconds already bounded by one of the parsers above (so the
    /// conversion cannot overflow).
    static func nanoseconds(_ seconds: Double) -> Int64 {
        Int64(clamping: Int64(exactly: (seconds * 1e9).rounded()) ?? (seconds > 0 ? .max : .min))
    }
}

extension String {
    /// The text without leading and trailing spaces and tabs.
    func trimmingWhitespace() -> String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars = scalars.dropFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars = scalars.dropLast() }
        return String(scalars)
    }
}
