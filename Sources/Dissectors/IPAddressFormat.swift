extension IPAddress {
    /// Text for an address: dotted quad for 4 bytes (RFC 791), RFC 5952 §4 text for 16 bytes
    /// (lowercase, no leading zeros, the longest run of two or more zero groups — the first one on
    /// a tie — as `::`, IPv4-mapped addresses as `::ffff:a.b.c.d` per §5). Any other length is
    /// shown as colon-separated hex bytes so a bad value is still visible.
    public static func format(_ bytes: [UInt8]) -> String {
        switch bytes.count {
        case 4:
            return bytes.map(String.init).joined(separator: ".")
        case 16:
            var groups = [Int](repeating: 0, count: 8)
            for index in 0..<8 { groups[index] = Int(bytes[2 * index]) << 8 | Int(bytes[2 * index + 1]) }
            if groups[0..<5].allSatisfy({ $0 == 0 }) && groups[5] == 0xFFFF {
                return "::ffff:" + bytes[12..<16].map(String.init).joined(separator: ".")
            }
            var bestStart = -1, bestLength = 0, runStart = -1
            for index in 0...8 {
                if index < 8 && groups[index] == 0 {
                    if runStart < 0 { runStart = index }
                } else if runStart >= 0 {
                    let length = index - runStart
                    if length > bestLength { bestStart = runStart; bestLength = length }
                    runStart = -1
                }
            }
            let text = groups.map { String($0, radix: 16) }
            guard bestLength >= 2 else { return text.joined(separator: ":") }
            let head = text[0..<bestStart].joined(separator: ":")
            let tail = text[(bestStart + bestLength)...].joined(separator: ":")
            return head + "::" + tail
        default:
            return bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: ":")
        }
    }
}
