import Testing
import TetherTestSupport

@testable import IngestCore
@testable import BehaviourTrace

// A `datapoint`'s fields are held inline (`TraceEvent.Storage.dataPoint`) instead of in a
// dictionary. Everything observable must be as if they were a dictionary: `fields`, `field(_:)`,
// equality, hashing and the JSON line, byte for byte.

/// The same event with its fields forced into a dictionary, the form every event had before.
private func dictionaryForm(_ event: TraceEvent) -> TraceEvent {
    var copy = event
    copy.storage = .dictionary(event.fields)
    return copy
}

private func randomText(_ random: inout SplitMix64) -> String {
    let pieces = ["a", "yaw", "v1/1/pitch", "\"", "\\", "\n", "\u{01}", "é", "😀", "127.0.0.1:5", "[::1]:12345", " "]
    let count = Int(random.next() % 5)
    return (0..<count).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined()
}

private func randomValue(_ random: inout SplitMix64, depth: Int = 0) -> TraceValue {
    switch random.next() % (depth < 2 ? 7 : 5) {
    case 0: return .string(randomText(&random))
    case 1: return .int(Int64(bitPattern: random.next()))
    case 2: return .double(Double(bitPattern: random.next() & 0x7FEF_FFFF_FFFF_FFFF) * (random.chance(0.5) ? -1 : 1))
    case 3: return .bool(random.chance(0.5))
    case 4: return .null
    case 5: return .array((0..<Int(random.next() % 3)).map { _ in randomValue(&random, depth: depth + 1) })
    default:
        var members: [String: TraceValue] = [:]
        for _ in 0..<Int(random.next() % 3) { members[randomText(&random)] = randomValue(&random, depth: depth + 1) }
        return .object(members)
    }
}

/// A datapoint's text: at most three pieces, so the texts a test interns stay well inside
/// ``TraceName/fieldTextLimit`` (about 1,900 distinct).
private func randomFieldText(_ random: inout SplitMix64) -> TraceName {
    let pieces = ["a", "yaw", "v1/1/pitch", "\"", "\\", "\n", "\u{01}", "é", "😀", "127.0.0.1:5", "[::1]:12345", " "]
    let count = Int(random.next() % 4)
    return TraceName(fieldText: (0..<count).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined())!
}

private func randomDataPoint(_ random: inout SplitMix64) -> DataPointFields {
    DataPointFields(source: randomFieldText(&random), name: randomFieldText(&random), type: randomFieldText(&random),
                    timeNs: Int64(bitPattern: random.next()), value: randomValue(&random))
}

@Test func inlineDataPointReadsEncodesAndComparesAsItsDictionary() {
    var random = SplitMix64(seed: 0x7E7E_0001)
    for _ in 0..<2_000 {
        let point = randomDataPoint(&random)
        let event = TraceEvent(timeNs: Int64(bitPattern: random.next()), core: "ingest", event: "datapoint", dataPoint: point)
        let expected: [String: TraceValue] = ["source": .string(point.source.text), "name": .string(point.name.text),
                                              "type": .string(point.type.text), "time_ns": .int(point.timeNs), "value": point.value]
        #expect(event.fields == expected)
        for key in DataPointFields.keys + ["bytes", "t_ns", "core", "event", ""] {
            #expect(event.field(key) == expected[key])
        }
        let reference = dictionaryForm(event)
        #expect(event.jsonLine() == reference.jsonLine())
        #expect(TraceFile.encodeBytes([event, event]) == TraceFile.encodeBytes([reference, reference]))
        // Made from the dictionary, the same fields take the inline form, so the two are equal.
        let fromDictionary = TraceEvent(timeNs: event.timeNs, core: event.core, event: event.event, fields: expected)
        #expect(fromDictionary.storage == event.storage)
        #expect(fromDictionary == event)
        #expect(fromDictionary.hashValue == event.hashValue)
        #expect(event.hasSameFields(as: fromDictionary))
    }
}

/// A datapoint whose texts the name table no longer takes stays in a dictionary: it writes the
/// same line, has the same digest (which committed baseline indexes hold), and is the same event.
@Test func aDatapointHeldInADictionaryIsTheSameEventAsItsInlineForm() {
    var random = SplitMix64(seed: 0x7E7E_0004)
    for _ in 0..<500 {
        let point = randomDataPoint(&random)
        let event = TraceEvent(timeNs: Int64(bitPattern: random.next()), core: "ingest", event: "datapoint", dataPoint: point)
        let held = dictionaryForm(event)
        guard case .dictionary = held.storage else {
            Issue.record("the test's event is not in a dictionary")
            return
        }
        #expect(held.jsonLine() == event.jsonLine())
        #expect(held.stableDigest == event.stableDigest)
        #expect(held == event)
        #expect(held.hashValue == event.hashValue)
        #expect(held.hasSameFields(as: event))
    }
}

@Test func parsedDatapointLineTakesTheInlineForm() throws {
    let line = #"{"t_ns":5,"core":"ingest","event":"datapoint","name":"v1/1/yaw","source":"127.0.0.1:5","time_ns":7,"type":"float64","value":1.5}"#
    let event = try TraceEvent(jsonLine: line, lineNumber: 1, file: "t")
    guard case .dataPoint(let point) = event.storage else {
        Issue.record("a datapoint line was parsed into a dictionary")
        return
    }
    #expect(point == DataPointFields(source: "127.0.0.1:5", name: "v1/1/yaw", type: "float64", timeNs: 7, value: .double(1.5)))
    #expect(event.jsonLine() == line)
}

@Test func onlyExactlyADatapointsFieldsTakeTheInlineForm() {
    let base: [String: TraceValue] = ["source": .string("s"), "name": .string("n"), "type": .string("t"),
                                      "time_ns": .int(1), "value": .double(2)]
    #expect(TraceEvent(timeNs: 0, core: "c", event: "e", fields: base).storage == .dataPoint(
        DataPointFields(source: "s", name: "n", type: "t", timeNs: 1, value: .double(2))))
    expectDictionaryForm(forEveryNearMissOf: base, extra: ("bytes", .string("00")),
                         wrong: [("source", .int(1)), ("name", .null), ("type", .array([])), ("time_ns", .double(1)), ("time_ns", .string("1"))])
}

/// Fields one step from `base` (a key missing, a key renamed, `extra` added, a value of the wrong
/// kind) take the dictionary form, read back as given, and differ from `base`'s event.
func expectDictionaryForm(forEveryNearMissOf base: [String: TraceValue], extra: (key: String, value: TraceValue),
                          wrong: [(key: String, value: TraceValue)]) {
    var variants: [[String: TraceValue]] = []
    for key in base.keys {
        var missing = base
        missing[key] = nil
        variants.append(missing)
        var renamed = missing
        renamed["other"] = base[key]
        variants.append(renamed)
    }
    var added = base
    added[extra.key] = extra.value
    variants.append(added)
    for (key, value) in wrong {
        var changed = base
        changed[key] = value
        variants.append(changed)
    }
    for fields in variants {
        let event = TraceEvent(timeNs: 0, core: "c", event: "e", fields: fields)
        #expect(event.storage == .dictionary(fields))
        #expect(event.fields == fields)
        #expect(event != TraceEvent(timeNs: 0, core: "c", event: "e", fields: base))
    }
}

@Test func writingFieldsKeepsTheFormCanonical() {
    let point = DataPointFields(source: "s", name: "n", type: "t", timeNs: 1, value: .int(3))
    var event = TraceEvent(timeNs: 0, core: "ingest", event: "datapoint", dataPoint: point)
    event.fields["extra"] = .bool(true)
    guard case .dictionary(let fields) = event.storage else {
        Issue.record("six fields stayed inline")
        return
    }
    #expect(fields["extra"] == .bool(true) && fields.count == 6)
    event.fields["extra"] = nil
    #expect(event.storage == .dataPoint(point))
    event.fields["value"] = .string("v")
    #expect(event.field("value") == .string("v"))
    #expect(event == TraceEvent(timeNs: 0, core: "ingest", event: "datapoint", fields: [
        "source": .string("s"), "name": .string("n"), "type": .string("t"), "time_ns": .int(1), "value": .string("v")]))
}

/// Equality of events, inline or not, is equality of their times, cores, names and fields as
/// dictionaries; hashing agrees with it.
@Test func seededEqualityAgreesWithTheDictionaryForm() {
    var random = SplitMix64(seed: 0x7E7E_0002)
    func variant(of point: DataPointFields) -> DataPointFields {
        var p = point
        switch random.next() % 6 {
        case 0: p.source = randomFieldText(&random)
        case 1: p.name = randomFieldText(&random)
        case 2: p.type = randomFieldText(&random)
        case 3: p.timeNs = Int64(random.next() % 3)
        case 4: p.value = randomValue(&random)
        default: break
        }
        return p
    }
    for _ in 0..<2_000 {
        let point = randomDataPoint(&random)
        let a = TraceEvent(timeNs: 1, core: "ingest", event: "datapoint", dataPoint: point)
        var b = TraceEvent(timeNs: 1, core: "ingest", event: "datapoint", dataPoint: variant(of: point))
        if random.chance(0.2) { b.fields["extra"] = .null }
        let same = a.fields == b.fields
        #expect((a == b) == same)
        #expect(a.hasSameFields(as: b) == same)
        if same { #expect(a.hashValue == b.hashValue) }
    }
}


// A `chunk`'s fields are held inline too (`TraceEvent.Storage.chunk`), with the same promise.

@Test func inlineChunkReadsEncodesDigestsAndComparesAsItsDictionary() {
    var random = SplitMix64(seed: 0x7E7E_0003)
    for _ in 0..<2_000 {
        let chunk = ChunkFields(source: randomText(&random), sequence: Int64(bitPattern: random.next()),
                                points: Int64(bitPattern: random.next()), bytes: Int64(bitPattern: random.next()))
        let event = TraceEvent(timeNs: Int64(bitPattern: random.next()), core: "ingest", event: "chunk", chunk: chunk)
        let expected: [String: TraceValue] = ["source": .string(chunk.source), "sequence": .int(chunk.sequence),
                                              "points": .int(chunk.points), "bytes": .int(chunk.bytes)]
        #expect(event.fields == expected)
        for key in ChunkFields.keys + ["name", "t_ns", "core", "event", ""] {
            #expect(event.field(key) == expected[key])
        }
        let reference = dictionaryForm(event)
        #expect(event.jsonLine() == reference.jsonLine())
        #expect(TraceFile.encodeBytes([event, event]) == TraceFile.encodeBytes([reference, reference]))
        // Committed baseline indexes hold the dictionary form's digest.
        #expect(event.stableDigest == reference.stableDigest)
        let fromDictionary = TraceEvent(timeNs: event.timeNs, core: event.core, event: event.event, fields: expected)
        #expect(fromDictionary.storage == event.storage)
        #expect(fromDictionary == event)
        #expect(fromDictionary.hashValue == event.hashValue)
        #expect(event.hasSameFields(as: fromDictionary))
    }
}

@Test func parsedChunkLineTakesTheInlineForm() throws {
    let line = #"{"t_ns":100000000,"core":"ingest","event":"chunk","bytes":96,"points":12,"sequence":1,"source":"127.0.0.1:50123"}"#
    let event = try TraceEvent(jsonLine: line, lineNumber: 1, file: "t")
    #expect(event.storage == .chunk(ChunkFields(source: "127.0.0.1:50123", sequence: 1, points: 12, bytes: 96)))
    #expect(event.jsonLine() == line)
}

@Test func onlyExactlyAChunksFieldsTakeTheInlineForm() {
    let base: [String: TraceValue] = ["source": .string("s"), "sequence": .int(1), "points": .int(2), "bytes": .int(3)]
    #expect(TraceEvent(timeNs: 0, core: "c", event: "e", fields: base).storage == .chunk(
        ChunkFields(source: "s", sequence: 1, points: 2, bytes: 3)))
    expectDictionaryForm(forEveryNearMissOf: base, extra: ("name", .string("n")),
                         wrong: [("source", .int(1)), ("sequence", .double(1)), ("points", .string("2")), ("bytes", .null)])
}
