import Testing
import Foundation

@testable import TimelineReport
import ReplayKit
import BehaviourTrace
#if canImport(CaptureSet)
import CaptureSet
#endif

private func event(_ t: Int64, _ core: TraceName, _ name: TraceName, _ fields: [String: TraceValue] = [:]) -> TraceEvent {
    TraceEvent(timeNs: t, core: core, event: name, fields: fields)
}

@Suite struct TimelineReportTests {
    @Test func eachEventGoesToItsCoresCategoryLaneAndFaultsToTheirOwn() {
        var builder = TimelineBuilder(interfaces: [0: "if 0 · ble-hci"])
        let trace = [
            event(0, "messaging", "api_call", ["call": .string("send"), "send": .int(1)]),
            event(1_000, "messaging", "progress", ["send": .int(1), "sent": .int(0), "total": .int(10)]),
            event(2_000, "messaging", "frame_emitted"),
            event(3_000, "messaging", "timeout", ["what": .string("first-ack")]),
            event(4_000, "messaging", "violation"),
            event(5_000, "messaging", "fault_injected"),
            event(6_000, "ingest", "frame_malformed"),
        ]
        for e in trace { builder.observe(e) }
        builder.frame(interface: 0, timeNs: 500, number: 1, direction: "sent", summary: "ATT Write Request")
        let lanes = builder.lanes
        #expect(lanes.map(\.name) == [
            "if 0 · ble-hci", "messaging · api", "messaging · callbacks", "messaging · timers", "messaging · violations",
            "messaging · frames", "ingest · violations", "faults",
        ])
        #expect(lanes.map(\.count) == [1, 1, 1, 1, 1, 1, 1, 1])
        #expect(lanes[7].positions == [5], "a fault keeps its trace position")
        #expect(lanes[0].positions == [1], "a frame keeps its frame number")
        #expect(lanes[0].keptDetails.first?.text == "sent  ATT Write Request")
        #expect(builder.events == trace.count)
    }

    @Test func detailsStaySpreadAndBoundedForABulkKind() {
        var builder = TimelineBuilder()
        let n = 3 * TimelineBuilder.detailsPerKind + 7
        for i in 0..<n { builder.observe(event(Int64(i) * 1000, "ingest", "datapoint", ["value": .int(Int64(i))])) }
        let lane = builder.lanes[0]
        #expect(lane.count == n)
        let kept = lane.keptDetails
        #expect(kept.count <= TimelineBuilder.detailsPerKind)
        #expect(kept.count > TimelineBuilder.detailsPerKind / 2)
        #expect(kept.first?.item == 0)
        #expect((kept.last?.item ?? 0) > n - 2 * lane.detailStrides[0], "the kept ones reach the end of the set")
    }

    @Test func theRatePlotCountsDatapointsPerSourcePerSecond() throws {
        var builder = TimelineBuilder()
        // 20 Hz for 2 s from one source.
        for i in 0..<40 {
            builder.observe(event(Int64(i) * 50_000_000, "ingest", "datapoint", ["source": .string("a"), "name": .string("x")]))
        }
        let plot = try #require(builder.ratePlot)
        #expect(plot.series.map(\.name) == ["a"])
        #expect(plot.series[0].values.allSatisfy { $0 == 20 })
    }

    @Test func correlatedPairsGiveLatencyAndProgressPlots() throws {
        let send = TraceCorrelation("send → completion", start: .init("api_call", where: "call", is: "send"),
                                    ends: [.init("completion")], key: "send",
                                    progress: .init(event: "progress", done: "sent", total: "total"))
        var builder = TimelineBuilder(correlations: ["messaging": [send]])
        builder.observe(event(0, "messaging", "api_call", ["call": .string("send"), "send": .int(1)]))
        builder.observe(event(1_000_000, "messaging", "progress", ["send": .int(1), "sent": .int(5), "total": .int(10)]))
        builder.observe(event(4_000_000, "messaging", "completion", ["send": .int(1), "result": .string("Success")]))
        let latency = try #require(builder.latencyPlot)
        #expect(latency.series.first?.values == [4])
        let progress = try #require(builder.progressPlot)
        #expect(progress.series.first?.values == [50])
    }

    @Test func thePageIsSelfContainedAndItsDataParses() throws {
        var builder = TimelineBuilder()
        builder.observe(event(0, "ingest", "stream_start", ["source": .string("</script><b>")]))
        builder.observe(event(10, "ingest", "rejected", ["reason": .string("not_json")]))
        let expectation = TraceExpectation(.absent(.init(core: "ingest", event: "rejected")))
        let results = Expectations.evaluate([expectation], trace: [
            event(0, "ingest", "stream_start", ["source": .string("</script><b>")]), event(10, "ingest", "rejected"),
        ])
        let report = TimelineSetReport(name: "a/b <set>", title: "t", timeline: builder,
                                       outcome: CaptureSetOutcome(name: "x", expectations: results, baselines: []))
        let html = String(decoding: TimelineDocument.page(report), as: UTF8.self)
        #expect(!html.contains("http://") && !html.contains("https://") && !html.contains("src="), "nothing is fetched")
        #expect(!html.contains("</script><b>"), "data cannot close its script element")
        let start = try #require(html.range(of: "id=\"timeline-data\">"))
        let end = try #require(html.range(of: "</script>", range: start.upperBound..<html.endIndex))
        let json = try JSONSerialization.jsonObject(with: Data(html[start.upperBound..<end.lowerBound].utf8)) as? [String: Any]
        let expectations = try #require(json?["expectations"] as? [[String: Any]])
        #expect(expectations.first?["evidence"] as? [Int] == [1])
        #expect(expectations.first?["passed"] as? Bool == false)
        #expect(TimelineDocument.pageName(for: "a/b <set>", taken: []) == "set-a_b__set_.html")
        #expect(TimelineDocument.pageName(for: "x", taken: ["set-x.html"]) == "set-x-2.html")
    }
}

/// Page names derived from set names of any length fit a file system's 255-byte limit and stay
/// apart.
@Suite struct TimelinePageNameTests {
    @Test func aSetNameOfThreeHundredCharactersGivesAPageNameThatFits() {
        let long = String(repeating: "x", count: 300)
        let page = TimelineDocument.pageName(for: long, taken: [])
        #expect(page.utf8.count < 200)
        #expect(page.hasSuffix(".html"))
        let other = TimelineDocument.pageName(for: long + "y", taken: [page])
        #expect(other != page)
        #expect(other.utf8.count < 200)
    }

    @Test func twoLongNamesThatShareTheirStartGetDifferentPages() {
        let a = String(repeating: "s", count: 200) + "-a"
        let b = String(repeating: "s", count: 200) + "-b"
        #expect(TimelineDocument.pageName(for: a, taken: []) != TimelineDocument.pageName(for: b, taken: []))
    }
}
