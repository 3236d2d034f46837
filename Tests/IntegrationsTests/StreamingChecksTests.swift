import CaptureSet
import Foundation
import Testing
import TetherIntegrations
import TetherTestSupport

@testable import ReplayKit
@testable import BehaviourTrace

/// The streaming pieces of `tether replay` (trace file writer and reader, expectation evaluator,
/// windowed trace diff, baseline comparison) give what the whole-trace ones gave.
@Suite struct StreamingChecksTests {
    /// Every committed capture set, replayed once (the trace kept, as the reference needs it).
    static let replays: [(name: String, path: String, outcome: ReplayOutcome)] = {
        let captures = MessagingReplayTests.captures.path
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: captures)) ?? []).sorted()
        return names.compactMap { name in
            let path = captures + "/" + name
            guard FileManager.default.fileExists(atPath: path + "/manifest.yaml"),
                  let outcome = try? replaySet(at: path) else { return nil }
            return (name, path, outcome)
        }
    }()

    @Test func everyCommittedSetReplays() {
        #expect(Self.replays.count >= 20, "\(Self.replays.map(\.name))")
    }

    // MARK: expectations

    /// An expectation may name only events a core declares (`CoreIntegration.emittedEvents`), so
    /// an event a core writes without declaring it could never be expected: every event of every
    /// committed set's replay is one its core's integration declares (the fault injector's aside).
    @Test func everyEventACommittedSetReplaysIsDeclaredByItsCore() {
        let declared = Dictionary(TetherIntegrations.builtIn.integrations.map { (TraceName($0.name), Set($0.emittedEvents)) },
                                  uniquingKeysWith: { a, _ in a })
        var undeclared: Set<String> = []
        for (name, _, outcome) in Self.replays {
            for event in outcome.trace where event.core != "faults" {
                if declared[event.core]?.contains(event.event) != true { undeclared.insert("\(name): \(event.core) \(event.event)") }
            }
        }
        #expect(undeclared.isEmpty, "\(undeclared.sorted())")
    }

    @Test func theEvaluatorGivesTheWholeTraceVerdictsOnEveryCommittedSet() {
        var checked = 0
        for (name, _, outcome) in Self.replays {
            let streamed = Expectations.evaluate(outcome.manifest.expectations, trace: outcome.trace).map(\.withoutEvidence)
            let whole = WholeTraceExpectations.evaluate(outcome.manifest.expectations, trace: outcome.trace)
            #expect(streamed == whole, "\(name)")
            checked += outcome.manifest.expectations.count
        }
        #expect(checked > 50)
    }

    /// Expectations of every kind built from the events each committed trace holds, so that all
    /// eleven kinds meet real traces, passing and failing.
    @Test func everyKindOfExpectationGivesTheWholeTraceVerdictOnEveryCommittedTrace() {
        for (name, _, outcome) in Self.replays {
            let expectations = Self.probes(for: outcome.trace)
            let streamed = Expectations.evaluate(expectations, trace: outcome.trace).map(\.withoutEvidence)
            let whole = WholeTraceExpectations.evaluate(expectations, trace: outcome.trace)
            #expect(streamed.count == whole.count)
            for (s, w) in zip(streamed, whole) where s != w {
                Issue.record("\(name): \(s.message) ≠ \(w.message)")
            }
            #expect(streamed.contains { $0.passed } && streamed.contains { !$0.passed }, "\(name)")
        }
    }

    /// Random traces (few event names and values, so selectors hit often) against random
    /// expectations of every kind.
    @Test func randomTracesAndExpectationsGiveTheWholeTraceVerdicts() {
        var random = SplitMix64(seed: 0x5EED_0009)
        for _ in 0..<300 {
            let trace = Self.randomTrace(&random, count: Int.random(in: 0...60, using: &random))
            let expectations = (0..<12).map { _ in Self.randomExpectation(&random) }
            let evaluated = Expectations.evaluate(expectations, trace: trace)
            for result in evaluated {
                for item in result.evidence where !(trace.indices.contains(item.index) && trace[item.index].timeNs == item.timeNs) {
                    Issue.record("\(result.message): evidence \(item) is not an event of the trace")
                }
                #expect(result.evidence.count <= ExpectationEvidence.limit)
            }
            let streamed = evaluated.map(\.withoutEvidence)
            let whole = WholeTraceExpectations.evaluate(expectations, trace: trace)
            for (s, w) in zip(streamed, whole) where s != w {
                Issue.record("\(s.message) ≠ \(w.message)")
            }
        }
    }

    @Test func theEvaluatorCanBeAskedBeforeTheEndAndGoesOn() {
        let selector = TraceExpectation.Selector(event: "tick")
        var evaluator = ExpectationEvaluator([TraceExpectation(.count(selector, .init(equals: 2)))])
        evaluator.observe(TraceEvent(timeNs: 0, core: "ingest", event: "tick"))
        #expect(evaluator.results()[0].measured == "1")
        evaluator.observe(TraceEvent(timeNs: 1, core: "ingest", event: "tick"))
        #expect(evaluator.results()[0].passed)
    }

    // MARK: trace files

    @Test func theWriterWritesTheBytesOfEncodeBytesForEveryCommittedTrace() throws {
        let folder = try TemporaryFolder("streaming-tests")
        for (name, _, outcome) in Self.replays {
            let path = folder.path("\(name).jsonl").path
            let writer = try TraceFileWriter(path: path)
            for event in outcome.trace { writer.write(event) }
            try writer.close()
            let written = try Data(contentsOf: URL(fileURLWithPath: path))
            #expect(Array(written) == TraceFile.encodeBytes(outcome.trace), "\(name)")
            #expect(writer.events == outcome.trace.count)
        }
    }

    @Test func theWriterFlushesMoreThanItsBufferInOrder() throws {
        let folder = try TemporaryFolder("streaming-tests")
        let events = Self.longTrace(20_000)
        let path = folder.path("long.jsonl").path
        let writer = try TraceFileWriter(path: path)
        for event in events { writer.write(event) }
        try writer.close()
        let bytes = TraceFile.encodeBytes(events)
        #expect(bytes.count > 4 * TraceFileWriter.bufferSize)
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: path))) == bytes)
        #expect(writer.bytes == UInt64(bytes.count))
    }

    @Test func aReplacingWriterLeavesTheOldFileUntilCommitAndOnDiscard() throws {
        let folder = try TemporaryFolder("streaming-tests")
        let path = folder.path("sub/dir/baseline.jsonl").path
        let old = Self.longTrace(3)
        let discarded = try TraceFileWriter.replacing(path)
        for event in old { discarded.write(event) }
        discarded.discard()
        withExtendedLifetime(discarded) {}
        #expect(!FileManager.default.fileExists(atPath: path))
        #expect(!FileManager.default.fileExists(atPath: folder.path("sub").path), "the folders it made are gone too")
        try FileManager.default.createDirectory(atPath: folder.path("sub/dir").path, withIntermediateDirectories: true)
        try TraceFile.write(old, to: path)

        let new = Self.longTrace(5000)
        let writer = try TraceFileWriter.replacing(path)
        for event in new { writer.write(event) }
        #expect(try TraceFile.read(path) == old, "the old file stays until commit")
        try writer.commit()
        #expect(try TraceFile.read(path) == new)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: folder.path("sub/dir").path)
        #expect(leftovers == ["baseline.jsonl"], "no temporary file is left: \(leftovers)")
    }

    @Test func aReplacingWriterNeverCommittedRemovesTheFoldersItMadeAndOnlyThose() throws {
        let folder = try TemporaryFolder("streaming-tests")
        try FileManager.default.createDirectory(atPath: folder.path("set").path, withIntermediateDirectories: true)
        let path = folder.path("set/baseline/deeper/ingest.jsonl").path
        do {
            let writer = try TraceFileWriter.replacing(path)
            for event in Self.longTrace(3) { writer.write(event) }
            #expect(FileManager.default.fileExists(atPath: folder.path("set/baseline/deeper").path))
            withExtendedLifetime(writer) {}
        }
        #expect(!FileManager.default.fileExists(atPath: folder.path("set/baseline").path), "a failed replay leaves no empty baseline folder")
        #expect(FileManager.default.fileExists(atPath: folder.path("set").path), "a folder that was there before stays")

        let committed = try TraceFileWriter.replacing(path)
        committed.write(Self.longTrace(1)[0])
        try committed.commit()
        #expect(try TraceFile.read(path).count == 1, "a committed file keeps its folders")
    }

    @Test func theReaderReadsWhatReadReadsAcrossChunkBoundaries() throws {
        let folder = try TemporaryFolder("streaming-tests")
        let events = Self.longTrace(9000)
        var bytes = TraceFile.encodeBytes(events)
        #expect(bytes.count > 3 * TraceFileReader.chunkSize)
        // Blank and whitespace-only lines in the middle, and no newline after the last line.
        let middle = try #require(bytes[(bytes.count / 2)...].firstIndex(of: 0x0A))
        bytes.insert(contentsOf: Array("\n  \t\r\n".utf8), at: middle + 1)
        bytes.removeLast()
        let path = folder.path("t.jsonl").path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try TraceFileReader(path: path)
        var streamed: [TraceEvent] = []
        while let event = try reader.next() { streamed.append(event) }
        #expect(streamed == events)
        #expect(try TraceFile.read(path) == streamed)
    }

    @Test func theReaderReportsTheSameErrorsAsRead() throws {
        let folder = try TemporaryFolder("streaming-tests")
        var text = TraceFile.encode(Self.longTrace(4000))
        text += "\n{\"t_ns\":1,\"core\":\"ingest\",\"event\":\"x\"x}\n"
        text += TraceFile.encode(Self.longTrace(10))
        let path = folder.path("bad.jsonl").path
        try text.write(toFile: path, atomically: false, encoding: .utf8)
        func readError(_ body: () throws -> Void) -> String {
            do { try body() } catch { return "\(error)" }
            return "no error"
        }
        let whole = readError { _ = try TraceFile.read(path) }
        let streamed = readError {
            let reader = try TraceFileReader(path: path)
            while try reader.next() != nil {}
        }
        #expect(whole.contains("bad.jsonl:4002:"), "\(whole)")
        #expect(streamed == whole)

        for missing in [folder.path("none.jsonl").path, folder.url.path, folder.path("none/x.jsonl").path] {
            let wholeOpen = readError { _ = try TraceFile.read(missing) }
            let streamedOpen = readError { _ = try TraceFileReader(path: missing) }
            #expect(streamedOpen == wholeOpen)
            #expect(streamedOpen.hasPrefix("cannot read trace file"), "\(streamedOpen)")
        }

        let empty = folder.path("empty.jsonl").path
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(try TraceFileReader(path: empty).next() == nil)
    }

    // MARK: diff

    /// `count` unique events 10 ms apart over three event kinds.
    static func stream(_ count: Int, seed: UInt64 = 1) -> [TraceEvent] {
        (0..<count).map { i in
            let kind: TraceName = ["datapoint", "chunk", "gap"][i % 3]
            return TraceEvent(timeNs: Int64(i) * 10_000_000, core: "ingest", event: kind,
                              fields: ["source": .string("imu"), "sequence": .int(Int64(i / 3)), "value": .double(Double(i) * 0.5)])
        }
    }

    /// Feeds two traces to a streaming diff the way a replay does: each B event, then A read as
    /// long as the diff wants it; the held events never exceed the bound.
    static func streamed(_ a: [TraceEvent], _ b: [TraceEvent], tolerance: Int64 = 0, window: Int = StreamingTraceDiff.defaultWindow,
                         ignoring: Set<String> = [], keptDifferences: Int = StreamingTraceDiff.defaultKeptDifferences,
                         lineBudget: Int = 1000) -> TraceDiffReport {
        var diff = StreamingTraceDiff(timingToleranceNs: tolerance, ignoringFields: ignoring, window: window,
                                      keptDifferences: keptDifferences, lineBudget: lineBudget)
        var nextA = 0
        for event in b {
            diff.addB(event)
            while diff.wantsA, nextA < a.count {
                diff.addA(a[nextA])
                nextA += 1
            }
            #expect(diff.heldEvents <= 2 * window + 2)
        }
        while nextA < a.count {
            diff.addA(a[nextA])
            nextA += 1
            #expect(diff.heldEvents <= 2 * window + 2)
        }
        return diff.finish()
    }

    @Test func theStreamingDiffEqualsCompareOnTheDiffSuitesCases() {
        let a = Self.stream(300)
        var cases: [[TraceEvent]] = []
        cases.append(a)
        cases.append(Array(a.dropFirst(5)))
        cases.append(Array(a.dropLast(7)))
        cases.append([])
        var b = a; b.remove(at: 40); cases.append(b)
        b = a; b.insert(TraceEvent(timeNs: 155_000_000, core: "ingest", event: "rejected", fields: ["reason": .string("x")]), at: 16); cases.append(b)
        b = a; let moved = b.remove(at: 10); b.insert(moved, at: 200); cases.append(b)
        b = a; b.swapAt(3, 4); cases.append(b)
        b = a; b[30].fields["value"] = .double(99); cases.append(b)
        b = a; b[2].fields["source"] = .string("other"); cases.append(b)
        b = a; for i in 100..<b.count { b[i].timeNs += 3_000_000 }; cases.append(b)
        b = a; for i in 150..<b.count where b[i].event == "chunk" { b[i].fields["sequence"] = .int(b[i].fields["sequence"]!.numericValue.map { Int64($0) + 1 }!) }; cases.append(b)
        b = a.reversed(); cases.append(b)
        b = Self.stream(300).map { var e = $0; e.fields["value"] = .double(-1); return e }; cases.append(b)
        for (n, b) in cases.enumerated() {
            for tolerance: Int64 in [0, 5_000_000] {
                #expect(Self.streamed(a, b, tolerance: tolerance) == TraceDiff.compare(a, b, timingToleranceNs: tolerance), "case \(n)")
                #expect(Self.streamed(b, a, tolerance: tolerance) == TraceDiff.compare(b, a, timingToleranceNs: tolerance), "case \(n) swapped")
            }
        }
        var c = a; c[50].fields["stamp"] = .int(7)
        #expect(Self.streamed(a, c, ignoring: ["stamp"]) == TraceDiff.compare(a, c, timingToleranceNs: 0, ignoringFields: ["stamp"]))
        #expect(Self.streamed(a, c, ignoring: ["stamp"]).isEmpty)
    }

    /// Random edits anywhere in traces that fit the window: the report is `compare`'s, exactly.
    @Test func randomEditsWithinTheWindowGiveCompareExactly() {
        var random = SplitMix64(seed: 0xD1FF)
        for round in 0..<200 {
            let a = Self.stream(Int.random(in: 0...400, using: &random))
            let b = Self.mutate(a, edits: Int.random(in: 0...12, using: &random), &random)
            let tolerance: Int64 = random.chance(0.5) ? 0 : 2_000_000
            let expected = TraceDiff.compare(a, b, timingToleranceNs: tolerance)
            #expect(Self.streamed(a, b, tolerance: tolerance, window: 512) == expected, "round \(round)")
        }
    }

    /// A baseline file read alongside the replay: lines identical to the replayed events are
    /// passed over unparsed, the rest parsed. Random edits, blank lines and lines written in
    /// another (valid) form, such as a hand-edited baseline has, give `compare`'s report exactly.
    @Test func aBaselineFileComparedLineByLineGivesCompareExactly() throws {
        var random = SplitMix64(seed: 0xBA5E)
        let folder = try TemporaryFolder("streaming-tests")
        for round in 0..<60 {
            let a = Self.stream(Int.random(in: 0...300, using: &random))
            let b = Self.mutate(a, edits: Int.random(in: 0...10, using: &random), &random)
            let tolerance: Int64 = random.chance(0.5) ? 0 : 2_000_000
            var text = ""
            for event in a {
                if random.chance(0.05) { text += "\n" }
                let line = event.jsonLine()
                // Same event, other bytes: a space after the first brace.
                text += (random.chance(0.1) ? "{ " + line.dropFirst() : line) + "\n"
            }
            let path = folder.path("baseline-\(round).jsonl").path
            try text.write(toFile: path, atomically: false, encoding: .utf8)
            let comparison = try StreamingBaselineComparison(name: "ingest", baselinePath: path, timingToleranceNs: tolerance)
            for event in b { comparison.replayed(event) }
            #expect(try comparison.finish() == TraceDiff.compare(a, b, timingToleranceNs: tolerance), "round \(round)")
        }
    }

    /// Differences far apart in traces much longer than the window: each is settled on its own,
    /// and the report is still `compare`'s.
    @Test func sparseDifferencesInLongTracesGiveCompareWithASmallWindow() {
        let a = Self.stream(20_000)
        var b = a
        for i in stride(from: 19_000, to: 100, by: -997) {
            switch (i / 997) % 4 {
            case 0: b.remove(at: i)
            case 1: b.insert(TraceEvent(timeNs: b[i].timeNs, core: "ingest", event: "rejected", fields: ["n": .int(Int64(i))]), at: i)
            case 2: b[i].fields["value"] = .double(-1)
            default: b[i].timeNs += 50_000_000
            }
        }
        let expected = TraceDiff.compare(a, b, timingToleranceNs: 1_000_000)
        #expect(!expected.isEmpty)
        #expect(Self.streamed(a, b, tolerance: 1_000_000, window: 64) == expected)
    }

    /// What the window costs: a move farther than the window is missing plus extra, and a long
    /// run of differences is settled a window at a time, with memory still bounded.
    @Test func beyondTheWindowAMoveIsMissingAndExtraAndMemoryStaysBounded() {
        let a = Self.stream(5000)
        var b = a
        let event = b.remove(at: 100)
        b.insert(event, at: 4000)
        let whole = TraceDiff.compare(a, b, timingToleranceNs: .max)
        #expect(whole.moved.count == 1)
        let windowed = Self.streamed(a, b, tolerance: .max, window: 256)
        #expect(windowed.moved.isEmpty)
        #expect(windowed.missing.map(\.index) == [100])
        #expect(windowed.extra.map(\.index) == [4000])
        #expect(windowed.matched == whole.matched)

        let unrelated = Self.stream(5000).map { var e = $0; e.event = "other"; return e }
        let report = Self.streamed(a, unrelated, window: 256)
        #expect(report.missingCount + report.changedCount == 5000)
        #expect(report.extraCount + report.changedCount == 5000)
        #expect(report.eventsA == 5000 && report.eventsB == 5000)
    }

    /// Past the differences it keeps, the report keeps counts and the rendered lines: the
    /// rendering, counts and verdict are `compare`'s at every line budget up to the one kept.
    @Test func pastTheKeptDifferencesTheRenderingIsStillCompares() {
        var random = SplitMix64(seed: 0xD16E57)
        for round in 0..<60 {
            let a = Self.stream(Int.random(in: 50...600, using: &random))
            let b = Self.mutate(a, edits: Int.random(in: 1...40, using: &random), &random)
            let tolerance: Int64 = random.chance(0.5) ? 0 : 2_000_000
            let whole = TraceDiff.compare(a, b, timingToleranceNs: tolerance)
            let kept = Int.random(in: 0...8, using: &random)
            let streamed = Self.streamed(a, b, tolerance: tolerance, window: 1024, keptDifferences: kept, lineBudget: 12)
            #expect(streamed.countsLine == whole.countsLine, "round \(round)")
            #expect(streamed.isEmpty == whole.isEmpty)
            #expect(streamed.matched == whole.matched)
            for maxLines in [1, 2, 3, 5, 8, 13] {
                #expect(streamed.render(maxLines: maxLines) == whole.render(maxLines: maxLines), "round \(round), \(maxLines) lines")
            }
            let total = streamed.missingCount + streamed.extraCount + streamed.movedCount + streamed.changedCount + streamed.timingCount
            #expect((streamed.digest != nil) == (total > kept))
            #expect(streamed.missing.count + streamed.extra.count + streamed.moved.count + streamed.changed.count + streamed.timing.count <= Swift.max(kept, 0) || streamed.digest == nil)
        }
    }

    /// Every event shifted beyond the tolerance: hundreds of thousands of timing differences,
    /// kept as counts and lines, in bounded memory.
    @Test func aMillionDifferencesAreCountedNotKept() {
        let a = Self.stream(200_000)
        let b = a.map { var e = $0; e.timeNs += 7; return e }
        let whole = TraceDiff.compare(a, b, timingToleranceNs: 0)
        var diff = StreamingTraceDiff(timingToleranceNs: 0, keptDifferences: 100, lineBudget: 41)
        for (x, y) in zip(a, b) {
            diff.addB(y)
            while diff.wantsA { diff.addA(x) }
        }
        let streamed = diff.finish()
        #expect(streamed.timingCount == 200_000)
        #expect(streamed.timing.count == 100)
        #expect(streamed.countsLine == whole.countsLine)
        #expect(streamed.render(maxLines: 41) == whole.render(maxLines: 41))
        #expect(streamed.render(maxLines: 40) == whole.render(maxLines: 40))
    }

    // MARK: baselines

    /// Every committed baseline, compared as `tether replay` now compares it (the baseline file
    /// read alongside the replay, by its index while they agree) and as it did (both traces
    /// whole): the same report. Every committed baseline has a current index, and an agreeing
    /// replay is checked by it alone.
    @Test func streamingBaselineComparisonEqualsCompareOnEveryCommittedSet() throws {
        var compared = 0
        for (name, path, outcome) in Self.replays {
            for (core, relative) in outcome.manifest.baselines {
                let baseline = try CaptureSetDirectory(path: path).resolve(relative, field: "baselines.\(core)")
                let replayed = outcome.trace.filter { $0.core.text == core }
                let whole = TraceDiff.compare(try TraceFile.read(baseline), replayed, timingToleranceNs: 0)
                let comparison = try StreamingBaselineComparison(name: core, baselinePath: baseline, timingToleranceNs: 0)
                for event in replayed { comparison.replayed(event) }
                #expect(try comparison.finish() == whole, "\(name) \(core)")
                guard case .current = comparison.indexLookup else {
                    Issue.record("\(name) \(core): the baseline's index is not current (\(comparison.indexLookup)); `tether replay \(path) --update-baseline` writes it")
                    continue
                }
                if whole.isEmpty { #expect(comparison.linesCheckedByIndex == replayed.count, "\(name) \(core)") }
                compared += 1
            }
        }
        #expect(compared >= 20)
    }

    /// A changed setting makes the faulty plugin session differ from its baseline (streams end
    /// and restart, chunks renumbered): the streaming comparison reports what `compare` reports.
    @Test func aBehaviourChangeIsReportedAsCompareReportsIt() throws {
        let path = MessagingReplayTests.captures.appendingPathComponent("plugin-faulty").path
        let outcome = try replaySet(at: path, options: try .builtIn("ingest.idle_timeout_ms=2000ms"))
        let baseline = try CaptureSetDirectory(path: path).resolve(outcome.manifest.baselines["ingest"]!, field: "baselines.ingest")
        let replayed = outcome.trace.filter { $0.core == "ingest" }
        for tolerance: Int64 in [0, 50_000_000] {
            let whole = TraceDiff.compare(try TraceFile.read(baseline), replayed, timingToleranceNs: tolerance)
            #expect(!whole.isEmpty)
            let comparison = try StreamingBaselineComparison(name: "ingest", baselinePath: baseline, timingToleranceNs: tolerance)
            for event in replayed { comparison.replayed(event) }
            let streamed = try comparison.finish()
            #expect(streamed == whole)
            #expect(streamed.render(maxLines: 41) == whole.render(maxLines: 41))
        }
    }

    @Test func aMalformedBaselineLineIsTheErrorReadGives() throws {
        let folder = try TemporaryFolder("streaming-tests")
        let path = folder.path("baseline.jsonl").path
        let events = Self.longTrace(3000)
        try (TraceFile.encode(Array(events.prefix(2000))) + "not json\n" + TraceFile.encode(Array(events.dropFirst(2000)))).write(
            toFile: path, atomically: false, encoding: .utf8)
        let comparison = try StreamingBaselineComparison(name: "ingest", baselinePath: path, timingToleranceNs: 0)
        for event in events { comparison.replayed(event) }
        var streamed = "no error", whole = "no error"
        do { _ = try comparison.finish() } catch { streamed = "\(error)" }
        do { _ = try TraceFile.read(path) } catch { whole = "\(error)" }
        #expect(streamed == whole)
        #expect(streamed.contains("baseline.jsonl:2001:1:"), "\(streamed)")
    }

    // MARK: engine sink

    @Test func theEngineWritesTheSameTraceToASinkAsItReturns() throws {
        let path = MessagingReplayTests.captures.appendingPathComponent("plugin-clean").path
        let set = try loadReplaySet(at: path, options: .builtInDefaults)
        var collected: [TraceEvent] = []
        let run = try replaySet(set, options: .builtInDefaults, into: &collected)
        let whole = try replaySet(at: path)
        #expect(collected == whole.trace)
        #expect(run.summary == whole.summary)
        #expect(run.cores == whole.cores)
    }

    // MARK: helpers

    /// `count` ingest datapoints with long-ish fields (about 190 bytes a line).
    static func longTrace(_ count: Int) -> [TraceEvent] {
        (0..<count).map { i in
            TraceEvent(timeNs: Int64(i) * 50_000_000, core: "ingest", event: "datapoint", fields: [
                "source": .string("127.0.0.1:50123"), "name": .string("v1/1/\(["yaw", "pitch", "roll"][i % 3])"),
                "type": .string("float64"), "time_ns": .int(1_763_769_600_000_000_000 + Int64(i) * 50_000_000),
                "value": .double(Double(i) * 0.123456789), "note": .string("ünïcödé \"quoted\" \\ \(i)"),
            ])
        }
    }

    static func mutate(_ trace: [TraceEvent], edits: Int, _ random: inout SplitMix64) -> [TraceEvent] {
        var b = trace
        for _ in 0..<edits {
            guard !b.isEmpty else { break }
            let i = Int.random(in: 0..<b.count, using: &random)
            switch Int.random(in: 0..<6, using: &random) {
            case 0: b.remove(at: i)
            case 1: b.insert(TraceEvent(timeNs: b[i].timeNs, core: "ingest", event: "rejected", fields: ["n": .int(Int64(i))]), at: i)
            case 2: b[i].fields["value"] = .double(-Double(i))
            case 3: b[i].timeNs += Int64.random(in: 1...5_000_000, using: &random)
            case 4:
                let event = b.remove(at: i)
                b.insert(event, at: Int.random(in: 0...b.count, using: &random))
            default: b.insert(b[i], at: Int.random(in: 0...b.count, using: &random))
            }
        }
        return b
    }

    static let names = ["a", "b", "c"]
    static let values: [TraceValue] = [.int(1), .int(2), .double(1.5), .string("x"), .string("y"), .bool(true), .null]

    static func randomTrace(_ random: inout SplitMix64, count: Int) -> [TraceEvent] {
        var t: Int64 = 0
        return (0..<count).map { _ in
            t += Int64.random(in: 0...3, using: &random) * 1_000_000
            var fields: [String: TraceValue] = [:]
            for key in ["k", "v", "w"] where random.chance(0.8) {
                fields[key] = values.randomElement(using: &random)!
            }
            if random.chance(0.7) { fields["n"] = .int(Int64.random(in: 0...5, using: &random)) }
            return TraceEvent(timeNs: t, core: random.chance(0.9) ? "ingest" : "messaging", event: TraceName(names.randomElement(using: &random)!), fields: fields)
        }
    }

    static func randomSelector(_ random: inout SplitMix64) -> TraceExpectation.Selector {
        var conditions: [String: TraceExpectation.Value] = [:]
        if random.chance(0.3) {
            conditions["k"] = [TraceExpectation.Value.int(1), .double(1.5), .string("x"), .bool(true), .null].randomElement(using: &random)!
        }
        return TraceExpectation.Selector(core: random.chance(0.2) ? "ingest" : nil, event: names.randomElement(using: &random)!, where: conditions)
    }

    static func randomExpectation(_ random: inout SplitMix64) -> TraceExpectation {
        let s = randomSelector(&random)
        let optionalSelector = { (random: inout SplitMix64) -> TraceExpectation.Selector? in random.chance(0.5) ? randomSelector(&random) : nil }
        let kind: TraceExpectation.Kind
        switch Int.random(in: 0..<11, using: &random) {
        case 0: kind = .count(s, .init(min: Int.random(in: 0...5, using: &random), max: Int.random(in: 5...30, using: &random)))
        case 1: kind = .absent(s)
        case 2: kind = .order((0..<Int.random(in: 1...4, using: &random)).map { _ in randomSelector(&random) })
        case 3: kind = .maxGap(s, maxMs: Double(Int.random(in: 0...8, using: &random)), start: optionalSelector(&random), end: optionalSelector(&random))
        case 4: kind = .rate(s, hz: Double(Int.random(in: 100...900, using: &random)), tolerancePercent: 50)
        case 5: kind = .at(s, tMs: Double(Int.random(in: 0...60, using: &random)), toleranceMs: Double(Int.random(in: 0...3, using: &random)))
        case 6: kind = .range(s, field: random.chance(0.5) ? "n" : "v", min: random.chance(0.7) ? 1 : nil, max: random.chance(0.7) ? 4 : nil)
        case 7: kind = .equals(s, field: random.chance(0.5) ? "k" : "n", value: [.int(1), .string("x"), .null, .double(1.5)].randomElement(using: &random)!,
                               which: [.first, .last, .every].randomElement(using: &random)!)
        case 8: kind = .monotonic(s, field: "n", per: random.chance(0.5) ? "k" : nil,
                                  endsAt: random.chance(0.3) ? 5 : nil, endsAtField: random.chance(0.3) ? "v" : nil)
        case 9: kind = .oncePer(s, key: random.chance(0.5) ? "k" : "n", of: randomSelector(&random))
        default: kind = .latency(from: s, to: randomSelector(&random), key: random.chance(0.5) ? "k" : "n",
                                 minMs: random.chance(0.3) ? 1 : nil, maxMs: random.chance(0.6) ? Double(Int.random(in: 0...20, using: &random)) : nil)
        }
        return TraceExpectation(kind)
    }

    /// Expectations of every kind over the event names, keys and numeric fields a trace holds.
    static func probes(for trace: [TraceEvent]) -> [TraceExpectation] {
        var kinds: [(core: String, event: String)] = []
        var seen = Set<String>()
        var numericField: [String: String] = [:]
        var keyField: [String: String] = [:]
        for event in trace {
            let id = event.core.text + ":" + event.event.text
            if seen.insert(id).inserted { kinds.append((event.core.text, event.event.text)) }
            if numericField[id] == nil, let field = event.fields.keys.sorted().first(where: { event.fields[$0]?.numericValue != nil }) {
                numericField[id] = field
            }
            if keyField[id] == nil, let field = TraceDiff.defaultKeyFields.first(where: { event.fields[$0] != nil }) ?? event.fields.keys.sorted().first {
                keyField[id] = field
            }
        }
        var probes: [TraceExpectation] = []
        for (index, kind) in kinds.enumerated() {
            let id = kind.core + ":" + kind.event
            let s = TraceExpectation.Selector(core: kind.core, event: kind.event)
            let next = kinds[(index + 1) % kinds.count]
            let other = TraceExpectation.Selector(core: next.core, event: next.event)
            let numeric = numericField[id] ?? "t_ns"
            let key = keyField[id] ?? "missing_key"
            probes += [
                .init(.count(s, .init(min: 2, max: 40))),
                .init(.absent(s)),
                .init(.order([s, other, s])),
                .init(.maxGap(s, maxMs: 500, start: nil, end: nil)),
                .init(.maxGap(s, maxMs: 2000, start: other, end: s)),
                .init(.maxGap(other, maxMs: 100, start: s, end: other)),
                .init(.rate(s, hz: 20, tolerancePercent: 10)),
                .init(.at(s, tMs: 1000, toleranceMs: 50)),
                .init(.range(s, field: numeric, min: 0, max: 1000)),
                .init(.equals(s, field: key, value: .int(1), which: .first)),
                .init(.equals(s, field: numeric, value: .int(1), which: .last)),
                .init(.equals(s, field: "core", value: .string(kind.core), which: .every)),
                .init(.monotonic(s, field: numeric, per: key, endsAt: nil, endsAtField: nil)),
                .init(.monotonic(s, field: numeric, per: nil, endsAt: 1, endsAtField: numeric)),
                .init(.oncePer(other, key: key, of: s)),
                .init(.oncePer(s, key: key, of: s)),
                .init(.latency(from: s, to: other, key: key, minMs: nil, maxMs: 5000)),
                .init(.latency(from: s, to: s, key: key, minMs: 1, maxMs: nil)),
            ]
        }
        return probes
    }
}


/// A trace path that cannot be read gets a sentence that says what to do, the same from the
/// streaming reader and the whole-file reader, and never a framework error code.
@Suite struct UnreadableTraceFileTests {
    @Test func aFolderGivenAsATraceSaysToNameTheFileInside() throws {
        let scratch = try TemporaryFolder("streaming-tests")
        let folder = scratch.path("baseline").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let streaming = #expect(throws: TraceFileError.self) { _ = try TraceFileReader(path: folder) }
        let whole = #expect(throws: TraceFileError.self) { _ = try TraceFile.read(folder) }
        #expect(streaming?.reason == "it is a folder, not a trace file")
        #expect(streaming?.description.hasSuffix("it is a folder, not a trace file; name the .jsonl file inside it") == true)
        #expect(whole?.reason == streaming?.reason)
        #expect(streaming.map { !$0.description.contains("NSCocoaErrorDomain") } == true)
    }

    @Test func aMissingTraceSaysThereIsNoSuchFile() throws {
        let scratch = try TemporaryFolder("streaming-tests")
        let missing = scratch.path("nothing.jsonl").path
        let whole = #expect(throws: TraceFileError.self) { _ = try TraceFile.read(missing) }
        #expect(whole?.reason.hasPrefix("there is no such file") == true)
    }
}

extension ExpectationResult {
    /// The verdict and messages alone, as the whole-trace reference gives them (it keeps no evidence).
    fileprivate var withoutEvidence: ExpectationResult {
        var copy = self
        copy.evidence = []
        copy.evidenceOmitted = 0
        return copy
    }
}
