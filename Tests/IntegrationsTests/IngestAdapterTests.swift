@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import CaptureKit
import CaptureSet
import Foundation
import IngestCore
import Testing
import ReplayKit
import BehaviourTrace

// MARK: Frames assembled by hand

/// Ethernet II + IPv4 (with header checksum) + UDP (no checksum) around `payload`.
fileprivate func udpFrame(
    _ payload: [UInt8], from source: (UInt8, UInt8, UInt8, UInt8) = (127, 0, 0, 1), sourcePort: UInt16 = 50000,
    to destinationPort: UInt16 = 12345
) -> [UInt8] {
    var ip: [UInt8] = [0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, 17, 0, 0,
                       source.0, source.1, source.2, source.3, 127, 0, 0, 1]
    let total = 20 + 8 + payload.count
    ip[2] = UInt8(total >> 8)
    ip[3] = UInt8(total & 0xff)
    var sum: UInt32 = 0
    for i in stride(from: 0, to: 20, by: 2) { sum += UInt32(ip[i]) << 8 | UInt32(ip[i + 1]) }
    while sum > 0xffff { sum = (sum & 0xffff) + (sum >> 16) }
    let checksum = ~UInt16(sum)
    ip[10] = UInt8(checksum >> 8)
    ip[11] = UInt8(checksum & 0xff)
    let udpLength = 8 + payload.count
    let udp: [UInt8] = [UInt8(sourcePort >> 8), UInt8(sourcePort & 0xff), UInt8(destinationPort >> 8), UInt8(destinationPort & 0xff),
                        UInt8(udpLength >> 8), UInt8(udpLength & 0xff), 0, 0]
    let ethernet: [UInt8] = Array(repeating: 0, count: 12) + [0x08, 0x00]
    return ethernet + ip + udp + payload
}

fileprivate func dataMessage(_ seconds: String, value base64: String = "QF7dLxqfvnc=") -> [UInt8] {
    Array("{\"t\": \"\(seconds)\", \"d\": [{\"n\": \"v1/1/x\", \"t\": \"float64\", \"p\": \"\(base64)\"}]}".utf8)
}

fileprivate let ingestInterface = ReplayInterface(index: 0, linkType: .ethernet, name: "lo", role: .ingestUDP)

/// Feeds one frame to `adapter` at `now`.
fileprivate func feed(_ adapter: inout IngestAdapter, _ bytes: [UInt8], number: Int = 1, at now: Duration = .zero,
                      interface: ReplayInterface = ingestInterface) -> [TraceEvent] {
    adapter.frame(ReplayFrame(number: number, virtualTimeNs: now.replayNanoseconds, timestampNs: 0, interface: interface), bytes: bytes, now: now)
}

fileprivate let src = DatagramSource(address: "127.0.0.1", port: 50000)

// MARK: Event mapping

fileprivate let mappingCases: [(IngestEvent, TraceEvent)] = [
    (.dataPoint(DataPoint(source: src, timeNs: 1_674_790_238_123_456_700, name: "v1/1/x", type: "float64", value: .float64(123.456), payload: [])),
     TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: [
        "source": .string("127.0.0.1:50000"), "name": .string("v1/1/x"), "type": .string("float64"),
        "time_ns": .int(1_674_790_238_123_456_700), "value": .double(123.456)])),
    (.dataPoint(DataPoint(source: src, timeNs: 1, name: "n", type: "int64", value: .int64(42), payload: [])),
     TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: [
        "source": .string("127.0.0.1:50000"), "name": .string("n"), "type": .string("int64"), "time_ns": .int(1), "value": .int(42)])),
    (.dataPoint(DataPoint(source: src, timeNs: 1, name: "v", type: "vector_2d", value: .vector2D(1.5, -2), payload: [])),
     TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: [
        "source": .string("127.0.0.1:50000"), "name": .string("v"), "type": .string("vector_2d"), "time_ns": .int(1),
        "value": .array([.double(1.5), .double(-2)])])),
    (.dataPoint(DataPoint(source: src, timeNs: 1, name: "v", type: "vector_3d", value: .vector3D(1, 2, 3), payload: [])),
     TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: [
        "source": .string("127.0.0.1:50000"), "name": .string("v"), "type": .string("vector_3d"), "time_ns": .int(1),
        "value": .array([.double(1), .double(2), .double(3)])])),
    (.dataPoint(DataPoint(source: src, timeNs: 1, name: "s", type: "string/nmea", value: .string("$GPGGA"), payload: [])),
     TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: [
        "source": .string("127.0.0.1:50000"), "name": .string("s"), "type": .string("string/nmea"), "time_ns": .int(1),
        "value": .string("$GPGGA")])),
    (.dataPoint(DataPoint(source: src, timeNs: 1, name: "b", type: "cbor", value: .bytes([0x0a, 0xff]), payload: [0x0a, 0xff])),
     TraceEvent(timeNs: 5, core: "ingest", event: "datapoint", fields: [
        "source": .string("127.0.0.1:50000"), "name": .string("b"), "type": .string("cbor"), "time_ns": .int(1),
        "bytes": .string("0aff")])),
    (.rejected(src, .notJSON, detail: "byte 0: expected `{`"),
     TraceEvent(timeNs: 5, core: "ingest", event: "rejected", fields: [
        "source": .string("127.0.0.1:50000"), "reason": .string("not_json"), "detail": .string("byte 0: expected `{`")])),
    (.pluginName(src, "Plugin Sample"),
     TraceEvent(timeNs: 5, core: "ingest", event: "plugin_name", fields: ["source": .string("127.0.0.1:50000"), "name": .string("Plugin Sample")])),
    (.endMessage(src),
     TraceEvent(timeNs: 5, core: "ingest", event: "end_message", fields: ["source": .string("127.0.0.1:50000")])),
    (.legacyV1(src, timeNs: nil, payload: [1, 2]),
     TraceEvent(timeNs: 5, core: "ingest", event: "legacy_v1", fields: ["source": .string("127.0.0.1:50000"), "bytes": .string("0102")])),
    (.legacyV1(src, timeNs: 7, payload: []),
     TraceEvent(timeNs: 5, core: "ingest", event: "legacy_v1", fields: ["source": .string("127.0.0.1:50000"), "bytes": .string(""), "time_ns": .int(7)])),
    (.streamStarted(DatagramSource(address: "::1", port: 9)),
     TraceEvent(timeNs: 5, core: "ingest", event: "stream_start", fields: ["source": .string("[::1]:9")])),
    (.streamEnded(src, .idleTimeout),
     TraceEvent(timeNs: 5, core: "ingest", event: "stream_end", fields: ["source": .string("127.0.0.1:50000"), "cause": .string("idle_timeout")])),
    (.rateLearned(src, hertz: 19.99951),
     TraceEvent(timeNs: 5, core: "ingest", event: "rate", fields: ["source": .string("127.0.0.1:50000"), "hz": .double(20.0)])),
    (.timeWentBackwards(src, previousNs: 10, currentNs: 9),
     TraceEvent(timeNs: 5, core: "ingest", event: "time_backwards", fields: [
        "source": .string("127.0.0.1:50000"), "previous_ns": .int(10), "current_ns": .int(9)])),
    (.gap(src, gapNs: 400, expectedPeriodNs: 50),
     TraceEvent(timeNs: 5, core: "ingest", event: "gap", fields: [
        "source": .string("127.0.0.1:50000"), "gap_ns": .int(400), "expected_period_ns": .int(50)])),
    (.chunkReady(IngestChunk(source: src, streamStartNs: 0, sequence: 3, dataPoints: [
        DataPoint(source: src, timeNs: 1, name: "a", type: "bytes", value: .bytes([1]), payload: [1]),
        DataPoint(source: src, timeNs: 2, name: "a", type: "bytes", value: .bytes([2]), payload: [2]),
    ], byteCount: 2)),
     TraceEvent(timeNs: 5, core: "ingest", event: "chunk", fields: [
        "source": .string("127.0.0.1:50000"), "sequence": .int(3), "points": .int(2), "bytes": .int(2)])),
]

@Test(arguments: mappingCases.indices)
func eachIngestEventKindMapsToItsTraceEvent(_ i: Int) {
    let (event, expected) = mappingCases[i]
    #expect(IngestAdapter.traceEvent(event, timeNs: 5) == expected)
}

@Test func learnedRateIsRoundedToThreeDecimals() {
    #expect(IngestAdapter.roundedToMillis(12.3456) == 12.346)
    #expect(IngestAdapter.roundedToMillis(20.0004999) == 20.0)
    #expect(IngestAdapter.roundedToMillis(0.0005) == 0.001)
}

// MARK: Routing and feeding

@Test func adapterTakesIngestRoleAndUndescribedIPInterfacesOnly() {
    let adapter = IngestAdapter()
    #expect(adapter.input(for: ingestInterface) == .raw)
    #expect(adapter.input(for: ReplayInterface(index: 1, linkType: .linuxSLL2)) == .raw)
    #expect(adapter.input(for: ReplayInterface(index: 2, linkType: .bluetoothHCIH4WithPHDR)) == .ignore)
    #expect(adapter.input(for: ReplayInterface(index: 3, linkType: .ethernet, role: .context)) == .ignore)
    #expect(adapter.input(for: ReplayInterface(index: 4, linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI)) == .ignore)
}

@Test func datagramToTheIngestPortReachesTheCoreWithItsSource() {
    var adapter = IngestAdapter()
    let events = feed(&adapter, udpFrame(dataMessage("1674790238.1234567"), from: (127, 0, 0, 9), sourcePort: 6000), at: .milliseconds(3))
    let point = events.first { $0.event == "datapoint" }
    #expect(point == TraceEvent(timeNs: 3_000_000, core: "ingest", event: "datapoint", fields: [
        "source": .string("127.0.0.9:6000"), "name": .string("v1/1/x"), "type": .string("float64"),
        "time_ns": .int(1_674_790_238_123_456_700), "value": .double(123.456)]))
    #expect(events.first?.event == "stream_start")
    #expect(adapter.ingest.counters.datagrams == 1)
}

@Test func datagramToAnotherPortIsCountedNotFed() {
    var adapter = IngestAdapter()
    #expect(feed(&adapter, udpFrame(dataMessage("1"), to: 5353)).isEmpty)
    #expect(adapter.ingest.counters.datagrams == 0)
    let summary = adapter.finish(now: .zero).last
    #expect(summary?.event == "summary")
    #expect(summary?.fields["other_port_datagrams"] == .int(1))
}

@Test func interfaceIngestPortFromTheManifestIsUsed() {
    var adapter = IngestAdapter()
    let onPort4000 = ReplayInterface(index: 0, linkType: .ethernet, role: .ingestUDP, parameters: ["ingest_port": "4000"])
    #expect(feed(&adapter, udpFrame(dataMessage("1"), to: 12345), interface: onPort4000).isEmpty)
    #expect(!feed(&adapter, udpFrame(dataMessage("1"), to: 4000), interface: onPort4000).isEmpty)
    #expect(adapter.ingest.counters.datagrams == 1)
}

@Test func portOverrideWinsOverTheManifest() {
    var adapter = IngestAdapter(portOverride: 7000)
    let onPort4000 = ReplayInterface(index: 0, linkType: .ethernet, role: .ingestUDP, parameters: ["ingest_port": "4000"])
    #expect(feed(&adapter, udpFrame(dataMessage("1"), to: 4000), interface: onPort4000).isEmpty)
    #expect(!feed(&adapter, udpFrame(dataMessage("1"), to: 7000), interface: onPort4000).isEmpty)
}

@Test func malformedFrameIsReportedWithItsNumber() {
    var adapter = IngestAdapter()
    // An IPv4 ethertype followed by 5 bytes: too short for any IPv4 header.
    let events = feed(&adapter, Array(repeating: 0, count: 12) + [0x08, 0x00, 0x45, 0, 0, 0, 0], number: 42)
    #expect(events.count == 1)
    #expect(events.first?.event == "frame_malformed")
    #expect(events.first?.fields["frame"] == .int(42))
}

@Test func summaryCountsRejectionsByReason() {
    var adapter = IngestAdapter()
    _ = feed(&adapter, udpFrame(Array("not json".utf8)))
    let summary = adapter.finish(now: .seconds(1)).last
    #expect(summary?.timeNs == 1_000_000_000)
    #expect(summary?.fields["datagrams"] == .int(1))
    #expect(summary?.fields["rejected"] == .int(1))
    #expect(summary?.fields["rejected_by_reason"] == .object(["not_json": .int(1)]))
}

@Test func overridesReplaceOnlyTheFieldsTheySet() {
    let configuration = IngestAdapter.configuration(applying: IngestOverrides(idleTimeoutMs: 2000, flushBytes: 512))
    #expect(configuration.idleTimeout == .milliseconds(2000))
    #expect(configuration.flushBytes == 512)
    #expect(configuration.flushInterval == IngestConfiguration().flushInterval)
    #expect(IngestAdapter.configuration(applying: nil) == IngestConfiguration())
}

// MARK: A whole capture set

/// Writes a sealed capture set: plugin datagrams at 0 ms, 50 ms, then (after a 3 s silence)
/// 3050 ms and an end message at 3100 ms, plus a datagram to another port.
fileprivate func makeIngestSet(ingest: IngestOverrides? = nil) throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-replay-\(UUID().uuidString)").path
    let path = folder + "/plugin-walk"
    try CaptureSetDirectory.create(at: path, manifest: CaptureSetManifest(
        title: "plugin walk", recordedAt: "2026-11-22T00:45:00Z",
        interfaces: [ManifestInterface(index: 0, name: "lo", linkType: .ethernet, role: .ingestUDP, ingestPort: 12345)],
        sections: try ingest.map { [try ManifestSection(name: "ingest", encoding: $0)] } ?? []))
    let writer = try PcapngWriter(path: path + "/capture.pcapng")
    let lo = try writer.addInterface(CaptureInterface(linkType: .ethernet, name: "lo"))
    let t0: Int64 = 1_763_772_300_000_000_000
    let datagrams: [(Int64, [UInt8])] = [
        (0, udpFrame(dataMessage("1763772300.0"))),
        (50_000_000, udpFrame(dataMessage("1763772300.05", value: "QIioGJN0vGo="))),
        (60_000_000, udpFrame(Array("{\"name\": \"Plugin Sample\"}".utf8), to: 5353)),
        (3_050_000_000, udpFrame(dataMessage("1763772303.05"))),
        (3_100_000_000, udpFrame(Array("{\"end\": \"true\"}".utf8))),
    ]
    for (i, (offset, bytes)) in datagrams.enumerated() {
        try writer.write(CaptureFrame(number: i + 1, interfaceIndex: lo, timestampNs: t0 + offset, originalLength: bytes.count, data: bytes))
    }
    try writer.close()
    try CaptureSetDirectory.seal(at: path)
    return path
}

fileprivate func removeSetFolder(_ path: String) {
    try? FileManager.default.removeItem(atPath: URL(fileURLWithPath: path).deletingLastPathComponent().path)
}

@Test func replayingASetTwiceGivesByteIdenticalTraces() throws {
    let path = try makeIngestSet()
    defer { removeSetFolder(path) }
    let first = try replaySet(at: path)
    let second = try replaySet(at: path)
    #expect(!first.trace.isEmpty)
    #expect(TraceFile.encode(first.trace) == TraceFile.encode(second.trace))
    #expect(first.summary == second.summary)
    #expect(first.summary.framesRead == 5)
    #expect(first.captureSet.verified)
    #expect(first.trace.last?.event == "summary")
    #expect(first.trace.last?.fields["other_port_datagrams"] == .int(1))
    #expect(first.trace.filter { $0.event == "datapoint" }.map(\.timeNs) == [0, 50_000_000, 3_050_000_000])
}

@Test func manifestIdleTimeoutSplitsStreamsAtItsExactInstant() throws {
    let path = try makeIngestSet(ingest: IngestOverrides(idleTimeoutMs: 1000))
    defer { removeSetFolder(path) }
    let outcome = try replaySet(at: path)
    let ends = outcome.trace.filter { $0.event == "stream_end" }
    #expect(ends.map(\.timeNs) == [1_050_000_000, 3_100_000_000])
    #expect(ends.map { $0.fields["cause"] } == [.string("idle_timeout"), .string("end_message")])
    #expect(outcome.trace.filter { $0.event == "stream_start" }.count == 2)
}

@Test func commandLineIngestOverrideWinsOverTheManifest() throws {
    let path = try makeIngestSet(ingest: IngestOverrides(idleTimeoutMs: 1000))
    defer { removeSetFolder(path) }
    let outcome = try replaySet(at: path, options: try .builtIn("ingest.idle_timeout_ms=5000ms"))
    // The 3 s silence is shorter than the command line's 5 s idle timeout (the manifest's 1 s
    // would have ended the stream in it).
    #expect(outcome.trace.filter { $0.event == "stream_start" }.count == 1)
}

@Test func replayOfAChangedCaptureStopsWithADigestMismatch() throws {
    let path = try makeIngestSet()
    defer { removeSetFolder(path) }
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path + "/capture.pcapng"))
    try handle.seekToEnd()
    try handle.write(contentsOf: Data([0]))
    try handle.close()
    let error = #expect(throws: ReplayError.self) { _ = try replaySet(at: path) }
    guard case .captureSet(.digestMismatch(let set, _, _, _)) = error else {
        Issue.record("expected a digest mismatch, got \(String(describing: error))")
        return
    }
    #expect(set == "plugin-walk")
    #expect(try replaySet(at: path, options: try .builtIn(verify: false)).trace.isEmpty == false)
}

/// The adapter keeps each layout's interned names (``IngestAdapter/TraceEventCache``) for fewer
/// layouts than a plugin may interleave: each point still carries the name it was sent with.
@Test func pointsOfInterleavedLayoutsCarryTheNamesTheyWereSentWith() {
    var adapter = IngestAdapter()
    let kinds: [[String]] = (0..<6).map { kind in (0...kind).map { "v1/\(kind)/e\($0)" } }
    var number = 1
    for round in 0..<6 {
        for kind in [0, 1, 2, 3, 4, 5, 2, 0].map({ ($0 + round) % 6 }) {
            let entries = kinds[kind].map { "{\"n\": \"\($0)\", \"t\": \"float64\", \"p\": \"QF7dLxqfvnc=\"}" }
            let json = "{\"t\": \"\(1_674_790_000 + number).5\", \"d\": [\(entries.joined(separator: ", "))]}"
            let events = feed(&adapter, udpFrame(Array(json.utf8)), number: number, at: .milliseconds(number))
            let sent = events.filter { $0.event == "datapoint" }.map { $0.field("name") }
            #expect(sent == kinds[kind].map { .string($0) }, "frame \(number)")
            number += 1
        }
    }
}
