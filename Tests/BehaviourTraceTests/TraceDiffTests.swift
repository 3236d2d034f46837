import Testing

@testable import BehaviourTrace

/// `count` yaw datapoints 10 ms apart, each unique through `seq`.
private func stream(_ count: Int, name: String = "v1/1/yaw") -> [TraceEvent] {
    (0..<count).map { i in
        TraceEvent(timeNs: Int64(i) * 10_000_000, core: "ingest", event: "datapoint",
                   fields: ["source": .string("imu"), "name": .string(name), "seq": .int(Int64(i)),
                            "value": .double(Double(i) * 0.5)])
    }
}

private let ms: Int64 = 1_000_000

@Suite struct TraceDiffTests {
    @Test func identicalTracesGiveAnEmptyReport() {
        let report = TraceDiff.compare(stream(200), stream(200), timingToleranceNs: 0)
        #expect(report.isEmpty)
        #expect(report.matched == 200)
        #expect(report.render().hasSuffix("no differences"))
    }

    @Test func anEventOnlyInAIsMissing() {
        var b = stream(100)
        b.remove(at: 40)
        let report = TraceDiff.compare(stream(100), b, timingToleranceNs: 0)
        #expect(report.missing.map(\.index) == [40])
        #expect(report.extra.isEmpty && report.moved.isEmpty && report.changed.isEmpty && report.timing.isEmpty)
    }

    @Test func anEventOnlyInBIsExtra() {
        var b = stream(100)
        b.insert(TraceEvent(timeNs: 155 * ms, core: "ingest", event: "rejected",
                            fields: ["source": .string("imu"), "reason": .string("bad_json")]), at: 16)
        let report = TraceDiff.compare(stream(100), b, timingToleranceNs: 0)
        #expect(report.extra.map(\.index) == [16])
        #expect(report.extra.first?.event.event == "rejected")
        #expect(report.missing.isEmpty && report.moved.isEmpty && report.changed.isEmpty)
    }

    @Test func anEventAtAnotherPlaceIsReportedOnceAsMoved() {
        let a = stream(100)
        var b = a
        let event = b.remove(at: 10)
        b.insert(event, at: 50)
        let report = TraceDiff.compare(a, b, timingToleranceNs: Int64.max)
        #expect(report.moved.count == 1)
        #expect(report.moved.first?.indexA == 10)
        #expect(report.moved.first?.indexB == 50)
        #expect(report.missing.isEmpty && report.extra.isEmpty && report.changed.isEmpty)
    }

    @Test func swappedNeighboursAreOneMove() {
        let a = stream(10)
        var b = a
        b.swapAt(3, 4)
        let report = TraceDiff.compare(a, b, timingToleranceNs: Int64.max)
        #expect(report.moved.count == 1)
        #expect(report.missing.isEmpty && report.extra.isEmpty)
    }

    @Test func aDifferentFieldWithTheSameKeyFieldsIsChanged() {
        let a = stream(100)
        var b = a
        b[30].fields["value"] = .double(99)
        let report = TraceDiff.compare(a, b, timingToleranceNs: 0)
        #expect(report.changed.count == 1)
        #expect(report.changed.first?.indexA == 30)
        #expect(report.changed.first?.fields == ["value"])
        #expect(report.missing.isEmpty && report.extra.isEmpty && report.moved.isEmpty)
        #expect(report.render().contains("! changed t_ns=300000000 ingest datapoint source=imu name=v1/1/yaw value: 15.0 → 99.0"))
    }

    @Test func differentKeyFieldsAreMissingPlusExtraNotChanged() {
        let a = stream(5)
        var b = a
        b[2].fields["name"] = .string("v1/1/pitch")
        let report = TraceDiff.compare(a, b, timingToleranceNs: 0)
        #expect(report.changed.isEmpty)
        #expect(report.missing.map(\.index) == [2])
        #expect(report.extra.map(\.index) == [2])
    }

    @Test func timingBeyondToleranceIsReported() {
        let a = stream(50)
        var b = a
        b[20].timeNs += 2 * ms
        let report = TraceDiff.compare(a, b, timingToleranceNs: 1 * ms)
        #expect(report.timing.count == 1)
        #expect(report.timing.first?.deltaNs == 2 * ms)
        #expect(report.render().contains("@ timing  t_ns=200000000 → 202000000 (+2000000 ns)"))
    }

    @Test func timingWithinToleranceIsNotReported() {
        let a = stream(50)
        var b = a
        b[20].timeNs -= 1 * ms
        #expect(TraceDiff.compare(a, b, timingToleranceNs: 1 * ms).isEmpty)
    }

    @Test func ignoredFieldsDoNotCount() {
        let a = stream(10)
        var b = a
        b[4].fields["value"] = .double(-1)
        #expect(TraceDiff.compare(a, b, timingToleranceNs: 0, ignoringFields: ["value"]).isEmpty)
    }

    @Test func repeatedIdenticalEventsAlign() {
        let tick = TraceEvent(timeNs: 0, core: "session", event: "tick")
        let a = Array(repeating: tick, count: 20)
        let b = Array(repeating: tick, count: 18)
        let report = TraceDiff.compare(a, b, timingToleranceNs: Int64.max)
        #expect(report.missing.count == 2)
        #expect(report.matched == 18)
    }

    @Test func emptyAgainstNonEmptyIsAllExtra() {
        let report = TraceDiff.compare([], stream(3), timingToleranceNs: 0)
        #expect(report.extra.count == 3)
        #expect(TraceDiff.compare([], [], timingToleranceNs: 0).isEmpty)
    }

    @Test func largeTracesWithAFewChangesFinishWithEachDifferenceFound() {
        let a = stream(100_000)
        var b = a
        b[70_000].fields["value"] = .double(-1)        // changed
        b.remove(at: 50_000)                            // missing
        let moved = b.remove(at: 20_000)                // moved …
        b.insert(moved, at: 30_000)                     // … further on
        b.insert(TraceEvent(timeNs: 5, core: "ingest", event: "gap",
                            fields: ["gap_ns": .int(30_000_000)]), at: 10_000)   // extra
        let report = TraceDiff.compare(a, b, timingToleranceNs: Int64.max)
        #expect(report.changed.map(\.indexA) == [70_000])
        #expect(report.missing.map(\.index) == [50_000])
        #expect(report.moved.map(\.indexA) == [20_000])
        #expect(report.extra.map(\.event.event) == ["gap"])
    }

    @Test func manyDifferencesFallBackToAnchorsAndStayCorrect() {
        // Every other event removed: 1 500 edits, beyond Myers' budget in one region.
        let a = stream(3_000)
        let b = a.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let report = TraceDiff.compare(a, b, timingToleranceNs: 0)
        #expect(report.missing.count == 1_500)
        #expect(report.missing.allSatisfy { $0.index % 2 == 1 })
        #expect(report.matched == 1_500)
        #expect(report.extra.isEmpty && report.moved.isEmpty)
    }

    @Test func unrelatedLargeTracesFinishAsMissingAndExtra() {
        let report = TraceDiff.compare(stream(20_000, name: "a"), stream(20_000, name: "b"), timingToleranceNs: 0)
        #expect(report.missing.count == 20_000)
        #expect(report.extra.count == 20_000)
        #expect(report.matched == 0)
    }

    @Test func renderStaysWithinTheLineBudget() {
        // Alternating event kinds, so no run of like differences collapses into one line.
        let a = stream(500).enumerated().map { index, event -> TraceEvent in
            var e = event
            if index % 2 == 1 { e.event = "rate" }
            return e
        }
        let b = a.map { event -> TraceEvent in
            var e = event
            e.timeNs += 5 * ms
            return e
        }
        let report = TraceDiff.compare(a, b, timingToleranceNs: 0)
        #expect(report.timing.count == 500)
        let lines = report.render(maxLines: 12).split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 12)
        #expect(lines.first?.hasPrefix("trace diff: 500 vs 500 events, 500 aligned; 0 missing") == true)
        #expect(lines.last == "... and 490 more")
        #expect(report.render().split(separator: "\n").count == 40)
    }

    @Test func aRunOfLikeDifferencesIsOneLine() {
        let report = TraceDiff.compare(stream(100), [], timingToleranceNs: 0)
        let lines = report.render().split(separator: "\n").map(String.init)
        #expect(lines == [
            "trace diff: 100 vs 0 events, 0 aligned; 100 missing, 0 extra, 0 moved, 0 changed, 0 timing beyond 0 ns",
            "- missing ×100 ingest datapoint t_ns=0…990000000",
        ])
    }

    @Test func renumberedEventsAtTheSameInstantAreChangedNotMissingAndExtra() {
        let chunk = { (t: Int64, sequence: Int64) in
            TraceEvent(timeNs: t, core: "ingest", event: "chunk", fields: ["source": .string("imu"), "sequence": .int(sequence), "points": .int(6)])
        }
        let a = [chunk(0, 1), chunk(10, 2), chunk(20, 3)]
        let b = [chunk(0, 7), chunk(10, 8), chunk(20, 9)]
        let report = TraceDiff.compare(a, b, timingToleranceNs: 0)
        #expect(report.missing.isEmpty && report.extra.isEmpty && report.moved.isEmpty)
        #expect(report.changed.map(\.fields) == [["sequence"], ["sequence"], ["sequence"]])
        #expect(report.render().split(separator: "\n").last == "! changed ×3 ingest chunk [sequence] t_ns=0…20: first sequence: 1 → 7; last sequence: 3 → 9")
    }

    @Test func renderKeepsEachDifferenceOnOneShortLine() {
        let long = String(repeating: "x", count: 500) + "\nsecond line"
        let a = [TraceEvent(timeNs: 0, core: "messaging", event: "received", fields: ["app": .string("a"), "text": .string(long)])]
        let report = TraceDiff.compare(a, [], timingToleranceNs: 0)
        let lines = report.render().split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[1].count < 200)
    }
}
