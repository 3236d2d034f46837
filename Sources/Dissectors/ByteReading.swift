/// Bounds-checked reads for the parsers. Every read returns `nil` past the end instead of trapping,
/// so a parser turns a short buffer into a ``DissectionProblem`` rather than a crash.
extension UnsafeRawBufferPointer {
    /// `true` when `length` bytes starting at `offset` lie inside the buffer.
    @inline(__always)
    func has(_ length: Int, at offset: Int) -> Bool {
        offset >= 0 && length >= 0 && offset <= count && length <= count &- offset
    }

    @inline(__always)
    func u8(at offset: Int) -> UInt8? {
        has(1, at: offset) ? self[offset] : nil
    }

    @inline(__always)
    func u16be(at offset: Int) -> UInt16? {
        guard has(2, at: offset) else { return nil }
        return UInt16(self[offset]) << 8 | UInt16(self[offset &+ 1])
    }

    @inline(__always)
    func u16le(at offset: Int) -> UInt16? {
        guard has(2, at: offset) else { return nil }
        return UInt16(self[offset &+ 1]) << 8 | UInt16(self[offset])
    }

    @inline(__always)
    func u32be(at offset: Int) -> UInt32? {
        guard has(4, at: offset) else { return nil }
        return UInt32(self[offset]) << 24 | UInt32(self[offset &+ 1]) << 16
            | UInt32(self[offset &+ 2]) << 8 | UInt32(self[offset &+ 3])
    }

    @inline(__always)
    func u64be(at offset: Int) -> UInt64? {
        guard let high = u32be(at: offset), let low = u32be(at: offset &+ 4) else { return nil }
        return UInt64(high) << 32 | UInt64(low)
    }

    @inline(__always)
    func u32le(at offset: Int) -> UInt32? {
        guard has(4, at: offset) else { return nil }
        return UInt32(self[offset &+ 3]) << 24 | UInt32(self[offset &+ 2]) << 16
            | UInt32(self[offset &+ 1]) << 8 | UInt32(self[offset])
    }

    /// A copy of `length` bytes at `offset`, or `nil` when they are not all there.
    @inline(__always)
    func bytes(at offset: Int, count length: Int) -> [UInt8]? {
        guard has(length, at: offset) else { return nil }
        return [UInt8](UnsafeRawBufferPointer(rebasing: self[offset..<(offset &+ length)]))
    }

    /// A view of `length` bytes at `offset` (no copy), or `nil` when they are not all there.
    @inline(__always)
    func slice(at offset: Int, count length: Int) -> UnsafeRawBufferPointer? {
        guard has(length, at: offset) else { return nil }
        return UnsafeRawBufferPointer(rebasing: self[offset..<(offset &+ length)])
    }
}

/// Lowercase hexadecimal with a fixed number of digits, for summaries (`0x0040`).
@inline(__always)
func hex<T: BinaryInteger>(_ value: T, digits: Int) -> String {
    // Every summary names handles and opcodes this way: written byte by byte for the unsigned
    // values up to 64 bits it is given, the general form for anything else.
    guard value >= 0, value.bitWidth <= 64 || value <= T(UInt64.max) else {
        let text = String(value, radix: 16)
        let padding = digits - text.count
        return "0x" + (padding > 0 ? String(repeating: "0", count: padding) : "") + text
    }
    let number = UInt64(value)
    var length = 1
    while length < 16, number >> UInt64(4 * length) != 0 { length += 1 }
    let width = max(length, digits)
    var text: [UInt8] = [UInt8(ascii: "0"), UInt8(ascii: "x")]
    text.reserveCapacity(2 + width)
    for index in stride(from: width - 1, through: 0, by: -1) {
        let nibble = index < 16 ? Int(truncatingIfNeeded: number >> UInt64(4 * index)) & 0x0F : 0
        text.append(nibble < 10 ? UInt8(ascii: "0") + UInt8(nibble) : UInt8(ascii: "a") + UInt8(nibble - 10))
    }
    return String(decoding: text, as: UTF8.self)
}

/// A Bluetooth device address from its 6 bytes as sent (least significant first), written as
/// BlueZ and Bumble write it: `F0:F1:F2:F3:F4:F5`, most significant byte first, upper case.
func bluetoothAddress(_ littleEndian: [UInt8]) -> String {
    littleEndian.reversed().map { byte in
        let text = String(byte, radix: 16, uppercase: true)
        return text.count == 1 ? "0" + text : text
    }.joined(separator: ":")
}
