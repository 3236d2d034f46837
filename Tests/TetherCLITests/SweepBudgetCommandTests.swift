import Foundation
import Testing

/// `tether replay SET --sweep KIND --sweep-budget B` runs what the budget allows and says what it
/// left out (docs/faults.md, "Long sweeps").
struct SweepBudgetCommandTests {
    @Test func variantsTheBudgetLeftOutAreReportedAndSkippedNotPassed() throws {
        let junit = FileManager.default.temporaryDirectory.appendingPathComponent("sweep-budget-\(UUID().uuidString).xml")
        defer { try? FileManager.default.removeItem(at: junit) }
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/session-clean").path
        let result = try Tools.tether(["replay", set, "--sweep", "drop", "--sweep-budget", "3", "--junit", junit.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("passed 3, failed 0, not covered 5;"), "\(result.stdout)")
        #expect(result.stdout.contains("left out by --sweep-budget 3"))
        let xml = try String(contentsOf: junit, encoding: .utf8)
        #expect(xml.components(separatedBy: "<testcase ").count - 1 == 8)
        #expect(xml.components(separatedBy: "<skipped ").count - 1 == 5, "\(xml)")
    }

    @Test func aBudgetThatIsNeitherATimeNorACountIsRefused() throws {
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/session-clean").path
        let zero = try Tools.tether(["replay", set, "--sweep", "drop", "--sweep-budget", "0"])
        #expect(zero.status != 0)
        #expect(zero.stderr.contains("--sweep-budget 0 is neither a time nor a count"), "\(zero.stderr)")
        let alone = try Tools.tether(["replay", set, "--sweep-budget", "10m"])
        #expect(alone.status != 0)
        #expect(alone.stderr.contains("--sweep-budget goes with --sweep."), "\(alone.stderr)")
    }
}
