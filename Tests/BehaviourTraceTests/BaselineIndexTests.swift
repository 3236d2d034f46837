import Foundation
import Testing
import TetherTestSupport

@testable import BehaviourTrace

// A baseline's index (`<baseline>.index`) lets a replay that agrees with its baseline be checked by
// event digests alone. What must hold: the report is exactly the one made without the index, for
// any difference; an index that does not describe the file as it is now is not used; and the
// digest tells apart what the JSON line tells apart.

/// Mixed events: inline datapoints, dictionaries with nested values, every value type.
private func trace(_ count: Int) -> [TraceEvent] {
    (0..<count).map { i in
        switch i % 4 {
        case 0, 1:
            return TraceEvent(timeNs: Int64(i) * 50_000_000, core: "ingest", event: "datapoint", fields: [
                "source": .string("127.0.0.1:50123"), "name": .string("v1/1/\(["yaw", "pitch"][i % 2])"),
                "type": .string("float64"), "time_ns": .int(1_763_769_600_000_000_000 + Int64(i)), "value": .double(Double(i) * 0.123456789),
            ])
        case 2:
            return TraceEvent(timeNs: Int64(i) * 50_000_000, core: "ingest", event: "chunk", fields: [
                "source": .string("127.0.0.1:50123"), "sequence": .int(Int64(i / 4)), "points": .int(12), "ok": .bool(true),
            ])
        default:
            return TraceEvent(timeNs: Int64(i) * 50_000_000, core: "ingest", event: "gap", fields: [
                "detail": .object(["list": .array([.int(1), .null, .string("ünï \"q\"")]), "x": .double(-0.0)]),
            ])
        }
    }
}

/// Writes `events` as a baseline with its index, as `--update-baseline` does; returns its path.
private func writeBaseline(_ events: [TraceEvent], in folder: TemporaryFolder, name: String = "ingest.jsonl") throws -> String {
    let path = folder.path(name).path
    let writer = try TraceFileWriter.replacing(path)
    try writer.recordLineIndex()
    for event in events { writer.write(event) }
    try writer.commit()
    return path
}

/// The streamed comparison of `replayed` with the baseline at `path`, with or without its index.
private func compared(_ replayed: [TraceEvent], baseline path: String, usingIndex: Bool, tolerance: Int64 = 0)
    throws -> (report: TraceDiffReport, byIndex: Int, lookup: BaselineIndex.Lookup) {
    let comparison = try StreamingBaselineComparison(name: "ingest", baselinePath: path, timingToleranceNs: tolerance, usingIndex: usingIndex)
    for event in replayed { comparison.replayed(event) }
    return (try comparison.finish(), comparison.linesCheckedByIndex, comparison.indexLookup)
}

@Test func anAgreeingReplayIsCheckedByTheIndexAlone() throws {
    let folder = try TemporaryFolder("baseline-index")
    let events = trace(2_000)
    let path = try writeBaseline(events, in: folder)
    let (report, byIndex, lookup) = try compared(events, baseline: path, usingIndex: true)
    #expect(report.isEmpty)
    #expect(byIndex == events.count)
    #expect(lookup == .current(lines: events.count))
    let index = try BaselineIndex.decode(try fileBytes(BaselineIndex.path(forTrace: path)), path: "index")
    #expect(index.digests == events.map(\.stableDigest))
    #expect(index.lineLengths.map(Int.init).reduce(0, +) == (try fileBytes(path)).count)
}

@Test(arguments: [41 as UInt64, 42, 43, 44])
func anyDifferenceIsReportedAsWithoutTheIndex(seed: UInt64) throws {
    let folder = try TemporaryFolder("baseline-index")
    let baseline = trace(1_500)
    let path = try writeBaseline(baseline, in: folder)
    var random = SplitMix64(seed: seed)
    var replayed = baseline
    for _ in 0..<Int(random.next() % 4) {
        let at = Int(random.next() % UInt64(replayed.count))
        switch random.next() % 5 {
        case 0: replayed.remove(at: at)
        case 1: replayed.insert(TraceEvent(timeNs: replayed[at].timeNs, core: "ingest", event: "rejected", fields: ["n": .int(1)]), at: at)
        case 2: replayed[at].timeNs += 1_000
        case 3: replayed[at].fields["value"] = .int(7)
        default: replayed.removeLast(Int(random.next() % 5))
        }
    }
    for tolerance: Int64 in [0, 5_000] {
        let indexed = try compared(replayed, baseline: path, usingIndex: true, tolerance: tolerance)
        let plain = try compared(replayed, baseline: path, usingIndex: false, tolerance: tolerance)
        #expect(indexed.report == plain.report, "seed \(seed), tolerance \(tolerance)")
        #expect(indexed.report.render(maxLines: 41) == plain.report.render(maxLines: 41))
        #expect(plain.byIndex == 0)
    }
}

@Test func aReplayLongerOrShorterThanTheBaselineIsReportedAsWithoutTheIndex() throws {
    let folder = try TemporaryFolder("baseline-index")
    let baseline = trace(300)
    let path = try writeBaseline(baseline, in: folder)
    for replayed in [Array(baseline.prefix(250)), baseline + trace(310).suffix(10), []] {
        let indexed = try compared(replayed, baseline: path, usingIndex: true)
        let plain = try compared(replayed, baseline: path, usingIndex: false)
        #expect(!indexed.report.isEmpty)
        #expect(indexed.report == plain.report)
    }
}

@Test func anIndexOfAnotherVersionOfTheBaselineIsNotUsed() throws {
    let folder = try TemporaryFolder("baseline-index")
    let baseline = trace(400)
    let path = try writeBaseline(baseline, in: folder)
    // The baseline edited by hand after its index was written: one value changed.
    var text = try String(contentsOfFile: path, encoding: .utf8)
    text = text.replacingOccurrences(of: "\"sequence\":3,", with: "\"sequence\":33,")
    try text.write(toFile: path, atomically: false, encoding: .utf8)
    let indexed = try compared(baseline, baseline: path, usingIndex: true)
    guard case .unusable(let why) = indexed.lookup else { Issue.record("a stale index was used: \(indexed.lookup)"); return }
    #expect(why.reason.contains("another version"), "\(why)")
    #expect(indexed.byIndex == 0)
    #expect(!indexed.report.isEmpty)
    #expect(indexed.report == (try compared(baseline, baseline: path, usingIndex: false)).report)
}

@Test func anIndexCutShortOrOverlongIsNotUsed() throws {
    let folder = try TemporaryFolder("baseline-index")
    let baseline = trace(100)
    let path = try writeBaseline(baseline, in: folder)
    let indexPath = BaselineIndex.path(forTrace: path)
    let whole = try fileBytes(indexPath)
    for damaged in [Array(whole.dropLast(5)), whole + [0], Array(whole.prefix(10))] {
        try Data(damaged).write(to: URL(fileURLWithPath: indexPath))
        let indexed = try compared(baseline, baseline: path, usingIndex: true)
        guard case .unusable = indexed.lookup else { Issue.record("a damaged index was used: \(indexed.lookup)"); continue }
        #expect(indexed.report.isEmpty)
        #expect(indexed.byIndex == 0)
    }
}

@Test func aDamagedIndexIsRefusedWithWhereItIsWrong() throws {
    let index = BaselineIndex(traceFingerprint: 0x0123_4567_89AB_CDEF, lineLengths: [10, 20], digests: [1, 2])
    let bytes = index.encoded()
    #expect(try BaselineIndex.decode(bytes, path: "x.index") == index)
    #expect(throws: BaselineIndex.Unusable.self) { try BaselineIndex.decode(Array(bytes.dropLast()), path: "x.index") }
    #expect(throws: BaselineIndex.Unusable.self) { try BaselineIndex.decode(Array(bytes.prefix(10)), path: "x.index") }
    var badHex = bytes
    badHex[BaselineIndex.magic.count] = UInt8(ascii: "G")
    #expect(throws: BaselineIndex.Unusable.self) { try BaselineIndex.decode(badHex, path: "x.index") }
}

@Test func theDigestTellsApartWhatTheTraceLineTellsApart() {
    let base = TraceEvent(timeNs: 5, core: "ingest", event: "chunk", fields: ["a": .int(1), "b": .string("x")])
    var variants: [TraceEvent] = []
    for value: TraceValue in [.double(1), .string("1"), .bool(true), .null, .array([.int(1)]), .object(["a": .int(1)]), .int(2)] {
        var changed = base
        changed.fields["a"] = value
        variants.append(changed)
    }
    var later = base
    later.timeNs = 6
    var otherCore = base
    otherCore.core = "session"
    var renamedKey = base
    renamedKey.fields = ["a": .int(1), "c": .string("x")]
    var moved = base
    moved.fields = ["ab": .int(1), "": .string("x")]
    variants += [later, otherCore, renamedKey, moved]
    let digests = Set(variants.map(\.stableDigest) + [base.stableDigest])
    #expect(digests.count == variants.count + 1)
    // Key order never matters: a dictionary has none.
    let reordered = TraceEvent(timeNs: 5, core: "ingest", event: "chunk", fields: ["b": .string("x"), "a": .int(1)])
    #expect(reordered.stableDigest == base.stableDigest)
}

@Test func theFingerprintDependsOnTheBytesAloneNotOnHowTheyWereRead() {
    var random = SplitMix64(seed: 0xF1F1)
    let bytes = (0..<1_000).map { _ in UInt8(truncatingIfNeeded: random.next()) }
    var whole = ContentFingerprint()
    bytes.withUnsafeBytes { whole.update($0) }
    for _ in 0..<50 {
        var pieces = ContentFingerprint()
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + Int(random.next() % 70))
            bytes[start..<end].withUnsafeBytes { pieces.update($0) }
            start = end
        }
        #expect(pieces.value == whole.value)
    }
    // Every one-byte change, and every cut, changes it.
    var seen: Set<UInt64> = [whole.value]
    for position in stride(from: 0, to: bytes.count, by: 7) {
        var changed = bytes
        changed[position] ^= 0x01
        var fingerprint = ContentFingerprint()
        changed.withUnsafeBytes { fingerprint.update($0) }
        seen.insert(fingerprint.value)
        var cut = ContentFingerprint()
        bytes[..<position].withUnsafeBytes { cut.update($0) }
        seen.insert(cut.value)
    }
    #expect(seen.count == 1 + 2 * ((bytes.count + 6) / 7))
}

@Test func anEmptyBaselineGetsAnIndexOfNoLines() throws {
    // A core that made no event still gets its (empty) baseline and index from --update-baseline.
    let folder = try TemporaryFolder("baseline-index")
    let path = try writeBaseline([], in: folder)
    let (report, byIndex, lookup) = try compared([], baseline: path, usingIndex: true)
    #expect(lookup == .current(lines: 0))
    #expect(report.isEmpty && byIndex == 0)
    #expect(try fileBytes(BaselineIndex.path(forTrace: path)).count == BaselineIndex.headerBytes)
}

/// A file's bytes (the test reads what the writer left, with Foundation: BehaviourTrace and its
/// tests depend on no capture-set code).
private func fileBytes(_ path: String) throws -> [UInt8] {
    [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
}
