import Testing
@testable import Redaction

/// The placeholder table: deterministic, same length, derived from a counter.
@Suite struct RedactionMapTests {
    @Test func sameAddressGetsTheSamePlaceholder() {
        var map = RedactionMap()
        let first = map.address(wire: [1, 2, 3, 4, 5, 0xC6])
        let again = map.address(wire: [1, 2, 3, 4, 5, 0xC6])
        let other = map.address(wire: [9, 2, 3, 4, 5, 0xC6])
        #expect(first == again)
        #expect(first != other)
        #expect(map.entries.count == 2)
    }

    @Test func addressPlaceholderKeepsTheAddressTypeBits() {
        var map = RedactionMap()
        #expect(map.address(wire: [1, 2, 3, 4, 5, 0xF0])[5] & 0xC0 == 0xC0)
        #expect(map.address(wire: [1, 2, 3, 4, 5, 0x40])[5] & 0xC0 == 0x40)
        #expect(map.address(wire: [1, 2, 3, 4, 5, 0x10])[5] & 0xC0 == 0x00)
    }

    @Test func placeholderDependsOnTheOrderNotOnTheValue() {
        var a = RedactionMap(), b = RedactionMap()
        #expect(a.address(wire: [1, 1, 1, 1, 1, 0xC1]) == b.address(wire: [7, 7, 7, 7, 7, 0xC7]))
        #expect(a.string(.name, Array("watch-1".utf8)) == b.string(.name, Array("phone-2".utf8)))
        #expect(a.key(Array(repeating: 0x11, count: 16)) == b.key(Array(repeating: 0x22, count: 16)))
    }

    @Test func stringPlaceholdersHaveTheOriginalLength() {
        var map = RedactionMap()
        for length in 1...40 {
            let original = Array(String(repeating: "q", count: length).utf8)
            #expect(map.string(.clientID, original).count == length)
        }
    }

    @Test func allZeroAndAllOnesAddressesAreLeftAlone() {
        var map = RedactionMap()
        #expect(map.address(wire: [0, 0, 0, 0, 0, 0]) == [0, 0, 0, 0, 0, 0])
        #expect(map.address(wire: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]) == [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF])
        #expect(map.entries.isEmpty)
    }

    @Test func clientIDMadeFromAnAccountFollowsTheAccount() {
        var map = RedactionMap()
        let account = map.string(.account, Array("demo".utf8))
        let client = map.string(.clientID, Array("widget-demo".utf8))
        #expect(client == Array("widget-".utf8) + account)
    }

    @Test func addressIsReplacedInEverySpellingOfText() {
        var map = RedactionMap()
        let placeholder = map.address(wire: [0xA6, 0xA5, 0xA4, 0xA3, 0xA2, 0xC1])
        let shown = Hex.spell(placeholder.reversed(), upper: true, separator: ":")
        var text = Array(#"{"peer":"C1:A2:A3:A4:A5:A6","low":"c1:a2:a3:a4:a5:a6","bare":"c1a2a3a4a5a6","reversed":"A6:A5:A4:A3:A2:C1"}"#.utf8)
        let n = ByteSubstitution.apply(map.substitutions(of: [.address]), to: &text)
        #expect(n == 4)
        let result = String(decoding: text, as: UTF8.self)
        #expect(result.contains(shown))
        #expect(!result.lowercased().contains("a2a3") && !result.lowercased().contains("a2:a3") && !result.lowercased().contains("a3:a2"))
    }

    @Test func wordBoundaryKeepsLongerWords() {
        var map = RedactionMap()
        map.string(.account, Array("demo".utf8))
        var text = Array("tether/demo/api demonstration".utf8)
        ByteSubstitution.apply(map.substitutions(of: [.account]), to: &text)
        let result = String(decoding: text, as: UTF8.self)
        #expect(!result.contains("/demo/"))
        #expect(result.hasSuffix(" demonstration"))
    }
}

/// Strings spelled in hex (API-call file contents, trace bytes) are replaced as words too.
@Suite struct HexSpelledStringTests {
    @Test func hexSpelledValueInsideALongerWordIsKept() {
        var map = RedactionMap()
        let placeholder = map.string(.account, Array("demo".utf8))
        // "iotdemo://x" and "/demo/" in hex.
        var text = Array((Hex.spell(Array("iotdemo://x".utf8), upper: false, separator: "") + " " + Hex.spell(Array("/demo/".utf8), upper: false, separator: "")).utf8)
        ByteSubstitution.apply(map.substitutions(of: [.account]), to: &text)
        let expected = Hex.spell(Array("iotdemo://x".utf8), upper: false, separator: "") + " " + Hex.spell(Array("/".utf8) + placeholder + Array("/".utf8), upper: false, separator: "")
        #expect(String(decoding: text, as: UTF8.self) == expected)
    }
}

/// A table with many values: every placeholder distinct, and no endless search when a space runs out.
@Suite struct LargeRedactionMapTests {
    @Test func thousandsOfIPv4AddressesGetDistinctPlaceholders() {
        var map = RedactionMap()
        var seen: Set<[UInt8]> = []
        for n in 0..<5000 { seen.insert(map.ip([10, UInt8(n >> 8), UInt8(n & 0xFF), 7])) }
        #expect(seen.count == 5000)
    }

    @Test func manyOneLetterNamesEndWithoutAnEndlessSearch() {
        var map = RedactionMap()
        for byte in UInt8(0x21)...UInt8(0x7E) { #expect(map.string(.name, [byte]).count == 1) }
    }
}
