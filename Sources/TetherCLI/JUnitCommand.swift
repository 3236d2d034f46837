import ArgumentParser
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
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
            A suite name found in two inputs is reported too: shards of one run never share a set.

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
            let data: Data
            do {
                data = Data(try FileIO.readAll(input))
            } catch {
                throw CommandFailure.failed("cannot read \(input): \(error)")
            }
            let parsed: JUnitFile
            do {
                parsed = try JUnitFile.parse(data, path: input)
            } catch {
                throw CommandFailure.failed("\(error)")
            }
            for warning in parsed.warnings { Terminal.warn("tether: warning: \(input): \(warning)") }
            for suite in parsed.suites {
                if let other = seen[suite.name] {
                    Terminal.warn("tether: warning: suite \(suite.name) is in both \(other) and \(input); both are kept. Shards of one run never share a set: were two reports of the same shard given?")
                } else {
                    seen[suite.name] = input
                }
            }
            merged.suites += parsed.suites
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

/// A JUnit XML file read into ``JUnitReport``'s suites.
struct JUnitFile {
    /// Why a file is not a JUnit report.
    struct ParseError: Error, CustomStringConvertible {
        var path: String
        var line: Int
        var column: Int
        var reason: String

        var description: String {
            "\(path):\(line):\(column): \(reason). Give a JUnit XML report, such as `tether replay --junit` writes."
        }
    }

    var suites: [JUnitReport.TestSuite]
    var warnings: [String]

    /// Parses `data` (the file at `path`, named in errors).
    static func parse(_ data: Data, path: String) throws(ParseError) -> JUnitFile {
        let delegate = JUnitParserDelegate()
        let parser = XMLParser(data: data)
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        let parsed = parser.parse()
        if let failure = delegate.failure {
            throw ParseError(path: path, line: failure.line, column: failure.column, reason: failure.reason)
        }
        guard parsed else {
            let reason = parser.parserError.map { "it is not well-formed XML: " + JUnitParserDelegate.describe($0) } ?? "it is not well-formed XML"
            throw ParseError(path: path, line: parser.lineNumber, column: parser.columnNumber, reason: reason)
        }
        guard delegate.sawRoot else {
            throw ParseError(path: path, line: 1, column: 1, reason: "it holds no <testsuites> or <testsuite> element")
        }
        return JUnitFile(suites: delegate.suites, warnings: delegate.warnings)
    }
}

/// Builds suites from XMLParser's events: <testsuites> → <testsuite> → <testcase> →
/// <failure>/<error>/<skipped>/<system-out>.
private final class JUnitParserDelegate: NSObject, XMLParserDelegate {
    var suites: [JUnitReport.TestSuite] = []
    var warnings: [String] = []
    var failure: (line: Int, column: Int, reason: String)?
    var sawRoot = false
    private var path: [String] = []
    private var suite: JUnitReport.TestSuite?
    private var testCase: JUnitReport.TestCase?
    private var text = ""
    private var ignoredDepth = 0
    private var warned: Set<String> = []

    private func fail(_ parser: XMLParser, _ reason: String) {
        guard failure == nil else { return }
        failure = (parser.lineNumber, parser.columnNumber, reason)
        parser.abortParsing()
    }

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        defer { path.append(element) }
        text = ""
        if ignoredDepth > 0 {
            ignoredDepth += 1
            return
        }
        switch (path.last, element) {
        case (nil, "testsuites"):
            sawRoot = true
        case (nil, "testsuite"), ("testsuites", "testsuite"):
            sawRoot = true
            suite = JUnitReport.TestSuite(name: attributes["name"] ?? "", cases: [])
        case ("testsuite", "testcase"):
            guard let name = attributes["name"] else { return fail(parser, "a <testcase> has no name attribute") }
            testCase = JUnitReport.TestCase(name: name, className: attributes["classname"] ?? "")
        case ("testcase", "failure"), ("testcase", "error"):
            testCase?.failure = JUnitReport.Failure(message: attributes["message"] ?? "", type: attributes["type"] ?? element)
        case ("testcase", "skipped"):
            testCase?.skipped = attributes["message"] ?? ""
        case ("testcase", "system-out"):
            break
        case (nil, _):
            fail(parser, "its root element is <\(element)>, not <testsuites> or <testsuite>")
        default:
            // Properties, system-err, a suite's own system-out, tool-specific elements: not in
            // Tether's report model, so left out, and said once per element name.
            ignoredDepth = 1
            if warned.insert(element).inserted {
                warnings.append("<\(element)> inside <\(path.last ?? "")> is not carried into the merged report")
            }
        }
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        fail(parser, "it is not well-formed XML: " + Self.describe(parseError))
    }

    /// libxml2's error numbers (xmlParserErrors) that a damaged report gives most, in words.
    static func describe(_ error: any Error) -> String {
        let code = (error as NSError).code
        switch code {
        case 4: return "the document is empty"
        case 5: return "the document does not end where its root element does (cut off, or more after it)"
        case 9: return "a character XML does not allow"
        case 73: return "a tag is missing its '>'"
        case 76: return "a closing tag does not match the element it closes"
        case 77: return "the file ends before its elements are closed"
        default: return "libxml2 error \(code)"
        }
    }

    func parserDidEndDocument(_ parser: XMLParser) {
        // libxml2 in recovery mode can reach the end with elements still open: a cut-off report.
        if let open = path.last { fail(parser, "the file ends inside <\(open)>: it is cut off or not well-formed") }
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        text += string
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        text += String(decoding: block, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        path.removeLast()
        if ignoredDepth > 0 {
            ignoredDepth -= 1
            return
        }
        switch element {
        case "testsuite":
            if let suite { suites.append(suite) }
            suite = nil
        case "testcase":
            if let testCase { suite?.cases.append(testCase) }
            testCase = nil
        case "failure", "error":
            testCase?.failure?.details = text.trimmingCharacters(in: .whitespacesAndNewlines)
        case "system-out":
            testCase?.output = text
        default:
            break
        }
        text = ""
    }
}
