import Foundation
@testable import IngestLive
import IngestCore
import IngestStore
import Testing

@testable import IngestIntegration
import LiveHosts

/// A data point reduced to what the simulator decides (the source port is the sender's).
private struct PointKey: Hashable, CustomStringConvertible {
    var timeNs: Int64
    var name: String
    var type: String
    var value: DataValue
    var payload: [UInt8]
    var description: String { "\(timeNs) \(name) \(type) \(value)" }
}

private func expectedPoints(_ schedule: [ScheduledDatagram]) -> [PointKey] {
    schedule.filter(\.carriesValidData).flatMap { datagram in
        datagram.entries.map { PointKey(timeNs: datagram.sampleTimeNs ?? -1, name: $0.name, type: $0.type, value: $0.value, payload: $0.payload) }
    }
}

private func keys(_ points: [DataPoint]) -> [PointKey] {
    points.map { PointKey(timeNs: $0.timeNs, name: $0.name, type: $0.type, value: $0.value, payload: $0.payload) }
}

private func temporaryStorePath() -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("tether-ingest-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder.appendingPathComponent("ingest.sqlite").path
}

/// Polls every 10 ms; the limit only keeps a broken test from hanging.
private func eventually(limit: Duration = .seconds(10), _ condition: () -> Bool) async -> Bool {
    let clock = ContinuousClock()
    let end = clock.now.advanced(by: limit)
    while clock.now < end {
        if condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
}

private func wallClockNow() -> Int64 { Int64(Date().timeIntervalSince1970 * 1e9) }

/// Real UDP sockets on loopback, free ports picked by the kernel.
@Suite(.serialized) struct IngestServerTests {
    @Test func storesExactlyTheDataPointsTheSimulatorSent() async throws {
        let path = temporaryStorePath()
        let server = IngestServer(configuration: .init(port: 0), sink: try SQLiteIngestStore(path: path))
        try await server.start()
        let port = try #require(server.port)
        let simulator = PluginSimulator(configuration: .init(rate: 100, duration: .seconds(1), seed: 5, startWallClockNs: wallClockNow()), host: "127.0.0.1", port: UInt16(port))
        let schedule = simulator.schedule

        let report = try await simulator.run(clock: ContinuousClock())
        #expect(report.sent == schedule.count)
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        let status = try await server.stop()

        let stored = try SQLiteIngestStore(path: path).dataPoints()
        #expect(stored.count == 600)
        #expect(keys(stored) == expectedPoints(schedule))
        #expect(status.counters.rejected == 0)
        #expect(status.dataPointsStored == 600)
        #expect(status.chunksPending == 0)
    }

    @Test func malformedDatagramsAreCountedAndTheirNeighboursKept() async throws {
        let sink = MemoryIngestSink()
        let server = IngestServer(configuration: .init(port: 0), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let faults: [TrafficFault] = [.notJSON, .badBase64, .oversize, .wrongPayloadLength, .missingFields]
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 50, duration: .seconds(1), seed: 11, startWallClockNs: wallClockNow(), faults: faults)).schedule()

        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        _ = try await sender.send(schedule, clock: ContinuousClock())
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        let status = try await server.stop()

        #expect(status.counters.rejectedByReason == [.notJSON: 1, .badBase64: 1, .oversize: 1, .payloadLength: 1, .missingField: 1])
        #expect(keys(sink.dataPoints) == expectedPoints(schedule))
        #expect(sink.dataPoints.count == 300)
    }

    @Test func shutdownStoresTheChunksStillBuffered() async throws {
        let path = temporaryStorePath()
        // Timers and limits far away: nothing is handed on until the drain.
        let core = IngestConfiguration(idleTimeout: .seconds(3600), flushInterval: .seconds(3600), flushBytes: .max)
        let server = IngestServer(configuration: .init(port: 0, core: core), sink: try SQLiteIngestStore(path: path))
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 200, duration: .milliseconds(50), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()

        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        #expect(server.status.chunksStored == 0)
        #expect(server.status.streamsOpen == 1)
        let status = try await server.stop()

        #expect(status.dataPointsStored == 60)
        #expect(keys(try SQLiteIngestStore(path: path).dataPoints()) == expectedPoints(schedule))
    }

    @Test func listensOnIPv6LoopbackToo() async throws {
        let sink = MemoryIngestSink()
        let server = IngestServer(configuration: .init(port: 0), sink: sink)
        let bound = try await server.start()
        let port = try #require(server.port)
        try #require(bound.contains("[::1]:\(port)"), "IPv6 loopback not bound: \(server.notices)")
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 100, duration: .milliseconds(100), startWallClockNs: wallClockNow())).schedule()
        let sender = try PluginSender(host: "::1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        try await server.stop()
        #expect(sink.dataPoints.count == 60)
        #expect(Set(sink.dataPoints.map(\.source.address)) == ["::1"])
        #expect(sink.closed)
    }

    @Test func secondServerOnABusyPortSaysSo() async throws {
        let first = IngestServer(configuration: .init(port: 0, ipv6Host: nil), sink: MemoryIngestSink())
        try await first.start()
        let port = try #require(first.port)
        let second = IngestServer(configuration: .init(port: port, ipv6Host: nil), sink: MemoryIngestSink())
        do {
            try await second.start()
            Issue.record("a second server bound a port in use")
        } catch let error as LiveHostError {
            #expect(error.step == "bind UDP")
            #expect(error.hint.contains("--port"))
        }
        try await first.stop()
    }

    @Test func aDatagramLongerThanTheReadBufferIsRefusedAsOversizeAndItsNeighbourKept() async throws {
        let sink = MemoryIngestSink()
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 10, duration: .milliseconds(100), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        // Longer than the 16 KiB the reader keeps of a datagram: it arrives cut, and is refused whole.
        try sender.send([UInt8](repeating: 0x20, count: 20_000))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.counters.datagrams == schedule.count + 1 })
        let status = try await server.stop()
        #expect(status.counters.rejectedByReason == [.oversize: 1])
        #expect(keys(sink.dataPoints) == expectedPoints(schedule))
    }

    @Test func aHostThatDoesNotResolveIsABindError() async throws {
        let server = IngestServer(configuration: .init(port: 0, ipv4Host: "no-such-host.invalid", ipv6Host: nil), sink: MemoryIngestSink())
        do {
            try await server.start()
            Issue.record("a server bound a host that does not exist")
        } catch let error as LiveHostError {
            #expect(error.step == "bind UDP")
            #expect(error.detail.contains("resolve no-such-host.invalid"))
        }
    }

    @Test func runReturnsOnceStopHasDrained() async throws {
        let sink = MemoryIngestSink()
        let server = IngestServer(configuration: .init(port: 0), sink: sink)
        try await server.start()
        let running = Task { try await server.run() }
        try await server.stop()
        try await running.value
        #expect(sink.closed)
    }

    @Test func stopBeforeStartStoresNothingAndSucceeds() async throws {
        let sink = MemoryIngestSink()
        let status = try await IngestServer(configuration: .init(port: 0), sink: sink).stop()
        #expect(status.counters.datagrams == 0)
        #expect(sink.chunks.isEmpty)
    }

    @Test func statusLineNamesRejectionReasons() {
        var counters = IngestCounters()
        counters.datagrams = 12
        counters.dataPoints = 60
        counters.rejectedByReason = [.oversize: 1, .notJSON: 1]
        counters.streamsStarted = 1
        let status = IngestServerStatus(counters: counters, chunksStored: 3, dataPointsStored: 60, chunksPending: 0, lastStoreError: nil, socketErrors: 0)
        #expect(status.description == "datagrams 12 · points 60 stored 60 · rejected 2 (not_json 1, oversize 1) · streams 1")
    }
}

/// A clock that moves only when told: shows the server measures time on the injected clock.
///
/// `@unchecked Sendable`: its one mutable field, `current`, is read and written only under `lock`
/// (the test advances it, the server's tasks read `now`).
private final class ManualClock: Clock, @unchecked Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (a: Instant, b: Instant) -> Bool { a.offset < b.offset }
    }
    private let lock = NSLock()
    private var current = Instant(offset: .zero)
    var now: Instant { lock.withLock { current } }
    var minimumResolution: Duration { .nanoseconds(1) }
    func advance(by duration: Duration) { lock.withLock { current = current.advanced(by: duration) } }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        while now < deadline { try await Task.sleep(for: .milliseconds(1)) }
    }
}

@Suite(.serialized) struct IngestServerTimeTests {
    @Test func coreTimeComesFromTheInjectedClock() async throws {
        let clock = ManualClock()
        let sink = MemoryIngestSink()
        // A flush interval no real clock reaches within the test's wait limit.
        let core = IngestConfiguration(idleTimeout: .seconds(3600), flushInterval: .seconds(600))
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil, core: core), sink: sink, clock: clock)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 100, duration: .milliseconds(30), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        #expect(server.status.chunksStored == 0)
        clock.advance(by: .seconds(600))
        #expect(await eventually { server.status.chunksStored == 1 })
        try await server.stop()
        #expect(sink.dataPoints.count == 18)
    }

    @Test func chunksAreStoredWhileRunningOnTheFlushTimer() async throws {
        let sink = MemoryIngestSink()
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 100, duration: .milliseconds(50), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.dataPointsStored == 30 })
        #expect(server.status.streamsOpen == 1)
        try await server.stop()
        #expect(sink.dataPoints.count == 30)
    }

    @Test func timeGoingBackwardsIsCountedAndItsPointsKept() async throws {
        let sink = MemoryIngestSink()
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 100, duration: .milliseconds(100), seed: 9, startWallClockNs: wallClockNow(), faults: [.timeBackwards])).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        let status = try await server.stop()
        #expect(status.counters.timeWentBackwards == 1)
        #expect(status.counters.rejected == 0)
        #expect(keys(sink.dataPoints) == expectedPoints(schedule))
    }
}

/// Holds every caller of ``passOnce()`` until ``open()``, then lets them all pass.
///
/// `@unchecked Sendable`: its one mutable field, `isOpen`, is read and written only while holding
/// `condition`'s lock.
private final class EventGate: @unchecked Sendable {
    private let condition = NSCondition()
    private var isOpen = false

    func passOnce() {
        condition.lock()
        defer { condition.unlock() }
        while !isOpen { condition.wait() }
    }

    func open() {
        condition.withLock {
            isOpen = true
            condition.broadcast()
        }
    }
}

/// A sink whose `accept` waits until opened, and which can refuse its first calls: stands in for
/// a store that is slow or failing.
///
/// `@unchecked Sendable`: every mutable field (`open`, `refusalsLeft`, `kept`, `calls`,
/// `isClosed`) is read and written only while holding `condition`'s lock, by the server's writer
/// and by the test.
private final class GatedSink: IngestSink, @unchecked Sendable {
    private let condition = NSCondition()
    private var open: Bool
    private var refusalsLeft: Int
    private var kept: [IngestChunk] = []
    private var calls = 0
    private var isClosed = false

    init(open: Bool = true, refusals: Int = 0) {
        self.open = open
        self.refusalsLeft = refusals
    }

    struct Refused: Error {}

    func accept(_ chunk: IngestChunk) throws { try accept([chunk]) }

    func accept(_ chunks: [IngestChunk]) throws {
        condition.lock()
        defer { condition.unlock() }
        calls += 1
        while !open { condition.wait() }
        if refusalsLeft > 0 {
            refusalsLeft -= 1
            throw Refused()
        }
        // A retry after a refusal brings the same chunks again: keep each once.
        for chunk in chunks where !kept.contains(chunk) { kept.append(chunk) }
    }

    func close() throws { condition.withLock { isClosed = true } }

    func openGate() {
        condition.withLock { open = true }
        condition.broadcast()
    }

    var acceptCalls: Int { condition.withLock { calls } }
    var dataPoints: [DataPoint] { condition.withLock { kept.flatMap(\.dataPoints) } }
    var closed: Bool { condition.withLock { isClosed } }
}

/// Storage runs beside reading, never in its way.
@Suite(.serialized) struct IngestServerWriterTests {
    @Test func readingGoesOnWhileTheSinkIsBlocked() async throws {
        let sink = GatedSink(open: false)
        // Every datagram its own chunk, so chunks queue up behind the blocked sink.
        let core = IngestConfiguration(idleTimeout: .seconds(3600), flushBytes: 1)
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil, core: core), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 200, duration: .milliseconds(100), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }

        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        #expect(await eventually { sink.acceptCalls == 1 })
        #expect(server.status.dataPointsStored == 0)
        #expect(server.status.chunksQueued > 0)
        #expect(server.status.description.contains("store queue"))

        sink.openGate()
        let status = try await server.stop()
        #expect(keys(sink.dataPoints) == expectedPoints(schedule))
        #expect(status.dataPointsStored == 120)
        #expect(status.chunksQueued == 0)
        #expect(status.chunksQueuedPeak > 0)
        #expect(sink.closed)
    }

    @Test func readingPausesWhileTheCoreIsBehindAndLosesNothing() async throws {
        let sink = MemoryIngestSink()
        // The core's loop blocks in its first event until the gate opens: reads pile up.
        let gate = EventGate()
        var configuration = IngestServer.Configuration(port: 0, ipv6Host: nil, core: .init(idleTimeout: .seconds(3600)))
        configuration.maxBatchesInFlight = 2
        let server = IngestServer(configuration: configuration, sink: sink) { _, _ in gate.passOnce() }
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 500, duration: .milliseconds(200), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        // Ten bursts apart in time, so the socket loop makes several reads of them.
        for burst in stride(from: 0, to: schedule.count, by: 10) {
            for datagram in schedule[burst..<min(burst + 10, schedule.count)] { try sender.send(datagram.bytes) }
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(await eventually { server.status.readPauses == 1 })
        #expect(server.status.description.contains("read pauses 1"))

        gate.open()
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        let status = try await server.stop()
        #expect(keys(sink.dataPoints) == expectedPoints(schedule))
        #expect(status.dataPointsStored == schedule.count * 6)
        #expect(status.kernelDrops ?? 0 == 0)
    }

    @Test func aStoreFallingBehindIsAnnounced() async throws {
        let sink = GatedSink(open: false)
        let core = IngestConfiguration(idleTimeout: .seconds(3600), flushBytes: 1)
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil, core: core, storeQueueWarningChunks: 5), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 200, duration: .milliseconds(100), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        #expect(!server.notices.contains { $0.contains("falling behind") })
        for datagram in schedule { try sender.send(datagram.bytes) }

        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        #expect(server.notices.filter { $0.contains("falling behind") }.count == 1)
        sink.openGate()
        let status = try await server.stop()
        #expect(status.dataPointsStored == 120)
    }

    @Test func aRefusedBatchIsKeptAndStoredWithTheNextChunks() async throws {
        let sink = GatedSink(refusals: 1)
        let core = IngestConfiguration(idleTimeout: .seconds(3600), flushBytes: 1)
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil, core: core), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 100, duration: .milliseconds(50), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        try sender.send(schedule[0].bytes)
        #expect(await eventually { server.status.chunksPending == 1 })
        #expect(server.status.lastStoreError != nil)
        for datagram in schedule.dropFirst() { try sender.send(datagram.bytes) }

        #expect(await eventually { server.status.dataPointsStored == 30 })
        #expect(server.status.chunksPending == 0)
        let status = try await server.stop()
        #expect(keys(sink.dataPoints) == expectedPoints(schedule))
        #expect(status.chunksPending == 0)
    }

    @Test func chunksTheSinkKeepsRefusingAreReportedOnStop() async throws {
        let sink = GatedSink(refusals: .max)
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil), sink: sink)
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 100, duration: .milliseconds(50), startWallClockNs: wallClockNow(), sendsEndMessage: false)).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        do {
            try await server.stop()
            Issue.record("stop succeeded although the sink refused every chunk")
        } catch let error as LiveHostError {
            #expect(error.step == "store chunks on shutdown")
            #expect(error.detail.contains("30 data points"))
        }
        #expect(server.status.chunksPending >= 1)
        #expect(sink.closed)
    }

    @Test func aStoreReceivesBatchesAndKeepsEveryPoint() async throws {
        let path = temporaryStorePath()
        let core = IngestConfiguration(idleTimeout: .seconds(3600), flushBytes: 1)
        let server = IngestServer(configuration: .init(port: 0, ipv6Host: nil, core: core), sink: try SQLiteIngestStore(path: path))
        try await server.start()
        let port = try #require(server.port)
        let schedule = PluginTrafficGenerator(configuration: .init(rate: 1000, duration: .milliseconds(500), startWallClockNs: wallClockNow())).schedule()
        let sender = try PluginSender(host: "127.0.0.1", port: UInt16(port))
        for datagram in schedule { try sender.send(datagram.bytes) }
        #expect(await eventually { server.status.counters.datagrams == schedule.count })
        let status = try await server.stop()
        let store = try SQLiteIngestStore(path: path)
        #expect(keys(try store.dataPoints()) == expectedPoints(schedule))
        #expect(try store.chunkCount() == status.chunksStored)
        #expect(status.dataPointsStored == 3000)
    }
}
