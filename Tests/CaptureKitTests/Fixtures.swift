@testable import CaptureKit

/// Builds capture files byte by byte, in a chosen byte order, for hand-made fixtures.
struct ByteBuilder {
    var bytes: [UInt8] = []
    var bigEndian: Bool

    init(bigEndian: Bool = false) { self.bigEndian = bigEndian }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u16(_ v: UInt16) { append(bigEndian ? v.bigEndian : v.littleEndian) }
    mutating func u32(_ v: UInt32) { append(bigEndian ? v.bigEndian : v.littleEndian) }
    mutating func u64(_ v: UInt64) { append(bigEndian ? v.bigEndian : v.littleEndian) }
    mutating func raw(_ b: [UInt8]) { bytes += b }
    mutating func pad() { while bytes.count % 4 != 0 { bytes.append(0) } }
    private mutating func append<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v) { bytes += $0 } }
}

/// A fixture file and where its records end, so truncation tests know what each prefix must give.
struct Fixture: CustomStringConvertible {
    var name: String
    var bytes: [UInt8]
    /// Offsets where a complete block or record (or the file header) ends.
    var boundaries: Set<Int>
    /// For each frame, the offset where its record ends.
    var frameEnds: [Int]
    /// The bytes before which `CaptureFile.open` cannot recognise the format.
    var detectionBytes: Int
    var description: String { name }
}

/// Builds a pcapng file block by block, remembering block ends.
struct PcapngBuilder {
    var bytes: [UInt8] = []
    var boundaries: Set<Int> = [0]
    var frameEnds: [Int] = []
    var bigEndian = false

    static func option(_ code: UInt16, _ value: [UInt8], bigEndian: Bool) -> [UInt8] {
        var b = ByteBuilder(bigEndian: bigEndian)
        b.u16(code)
        b.u16(UInt16(value.count))
        b.raw(value)
        b.pad()
        return b.bytes
    }

    func option(_ code: UInt16, _ value: [UInt8]) -> [UInt8] { Self.option(code, value, bigEndian: bigEndian) }
    func option(_ code: UInt16, u32 value: UInt32) -> [UInt8] {
        var b = ByteBuilder(bigEndian: bigEndian); b.u32(value); return option(code, b.bytes)
    }
    func option(_ code: UInt16, u64 value: UInt64) -> [UInt8] {
        var b = ByteBuilder(bigEndian: bigEndian); b.u64(value); return option(code, b.bytes)
    }
    func customOption(_ code: UInt16, pen: UInt32, _ value: [UInt8]) -> [UInt8] {
        var b = ByteBuilder(bigEndian: bigEndian); b.u32(pen); b.raw(value); return option(code, b.bytes)
    }
    /// Options followed by opt_endofopt (nothing when there are none).
    func options(_ list: [[UInt8]]) -> [UInt8] {
        list.isEmpty ? [] : list.flatMap { $0 } + [0, 0, 0, 0]
    }

    mutating func block(_ type: UInt32, _ body: [UInt8], isFrame: Bool = false) {
        var b = ByteBuilder(bigEndian: bigEndian)
        var padded = body
        while padded.count % 4 != 0 { padded.append(0) }
        b.u32(type)
        b.u32(UInt32(12 + padded.count))
        b.raw(padded)
        b.u32(UInt32(12 + padded.count))
        bytes += b.bytes
        boundaries.insert(bytes.count)
        if isFrame { frameEnds.append(bytes.count) }
    }

    mutating func section(bigEndian: Bool, options: [[UInt8]] = []) {
        self.bigEndian = bigEndian
        var b = ByteBuilder(bigEndian: bigEndian)
        b.u32(0x1A2B_3C4D)
        b.u16(1)
        b.u16(0)
        b.u64(UInt64.max)
        b.raw(self.options(options))
        block(0x0A0D_0D0A, b.bytes)
    }

    mutating func interface(linkType: UInt16, snapLength: UInt32 = 0, options: [[UInt8]] = []) {
        var b = ByteBuilder(bigEndian: bigEndian)
        b.u16(linkType)
        b.u16(0)
        b.u32(snapLength)
        b.raw(self.options(options))
        block(1, b.bytes)
    }

    mutating func enhancedPacket(interface: UInt32, ticks: UInt64, data: [UInt8], originalLength: UInt32? = nil, options: [[UInt8]] = []) {
        var b = ByteBuilder(bigEndian: bigEndian)
        b.u32(interface)
        b.u32(UInt32(ticks >> 32))
        b.u32(UInt32(ticks & 0xFFFF_FFFF))
        b.u32(UInt32(data.count))
        b.u32(originalLength ?? UInt32(data.count))
        b.raw(data)
        b.pad()
        b.raw(self.options(options))
        block(6, b.bytes, isFrame: true)
    }

    mutating func simplePacket(originalLength: UInt32, data: [UInt8]) {
        var b = ByteBuilder(bigEndian: bigEndian)
        b.u32(originalLength)
        b.raw(data)
        block(3, b.bytes, isFrame: true)
    }

    mutating func statistics(interface: UInt32, ticks: UInt64, options: [[UInt8]]) {
        var b = ByteBuilder(bigEndian: bigEndian)
        b.u32(interface)
        b.u32(UInt32(ticks >> 32))
        b.u32(UInt32(ticks & 0xFFFF_FFFF))
        b.raw(self.options(options))
        block(5, b.bytes)
    }

    func fixture(_ name: String) -> Fixture {
        Fixture(name: name, bytes: bytes, boundaries: boundaries, frameEnds: frameEnds, detectionBytes: 4)
    }
}

/// A classic pcap file.
func pcapFixture(bigEndian: Bool, nanosecond: Bool, linkType: UInt32 = 1, records: [(UInt32, UInt32, [UInt8])]) -> Fixture {
    var b = ByteBuilder(bigEndian: bigEndian)
    b.u32(nanosecond ? 0xA1B2_3C4D : 0xA1B2_C3D4)
    b.u16(2)
    b.u16(4)
    b.u32(0)
    b.u32(0)
    b.u32(65535)
    b.u32(linkType)
    var boundaries: Set<Int> = [0, 24]
    var ends: [Int] = []
    for (seconds, fraction, data) in records {
        b.u32(seconds)
        b.u32(fraction)
        b.u32(UInt32(data.count))
        b.u32(UInt32(data.count + 10))
        b.raw(data)
        boundaries.insert(b.bytes.count)
        ends.append(b.bytes.count)
    }
    return Fixture(name: "pcap \(bigEndian ? "BE" : "LE") \(nanosecond ? "ns" : "µs")", bytes: b.bytes,
                   boundaries: boundaries, frameEnds: ends, detectionBytes: 4)
}

/// The btsnoop timestamp for a Unix time in µs.
func btsnoopTimestamp(unixMicroseconds: Int64) -> UInt64 {
    UInt64(bitPattern: unixMicroseconds + 0x00DC_DDB3_0F2F_8000)
}

/// A btsnoop file with records of (flags, drops, unix µs, bytes).
func btsnoopFixture(datalink: UInt32, records: [(UInt32, UInt32, Int64, [UInt8])]) -> Fixture {
    var b = ByteBuilder(bigEndian: true)
    b.raw(Array("btsnoop\0".utf8))
    b.u32(1)
    b.u32(datalink)
    var boundaries: Set<Int> = [0, 16]
    var ends: [Int] = []
    for (flags, drops, micros, data) in records {
        b.u32(UInt32(data.count))
        b.u32(UInt32(data.count))
        b.u32(flags)
        b.u32(drops)
        b.u64(btsnoopTimestamp(unixMicroseconds: micros))
        b.raw(data)
        boundaries.insert(b.bytes.count)
        ends.append(b.bytes.count)
    }
    return Fixture(name: "btsnoop \(datalink)", bytes: b.bytes, boundaries: boundaries, frameEnds: ends, detectionBytes: 4)
}

/// A PacketLogger file with records of (type, seconds, µs, payload).
func packetLoggerFixture(bigEndian: Bool, records: [(UInt8, UInt32, UInt32, [UInt8])]) -> Fixture {
    var b = ByteBuilder(bigEndian: bigEndian)
    var boundaries: Set<Int> = [0]
    var ends: [Int] = []
    for (type, seconds, micros, payload) in records {
        b.u32(UInt32(9 + payload.count))
        b.u32(seconds)
        b.u32(micros)
        b.u8(type)
        b.raw(payload)
        boundaries.insert(b.bytes.count)
        ends.append(b.bytes.count)
    }
    return Fixture(name: "pklg \(bigEndian ? "BE" : "LE")", bytes: b.bytes, boundaries: boundaries, frameEnds: ends, detectionBytes: 13)
}

/// Every frame through `next()`.
func readAll(_ reader: any CaptureReader) throws -> [CaptureFrame] {
    var frames: [CaptureFrame] = []
    while let frame = try reader.next() { frames.append(frame) }
    return frames
}

/// Every frame through `withNextFrame`, copied out (without comments and options, which the fast
/// path does not carry).
func readAllFast(_ reader: any CaptureReader) throws -> [CaptureFrame] {
    var frames: [CaptureFrame] = []
    while try reader.withNextFrame({ view in
        frames.append(CaptureFrame(
            number: view.number, interfaceIndex: view.interfaceIndex, timestampNs: view.timestampNs,
            originalLength: view.originalLength, data: Array(view.data)))
    }) {}
    return frames
}

/// The frame without what the fast path leaves out.
func stripped(_ frame: CaptureFrame) -> CaptureFrame {
    var f = frame
    f.comments = []
    f.customOptions = []
    f.flags = nil
    return f
}


/// The CaptureError `body` throws, or nil when it throws nothing (or something else).
func captureError(_ body: () throws -> Void) -> CaptureError? {
    do {
        try body()
        return nil
    } catch let error as CaptureError {
        return error
    } catch {
        return nil
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import TetherTestSupport

/// A fresh path in the temporary folder (random, so parallel tests never share one).
func temporaryPath(_ suffix: String) -> String {
    "/tmp/capturekit-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max)).\(suffix)"
}
