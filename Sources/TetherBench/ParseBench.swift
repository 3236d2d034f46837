import TetherIntegrations
import IngestLive
import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors
import Foundation
@_spi(Benchmarks) import IngestCore

/// `TetherBench parse-plugin SET [--rounds 5] [--stage NAME]`: IngestCore's datagram parsing alone, over the
/// ingest-port datagrams of a capture set read into memory first (so no file reading, frame
/// decoding or copying is timed). Every stage passes over all datagrams `rounds` times; the best
/// pass counts (`--stage` runs one stage only, e.g. under `perf record`). One `stage=…` line each,
/// with `mb_per_s` (10^6 bytes of datagram per second of wall-clock time) and `cpu_mb_per_s` (per
/// second of this thread's CPU time, which other work on a busy machine moves far less;
/// `ns_per_datagram` is CPU time too):
///
/// - `memchr`: glibc `memchr` over every datagram for a byte none holds — touching each byte
///   once with SIMD, the ceiling of any reader (reference);
/// - `jsonserialization`: Foundation's `JSONSerialization` building its objects from every
///   datagram (reference: JSON only, no base64, no validation of the message);
/// - `parse`: IngestCore's parser as `IngestCore.receive` runs it (`DatagramParser`: the fast
///   paths, the general reader when they step aside) — UTF-8/ASCII check, JSON, message shape,
///   sample time, base64, payload decoding, one entry (name, type, value, payload bytes) per data
///   point — without streams or events (the goal's figure);
/// - `parse-scanner`: the same without the template fast path (every datagram read by the
///   single-pass scanner), as a sender whose layout changes every time would be parsed;
/// - `parse-general`: the same with the general reader alone (what IngestCore did before the
///   fast paths);
/// - `core`: `IngestCore.receive` for every datagram at its capture time, then `finish`: parsing
///   plus streams, chunks and events, each call's events returned as an array;
/// - `core-replay`: the core as `tether replay` drives it (``IngestAdapter``): no points kept in
///   chunks, each point handed to a closure as its parts and every other event to another;
/// - `core-live`: the core as `tether serve ingest` drives it (`IngestServer`): points packed into
///   chunks for the store, no `dataPoint` events, datagrams taken 64 at a time at one `now` (one
///   `recvmmsg` each, 3 µs apart: the live drain's pace).
enum ParsePlugin {
    /// CPU time of the calling thread.
    static func threadCPUSeconds() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    static func run(_ args: Arguments) throws -> Int32 {
        let setPath = try args.positional(0, "SET (a capture set folder)")
        let rounds = try args.int("rounds", default: 5)
        let only = args.string("stage")
        let loaded = try CaptureSetDirectory.load(setPath, verify: false)
        let port = loaded.manifest.interfaces.first { $0.role == .ingestUDP }?.ingestPort ?? IngestAdapter.standardPort

        // Every datagram to the ingest port, back to back in one buffer, with its capture time.
        var storage: [UInt8] = []
        var ranges: [Range<Int>] = []
        var times: [Int64] = []
        var source: DatagramSource?
        do {
            let reader = try CaptureFile.open(path: loaded.capturePath)
            var extractor = UDPExtractor()
            while try reader.withNextFrame({ view in
                let linkType = reader.interfaces[view.interfaceIndex].linkType
                guard case .datagram(let d) = extractor.datagram(from: view.data, linkType: linkType), d.destinationPort == port else { return }
                source = source ?? DatagramSource(address: d.sourceAddress.description, port: d.sourcePort)
                let start = storage.count
                storage += d.payload
                ranges.append(start..<storage.count)
                times.append(view.timestampNs)
            }) {}
        }
        let datagrams = ranges.count
        let bytes = storage.count
        guard datagrams > 0, let source else { throw UsageError(description: "no datagram to port \(port) in \(setPath)") }
        let origin = times[0]

        func stage(_ name: String, _ body: (UnsafeRawBufferPointer) -> Int) {
            if let only, only != name { return }
            var best = Double.infinity
            var bestCPU = Double.infinity
            var check = 0
            for _ in 0..<rounds {
                let start = monotonicSeconds()
                let startCPU = Self.threadCPUSeconds()
                check = storage.withUnsafeBytes { body($0) }
                bestCPU = min(bestCPU, Self.threadCPUSeconds() - startCPU)
                best = min(best, monotonicSeconds() - start)
            }
            report(["stage": name, "datagrams": "\(datagrams)", "bytes": "\(bytes)", "check": "\(check)",
                    "seconds": fixed(best, 6), "mb_per_s": fixed(Double(bytes) / best / 1e6, 1),
                    "cpu_seconds": fixed(bestCPU, 6), "cpu_mb_per_s": fixed(Double(bytes) / bestCPU / 1e6, 1),
                    "ns_per_datagram": fixed(bestCPU * 1e9 / Double(datagrams), 1)])
        }

        stage("memchr") { all in
            var found = 0
            for range in ranges {
                let d = UnsafeRawBufferPointer(rebasing: all[range])
                if memchr(d.baseAddress!, 0, d.count) != nil { found &+= 1 }
            }
            return found
        }
        stage("jsonserialization") { all in
            var objects = 0
            for range in ranges {
                let data = Data(UnsafeRawBufferPointer(rebasing: all[range]))
                if (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] != nil { objects &+= 1 }
            }
            return objects
        }
        func parse(template: Bool, scanner: Bool) -> (UnsafeRawBufferPointer) -> Int {
            { all in
                var parser = DatagramParser()
                parser.usesTemplate = template
                parser.usesScanner = scanner
                var points = 0
                for range in ranges {
                    points &+= parser.pointCount(parsing: UnsafeRawBufferPointer(rebasing: all[range]))
                }
                return points
            }
        }
        stage("parse", parse(template: true, scanner: true))
        stage("parse-scanner", parse(template: false, scanner: true))
        stage("parse-general", parse(template: false, scanner: false))
        let ingestSection = try loaded.manifest.decodeSection("ingest", as: IngestOverrides.self)
        stage("core") { all in
            var core = IngestCore(configuration: IngestAdapter.configuration(applying: ingestSection))
            var events = 0
            for (i, range) in ranges.enumerated() {
                events &+= core.receive(UnsafeRawBufferPointer(rebasing: all[range]), from: source, now: .nanoseconds(times[i] - origin)).count
            }
            events &+= core.finish(now: .nanoseconds(times[datagrams - 1] - origin)).count
            return events
        }
        stage("core-replay") { all in
            var core = IngestCore(configuration: IngestAdapter.configuration(applying: ingestSection), keepsChunkPoints: false)
            var events = 0
            for (i, range) in ranges.enumerated() {
                core.receive(UnsafeRawBufferPointer(rebasing: all[range]), from: source, now: .nanoseconds(times[i] - origin),
                             dataPoint: { _, _, _, _, _, _ in events &+= 1 }, emit: { _ in events &+= 1 })
            }
            events &+= core.finish(now: .nanoseconds(times[datagrams - 1] - origin)).count
            return events
        }
        stage("core-live") { all in
            var core = IngestCore(configuration: IngestAdapter.configuration(applying: ingestSection), reportsDataPoints: false)
            var points = 0
            var now = Duration.zero
            for (i, range) in ranges.enumerated() {
                if i % 64 == 0 { now += .microseconds(3) }
                core.receive(UnsafeRawBufferPointer(rebasing: all[range]), from: source, now: now) { event in
                    if case .chunkReady(let chunk) = event { points &+= chunk.dataPointCount }
                }
            }
            for event in core.finish(now: now) {
                if case .chunkReady(let chunk) = event { points &+= chunk.dataPointCount }
            }
            return points
        }
        return 0
    }
}
