import Testing
@testable import IngestCore
import TetherTestSupport

// Fingerprints of everything IngestCore says over many seeded datagram schedules, so a change to
// how a stream keeps its state (not what it does) can be shown to change no output at all. The
// digests below were recorded on the core as it was BEFORE the stream's state was reshaped (rate
// learning as one enum, the open chunk as one optional value; issue "state that cannot contradict
// itself"); they must not change. A change of behaviour that is meant must come with a new
// recording and say so; a reshaping must leave them as they are.

/// A deterministic text of an event: every field, a chunk with its points and packed bytes.
func render(_ event: IngestEvent) -> String {
    switch event {
    case .dataPoint(let point): "point \(render(point))"
    case .pluginName(let source, let name): "name \(source) \(name.debugDescription)"
    case .endMessage(let source): "end \(source)"
    case .legacyV1(let source, let timeNs, let payload): "v1 \(source) \(String(describing: timeNs)) \(payload)"
    case .rejected(let source, let reason, let detail): "rejected \(source) \(reason.rawValue) \(detail.debugDescription)"
    case .streamStarted(let source): "started \(source)"
    case .streamEnded(let source, let cause): "ended \(source) \(cause.rawValue)"
    case .rateLearned(let source, let hertz): "rate \(source) \(hertz.bitPattern)"
    case .timeWentBackwards(let source, let previous, let current): "backwards \(source) \(previous) \(current)"
    case .gap(let source, let gap, let period): "gap \(source) \(gap) \(period)"
    case .chunkReady(let chunk):
        "chunk \(chunk.source) \(chunk.streamStartNs) #\(chunk.sequence) n=\(chunk.dataPointCount) bytes=\(chunk.byteCount) "
            + "packed=\(chunk.packedPoints.bytes) [" + chunk.dataPoints.map(render).joined(separator: ";") + "]"
    }
}

func render(_ point: DataPoint) -> String {
    "\(point.source) \(point.timeNs) \(point.name) \(point.type) \(render(point.value)) \(point.payload)"
}

func render(_ value: DataValue) -> String {
    switch value {
    case .float64(let x): "f\(x.bitPattern)"
    case .int64(let x): "i\(x)"
    case .vector2D(let x, let y): "v2(\(x.bitPattern),\(y.bitPattern))"
    case .vector3D(let x, let y, let z): "v3(\(x.bitPattern),\(y.bitPattern),\(z.bitPattern))"
    case .string(let text): "s\(text.debugDescription)"
    case .bytes(let bytes): "b\(bytes)"
    }
}

func render(_ counters: IngestCounters) -> String {
    let reasons = RejectionReason.allCases.map { "\($0.rawValue)=\(counters.rejectedByReason[$0] ?? 0)" }.joined(separator: ",")
    return "dg=\(counters.datagrams) acc=\(counters.accepted) rej=[\(reasons)] pts=\(counters.dataPoints) v1=\(counters.legacyV1Messages) "
        + "names=\(counters.nameMessages) ends=\(counters.endMessages) started=\(counters.streamsStarted) ended=\(counters.streamsEnded) "
        + "chunks=\(counters.chunks) back=\(counters.timeWentBackwards) gaps=\(counters.gaps)"
}

/// One plugin of a schedule: its own sending rate, which jitters, changes, pauses and bursts.
struct SimulatedPlugin {
    var source: DatagramSource
    var periodNs: Int64
    var nextSendNs: Int64
    var sampleNs: Int64
    var layout: Int
}

/// One seeded schedule: several plugins sending data with jittered periods, rate changes, gaps,
/// bursts sharing a `now`, sample times going back, names, ends, V1 messages, malformed and
/// oversize datagrams; timers met exactly, a nanosecond early, late or skipped (a datagram then
/// fires them); `finish` now and then. Every call's events, the deadline and the counters after
/// it are folded in.
struct IngestScheduleDriver {
    var rng: SplitMix64
    var core: IngestCore
    var plugins: [SimulatedPlugin] = []
    var nowNs: Int64 = 0
    var fingerprint = OutputFingerprint()
    let form: Int
    var rateEvents = 0
    var gapEvents = 0
    var chunkEvents = 0

    static let addresses = ["127.0.0.1", "::1", "10.0.0.2", "192.168.1.20"]

    init(seed: UInt64) {
        rng = SplitMix64(seed: seed)
        let configuration = IngestConfiguration(
            idleTimeout: .milliseconds(Int64(300 + seed % 4 * 900)),
            flushInterval: .milliseconds(Int64(20 + seed % 5 * 40)),
            flushBytes: [64, 200, 1_000, 10_000][Int(seed / 3 % 4)],
            maxDatagramBytes: seed % 7 == 0 ? 180 : 9216,
            gapFactor: [4, 2.5, 1.5][Int(seed % 3)])
        core = IngestCore(configuration: configuration, keepsChunkPoints: seed % 4 != 1, reportsDataPoints: seed % 5 != 2)
        form = Int(seed / 5 % 3)
        let count = 1 + rng.below(4)
        for index in 0..<count {
            let period = Int64(1 + rng.below(40)) * 1_000_000
            plugins.append(SimulatedPlugin(source: DatagramSource(address: Self.addresses[index], port: UInt16(50_000 + rng.below(3))),
                                           periodNs: period, nextSendNs: Int64(rng.below(20)) * 1_000_000,
                                           sampleNs: 1_674_790_238_000_000_000 + Int64(index) * 1_000_000_000, layout: rng.below(3)))
        }
        fingerprint.add("init \(seed) form \(form) \(configuration) \(core.keepsChunkPoints) \(core.reportsDataPoints)")
    }

    var now: Duration { .nanoseconds(nowNs) }

    mutating func fold(_ label: String, _ events: [IngestEvent]) {
        fingerprint.add(label)
        for event in events {
            fingerprint.add(render(event))
            switch event {
            case .rateLearned: rateEvents += 1
            case .gap: gapEvents += 1
            case .chunkReady: chunkEvents += 1
            default: break
            }
        }
        fingerprint.add("next \(String(describing: core.nextDeadline)) \(render(core.counters))")
    }

    /// Feeds a datagram through this schedule's API form.
    mutating func feed(_ datagram: [UInt8], from source: DatagramSource, label: String) {
        var events: [IngestEvent] = []
        let at = now
        switch form {
        case 0:
            events = core.receive(datagram, from: source, now: at)
        case 1:
            datagram.withUnsafeBytes { core.receive($0, from: source, now: at) { events.append($0) } }
        default:
            var parts: [String] = []
            datagram.withUnsafeBytes {
                core.receive($0, from: source, now: at, dataPoint: { source, timeNs, _, name, type, value in
                    parts.append("part \(source) \(timeNs) \(name) \(type) \(render(value))")
                }, emit: { event in
                    parts.append(render(event))
                })
            }
            fingerprint.add(label)
            for part in parts { fingerprint.add(part) }
            rateEvents += parts.filter { $0.hasPrefix("rate ") }.count
            gapEvents += parts.filter { $0.hasPrefix("gap ") }.count
            chunkEvents += parts.filter { $0.hasPrefix("chunk ") }.count
            fingerprint.add("next \(String(describing: core.nextDeadline)) \(render(core.counters))")
            return
        }
        fold(label, events)
    }

    mutating func timeout(_ label: String) {
        var events: [IngestEvent] = []
        let at = now
        if form == 1 {
            core.handleTimeout(now: at) { events.append($0) }
        } else {
            events = core.handleTimeout(now: at)
        }
        fold(label, events)
    }

    static func timeText(_ ns: Int64) -> String {
        let seconds = ns / 1_000_000_000
        let fraction = ns % 1_000_000_000
        let digits = String(fraction)
        return "\(seconds)." + String(repeating: "0", count: 9 - digits.count) + digits
    }

    /// A data datagram of plugin `index`, in one of a few layouts.
    mutating func dataDatagram(_ index: Int) -> [UInt8] {
        let plugin = plugins[index]
        let time = Self.timeText(plugin.sampleNs)
        let x = Double(rng.below(1000)) / 7
        switch (plugin.layout + (rng.chance(0.1) ? 1 : 0)) % 4 {
        case 0:
            return floatMessage(time: time, [("v1/1/yaw", x), ("v1/1/pitch", x + 1), ("v1/1/roll", x + 2)])
        case 1:
            return floatMessage(time: time, [("v1/2/speed", x)])
        case 2:
            let position: [UInt8] = float64Bytes(x) + float64Bytes(1) + float64Bytes(2)
            let label: [UInt8] = Array("tick \(rng.below(9))".utf8)
            let count: [UInt8] = [0, 0, 0, 0, 0, 0, 0, UInt8(rng.below(200))]
            return sampleDataMessage(time: time, entries: [
                (name: "v1/1/pos", type: "vector_3d", payload: position),
                (name: "v1/1/label", type: "string", payload: label),
                (name: "v1/1/count", type: "int64", payload: count),
            ])
        default:
            return Array("{\"t\":\"\(time)\",\"d\":[]}".utf8)
        }
    }

    mutating func oddDatagram() -> [UInt8] {
        switch rng.below(8) {
        case 0: return bytes(#"{"name":"Plugin \#(rng.below(3))"}"#)
        case 1: return bytes(#"{"end":"true"}"#)
        case 2: return bytes(#"{"t": "1.5", "d": "AAAA"}"#)
        case 3: return bytes("{")
        case 4: return bytes(#"{"t":"1","d":[{"n":"x","t":"float64","p":"!!!!"}]}"#)
        case 5: return [UInt8](repeating: 0x20, count: 200) + bytes(#"{"name":"padded"}"#)
        case 6: return bytes(#"{"t":"not a time","d":[]}"#)
        default: return [0xff, 0xfe, 0x7b]
        }
    }

    /// Sends from the plugin due first, after the timers due before it (met, missed or skipped).
    mutating func step() {
        let index = plugins.indices.min { plugins[$0].nextSendNs < plugins[$1].nextSendNs }!
        let sendAt = plugins[index].nextSendNs
        if let deadline = core.nextDeadline?.nanosecondsForTests, deadline <= sendAt {
            switch rng.below(4) {
            case 0:
                nowNs = max(nowNs, deadline - 1)
                timeout("a nanosecond early")
                nowNs = max(nowNs, deadline)
                timeout("at the deadline")
            case 1:
                nowNs = max(nowNs, deadline)
                timeout("at the deadline")
            case 2:
                nowNs = max(nowNs, deadline + Int64(rng.below(5_000_000)))
                timeout("late")
            default:
                break // the datagram fires it
            }
        }
        nowNs = max(nowNs, sendAt)
        let roll = rng.below(100)
        if roll < 6 {
            feed(oddDatagram(), from: plugins[index].source, label: "odd")
        } else if roll < 7 {
            fold("finish", core.finish(now: now))
        } else if roll < 8 {
            // A caller's clock that went back: taken as the latest seen.
            let earlier = Duration.nanoseconds(nowNs - Int64(rng.below(50_000_000)))
            fold("earlier", core.handleTimeout(now: earlier))
        } else {
            let datagram = dataDatagram(index)
            feed(datagram, from: plugins[index].source, label: "data \(index)")
        }
        var plugin = plugins[index]
        plugin.sampleNs += rng.chance(0.04) ? -Int64(rng.below(3)) * plugin.periodNs : plugin.periodNs
        let jitter = Int64(rng.below(Int(plugin.periodNs / 5) + 1)) - plugin.periodNs / 10
        var next = plugin.nextSendNs + plugin.periodNs + jitter
        switch rng.below(100) {
        case 0..<3: next += plugin.periodNs * Int64(3 + rng.below(8)) // a gap
        case 3..<5: plugin.periodNs = max(1_000_000, plugin.periodNs * Int64(1 + rng.below(3)) / Int64(1 + rng.below(3))) // a new rate
        case 5..<8: next = plugin.nextSendNs // a burst: delivered with the same `now`
        case 8: next += 2_000_000_000 // silent past the idle timeout
        default: break
        }
        plugin.nextSendNs = max(next, plugin.nextSendNs)
        plugins[index] = plugin
    }

    mutating func run(steps: Int) {
        for _ in 0..<steps { step() }
        var rounds = 0
        while let deadline = core.nextDeadline?.nanosecondsForTests, rounds < 100 {
            nowNs = max(nowNs, deadline)
            timeout("drain")
            rounds += 1
        }
        fold("finish at the end", core.finish(now: now))
    }
}

extension SplitMix64 {
    /// A number in 0..<bound.
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(max(1, bound))) }
}

extension Duration {
    var nanosecondsForTests: Int64 { components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000 }
}

@Suite struct StateEquivalenceTests {
    /// Recorded before the state was reshaped; must not change (see the top of this file).
    static let scheduleDigest: UInt64 = 0x202da9c96f614f7d

    /// Hundreds of schedules, all three API forms, points kept or counted, reported or not: every
    /// event, the deadline and the counters after every call folded into one digest. The schedules
    /// must also learn rates, re-learn them, see gaps and hand on chunks, or the digest would prove
    /// little about the stream's state.
    @Test func schedulesGiveTheRecordedDigest() {
        var digest = OutputFingerprint()
        var rates = 0, gaps = 0, chunks = 0
        for seed: UInt64 in 1...300 {
            var driver = IngestScheduleDriver(seed: seed)
            driver.run(steps: 400)
            digest.add("\(seed) \(driver.fingerprint.hex)")
            rates += driver.rateEvents
            gaps += driver.gapEvents
            chunks += driver.chunkEvents
        }
        #expect(rates > 300, "rates learned: \(rates)")
        #expect(gaps > 100, "gaps: \(gaps)")
        #expect(chunks > 1_000, "chunks: \(chunks)")
        #expect(digest.value == Self.scheduleDigest, "digest \(digest.hex)")
    }
}
