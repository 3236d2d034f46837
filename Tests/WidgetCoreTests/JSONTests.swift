import Testing
import TetherTestSupport
@testable import WidgetCore

@Suite struct JSONTests {
    @Test(arguments: [
        (#"{"b":[1,2.5,-0.0,1e-05],"a":"x\ny","c":null,"d":true}"#, #"{"a":"x\ny","b":[1,2.5,-0.0,1e-05],"c":null,"d":true}"#),
        (" [ ] ", "[]"),
        (#"{"é":"\u00e9\ud83d\ude00\/"}"#, #"{"é":"é😀/"}"#),
        ("1.0", "1.0"),
        ("9223372036854775807", "9223372036854775807"),
        ("9223372036854775808", "9.223372036854776e+18"),
        (#""\u0001""#, #""\u0001""#),
    ])
    func parsesAndWritesCanonically(_ input: String, _ canonical: String) throws {
        let value = try WidgetJSON.parse(Array(input.utf8))
        #expect(value.text == canonical)
        #expect(try WidgetJSON.parse(value.encoded()) == value)
    }

    @Test func integersAndDoublesStayApart() throws {
        #expect(try WidgetJSON.parse(Array("3".utf8)) == .int(3))
        #expect(try WidgetJSON.parse(Array("3.0".utf8)) == .double(3))
        #expect(WidgetJSON.double(.nan).text == #""NaN""#)
    }

    @Test(arguments: [
        "", "{", #"{"a":1,"a":2}"#, "[1,]", "01", "1.", "-", "tru", #""\x""#, #""\ud800""#, #""\udc00""#, "1 2", "\"\u{01}\"", "1e999",
        #"{"a" 1}"#, "[1 2]", "nul",
    ])
    func refusesWhatIsNotOneJSONText(_ input: String) {
        #expect(throws: WidgetJSONError.self) { try WidgetJSON.parse(Array(input.utf8)) }
    }

    @Test(arguments: [[0xC3, 0x28], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xF8], [0xE2, 0x82]] as [[UInt8]])
    func refusesInvalidUTF8(_ bytes: [UInt8]) {
        #expect(throws: WidgetJSONError.self) { try WidgetJSON.parse([0x22] + bytes + [0x22]) }
    }

    @Test func acceptsEveryKindOfValidUTF8() throws {
        let text = "a\u{7F}é\u{7FF}€\u{FFFF}😀\u{10FFFF}"
        #expect(try WidgetJSON.parse(Array("\"\(text)\"".utf8)) == .string(text))
    }

    @Test func refusesTooDeepNesting() {
        let deep = Array(repeating: UInt8(ascii: "["), count: 129) + Array(repeating: UInt8(ascii: "]"), count: 129)
        #expect(throws: WidgetJSONError.self) { try WidgetJSON.parse(deep) }
        let ok = Array(repeating: UInt8(ascii: "["), count: 128) + Array(repeating: UInt8(ascii: "]"), count: 128)
        #expect((try? WidgetJSON.parse(ok)) != nil)
    }

    @Test func anErrorNamesTheOffsetAndWhatWasExpected() {
        do {
            _ = try WidgetJSON.parse(Array(#"{"a":1 x"#.utf8))
            Issue.record("parsed")
        } catch {
            #expect(error.offset == 7)
            #expect(error.description == "byte 7: expected a ',' or '}' after an object member, found 'x'")
        }
    }

    @Test func randomBytesNeverTrapTheParserOrTheCore() {
        var rng = SplitMix64(seed: 42)
        var core = connectedCore(.widget)
        let alphabet = Array(#"{}[]":,0123456789.-eEtrufalsn\ "#.utf8) + [0xC3, 0xA9, 0x00, 0xFF]
        for round in 0..<5_000 {
            let bytes = (0..<rng.below(40)).map { _ in alphabet[rng.below(alphabet.count)] }
            _ = try? WidgetJSON.parse(bytes)
            let topic = [topics.response(clientID: core.clientID), topics.properties, topics.status][round % 3]
            _ = core.mqttMessageReceived(topic: topic, payload: bytes, now: .zero)
            _ = core.containerChanged(name: ["settings.json", "has-content.json", "open-url-result.x-1.json"][round % 3], bytes: bytes, now: .zero)
        }
        #expect(core.connectionState == .connected)
    }
}
