@testable import BehaviourTrace
import TetherTestSupport
import Testing

/// ``TraceLineMatch``: a baseline line checked against a datapoint's values without writing the
/// datapoint out. Its `true` must mean what parsing the line and comparing would mean.
struct TraceLineMatchTests {
    func point(_ t: Int64, value: TraceValue, name: String = "v1/1/yaw") -> TraceEvent {
        TraceEvent(timeNs: t, core: "ingest", event: "datapoint", fields: [
            "source": .string("127.0.0.1:50123"), "name": .string(name), "type": .string("float64"),
            "time_ns": .int(1_795_311_409_435_883_300), "value": value,
        ])
    }

    func match(_ event: TraceEvent, _ line: String) -> Bool? {
        var line = line
        return line.withUTF8 { TraceLineMatch.dataPoint(event, line: UnsafeRawBufferPointer($0)) }
    }

    @Test func aDatapointMatchesTheLineTheWriterWritesForIt() {
        for value: TraceValue in [.double(169.35853841176058), .double(-1e-300), .double(0), .double(-0.5), .double(1e22),
                                  .int(0), .int(-42), .int(.max), .int(.min), .string("ünïcödé"), .string("")] {
            let event = point(54_331_132, value: value)
            #expect(match(event, event.jsonLine()) == true, "\(value)")
        }
    }

    @Test func anyDifferenceIsNoMatch() {
        let event = point(54_331_132, value: .double(1.5))
        for other in [point(54_331_133, value: .double(1.5)), point(54_331_132, value: .double(1.5000000000000002)),
                      point(54_331_132, value: .int(1)), point(54_331_132, value: .double(1.5), name: "v1/1/pitch"),
                      point(-54_331_132, value: .double(1.5))] {
            #expect(match(event, other.jsonLine()) == false)
        }
        let line = event.jsonLine()
        #expect(match(event, line + " ") == false)
        #expect(match(event, String(line.dropLast())) == false)
        #expect(match(event, "") == false)
    }

    @Test func aNumberOutsideJSONsGrammarIsNoMatch() {
        let event = point(7, value: .double(1.5))
        let line = event.jsonLine()
        for text in ["01.5", "1.5e", "+1.5", "1.50.0", "0x1.8p0", "15e-1e"] {
            #expect(match(event, line.replacingOccurrences(of: "\"value\":1.5", with: "\"value\":\(text)")) == false, "\(text)")
        }
        // Another spelling of the same double is not the writer's line: no match, so the caller
        // parses it (and finds the same value).
        #expect(match(event, line.replacingOccurrences(of: "\"value\":1.5", with: "\"value\":15e-1")) == false)
    }

    @Test func aStringThatNeedsEscapingIsLeftToTheWrittenLine() {
        let event = point(7, value: .string("say \"hi\""))
        #expect(match(event, event.jsonLine()) == nil)
        #expect(match(TraceEvent(timeNs: 1, core: "ingest", event: "rejected", fields: ["n": .int(1)]), "{}") == nil)
    }

    /// Random lines, some the event's own, some edited a byte: whenever the match says yes,
    /// parsing the line gives the event.
    @Test func aMatchAlwaysMeansTheLineParsesToTheEvent() throws {
        var random = SplitMix64(seed: 0x11AE)
        for round in 0..<3000 {
            let value: TraceValue = random.chance(0.5)
                ? .double(Double(Int64.random(in: -1_000_000...1_000_000, using: &random)) / 997)
                : .int(Int64.random(in: -1000...1000, using: &random))
            let event = point(Int64.random(in: 0...10_000_000, using: &random), value: value)
            var bytes = Array(event.jsonLine().utf8)
            if random.chance(0.7) {
                let i = Int.random(in: 0..<bytes.count, using: &random)
                bytes[i] = Array("0123456789.-e\"{},:aE".utf8).randomElement(using: &random)!
            }
            let verdict = bytes.withUnsafeBytes { TraceLineMatch.dataPoint(event, line: $0) }
            guard verdict == true else { continue }
            let parsed = try TraceFile.decode(bytes, file: "round \(round)")
            #expect(parsed.count == 1 && parsed[0].timeNs == event.timeNs && parsed[0].hasSameFields(as: event)
                    && parsed[0].core == event.core && parsed[0].event == event.event, "round \(round): \(String(decoding: bytes, as: UTF8.self))")
        }
    }
}
