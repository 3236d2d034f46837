import MonkeyCTrace
import TetherIntegrations
import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import MonkeyC
import SessionCore

/// A synthetic session-link session as the phone's HCI tap records it, mixing every channel: the
/// phone host's start (its `start`, `set_paired`, `activate` records; LE connection, MTU 247,
/// discovery of the session service, CCCD write and its response), then for `seconds` seconds:
/// a message with a reply every second (the watch's app echoes it), message data every 30 s,
/// the application context every 10 s, a user info every 15 s from the phone and one every 20 s
/// from the watch, complication info every 60 s, and a 16 KB file every 5 minutes.
///
/// Both sides are real ``SessionCore``s: the phone through ``SessionDriver`` with the same API-call
/// records that go into the capture (seeded), the watch directly. Every phone write in the file is
/// what the phone core emitted; every notification what the watch core emitted.
struct SessionBenchSession {
    /// Length of the session.
    var seconds: Int

    static let phone = SessionDeviceID("0ff1ce00-0000-4000-8000-000000000001")!
    static let watch = SessionDeviceID("0ff1ce00-0000-4000-8000-0000000000a1")!
    static let seed: UInt64 = 0x5E55_1011
    static let mtu = 247

    /// The session start frames of ``MessagingSession``, with the Connect IQ UUIDs replaced by the
    /// session link's: the same handles (write value 0x0010, notify value 0x0012, CCCD 0x0013).
    static func sessionStart() -> [(offsetUs: Int64, hex: String)] {
        func le(_ uuid: String) -> String {
            let digits = Array(uuid.replacingOccurrences(of: "-", with: "").lowercased())
            return stride(from: digits.count - 2, through: 0, by: -2).map { String(digits[$0...$0 + 1]) }.joined()
        }
        let swaps = [
            (le("6a4e8022-667b-11e3-949a-0800200c9a66"), le(SessionLinkGATT.service)),
            (le("6a4e4c80-667b-11e3-949a-0800200c9a66"), le(SessionLinkGATT.writeCharacteristic)),
            (le("6a4ecd28-667b-11e3-949a-0800200c9a66"), le(SessionLinkGATT.notifyCharacteristic)),
        ]
        return MessagingSession.sessionStart.map { entry in
            var hex = entry.hex
            for (from, to) in swaps { hex = hex.replacingOccurrences(of: from, with: to) }
            return (entry.offsetUs, hex)
        }
    }

    struct Outcome {
        var frames: [MessagingSession.Frame] = []
        var replies = 0
        var messages = 0
        var userInfosFinished = 0
        var filesFinished = 0
        var contextsReceived = 0
        var failures: [String] = []
        var phoneWrites = 0
        var watchNotifications = 0
    }

    private enum Event {
        case phoneCall(SessionAPICall)
        case watchCall(SessionAPICall)
        case raw([UInt8])
        case linkUp
        case phoneWrite([UInt8])
        case watchWrite([UInt8])
    }

    func generate() throws -> Outcome {
        var run = Run(session: self)
        try run.start()
        try run.loop()
        run.outcome.frames.sort { $0.timeNs < $1.timeNs }
        return run.outcome
    }

    private struct Run {
        let session: SessionBenchSession
        var outcome = Outcome()
        var phone = SessionDriver()
        var watch = SessionCore(role: .watch, identity: SessionBenchSession.watch, randomSource: SeededSessionRandom(seed: 0xA1))
        var queue: [(timeNs: Int64, order: Int, event: Event)] = []
        var order = 0
        var nextPhoneWriteNs: Int64 = 0
        var nextWatchWriteNs: Int64 = 0
        var linkIsUp = false

        static let writeGapNs: Int64 = 1_250_000
        static let reactionNs: Int64 = 400_000
        static let airNs: Int64 = 2_000_000

        init(session: SessionBenchSession) { self.session = session }

        mutating func schedule(_ timeNs: Int64, _ event: Event) {
            order += 1
            var i = queue.endIndex
            while i > queue.startIndex, queue[i - 1].timeNs > timeNs { i -= 1 }
            queue.insert((timeNs, order, event), at: i)
        }

        mutating func start() throws {
            _ = watch.setPairedDevice(SessionBenchSession.phone, now: .zero)
            _ = try watch.activate(now: .zero)
            let calls: [SessionAPICall] = [
                .start(role: .phone, identity: SessionBenchSession.phone, seed: SessionBenchSession.seed, restored: false),
                .setPaired(SessionBenchSession.watch), .activate,
            ]
            var t: Int64 = 0
            for call in calls {
                schedule(t, .phoneCall(call))
                t += 200_000
            }
            for (offsetUs, hex) in SessionBenchSession.sessionStart() {
                guard let bytes = MonkeyCJSON.decodeHex(hex) else { throw MessagingSession.GenerationError(description: "bad hex \(hex)") }
                schedule(t + offsetUs * 1000, .raw(bytes))
            }
            schedule(t + MessagingSession.writeResponseOffsetUs * 1000, .linkUp)
            for second in 1...max(1, session.seconds) {
                let at = Int64(second) * 1_000_000_000
                schedule(at, .phoneCall(.sendMessage(.dictionary([MonkeyCPair(.string("hr"), .int32(Int32(60 + second % 100))),
                                                                  MonkeyCPair(.string("t"), .int32(Int32(second)))]), expectsReply: true)))
                if second % 30 == 0 { schedule(at + 100_000_000, .phoneCall(.sendMessageData(Array(repeating: UInt8(second & 0xFF), count: 64), expectsReply: true))) }
                if second % 10 == 0 { schedule(at + 200_000_000, .phoneCall(.updateContext(.dictionary([MonkeyCPair(.string("zone"), .int32(Int32(second / 10)))])))) }
                if second % 15 == 0 { schedule(at + 300_000_000, .phoneCall(.transferUserInfo(.dictionary([MonkeyCPair(.string("lap"), .int32(Int32(second)))])))) }
                if second % 20 == 0 { schedule(at + 400_000_000, .watchCall(.transferUserInfo(.dictionary([MonkeyCPair(.string("steps"), .int32(Int32(second * 3)))])))) }
                if second % 60 == 0 { schedule(at + 500_000_000, .phoneCall(.transferComplication(.dictionary([MonkeyCPair(.string("ring"), .int32(Int32(second / 60)))])))) }
                if second % 300 == 0 {
                    schedule(at + 600_000_000, .phoneCall(.transferFile(.pattern(size: 16_384),
                                                                        metadata: .dictionary([MonkeyCPair(.string("n"), .int32(Int32(second / 300)))]))))
                }
            }
        }

        mutating func loop() throws {
            while !queue.isEmpty {
                let (t, _, event) = queue.removeFirst()
                let now = Duration.nanoseconds(t)
                while let deadline = phone.nextDeadline, deadline < now {
                    try performPhone(phone.handleTimeout(now: deadline), at: deadline.replayNanoseconds)
                }
                while let deadline = watch.nextDeadline, deadline < now {
                    try performWatch(watch.handleTimeout(now: deadline), at: deadline.replayNanoseconds)
                }
                switch event {
                case .phoneCall(let call):
                    let json = Array(call.recordJSON.utf8)
                    outcome.frames.append(MessagingSession.Frame(timeNs: t, interface: 1, bytes: json))
                    let replayed = try SessionAPICall(record: try JSONLiteral.parseObject(json, label: "generated API call"))
                    let (actions, events) = phone.apply(replayed, now: now)
                    for e in events where e.event == "api_error" { throw MessagingSession.GenerationError(description: "the phone refused \(call.name): \(e.fields)") }
                    try performPhone(actions, at: t)
                case .watchCall(let call):
                    guard case .transferUserInfo(let value) = call else { continue }
                    try performWatch(try watch.transferUserInfo(value, now: now).1, at: t)
                case .raw(let bytes):
                    outcome.frames.append(MessagingSession.Frame(timeNs: t, interface: 0, bytes: bytes))
                case .linkUp:
                    guard let bytes = MonkeyCJSON.decodeHex(MessagingSession.writeResponseHex) else { continue }
                    outcome.frames.append(MessagingSession.Frame(timeNs: t, interface: 0, bytes: bytes))
                    linkIsUp = true
                    try performWatch(watch.linkUp(maxPayload: SessionBenchSession.mtu - 3, now: now), at: t)
                    try performPhone(phone.linkUp(maxPayload: SessionBenchSession.mtu - 3, now: now), at: t)
                case .phoneWrite(let bytes):
                    // The phone's write: recorded as it leaves, taken by the watch a moment later.
                    try performWatch(watch.receive(bytes, now: now), at: t)
                case .watchWrite(let bytes):
                    outcome.watchNotifications += 1
                    outcome.frames.append(MessagingSession.Frame(timeNs: t, interface: 0, bytes: ATTFrame.notification(bytes)))
                    try performPhone(phone.receive(bytes, now: now), at: t)
                }
            }
        }

        mutating func performPhone(_ actions: [SessionAction], at timeNs: Int64) throws {
            for action in actions {
                switch action {
                case .write(let bytes):
                    let at = max(timeNs + Self.reactionNs, nextPhoneWriteNs)
                    nextPhoneWriteNs = at + Self.writeGapNs
                    outcome.phoneWrites += 1
                    outcome.frames.append(MessagingSession.Frame(timeNs: at, interface: 0, bytes: ATTFrame.writeCommand(bytes)))
                    schedule(at + Self.airNs, .phoneWrite(bytes))
                case .event(let event):
                    switch event {
                    case .didReceiveReply, .didReceiveReplyData: outcome.replies += 1
                    case .userInfoTransferDidFinish(_, nil): outcome.userInfosFinished += 1
                    case .fileTransferDidFinish(_, nil): outcome.filesFinished += 1
                    case .messageFailed(let id, let error): outcome.failures.append("\(id) failed: \(error)")
                    case .violation(let kind, let detail): outcome.failures.append("phone violation \(kind.rawValue): \(detail)")
                    case .userInfoTransferDidFinish(let id, let error?): outcome.failures.append("\(id) finished with \(error)")
                    case .fileTransferDidFinish(let id, let error?): outcome.failures.append("\(id) finished with \(error)")
                    default: break
                    }
                default:
                    break
                }
            }
        }

        mutating func performWatch(_ actions: [SessionAction], at timeNs: Int64) throws {
            var answers: [(SessionMessageID, MonkeyCValue?, [UInt8]?)] = []
            for action in actions {
                switch action {
                case .write(let bytes):
                    let at = max(timeNs + Self.reactionNs, nextWatchWriteNs)
                    nextWatchWriteNs = at + Self.writeGapNs
                    schedule(at + Self.airNs, .watchWrite(bytes))
                case .event(let event):
                    switch event {
                    case let .didReceiveMessage(id, value, true): outcome.messages += 1; answers.append((id, value, nil))
                    case let .didReceiveMessageData(id, bytes, true): outcome.messages += 1; answers.append((id, nil, bytes))
                    case .didReceiveApplicationContext: outcome.contextsReceived += 1
                    case .violation(let kind, let detail): outcome.failures.append("watch violation \(kind.rawValue): \(detail)")
                    default: break
                    }
                default:
                    break
                }
            }
            for (id, value, bytes) in answers {
                let now = Duration.nanoseconds(timeNs)
                if let value { try performWatch(try watch.replyToMessage(id, with: value, now: now), at: timeNs) }
                if let bytes { try performWatch(try watch.replyToMessageData(id, with: bytes, now: now), at: timeNs) }
            }
        }
    }
}

/// `TetherBench gen-session-session OUT [--seconds 3600]`: writes a ``SessionBenchSession`` as a
/// sealed capture set, as `tether live session --role phone --record` leaves one, with
/// expectations that every message is answered, every transfer finishes and every phone write
/// matches. Fails unless the generated session is clean.
enum GenerateSessionSession {
    static func run(_ args: Arguments) throws -> Int32 {
        let out = try args.positional(0, "OUT (the capture set folder to create)")
        let session = SessionBenchSession(seconds: try args.int("seconds", default: 3600))
        let start = monotonicSeconds()
        let outcome = try session.generate()
        let expectedMessages = session.seconds + session.seconds / 30
        guard outcome.failures.isEmpty, outcome.replies == expectedMessages else {
            throw MessagingSession.GenerationError(description: "the generated session is not clean: \(outcome.replies) replies "
                + "for \(expectedMessages) messages; \(outcome.failures.prefix(3).joined(separator: "; "))")
        }
        let hciFrames = outcome.frames.lazy.filter { $0.interface == 0 }.count
        let selector = Expectation.Selector.self
        let manifest = CaptureSetManifest(
            title: "Synthetic session-link session, \(session.seconds) s, every channel (TetherBench)",
            description: "Generated by TetherBench gen-session-session: two real SessionCores (the phone seeded, as recorded), "
                + "a message with a reply every second, message data, contexts, user info both ways, complication info, 16 KB files.",
            recordedAt: "2026-11-22T00:00:00Z",
            interfaces: [
                ManifestInterface(index: 0, name: "h4tap:synthetic", linkType: .bluetoothHCIH4WithPHDR, role: .bleHCI, core: "session", frames: hciFrames),
                ManifestInterface(index: 1, name: "api-calls", linkType: .user0, role: .apiCalls, frames: outcome.frames.count - hciFrames),
            ],
            sections: [try ManifestSection(name: "session", encoding: ManifestSession(
                role: "phone", identity: SessionBenchSession.phone.description, pairedPeer: SessionBenchSession.watch.description))],
            expectations: [
                Expectation(name: "every message is answered", .count(
                    selector.init(core: "session", event: "did_receive_reply"), .init(equals: session.seconds))),
                Expectation(name: "no message fails", .absent(selector.init(core: "session", event: "message_failed"))),
                Expectation(name: "every phone write matches", .absent(selector.init(core: "session", event: "frame_diverged"))),
                Expectation(name: "no violation", .absent(selector.init(core: "session", event: "violation"))),
            ])
        let set = try CaptureSetDirectory.create(at: out, manifest: manifest)
        let writer = try PcapngWriter(path: set.capturePath(for: manifest))
        let hci = try writer.addInterface(CaptureInterface(linkType: .bluetoothHCIH4WithPHDR, name: "h4tap:synthetic", snapLength: 65_535))
        let api = try writer.addInterface(CaptureInterface(linkType: .user0, name: "api-calls", snapLength: 262_144))
        let startNs: Int64 = 1_795_305_600_000_000_000
        for (i, frame) in outcome.frames.enumerated() {
            try writer.write(CaptureFrame(number: i + 1, interfaceIndex: frame.interface == 0 ? hci : api, timestampNs: startNs + frame.timeNs,
                                          originalLength: frame.bytes.count, data: frame.bytes))
        }
        try writer.close()
        try CaptureSetDirectory.seal(at: out)
        report([
            "frames": "\(outcome.frames.count)", "bytes": "\(try FileSize.of(set.capturePath(for: manifest)))",
            "replies": "\(outcome.replies)", "user_infos": "\(outcome.userInfosFinished)", "files": "\(outcome.filesFinished)",
            "phone_writes": "\(outcome.phoneWrites)", "notifications": "\(outcome.watchNotifications)",
            "virtual_seconds": fixed(Double(outcome.frames.last?.timeNs ?? 0) / 1e9, 3), "seconds": fixed(monotonicSeconds() - start, 6),
        ])
        return 0
    }
}

/// `TetherBench replay-session-hour SET`: `read` (the reader's floor), then `replay-set` as
/// `tether replay` runs it, the expectations, and the peak memory.
enum ReplaySessionHour {
    static func run(_ args: Arguments) throws -> Int32 {
        let setPath = try args.positional(0, "SET (a capture set folder)")
        let loaded = try CaptureSetDirectory.load(setPath, verify: false)
        var start = monotonicSeconds()
        do {
            let reader = try CaptureFile.open(path: loaded.capturePath)
            var frames = 0
            while try reader.withNextFrame({ _ in frames += 1 }) {}
            report(["stage": "read", "frames": "\(frames)", "seconds": fixed(monotonicSeconds() - start, 6)])
        }
        start = monotonicSeconds()
        let outcome = try replaySet(at: setPath, options: ReplayOptions(integrations: TetherIntegrations.builtIn))
        let seconds = monotonicSeconds() - start
        let summary = outcome.trace.last { $0.core == "session" && $0.event == "summary" }
        let virtualSeconds = Double(outcome.summary.endTimeNs) / 1e9
        func int(_ value: TraceValue?) -> String { if case .int(let i)? = value { "\(i)" } else { "?" } }
        report(["stage": "replay-set", "frames": "\(outcome.summary.framesRead)", "events": "\(outcome.trace.count)",
                "frames_matched": int(summary?.fields["frames_matched"]), "frames_diverged": int(summary?.fields["frames_diverged"]),
                "virtual_seconds": fixed(virtualSeconds, 3), "realtime": fixed(virtualSeconds / seconds, 0), "seconds": fixed(seconds, 6)])
        start = monotonicSeconds()
        let results = Expectations.evaluate(loaded.manifest.expectations, trace: outcome.trace)
        report(["stage": "expectations", "passed": "\(results.filter(\.passed).count)", "of": "\(results.count)",
                "seconds": fixed(monotonicSeconds() - start, 6)])
        report(["stage": "memory", "vmhwm_kb": "\(peakResidentKB())"])
        return results.allSatisfy(\.passed) ? 0 : 1
    }
}
