import CaptureKit
import CaptureSet
import Testing
@testable import ReplayKit
import BehaviourTrace

/// A reader over frames held in memory, so engine tests need no file.
fileprivate final class MemoryReader: CaptureReader {
    let format = CaptureFormat.pcapng
    let path = "<memory>"
    let interfaces: [CaptureInterface]
    var warnings: [CaptureWarning]
    var bytesRead: UInt64 = 0
    private var frames: [CaptureFrame]
    private var position = 0

    init(interfaces: [CaptureInterface] = [CaptureInterface(linkType: .ethernet)], frames: [CaptureFrame], warnings: [CaptureWarning] = []) {
        self.interfaces = interfaces
        self.frames = frames
        self.warnings = warnings
    }

    func next() throws(CaptureError) -> CaptureFrame? {
        guard position < frames.count else { return nil }
        defer { position += 1 }
        bytesRead += UInt64(frames[position].data.count)
        return frames[position]
    }

    func withNextFrame(_ body: (FrameView) throws -> Void) throws -> Bool {
        guard let frame = try next() else { return false }
        try frame.data.withUnsafeBytes { bytes in
            try body(FrameView(number: frame.number, interfaceIndex: frame.interfaceIndex, timestampNs: frame.timestampNs,
                               originalLength: frame.originalLength, data: bytes, flags: frame.flags))
        }
        return true
    }
}

/// Frames at the given capture timestamps (ns since the epoch), numbered from 1.
fileprivate func frames(at timestamps: [Int64], interface: Int = 0) -> [CaptureFrame] {
    timestamps.enumerated().map { i, t in
        CaptureFrame(number: i + 1, interfaceIndex: interface, timestampNs: t, originalLength: 1, data: [UInt8(i & 0xff)])
    }
}

/// A core stand-in: arms a one-shot timer `delay` after each frame it is given (if `armOnFrame`),
/// and writes every call into the trace.
fileprivate struct TimerAdapter: CoreAdapter {
    var core: TraceName = "test"
    var delay: Duration = .seconds(1)
    var armOnFrames: Set<Int> = [1]
    /// When set, a timeout leaves the deadline where it was (a broken core).
    var stuck = false
    /// When set, a timeout arms the timer again this much later (a timer setting of 1 ns).
    var rearm: Duration?
    var wantedLinkTypes: Set<LinkType> = [.ethernet]
    var nextDeadline: Duration?

    func input(for interface: ReplayInterface) -> ReplayInput {
        wantedLinkTypes.contains(interface.linkType) ? .raw : .ignore
    }

    mutating func frame(_ frame: ReplayFrame, bytes _: RawSpan, now: Duration) -> [TraceEvent] {
        if armOnFrames.contains(frame.number) { nextDeadline = now + delay }
        return [TraceEvent(timeNs: now.replayNanoseconds, core: core, event: "frame", fields: ["n": .int(Int64(frame.number))])]
    }

    mutating func timeout(now: Duration) -> [TraceEvent] {
        if !stuck { nextDeadline = rearm.map { now + $0 } }
        return [TraceEvent(timeNs: now.replayNanoseconds, core: core, event: "timeout")]
    }

    mutating func finish(now: Duration) -> [TraceEvent] {
        [TraceEvent(timeNs: now.replayNanoseconds, core: core, event: "finish")]
    }
}

/// `(t_ns, event, frame number or nil)` of each trace event, for whole-trace comparisons.
fileprivate func steps(_ trace: [TraceEvent]) -> [String] {
    trace.map { e in
        if case .int(let n) = e.fields["n"] { return "\(e.timeNs) \(e.core).\(e.event) #\(n)" }
        return "\(e.timeNs) \(e.core).\(e.event)"
    }
}

fileprivate let base: Int64 = 1_700_000_000_000_000_000

@Test func deadlineDoesNotFireForAFrameOneNanosecondBeforeIt() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter()])
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 999_999_999, base + 2_000_000_000])))
    #expect(steps(trace) == [
        "0 test.frame #1",
        "999999999 test.frame #2",
        "1000000000 test.timeout",
        "2000000000 test.frame #3",
        "2000000000 test.finish",
    ])
    #expect(summary.timeoutsFired == 1)
}

@Test func deadlineAtAFramesInstantFiresBeforeThatFrame() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter()])
    let (trace, _) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 1_000_000_000])))
    #expect(steps(trace) == ["0 test.frame #1", "1000000000 test.timeout", "1000000000 test.frame #2", "1000000000 test.finish"])
}

@Test func deadlineAfterTheLastFrameFiresBeforeFinish() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(delay: .milliseconds(1500))])
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base])))
    #expect(steps(trace) == ["0 test.frame #1", "1500000000 test.timeout", "1500000000 test.finish"])
    #expect(summary.lastFrameTimeNs == 0)
    #expect(summary.endTimeNs == 1_500_000_000)
}

@Test func deadlineBeyondTheDrainHorizonDoesNotFire() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(delay: .seconds(61))], drainHorizon: .seconds(60))
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base])))
    #expect(steps(trace) == ["0 test.frame #1", "0 test.finish"])
    #expect(summary.timeoutsFired == 0)
}

@Test func aTimerStillSetWhenTheDrainEndsIsNamedInTheSummaryAndAWarning() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(delay: .seconds(61), armOnFrames: [2])], drainHorizon: .seconds(60))
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 2_000_000_000])))
    #expect(steps(trace) == ["0 test.frame #1", "2000000000 test.frame #2", "2000000000 test.finish"])
    let left = TimerLeftSet(core: "test", dueNs: 63_000_000_000, drainEndNs: 62_000_000_000, horizonNs: 60_000_000_000,
                            timeoutsSinceLastInput: 0)
    #expect(summary.timersLeftSet == [left])
    #expect(summary.warnings == [left.description])
    #expect(left.description.contains("due at 63.000 s of virtual time, when the drain ended at 62.000 s (60.000 s after the last input)"))
    #expect(left.description.contains("reaching past 61.000 s after the last input (tether replay --drain-horizon"))
}

@Test func aDrainLongEnoughForTheTimerLeavesNoWarning() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(delay: .seconds(61))], drainHorizon: .seconds(61))
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base])))
    #expect(steps(trace) == ["0 test.frame #1", "61000000000 test.timeout", "61000000000 test.finish"])
    #expect(summary.timersLeftSet.isEmpty)
    #expect(summary.warnings.isEmpty)
}

@Test func aTimerThatSetsItselfAgainIsNamedWithTheTimeoutsItFiredThroughTheDrain() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(delay: .seconds(10), rearm: .seconds(10))], drainHorizon: .seconds(35))
    let (_, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base])))
    #expect(summary.timeoutsFired == 3)
    #expect(summary.timersLeftSet == [TimerLeftSet(core: "test", dueNs: 40_000_000_000, drainEndNs: 35_000_000_000,
                                                   horizonNs: 35_000_000_000, timeoutsSinceLastInput: 3)])
    #expect(summary.warnings.first?.contains("3 timeout(s) had fired since its last input") == true)
}

@Test func aReplayStoppedForARunawayTimerReportsNoTimerLeftSet() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(stuck: true)])
    let (_, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base])))
    #expect(summary.runawayTimers.count == 1)
    #expect(summary.timersLeftSet.isEmpty)
}

@Test func aHandleNameBuiltInCodeThatIsNoUUIDIsWarnedAbout() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(armOnFrames: [])],
                              gattHandles: [ManifestGATTHandle(handle: 42, serviceUUID: "0x180d", characteristicUUID: "heart-rate")])
    let (_, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base])))
    #expect(summary.warnings == ["gatt_handles[0].characteristic_uuid (handle 42): \"heart-rate\" is not a Bluetooth UUID: write 0x2a37, "
        + "0x12345678 or the full 6a4ecd28-667b-11e3-949a-0800200c9a66 form; the handle was left unnamed."])
}

/// An app in the loop that waits for instants (as a sleep on a session's clock does) and, woken,
/// makes a call to core `test`.
fileprivate final class Alarm: ClosedLoopInputs {
    var wakes: [Duration]
    /// When set, a wake-up leaves the instant where it was (a broken app clock).
    let forgetful: Bool
    var queued: [ScheduledAPICall] = []

    init(wakes: [Duration], forgetful: Bool = false) {
        self.wakes = wakes
        self.forgetful = forgetful
    }

    var nextWake: Duration? { wakes.min() }

    func wake(now: Duration) {
        queued.append(ScheduledAPICall(at: now, core: "test", call: "woken", arguments: [:]))
        if !forgetful { wakes.removeAll { $0 <= now } }
    }

    func nextCall(now: Duration) -> ScheduledAPICall? {
        queued.isEmpty ? nil : queued.removeFirst()
    }
}

@Test func theAppIsWokenAtItsInstantBetweenFramesAfterTheCoresDeadlineOfThatInstant() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(delay: .milliseconds(1500))])
    let alarm = Alarm(wakes: [.milliseconds(1700), .milliseconds(1500), .seconds(5)])
    engine.closedLoop = alarm
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 1_000_000_000, base + 2_000_000_000])))
    #expect(steps(trace) == [
        "0 test.frame #1", "1000000000 test.frame #2",
        "1500000000 test.timeout", "1500000000 test.frame #0",
        "1700000000 test.frame #0",
        "2000000000 test.frame #3",
        "5000000000 test.frame #0",  // during the drain
        "5000000000 test.finish",
    ])
    #expect(summary.appWakeUps == 3)
    #expect(summary.closedLoopCallsDelivered == 3)
}

@Test func anAppWakeUpThatDoesNotAdvanceStopsTheReplayNamingTheApp() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(armOnFrames: [])])
    engine.closedLoop = Alarm(wakes: [.seconds(1)], forgetful: true)
    var calls = 0
    let summary = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 3_000_000_000]))) { event in
        if event.event == "frame", event.fields["n"] == .int(0) { calls += 1 }
    }
    // Every wake-up at one instant: the dense rule's limit, then the stop.
    #expect(summary.runawayTimers == [RunawayTimers(core: "app", timeouts: RunawayTimers.consecutiveLimit, fromNs: 1_000_000_000,
                                                    toNs: 1_000_000_000, deadlineDidNotAdvance: false)])
    #expect(calls == RunawayTimers.consecutiveLimit)
    #expect(summary.framesFed == 1)
}

@Test func simultaneousDeadlinesFireInAdapterOrder() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(core: "a"), TimerAdapter(core: "b")])
    let (trace, _) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 5_000_000_000])))
    #expect(steps(trace) == [
        "0 a.frame #1", "0 b.frame #1",
        "1000000000 a.timeout", "1000000000 b.timeout",
        "5000000000 a.frame #2", "5000000000 b.frame #2",
        "5000000000 a.finish", "5000000000 b.finish",
    ])
}

@Test func earlierDeadlineOfALaterAdapterFiresFirst() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(core: "slow", delay: .seconds(2)), TimerAdapter(core: "fast", delay: .seconds(1))])
    let (trace, _) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 3_000_000_000])))
    #expect(steps(trace) == [
        "0 slow.frame #1", "0 fast.frame #1",
        "1000000000 fast.timeout", "2000000000 slow.timeout",
        "3000000000 slow.frame #2", "3000000000 fast.frame #2",
        "3000000000 slow.finish", "3000000000 fast.finish",
    ])
}

@Test func frameStampedEarlierThanItsPredecessorIsFedAtThePredecessorsInstant() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(armOnFrames: [])])
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 500, base + 200])))
    #expect(steps(trace) == ["0 test.frame #1", "500 test.frame #2", "500 test.frame #3", "500 test.finish"])
    #expect(summary.framesOutOfOrder == 1)
}

@Test func framesOfAnIgnoredInterfaceAreReadButNotFed() throws {
    let reader = MemoryReader(
        interfaces: [CaptureInterface(linkType: .ethernet), CaptureInterface(linkType: .bluetoothHCIH4WithPHDR)],
        frames: frames(at: [base]) + [CaptureFrame(number: 2, interfaceIndex: 1, timestampNs: base + 10, originalLength: 1, data: [1])])
    var engine = ReplayEngine(adapters: [TimerAdapter(armOnFrames: [])])
    let (trace, summary) = try engine.run(reader: reader)
    #expect(steps(trace) == ["0 test.frame #1", "10 test.finish"])
    #expect(summary.framesRead == 2)
    #expect(summary.framesFed == 1)
}

@Test func adapterThatKeepsItsExpiredDeadlineStopsTheReplayNamingTheCore() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(stuck: true)])
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 3_000_000_000])))
    #expect(steps(trace) == ["0 test.frame #1", "1000000000 test.timeout", "1000000000 test.finish"])
    #expect(summary.runawayTimers == [RunawayTimers(core: "test", timeouts: 1, fromNs: 1_000_000_000, toNs: 1_000_000_000, deadlineDidNotAdvance: true)])
    #expect(summary.framesFed == 1)
}

@Test func adapterWhoseTimerFiresEveryNanosecondStopsTheReplayNamingTheCore() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(rearm: .nanoseconds(1))])
    var timeouts = 0
    let summary = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 3_000_000_000]))) { event in
        if event.event == "timeout" { timeouts += 1 }
    }
    let runaway = try #require(summary.runawayTimers.first)
    #expect(runaway.core == "test")
    #expect(runaway.timeouts == RunawayTimers.consecutiveLimit)
    #expect(runaway.deadlineDidNotAdvance == false)
    #expect(timeouts == RunawayTimers.consecutiveLimit)
    #expect(runaway.description.contains("1 ns apart"))
}

@Test func aTimerOfAMillisecondOrMoreIsNotARunaway() throws {
    // 199,001 timeouts in a row (from 1 s to 200 s), a millisecond apart: a busy core, not a looping one.
    var engine = ReplayEngine(adapters: [TimerAdapter(rearm: .milliseconds(1))], drainHorizon: .seconds(200))
    let summary = try engine.run(reader: MemoryReader(frames: frames(at: [base]))) { _ in }
    #expect(summary.runawayTimers.isEmpty)
    #expect(summary.timeoutsFired == 199_001)
}

@Test func readerWarningsReachTheSummary() throws {
    let warning = CaptureWarning(kind: .truncated, file: "<memory>", offset: 99, message: "the last block is cut off")
    var engine = ReplayEngine(adapters: [TimerAdapter(armOnFrames: [])])
    let (_, summary) = try engine.run(reader: MemoryReader(frames: frames(at: [base]), warnings: [warning]))
    #expect(summary.warnings == [warning.description])
}

@Test func manifestRoleAndPortReachTheAdapter() throws {
    struct RoleProbe: CoreAdapter {
        var core: TraceName = "probe"
        var nextDeadline: Duration? { nil }
        func input(for interface: ReplayInterface) -> ReplayInput { interface.role == .ingestUDP ? .raw : .ignore }
        mutating func frame(_ frame: ReplayFrame, bytes _: RawSpan, now: Duration) -> [TraceEvent] {
            [TraceEvent(timeNs: frame.virtualTimeNs, core: core, event: "frame", fields: [
                "port": .int(Int64(frame.interface.parameter("ingest_port", as: UInt16.self) ?? 0)), "name": .string(frame.interface.name ?? ""),
                "t_abs": .int(frame.timestampNs),
            ])]
        }
        mutating func timeout(now: Duration) -> [TraceEvent] { [] }
        mutating func finish(now: Duration) -> [TraceEvent] { [] }
    }
    var engine = ReplayEngine(
        adapters: [RoleProbe()],
        manifestInterfaces: [ManifestInterface(index: 0, name: "lo", linkType: .ethernet, role: .ingestUDP, ingestPort: 4000)])
    let (trace, _) = try engine.run(reader: MemoryReader(frames: frames(at: [base + 7])))
    #expect(trace == [TraceEvent(timeNs: 0, core: "probe", event: "frame", fields: ["port": .int(4000), "name": .string("lo"), "t_abs": .int(base + 7)])])
}

@Test func emptyCaptureStillFinishesEveryAdapter() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter()])
    let (trace, summary) = try engine.run(reader: MemoryReader(frames: []))
    #expect(steps(trace) == ["0 test.finish"])
    #expect(summary.framesRead == 0)
    #expect(summary.firstTimestampNs == nil)
}

/// Asks for dissected frames on HCI interfaces and writes the ATT PDUs it is given.
fileprivate struct ATTProbe: CoreAdapter {
    var core: TraceName = "probe"
    var dissectsFrames: Bool { true }
    var nextDeadline: Duration? { nil }
    func input(for interface: ReplayInterface) -> ReplayInput {
        interface.linkType == .bluetoothHCIH4WithPHDR ? .dissected : .ignore
    }
    mutating func frame(_ frame: ReplayFrame, bytes _: RawSpan, now: Duration) -> [TraceEvent] {
        (frame.dissected?.att ?? []).map { att in
            TraceEvent(timeNs: now.replayNanoseconds, core: core, event: "att", fields: [
                "opcode": .int(Int64(att.opcode.rawValue)), "handle": .int(Int64(att.handle ?? 0)),
                "value": .array(att.value.map { .int(Int64($0)) }), "direction": .string(att.direction.rawValue),
            ])
        }
    }
    mutating func timeout(now: Duration) -> [TraceEvent] { [] }
    mutating func finish(now: Duration) -> [TraceEvent] { [] }
}

@Test func adapterAskingForDissectionGetsTheATTRecordsOfItsFrames() throws {
    // H4 with phdr (received) → ACL handle 0x040, first fragment → L2CAP CID 4 → ATT notification
    // of handle 0x0010 with value 01 02 03.
    let notification: [UInt8] = [0, 0, 0, 1, 0x02, 0x40, 0x20, 10, 0, 6, 0, 4, 0, 0x1B, 0x10, 0x00, 1, 2, 3]
    let reader = MemoryReader(
        interfaces: [CaptureInterface(linkType: .ethernet), CaptureInterface(linkType: .bluetoothHCIH4WithPHDR)],
        frames: frames(at: [base]) + [CaptureFrame(number: 2, interfaceIndex: 1, timestampNs: base + 40, originalLength: notification.count, data: notification)])
    var engine = ReplayEngine(adapters: [TimerAdapter(armOnFrames: []), ATTProbe()])
    let (trace, summary) = try engine.run(reader: reader)
    #expect(trace.filter { $0.core == "probe" } == [
        TraceEvent(timeNs: 40, core: "probe", event: "att", fields: [
            "opcode": .int(0x1B), "handle": .int(0x10), "value": .array([.int(1), .int(2), .int(3)]), "direction": .string("received"),
        ]),
    ])
    #expect(summary.framesFed == 2)
}

@Test func progressIsReportedEveryNFrames() throws {
    var engine = ReplayEngine(adapters: [TimerAdapter(armOnFrames: [])])
    // `nonisolated(unsafe)`: one thread only; `run(reader:)` calls `progress` synchronously on
    // the test's own thread, and `seen` is read after `run` has returned.
    nonisolated(unsafe) var seen: [Int] = []
    engine.progressEvery = 2
    engine.progress = { seen.append($0.framesRead) }
    _ = try engine.run(reader: MemoryReader(frames: frames(at: [base, base + 1, base + 2, base + 3, base + 4])))
    #expect(seen == [2, 4])
}

/// `replayNanoseconds` takes a shortcut for times of at least zero; every time gives what
/// `components` gives, saturated at the ends of Int64.
@Test func replayNanosecondsAreTheComponentsNanoseconds() {
    var samples: [Duration] = [.zero, .nanoseconds(1), .seconds(3600), .nanoseconds(Int64.max), .nanoseconds(Int64.min),
                               .seconds(Int64.max), .seconds(Int64.min), .seconds(-1) + .nanoseconds(1), Duration(attoseconds: 999_999_999),
                               Duration(attoseconds: -1), Duration(secondsComponent: 18_446_744_073, attosecondsComponent: 709_551_615_999_999_999)]
    var state: UInt64 = 41
    func next() -> UInt64 {
        // SplitMix64: a seeded sequence, the same on every run.
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    for _ in 0..<5_000 {
        let seconds = Int64(bitPattern: next()) % 10_000_000_000_000
        samples.append(Duration(secondsComponent: seconds, attosecondsComponent: Int64(next() % 1_000_000_000_000_000_000)))
        samples.append(.nanoseconds(Int64(bitPattern: next())))
    }
    for duration in samples {
        let (seconds, attoseconds) = duration.components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        let (sum, overflow2) = ns.addingReportingOverflow(attoseconds / 1_000_000_000)
        let expected = overflow || overflow2 ? (seconds < 0 ? Int64.min : .max) : sum
        #expect(duration.replayNanoseconds == expected, "\(duration)")
    }
}

/// Keeps every frame it is handed, with a copy of its bytes: what an adapter that answers a frame
/// later does.
fileprivate struct KeepingAdapter: CoreAdapter {
    var core: TraceName = "keeper"
    var nextDeadline: Duration? { nil }
    var kept: [(frame: ReplayFrame, bytes: [UInt8])] = []

    func input(for interface: ReplayInterface) -> ReplayInput { .raw }

    mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent] {
        kept.append((frame, bytes.withUnsafeBytes { Array($0) }))
        return []
    }

    mutating func timeout(now: Duration) -> [TraceEvent] { [] }
    mutating func finish(now: Duration) -> [TraceEvent] { [] }
}

/// A frame outlives the call it was handed in and crosses to another task whole: it is a value
/// holding nothing of the reader's buffer; the bytes came beside it and were copied.
@Test func aFrameAnAdapterKeepsIsTheFrameItWasHandedAndCrossesTasks() async throws {
    var engine = ReplayEngine(adapters: [KeepingAdapter()])
    let captured = [
        CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: base, originalLength: 3, data: [1, 2, 3]),
        CaptureFrame(number: 2, interfaceIndex: 0, timestampNs: base + 2_500, originalLength: 2, data: [0xfe, 0xff]),
    ]
    _ = try engine.run(reader: MemoryReader(frames: captured))
    let adapter = try #require(engine.adapters.first as? KeepingAdapter)
    let frames = adapter.kept.map(\.frame)
    let elsewhere = await Task.detached { frames.map { "\($0.number) \($0.virtualTimeNs) \($0.timestampNs) \($0.interface.linkType)" } }.value
    #expect(elsewhere == ["1 0 \(base) \(LinkType.ethernet)", "2 2500 \(base + 2_500) \(LinkType.ethernet)"])
    #expect(adapter.kept.map(\.bytes) == [[1, 2, 3], [0xfe, 0xff]])
    #expect(frames[0] != frames[1])
}

/// An `api-calls` frame that is not a JSON object reaches its adapter as a malformed record naming
/// the frame, as `APICallRecord(parsing:frame:)` reads it for a frame built by hand.
@Test func aMalformedAPICallRecordNamesItsFrame() throws {
    var engine = ReplayEngine(adapters: [KeepingAdapter()])
    let calls = CaptureInterface(linkType: .user0)
    _ = try engine.run(reader: MemoryReader(interfaces: [calls], frames: [
        CaptureFrame(number: 1, interfaceIndex: 0, timestampNs: base, originalLength: 9, data: Array(#"{"call":1"#.utf8)),
    ]))
    let kept = try #require((engine.adapters.first as? KeepingAdapter)?.kept.first)
    let record = kept.frame.apiCallRecord()
    guard case .malformed(let reason) = record else { Issue.record("read as \(record)"); return }
    #expect(reason.contains("frame 1"))
    #expect(record == APICallRecord(parsing: kept.bytes, frame: 1))
    #expect(APICallRecord(parsing: Array(#"{"call":"send"}"#.utf8), frame: 4) == .parsed(["call": .string("send")]))
}

/// A frame built by hand without a record says so when asked for one, rather than reading as a
/// record of no call.
@Test func aFrameBuiltWithoutARecordSaysItHasNone() {
    let frame = ReplayFrame(number: 12, virtualTimeNs: 0, timestampNs: 0, interface: ReplayInterface(index: 0, linkType: .user0, role: .apiCalls))
    guard case .malformed(let reason) = frame.apiCallRecord() else { Issue.record("read as a record"); return }
    #expect(reason.hasPrefix("frame 12: no API-call record"))
}
