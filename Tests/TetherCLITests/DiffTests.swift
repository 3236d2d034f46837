import CaptureKit
import IngestLive
import Foundation
import LiveHosts
import IngestIntegration
import ReplayKit
import BehaviourTrace
import Testing
import TetherTestSupport

/// `tether diff` names exactly the events a behaviour change altered.
@Suite struct DiffTests {
    /// A plugin session with a 4-second stall, as a capture set (the simulator's schedule written
    /// as Ethernet/IPv4/UDP frames at their offsets).
    static func stalledSession(_ folder: TemporaryFolder) throws -> String {
        let configuration = PluginTrafficConfiguration(rate: 10, duration: .seconds(6), seed: 5, faults: [.stall(.seconds(4))])
        let schedule = PluginTrafficGenerator(configuration: configuration).schedule()
        var frames: [CaptureFrame] = []
        let start: Int64 = 1_700_000_000_000_000_000
        for (index, datagram) in schedule.enumerated() {
            let data = FrameBuilder.ethernetUDP(source: [127, 0, 0, 1], sourcePort: 41000, destination: [127, 0, 0, 1], destinationPort: 12345, payload: datagram.bytes)
            let (seconds, attoseconds) = datagram.offset.components
            let time = start + seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            frames.append(CaptureFrame(number: index + 1, interfaceIndex: 0, timestampNs: time, originalLength: data.count, data: data))
        }
        let source = folder.path("stalled.pcapng").path
        try FrameBuilder.writePcapng([CaptureInterface(linkType: .ethernet, name: "lo")], frames, to: source)
        let set = folder.path("stalled").path
        try Tools.tetherSucceeds(["import", source, "--out", set])
        return set
    }

    @Test func aShorterIdleTimeoutShowsOnlyTheStreamEndingAndRestarting() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.stalledSession(folder)
        let before = folder.path("default.jsonl").path
        let after = folder.path("short-idle.jsonl").path
        try Tools.tetherSucceeds(["replay", set, "--trace", before])
        try Tools.tetherSucceeds(["replay", set, "--trace", after, "--ingest-idle-timeout", "2"])

        let diff = try Tools.tether(["diff", before, after])
        #expect(diff.status == 1, "diff should report a difference: \(diff.stdout)")
        let changes = diff.stdout.split(separator: "\n").filter { line in
            guard let first = line.first else { return false }
            return "-+~!@".contains(first)
        }
        // The stream ends by idle timeout during the stall and a new one starts when data resumes;
        // no data point is lost, moved or changed.
        #expect(changes.contains { $0.hasPrefix("+") && $0.contains("stream_end") }, "\(diff.stdout)")
        #expect(changes.contains { $0.hasPrefix("+") && $0.contains("stream_start") }, "\(diff.stdout)")
        #expect(!changes.contains { $0.contains("datapoint") }, "data points should be untouched:\n\(diff.stdout)")
    }

    /// On the committed faulty recording (a 20 s stall), an idle timeout longer than the stall
    /// keeps the first stream alive: the diff must name exactly the events that this changes and
    /// nothing else — no data point, no rejection, no name message.
    @Test func anIdleTimeoutLongerThanTheStallNamesExactlyTheChangedEvents() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = Tools.repositoryRoot.appendingPathComponent("Captures/plugin-faulty").path
        let before = folder.path("default.jsonl").path
        let after = folder.path("idle-25s.jsonl").path
        try Tools.tetherSucceeds(["replay", set, "--trace", before])
        _ = try Tools.tether(["replay", set, "--trace", after, "--ingest-idle-timeout", "25"])

        let diff = try Tools.tether(["diff", before, after])
        #expect(diff.status == 1, "diff should report a difference: \(diff.stdout)")
        let lines = diff.stdout.split(separator: "\n").map(String.init).filter { line in
            guard let first = line.first else { return false }
            return "-+~!@".contains(first)
        }
        let expected: [(prefix: String, contains: String)] = [
            ("- missing", "ingest stream_end source=127.0.0.1:37228 cause=idle_timeout"),
            ("- missing", "ingest stream_start"),
            ("+ extra", "ingest gap"),
            ("! changed", "ingest chunk [sequence]"),
            ("- missing", "ingest rate"),
            ("! changed", "ingest summary gaps: 0 → 1, streams: 2 → 1, streams_ended: 2 → 1"),
        ]
        #expect(lines.count == expected.count, "diff named other events too:\n\(diff.stdout)")
        for (line, want) in zip(lines, expected) {
            #expect(line.hasPrefix(want.prefix) && line.contains(want.contains), "expected \(want) but got: \(line)")
        }
        #expect(!diff.stdout.contains("datapoint"), "data points must be untouched:\n\(diff.stdout)")
    }

    @Test func twoReplaysOfOneSetGiveByteIdenticalTracesAndNoDifference() throws {
        let folder = try TemporaryFolder("cli-tests")
        let set = try Self.stalledSession(folder)
        let first = folder.path("first.jsonl").path
        let second = folder.path("second.jsonl").path
        try Tools.tetherSucceeds(["replay", set, "--trace", first])
        try Tools.tetherSucceeds(["replay", set, "--trace", second])
        #expect(try Data(contentsOf: URL(fileURLWithPath: first)) == Data(contentsOf: URL(fileURLWithPath: second)))
        let diff = try Tools.tether(["diff", first, second])
        #expect(diff.status == 0, "\(diff.stdout)")
    }

    /// The command reads both traces as it compares them; within its window the report is the
    /// whole-trace comparison's, with ignored events and fields left out the same way.
    @Test func theStreamedDiffReportsWhatTheWholeTraceComparisonReports() throws {
        let folder = try TemporaryFolder("cli-tests")
        var random = SplitMix64(seed: 0xD1FF_C11)
        var a: [TraceEvent] = []
        for index in 0..<3000 {
            let name: TraceName = ["datapoint", "chunk", "noise", "rate"][Int(random.next() % 4)]
            a.append(TraceEvent(timeNs: Int64(index) * 1_000_000, core: "ingest", event: name, fields: [
                "seq": .int(Int64(index)), "wall": .int(Int64(random.next() % 1000)), "value": .int(Int64(random.next() % 7)),
            ]))
        }
        var b = a
        b.remove(at: 2500)
        b[700].fields["value"] = .int(99)
        b[1200].timeNs += 5_000_000
        b.insert(TraceEvent(timeNs: 2_000_000_000, core: "ingest", event: "gap", fields: ["seq": .int(-1)]), at: 2000)
        for index in b.indices where index % 10 == 0 { b[index].fields["wall"] = .int(-1) }
        let pathA = folder.path("a.jsonl").path
        let pathB = folder.path("b.jsonl").path
        try TraceFile.write(a, to: pathA)
        try TraceFile.write(b, to: pathB)

        let diff = try Tools.tether(["diff", pathA, pathB, "--ignore-event", "noise", "--ignore-field", "wall", "--max-lines", "200"])
        #expect(diff.status == 1, "\(diff.stderr)")
        let whole = TraceDiff.compare(a.filter { $0.event != "noise" }, b.filter { $0.event != "noise" },
                                      timingToleranceNs: 0, ignoringFields: ["wall"])
        #expect(!whole.isEmpty)
        #expect(diff.stdout == whole.render(maxLines: 200) + "\n")
    }

    /// Two live runs of one app: the second connected 0.7 s later, so without alignment every
    /// event is a timing difference; aligned on the connection, the one real change stands alone.
    @Test func alignOnShiftsTheSecondTraceToTheFirstMatchingEvent() throws {
        let folder = try TemporaryFolder("cli-tests")
        func run(offsetNs: Int64, completionAt: Int64) -> [TraceEvent] {
            [TraceEvent(timeNs: 10_000_000, core: "messaging", event: "api_call", fields: ["call": .string("register_device")]),
             TraceEvent(timeNs: 400_000_000 + offsetNs, core: "messaging", event: "device_status", fields: ["status": .string("Connected")]),
             TraceEvent(timeNs: 600_000_000 + offsetNs, core: "messaging", event: "progress", fields: ["send": .int(1)]),
             TraceEvent(timeNs: completionAt + offsetNs, core: "messaging", event: "completion", fields: ["send": .int(1)])]
        }
        let first = folder.path("run1.jsonl").path
        let second = folder.path("run2.jsonl").path
        try TraceFile.write(run(offsetNs: 0, completionAt: 800_000_000), to: first)
        try TraceFile.write(run(offsetNs: 700_000_000, completionAt: 900_000_000), to: second)

        let plain = try Tools.tether(["diff", first, second, "--tolerance-ms", "50"])
        #expect(plain.status == 1)
        #expect(plain.stdout.components(separatedBy: "\n").filter { $0.contains("@ timing") }.count == 3, "\(plain.stdout)")

        let aligned = try Tools.tether(["diff", first, second, "--tolerance-ms", "50", "--align-on", "messaging:device_status,status=Connected"])
        #expect(aligned.status == 1, "\(aligned.stdout)")
        #expect(aligned.stdout.contains("shifted by -0.700000 s"), "\(aligned.stdout)")
        let timing = aligned.stdout.components(separatedBy: "\n").filter { $0.contains("@ timing") }
        // The register call (before the connection) moved by the shift; the completion by its own 100 ms.
        #expect(timing.count == 2, "\(aligned.stdout)")
        #expect(timing.contains { $0.contains("completion") })
        #expect(!timing.contains { $0.contains("progress") || $0.contains("device_status") })

        let missing = try Tools.tether(["diff", first, second, "--align-on", "session:activation_did_complete"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("has no session:activation_did_complete event to align on"), "\(missing.stderr)")
    }

    @Test func aMalformedLineLateInOneSideExitsTwoNamingTheLine() throws {
        let folder = try TemporaryFolder("cli-tests")
        let events = (0..<500).map { TraceEvent(timeNs: Int64($0), core: "ingest", event: "datapoint", fields: ["seq": .int(Int64($0))]) }
        let good = folder.path("good.jsonl").path
        try TraceFile.write(events, to: good)
        var lines = try String(contentsOfFile: good, encoding: .utf8).split(separator: "\n").map(String.init)
        lines[449] = "{\"t_ns\":"
        let broken = folder.path("broken.jsonl").path
        try (lines.joined(separator: "\n") + "\n").write(toFile: broken, atomically: true, encoding: .utf8)
        let diff = try Tools.tether(["diff", good, broken])
        #expect(diff.status == 2, "\(diff.stdout) \(diff.stderr)")
        #expect(diff.stderr.contains("\(broken):450:"), "\(diff.stderr)")
    }

    @Test func anUnreadableSideExitsTwo() throws {
        let folder = try TemporaryFolder("cli-tests")
        let broken = folder.path("broken.jsonl")
        try Data("not json\n".utf8).write(to: broken)
        let diff = try Tools.tether(["diff", broken.path, broken.path])
        #expect(diff.status == 2, "\(diff.stdout) \(diff.stderr)")
    }
}
