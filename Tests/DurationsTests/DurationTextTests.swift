import Durations
import Testing

@Suite struct DurationTextTests {
    @Test(arguments: [
        ("250ns", 250.0), ("3us", 3e3), ("40ms", 40e6), ("1.5s", 1.5e9), ("2m", 120e9), ("1h", 3600e9),
        (" 8s ", 8e9), (".5s", 0.5e9), ("0s", 0), ("0.0000000014s", 1),
    ])
    func everyUnitReadsAsItsNanoseconds(text: String, ns: Double) {
        #expect(DurationText.nanoseconds(text, bareNumber: .refused) == ns)
        #expect(DurationText.nanoseconds(text, bareNumber: .seconds) == ns)
    }

    @Test func aBareNumberIsSecondsOnlyWhereTheCallerSaysSo() {
        #expect(DurationText.seconds("8") == 8)
        #expect(DurationText.seconds("0.25") == 0.25)
        #expect(DurationText.nanoseconds("8", bareNumber: .refused) == nil)
    }

    @Test(arguments: ["", "s", "ms", "-1s", "+1s", "1e3s", "1.2.3s", "1 s", "5x", "1sm", "inf", "nan", "0x10s", "１s", "5S"])
    func anythingElseIsNotADuration(text: String) {
        #expect(DurationText.nanoseconds(text, bareNumber: .seconds) == nil, "\(text)")
    }

    @Test func aValuePastInt64IsStillANumberForTheCallerToRefuseByRange() {
        let ns = DurationText.nanoseconds("99999999999999999999ns", bareNumber: .refused)
        #expect(ns.map { $0 > Double(Int64.max) } == true)
    }
}
