import Foundation
import Testing

@testable import BehaviourTrace

/// ``TraceName``: interned core and event names, one word each, written as their text.
@Suite struct TraceNameTests {
    @Test func namesMadeFromEqualTextAreOneName() {
        let literal: TraceName = "datapoint"
        let made = TraceName(String(["data", "point"].joined()))
        #expect(literal == made)
        #expect(literal.hashValue == made.hashValue)
        #expect(literal != TraceName("chunk"))
    }

    @Test func aNameIsOneWordWithoutReferenceCounting() {
        #expect(MemoryLayout<TraceName>.size == MemoryLayout<Int>.size)
        #expect(MemoryLayout<TraceName?>.size == MemoryLayout<Int>.size)
        #expect(_isPOD(TraceName.self))
    }

    @Test func threadsInterningTheSameTextAtOnceGetTheSameName() async {
        let text = "interned_from_many_threads_\(UUID().uuidString)"
        let names = await withTaskGroup(of: TraceName.self) { group in
            for _ in 0..<64 { group.addTask { TraceName(text) } }
            var names: [TraceName] = []
            for await name in group { names.append(name) }
            return names
        }
        #expect(Set(names).count == 1)
        #expect(names.first?.text == text)
    }

    @Test func namesSortByTheirText() {
        let names: [TraceName] = ["summary", "api_call", "frame_matched", "api_call"]
        #expect(names.sorted().map(\.text) == ["api_call", "api_call", "frame_matched", "summary"])
        #expect(!(TraceName("a") < TraceName("a")))
    }

    @Test func aNameThatNeedsEscapingIsWrittenAndReadBackAsItsText() throws {
        let event = TraceEvent(timeNs: 5, core: "odd \"core\"", event: "tab\there\u{1}", fields: ["n": .int(1)])
        let line = event.jsonLine()
        #expect(line == #"{"t_ns":5,"core":"odd \"core\"","event":"tab\there\u0001","n":1}"#)
        let back = try TraceFile.decode(line, file: "names.jsonl")
        #expect(back == [event])
        #expect(back.first?.core.text == "odd \"core\"")
    }

    @Test func theTableStopsTakingNewTextFromInputAtItsLimitButStillFindsWhatItHolds() {
        var table = TraceName.Table(nameLimit: 2, fieldTextLimit: 2)
        let first = table.entry(for: "one", budget: .names)
        #expect(first != nil)
        #expect(table.entry(for: "two", budget: .names) != nil)
        #expect(table.entry(for: "three", budget: .names) == nil)
        #expect(table.entry(for: "one", budget: .names)?.toOpaque() == first?.toOpaque())
        // A name a program declares is taken whatever the count.
        #expect(table.entry(for: "three", budget: nil) != nil)
    }

    @Test func fieldTextsHaveABudgetOfTheirOwnSoACaptureCannotUseUpTheNamesOne() {
        var table = TraceName.Table(nameLimit: 2, fieldTextLimit: 2)
        #expect(table.entry(for: "v1/1/x", budget: .fieldTexts) != nil)
        #expect(table.entry(for: "v1/1/y", budget: .fieldTexts) != nil)
        #expect(table.entry(for: "v1/1/z", budget: .fieldTexts) == nil)
        // Both name slots are still free, and a text another budget added is found by either.
        #expect(table.entry(for: "datapoint", budget: .names) != nil)
        #expect(table.entry(for: "v1/1/x", budget: .names) != nil)
        #expect(table.entry(for: "ingest", budget: .names) != nil)
        #expect(table.entry(for: "v1/1/x", budget: .fieldTexts) != nil)
    }
}
