import Testing

@testable import BehaviourTrace

/// Differences of `t_ns` that need 65 bits, and text from captures made safe for a terminal.
@Suite struct TraceTimeDifferenceTests {
    @Test func theDifferenceOfTheExtremesIsExactAndPositive() {
        let difference = TraceTimeDifference(from: .min, to: .max)
        #expect(!difference.isNegative)
        #expect(difference.magnitude == UInt64.max)
        #expect(difference.saturatingNanoseconds == .max)
        #expect(difference.description == "+18446744073709551615 ns")
    }

    @Test func aNegativeDifferenceKeepsItsSign() {
        let difference = TraceTimeDifference(from: .max, to: .min)
        #expect(difference.isNegative)
        #expect(difference.magnitude == UInt64.max)
        #expect(difference.saturatingNanoseconds == .min)
        #expect(TraceTimeDifference(from: 10, to: 5).description == "-5 ns")
        #expect(TraceTimeDifference(from: 5, to: 5).description == "+0 ns")
    }

    @Test func tracesAtTheExtremesDifferInTimeEvenWithAMillisecondTolerance() {
        let a = [TraceEvent(timeNs: .min, core: "ingest", event: "stream_end")]
        let b = [TraceEvent(timeNs: .max, core: "ingest", event: "stream_end")]
        let report = TraceDiff.compare(a, b, timingToleranceNs: 1_000_000)
        #expect(report.timing.count == 1)
        #expect(report.timing.first?.deltaNs == .max)
        #expect(!report.isEmpty)
    }

    @Test(arguments: [("a\u{1B}]0;pwned\u{7}b", "a\\u{1b}]0;pwned\\u{7}b"), ("\u{9B}2J", "\\u{9b}2J"),
                      ("x\u{2028}y", "x\\u{2028}y"), ("\u{202E}gnp.exe", "\\u{202e}gnp.exe"), ("plain é", "plain é")])
    func controlCharactersAreShownEscaped(text: String, shown: String) {
        #expect(text.escapingControlCharactersForReport() == shown)
    }
}
