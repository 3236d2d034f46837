import Testing
@testable import MessagingCore
import MonkeyC

@Suite struct ReceiveTests {
    /// A rig whose watch opened a connection for the echo app (command 3), with listener 1 registered.
    func rigWithWatchConnection(listen: Bool = true) throws -> Rig {
        var rig = Rig()
        if listen { rig.run(try rig.core.registerForAppMessages(echoOnA, listener: 1, now: .zero)) }
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        return rig
    }

    @Test func watchOpenedConnectionIsAnsweredWithStatusZero() throws {
        let rig = try rigWithWatchConnection()
        #expect(rig.writes.map(\.bytes) == [hex("00 03 00 01")])
        #expect(rig.events == [.connectionOpened(echoOnA, connection: 1, largePackets: false, byWatch: true)])
    }

    @Test func plainMessageFromTheWatchReachesTheListener() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        let value: MonkeyCValue = ["reply": "pong", "n": 42]
        rig.deliver(rig.watches[watchA]!.transferPackets(value, app: echoApp))
        #expect(rig.events == [.messageReceived(echoOnA, 1, value.sortingDictionaryKeys())])
        let last = LinkPacket.decode(rig.notifications.last!.bytes, from: .watch)
        guard case .control(1, .last(let sequence, _)) = last else {
            Issue.record("expected last, got \(last.summary)")
            return
        }
        #expect(rig.writes.map(\.bytes) == [hex("f1 02 00 00 00"), hex("f1 02 02 00") + [sequence]])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func encryptedMessageFromTheWatchReachesTheListener() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        let key: [UInt8] = Array(100..<116)
        rig.deliver(rig.watches[watchA]!.transferPackets("secret", app: echoApp, key: key))
        #expect(rig.events == [.messageReceived(echoOnA, 1, "secret")])
        #expect(rig.writes.first?.bytes == hex("f1 02 05 00 00"))
    }

    @Test func longMessageFromTheWatchIsAckedAfterEverySeq14() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        rig.deliver(rig.watches[watchA]!.transferPackets(twoKilobytes, app: echoApp))
        let windowAcks = rig.writes.filter { $0.bytes == hex("f1 02 01 00 0e") }
        #expect(windowAcks.count == 7)
        #expect(rig.events == [.messageReceived(echoOnA, 1, twoKilobytes)])
    }

    @Test func messagesAreDeliveredInOrder() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        for value: MonkeyCValue in [1, 2, 3] {
            rig.deliver(rig.watches[watchA]!.transferPackets(value, app: echoApp))
        }
        #expect(rig.events == [.messageReceived(echoOnA, 1, 1), .messageReceived(echoOnA, 1, 2), .messageReceived(echoOnA, 1, 3)])
    }

    @Test func messageWithoutAListenerIsUnclaimed() throws {
        var rig = try rigWithWatchConnection(listen: false)
        rig.clearLogs()
        rig.deliver(rig.watches[watchA]!.transferPackets("hello", app: echoApp))
        #expect(rig.events == [.messageUnclaimed(echoOnA, "hello")])
    }

    @Test func messageOnAConnectionThePhoneOpenedReachesTheListener() throws {
        var rig = Rig()
        rig.run(try rig.core.registerForAppMessages(echoOnA, listener: 5, now: .zero))
        rig.send("ping")
        rig.clearLogs()
        rig.deliver(rig.watches[watchA]!.transferPackets("pong", app: echoApp))
        #expect(rig.events == [.messageReceived(echoOnA, 5, "pong")])
    }

    @Test func secondListenerForOneAppIsAViolationAndTheFirstKeepsTheMessages() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        rig.run(try rig.core.registerForAppMessages(echoOnA, listener: 2, now: .zero))
        #expect(rig.violations == [.duplicateListener])
        rig.clearLogs()
        rig.deliver(rig.watches[watchA]!.transferPackets(1, app: echoApp))
        #expect(rig.events == [.messageReceived(echoOnA, 1, 1)])
        rig.clearLogs()
        rig.run(try rig.core.unregisterForAppMessages(echoOnA, listener: 1, now: .zero))
        rig.deliver(rig.watches[watchA]!.transferPackets(2, app: echoApp))
        #expect(rig.events == [.messageReceived(echoOnA, 2, 2)])
    }

    @Test func sameListenerRegisteringTwiceIsNoViolation() throws {
        var rig = Rig()
        rig.run(try rig.core.registerForAppMessages(echoOnA, listener: 1, now: .zero))
        rig.run(try rig.core.registerForAppMessages(echoOnA, listener: 1, now: .zero))
        #expect(rig.events == [])
    }

    @Test func sendUsesTheConnectionTheWatchOpened() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        rig.send(1)
        #expect(rig.packets().contains { if case .command(.connectRequest) = $0 { true } else { false } } == false)
        #expect(rig.completions == [.success])
    }

    @Test func watchClosedConnectionIsAnsweredAndTheNextSendReconnects() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        #expect(rig.writes.map(\.bytes) == [hex("00 04 00 01")])
        #expect(rig.events == [.connectionClosed(echoOnA, connection: 1)])
        rig.clearLogs()
        rig.send(1)
        #expect(rig.packets().first == .command(.connectRequest(app: echoApp, flags: 1)))
        #expect(rig.completions == [.success])
    }

    @Test func watchClosingMidTransferEndsTheSendWithFailureUnknown() throws {
        var rig = Rig { $0.silences = [.lastAck] }
        let send = rig.send(1)
        rig.clearLogs()
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        #expect(rig.events == [.connectionClosed(echoOnA, connection: 1), .completion(send, echoOnA, .failureUnknown)])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func ackRequestIsAnsweredWithTypeThree() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        rig.deliver([hex("f1 03 05")])
        #expect(rig.writes.map(\.bytes) == [hex("f1 02 03 00 05")])
        #expect(rig.events == [])
    }

    @Test func capabilitiesAreAcknowledgedWithTypeFour() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        rig.deliver([hex("f1 04 0102")])
        #expect(rig.writes.map(\.bytes) == [hex("f1 02 04 00 00")])
    }

    @Test func keyRequestIsAnsweredWithAFreshKeyTheWatchMayEncryptWith() throws {
        var rig = try rigWithWatchConnection()
        rig.clearLogs()
        rig.deliver([hex("f1 06")])
        var expectedSource = SeededKeySource(seed: 7)
        let key = expectedSource.nextKey()
        #expect(rig.writes.map(\.bytes) == [hex("f1 05") + key + [1]])
        // The watch then encrypts with that key, without sending a key packet of its own.
        rig.clearLogs()
        let packets = rig.watches[watchA]!.transferPackets("with your key", app: echoApp, key: key)
        rig.deliver(Array(packets.dropFirst()))
        #expect(rig.events == [.messageReceived(echoOnA, 1, "with your key")])
    }

    @Test func ackOfOneTypeWhileWaitingForAnotherIsIgnored() throws {
        var rig = Rig { $0.silences = [.firstAck] }
        rig.send(1)
        rig.clearLogs()
        rig.deliver([hex("f1 02 02 00 00")])
        #expect(rig.violations == [.unexpectedAck])
        rig.deliver([hex("f1 02 00 00 00")])
        #expect(rig.completions == [.success])
    }

    @Test func ackWithAnUnexpectedSeqIsAcceptedAndReported() throws {
        var rig = Rig { $0.silences = [.firstAck] }
        rig.send(1)
        rig.clearLogs()
        rig.deliver([hex("f1 02 00 00 07")])
        #expect(rig.violations == [.sequenceMismatch])
        #expect(rig.completions == [.success])
    }
}

@Suite struct CrossingOpenTests {
    @Test func watchOpeningWhileTheConnectIsInFlightKeepsTheWatchsConnection() throws {
        var rig = Rig { $0.silences = [.connect] }
        let send = rig.send(1)
        // The watch opens connection 2 for the app itself; the queued send goes out on it.
        rig.watches[watchA]!.connections[1] = otherApp
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        #expect(rig.events.contains(.completion(send, echoOnA, .success)))
        // The late connect answer names connection 3: reported, and connection 2 stays in use.
        rig.clearLogs()
        rig.deliver([hex("000100 0180e5205f7e11e498030800200c9a66 03 00")])
        #expect(rig.violations == [.unknownConnection])
        rig.send(2)
        #expect(rig.packets().allSatisfy { packet in
            switch packet {
            case .control(let connection, _): connection == 2
            case .data(_, let connection, _): connection == 2
            default: false
            }
        })
        #expect(rig.completions == [.success])
        #expect(!rig.core.hasPendingWork)
    }
}

extension CrossingOpenTests {
    @Test func connectTimingOutAfterTheWatchOpenedFailsNoSend() throws {
        var rig = Rig { $0.silences = [.connect, .lastAck] }
        rig.send(1)
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        rig.send(2) // queued behind the first, which waits for its last ack until 5 s
        rig.clearLogs()
        rig.advance(to: .seconds(3))
        #expect(rig.events == [.timeout(.connect, watchA, echoOnA, deadline: .seconds(3))])
        rig.watches[watchA]!.silences = []
        rig.advance(to: .seconds(5))
        #expect(rig.completions == [.failureTimeout, .success])
        #expect(!rig.core.hasPendingWork)
    }
}
