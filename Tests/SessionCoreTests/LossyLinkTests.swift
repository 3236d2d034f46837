import MonkeyC
@testable import SessionCore
import Testing
import TetherTestSupport

/// Seeds for the randomized pair runs: each gives a different pattern of loss, duplication and reordering.
let roughSeeds: [UInt64] = Array(1...8)

@Suite struct LossyLinkTests {
    @Test(arguments: roughSeeds)
    func userInfoArrivesExactlyOnceAndInOrderBothWays(_ seed: UInt64) {
        var pair = Pair(seed: seed, faults: .rough)
        for n in 0..<20 {
            pair.transferUserInfo(numbered(n, size: n * 7), from: .phone)
            if n < 10 { pair.transferUserInfo(numbered(100 + n, size: 30), from: .watch) }
            pair.run(until: pair.now + .milliseconds(80))
        }
        pair.settle()
        #expect(pair.receivedUserInfo(.watch) == Array(0..<20))
        #expect(pair.receivedUserInfo(.phone) == Array(100..<110))
        #expect(pair.finishedUserInfo(.phone) == (1...20).map(UserInfoTransferID.init(rawValue:)))
        #expect(pair.finishedUserInfo(.watch) == (1...10).map(UserInfoTransferID.init(rawValue:)))
        #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
    }

    @Test(arguments: roughSeeds)
    func complicationUserInfoArrivesExactlyOnceAndInOrder(_ seed: UInt64) {
        var pair = Pair(seed: seed, faults: .rough)
        for n in 0..<12 {
            pair.transferUserInfo(numbered(n, size: 20), from: .phone, complication: true)
            pair.run(until: pair.now + .milliseconds(60))
        }
        pair.settle()
        let received = pair.watch.appEvents.compactMap { event -> (Int, Bool)? in
            if case let .didReceiveUserInfo(_, value, current) = event, let n = number(of: value) { return (n, current) }
            return nil
        }
        #expect(received.map(\.0) == Array(0..<12))
        #expect(received.last?.1 == true)
        #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
    }

    @Test(arguments: roughSeeds)
    func applicationContextDeliversOnlyNewerContextsAndEndsAtTheLatest(_ seed: UInt64) {
        var pair = Pair(seed: seed, faults: .rough)
        for n in 0..<15 {
            try? pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(numbered(n, size: 40), now: now) }
            pair.run(until: pair.now + .milliseconds(30))
        }
        pair.settle()
        let delivered = pair.watch.appEvents.compactMap { if case .didReceiveApplicationContext(let value) = $0 { number(of: value) } else { nil } }
        #expect(delivered.last == 14)
        #expect(zip(delivered, delivered.dropFirst()).allSatisfy { $0 < $1 }, "contexts went back: \(delivered)")
        #expect(number(of: pair.watch.core.receivedApplicationContext) == 14)
        #expect(number(of: pair.phone.core.applicationContext) == 14)
        #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
    }

    @Test(arguments: roughSeeds)
    func messagesGetExactlyOneOutcomeAndArriveInOrder(_ seed: UInt64) throws {
        var pair = Pair(seed: seed, faults: .rough, maxPayload: 64)
        var sent: [SessionMessageID: Int] = [:]
        for n in 0..<12 {
            let id: SessionMessageID
            if n % 3 == 2 {
                id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessageData([UInt8(n), 1, 2], expectsReply: true, now: now) }
            } else {
                id = try pair.call(.phone) { core, now throws(SessionError) in try core.sendMessage(numbered(n), expectsReply: n % 3 == 0, now: now) }
            }
            sent[id] = n
            pair.run(until: pair.now + .milliseconds(700))
        }
        pair.settle()
        var outcomes: [SessionMessageID: Int] = [:]
        var replies = 0
        for event in pair.phone.appEvents {
            switch event {
            case let .didReceiveReply(id, value):
                outcomes[id, default: 0] += 1
                replies += 1
                #expect(value == .object(["re": MonkeyCValue(sent[id] ?? -2)]))
            case let .didReceiveReplyData(id, bytes):
                outcomes[id, default: 0] += 1
                replies += 1
                #expect(bytes == [2, 1, UInt8(sent[id] ?? 0)])
            case .messageDelivered(let id), .messageFailed(let id, _):
                outcomes[id, default: 0] += 1
            default:
                break
            }
        }
        #expect(outcomes == Dictionary(uniqueKeysWithValues: sent.keys.map { ($0, 1) }))
        #expect(replies > 0)
        let received = pair.watch.appEvents.compactMap { event -> SessionMessageID? in
            switch event {
            case .didReceiveMessage(let id, _, _), .didReceiveMessageData(let id, _, _): id
            default: nil
            }
        }
        #expect(zip(received, received.dropFirst()).allSatisfy { $0 < $1 }, "messages out of order or twice: \(received)")
        #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
    }

    @Test(arguments: roughSeeds)
    func filesArriveWholeExactlyOnceAndInOrder(_ seed: UInt64) throws {
        var pair = Pair(seed: seed, faults: .rough, maxPayload: 40)
        var rng = SplitMix64(seed: seed)
        var files: [[UInt8]] = []
        for n in 0..<4 {
            let bytes = (0..<(300 + n * 211)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            files.append(bytes)
            let id = try pair.call(.watch) { core, now throws(SessionError) in
                try core.transferFile(bytes, metadata: .object(["n": MonkeyCValue(n)]), now: now)
            }
            pair.watch.outgoingFiles[id] = bytes
        }
        pair.settle()
        let received = pair.phone.appEvents.compactMap { if case .didReceiveFile(let file) = $0 { file } else { nil } }
        #expect(received.map(\.id) == (1...4).map(FileTransferID.init(rawValue:)))
        for (file, bytes) in zip(received, files) {
            #expect(pair.phone.files[Host.fileKey(watchID, file.id)] == bytes)
            #expect(file.size == bytes.count)
        }
        #expect(received.map { $0.metadata.flatMap(number(of:)) } == [0, 1, 2, 3])
        #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
    }

    @Test(arguments: roughSeeds)
    func fileTransferResumesWhereTheReceiverStoppedAfterALinkDrop(_ seed: UInt64) throws {
        var pair = Pair(seed: seed, faults: .rough)
        var rng = SplitMix64(seed: seed &+ 99)
        let bytes = (0..<2_000).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.transferFile(bytes, metadata: nil, now: now) }
        pair.phone.outgoingFiles[id] = bytes
        func progress(_ pair: Pair) -> [Int] {
            pair.phone.appEvents.compactMap { if case let .fileTransferProgress(_, completed, 2_000) = $0 { completed } else { nil } }
        }
        while (progress(pair).last ?? 0) < 600 { pair.step() }
        pair.dropLink()
        let before = progress(pair).last ?? 0
        let held = try #require(pair.watch.core.snapshot.peers.first?.inboundFile?.received)
        #expect(held >= before)
        pair.phone.writes = []
        let reported = progress(pair).count
        pair.raiseLink()
        pair.settle()
        let after = Array(progress(pair).dropFirst(reported))
        // Progress goes on from what the receiver holds (reported again only when it is news).
        #expect(after.allSatisfy { $0 >= held })
        if held > before { #expect(after.first == held) }
        #expect(progress(pair) == progress(pair).sorted())
        #expect(progress(pair).last == 2_000)
        let resumedChunks = try pair.phone.writes.map(SessionFrame.decode).filter { $0.channel == .fileChunk }
        #expect(resumedChunks.map(\.offset).min() == UInt32(held))
        #expect(!resumedChunks.contains { $0.flags.contains(.first) } || held == 0)
        #expect(pair.watch.files[Host.fileKey(phoneID, id)] == bytes)
        #expect(pair.phone.appEvents.filter { $0 == .fileTransferDidFinish(id, error: nil) }.count == 1)
    }
}

@Suite struct CrashTests {
    /// Crashes strike a random side after a random number of its actions: possibly between an event
    /// and the persist, or between the persist and the frames.
    @Test(arguments: Array(UInt64(1)...24))
    func userInfoIsExactlyOnceAndFIFOAcrossCrashesOfEitherSide(_ seed: UInt64) {
        var pair = Pair(seed: seed, faults: LinkFaults(loss: 0.05, duplication: 0.03, jitter: .milliseconds(20)))
        var rng = SplitMix64(seed: seed &* 7_919)
        var number = 0
        var watchNumber = 0
        for round in 0..<30 {
            if !pair.crashed.isEmpty {
                for role in pair.crashed { pair.recover(role) }
            } else if pair.crashPlan == nil, round < 24, rng.chance(0.3) {
                let point = CrashPoint.allCases[Int(rng.next() % UInt64(CrashPoint.allCases.count))]
                pair.crashPlan = (rng.chance(0.5) ? .phone : .watch, point, Int(rng.next() % 3))
            }
            if round % 2 == 0 || rng.chance(0.5) {
                if pair.transferUserInfo(numbered(number, size: Int(rng.next() % 50)), from: .phone) != nil { number += 1 }
            }
            if rng.chance(0.3) {
                if pair.transferUserInfo(numbered(10_000 + watchNumber, size: 10), from: .watch) != nil { watchNumber += 1 }
            }
            pair.run(until: pair.now + .milliseconds(Int64(rng.next() % 900)))
        }
        for role in pair.crashed { pair.recover(role) }
        pair.crashPlan = nil
        pair.settle()
        #expect(pair.receivedUserInfo(.watch) == pair.sentUserInfo(.phone))
        #expect(pair.receivedUserInfo(.phone) == pair.sentUserInfo(.watch))
        let finished = pair.finishedUserInfo(.phone)
        #expect(finished.count == Set(finished).count, "a transfer finished twice: \(finished)")
        #expect(finished.count == pair.sentUserInfo(.phone).count)
        #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
    }

    /// Every crash point on either side, in a small exchange both ways: each crash rolls back
    /// exactly what was not persisted, and nothing is lost or doubled.
    @Test(arguments: CrashPoint.allCases, [SessionRole.phone, .watch])
    func userInfoSurvivesACrashAtEachPoint(_ point: CrashPoint, _ role: SessionRole) {
        for skip in 0..<4 {
            var pair = Pair(seed: 40 + UInt64(skip))
            pair.crashPlan = (role, point, skip)
            for n in 0..<3 {
                pair.transferUserInfo(numbered(n), from: .phone)
                pair.transferUserInfo(numbered(100 + n), from: .watch)
                pair.run(until: pair.now + .milliseconds(10))
            }
            pair.settle(limit: .seconds(5))
            for crashed in pair.crashed { pair.recover(crashed) }
            pair.crashPlan = nil
            pair.settle()
            #expect(pair.receivedUserInfo(.watch) == pair.sentUserInfo(.phone), "skip \(skip)")
            #expect(pair.receivedUserInfo(.phone) == pair.sentUserInfo(.watch), "skip \(skip)")
            let finished = pair.finishedUserInfo(.phone) + pair.finishedUserInfo(.watch)
            #expect(finished.count == pair.sentUserInfo(.phone).count + pair.sentUserInfo(.watch).count, "skip \(skip)")
            #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
        }
    }

    @Test(arguments: Array(UInt64(1)...12))
    func filesAreExactlyOnceAndWholeAcrossCrashesOfEitherSide(_ seed: UInt64) {
        var pair = Pair(seed: seed, faults: LinkFaults(loss: 0.08, duplication: 0.08, jitter: .milliseconds(40)), maxPayload: 20 + Int(seed % 30))
        var rng = SplitMix64(seed: seed &* 104_729)
        var contents: [[UInt8]] = []
        for round in 0..<30 {
            if !pair.crashed.isEmpty {
                for role in pair.crashed { pair.recover(role) }
            } else if pair.crashPlan == nil, round < 25, rng.chance(0.35) {
                let point = CrashPoint.allCases[Int(rng.next() % UInt64(CrashPoint.allCases.count))]
                pair.crashPlan = (rng.chance(0.5) ? .phone : .watch, point, Int(rng.next() % 4))
            }
            if rng.chance(0.35) {
                let bytes = (0..<Int(rng.next() % 900)).map { _ in UInt8.random(in: 0...255, using: &rng) }
                if pair.transferFile(bytes, number: contents.count, from: .phone) != nil { contents.append(bytes) }
            }
            pair.run(until: pair.now + .milliseconds(Int64(rng.next() % 1500)))
        }
        for role in pair.crashed { pair.recover(role) }
        pair.crashPlan = nil
        pair.settle()
        let received = pair.receivedFiles(.watch)
        #expect(received.compactMap { $0.metadata.flatMap(number(of:)) } == pair.sentFiles(.phone))
        for file in received {
            guard let n = file.metadata.flatMap(number(of:)), contents.indices.contains(n) else { continue }
            #expect(pair.watch.files[Host.fileKey(phoneID, file.id)] == contents[n], "file \(file.id)")
        }
        let finished = pair.phone.appEvents.compactMap { if case .fileTransferDidFinish(let id, nil) = $0 { id } else { nil } }
        #expect(finished.count == Set(finished).count)
        #expect(finished.count == pair.sentFiles(.phone).count)
        #expect(!pair.phone.core.hasPendingWork && !pair.watch.core.hasPendingWork)
    }

    @Test func fileResumesFromTheDurableOffsetAfterTheReceiverCrashes() throws {
        var pair = Pair(seed: 21, maxPayload: 30)
        let bytes = (0..<1_500).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let id = try pair.call(.phone) { core, now throws(SessionError) in try core.transferFile(bytes, metadata: ["kind": "log"], now: now) }
        pair.phone.outgoingFiles[id] = bytes
        while (pair.watch.lastSnapshot?.peers.first?.inboundFile?.received ?? 0) < 500 { pair.step() }
        pair.crash(.watch)
        let durable = try #require(pair.watch.core.snapshot.peers.first?.inboundFile?.received)
        #expect(durable >= 500)
        pair.phone.writes = []
        pair.recover(.watch)
        pair.settle()
        let chunks = try pair.phone.writes.map(SessionFrame.decode).filter { $0.channel == .fileChunk }
        #expect(chunks.map(\.offset).min() == UInt32(durable))
        #expect(pair.watch.files[Host.fileKey(phoneID, id)] == bytes)
        let received = pair.watch.appEvents.compactMap { if case .didReceiveFile(let file) = $0 { file } else { nil } }
        #expect(received == [SessionFile(peer: phoneID, id: id, size: 1_500, metadata: ["kind": "log"])])
    }

    @Test func senderCrashBeforeTheAckIsPersistedStillFinishesOnce() throws {
        var pair = Pair(seed: 22)
        pair.transferUserInfo(numbered(1), from: .phone)
        // Let the watch receive and acknowledge, then crash the phone as the ACK is handled.
        while pair.receivedUserInfo(.watch).isEmpty { pair.step() }
        pair.crashPlan = (.phone, .afterFinish, 0)
        pair.settle()
        #expect(pair.crashed == [.phone])
        #expect(pair.finishedUserInfo(.phone).isEmpty)
        pair.recover(.phone)
        pair.settle()
        #expect(pair.finishedUserInfo(.phone) == [1])
        #expect(pair.receivedUserInfo(.watch) == [1])
        #expect(pair.watch.violations.isEmpty)
    }
}
