/// Durations as people write them in scripts and on the command line.
public enum DurationText {
    /// The seconds in `text`: a plain number of seconds (`8`, `0.5`) or a number with a unit,
    /// `ms`, `s`, `m` or `h` (`500ms`, `8s`, `2m`, `1h`); surrounding spaces are ignored. `nil` for
    /// anything else, an explicit `+` sign and non-finite numbers included. Range checks are the
    /// caller's.
    public static func seconds(_ text: String) -> Double? {
        var trimmed = Substring(text)
        while trimmed.first == " " || trimmed.first == "\t" { trimmed = trimmed.dropFirst() }
        while trimmed.last == " " || trimmed.last == "\t" { trimmed = trimmed.dropLast() }
        // `ms` before `m` and `s`: the longest suffix wins.
        let units: [(suffix: String, scale: Double)] = [("ms", 0.001), ("h", 3600), ("m", 60), ("s", 1)]
        var number = trimmed
        var scale = 1.0
        for unit in units where trimmed.hasSuffix(unit.suffix) {
            number = trimmed.dropLast(unit.suffix.count)
            scale = unit.scale
            break
        }
        guard !number.hasPrefix("+"), let value = Double(number), value.isFinite else { return nil }
        let seconds = value * scale
        return seconds.isFinite ? seconds : nil
    }
}
