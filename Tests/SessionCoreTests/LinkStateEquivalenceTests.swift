import MonkeyC
@testable import SessionCore
import Testing
import TetherTestSupport

/// A behavioural fingerprint of SessionCore, taken to reshape its link state without changing what
/// it does: a phone and a watch core, wired through ``Pair``, run hundreds of seeded random
/// schedules of app calls, host inputs and link faults, and every output of both cores (every
/// action — frames, events, snapshots, file operations — and after each input the next deadline,
/// reachability, link peer and pending work) is folded into one FNV-1a 64 digest.
///
/// The test drives the cores only through their public API and ``Pair``, never through
/// ``LinkSession``, so it stays valid while that type changes shape.
@Suite struct LinkStateEquivalenceTests {
    /// Recorded on the code BEFORE `LinkSession` was reshaped into per-phase values (the issue
    /// "state that cannot contradict itself"). It must not change: a different digest means the
    /// cores behave differently. Change it only for a deliberate change of behaviour, and say so.
    static let recordedDigest: UInt64 = 0x8491_62FB_BABD_CEBC
    /// How many outputs went into ``recordedDigest`` (a cheap first hint of where a run diverged).
    static let recordedOutputs = 177_466

    /// How many random schedules run.
    static let scheduleCount = 320

    @Test func theCoresBehaveExactlyAsRecorded() {
        var fingerprint = OutputFingerprint(separator: 0x0A)
        var coverage = Coverage()
        for seed in 0..<UInt64(Self.scheduleCount) {
            runSchedule(seed: seed, into: &fingerprint, coverage: &coverage)
        }
        print("LinkStateEquivalence: digest 0x\(String(fingerprint.value, radix: 16)), \(fingerprint.count) outputs, \(coverage)")
        #expect(fingerprint.value == Self.recordedDigest, "digest 0x\(String(fingerprint.value, radix: 16)) over \(fingerprint.count) outputs")
        #expect(fingerprint.count == Self.recordedOutputs)
        // The schedules reach the interesting corners (so the digest means something).
        #expect(coverage.handshakes > 1_000)
        #expect(coverage.handshakeTimeouts > 50)
        #expect(coverage.rebindsWhileBound > 50)
        #expect(coverage.compactBindings > 100)
        #expect(coverage.windowedBindings > 100)
        #expect(coverage.fileResumes > 10)
        #expect(coverage.filesReceived > 100)
        #expect(coverage.staleFramesDropped > 50)
        #expect(coverage.violationKinds.count > 8)
    }

    // MARK: - One schedule

    func runSchedule(seed: UInt64, into fingerprint: inout OutputFingerprint, coverage: inout Coverage) {
        var rng = SplitMix64(seed: seed &* 0x9E37_79B9 &+ 17)
        let payloads = [20, 23, 40, 64, 100, 185, 244, 512]
        let windows: [Int?] = [nil, nil, 2, 4, 16, 64]
        func pick<T>(_ options: [T]) -> T { options[Int(rng.next() % UInt64(options.count))] }
        var phoneConfiguration = SessionConfiguration(windowFrames: pick(windows), compactFrames: rng.chance(0.5))
        let watchConfiguration = rng.chance(0.7) ? phoneConfiguration
            : SessionConfiguration(windowFrames: pick(windows), compactFrames: rng.chance(0.5))
        if rng.chance(0.2) { phoneConfiguration.maximumMessageBytes = 300 }
        let faults: LinkFaults
        switch rng.next() % 4 {
        case 0: faults = .clean
        case 1: faults = .rough
        case 2: faults = LinkFaults(loss: 0.25, duplication: 0.1, jitter: .milliseconds(120))
        default: faults = LinkFaults(loss: 0.02, duplication: 0.2, latency: .milliseconds(3), jitter: .milliseconds(10))
        }
        let activate = rng.chance(0.85)
        var pair = Pair(seed: seed, faults: faults, maxPayload: pick(payloads), configuration: phoneConfiguration,
                        watchConfiguration: watchConfiguration, activate: activate, connect: rng.chance(0.9))
        var recorder = Recorder()
        recorder.fold("schedule \(seed) \(phoneConfiguration) \(watchConfiguration) \(faults.loss) \(pair.maxPayload)", into: &fingerprint)
        recorder.collect(&pair, "start", into: &fingerprint, coverage: &coverage)
        var userInfos: [(SessionRole, UserInfoTransferID)] = []
        var files: [(SessionRole, FileTransferID)] = []
        let steps = 25 + Int(rng.next() % 40)
        for step in 0..<steps {
            let role: SessionRole = rng.chance(0.5) ? .phone : .watch
            let size = Int(rng.next() % 400)
            let op = rng.next() % 30
            var label = "\(step) \(role) op\(op)"
            switch op {
            case 0, 1:
                _ = try? pair.call(role) { core, now throws(SessionError) in
                    try core.sendMessage(numbered(step, size: size / 4), expectsReply: op == 0, now: now)
                }
            case 2:
                let expectsReply = rng.chance(0.5)
                _ = try? pair.call(role) { core, now throws(SessionError) in
                    try core.sendMessageData((0..<size / 3).map { UInt8(truncatingIfNeeded: $0 &+ step) }, expectsReply: expectsReply, now: now)
                }
            case 3, 4:
                if let id = pair.transferUserInfo(numbered(step, size: size), from: role, complication: role == .phone && op == 4) {
                    userInfos.append((role, id))
                }
            case 5, 6:
                let length = Int(rng.next() % 2_500)
                let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ step) }
                if let id = pair.transferFile(bytes, number: step, from: role) { files.append((role, id)) }
            case 7, 8:
                try? pair.act(role) { core, now throws(SessionError) in
                    try core.updateApplicationContext(numbered(step, size: size / 2), now: now)
                }
            case 9:
                let state = WatchAppState(installed: rng.chance(0.9), complicationEnabled: rng.chance(0.5), foreground: rng.chance(0.7))
                label += " \(state)"
                try? pair.act(.watch) { core, now throws(SessionError) in try core.setWatchAppState(state, now: now) }
            case 10, 11, 12, 13:
                pair.run(until: pair.now + .milliseconds(Int64(rng.next() % 3_000)))
            case 14:
                pair.dropLink()
                if rng.chance(0.6) {
                    pair.run(until: pair.now + .milliseconds(Int64(rng.next() % 500)))
                    pair.maxPayload = pick(payloads)
                    pair.raiseLink()
                }
            case 15:
                if !pair.linkIsUp { pair.maxPayload = pick(payloads); pair.raiseLink() }
            case 16:
                // The phone switches to another watch and back: re-handshakes, while bound or not.
                let other = rng.chance(0.5) ? watchBID : watchID
                pair.apply(pair.phone.core.setPairedDevice(other, now: pair.now), to: .phone)
                pair.run(until: pair.now + .milliseconds(Int64(rng.next() % 400)))
                if rng.chance(0.5) { pair.dropLink(); pair.raiseLink() }
                pair.apply(pair.phone.core.setPairedDevice(watchID, now: pair.now), to: .phone)
            case 17:
                try? pair.act(.phone) { core, now throws(SessionError) in try core.activate(now: now) }
                try? pair.act(.watch) { core, now throws(SessionError) in try core.activate(now: now) }
            case 18:
                // The watch's phone changes (to none, a stranger, or back): it unbinds.
                let other: SessionDeviceID? = pick([nil, strangerID, phoneID])
                pair.apply(pair.watch.core.setPairedDevice(other, now: pair.now), to: .watch)
                pair.run(until: pair.now + .milliseconds(Int64(rng.next() % 300)))
                pair.apply(pair.watch.core.setPairedDevice(phoneID, now: pair.now), to: .watch)
            case 19, 20:
                // A stale frame: one this side wrote earlier (perhaps in another binding) arrives again.
                let written = pair[role].writes
                if !written.isEmpty {
                    let bytes = written[Int(rng.next() % UInt64(written.count))]
                    let target: SessionRole = role == .phone ? .watch : .phone
                    let actions = pair[target].core.receive(bytes, now: pair.now)
                    if actions.isEmpty { coverage.staleFramesDropped += 1 }
                    pair.apply(actions, to: target)
                }
            case 21:
                // Garbage, sometimes shaped like a compact frame.
                var bytes = (0..<Int(rng.next() % 24)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                if rng.chance(0.5), !bytes.isEmpty { bytes[0] |= SessionLink.compactMarker }
                pair.apply(pair[role].core.receive(bytes, now: pair.now), to: role)
            case 22:
                if !userInfos.isEmpty {
                    let (owner, id) = userInfos[Int(rng.next() % UInt64(userInfos.count))]
                    try? pair.act(owner) { core, now throws(SessionError) in try core.cancelUserInfoTransfer(id, now: now) }
                }
            case 23:
                if !files.isEmpty {
                    let (owner, id) = files[Int(rng.next() % UInt64(files.count))]
                    try? pair.act(owner) { core, now throws(SessionError) in try core.cancelFileTransfer(id, now: now) }
                }
            case 24:
                for id in pair.phone.core.messagesAwaitingReply {
                    try? pair.act(.phone) { core, now throws(SessionError) in
                        try core.replyToMessage(id, with: numbered(Int(id.rawValue)), now: now)
                    }
                    try? pair.act(.phone) { core, now throws(SessionError) in
                        try core.replyToMessageData(id, with: [1, 2, 3], now: now)
                    }
                }
            case 25:
                // A crash of one side (rebuilt from its snapshot), then its recovery.
                if pair.crashed.isEmpty, pair.linkIsUp {
                    pair.crash(role)
                    pair.run(until: pair.now + .milliseconds(Int64(rng.next() % 200)))
                    pair.recover(role)
                }
            case 26:
                pair.faults = LinkFaults(loss: Double(rng.next() % 40) / 100, duplication: Double(rng.next() % 30) / 100,
                                         jitter: .milliseconds(Int64(rng.next() % 200)))
            case 27:
                // The link comes up again without going down (a new MTU): the old link is taken down first.
                pair.maxPayload = pick(payloads)
                pair.linkIsUp = true
                pair.apply(pair[role].core.linkUp(maxPayload: pair.maxPayload, now: pair.now), to: role)
            default:
                pair.step()
            }
            recorder.collect(&pair, label, into: &fingerprint, coverage: &coverage)
        }
        if !pair.linkIsUp { pair.raiseLink() }
        pair.faults = .clean
        pair.settle(limit: .seconds(120))
        recorder.collect(&pair, "settled", into: &fingerprint, coverage: &coverage)
        let summary = [pair.phone, pair.watch].map { host in
            "\(host.core.isReachable) \(host.core.hasPendingWork) \(host.core.outstandingUserInfoTransfers.count) \(host.core.outstandingFileTransfers.count) \(host.core.messagesAwaitingReply) \(host.files.keys.sorted()) \(host.files.values.map(\.count).sorted())"
        }
        recorder.fold("end \(summary)", into: &fingerprint)
    }
}

/// What the schedules reached, to check they exercise the state being reshaped.
struct Coverage: CustomStringConvertible {
    var handshakes = 0
    var handshakeTimeouts = 0
    var rebindsWhileBound = 0
    var compactBindings = 0
    var windowedBindings = 0
    var fileResumes = 0
    var filesReceived = 0
    var staleFramesDropped = 0
    var violationKinds: Set<String> = []

    var description: String {
        "handshakes \(handshakes), handshake timeouts \(handshakeTimeouts), rebinds while bound \(rebindsWhileBound), compact bindings \(compactBindings), windowed bindings \(windowedBindings), file resumes \(fileResumes), files received \(filesReceived), stale frames dropped \(staleFramesDropped), violation kinds \(violationKinds.sorted())"
    }
}

/// Folds the outputs of a ``Pair`` that appeared since the last call.
struct Recorder {
    var seen: [SessionRole: Int] = [.phone: 0, .watch: 0]
    var bound: [SessionRole: Bool] = [.phone: false, .watch: false]
    /// Per side, the files whose chunks went out since its last handshake.
    var chunksSent: [SessionRole: Set<UInt32>] = [.phone: [], .watch: []]

    func fold(_ line: String, into fingerprint: inout OutputFingerprint) { fingerprint.add(line) }

    mutating func collect(_ pair: inout Pair, _ label: String, into fingerprint: inout OutputFingerprint, coverage: inout Coverage) {
        fingerprint.add("@\(pair.now) \(label)")
        for role in [SessionRole.phone, .watch] {
            let host = pair[role]
            let start = min(seen[role] ?? 0, host.actions.count)
            for action in host.actions[start...] {
                fingerprint.add("\(role) \(action)")
                note(action, role: role, pair: pair, coverage: &coverage)
            }
            seen[role] = host.actions.count
            let core = host.core
            fingerprint.add("\(role) deadline \(String(describing: core.nextDeadline)) reachable \(core.isReachable) peer \(String(describing: core.linkPeer)) pending \(core.hasPendingWork) state \(core.activationState)")
        }
    }

    mutating func note(_ action: SessionAction, role: SessionRole, pair: Pair, coverage: inout Coverage) {
        guard case .event(let event) = action else {
            // A file's first chunk after a handshake that starts past 0 without FIRST: a resume.
            if case .write(let bytes) = action, let frame = try? SessionFrame.decode(bytes), frame.channel == .fileChunk,
               chunksSent[role]?.insert(frame.id).inserted == true, !frame.flags.contains(.first), frame.offset > 0 {
                coverage.fileResumes += 1
            }
            return
        }
        switch event {
        case .handshakeCompleted:
            coverage.handshakes += 1
            chunksSent[role] = []
            if bound[role] == true { coverage.rebindsWhileBound += 1 }
            bound[role] = true
            let phone = pair.phone.core.configuration, watch = pair.watch.core.configuration
            if phone.compactFrames && watch.compactFrames { coverage.compactBindings += 1 }
            if phone.windowFrames != nil && watch.windowFrames != nil { coverage.windowedBindings += 1 }
        case .timeout(.handshake, _):
            coverage.handshakeTimeouts += 1
        case .didReceiveFile:
            coverage.filesReceived += 1
        case .violation(let kind, _):
            coverage.violationKinds.insert(kind.rawValue)
        case .reachabilityDidChange(false):
            bound[role] = pair[role].core.linkPeer != nil
        default:
            break
        }
        if pair[role].core.linkPeer == nil { bound[role] = false }
    }
}
