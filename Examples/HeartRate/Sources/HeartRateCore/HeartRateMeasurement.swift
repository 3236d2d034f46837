/// One value of the Heart Rate Measurement characteristic (UUID 0x2A37), decoded.
///
/// The layout follows the Heart Rate Service specification v1.0 and the GATT Specification
/// Supplement: a flags byte, then the heart rate (UInt8 or UInt16 LE), then the optional Energy
/// Expended (UInt16 LE, kJ), then zero or more RR intervals (UInt16 LE, 1/1024 s), all of them
/// decided by the flags. The struct keeps the value format so that `encoded()` gives back the
/// bytes a sensor sent, which the rig tests and the round-trip tests rely on.
public struct HeartRateMeasurement: Equatable, Hashable, Sendable {
    /// Heart rate in beats per minute.
    public var heartRate: UInt16
    /// Whether the sensor sent the heart rate as one byte or two. Kept because a sensor may send
    /// a small value in the 16-bit form, and a faithful re-encoding must do the same.
    public var valueFormat: HeartRateValueFormat
    /// What the sensor says about skin contact (flags bits 1-2).
    public var sensorContact: SensorContact
    /// Accumulated energy expended in kilojoules since the last reset, when the sensor sent it
    /// (flags bit 3). 0xFFFF means "at least 65535 kJ": the spec has the field saturate there.
    public var energyExpended: UInt16?
    /// RR intervals, oldest first, in units of 1/1024 s (flags bit 4); empty when absent.
    /// A sensor sends as many as it measured since its previous notification, possibly none.
    public var rrIntervals: [UInt16]

    /// A measurement; `valueFormat` defaults to the narrowest form that holds `heartRate`, which
    /// is what sensors do, so callers only name the format when they need the unusual one.
    public init(
        heartRate: UInt16,
        valueFormat: HeartRateValueFormat? = nil,
        sensorContact: SensorContact = .notSupported,
        energyExpended: UInt16? = nil,
        rrIntervals: [UInt16] = []
    ) {
        self.heartRate = heartRate
        self.valueFormat = valueFormat ?? (heartRate > UInt16(UInt8.max) ? .uint16 : .uint8)
        self.sensorContact = sensorContact
        self.energyExpended = energyExpended
        self.rrIntervals = rrIntervals
    }

    /// The RR intervals in seconds, for callers that do not want to remember the 1/1024 unit.
    public var rrIntervalsInSeconds: [Double] {
        rrIntervals.map { Double($0) / 1024.0 }
    }
}

/// How the heart rate field is encoded (flags bit 0).
public enum HeartRateValueFormat: String, Equatable, Hashable, Sendable {
    /// Flags bit 0 clear: one byte, 0-255 bpm.
    case uint8
    /// Flags bit 0 set: two bytes little-endian.
    case uint16
}

/// The sensor contact status of a measurement (flags bits 1-2: bit 2 = supported, bit 1 =
/// detected). Bit 1 means nothing when bit 2 is clear, so "not supported" is one case, never
/// "no contact": reporting lost contact for a strap that cannot tell would be a false alarm.
public enum SensorContact: String, Equatable, Hashable, Sendable {
    /// The sensor does not report contact in this connection (bits 2-1 = 00 or 01).
    case notSupported = "not_supported"
    /// Contact detection is supported and the sensor is not touching the skin (bits 2-1 = 10).
    case notDetected = "not_detected"
    /// Contact detection is supported and the sensor is touching the skin (bits 2-1 = 11).
    case detected

    /// Whether the sensor is touching the skin, or nil when it cannot tell.
    public var isDetected: Bool? {
        switch self {
        case .notSupported: nil
        case .notDetected: false
        case .detected: true
        }
    }
}

/// The fields of a Heart Rate Measurement, named in parse errors so a report says which one ran
/// out of bytes.
public enum HeartRateMeasurementField: String, Equatable, Hashable, Sendable {
    /// The flags byte at offset 0.
    case flags
    /// The heart rate, one or two bytes after the flags.
    case heartRate = "heart_rate"
    /// The Energy Expended field, two bytes.
    case energyExpended = "energy_expended"
    /// One RR interval, two bytes.
    case rrInterval = "rr_interval"
}

/// Why a Heart Rate Measurement value could not be decoded: `field` needed `needed` bytes at byte
/// `offset` of the value, and only `available` were left. Every malformed value the parser can
/// meet is a field that ran out of bytes (an empty value, a short heart rate or energy field, the
/// RR flag with no interval after it, an odd byte at the end of the RR list), so one typed error
/// with the offset is enough to report it and find it in a capture.
public struct HeartRateMeasurementError: Error, Equatable, Hashable, Sendable, CustomStringConvertible {
    /// The field that was cut short.
    public var field: HeartRateMeasurementField
    /// Byte offset in the characteristic value where that field starts.
    public var offset: Int
    /// Bytes the field needs.
    public var needed: Int
    /// Bytes that were left from `offset` (fewer than `needed`).
    public var available: Int

    /// An error; public so that tests and adapters can build the one they expect.
    public init(field: HeartRateMeasurementField, offset: Int, needed: Int, available: Int) {
        self.field = field
        self.offset = offset
        self.needed = needed
        self.available = available
    }

    /// One line for logs and traces.
    public var description: String {
        "\(field.rawValue) at offset \(offset) needs \(needed) byte(s), \(available) left"
    }
}

extension HeartRateMeasurement {
    /// Flag bits of the first byte, named once so the parser and the encoder cannot disagree.
    enum Flag {
        static let valueFormatUInt16: UInt8 = 0x01
        static let contactDetected: UInt8 = 0x02
        static let contactSupported: UInt8 = 0x04
        static let energyExpendedPresent: UInt8 = 0x08
        static let rrIntervalsPresent: UInt8 = 0x10
    }

    /// Decodes a Heart Rate Measurement value.
    ///
    /// Reserved flag bits (5-7) are ignored, as the spec asks of a client, so that a sensor
    /// implementing a later revision still decodes. Bytes are never read past the end: a value
    /// that is too short for what its flags announce throws `HeartRateMeasurementError` with the
    /// offset of the field, so a malformed notification becomes an event, not a crash.
    public init(parsing value: [UInt8]) throws(HeartRateMeasurementError) {
        var reader = ByteReader(value)
        let flags = try reader.uint8(.flags)
        let format: HeartRateValueFormat = flags & Flag.valueFormatUInt16 != 0 ? .uint16 : .uint8
        let heartRate: UInt16
        switch format {
        case .uint8: heartRate = UInt16(try reader.uint8(.heartRate))
        case .uint16: heartRate = try reader.uint16(.heartRate)
        }
        let contact: SensorContact
        if flags & Flag.contactSupported == 0 {
            contact = .notSupported
        } else {
            contact = flags & Flag.contactDetected != 0 ? .detected : .notDetected
        }
        var energy: UInt16?
        if flags & Flag.energyExpendedPresent != 0 {
            energy = try reader.uint16(.energyExpended)
        }
        var intervals: [UInt16] = []
        if flags & Flag.rrIntervalsPresent != 0 {
            // The flag promises "one or more" intervals; the count is whatever the length leaves.
            repeat {
                intervals.append(try reader.uint16(.rrInterval))
            } while !reader.isAtEnd
        }
        // Bytes after a complete value with no RR flag are left alone: the spec defines nothing
        // there, and refusing them would drop measurements from sensors that pad their values.
        self.init(
            heartRate: heartRate, valueFormat: format, sensorContact: contact,
            energyExpended: energy, rrIntervals: intervals
        )
    }

    /// The characteristic value for this measurement: what a sensor would notify.
    ///
    /// A heart rate above 255 is always written in the 16-bit form, even when `valueFormat` says
    /// `.uint8`, because the one-byte form cannot hold it and the encoder must not lose data.
    /// The RR flag is set exactly when `rrIntervals` is not empty.
    public func encoded() -> [UInt8] {
        let wide = valueFormat == .uint16 || heartRate > UInt16(UInt8.max)
        var flags: UInt8 = wide ? Flag.valueFormatUInt16 : 0
        switch sensorContact {
        case .notSupported: break
        case .notDetected: flags |= Flag.contactSupported
        case .detected: flags |= Flag.contactSupported | Flag.contactDetected
        }
        if energyExpended != nil { flags |= Flag.energyExpendedPresent }
        if !rrIntervals.isEmpty { flags |= Flag.rrIntervalsPresent }
        var bytes: [UInt8] = [flags]
        if wide {
            bytes.appendLittleEndian(heartRate)
        } else {
            bytes.append(UInt8(heartRate))
        }
        if let energyExpended { bytes.appendLittleEndian(energyExpended) }
        for interval in rrIntervals { bytes.appendLittleEndian(interval) }
        return bytes
    }
}

/// A bounds-checked little-endian reader: every read names its field so that running out of
/// bytes turns into a `HeartRateMeasurementError` with the right offset, never an index trap.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset >= bytes.count }

    mutating func uint8(_ field: HeartRateMeasurementField) throws(HeartRateMeasurementError) -> UInt8 {
        try need(1, for: field)
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16(_ field: HeartRateMeasurementField) throws(HeartRateMeasurementError) -> UInt16 {
        try need(2, for: field)
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }

    private func need(_ count: Int, for field: HeartRateMeasurementField) throws(HeartRateMeasurementError) {
        let available = bytes.count - offset
        if available < count {
            throw HeartRateMeasurementError(field: field, offset: offset, needed: count, available: available)
        }
    }
}

extension Array where Element == UInt8 {
    /// Appends `value` little-endian, the byte order of every multi-byte GATT field here.
    mutating func appendLittleEndian(_ value: UInt16) {
        append(UInt8(truncatingIfNeeded: value))
        append(UInt8(truncatingIfNeeded: value >> 8))
    }
}
