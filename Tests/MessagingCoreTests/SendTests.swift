import Testing
@testable import MessagingCore
import MonkeyC

/// A value whose serialization is exactly 2,048 bytes (a 2,035-byte byte array).
let twoKilobytes = MonkeyCValue.byteArray((0..<2035).map { UInt8(truncatingIfNeeded: $0 &* 7) })

@Suite struct SendTests {
    @Test func onePacketSendCompletesWithProgressAtStartAndEnd() throws {
        var rig = Rig()
        let send = rig.send(3)
        #expect(rig.events == [
            .connectionOpened(echoOnA, connection: 1, largePackets: false, byWatch: false),
            .progress(send, echoOnA, sent: 0, total: 16),
            .progress(send, echoOnA, sent: 16, total: 16),
            .completion(send, echoOnA, .success),
        ])
        #expect(rig.watches[watchA]!.received.map(\.value) == [3])
        #expect(!rig.core.hasPendingWork)
        #expect(rig.core.nextDeadline == nil)
    }

    @Test func twoKilobyteSendAcksEveryWindowWithExactProgress() throws {
        var rig = Rig()
        #expect(try MonkeyCSerialization.encode(twoKilobytes).count == 2048)
        let send = rig.send(twoKilobytes)
        #expect(rig.progress == [[0, 2048], [285, 2048], [570, 2048], [855, 2048], [1140, 2048], [1425, 2048], [1710, 2048], [1995, 2048], [2048, 2048]])
        #expect(rig.completions == [.success])
        #expect(rig.events.last == .completion(send, echoOnA, .success))
        let dataPackets = rig.packets().filter { if case .data = $0 { true } else { false } }
        #expect(dataPackets.count == 108)
        let windowAcks = rig.notifications.filter { LinkPacket.decode($0.bytes, from: .watch) == .control(connection: 1, .ack(type: .data, status: .success, sequence: 14)) }
        #expect(windowAcks.count == 7)
        #expect(rig.packets().last == .control(connection: 1, .last(sequence: 2, crc: CRC16ARC.checksum(rig.watches[watchA]!.transferred[0]))))
        #expect(rig.watches[watchA]!.received.map(\.value) == [twoKilobytes])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func aSendEndingOnSeq14WaitsForTheWindowAckBeforeLast() throws {
        // Plain, so the wire length is exact: 8 + 5 + 272 = 285 bytes = 15 packets of 19.
        var rig = Rig(configuration: MessagingConfiguration(encryptOutgoing: false))
        let value = MonkeyCValue.byteArray(Array(repeating: 1, count: 272))
        rig.send(value)
        let kinds = rig.packets().suffix(3).map(\.summary)
        #expect(kinds == ["data seq 13 conn 1, 19 bytes", "data seq 14 conn 1, 19 bytes", "last seq 14 crc 0x\(String(CRC16ARC.checksum(try MonkeyCSerialization.encode(value)), radix: 16)) conn 1"])
        #expect(rig.progress == [[0, 285], [285, 285], [285, 285]])
        #expect(rig.completions == [.success])
    }

    @Test func encryptedBytesOnTheWireDecryptToTheSerializedMessage() throws {
        var rig = Rig()
        let value: MonkeyCValue = ["name": "tether", "values": [1, 2.5, .int64(1 << 40)], "on": true]
        rig.send(value)
        let packets = rig.packets()
        guard case .control(_, .encryptionKey(let key, false)) = packets[1] else {
            Issue.record("expected the key packet after connect, got \(packets[1].summary)")
            return
        }
        guard case .control(_, .first(let flags, let length)) = packets[2] else {
            Issue.record("expected first after the key, got \(packets[2].summary)")
            return
        }
        let wire = packets.flatMap { packet -> [UInt8] in if case .data(_, _, let payload) = packet { payload } else { [] } }
        let serialized = try MonkeyCSerialization.encode(value)
        #expect(flags == .encrypted)
        #expect(Int(length) == wire.count)
        #expect(wire.count == XXTEA.pad(serialized).count)
        #expect(try XXTEA.decrypt(wire, key: key) == XXTEA.pad(serialized))
    }

    @Test func plainTransfersWhenEncryptionIsOff() throws {
        var rig = Rig(configuration: MessagingConfiguration(encryptOutgoing: false))
        rig.send(3)
        #expect(rig.packets().map(\.summary) == [
            "command connect → 0180e520-5f7e-11e4-9803-0800200c9a66 force-open",
            "first conn 1, 13 bytes", "data seq 0 conn 1, 13 bytes", "last seq 0 crc 0x78a8 conn 1",
        ])
        #expect(rig.completions == [.success])
    }

    @Test func largePacketsWhenTheWatchAllowsAndTheWriteLengthFits() throws {
        var rig = Rig(maxWriteLength: 244) { $0.largePackets = true }
        rig.send(twoKilobytes)
        let sizes = rig.packets().compactMap { packet -> Int? in if case .data(_, _, let payload) = packet { payload.count } else { nil } }
        #expect(sizes == Array(repeating: 191, count: 10) + [138])
        #expect(rig.progress == [[0, 2048], [2048, 2048]])
        #expect(rig.completions == [.success])
    }

    @Test func smallPacketsWhenTheWriteLengthIsTooShortForLargeOnes() throws {
        var rig = Rig(maxWriteLength: 100) { $0.largePackets = true }
        rig.send(twoKilobytes)
        let sizes = rig.packets().compactMap { packet -> Int? in if case .data(_, _, let payload) = packet { payload.count } else { nil } }
        #expect(Set(sizes.dropLast()) == [19])
    }

    @Test func connectAnswerCutTo20BytesMeansSmallPackets() throws {
        var rig = Rig(maxWriteLength: 244) { $0.cutConnectAnswer = true; $0.largePackets = true }
        let send = rig.send(twoKilobytes)
        #expect(rig.events.first == .connectionOpened(echoOnA, connection: 1, largePackets: false, byWatch: false))
        #expect(rig.events.last == .completion(send, echoOnA, .success))
    }

    @Test func sendsToOneAppGoOneAtATimeOnOneConnection() throws {
        var rig = Rig { $0.silences = [.lastAck] }
        let first = rig.send("one")
        let second = rig.send("two")
        // The second waits: nothing of it is written while the first waits for its last ack.
        #expect(rig.packets().map(\.summary).filter { $0.hasPrefix("encryption key") }.count == 1)
        rig.watches[watchA]!.silences = []
        rig.advance(to: .seconds(5))
        #expect(rig.completions == [.failureTimeout, .success])
        #expect(rig.events.compactMap { if case let .completion(id, _, _) = $0 { id } else { nil } } == [first, second])
        #expect(rig.packets().filter { if case .command(.connectRequest) = $0 { true } else { false } }.count == 1)
        #expect(rig.watches[watchA]!.received.map(\.value) == ["two"])
    }

    @Test func twoAppsOnOneDeviceGetTwoConnections() throws {
        var rig = Rig()
        rig.send(1, to: echoOnA)
        rig.send(2, to: otherOnA)
        #expect(rig.events.filter { if case .connectionOpened = $0 { true } else { false } } == [
            .connectionOpened(echoOnA, connection: 1, largePackets: false, byWatch: false),
            .connectionOpened(otherOnA, connection: 2, largePackets: false, byWatch: false),
        ])
        #expect(rig.completions == [.success, .success])
        #expect(rig.watches[watchA]!.received.map(\.app) == [echoApp, otherApp])
    }

    @Test func twoAppsOnTwoDevicesProceedAtOnce() throws {
        var rig = Rig(devices: [deviceA, deviceB])
        rig.holding = true
        let onA = try rig.core.sendMessage(twoKilobytes, to: echoOnA, now: .zero)
        let onB = try rig.core.sendMessage(twoKilobytes, to: echoOnB, now: .zero)
        rig.run(onA.1 + onB.1)
        rig.releaseHeld()
        #expect(rig.completions == [.success, .success])
        let devicesWritten = rig.writes.map(\.device)
        let lastToA = devicesWritten.lastIndex(of: watchA)!, firstToB = devicesWritten.firstIndex(of: watchB)!
        #expect(firstToB < lastToA, "the transfers interleave")
        #expect(rig.watches[watchA]!.received.map(\.value) == [twoKilobytes])
        #expect(rig.watches[watchB]!.received.map(\.value) == [twoKilobytes])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func oversizeMessageFailsWithUnsupportedTypeAndSendsNothing() throws {
        var rig = Rig()
        let (send, actions) = try rig.core.sendMessage(.byteArray(Array(repeating: 0, count: 16_372)), to: echoOnA, now: .zero)
        #expect(actions == [.event(.completion(send, echoOnA, .failureUnsupportedType))])
        let (fits, _) = try rig.core.sendMessage(.byteArray(Array(repeating: 0, count: 16_371)), to: echoOnA, now: .zero)
        #expect(fits == SendID(rawValue: send.rawValue + 1))
        #expect(rig.core.hasPendingWork)
    }

    @Test func sendToADisconnectedDeviceFailsAtOnce() throws {
        var rig = Rig()
        _ = rig.core.linkDisconnected(watchA, now: .zero)
        let (send, actions) = try rig.core.sendMessage(1, to: echoOnA, now: .zero)
        #expect(actions == [.event(.completion(send, echoOnA, .failureDeviceNotAvailable))])
    }

    @Test func disconnectMidTransferFailsTheActiveAndQueuedSends() throws {
        var rig = Rig { $0.silences = [.windowAck] }
        let active = rig.send(twoKilobytes)
        let queued = rig.send(1)
        rig.clearLogs()
        rig.run(rig.core.linkDisconnected(watchA, now: .seconds(1)))
        #expect(rig.events == [
            .deviceStatus(watchA, .notConnected),
            .completion(active, echoOnA, .failureDeviceNotAvailable),
            .completion(queued, echoOnA, .failureDeviceNotAvailable),
        ])
        #expect(!rig.core.hasPendingWork)
        #expect(rig.core.nextDeadline == nil)
    }

    @Test func bluetoothTurningOffFailsTransfersToo() throws {
        var rig = Rig { $0.silences = [.lastAck] }
        let send = rig.send(1)
        rig.clearLogs()
        rig.run(rig.core.bluetoothStateChanged(ready: false, now: .seconds(1)))
        #expect(rig.events == [.deviceStatus(watchA, .bluetoothNotReady), .completion(send, echoOnA, .failureDeviceNotAvailable)])
    }

    @Test func transferNotStartedThreeTimesGivesMaxRetriesAfterThreeFirstPackets() throws {
        var rig = Rig { $0.firstStatuses = [.transferNotStarted, .transferNotStarted, .transferNotStarted] }
        rig.send(1)
        let firsts = rig.packets().filter { if case .control(_, .first) = $0 { true } else { false } }
        #expect(firsts.count == 3)
        #expect(rig.completions == [.failureMaxRetries])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func transferNotStartedOnceThenAcceptedSucceeds() throws {
        var rig = Rig { $0.firstStatuses = [.transferNotStarted] }
        rig.send(1)
        #expect(rig.packets().filter { if case .control(_, .first) = $0 { true } else { false } }.count == 2)
        #expect(rig.completions == [.success])
    }

    @Test func retriedFirstRestartsTheStepTimer() throws {
        var rig = Rig { $0.silences = [.firstAck] }
        rig.send(1)
        #expect(rig.core.nextDeadline == .seconds(5))
        rig.now = .seconds(4)
        rig.deliver([hex("f1 02 00 03 00")])
        #expect(rig.packets().filter { if case .control(_, .first) = $0 { true } else { false } }.count == 2)
        #expect(rig.core.nextDeadline == .seconds(9))
        rig.advance(to: .seconds(9))
        #expect(rig.completions == [.failureTimeout])
    }
}

/// A failure the watch reports and the result the app sees.
struct FailureCase: Sendable, CustomTestStringConvertible {
    let name: String
    let connectStatus: UInt8?
    let keyStatus: UInt8?
    let firstStatus: UInt8?
    let lastStatus: UInt8?
    let result: IQSendMessageResult
    var testDescription: String { "\(name) → \(result.name)" }

    static let all: [FailureCase] = [
        FailureCase(name: "connect app not found", connectStatus: 1, keyStatus: nil, firstStatus: nil, lastStatus: nil, result: .failureAppNotFound),
        FailureCase(name: "connect no free ids", connectStatus: 2, keyStatus: nil, firstStatus: nil, lastStatus: nil, result: .failureDeviceIsBusy),
        FailureCase(name: "connect already open", connectStatus: 3, keyStatus: nil, firstStatus: nil, lastStatus: nil, result: .failureInternalError),
        FailureCase(name: "first out of memory", connectStatus: nil, keyStatus: nil, firstStatus: 5, lastStatus: nil, result: .failureInsufficientMemory),
        FailureCase(name: "key out of memory", connectStatus: nil, keyStatus: 5, firstStatus: nil, lastStatus: nil, result: .failureInsufficientMemory),
        FailureCase(name: "last CRC failure", connectStatus: nil, keyStatus: nil, firstStatus: nil, lastStatus: 2, result: .failureUnknown),
        FailureCase(name: "last resend", connectStatus: nil, keyStatus: nil, firstStatus: nil, lastStatus: 1, result: .failureUnknown),
        FailureCase(name: "first no encryption key", connectStatus: nil, keyStatus: nil, firstStatus: 6, lastStatus: nil, result: .failureInternalError),
        FailureCase(name: "first invalid connection", connectStatus: nil, keyStatus: nil, firstStatus: 4, lastStatus: nil, result: .failureInternalError),
    ]
}

@Suite struct SendFailureTests {
    @Test(arguments: FailureCase.all)
    func watchStatusMapsToResult(_ sample: FailureCase) throws {
        var rig = Rig { watch in
            watch.connectStatus = sample.connectStatus.map(ConnectStatus.init(rawValue:))
            if let status = sample.keyStatus { watch.keyStatus = AckStatus(rawValue: status) }
            if let status = sample.firstStatus { watch.firstStatuses = [AckStatus(rawValue: status)] }
            watch.lastStatus = sample.lastStatus.map(AckStatus.init(rawValue:))
        }
        rig.send(1)
        #expect(rig.completions == [sample.result])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func appNotInstalledFailsTheConnectWithAppNotFound() throws {
        var rig = Rig { $0.installed = [:] }
        rig.send(1)
        #expect(rig.completions == [.failureAppNotFound])
    }

    @Test func invalidConnectionAckMakesTheNextSendReconnect() throws {
        var rig = Rig { $0.firstStatuses = [.invalidConnection] }
        rig.send(1)
        rig.watches[watchA]!.connections = [:] // the watch forgot it too
        rig.send(2)
        #expect(rig.completions == [.failureInternalError, .success])
        #expect(rig.packets().filter { if case .command(.connectRequest) = $0 { true } else { false } }.count == 2)
    }

    @Test func connectFailureFailsOnlyTheHeadAndTheNextMessageTriesAgain() throws {
        var rig = Rig { $0.connectStatus = .noFreeConnection }
        let (first, firstActions) = try rig.core.sendMessage(1, to: echoOnA, now: .zero)
        let (second, secondActions) = try rig.core.sendMessage(2, to: echoOnA, now: .zero)
        rig.run(firstActions + secondActions)
        #expect(rig.events == [.completion(first, echoOnA, .failureDeviceIsBusy), .completion(second, echoOnA, .failureDeviceIsBusy)])
        #expect(rig.packets().filter { if case .command(.connectRequest) = $0 { true } else { false } }.count == 2)
    }
}
