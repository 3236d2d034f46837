import Testing

@testable import ReplayKit

/// Reading JUnit reports back (`tether junit merge`): Tether's own XML reader over the subset a
/// report uses, with no node-size limit but the file's, errors in words at a line and column, and
/// no DOCTYPE (so no entity expansion of any kind).
@Suite struct JUnitReadingTests {
    static func report(output: String = "ok") -> JUnitReport {
        JUnitReport(name: "tether replay", suites: [
            JUnitReport.TestSuite(name: "ciq-clean", cases: [
                JUnitReport.TestCase(name: "yaw count", className: "ciq-clean", output: output),
                JUnitReport.TestCase(name: "bad <&> \"x\"\ttab\nline", className: "ciq-clean",
                                     failure: JUnitReport.Failure(message: "m & <n>\n2", type: "expectation", details: "d\u{1}etail")),
            ]),
        ])
    }

    @Test func aReportTetherWroteReadsBackToTheSameSuites() throws {
        let written = Self.report()
        let read = try JUnitReading.parse(Array(written.xml().utf8), path: "r.xml")
        #expect(JUnitReport(name: written.name, suites: read.suites).xml() == written.xml())
        #expect(read.warnings.isEmpty)
    }

    @Test func aSystemOutOfTwelveMegabytesIsRead() throws {
        let output = String(repeating: "0123456789abcdef", count: 12 * 1024 * 1024 / 16)
        let read = try JUnitReading.parse(Array(Self.report(output: output).xml().utf8), path: "big.xml")
        #expect(read.suites[0].cases[0].output?.utf8.count == output.utf8.count)
    }

    @Test func anEntityXMLDoesNotDefineIsAnErrorNamingItAndWhere() {
        let xml = "<testsuites>\n  <testsuite name=\"a\">\n    <testcase name=\"b\"><system-out>x &custom; y</system-out></testcase>\n  </testsuite>\n</testsuites>\n"
        do {
            _ = try JUnitReading.parse(Array(xml.utf8), path: "r.xml")
            Issue.record("an undefined entity was accepted")
        } catch {
            #expect(error.line == 3)
            #expect(error.reason.contains("&custom;"), "\(error.reason)")
            #expect(error.description.hasPrefix("r.xml:3:"))
        }
    }

    @Test func aLongUndefinedEntityIsNamedToo() {
        let xml = "<testsuite name=\"s\"><testcase name=\"c\"><system-out>a &abcdefghijklmnopq; b</system-out></testcase></testsuite>"
        do {
            _ = try JUnitReading.parse(Array(xml.utf8), path: "r.xml")
            Issue.record("an undefined entity was accepted")
        } catch {
            #expect(error.reason.contains("&abcdefghijklmnopq; is an entity XML does not define"), "\(error.reason)")
        }
    }

    @Test func aDoctypeIsRefusedSoNoEntityIsEverExpanded() {
        let xml = "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;\">]>\n<testsuites>&lol2;</testsuites>\n"
        do {
            _ = try JUnitReading.parse(Array(xml.utf8), path: "bomb.xml")
            Issue.record("a DOCTYPE was accepted")
        } catch {
            #expect(error.line == 2)
            #expect(error.reason.contains("DOCTYPE"))
        }
    }

    @Test(arguments: [
        ("<testsuites><testsuite name=\"a\"></testsuites>", "closes <testsuite>"),
        ("<testsuites><testsuite name=\"a\">", "cut off"),
        ("", "no <testsuites> or <testsuite>"),
        ("<html/>", "root element is <html>"),
        ("<testsuites a=1/>", "not in quotes"),
        ("<testsuites/>junk", "text after the root element"),
        ("<testsuites>\u{1}</testsuites>", "a character XML does not allow"),
        ("<testsuites>&#0;</testsuites>", "not a character XML allows"),
        ("<testsuites/><testsuites/>", "second root element"),
    ])
    func aDamagedReportIsAnErrorInWords(xml: String, words: String) {
        do {
            _ = try JUnitReading.parse(Array(xml.utf8), path: "r.xml")
            Issue.record("\(xml) was accepted")
        } catch {
            #expect(error.reason.contains(words), "\(error.reason)")
            #expect(!error.reason.contains("libxml2"))
        }
    }

    @Test func bytesThatAreNotUTF8AreRefusedAtTheirOffset() {
        let bytes = Array("<testsuites>".utf8) + [0xFF] + Array("</testsuites>".utf8)
        do {
            _ = try JUnitReading.parse(bytes, path: "r.xml")
            Issue.record("invalid UTF-8 was accepted")
        } catch {
            #expect(error.reason.contains("byte 12"), "\(error.reason)")
        }
    }

    @Test func characterReferencesCRLFAndCDATAReadAsXMLSays() throws {
        let xml = "<testsuite name=\"a&#10;b\">\r\n<testcase name=\"c\"><system-out>1\r\n2<![CDATA[<raw & text>]]>&#x41;</system-out></testcase></testsuite>"
        let read = try JUnitReading.parse(Array(xml.utf8), path: "r.xml")
        #expect(read.suites[0].name == "a\nb")
        #expect(read.suites[0].cases[0].output == "1\n2<raw & text>A")
    }

    @Test func elementsOutsideTheModelAreNamedOnceAndLeftOut() throws {
        let xml = "<testsuites><testsuite name=\"a\"><properties><property name=\"p\" value=\"v\"/></properties><testcase name=\"c\"/><properties/></testsuite></testsuites>"
        let read = try JUnitReading.parse(Array(xml.utf8), path: "r.xml")
        #expect(read.suites[0].cases.map(\.name) == ["c"])
        #expect(read.warnings == ["<properties> inside <testsuite> is not carried into the merged report"])
    }
}

/// The report's headline counts a fault scenario as a scenario, not as another capture set.
@Suite struct ReplayReportHeadlineTests {
    @Test func scenariosAreCountedApartFromSets() {
        let broken = ExpectationResult(expectation: TraceExpectation(.absent(.init(event: "rejected"))), passed: false,
                                       measured: "1", message: "absent(rejected): expected none, measured 1")
        let failing = CaptureSetOutcome(name: "plugin-faulty / drop-one", expectations: [broken], baselines: [])
        let outcomes = [CaptureSetOutcome(name: "plugin-faulty", expectations: [], baselines: []), failing,
                        CaptureSetOutcome(name: "plugin-faulty / delay", expectations: [], baselines: [])]
        let text = ReplayReport.render(outcomes)
        #expect(text.hasSuffix("FAIL: 0 of 1 capture set(s) and 1 of 2 scenario(s) failed (1 of 1 expectation(s), 0 of 0 baseline(s))\n"), "\(text)")
    }

    @Test func aPassingRunWithScenariosSaysHowManyOfEach() {
        let outcomes = [CaptureSetOutcome(name: "s", expectations: [], baselines: []), CaptureSetOutcome(name: "s / a", expectations: [], baselines: [])]
        #expect(ReplayReport.render(outcomes).hasSuffix("PASS: 1 capture set(s) and 1 scenario(s), 0 expectation(s), 0 baseline(s)\n"))
    }
}
