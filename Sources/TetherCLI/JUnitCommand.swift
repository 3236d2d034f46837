import ArgumentParser
import CaptureSet
import ReplayKit

/// `tether junit …`: work with JUnit XML reports.
struct JUnitCommand: ParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(
        commandName: "junit",
        abstract: "Work with JUnit XML reports: merge the reports of replay shards into one.",
        subcommands: [JUnitMergeCommand.self]
    ) }
}

/// `tether junit merge A.xml B.xml … --out ALL.xml`.
struct JUnitMergeCommand: ParsableCommand {
    static var configuration: CommandConfiguration { CommandConfiguration(
        commandName: "merge",
        abstract: "Combine JUnit XML reports (one per replay shard) into one report.",
        discussion: """
            Every <testsuite> of every input goes into one <testsuites>, in the order given; the \
            totals (tests, failures, skipped) are counted again. Inputs are read as `tether replay \
            --junit` writes them; a report from another tool is read as far as <testsuite>, \
            <testcase>, <failure>, <error>, <skipped> and <system-out> go (an <error> becomes a \
            failure of type "error"), and anything else in it is named in a warning and left out. \
            Suites of the same name are joined, their test cases in the order given: the parts of one \
            set's sweep (--sweep … --shard I/N) merge into the suite one job would write. A test \
            case found in two inputs is reported: were two reports of the same shard given?

            Merge the reports of four shards (docs/ci-sharding.md):
              tether junit merge out/replay-1.xml out/replay-2.xml out/replay-3.xml out/replay-4.xml --out out/replay.xml
            """
    ) }

    @Argument(help: "JUnit XML files to merge, in order.")
    var inputs: [String]

    @Option(name: .long, help: "Where to write the merged report.")
    var out: String

    @Option(name: .long, help: "The name of the merged <testsuites>.")
    var name: String = "tether replay"

    func validate() throws {
        guard !inputs.isEmpty else {
            throw ValidationError("Give the reports to merge, e.g. `tether junit merge a.xml b.xml --out all.xml`.")
        }
        try OutputFile.check(out, option: "--out")
        try OutputFile.refuseOverwriting(out, option: "--out", protected: inputs, reading: "a report it merges")
    }

    func run() throws {
        var merged = JUnitReport(name: name, suites: [])
        var seen: [String: String] = [:]
        for input in inputs {
            let bytes: [UInt8]
            do {
                bytes = try FileIO.readAll(input)
            } catch {
                throw CommandFailure.failed("cannot read \(input): \(error)")
            }
            let parsed: JUnitReading.Report
            do {
                parsed = try JUnitReading.parse(bytes, path: input)
            } catch {
                throw CommandFailure.failed("\(error)")
            }
            for warning in parsed.warnings { Terminal.warn("tether: warning: \(input): \(warning)") }
            for suite in parsed.suites {
                guard let other = seen[suite.name], let at = merged.suites.firstIndex(where: { $0.name == suite.name }) else {
                    seen[suite.name] = input
                    merged.suites.append(suite)
                    continue
                }
                // The parts of one set's sweep (`--sweep … --shard I/N`) share the set's suite:
                // joined in the order given, they are the suite one job would write.
                let names = Set(merged.suites[at].cases.map { "\($0.className) \($0.name)" })
                if suite.cases.contains(where: { names.contains("\($0.className) \($0.name)") }) {
                    Terminal.warn("tether: warning: suite \(suite.name) of \(input) repeats test cases of \(other); both are kept. Were two reports of the same shard given?")
                }
                merged.suites[at].cases += suite.cases
            }
        }
        do {
            try merged.write(to: out)
        } catch {
            throw CommandFailure.failed("\(error)")
        }
        let tests = merged.suites.reduce(0) { $0 + $1.cases.count }
        let failures = merged.suites.reduce(0) { $0 + $1.failures }
        StandardOutput.shared.line("Wrote \(out): \(merged.suites.count) suite(s), \(tests) test(s), \(failures) failure(s) from \(inputs.count) report(s).")
        StandardOutput.shared.flush()
    }
}
