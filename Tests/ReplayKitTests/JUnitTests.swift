import Testing

@testable import ReplayKit
import BehaviourTrace

#if canImport(CaptureSet)
import CaptureSet
#endif

/// Two capture sets: one passing everything, one with a failed expectation and a failed baseline.
func sampleOutcomes() -> [CaptureSetOutcome] {
    let yaw = TraceExpectation.Selector(event: "datapoint", where: ["name": .string("v1/1/yaw")])
    let passing = ExpectationResult(
        expectation: TraceExpectation(name: "yaw count", .count(yaw, .init(equals: 2))), passed: true,
        measured: "2", message: "yaw count: expected 2, measured 2")
    let failing = ExpectationResult(
        expectation: TraceExpectation(.absent(.init(event: "rejected"))), passed: false,
        measured: "1", message: "absent(rejected): expected none, measured 1 <bad & \"quoted\">")
    var diff = TraceDiffReport(eventsA: 2, eventsB: 1, timingToleranceNs: 0)
    diff.missing = [.init(index: 1, event: TraceEvent(timeNs: 10, core: "ingest", event: "stream_end"))]
    return [
        CaptureSetOutcome(name: "imu-100hz", expectations: [passing],
                          baselines: [BaselineComparison(name: "ingest", diff: TraceDiffReport(eventsA: 2, eventsB: 2, timingToleranceNs: 0))]),
        CaptureSetOutcome(name: "bad-json", expectations: [passing, failing],
                          baselines: [BaselineComparison(name: "ingest", diff: diff)]),
        CaptureSetOutcome(name: "new-set", expectations: [], baselines: []),
    ]
}

@Suite struct JUnitTests {
    @Test func reportHasOneSuitePerSetAndOneCasePerExpectationAndBaseline() {
        let xml = JUnitReport(outcomes: sampleOutcomes()).xml()
        let expected = """
        <?xml version="1.0" encoding="UTF-8"?>
        <testsuites name="tether replay" tests="6" failures="2" errors="0" skipped="1">
          <testsuite name="imu-100hz" tests="2" failures="0" errors="0" skipped="0">
            <testcase name="yaw count" classname="replay.imu-100hz">
              <system-out>yaw count: expected 2, measured 2</system-out>
            </testcase>
            <testcase name="baseline ingest" classname="replay.imu-100hz">
              <system-out>baseline ingest: 0 missing, 0 extra, 0 moved, 0 changed, 0 timing beyond 0 ns</system-out>
            </testcase>
          </testsuite>
          <testsuite name="bad-json" tests="3" failures="2" errors="0" skipped="0">
            <testcase name="yaw count" classname="replay.bad-json">
              <system-out>yaw count: expected 2, measured 2</system-out>
            </testcase>
            <testcase name="absent(rejected)" classname="replay.bad-json">
              <failure message="absent(rejected): expected none, measured 1 &lt;bad &amp; &quot;quoted&quot;&gt;" type="expectation"/>
            </testcase>
            <testcase name="baseline ingest" classname="replay.bad-json">
              <failure message="baseline ingest: 1 missing, 0 extra, 0 moved, 0 changed, 0 timing beyond 0 ns" type="baseline">trace diff: 2 vs 1 events, 0 aligned; 1 missing, 0 extra, 0 moved, 0 changed, 0 timing beyond 0 ns&#10;- missing t_ns=10 ingest stream_end</failure>
            </testcase>
          </testsuite>
          <testsuite name="new-set" tests="1" failures="0" errors="0" skipped="1">
            <testcase name="baseline" classname="replay.new-set">
              <skipped message="no baseline trace in this capture set"/>
            </testcase>
          </testsuite>
        </testsuites>

        """
        #expect(xml == expected)
    }

    @Test func sameOutcomesGiveByteIdenticalXML() {
        // Equal outcomes built twice, with an unnamed expectation whose conditions were inserted
        // in opposite orders (so the two dictionaries iterate differently): the test names and
        // so the XML must not depend on that order.
        func outcomes(reversed: Bool) -> [CaptureSetOutcome] {
            let pairs = (0..<12).map { ("k\($0)", TraceExpectation.Value.int(Int64($0))) }
            var conditions: [String: TraceExpectation.Value] = [:]
            for (key, value) in reversed ? pairs.reversed() : pairs { conditions[key] = value }
            let result = ExpectationResult(
                expectation: TraceExpectation(.absent(.init(event: "datapoint", where: conditions))), passed: false,
                measured: "1", message: "one datapoint matched")
            return sampleOutcomes() + [CaptureSetOutcome(name: "conditions", expectations: [result], baselines: [])]
        }
        let first = JUnitReport(outcomes: outcomes(reversed: false)).xml()
        #expect(first.contains("<testsuite name=\"conditions\""))
        #expect(first.contains("absent(datapoint where k0=0, k1=1, k10=10, k11=11, k2=2, "), "\(first)")
        #expect(first == JUnitReport(outcomes: outcomes(reversed: true)).xml())
    }

    @Test func escapeHandlesMarkupQuotesAndCharactersXMLCannotCarry() {
        #expect(JUnitReport.escape("a<b>&\"c'\u{01}\u{FFFE}\t\n日") == "a&lt;b&gt;&amp;&quot;c&apos;\u{FFFD}\u{FFFD}&#9;&#10;日")
    }

    @Test func caseWithNothingToSayIsSelfClosing() {
        let report = JUnitReport(suites: [.init(name: "s", cases: [.init(name: "t", className: "c")])])
        #expect(report.xml().contains("    <testcase name=\"t\" classname=\"c\"/>\n"))
    }
}

@Suite struct ReplayReportTests {
    @Test func reportListsEachCheckAndEndsWithTheOverallVerdict() {
        let text = ReplayReport.render(sampleOutcomes())
        #expect(text == """
        == imu-100hz: PASS (1/1 expectations passed)
          PASS yaw count: expected 2, measured 2
          PASS baseline ingest: 2 baseline vs 2 replayed events; 0 missing, 0 extra, 0 moved, 0 changed, 0 timing beyond 0 ns

        == bad-json: FAIL (1/2 expectations passed)
          PASS yaw count: expected 2, measured 2
          FAIL absent(rejected): expected none, measured 1 <bad & "quoted">
          FAIL baseline ingest: 2 baseline vs 1 replayed events; 1 missing, 0 extra, 0 moved, 0 changed, 0 timing beyond 0 ns
            - missing t_ns=10 ingest stream_end

        == new-set: PASS (0/0 expectations passed)
          expectations: none in the manifest
          baseline: none (accept a run as the baseline to start comparing)

        FAIL: 1 of 3 capture set(s) failed (1 of 3 expectation(s), 1 of 2 baseline(s))

        """)
    }

    @Test func allPassingSetsEndWithPass() {
        let text = ReplayReport.render([sampleOutcomes()[0]])
        #expect(text.hasSuffix("PASS: 1 capture set(s), 1 expectation(s), 1 baseline(s)\n"))
    }

    @Test func failedBaselineDiffIsBoundedByTheLineBudget() {
        var diff = TraceDiffReport(eventsA: 100, eventsB: 0, timingToleranceNs: 0)
        // Alternating kinds, so no run collapses and the budget is what bounds the output.
        diff.missing = (0..<100).map { .init(index: $0, event: TraceEvent(timeNs: Int64($0), core: "ingest", event: $0 % 2 == 0 ? "chunk" : "gap")) }
        let outcome = CaptureSetOutcome(name: "s", expectations: [], baselines: [BaselineComparison(name: "ingest", diff: diff)])
        let lines = ReplayReport.render([outcome], maxDiffLines: 5).split(separator: "\n")
        #expect(lines.filter { $0.hasPrefix("    ") }.count == 5)
        #expect(lines.contains("    ... and 96 more"))
    }
}
