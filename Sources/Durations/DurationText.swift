/// Durations as people write them, read one way wherever they are written as text: on the command
/// line (`--drain-horizon 30m`, `--set ingest.idle_timeout_ms=5s`), in a fault
/// (`delay:frame=12:by=40ms`), in a sweep budget and in live scripts. (A manifest's own
/// millisecond settings are YAML numbers of milliseconds, not text.)
///
/// A duration is a non-negative decimal (`40`, `1.5`, `.5`) followed by a unit — `ns`, `us`, `ms`,
/// `s`, `m` or `h` — with spaces around it ignored. Whether a number without a unit is read (as
/// seconds) is the caller's choice: the command line and manifests read it, the fault language,
/// where bare numbers are frame numbers, does not. A sign, an exponent or a second dot is not a
/// duration. Range checks are the caller's, on the nanoseconds returned as a `Double`, so a value
/// past what `Int64` holds is still told apart from a typo.
public enum DurationText {
    /// What a number without a unit means.
    public enum BareNumber: Sendable {
        /// Seconds: `8` is eight seconds.
        case seconds
        /// Not a duration: a unit is required.
        case refused
    }

    /// The units and their nanoseconds. `ms`, `ns` and `us` come before `s` and `m`, which end
    /// them: the longest suffix is tried first.
    public static let units: [(suffix: String, nanoseconds: Double)] = [
        ("ns", 1), ("us", 1e3), ("ms", 1e6), ("h", 3600e9), ("m", 60e9), ("s", 1e9),
    ]

    /// The units as a sentence lists them, for error messages: `ns, us, ms, s, m or h`.
    public static let unitList = "ns, us, ms, s, m or h"

    /// The nanoseconds `text` stands for (see the type's comment), rounded to a whole number;
    /// `nil` when it is not a duration.
    public static func nanoseconds(_ text: String, bareNumber: BareNumber) -> Double? {
        var trimmed = Substring(text)
        while trimmed.first == " " || trimmed.first == "\t" { trimmed = trimmed.dropFirst() }
        while trimmed.last == " " || trimmed.last == "\t" { trimmed = trimmed.dropLast() }
        var number = trimmed
        var scale: Double?
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            number = trimmed.dropLast(unit.suffix.count)
            scale = unit.nanoseconds
            break
        }
        if scale == nil, case .seconds = bareNumber { scale = 1e9 }
        guard let scale, isDecimal(number), let value = Double(number) else { return nil }
        let ns = (value * scale).rounded()
        return ns.isFinite ? ns : nil
    }

    /// The seconds `text` stands for, a number without a unit being seconds; `nil` when it is
    /// not a duration.
    public static func seconds(_ text: String) -> Double? {
        nanoseconds(text, bareNumber: .seconds).map { $0 / 1e9 }
    }

    /// Digits with at most one dot, and at least one digit.
    private static func isDecimal(_ text: Substring) -> Bool {
        var digits = 0, dots = 0
        for character in text.utf8 {
            switch character {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digits += 1
            case UInt8(ascii: "."): dots += 1
            default: return false
            }
        }
        return digits > 0 && dots <= 1
    }
}
