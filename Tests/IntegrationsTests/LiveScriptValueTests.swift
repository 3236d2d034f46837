import BehaviourTrace
import Foundation
@testable import LiveHosts
import MonkeyC
import MonkeyCTrace
import Testing

/// Values a script gives that Monkey C cannot hold are errors naming the step and the value, not
/// silent conversions; a call the core refuses is a failed step.
@Suite struct LiveScriptValueTests {
    static let calls: Set<String> = ["send"]

    func script(_ message: String) throws(LiveScriptError) -> LiveScript {
        try LiveScript(yaml: "steps:\n  - wait: 1s\n  - send: {app: A, message: \(message)}\n", file: "s.yaml", callNames: Self.calls)
    }

    @Test(arguments: [
        "100000000000000000000000",
        "-100000000000000000000000",
        "9223372036854775808",
        "-9223372036854775809",
        "0x10000000000000000",
        "1_000_000_000_000_000_000_000",
        "[1, 100000000000000000000000]",
        "{n: 100000000000000000000000}",
    ])
    func anIntegerBeyondALongIsRefusedNamingTheStepAndValue(_ message: String) throws {
        do {
            _ = try script(message)
            Issue.record("\(message) was accepted")
        } catch {
            #expect(error.step == 2)
            #expect(error.message.hasPrefix("send.message: "), "\(error)")
            #expect(error.message.contains("is an integer outside Monkey C's range"), "\(error)")
        }
    }

    @Test func aWaitWrittenAsANumberIsThatManySecondsHoweverYAMLSpellsIt() throws {
        let script = try LiveScript(yaml: "steps:\n  - wait: 0.00001\n  - wait: 2\n  - wait: 1.5s\n  - wait_for: {event: completion, timeout: 0.25}\n",
                                    file: "s.yaml", callNames: Self.calls)
        #expect(script.steps == [.wait(.microseconds(10)), .wait(.seconds(2)), .wait(.milliseconds(1500)),
                                              .waitFor(event: "completion", timeout: .milliseconds(250))])
        #expect(throws: LiveScriptError.self) { try LiveScript(yaml: "steps:\n  - wait: true\n", file: "s.yaml", callNames: Self.calls) }
    }

    @Test func theErrorSaysWhichNumberAndWhatFits() throws {
        #expect(throws: LiveScriptError(file: "s.yaml", step: 2, message: "send.message: 100000000000000000000000 is an integer outside Monkey C's range "
            + "(a Long holds -9223372036854775808 to 9223372036854775807); write one in that range, or a float such as 1.0e+23 to send a Double")) {
            _ = try script("100000000000000000000000")
        }
    }

    @Test(arguments: [
        ("9223372036854775807", TraceValue.int(9_223_372_036_854_775_807)),
        ("-9223372036854775808", TraceValue.int(-9_223_372_036_854_775_808)),
        ("\"100000000000000000000000x\"", TraceValue.string("100000000000000000000000x")),
        ("\"42\"", TraceValue.string("42")),
        ("\"100000000000000000000000\"", TraceValue.string("100000000000000000000000")),
        ("'9223372036854775808'", TraceValue.string("9223372036854775808")),
        (".inf", TraceValue.double(.infinity)),
        ("1.0e+23", TraceValue.double(1e23)),
    ])
    func valuesThatFitAreKeptAsWritten(_ message: String, _ expected: TraceValue) throws {
        guard case .call(_, let arguments) = try script(message).steps[1] else {
            Issue.record("step 2 is not a call")
            return
        }
        #expect(arguments["message"] == expected)
    }

    @Test(arguments: [1e300, -1e300, 3.5e38, 1e-50, -1e-46])
    func aFloat32OutOfRangeIsRefusedNamingTheValue(_ number: Double) throws {
        do {
            _ = try MonkeyCJSON.monkeyCValue(.object(["$float32": .double(number)]))
            Issue.record("\(number) became a float32")
        } catch {
            #expect(error.description.contains("{\"$float32\": \(number)}"), "\(error)")
            #expect(error.description.contains("write a plain number to send it as a Double"))
        }
    }

    @Test func aFloat32InsideANestedMessageIsCheckedToo() throws {
        #expect(throws: MonkeyCJSONError.self) {
            _ = try MonkeyCJSON.monkeyCValue(.array([.int(1), .object(["x": .object(["$float32": .double(1e39)])])]))
        }
    }

    @Test(arguments: [0.0, 1.5, -3.4028234e38, 1.17549435e-38, Double.infinity, -Double.infinity])
    func aFloat32ThatFitsIsKept(_ number: Double) throws {
        #expect(try MonkeyCJSON.monkeyCValue(.object(["$float32": .double(number)])) == .float32(Float(number)))
    }

    @Test func aCallTheCoreRefusesIsAFailedStep() throws {
        let log = LiveTraceLog(core: "messaging", log: { _ in })
        let refused = TraceEvent(timeNs: 0, core: "messaging", event: "api_error", fields: [
            "call": .string("send"), "error": .string("app not-a-uuid or device 7e7e7e7e-0000-4000-8000-f0f0f0f0f0f0 is not a UUID"),
        ])
        log.failIfRefused(step: 3, call: "send", events: [refused])
        #expect(log.failedSteps == ["step 3: send: the core refused the call: app not-a-uuid or device 7e7e7e7e-0000-4000-8000-f0f0f0f0f0f0 is not a UUID"])
        #expect(log.events.last?.event.event == "step_failed")
    }

    @Test func aCallTheCoreAcceptsIsNotAFailedStep() throws {
        let log = LiveTraceLog(core: "messaging", log: { _ in })
        log.failIfRefused(step: 1, call: "send", events: [TraceEvent(timeNs: 0, core: "messaging", event: "api_call", fields: ["call": .string("send")])])
        #expect(log.failedSteps.isEmpty)
    }
}

/// What the script fuzzer found: shapes of YAML that Yams' own conversion traps on are refused
/// with a sentence.
@Suite struct LiveScriptShapeTests {
    @Test(arguments: [
        "steps:\n  - update_context: {context, {mode: dark}}\n",
        "steps:\n  - ? [a, b]\n    : 1\n",
        "? {steps: 1}\n: x\n",
    ])
    func aListOrMappingWhereAKeyShouldBeIsRefusedNamingItsLine(text: String) {
        do {
            _ = try LiveScript(yaml: text, file: "s.yaml", callNames: ["update_context"])
            Issue.record("a non-scalar key was accepted")
        } catch {
            #expect(error.file == "s.yaml")
            #expect(error.message.contains("where a key should be"), "\(error.message)")
        }
    }

    @Test func theFuzzersBaseSixtyInputIsRefusedNotTrapped() {
        // Yams' base-60 reading of `2:33:12:…` overflows: found by the script fuzzer.
        do {
            _ = try LiveScript(yaml: "2:33:12:3:3:11:3:12:3:3:11", file: "s.yaml", callNames: [])
            Issue.record("accepted")
        } catch {
            #expect(error.message.contains("base-60"), "\(error.message)")
        }
    }

    @Test func theFuzzersCrashInputIsRefused() {
        let text = "# Tiner's state).\nsteps:\n  - updut: 15s}\n  - update_context: {context, {mod# A : dark}}\n  - set_has_c#\n"
        #expect(throws: LiveScriptError.self) { try LiveScript(yaml: text, file: "s.yaml", callNames: ["update_context", "set_has_content"]) }
    }
}

@Suite struct LiveScriptFloatRangeTests {
    @Test(arguments: ["1e400", "-1e400", "[1.5, 2e999]"])
    func aPlainFloatBeyondADoubleIsRefusedNotSentAsInfinity(_ message: String) throws {
        do {
            _ = try LiveScript(yaml: "steps:\n  - wait: 1s\n  - send: {app: A, message: \(message)}\n", file: "s.yaml", callNames: ["send"])
            Issue.record("\(message) was accepted")
        } catch {
            #expect(error.step == 2)
            #expect(error.message.contains("beyond a Double's range"), "\(error)")
        }
    }
}
