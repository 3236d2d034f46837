/// The UDP header, RFC 768: source port, destination port, length (header + data), checksum — four
/// u16 BE. The checksum is not verified (loopback captures carry unfilled checksums).
struct UDPHeader: Sendable, Hashable {
    static let length = 8

    var sourcePort: UInt16
    var destinationPort: UInt16
    /// The payload's place in the buffer that was parsed.
    var payload: Range<Int>

    /// Parses the header at `offset`, with the IP payload ending at `end`. Bytes after the UDP
    /// length and before `end` are ignored (padding).
    static func parse(_ buffer: UnsafeRawBufferPointer, at offset: Int, end: Int, context: String? = nil) -> Result<UDPHeader, DissectionProblem> {
        let available = min(end, buffer.count) - offset
        guard available >= length, let source = buffer.u16be(at: offset), let destination = buffer.u16be(at: offset + 2),
              let udpLength = buffer.u16be(at: offset + 4)
        else {
            return .failure(.short("UDP", at: offset, need: length, what: "UDP header", have: available, context: context))
        }
        guard Int(udpLength) >= length else {
            return .failure(DissectionProblem(
                layer: "UDP", offset: offset + 4, expected: "a length of at least 8 (the header)",
                found: "length \(udpLength)", context: context))
        }
        guard Int(udpLength) <= available else {
            return .failure(DissectionProblem(
                layer: "UDP", offset: offset + 4, expected: "\(udpLength) bytes as the UDP length says",
                found: "only \(available) in the IP payload", context: context))
        }
        return .success(UDPHeader(
            sourcePort: source, destinationPort: destination, payload: (offset + length)..<(offset + Int(udpLength))))
    }
}
