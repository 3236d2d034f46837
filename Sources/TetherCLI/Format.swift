#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

import ReplayKit

/// Number and time formatting for the CLI's text output, without Foundation's locale-dependent
/// formatters (output must be the same on every machine).
enum Format {
    /// `value` with exactly `decimals` digits after the point.
    static func fixed(_ value: Double, _ decimals: Int) -> String { DecimalText.fixed(value, decimals) }

    /// Nanoseconds as seconds with nine decimals (`12.000345678`).
    static func seconds(_ nanoseconds: Int64) -> String {
        let sign = nanoseconds < 0 ? "-" : ""
        let magnitude = nanoseconds.magnitude
        var fraction = String(magnitude % 1_000_000_000)
        while fraction.count < 9 { fraction = "0" + fraction }
        return sign + String(magnitude / 1_000_000_000) + "." + fraction
    }

    /// Nanoseconds as a short duration: `850 ns`, `12.3 µs`, `4.56 ms`, `1.234 s`.
    static func duration(_ nanoseconds: Int64) -> String {
        let value = Double(nanoseconds)
        switch abs(value) {
        case ..<1_000: return "\(nanoseconds) ns"
        case ..<1_000_000: return fixed(value / 1_000, 1) + " µs"
        case ..<1_000_000_000: return fixed(value / 1_000_000, 2) + " ms"
        default: return fixed(value / 1_000_000_000, 3) + " s"
        }
    }

    /// A byte count with a binary unit.
    static func bytes(_ count: UInt64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : fixed(value, 1) + " " + units[unit]
    }

    /// Nanoseconds since the Unix epoch as ISO 8601 UTC with nanoseconds.
    static func utc(_ nanoseconds: Int64) -> String {
        var seconds = nanoseconds / 1_000_000_000
        var remainder = nanoseconds % 1_000_000_000
        if remainder < 0 {
            seconds -= 1
            remainder += 1_000_000_000
        }
        var time = time_t(seconds)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(nanoseconds) ns" }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        var fraction = String(remainder)
        while fraction.count < 9 { fraction = "0" + fraction }
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }

    /// Now, as ISO 8601 UTC to the second (for manifests).
    static func utcNow() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        let text = utc(Int64(now.tv_sec) * 1_000_000_000)
        return String(text.prefix(19)) + "Z"
    }

    /// Right-align `text` in `width` columns.
    static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }
}

extension String {
    /// Left-align in `width` columns.
    func padding(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
