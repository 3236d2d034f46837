import Testing
@testable import CaptureSet

/// The text edit behind `seal`, `annotate` and `--update-baseline`: unchanged keys keep their
/// text, grown lists get new items, and an edit that would not read back as meant is not made.
@Suite struct ManifestTextEditTests {
    @Test func anUnchangedKeyKeepsItsTextEvenWhenTheEncoderWritesItOtherwise() throws {
        let original = "# top\nt: 8.215e+0   # a float, by hand\nstatus: recording\n"
        let encoded = "t: 8.215\nstatus: complete\n"
        let edited = try #require(ManifestTextEdit.edit(original, toSay: encoded))
        #expect(edited == "# top\nt: 8.215e+0   # a float, by hand\nstatus: complete\n")
    }

    @Test func aGrownListGetsItsNewItemsIndentedAsItsOwn() throws {
        let original = "list:\n  - a: 1   # first\n  - a: 2\nafter: x\n"
        let encoded = "list:\n- a: 1\n- a: 2\n- a: 3\n  b: 4\nafter: x\n"
        let edited = try #require(ManifestTextEdit.edit(original, toSay: encoded))
        #expect(edited == "list:\n  - a: 1   # first\n  - a: 2\n  - a: 3\n    b: 4\nafter: x\n")
    }

    @Test func aNewKeyGoesAfterTheKeyItFollowsAndARemovedKeyGoesWithItsComment() throws {
        let original = "a: 1\n# about b\nb: 2\nc: 3\n"
        let encoded = "a: 1\nnew: 9\nc: 3\n"
        let edited = try #require(ManifestTextEdit.edit(original, toSay: encoded))
        #expect(edited == "a: 1\nnew: 9\nc: 3\n")
    }

    @Test func aQuotedStringIsNotTheNumberItSpells() throws {
        #expect(!ManifestTextEdit.semanticallyEqual(.scalar("1", .string), .scalar("1", .number)))
        let original = "v: '1'\n"
        let edited = try #require(ManifestTextEdit.edit(original, toSay: "v: 1\n"))
        #expect(edited == "v: 1\n")
    }

    @Test func aFlowMappingAtTheTopIsLeftToTheEncoder() {
        #expect(ManifestTextEdit.edit("{a: 1, b: 2}\n", toSay: "a: 1\nb: 3\n") == nil)
    }
}
