import Foundation
import IngestCore

/// The blob a chunk's points are stored as: a format byte (1), then for each point in order its
/// sample time (int64, little-endian), and its name, type and raw payload, each as a uint32
/// little-endian length and that many bytes. The source is the chunk row's, and the value is
/// decoded again from the payload, so neither is stored twice.
///
/// Deterministic (the same points give the same bytes), which is what lets the store tell a retry
/// of a chunk from a different chunk under the same identity by comparing blobs.
enum ChunkPointsCodec {
    static let format: UInt8 = 1

    /// Why a blob could not be read back; `offset` is the byte offset in the blob.
    struct DecodingError: Error, CustomStringConvertible {
        var offset: Int
        var problem: String
        var description: String { "packed points, byte \(offset): \(problem)" }
    }

    static func encode(_ points: [DataPoint]) -> Data {
        // Lengths fit in uint32: a point comes from one datagram of at most a few KiB.
        var size = 1
        for point in points { size &+= 20 &+ point.name.utf8.count &+ point.type.utf8.count &+ point.payload.count }
        var blob = Data(count: size)
        blob.withUnsafeMutableBytes { (raw: UnsafeMutableRawBufferPointer) in
            // One pass of plain stores into a buffer of the exact size: this runs for every
            // point the server stores, on the writer thread.
            var offset = 0
            func put<T: FixedWidthInteger>(_ value: T) {
                raw.storeBytes(of: value.littleEndian, toByteOffset: offset, as: T.self)
                offset &+= MemoryLayout<T>.size
            }
            func put(_ bytes: UnsafeRawBufferPointer) {
                put(UInt32(truncatingIfNeeded: bytes.count))
                if let base = bytes.baseAddress, bytes.count > 0 {
                    (raw.baseAddress! + offset).copyMemory(from: base, byteCount: bytes.count)
                }
                offset &+= bytes.count
            }
            func put(_ text: String) {
                var text = text
                text.withUTF8 { put(UnsafeRawBufferPointer($0)) }
            }
            put(format)
            for point in points {
                put(point.timeNs)
                put(point.name)
                put(point.type)
                point.payload.withUnsafeBytes { put($0) }
            }
        }
        return blob
    }

    /// Appends the points of `blob`, all from `source`, to `points`.
    static func decode(_ blob: Data, source: DatagramSource, into points: inout [DataPoint]) throws(DecodingError) {
        let bytes = [UInt8](blob)
        guard let first = bytes.first else { throw DecodingError(offset: 0, problem: "empty blob, expected the format byte \(format)") }
        guard first == format else { throw DecodingError(offset: 0, problem: "format \(first), expected \(format)") }
        var offset = 1
        while offset < bytes.count {
            let start = offset
            let time = try integer(bytes, at: &offset, width: 8, what: "sample time")
            let name = try text(bytes, at: &offset, what: "name")
            let type = try text(bytes, at: &offset, what: "type")
            let payload = try field(bytes, at: &offset, what: "payload")
            let value: DataValue
            do throws(PayloadDecodingError) {
                value = try DataValue.decode(type: type, payload: payload)
            } catch {
                throw DecodingError(offset: start, problem: "\(error)")
            }
            points.append(DataPoint(source: source, timeNs: Int64(bitPattern: time), name: name, type: type, value: value, payload: payload))
        }
    }

    private static func integer(_ bytes: [UInt8], at offset: inout Int, width: Int, what: String) throws(DecodingError) -> UInt64 {
        guard bytes.count - offset >= width else {
            throw DecodingError(offset: offset, problem: "\(bytes.count - offset) bytes left, expected the \(width)-byte \(what)")
        }
        var value: UInt64 = 0
        for index in 0..<width { value |= UInt64(bytes[offset + index]) << (8 * UInt64(index)) }
        offset += width
        return value
    }

    private static func field(_ bytes: [UInt8], at offset: inout Int, what: String) throws(DecodingError) -> [UInt8] {
        let length = Int(try integer(bytes, at: &offset, width: 4, what: "\(what) length"))
        guard bytes.count - offset >= length else {
            throw DecodingError(offset: offset, problem: "\(what) of \(length) bytes, only \(bytes.count - offset) left")
        }
        defer { offset += length }
        return Array(bytes[offset..<(offset + length)])
    }

    private static func text(_ bytes: [UInt8], at offset: inout Int, what: String) throws(DecodingError) -> String {
        let start = offset
        let raw = try field(bytes, at: &offset, what: what)
        guard let text = String(validating: raw, as: UTF8.self) else {
            throw DecodingError(offset: start, problem: "\(what) is not UTF-8")
        }
        return text
    }
}
