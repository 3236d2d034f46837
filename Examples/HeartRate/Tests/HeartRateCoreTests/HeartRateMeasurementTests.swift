import Testing

@testable import HeartRateCore

/// Byte vectors shared with Harness/rigs/test_heart_rate_rigs.py, so the Swift parser and the
/// Python rig's encoder are checked against the same bytes rather than against each other.
/// Written out by hand from the Heart Rate Measurement layout, not produced by either encoder.
let sharedVectors: [(hex: String, measurement: HeartRateMeasurement)] = [
    ("0048", HeartRateMeasurement(heartRate: 72)),
    ("014800", HeartRateMeasurement(heartRate: 72, valueFormat: .uint16)),
    ("012c01", HeartRateMeasurement(heartRate: 300)),
    ("0648", HeartRateMeasurement(heartRate: 72, sensorContact: .detected)),
    ("0448", HeartRateMeasurement(heartRate: 72, sensorContact: .notDetected)),
    ("08483412", HeartRateMeasurement(heartRate: 72, energyExpended: 0x1234)),
    ("10480004", HeartRateMeasurement(heartRate: 72, rrIntervals: [1024])),
    ("104800045503", HeartRateMeasurement(heartRate: 72, rrIntervals: [1024, 853])),
    ("1e48341200045503", HeartRateMeasurement(
        heartRate: 72, sensorContact: .detected, energyExpended: 0x1234, rrIntervals: [1024, 853])),
    ("1f2c0134120004", HeartRateMeasurement(
        heartRate: 300, valueFormat: .uint16, sensorContact: .detected, energyExpended: 0x1234, rrIntervals: [1024])),
    ("1c5affff2003", HeartRateMeasurement(
        heartRate: 90, sensorContact: .notDetected, energyExpended: 0xFFFF, rrIntervals: [800])),
]

func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.filter { $0 != " " })
    return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
}

func hex(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}

@Suite("Heart Rate Measurement parser and encoder")
struct HeartRateMeasurementTests {
    @Test("each shared byte vector parses to its measurement", arguments: sharedVectors.indices)
    func sharedVectorParses(index: Int) throws {
        let (text, expected) = sharedVectors[index]
        #expect(try HeartRateMeasurement(parsing: bytes(text)) == expected)
    }

    @Test("each shared measurement encodes to its byte vector", arguments: sharedVectors.indices)
    func sharedVectorEncodes(index: Int) {
        let (text, measurement) = sharedVectors[index]
        #expect(hex(measurement.encoded()) == text)
    }

    /// Builds the value for `flags` by hand (heart rate 0x0150 or 0x50, energy 0x0203, RR 0x0405
    /// and 0x0607) and checks that the parser reads every field the flags announce.
    @Test("every combination of the five defined flag bits parses each field", arguments: 0..<32)
    func everyFlagCombination(flags: Int) throws {
        let wide = flags & 0x01 != 0
        var value: [UInt8] = [UInt8(flags)]
        value += wide ? [0x50, 0x01] : [0x50]
        if flags & 0x08 != 0 { value += [0x03, 0x02] }
        if flags & 0x10 != 0 { value += [0x05, 0x04, 0x07, 0x06] }

        let parsed = try HeartRateMeasurement(parsing: value)

        #expect(parsed.heartRate == (wide ? 0x0150 : 0x50))
        #expect(parsed.valueFormat == (wide ? .uint16 : .uint8))
        let expectedContact: SensorContact =
            flags & 0x04 == 0 ? .notSupported : (flags & 0x02 != 0 ? .detected : .notDetected)
        #expect(parsed.sensorContact == expectedContact)
        #expect(parsed.energyExpended == (flags & 0x08 != 0 ? 0x0203 : nil))
        #expect(parsed.rrIntervals == (flags & 0x10 != 0 ? [0x0405, 0x0607] : []))
    }

    @Test("every flag combination round-trips through the encoder, except the meaningless detected bit", arguments: 0..<32)
    func everyFlagCombinationRoundTrips(flags: Int) throws {
        var value: [UInt8] = [UInt8(flags)]
        value += flags & 0x01 != 0 ? [0x50, 0x01] : [0x50]
        if flags & 0x08 != 0 { value += [0x03, 0x02] }
        if flags & 0x10 != 0 { value += [0x05, 0x04] }
        var canonical = value
        if flags & 0x06 == 0x02 { canonical[0] &= ~0x02 }  // detected without supported means not supported

        #expect(try HeartRateMeasurement(parsing: value).encoded() == canonical)
    }

    @Test("detected bit without the supported bit means contact is not supported")
    func detectedWithoutSupportedIsNotSupported() throws {
        #expect(try HeartRateMeasurement(parsing: [0x02, 0x48]).sensorContact == .notSupported)
    }

    @Test("reserved flag bits 5-7 are ignored")
    func reservedBitsIgnored() throws {
        #expect(try HeartRateMeasurement(parsing: [0xE0, 0x48]) == HeartRateMeasurement(heartRate: 72))
    }

    @Test("bytes after a value without RR intervals are ignored")
    func trailingBytesWithoutRRFlagIgnored() throws {
        #expect(try HeartRateMeasurement(parsing: [0x00, 0x48, 0xAA]) == HeartRateMeasurement(heartRate: 72))
    }

    @Test("as many RR intervals as the length leaves are read, oldest first")
    func rrIntervalsFillTheRest() throws {
        let value: [UInt8] = [0x10, 0x48] + (1...7).flatMap { [UInt8($0), 0x03] }
        #expect(try HeartRateMeasurement(parsing: value).rrIntervals == (1...7).map { 0x0300 + UInt16($0) })
    }

    @Test("RR intervals convert to seconds at 1/1024 s")
    func rrIntervalsInSeconds() {
        #expect(HeartRateMeasurement(heartRate: 60, rrIntervals: [1024, 512]).rrIntervalsInSeconds == [1.0, 0.5])
    }

    static let truncated: [(hex: String, error: HeartRateMeasurementError)] = [
        ("", .init(field: .flags, offset: 0, needed: 1, available: 0)),
        ("00", .init(field: .heartRate, offset: 1, needed: 1, available: 0)),
        ("01", .init(field: .heartRate, offset: 1, needed: 2, available: 0)),
        ("0148", .init(field: .heartRate, offset: 1, needed: 2, available: 1)),
        ("0848", .init(field: .energyExpended, offset: 2, needed: 2, available: 0)),
        ("084834", .init(field: .energyExpended, offset: 2, needed: 2, available: 1)),
        ("1048", .init(field: .rrInterval, offset: 2, needed: 2, available: 0)),
        ("1048000455", .init(field: .rrInterval, offset: 4, needed: 2, available: 1)),
        ("192c01341200", .init(field: .rrInterval, offset: 5, needed: 2, available: 1)),
        ("18483412", .init(field: .rrInterval, offset: 4, needed: 2, available: 0)),
    ]

    @Test("a truncated value throws the field and byte offset where it ends", arguments: truncated.indices)
    func truncatedValue(index: Int) {
        let (text, expected) = Self.truncated[index]
        #expect(throws: expected) { try HeartRateMeasurement(parsing: bytes(text)) }
    }

    @Test("the error describes field, offset and byte counts in one line")
    func errorDescription() {
        let error = HeartRateMeasurementError(field: .rrInterval, offset: 4, needed: 2, available: 1)
        #expect(error.description == "rr_interval at offset 4 needs 2 byte(s), 1 left")
    }

    @Test("a heart rate above 255 is encoded in 16 bits even when the format says 8")
    func wideValueForcesUInt16() {
        var measurement = HeartRateMeasurement(heartRate: 300)
        measurement.valueFormat = .uint8
        #expect(measurement.encoded() == [0x01, 0x2C, 0x01])
    }

    @Test("the initializer picks the narrowest format that holds the heart rate")
    func defaultFormatIsNarrowest() {
        #expect(HeartRateMeasurement(heartRate: 255).valueFormat == .uint8)
        #expect(HeartRateMeasurement(heartRate: 256).valueFormat == .uint16)
    }
}

@Suite("Body Sensor Location")
struct BodySensorLocationTests {
    @Test("bytes 0-6 are the named locations and encode back", arguments: 0...6)
    func namedLocations(raw: Int) {
        let expected: [BodySensorLocation] = [.other, .chest, .wrist, .finger, .hand, .earLobe, .foot]
        let location = BodySensorLocation(rawValue: UInt8(raw))
        #expect(location == expected[raw])
        #expect(location.rawValue == UInt8(raw))
    }

    @Test("reserved bytes are kept as unknown with their value")
    func reservedIsUnknown() {
        #expect(BodySensorLocation(rawValue: 7) == .unknown(7))
        #expect(BodySensorLocation(rawValue: 0xFF).rawValue == 0xFF)
        #expect(BodySensorLocation(rawValue: 7).name == "unknown")
    }

    @Test("names are snake_case")
    func names() {
        #expect(BodySensorLocation.earLobe.name == "ear_lobe")
        #expect(BodySensorLocation.chest.name == "chest")
    }
}
