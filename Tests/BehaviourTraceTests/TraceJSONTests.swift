import Foundation
import Testing

@testable import BehaviourTrace
import TetherTestSupport

@Suite struct TraceJSONTests {
    static let sample = TraceEvent(
        timeNs: 1_500_000, core: "ingest", event: "datapoint",
        fields: [
            "source": .string("imu"), "name": .string("v1/1/yaw"), "type": .string("float"),
            "time_ns": .int(1_499_000), "value": .double(1.0),
        ]
    )

    @Test func lineStartsWithTimeCoreEventThenSortedKeys() {
        #expect(Self.sample.jsonLine()
            == #"{"t_ns":1500000,"core":"ingest","event":"datapoint","name":"v1/1/yaw","source":"imu","time_ns":1499000,"type":"float","value":1.0}"#)
    }

    @Test func nestedObjectsAreWrittenWithSortedKeys() {
        let event = TraceEvent(timeNs: 0, core: "session", event: "context", fields: [
            "context": .object(["zeta": .int(1), "alpha": .array([.null, .bool(true), .object(["b": .int(2), "a": .int(1)])])]),
        ])
        #expect(event.jsonLine()
            == #"{"t_ns":0,"core":"session","event":"context","context":{"alpha":[null,true,{"a":1,"b":2}],"zeta":1}}"#)
    }

    @Test func intAndDoubleStayDistinctAcrossARoundTrip() throws {
        let event = TraceEvent(timeNs: -5, core: "ingest", event: "x", fields: [
            "i": .int(3), "d": .double(3), "big": .int(Int64.max), "small": .int(Int64.min),
            "tiny": .double(.leastNonzeroMagnitude), "huge": .double(1.7976931348623157e308), "neg0": .double(-0.0),
            "third": .double(1.0 / 3.0), "exp": .double(1e21),
        ])
        let line = event.jsonLine()
        #expect(line.contains(#""i":3,"#))
        #expect(line.contains(#""d":3.0,"#))
        let back = try TraceEvent(jsonLine: line, lineNumber: 1, file: "t.jsonl")
        #expect(back == event)
        #expect(back.fields["i"] == .int(3))
        #expect(back.fields["d"] == .double(3))
        #expect(back.jsonLine() == line)
    }

    @Test func stringsAreEscapedPerRFC8259AndRoundTrip() throws {
        let tricky = "quote\" backslash\\ slash/ nl\n cr\r tab\t bell\u{07} nul\u{00} del\u{7F} é 日本 🚀 \u{2028}"
        let event = TraceEvent(timeNs: 1, core: "messaging", event: "received", fields: ["text": .string(tricky), "ключ": .string("значение")])
        let line = event.jsonLine()
        #expect(line.contains(#"quote\" backslash\\ slash/ nl\n cr\r tab\t bell\u0007 nul\u0000 del"#))
        #expect(!line.contains("\n"))
        let back = try TraceEvent(jsonLine: line, lineNumber: 1, file: "t.jsonl")
        #expect(back == event)
    }

    @Test func parserAcceptsEscapesAndSurrogatePairsFromOtherWriters() throws {
        let line = #" { "event" : "e", "core":"c" , "t_ns" : 7, "s": "\u00e9\ud83d\ude80\/\b\f" } "#
        let event = try TraceEvent(jsonLine: line, lineNumber: 1, file: "t.jsonl")
        #expect(event.timeNs == 7)
        #expect(event.fields["s"] == .string("é🚀/\u{08}\u{0C}"))
    }

    @Test func nonFiniteDoublesAreWrittenAsStrings() {
        let event = TraceEvent(timeNs: 0, core: "c", event: "e", fields: ["a": .double(.nan), "b": .double(-.infinity)])
        #expect(event.jsonLine() == #"{"t_ns":0,"core":"c","event":"e","a":"NaN","b":"-Infinity"}"#)
    }

    @Test func reservedKeysInFieldsAreNotWrittenTwice() throws {
        let event = TraceEvent(timeNs: 3, core: "c", event: "e", fields: ["event": .string("other"), "x": .int(1)])
        let line = event.jsonLine()
        #expect(line == #"{"t_ns":3,"core":"c","event":"e","x":1}"#)
    }

    @Test func fileRoundTripKeepsEveryEventAndSkipsBlankLines() throws {
        var events: [TraceEvent] = []
        for i in 0..<50 {
            let name: TraceName = i % 2 == 0 ? "datapoint" : "chunk"
            let fields: [String: TraceValue] = ["sequence": .int(Int64(i)), "value": .double(Double(i) / 7)]
            events.append(TraceEvent(timeNs: Int64(i) * 1_000, core: "ingest", event: name, fields: fields))
        }
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("trace-\(UUID().uuidString).jsonl").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try TraceFile.write(events, to: path)
        #expect(try TraceFile.read(path) == events)
        let withBlanks = "\n" + TraceFile.encode(events) + "\n  \n"
        #expect(try TraceFile.decode(withBlanks, file: "mem") == events)
    }

    @Test func encodingTheSameEventsTwiceGivesTheSameBytes() {
        // Two equal traces whose field dictionaries were filled in opposite orders, so they
        // iterate differently: both must give the same bytes, the fields in sorted key order.
        let keys = (0..<40).map { "k\($0)" }
        var forward: [String: TraceValue] = [:], backward: [String: TraceValue] = [:]
        for (i, key) in keys.enumerated() { forward[key] = .int(Int64(i)) }
        for (i, key) in keys.enumerated().reversed() { backward[key] = .int(Int64(i)) }
        let first = [Self.sample, TraceEvent(timeNs: 9, core: "ingest", event: "rate", fields: forward)]
        let second = [Self.sample, TraceEvent(timeNs: 9, core: "ingest", event: "rate", fields: backward)]
        #expect(first == second)
        let sortedFields = keys.sorted().map { "\"\($0)\":\($0.dropFirst())" }.joined(separator: ",")
        let expected = #"{"t_ns":1500000,"core":"ingest","event":"datapoint","name":"v1/1/yaw","source":"imu","time_ns":1499000,"type":"float","value":1.0}"#
            + "\n" + #"{"t_ns":9,"core":"ingest","event":"rate","# + sortedFields + "}\n"
        #expect(TraceFile.encode(first) == expected)
        #expect(TraceFile.encode(second) == expected)
    }

    @Test func readingAMissingFileNamesThePath() {
        #expect(throws: TraceFileError.self) { try TraceFile.read("/nonexistent/dir/trace.jsonl") }
    }

    static let malformed: [(String, Int, String)] = [
        (#"{"t_ns":1,"core":"c","event":"e","x":}"#, 38, "a JSON value"),
        (#"{"t_ns":1,"core":"c","event":"e""#, 33, "a ',' or '}'"),
        (#"{"t_ns":1.5,"core":"c","event":"e"}"#, 1, "an integer value for \"t_ns\""),
        (#"{"core":"c","event":"e"}"#, 1, "a \"t_ns\" key"),
        (#"{"t_ns":1,"core":"c"}"#, 1, "an \"event\" key"),
        (#"{"t_ns":1,"core":"c","event":"e","x":01}"#, 39, "no leading zero"),
        (#"{"t_ns":1,"core":"c","event":"e","x":"\q"}"#, 39, "one of"),
        (#"{"t_ns":1,"core":"c","event":"e","x":"\udc00"}"#, 39, "a high surrogate"),
        (#"{"t_ns":1,"core":"c","event":"e","x":1,"x":2}"#, 40, "a key not already used"),
        (#"{"t_ns":1,"core":"c","t_ns":2,"event":"e"}"#, 22, "a key not already used"),
        (#"{"event":"e","core":"c","t_ns":1,"event":"f"}"#, 34, "a key not already used"),
        // Past 16 members repeats are found through an index.
        (#"{"t_ns":1,"core":"c","event":"e","k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10,"k11":11,"k12":12,"k13":13,"k14":14,"k15":15,"k16":16,"k17":17,"k18":18,"k19":19,"k3":0}"#, 194, "a key not already used"),
        (#"{"t_ns":1,"core":"c","event":"e","source":"s","name":"n","type":"t","time_ns":1,"name":"m"}"#, 81, "a key not already used"),
        (#"{"t_ns":1,"core":"c","event":"e"} trailing"#, 35, "end of line"),
        (#"[1,2]"#, 1, "'{'"),
        (#"{"t_ns":1,"core":"c","event":"e","x":tru}"#, 38, "the literal 'true'"),
        (#"{"t_ns":1,"core":"c","event":"e","x":1e999}"#, 38, "a number within the range"),
        ("{\"t_ns\":1,\"core\":\"c\",\"event\":\"e\",\"x\":\"a\u{01}\"}", 40, "a control character"),
    ]

    @Test(arguments: malformed)
    func malformedLineThrowsWithLineAndColumn(line: String, column: Int, expected: String) {
        do {
            _ = try TraceEvent(jsonLine: line, lineNumber: 7, file: "baseline/ingest.jsonl")
            Issue.record("accepted malformed line \(line)")
        } catch {
            #expect(error.file == "baseline/ingest.jsonl")
            #expect(error.line == 7)
            #expect(error.column == column, "\(error)")
            #expect(error.expected.contains(expected), "\(error)")
        }
    }

    /// A parsed line takes the same form, inline or dictionary, as the event built from its
    /// fields, so parsed and made events compare and hash alike.
    @Test func aParsedLineEqualsTheEventBuiltFromItsFields() throws {
        let point = try TraceEvent(jsonLine: #"{"t_ns":5,"core":"ingest","event":"datapoint","name":"v1/1/x","source":"127.0.0.1:5","time_ns":9,"type":"float64","value":1.5}"#, lineNumber: 1, file: "f")
        let built = TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: [
            "source": .string("127.0.0.1:5"), "name": .string("v1/1/x"), "type": .string("float64"), "time_ns": .int(9), "value": .double(1.5)])
        #expect(point == built)
        #expect(point.hashValue == built.hashValue)
        #expect(point.fields == built.fields)
        // Five keys of which one has another type: the dictionary form on both sides.
        let odd = try TraceEvent(jsonLine: #"{"t_ns":5,"core":"ingest","event":"datapoint","name":"v1/1/x","source":"s","time_ns":"9","type":"float64","value":1}"#, lineNumber: 1, file: "f")
        #expect(odd.field("time_ns") == .string("9"))
        #expect(odd == TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: odd.fields))
    }

    @Test func deeplyNestedInputThrowsInsteadOfOverflowingTheStack() {
        let line = #"{"t_ns":1,"core":"c","event":"e","x":"# + String(repeating: "[", count: 10_000)
        #expect(throws: TraceFormatError.self) { try TraceEvent(jsonLine: line, lineNumber: 1, file: "f") }
    }

    @Test func invalidUTF8InAStringThrows() {
        var bytes = Array(#"{"t_ns":1,"core":"c","event":"e","x":"#.utf8)
        bytes += [0x22, 0xFF, 0xFE, 0x22, 0x7D]
        #expect(throws: TraceFormatError.self) { try TraceFile.decode(bytes, file: "f") }
    }

    @Test func fileDecodeNamesTheLineOfTheFirstBadEvent() {
        let text = TraceFile.encode([Self.sample, Self.sample]) + "{oops}\n"
        do {
            _ = try TraceFile.decode(text, file: "trace.jsonl")
            Issue.record("accepted a bad third line")
        } catch {
            #expect(error.line == 3)
            #expect(error.column == 2)
            #expect(error.description.hasPrefix("trace.jsonl:3:2: expected"))
        }
    }

    @Test func everyByteSequenceGivesAValueOrATypedError() {
        var generator = SplitMix64(seed: 42)
        let base = Array(Self.sample.jsonLine().utf8)
        for _ in 0..<2_000 {
            var bytes = base
            for _ in 0..<Int(generator.next() % 4 + 1) {
                let index = Int(generator.next() % UInt64(bytes.count))
                bytes[index] = UInt8(truncatingIfNeeded: generator.next())
            }
            let cut = Int(generator.next() % UInt64(bytes.count + 1))
            do {
                _ = try TraceFile.decode(Array(bytes.prefix(cut)), file: "fuzz")
            } catch {
                #expect(error.column >= 1)
            }
        }
    }
}


@Suite struct TraceLineLimitTests {
    @Test func aLineLongerThanTheLimitIsRefusedByTheStreamingReaderNamingTheLine() throws {
        let folder = try TemporaryFolder("trace-limit")
        let path = folder.path("long.jsonl").path
        var bytes = Array(#"{"t_ns":0,"core":"c","event":"e"}"#.utf8) + [0x0A]
        bytes += Array(#"{"t_ns":1,"core":"c","event":"e","pad":""#.utf8)
        bytes += [UInt8](repeating: 0x61, count: TraceLimits.maximumLineBytes + 10)
        bytes += Array(#""}"#.utf8) + [0x0A]
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let reader = try TraceFileReader(path: path)
        #expect(try reader.next() != nil)
        do {
            _ = try reader.next()
            Issue.record("a line over the limit was read")
        } catch let error as TraceFormatError {
            #expect(error.line == 2)
            #expect(error.description.contains(TraceLimits.maximumLineBytesVariable))
        }
    }

    @Test func aLineLongerThanTheLimitIsRefusedByTheWholeFileReader() throws {
        var bytes = Array(#"{"t_ns":1,"core":"c","event":"e","pad":""#.utf8)
        bytes += [UInt8](repeating: 0x61, count: TraceLimits.maximumLineBytes)
        bytes += Array(#""}"#.utf8)
        #expect(throws: TraceFormatError.self) { try TraceFile.decode(bytes, file: "big.jsonl") }
    }

    @Test func aFIFOIsRefusedNotWaitedOn() throws {
        let folder = try TemporaryFolder("trace-limit")
        let path = folder.path("pipe.jsonl").path
        #expect(mkfifo(path, 0o644) == 0)
        do {
            _ = try TraceFileReader(path: path)
            Issue.record("a FIFO was opened as a trace")
        } catch {
            #expect(error.description.contains("FIFO"))
        }
    }
}
