/// iSCP 2.0 payload formats ("extended specification: payload format"), as listed in
/// docs/motion-plugin-udp.md. Types with a public byte layout are decoded; every other
/// type is kept as opaque ``DataValue/bytes(_:)`` under its type name.
extension DataValue {
    /// Decodes a payload (already base64-decoded) of the iSCP type `type`.
    ///
    /// - `float64`, `int64`: 8 bytes, big-endian; `vector_2d`/`vector_3d`: 2/3 big-endian float64.
    /// - `string`, `string/json`, `string/csv`, `string/nmea`: UTF-8 text.
    /// - anything else (`bytes`, media frames, types without a public layout, unknown types):
    ///   the bytes as they are, never refused.
    /// - Throws: ``PayloadDecodingError`` when the length does not fit the type, or a text type is
    ///   not UTF-8.
    public static func decode(type: String, payload: UnsafeRawBufferPointer) throws(PayloadDecodingError) -> DataValue {
        switch type {
        case "float64":
            try PayloadDecodingError.check(type: type, payload: payload, expected: 8)
            return .float64(Double(bitPattern: readBigEndian(payload, at: 0)))
        case "int64":
            try PayloadDecodingError.check(type: type, payload: payload, expected: 8)
            return .int64(Int64(bitPattern: readBigEndian(payload, at: 0)))
        case "vector_2d":
            try PayloadDecodingError.check(type: type, payload: payload, expected: 16)
            return .vector2D(
                Double(bitPattern: readBigEndian(payload, at: 0)),
                Double(bitPattern: readBigEndian(payload, at: 8)))
        case "vector_3d":
            try PayloadDecodingError.check(type: type, payload: payload, expected: 24)
            return .vector3D(
                Double(bitPattern: readBigEndian(payload, at: 0)),
                Double(bitPattern: readBigEndian(payload, at: 8)),
                Double(bitPattern: readBigEndian(payload, at: 16)))
        case "string", "string/json", "string/csv", "string/nmea":
            guard let text = String(validating: payload, as: UTF8.self) else {
                throw PayloadDecodingError(type: type, length: payload.count, reason: .notUTF8,
                                           expected: "UTF-8 text")
            }
            return .string(text)
        default:
            return .bytes(Array(payload))
        }
    }

    /// Decodes a payload (already base64-decoded) of the iSCP type `type`; see the other overload.
    public static func decode(type: String, payload: [UInt8]) throws(PayloadDecodingError) -> DataValue {
        // A closure cannot carry the typed error out, so the result travels instead.
        let result = payload.withUnsafeBytes { bytes -> Result<DataValue, PayloadDecodingError> in
            do throws(PayloadDecodingError) {
                return .success(try decode(type: type, payload: bytes))
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// The caller guarantees `offset + 8 <= payload.count`.
    private static func readBigEndian(_ payload: UnsafeRawBufferPointer, at offset: Int) -> UInt64 {
        var value: UInt64 = 0
        for i in offset..<(offset + 8) { value = value << 8 | UInt64(payload[i]) }
        return value
    }
}

/// A payload that does not fit its declared type.
public struct PayloadDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The iSCP type name as sent.
    public var type: String
    /// The decoded payload's length in bytes.
    public var length: Int
    /// ``RejectionReason/payloadLength`` or ``RejectionReason/notUTF8``.
    public var reason: RejectionReason
    /// What the type needs.
    public var expected: String

    /// Creates an error.
    public init(type: String, length: Int, reason: RejectionReason, expected: String) {
        self.type = type
        self.length = length
        self.reason = reason
        self.expected = expected
    }

    /// One line naming the type, what it needs and what came.
    public var description: String {
        "a \(type) payload needs \(expected), got \(length) bytes"
    }

    static func check(type: String, payload: UnsafeRawBufferPointer, expected: Int) throws(PayloadDecodingError) {
        guard payload.count == expected else {
            throw PayloadDecodingError(type: type, length: payload.count, reason: .payloadLength,
                                       expected: "exactly \(expected) bytes")
        }
    }
}

/// The payload layouts ``DataValue/decode(type:payload:)-(_,UnsafeRawBufferPointer)`` tells apart,
/// found once per type name (``EntryTextCache`` keeps it with the name).
enum PayloadKind: Sendable, Hashable {
    case float64, int64, vector2D, vector3D, text, opaque

    /// The kind a type name's bytes name. Bytes are compared exactly, which is `String`
    /// equality for the ASCII names the fast paths pass (they leave non-ASCII to the general reader).
    init(typeName bytes: UnsafeRawBufferPointer) {
        func named(_ name: StaticString) -> Bool {
            name.utf8CodeUnitCount == bytes.count && name.withUTF8Buffer { bytes.elementsEqual($0) }
        }
        if named("float64") { self = .float64 }
        else if named("int64") { self = .int64 }
        else if named("vector_2d") { self = .vector2D }
        else if named("vector_3d") { self = .vector3D }
        else if named("string") || named("string/json") || named("string/csv") || named("string/nmea") { self = .text }
        else { self = .opaque }
    }
}

extension DataValue {
    /// The fast paths' decoding: the value ``decode(type:payload:)-(_,UnsafeRawBufferPointer)``
    /// gives for a type of this kind, or nil where it throws (the general reader then says why).
    @inline(__always)
    static func decodeIfValid(kind: PayloadKind, payload: UnsafeRawBufferPointer) -> DataValue? {
        switch kind {
        case .float64:
            guard payload.count == 8 else { return nil }
            return .float64(Double(bitPattern: UInt64(bigEndian: payload.loadUnaligned(as: UInt64.self))))
        case .int64:
            guard payload.count == 8 else { return nil }
            return .int64(Int64(bitPattern: UInt64(bigEndian: payload.loadUnaligned(as: UInt64.self))))
        case .vector2D:
            guard payload.count == 16 else { return nil }
            return .vector2D(
                Double(bitPattern: UInt64(bigEndian: payload.loadUnaligned(as: UInt64.self))),
                Double(bitPattern: UInt64(bigEndian: payload.loadUnaligned(fromByteOffset: 8, as: UInt64.self))))
        case .vector3D:
            guard payload.count == 24 else { return nil }
            return .vector3D(
                Double(bitPattern: UInt64(bigEndian: payload.loadUnaligned(as: UInt64.self))),
                Double(bitPattern: UInt64(bigEndian: payload.loadUnaligned(fromByteOffset: 8, as: UInt64.self))),
                Double(bitPattern: UInt64(bigEndian: payload.loadUnaligned(fromByteOffset: 16, as: UInt64.self))))
        case .text:
            return String(validating: payload, as: UTF8.self).map { .string($0) }
        case .opaque:
            return .bytes(Array(payload))
        }
    }
}
