#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The largest block or record CaptureKit accepts. Real captures stay far below it (pcapng blocks of
/// a few KiB, HCI packets under 64 KiB); a bigger length means a damaged file, and refusing it keeps
/// a reader from trying to buffer gigabytes.
let maxRecordLength = 256 << 20

/// Default size of a reader's buffer. A record bigger than this grows the buffer to fit it.
let defaultReadBufferSize = 1 << 20

/// A buffered, forward-only view of a file or an in-memory array.
///
/// Readers ask for `ensure(n)` contiguous bytes at `pointer`, parse them in place, then `consume`.
/// Memory stays bounded by the largest record seen, whatever the file size. Bytes before `pointer`
/// that were consumed by the current record stay valid (and writable) until the next `ensure`, which
/// lets readers synthesise a pseudo-header in place without copying.
///
/// Hot stored properties here and in the readers are `@exclusivity(unchecked)`: a reader is used
/// from one thread and never re-entered while it parses (the `withNextFrame` body runs after
/// parsing is done), and the dynamic exclusivity checks otherwise cost about 40% of the read rate.
final class ByteInput {
    private enum Source {
        case file(Int32)
        case memory([UInt8])
    }

    /// The file name used in messages.
    let name: String
    private let source: Source
    @exclusivity(unchecked) private var memoryPosition = 0
    /// For memory input: the most bytes one read returns, so tests can force records to straddle
    /// reads exactly as short reads of a file would.
    private let chunkLimit: Int
    @exclusivity(unchecked) private var storage: UnsafeMutableRawPointer
    @exclusivity(unchecked) private var capacity: Int
    @exclusivity(unchecked) private var head = 0
    @exclusivity(unchecked) private var tail = 0
    /// File offset of the byte at `pointer`.
    @exclusivity(unchecked) private(set) var offset: UInt64 = 0
    @exclusivity(unchecked) private var atEOF = false
    @exclusivity(unchecked) private var closed = false

    init(path: String, bufferSize: Int = defaultReadBufferSize) throws(CaptureError) {
        let fd: Int32
        switch RegularFile.open(path) {
        case .success(let opened): fd = opened
        case .failure(let refusal):
            throw CaptureError(
                kind: .io, file: path, offset: 0, expected: "a readable regular file", found: refusal.reason,
                hint: "Check the path and the file's permissions; give the capture file itself, not a pipe or a device.")
        }
        name = path
        source = .file(fd)
        chunkLimit = Int.max
        capacity = max(bufferSize, 64)
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    init(bytes: [UInt8], name: String, bufferSize: Int = defaultReadBufferSize) {
        self.name = name
        source = .memory(bytes)
        chunkLimit = max(bufferSize, 1)
        capacity = max(bufferSize, 1)
        storage = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    deinit {
        storage.deallocate()
        if case .file(let fd) = source, !closed { _ = close(fd) }
    }

    /// Bytes buffered and not yet consumed.
    var available: Int { tail &- head }

    /// The first unconsumed byte.
    var pointer: UnsafeMutableRawPointer { storage + head }

    /// Moves past `count` bytes that `ensure` made available.
    @inline(__always)
    func consume(_ count: Int) {
        head &+= count
        offset &+= UInt64(count)
    }

    /// Makes `count` contiguous bytes available at `pointer`; `false` when the input ends first
    /// (then `available` says how many there are).
    @inline(__always)
    func ensure(_ count: Int) throws(CaptureError) -> Bool {
        if tail &- head >= count { return true }
        return try refill(count)
    }

    /// Returns up to `count` bytes from the current position without consuming them.
    func peek(_ count: Int) throws(CaptureError) -> [UInt8] {
        _ = try ensure(count)
        let n = min(count, available)
        return Array(UnsafeRawBufferPointer(start: pointer, count: n))
    }

    private func refill(_ count: Int) throws(CaptureError) -> Bool {
        if head > 0 {
            let live = tail &- head
            if live > 0 { memmove(storage, storage + head, live) }
            tail = live
            head = 0
        }
        while tail < count && !atEOF {
            if tail == capacity {
                // Grow only as data actually arrives, so a damaged length field on a short file
                // never makes the reader allocate what the field claims.
                let newCapacity = min(max(capacity &* 2, 64), max(count, capacity))
                let newStorage = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
                newStorage.copyMemory(from: storage, byteCount: tail)
                storage.deallocate()
                storage = newStorage
                capacity = newCapacity
            }
            let room = capacity &- tail
            let got = try readSome(into: storage + tail, max: room)
            if got == 0 { atEOF = true } else { tail &+= got }
        }
        return tail >= count
    }

    private func readSome(into destination: UnsafeMutableRawPointer, max room: Int) throws(CaptureError) -> Int {
        switch source {
        case .memory(let bytes):
            let n = min(room, chunkLimit, bytes.count &- memoryPosition)
            if n <= 0 { return 0 }
            bytes.withUnsafeBytes { all in
                destination.copyMemory(from: all.baseAddress! + memoryPosition, byteCount: n)
            }
            memoryPosition &+= n
            return n
        case .file(let fd):
            while true {
                let got = read(fd, destination, room)
                if got >= 0 { return got }
                if errno == EINTR { continue }
                let reason = String(cString: strerror(errno))
                throw CaptureError(
                    kind: .io, file: name, offset: offset &+ UInt64(available), expected: "to read the file",
                    found: reason, hint: "Check that the file is still there and readable.")
            }
        }
    }
}

// Byte-order loads from parsed buffers. Callers have checked the bounds with `ensure` first.

@inline(__always)
func load16(_ p: UnsafeRawPointer, _ offset: Int, _ bigEndian: Bool) -> UInt16 {
    let v = p.loadUnaligned(fromByteOffset: offset, as: UInt16.self)
    return bigEndian ? UInt16(bigEndian: v) : UInt16(littleEndian: v)
}

@inline(__always)
func load32(_ p: UnsafeRawPointer, _ offset: Int, _ bigEndian: Bool) -> UInt32 {
    let v = p.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
    return bigEndian ? UInt32(bigEndian: v) : UInt32(littleEndian: v)
}

@inline(__always)
func load64(_ p: UnsafeRawPointer, _ offset: Int, _ bigEndian: Bool) -> UInt64 {
    let v = p.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
    return bigEndian ? UInt64(bigEndian: v) : UInt64(littleEndian: v)
}

@inline(__always)
func store16BE(_ p: UnsafeMutableRawPointer, _ offset: Int, _ value: UInt16) {
    p.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt16.self)
}

@inline(__always)
func store32BE(_ p: UnsafeMutableRawPointer, _ offset: Int, _ value: UInt32) {
    p.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
}

/// `a * b + c` for timestamps, pinned to the Int64 range instead of trapping on absurd values.
@inline(__always)
func saturatingNs(_ a: Int64, times b: Int64, plus c: Int64 = 0) -> Int64 {
    let (m, o1) = a.multipliedReportingOverflow(by: b)
    if o1 { return (a < 0) != (b < 0) ? Int64.min : Int64.max }
    let (s, o2) = m.addingReportingOverflow(c)
    if o2 { return c < 0 ? Int64.min : Int64.max }
    return s
}

/// Hex of up to `count` bytes, for messages ("0a 0d 0d 0a").
func hexBytes(_ p: UnsafeRawPointer, count: Int) -> String {
    (0..<count).map { i in
        let b = p.load(fromByteOffset: i, as: UInt8.self)
        return (b < 16 ? "0" : "") + String(b, radix: 16)
    }.joined(separator: " ")
}

/// Bytes as lower-case hex digits, two per byte, nothing between (digests, file content in records).
public func lowercaseHex(_ bytes: some Sequence<UInt8>) -> String {
    let digits = Array("0123456789abcdef".utf8)
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
        out.append(digits[Int(byte >> 4)])
        out.append(digits[Int(byte & 0x0f)])
    }
    return String(decoding: out, as: UTF8.self)
}

func hexBytes(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined(separator: " ")
}

/// Shared bookkeeping every reader needs at the end of its input.
extension ByteInput {
    /// The warning for a record that starts at `offset` and needs `needed` bytes when fewer remain.
    func truncationWarning(recordName: String, number: Int, needed: Int) -> CaptureWarning {
        let have = available
        let endsAt = offset &+ UInt64(have)
        return CaptureWarning(
            kind: .truncated, file: name, offset: endsAt,
            message: "the file ends early at offset \(endsAt): \(recordName) \(number) starting at offset "
                + "\(offset) needs \(needed) bytes but only \(have) are there. Every complete frame before "
                + "it was read; the cut-off tail was ignored (the recording was probably interrupted).")
    }
}
