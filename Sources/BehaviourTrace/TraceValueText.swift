extension TraceValue {
    /// The number an int or double field holds; nil for anything else.
    public var numericValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    /// The value as compact JSON for messages (strings unquoted at top level).
    public var compactText: String {
        if case .string(let s) = self { return s }
        return JSONLiteral.value(self)
    }
}
