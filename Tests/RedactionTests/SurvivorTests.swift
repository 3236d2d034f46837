import CaptureKit
import Foundation
import Testing
import TetherTestSupport
@testable import Redaction

/// The last search: a value no layer reaches makes redact refuse, naming file, offset and kind
/// (never the value); `allowSurvivors` writes the set and lists them.
@Suite struct SurvivorTests {
    static let peer: [UInt8] = [0x66, 0x55, 0x44, 0x33, 0x22, 0xD1]
    /// The peer's address as an application might put it in its own payload: text, in an ATT
    /// Handle Value Notification, where no layer looks for text.
    static let spelled = Array("D1:22:33:44:55:66".utf8)

    /// A set whose LE Connection Complete names the peer, and whose ATT notification spells it.
    static func set(in folder: TemporaryFolder) throws -> String {
        var generated = GeneratedCapture()
        generated.leEvent(0x01, [0x00, 0x40, 0x00, 0x00, 0x01] + peer + [0x18, 0, 0, 0, 0xC8, 0, 0])
        let att: [UInt8] = [0x1B, 0x2A, 0x00] + spelled
        generated.frames.append([0, 0, 0, 1, 0x02, 0x40, 0x20, UInt8(att.count + 4), 0, UInt8(att.count), 0, 0x04, 0x00] + att)
        let path = folder.path("set").path
        try generated.writeSet(to: path)
        return path
    }

    @Test func valueNoLayerReachesMakesRedactRefuseNamingFileOffsetAndKind() throws {
        let folder = try TemporaryFolder("redact-survivor")
        let set = try Self.set(in: folder)
        let out = folder.path("out").path
        do {
            _ = try SetRedactor.redact(set: set, to: out)
            Issue.record("redact wrote a set with the peer's address spelled in a notification")
        } catch {
            guard case .survivors(let output, let survivors) = error else { throw error }
            #expect(output == out)
            #expect(survivors.count == 1, "\(survivors)")
            let survivor = try #require(survivors.first)
            #expect(survivor.file == "capture.pcapng")
            #expect(survivor.frame == 2)
            #expect(survivor.kind == .address && survivor.ordinal == 1)
            #expect(survivor.context.contains("hex"))
            #expect(error.description.contains("capture.pcapng at byte \(survivor.offset) (frame 2): address 1"))
            #expect(error.description.contains("--allow-survivors"))
            #expect(!error.description.contains("D1:22:33:44:55:66"))
        }
    }

    @Test func refusedRedactionLeavesNoFolderBehind() throws {
        let folder = try TemporaryFolder("redact-survivor-clean")
        let set = try Self.set(in: folder)
        let out = folder.path("out").path
        #expect(throws: RedactionError.self) { try SetRedactor.redact(set: set, to: out) }
        #expect(!FileManager.default.fileExists(atPath: out))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["set"])
    }

    @Test func refusedRedactionLeavesAnEmptyOutputFolderEmpty() throws {
        let folder = try TemporaryFolder("redact-survivor-empty")
        let set = try Self.set(in: folder)
        let out = folder.path("out").path
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        #expect(throws: RedactionError.self) { try SetRedactor.redact(set: set, to: out) }
        #expect(try FileManager.default.contentsOfDirectory(atPath: out).isEmpty)
    }

    @Test func allowSurvivorsWritesTheSetAndListsEachSurvivorWhereItStands() throws {
        let folder = try TemporaryFolder("redact-survivor-allowed")
        let set = try Self.set(in: folder)
        let out = folder.path("out").path
        let report = try SetRedactor.redact(set: set, to: out, options: RedactionOptions(allowSurvivors: true))
        #expect(report.survivors.count == 1)
        let survivor = try #require(report.survivors.first)
        let capture = [UInt8](try Data(contentsOf: URL(fileURLWithPath: out + "/capture.pcapng")))
        #expect(Array(capture[survivor.offset..<(survivor.offset + Self.spelled.count)]) == Self.spelled)
        #expect(report.lines.contains { $0.contains("--allow-survivors") })
        #expect(report.lines.contains("  " + survivor.description))
        // The structured field still got its placeholder.
        #expect(ByteSubstitution.containsAny([Self.peer], in: capture) == nil)
    }

    @Test func redactingIntoAnEmptyFolderFillsIt() throws {
        let folder = try TemporaryFolder("redact-into-empty")
        let out = folder.path("out").path
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: false)
        _ = try SetRedactor.redact(set: CommittedSetsTests.captures.appendingPathComponent("gatt-sensor").path, to: out)
        #expect(FileManager.default.fileExists(atPath: out + "/manifest.yaml"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == ["out"])
    }
}

/// What the JSON and YAML readers of the text layer take for keys and values.
@Suite struct StructuredTextTests {
    @Test func jsonKeysAreNeverReplacedAndValuesOnlyUnderTheKeysThatHoldThem() {
        var map = RedactionMap()
        let placeholder = map.string(.name, Array("status".utf8))
        var text = Array(#"{"status":"status","name":"status","nested":{"name":"status"},"list":[{"name":"status"}]}"#.utf8) + [0x0A]
        _ = TextRedaction.rewrite(&text, table: TextRedaction.Table(map), as: .json)
        let p = String(decoding: placeholder, as: UTF8.self)
        #expect(String(decoding: text, as: UTF8.self) == #"{"status":"status","name":"\#(p)","nested":{"name":"\#(p)"},"list":[{"name":"\#(p)"}]}"# + "\n")
    }

    @Test func yamlKeysAreNeverReplacedAndAnExpectationValueFollowsItsField() {
        var map = RedactionMap()
        let placeholder = String(decoding: map.string(.name, Array("Success".utf8)), as: UTF8.self)
        var text = Array("""
            devices:
            - name: Success
            Success: 1
            expectations:
            - type: equals
              name: Success is reported
              field: result
              value: Success
            - type: equals
              field: name
              value: Success
              where:
                result: Success
            # Success, a comment

            """.utf8)
        _ = TextRedaction.rewrite(&text, table: TextRedaction.Table(map), as: .yaml)
        #expect(String(decoding: text, as: UTF8.self) == """
            devices:
            - name: \(placeholder)
            Success: 1
            expectations:
            - type: equals
              name: \(placeholder) is reported
              field: result
              value: Success
            - type: equals
              field: name
              value: \(placeholder)
              where:
                result: Success
            # \(placeholder), a comment

            """)
    }

    @Test func yamlPlaceholderThatReadsAsABooleanIsQuoted() {
        var map = RedactionMap()
        // One-letter names get one-letter placeholders, one of which is `y`.
        for letter in UInt8(ascii: "A")...UInt8(ascii: "Z") { map.string(.name, [letter]) }
        guard let original = map.entries.first(where: { $0.placeholder == Array("y".utf8) })?.original else {
            Issue.record("no name got the placeholder y: \(map.entries.map(\.placeholder))")
            return
        }
        var text = Array("devices:\n- name: \(String(decoding: original, as: UTF8.self))\n".utf8)
        _ = TextRedaction.rewrite(&text, table: TextRedaction.Table(map), as: .yaml)
        #expect(String(decoding: text, as: UTF8.self) == "devices:\n- name: 'y'\n")
    }

    @Test func jsonAndYAMLReadersNeverTrapOnAnyInput() {
        var random = SplitMix64(state: 3636)
        let alphabet = Array("{}[]\":,\\ \n-#'|>abc\u{2028}".utf8)
        for _ in 0..<5_000 {
            let bytes = (0..<Int(random.next() % 120)).map { _ in random.next() % 3 == 0 ? UInt8(truncatingIfNeeded: random.next()) : alphabet[Int(random.next() % UInt64(alphabet.count))] }
            for token in JSONText.strings(in: bytes) { #expect(token.range.upperBound <= bytes.count) }
            let document = YAMLText.scan(bytes)
            for scalar in document.scalars { #expect(scalar.range.lowerBound <= scalar.range.upperBound && scalar.range.upperBound <= bytes.count) }
            for key in document.keys { #expect(key.upperBound <= bytes.count) }
        }
    }
}
