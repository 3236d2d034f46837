// What every command that prints captured or traced text does to it first.

extension String {
    /// Text from captures and traces made safe for a terminal and a one-line-per-item layout:
    /// every ``Unicode/Scalar/isControlForTerminal`` scalar shown as `\u{…}`. Every command that
    /// prints such text (`diff`, `replay`, `inspect`, `annotate`, `record`) goes through here.
    public func escapingControlCharactersForReport() -> String {
        guard unicodeScalars.contains(where: \.isControlForTerminal) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            if scalar.isControlForTerminal { out += "\\u{\(String(scalar.value, radix: 16))}" } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

extension Unicode.Scalar {
    /// C0 and C1 controls and DEL (a terminal acts on them: ESC and CSI start escape sequences),
    /// line and paragraph separators (they break lines where no newline is), and the
    /// bidirectional overrides and isolates (they reorder what a line appears to say).
    public var isControlForTerminal: Bool {
        switch value {
        case 0x00..<0x20, 0x7F...0x9F, 0x2028, 0x2029, 0x202A...0x202E, 0x2066...0x2069: return true
        default: return false
        }
    }
}
