import Foundation
import Testing
import TetherTestSupport

/// `tether replay --shard i/N` and `tether junit merge`: the parts are disjoint, together every
/// set, the same whatever order the sets are listed in, and their reports merge into the whole.
struct ReplayShardTests {
    static let captures = Tools.repositoryRoot.appendingPathComponent("Captures").path
    static let everySet = (try? FileManager.default.contentsOfDirectory(atPath: captures))?
        .filter { FileManager.default.fileExists(atPath: "\(captures)/\($0)/manifest.yaml") }.sorted() ?? []

    func suites(_ report: String) throws -> [String] {
        let text = try String(contentsOfFile: report, encoding: .utf8)
        return text.components(separatedBy: "<testsuite name=\"").dropFirst().map { String($0.prefix { $0 != "\"" }) }
    }

    @Test func fourShardsAreDisjointAndTogetherEverySet() throws {
        let folder = try TemporaryFolder("shards")
        var seen: [String] = []
        var shardOf: [String: Int] = [:]
        for shard in 1...4 {
            let report = folder.path("r\(shard).xml").path
            let result = try Tools.tetherSucceeds(["replay", Self.captures, "--shard", "\(shard)/4", "--junit", report])
            #expect(result.stdout.hasPrefix("Shard \(shard)/4: "))
            let mine = try suites(report)
            #expect(!mine.isEmpty)
            seen += mine
            for name in mine { shardOf[name] = shard }
        }
        // A set's fault scenarios (`SET / SCENARIO`) are replayed by the shard that replays the set.
        #expect(seen.filter { !$0.contains(" / ") }.sorted() == Self.everySet)
        for scenario in seen where scenario.contains(" / ") {
            let set = String(scenario[..<scenario.range(of: " / ")!.lowerBound])
            #expect(shardOf[scenario] == shardOf[set], "\(scenario) is not in the shard of \(set)")
        }
        #expect(Set(seen).count == seen.count)
        // The two plugin sets are the heaviest committed sets by far (CI/bench/README.md, "Sharding").
        #expect(shardOf["plugin-clean"] != shardOf["plugin-faulty"])
    }

    @Test func aShardDoesNotDependOnTheOrderTheSetsAreListedIn() throws {
        let sets = Self.everySet.prefix(9).map { "\(Self.captures)/\($0)" }
        let folder = try TemporaryFolder("shards")
        let forward = folder.path("f.xml").path
        let backward = folder.path("b.xml").path
        try Tools.tetherSucceeds(["replay"] + sets + ["--shard", "2/3", "--junit", forward])
        try Tools.tetherSucceeds(["replay"] + sets.reversed() + ["--shard", "2/3", "--junit", backward])
        #expect(try suites(forward) == suites(backward))
    }

    @Test(arguments: ["0/4", "5/4", "2", "a/b", "1/0", "-1/4", "1/4/2", "1/100000"])
    func aShardThatIsNotIOfNIsRefused(_ text: String) throws {
        let result = try Tools.tether(["replay", Self.captures, "--shard", text])
        #expect(result.status == 64)
        #expect(result.stderr.contains("--shard"))
    }

    @Test func moreShardsThanSetsLeavesSomeEmptyAndPasses() throws {
        let set = "\(Self.captures)/ciq-clean"
        let second = try Tools.tether(["replay", set, "--shard", "2/3"])
        #expect(second.status == 0)
        #expect(second.stdout.contains("nothing to replay"))
        let first = try Tools.tetherSucceeds(["replay", set, "--shard", "1/3"])
        #expect(first.stdout.contains("Shard 1/3: 1 of 1 set(s)"))
    }

    @Test func mergedShardReportsHoldEverySuiteOfTheWholeRun() throws {
        let folder = try TemporaryFolder("shards")
        let names = Self.everySet.filter { $0.hasPrefix("ciq-") || $0.hasPrefix("widget-") }
        let sets = names.map { "\(Self.captures)/\($0)" }
        var reports: [String] = []
        for shard in 1...3 {
            let report = folder.path("r\(shard).xml").path
            try Tools.tetherSucceeds(["replay"] + sets + ["--shard", "\(shard)/3", "--junit", report])
            reports.append(report)
        }
        let merged = folder.path("all.xml").path
        let result = try Tools.tetherSucceeds(["junit", "merge"] + reports + ["--out", merged])
        let mergedSuites = try suites(merged)
        #expect(result.stdout.contains("\(mergedSuites.count) suite(s)"))
        #expect(mergedSuites.filter { !$0.contains(" / ") }.sorted() == names)
        let whole = folder.path("whole.xml").path
        try Tools.tetherSucceeds(["replay"] + sets + ["--junit", whole])
        let text = try String(contentsOfFile: merged, encoding: .utf8)
        let wholeText = try String(contentsOfFile: whole, encoding: .utf8)
        // Same totals line: every case of the whole run, none twice.
        #expect(text.split(separator: "\n")[1] == wholeText.split(separator: "\n")[1])
    }

    @Test func aMergeKeepsFailuresAndErrorsOfAnotherToolsReport() throws {
        let folder = try TemporaryFolder("shards")
        let foreign = folder.path("foreign.xml").path
        try Data("""
            <?xml version="1.0"?>
            <testsuites><testsuite name="other" tests="3"><properties><property name="a" value="b"/></properties>
            <testcase name="ok" classname="x"/>
            <testcase name="bad" classname="x"><failure message="boom" type="assert">trace here</failure></testcase>
            <testcase name="crashed" classname="x"><error message="signal 11"/></testcase>
            </testsuite></testsuites>
            """.utf8).write(to: URL(fileURLWithPath: foreign))
        let merged = folder.path("all.xml").path
        let result = try Tools.tetherSucceeds(["junit", "merge", foreign, "--out", merged])
        #expect(result.stderr.contains("<properties>"))
        let text = try String(contentsOfFile: merged, encoding: .utf8)
        #expect(text.contains(#"tests="3" failures="2""#))
        #expect(text.contains(#"<failure message="boom" type="assert">trace here</failure>"#))
        #expect(text.contains(#"<failure message="signal 11" type="error"/>"#))
    }

    @Test func aMalformedReportIsRefusedWithItsLineAndNothingIsWritten() throws {
        let folder = try TemporaryFolder("shards")
        let broken = folder.path("broken.xml").path
        try Data("<testsuites>\n<testsuite name=\"a\">\n<testcase name=\"x\">\n</testsuites>\n".utf8).write(to: URL(fileURLWithPath: broken))
        let merged = folder.path("all.xml").path
        let result = try Tools.tether(["junit", "merge", broken, "--out", merged])
        #expect(result.status == 1)
        #expect(result.stderr.contains("broken.xml:"))
        #expect(!FileManager.default.fileExists(atPath: merged))
        let html = folder.path("page.xml").path
        try Data("<html><body/></html>".utf8).write(to: URL(fileURLWithPath: html))
        let notJUnit = try Tools.tether(["junit", "merge", html, "--out", merged])
        #expect(notJUnit.status == 1 && notJUnit.stderr.contains("root element is <html>"))
    }
}
