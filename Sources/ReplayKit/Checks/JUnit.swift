import BehaviourTrace
import Foundation

#if canImport(CaptureSet)
import CaptureSet
#endif

/// A JUnit XML report, the format CI systems (GitLab, Jenkins, GitHub test reporters) show as test
/// results: `<testsuites>` → one `<testsuite>` per capture set → one `<testcase>` per expectation
/// plus one per baseline comparison.
///
/// Output is deterministic: no timestamps, host names or durations, attributes in a fixed order,
/// so two identical replays give byte-identical files.
public struct JUnitReport: Sendable, Hashable {
    /// Why a test case failed.
    public struct Failure: Sendable, Hashable {
        /// The one-line message (the `message` attribute).
        public var message: String
        /// The failure kind (the `type` attribute), e.g. `expectation` or `baseline`.
        public var type: String
        /// Longer text inside the element, e.g. the rendered trace diff.
        public var details: String

        /// Creates a failure.
        public init(message: String, type: String, details: String = "") {
            self.message = message
            self.type = type
            self.details = details
        }
    }

    /// One `<testcase>`.
    public struct TestCase: Sendable, Hashable {
        /// The test name, e.g. the expectation's name.
        public var name: String
        /// The `classname` attribute: `replay.<capture set>`.
        public var className: String
        /// Set when the case failed.
        public var failure: Failure?
        /// Set when the case did not run, with the reason.
        public var skipped: String?
        /// Text for `<system-out>`, e.g. the measured value of a passing expectation.
        public var output: String?

        /// Creates a test case.
        public init(name: String, className: String, failure: Failure? = nil, skipped: String? = nil, output: String? = nil) {
            self.name = name
            self.className = className
            self.failure = failure
            self.skipped = skipped
            self.output = output
        }
    }

    /// One `<testsuite>`: one capture set.
    public struct TestSuite: Sendable, Hashable {
        /// The capture set's name.
        public var name: String
        /// Its cases.
        public var cases: [TestCase]

        /// Creates a suite.
        public init(name: String, cases: [TestCase]) {
            self.name = name
            self.cases = cases
        }

        /// Cases that failed.
        public var failures: Int { cases.filter { $0.failure != nil }.count }
        /// Cases that were skipped.
        public var skipped: Int { cases.filter { $0.failure == nil && $0.skipped != nil }.count }
    }

    /// The `name` of `<testsuites>`.
    public var name: String
    /// The suites, in order.
    public var suites: [TestSuite]

    /// Creates a report from suites.
    public init(name: String = "tether replay", suites: [TestSuite]) {
        self.name = name
        self.suites = suites
    }

    /// Builds the report for replay outcomes: each expectation becomes a case named after it
    /// (failing with its message), each baseline comparison a case `baseline <name>` (failing with
    /// the diff, at most `maxDiffLines` lines), and a set without a baseline gets a skipped
    /// `baseline` case so the missing check stays visible.
    /// Each of `errors` (a set or scenario that could not be replayed, or whose baseline could
    /// not be read) is a suite of its own after them, with one failing `replay` case.
    public init(outcomes: [CaptureSetOutcome], errors: [ReplayReport.RunError] = [], name: String = "tether replay", maxDiffLines: Int = 40) {
        self.name = name
        let replayed: [TestSuite] = outcomes.map { outcome in
            let className = "replay." + outcome.name
            var cases: [TestCase] = outcome.expectations.map { result in
                TestCase(
                    name: result.expectation.displayName,
                    className: className,
                    failure: result.passed ? nil : Failure(message: result.message, type: "expectation"),
                    output: result.passed ? result.message : nil
                )
            }
            if outcome.baselines.isEmpty {
                cases.append(TestCase(name: "baseline", className: className,
                                      skipped: "no baseline trace in this capture set"))
            }
            for comparison in outcome.baselines {
                let summary = "baseline \(comparison.name): \(comparison.diff.countsLine)"
                cases.append(TestCase(
                    name: "baseline \(comparison.name)",
                    className: className,
                    failure: comparison.passed ? nil
                        : Failure(message: summary, type: "baseline", details: comparison.diff.render(maxLines: maxDiffLines)),
                    output: comparison.passed ? summary : nil
                ))
            }
            return TestSuite(name: outcome.name, cases: cases)
        }
        suites = replayed + errors.map { error in
            TestSuite(name: error.name, cases: [
                TestCase(name: "replay", className: "replay." + error.name, failure: Failure(message: error.message, type: "error")),
            ])
        }
    }

    /// The XML document, UTF-8, ending with a newline.
    public func xml() -> String {
        let tests = suites.reduce(0) { $0 + $1.cases.count }
        let failures = suites.reduce(0) { $0 + $1.failures }
        let skipped = suites.reduce(0) { $0 + $1.skipped }
        var out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        out += "<testsuites name=\"\(Self.escape(name))\" tests=\"\(tests)\" failures=\"\(failures)\" errors=\"0\" skipped=\"\(skipped)\">\n"
        for suite in suites {
            out += "  <testsuite name=\"\(Self.escape(suite.name))\" tests=\"\(suite.cases.count)\" "
                + "failures=\(Self.quoted(suite.failures)) errors=\"0\" skipped=\(Self.quoted(suite.skipped))>\n"
            for testCase in suite.cases {
                out += "    <testcase name=\"\(Self.escape(testCase.name))\" classname=\"\(Self.escape(testCase.className))\""
                if testCase.failure == nil && testCase.skipped == nil && testCase.output == nil {
                    out += "/>\n"
                    continue
                }
                out += ">\n"
                if let failure = testCase.failure {
                    out += "      <failure message=\"\(Self.escape(failure.message))\" type=\"\(Self.escape(failure.type))\""
                    out += failure.details.isEmpty ? "/>\n" : ">\(Self.escape(failure.details))</failure>\n"
                } else if let reason = testCase.skipped {
                    out += "      <skipped message=\"\(Self.escape(reason))\"/>\n"
                }
                if let output = testCase.output {
                    out += "      <system-out>\(Self.escape(output))</system-out>\n"
                }
                out += "    </testcase>\n"
            }
            out += "  </testsuite>\n"
        }
        out += "</testsuites>\n"
        return out
    }

    /// Writes `xml()` to `path`, replacing any file there atomically.
    /// - Throws: `TraceFileError` naming the path when the file cannot be written.
    public func write(to path: String) throws(TraceFileError) {
        do throws(CaptureSetError) {
            try FileIO.writeOutput(Array(xml().utf8), to: path)
        } catch {
            throw TraceFileError(path: path, operation: "write JUnit report", reason: error.ioReason ?? "\(error)")
        }
    }

    private static func quoted(_ n: Int) -> String { "\"\(n)\"" }

    /// Escapes text for XML 1.0 content and attribute values. Characters XML 1.0 cannot carry at
    /// all, even as references (most C0 controls, U+FFFE, U+FFFF), become U+FFFD; tab, newline and
    /// carriage return in attributes become character references so parsers keep them.
    public static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            case "\t": out += "&#9;"
            case "\n": out += "&#10;"
            case "\r": out += "&#13;"
            default:
                if scalar.value < 0x20 || scalar.value == 0xFFFE || scalar.value == 0xFFFF {
                    out += "\u{FFFD}"
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
