import Testing
import TetherTestSupport

@testable import IngestCore

// A chunk holds its points packed (`PackedDataPoints`), the form the store keeps on disk. Reading
// them back must give exactly the points the core reported, and a doctored buffer must be refused
// with the offset of the fault.

/// One data message with a payload of each shape the core knows: inline, long, string, opaque.
private func mixedMessage(time: String) -> [UInt8] {
    sampleDataMessage(time: time, entries: [
        ("v1/1/yaw", "float64", float64Bytes(1.5)),
        ("v1/1/count", "int64", [0, 0, 0, 0, 0, 0, 1, 2]),
        ("v1/1/pos", "vector_3d", float64Bytes(1) + float64Bytes(2) + float64Bytes(3)),
        ("v1/1/note", "string", Array("héllo, a note longer than twenty-four bytes".utf8)),
        ("v1/1/blob", "vendor/x", Array(0..<40)),
    ])
}

@Test func chunkPointsReadBackAsTheReportedPoints() {
    var core = IngestCore()
    var events: [IngestEvent] = []
    for i in 0..<5 {
        events += core.receive(mixedMessage(time: "1700000000.\(i)"), from: plugin, now: ms(10 * i))
    }
    events += core.finish(now: ms(100))
    let reported = points(events)
    #expect(reported.count == 25)
    let chunked = chunks(events).flatMap(\.dataPoints)
    #expect(chunked == reported)
    #expect(chunks(events).map(\.dataPointCount).reduce(0, +) == 25)
}

@Test func coreWithoutPointEventsMakesTheSameChunksAndOtherEvents() {
    var reporting = IngestCore()
    var silent = IngestCore(reportsDataPoints: false)
    var random = SplitMix64(seed: 0x9ACC_0001)
    var expected: [IngestEvent] = []
    var got: [IngestEvent] = []
    for i in 0..<300 {
        let datagram = random.next() % 7 == 0 ? bytes("{\"end\":\"true\"}") : mixedMessage(time: "1700000000.\(i)")
        expected += reporting.receive(datagram, from: i % 3 == 0 ? otherPlugin : plugin, now: ms(40 * i))
        got += silent.receive(datagram, from: i % 3 == 0 ? otherPlugin : plugin, now: ms(40 * i))
    }
    expected += reporting.finish(now: ms(20_000))
    got += silent.finish(now: ms(20_000))
    #expect(points(got).isEmpty)
    #expect(!points(expected).isEmpty)
    let withoutPoints = expected.filter { if case .dataPoint = $0 { false } else { true } }
    #expect(got == withoutPoints)
    #expect(silent.counters == reporting.counters)
}

@Test func aChunkOfRepeatedLayoutsPacksToTheBytesOfItsPointsPackedOneByOne() {
    // Datagrams laid out as the one before them are packed under the keys that one defined,
    // without comparing names: the buffer must be the one packing each point makes, byte for
    // byte (a store tells a retried chunk from another by its bytes).
    var core = IngestCore(configuration: .init(flushInterval: .seconds(3600), flushBytes: 1_500))
    var random = SplitMix64(seed: 0x9ACC_0002)
    var events: [IngestEvent] = []
    for i in 0..<600 {
        let datagram: [UInt8]
        switch random.next() % 10 {
        case 0: datagram = floatMessage(time: "1700000000.\(i)", [("gnss/lat", 35.6), ("gnss/lon", Double(i))])
        case 1: datagram = floatMessage(time: "1699999999.\(i)", [("v1/1/yaw", Double(i))])  // time goes backwards
        case 2: datagram = mixedMessage(time: "1700000000.\(i)")  // not ASCII: the general reader's
        default:
            // Plain ASCII: the template path, whose layouts make packing reuse the keys.
            datagram = sampleDataMessage(time: "1700000000.\(i)", entries: [
                ("v1/1/yaw", "float64", float64Bytes(Double(i))), ("v1/1/count", "int64", [0, 0, 0, 0, 0, 0, 1, UInt8(i & 0xFF)]),
                ("v1/1/note", "string", Array("a note of \(i)".utf8)), ("v1/1/blob", "vendor/x", Array(repeating: UInt8(i & 0xFF), count: i % 50)),
            ])
        }
        events += core.receive(datagram, from: i % 4 == 0 ? otherPlugin : plugin, now: ms(i))
    }
    events += core.finish(now: ms(10_000))
    let made = chunks(events)
    #expect(made.count > 10)
    for chunk in made {
        #expect(chunk.packedPoints.bytes == PackedDataPoints(chunk.dataPoints).bytes)
    }
    for source in [plugin, otherPlugin] {
        #expect(made.filter { $0.source == source }.flatMap(\.dataPoints) == points(events).filter { $0.source == source })
    }
    #expect(made.map(\.dataPointCount).reduce(0, +) == points(events).count)
}

@Test func packedLayoutIsTheDocumentedOne() throws {
    let first = DataPoint(source: plugin, timeNs: 300, name: "ab", type: "int64", value: .int64(7),
                          payload: [0, 0, 0, 0, 0, 0, 0, 7])
    let second = DataPoint(source: plugin, timeNs: 300, name: "c", type: "float64", value: .float64(1), payload: float64Bytes(1))
    let third = DataPoint(source: plugin, timeNs: 299, name: "ab", type: "int64", value: .int64(8),
                          payload: [0, 0, 0, 0, 0, 0, 0, 8])
    let packed = PackedDataPoints([first, second, third])
    let expected: [UInt8] = [2]  // format
        // key 0 defined here: "ab", "int64"; time 300 - 0 = 300, zigzag 600 = 0xD8 0x04; payload
        + [0, 2] + Array("ab".utf8) + [5] + Array("int64".utf8) + [0xD8, 0x04] + [8, 0, 0, 0, 0, 0, 0, 0, 7]
        // key 1 defined: "c", "float64"; same time, difference 0
        + [1, 1] + Array("c".utf8) + [7] + Array("float64".utf8) + [0] + [8] + float64Bytes(1)
        // key 0 again; one nanosecond back, zigzag 1
        + [0, 1, 8, 0, 0, 0, 0, 0, 0, 0, 8]
    #expect(packed.bytes == expected)
    #expect(packed.count == 3)
    #expect(try PackedDataPoints(validating: expected).dataPoints(source: plugin) == [first, second, third])
}

@Test func formatOneBuffersFromOlderStoresStillRead() throws {
    // Format 1: int64 time, then name, type and payload each with a uint32 length.
    let buffer: [UInt8] = [1]
        + [0x02, 0x01, 0, 0, 0, 0, 0, 0]
        + [2, 0, 0, 0] + Array("ab".utf8)
        + [5, 0, 0, 0] + Array("int64".utf8)
        + [8, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 7]
    let packed = try PackedDataPoints(validating: buffer)
    let point = DataPoint(source: plugin, timeNs: 0x0102, name: "ab", type: "int64", value: .int64(7), payload: [0, 0, 0, 0, 0, 0, 0, 7])
    #expect(packed.count == 1)
    #expect(try packed.dataPoints(source: plugin) == [point])
    // Appending to a buffer read back repacks it in the current format.
    var extended = packed
    extended.append(point)
    #expect(extended.bytes.first == PackedDataPoints.format)
    #expect(try extended.dataPoints(source: plugin) == [point, point])
}

@Test func aSixFloatDatagramPacksSmall() {
    // One chunk for all 100 datagrams, so its names and types are written once.
    var core = IngestCore(configuration: .init(flushInterval: .seconds(60)))
    let values = ["yaw", "pitch", "roll", "x", "y", "z"].map { ("v1/1/\($0)", 1.25) }
    var events: [IngestEvent] = []
    for i in 0..<100 { events += core.receive(floatMessage(time: "1700000000.\(100 + i)", values), from: plugin, now: ms(10 * i)) }
    events += core.finish(now: ms(2000))
    let packed = chunks(events).map(\.packedPoints.bytes.count).reduce(0, +)
    // A key, a time difference and a payload per point: 68 bytes a datagram (format 1 took 258).
    #expect(chunks(events).count == 1)
    #expect(packed < 100 * 70, "\(packed) bytes for 100 datagrams")
    #expect(chunks(events).flatMap(\.dataPoints) == points(events))
}

@Test func validatingRefusesATruncatedBufferAtTheFieldThatRunsOut() {
    let point = DataPoint(source: plugin, timeNs: 5, name: "name", type: "float64", value: .float64(1), payload: float64Bytes(1))
    let whole = PackedDataPoints([point]).bytes
    // Cut inside the name: its length says 4 bytes, 2 are left (format, key, length, 2 bytes).
    let cut = Array(whole[..<5])
    let error = #expect(throws: PackedDataPointsError.self) { try PackedDataPoints(validating: cut) }
    #expect(error?.offset == 3)
    #expect(error?.description.contains("name of 4 bytes, only 2 left") == true)
}

@Test func validatingRefusesAReferenceToAnUndefinedKey() {
    // Key 1 referenced while none is defined.
    let buffer: [UInt8] = [2, 1, 0, 0]
    let error = #expect(throws: PackedDataPointsError.self) { try PackedDataPoints(validating: buffer) }
    #expect(error?.offset == 1)
    #expect(error?.problem.contains("key reference 1, but only 0 keys are defined") == true)
}

@Test func validatingRefusesAVarintLongerThan64Bits() {
    let buffer: [UInt8] = [2, 0, 1] + Array("a".utf8) + [1] + Array("t".utf8) + Array(repeating: 0xFF, count: 10) + [0x01, 0]
    let error = #expect(throws: PackedDataPointsError.self) { try PackedDataPoints(validating: buffer) }
    #expect(error?.offset == 6)
    #expect(error?.problem.contains("does not fit in 64 bits") == true)
}

@Test func validatingRefusesAnUnknownFormatAndAnEmptyBuffer() {
    let wrongFormat = #expect(throws: PackedDataPointsError.self) { try PackedDataPoints(validating: [3]) }
    #expect(wrongFormat?.description == "packed points, byte 0: format 3, expected 2 or 1")
    let empty = #expect(throws: PackedDataPointsError.self) { try PackedDataPoints(validating: []) }
    #expect(empty?.offset == 0)
}

@Test func validatingRefusesANameThatIsNotUTF8() {
    let buffer: [UInt8] = [2, 0, 1, 0xFF, 5] + Array("bytes".utf8) + [0, 0]
    let error = #expect(throws: PackedDataPointsError.self) { try PackedDataPoints(validating: buffer) }
    #expect(error?.offset == 2)
    #expect(error?.problem == "name is not UTF-8")
}

@Test func aPayloadThatDoesNotFitItsTypeIsAnErrorWhenDecodedAndBytesInAChunk() {
    // A hand-made point: float64 needs 8 bytes. The core never packs one like it.
    let odd = DataPoint(source: plugin, timeNs: 1, name: "x", type: "float64", value: .float64(0), payload: [1, 2, 3])
    let packed = PackedDataPoints([odd])
    let error = #expect(throws: PackedDataPointsError.self) { try packed.dataPoints(source: plugin) }
    #expect(error?.offset == 1)
    let chunk = IngestChunk(source: plugin, streamStartNs: 0, sequence: 1, dataPoints: [odd], byteCount: 3)
    #expect(chunk.dataPoints.map(\.value) == [.bytes([1, 2, 3])])
    #expect(chunk.dataPoints.map(\.payload) == [[1, 2, 3]])
}
