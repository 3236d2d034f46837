import CaptureSet
import Foundation
import ReplayKit
import Testing

/// A committed set copied to a temporary folder with its manifest edited, as a user (or an
/// adversary) would edit it by hand.
struct EditedSet {
    let path: String

    /// `Captures/<name>` copied, then `edit` applied to its manifest text.
    init(_ name: String, edit: (String) -> String) throws {
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Captures").appendingPathComponent(name)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-schema-\(UUID().uuidString)")
        try FileManager.default.copyItem(at: source, to: folder)
        let manifest = folder.appendingPathComponent("manifest.yaml")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        let edited = edit(text)
        precondition(edited != text, "the edit changed nothing")
        try edited.write(to: manifest, atomically: true, encoding: .utf8)
        path = folder.path
    }

    /// The error replaying the set gives; fails the test when it replays.
    func replayError() throws -> ReplayError {
        do {
            _ = try replaySet(at: path)
        } catch {
            return error
        }
        Issue.record("the set replayed, but it should have been refused")
        throw CancellationError()
    }

    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

/// The line of `needle` in `text`, 1-based.
func line(of needle: String, in text: String) -> Int? {
    text.split(separator: "\n", omittingEmptySubsequences: false).firstIndex { $0.contains(needle) }.map { $0 + 1 }
}

@Suite struct ManifestSchemaTests {
    @Test(arguments: [
        ("window_size", "0"), ("window_size", "-1"), ("window_size", "16"), ("step_timeout_ms", "0"),
        ("first_retries", "1e9"), ("command_timeout_ms", "-5"), ("window_size", "four"),
    ])
    func aMessagingSettingOutOfItsRangeIsRefusedNamingTheLineFieldValueAndRange(key: String, value: String) throws {
        let set = try EditedSet("ciq-clean") { $0.replacingOccurrences(of: "  api_calls: []\n", with: "  api_calls: []\n  settings:\n    \(key): \(value)\n") }
        defer { set.remove() }
        let error = try set.replayError()
        guard case .manifest(let path, let line, let field, let problem, _) = error else {
            Issue.record("expected a manifest error, got \(error)")
            return
        }
        #expect(path.hasSuffix("manifest.yaml"))
        #expect(field == "messaging.settings.\(key)")
        #expect(problem.contains("\"\(value)\""))
        #expect(problem.contains(" from "))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(line == ManifestSchemaTests.lineNumber(of: "    \(key): \(value)", in: text))
    }

    @Test(arguments: ["1e13", ".inf", ".nan", "-1e300", "-1", "soon"])
    func aHandWrittenCallAtAnImpossibleTimeIsRefusedNotTrapped(tMs: String) throws {
        let set = try EditedSet("ciq-imported-btsnoop") { $0.replacingOccurrences(of: "  - t_ms: 8.215e+0\n", with: "  - t_ms: \(tMs)\n") }
        defer { set.remove() }
        let error = try set.replayError()
        guard case .manifest(_, _, let field, let problem, _) = error else {
            Issue.record("expected a manifest error, got \(error)")
            return
        }
        #expect(field == "messaging.api_calls[0].t_ms")
        #expect(problem.contains("from 0 to"))
    }

    @Test(arguments: [
        ("  role: phone\n", "  role: toaster\n", "session.role"),
        ("  identity: 0ff1ce00-0000-4000-8000-000000000001\n", "  identity: not-a-uuid\n", "session.identity"),
        ("  role: phone\n", "  role: phone\n  settings:\n    complication_budget_window_s: -1\n", "session.settings.complication_budget_window_s"),
        ("  role: phone\n", "  role: phone\n  settings:\n    handshake_timeout_ms: 0\n", "session.settings.handshake_timeout_ms"),
        ("  role: phone\n", "  role: phone\n  settings:\n    retransmission_timeout_ms: -2000\n", "session.settings.retransmission_timeout_ms"),
        ("  role: phone\n", "  role: phone\n  seed: -7\n", "session.seed"),
        ("  role: phone\n", "  role: phone\n  settings: 5\n", "session.settings"),
    ])
    func aBadSessionValueIsRefusedBeforeReplayNamingItsField(original: String, replacement: String, field: String) throws {
        let set = try EditedSet("session-clean") { $0.replacingOccurrences(of: original, with: replacement) }
        defer { set.remove() }
        let error = try set.replayError()
        guard case .manifest(_, let line, let named, _, _) = error else {
            Issue.record("expected a manifest error, got \(error)")
            return
        }
        #expect(named == field)
        #expect(line != nil)
    }

    @Test func anUnknownKeyIsKeptAndReportedOnceAsAWarning() throws {
        let set = try EditedSet("session-clean") { $0.replacingOccurrences(of: "  role: phone\n", with: "  role: phone\n  future_option: 3\n") }
        defer { set.remove() }
        let outcome = try replaySet(at: set.path)
        let warnings = outcome.summary.warnings.filter { $0.contains("session.future_option") }
        #expect(warnings.count == 1)
        #expect(warnings.first?.contains("kept and ignored") == true)
    }

    @Test func anAbsentExpectationNamingAnEventNoCoreEmitsIsRefused() throws {
        let set = try EditedSet("session-clean") {
            $0.replacingOccurrences(of: "\nexpectations:\n", with: "\nexpectations:\n- type: absent\n  core: session\n  event: messsage_failed\n")
        }
        defer { set.remove() }
        let error = try set.replayError()
        guard case .manifest(_, _, let field, let problem, _) = error else {
            Issue.record("expected a manifest error, got \(error)")
            return
        }
        #expect(field == "expectations[0].event")
        #expect(problem.contains("did you mean \"message_failed\""))
    }

    @Test func anExpectationWithoutACoreNamingAnEventNoCoreEmitsIsRefused() throws {
        let set = try EditedSet("session-clean") {
            $0.replacingOccurrences(of: "\nexpectations:\n", with: "\nexpectations:\n- type: count\n  event: no_such_event\n  equals: 0\n")
        }
        defer { set.remove() }
        guard case .manifest(_, _, let field, _, _) = try set.replayError() else {
            Issue.record("expected a manifest error")
            return
        }
        #expect(field == "expectations[0].event")
    }

    @Test func anExpectationNamingACoreTheSetDoesNotRunIsRefused() throws {
        let set = try EditedSet("session-clean") {
            $0.replacingOccurrences(of: "\nexpectations:\n", with: "\nexpectations:\n- type: absent\n  core: messaging\n  event: timeout\n")
        }
        defer { set.remove() }
        guard case .manifest(_, _, let field, let problem, _) = try set.replayError() else {
            Issue.record("expected a manifest error")
            return
        }
        #expect(field == "expectations[0].core")
        #expect(problem.contains("session"))
    }

    @Test(arguments: ["min: -5", "equals: -1", "max: -3", "min: 5\n  max: 2"])
    func aCountThatNoNumberOfEventsCanMeetIsRefused(bounds: String) throws {
        let set = try EditedSet("session-clean") {
            $0.replacingOccurrences(of: "\nexpectations:\n", with: "\nexpectations:\n- type: count\n  core: session\n  event: timeout\n  \(bounds)\n")
        }
        defer { set.remove() }
        let error = try set.replayError()
        guard case .captureSet(.invalidManifest) = error else {
            Issue.record("expected an invalid manifest, got \(error)")
            return
        }
    }

    static func lineNumber(of needle: String, in text: String) -> Int? { line(of: needle, in: text) }
}
