import Testing
@testable import MessagingCore
import MonkeyC

/// The transitions of an app's channel where the connection, the connect command, the transfers and
/// the stored key used to be separate fields that could disagree: what each one leaves behind,
/// timers included.
@Suite struct ChannelStateTests {
    /// A rig whose watch opened connection 1 for the echo app (command 3), logs cleared.
    func rigWithWatchConnection(_ configure: @escaping (inout FakeWatch) -> Void = { _ in }) -> Rig {
        var rig = Rig(watch: configure)
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        rig.clearLogs()
        return rig
    }

    @Test func stepTimerDoesNothingAfterTheWatchClosedTheConnection() throws {
        var rig = Rig { $0.silences = [.lastAck] }
        rig.send(1)
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        #expect(rig.core.nextDeadline == nil)
        rig.clearLogs()
        rig.advance(to: .seconds(60))
        #expect(rig.events == [])
        #expect(rig.writes.isEmpty)
    }

    @Test func inboundTimerDoesNothingAfterTheWatchClosedTheConnection() throws {
        var rig = rigWithWatchConnection()
        let packets = rig.watches[watchA]!.transferPackets(twoKilobytes, app: echoApp)
        rig.deliver(Array(packets.prefix(5)))
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        #expect(rig.core.nextDeadline == nil)
        rig.clearLogs()
        rig.advance(to: .seconds(60))
        #expect(rig.events == [])
    }

    @Test func commandTimerDoesNothingAfterTheLinkDropped() throws {
        var rig = Rig { $0.silences = [.appInfo] }
        let (request, actions) = try rig.core.getAppStatus(echoOnA, now: .zero)
        rig.run(actions)
        rig.run(rig.core.linkDisconnected(watchA, now: .seconds(1)))
        #expect(rig.events == [.deviceStatus(watchA, .notConnected), .appStatus(request, echoOnA, nil)])
        #expect(rig.core.nextDeadline == nil)
        rig.clearLogs()
        rig.advance(to: .seconds(60))
        #expect(rig.events == [])
    }

    @Test func invalidConnectionAckLeavesNoStepTimer() throws {
        var rig = Rig { $0.firstStatuses = [.invalidConnection] }
        rig.send(1)
        #expect(rig.completions == [.failureInternalError])
        #expect(rig.core.nextDeadline == nil)
        #expect(!rig.core.hasPendingWork)
    }

    @Test func watchClosingWhileTheConnectIsInFlightLeavesTheConnectToReopenTheChannel() throws {
        var rig = Rig { $0.silences = [.connect, .lastAck] }
        rig.send(1)
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        let queued = rig.send(2)
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        rig.clearLogs()
        // The phone's own connect is still in flight: it answers now, late, with connection 2.
        rig.watches[watchA]!.connections[2] = echoApp
        rig.deliver([LinkPacket.command(.connectResponse(status: .success, app: echoApp, connection: 2, flags: 0)).encode()])
        #expect(rig.events.prefix(2) == [
            .connectionOpened(echoOnA, connection: 2, largePackets: false, byWatch: false),
            .progress(queued, echoOnA, sent: 0, total: 16),
        ])
        #expect(rig.writes.allSatisfy { LinkPacket.decode($0.bytes, from: .phone).isCommand == false })
    }

    @Test func sendQueuedWhileTheConnectIsInFlightQueuesNoSecondConnect() throws {
        var rig = Rig { $0.silences = [.connect, .lastAck] }
        rig.send(1)
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        rig.send(2)
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        let connects = rig.packets().filter { if case .command(.connectRequest) = $0 { true } else { false } }
        #expect(connects.count == 1)
    }

    @Test func connectTimeoutAfterTheWatchOpenedAndClosedFailsTheQueuedSend() throws {
        var rig = Rig { $0.silences = [.connect, .lastAck] }
        rig.send(1)
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        let queued = rig.send(2)
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        rig.clearLogs()
        rig.advance(to: .seconds(3))
        #expect(rig.events == [
            .timeout(.connect, watchA, echoOnA, deadline: .seconds(3)),
            .completion(queued, echoOnA, .failureTimeout),
        ])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func watchRepeatingTheAppsConnectionKeepsTheTransferUnderWay() throws {
        var rig = rigWithWatchConnection { $0.silences = [.lastAck] }
        rig.send(1)
        rig.clearLogs()
        rig.deliver([LinkPacket.command(.watchOpened(app: echoApp, connection: 1)).encode()])
        #expect(rig.events == [.connectionOpened(echoOnA, connection: 1, largePackets: false, byWatch: true)])
        #expect(rig.core.nextDeadline == .seconds(5))
    }

    @Test func watchMovingTheAppToAnotherConnectionEndsTheTransferOnTheOldOne() throws {
        var rig = rigWithWatchConnection { $0.silences = [.lastAck] }
        let send = rig.send(1)
        rig.clearLogs()
        rig.watches[watchA]!.connections = [2: echoApp]
        rig.deliver([LinkPacket.command(.watchOpened(app: echoApp, connection: 2)).encode()])
        #expect(rig.events == [
            .completion(send, echoOnA, .failureUnknown),
            .connectionOpened(echoOnA, connection: 2, largePackets: false, byWatch: true),
        ])
        #expect(rig.core.nextDeadline == nil)
    }

    @Test func closingTheConnectionForgetsTheStoredKey() throws {
        var rig = rigWithWatchConnection()
        let key: [UInt8] = Array(100..<116)
        let packets = rig.watches[watchA]!.transferPackets("secret", app: echoApp, key: key)
        rig.deliver([packets[0]]) // the key packet alone
        rig.deliver([rig.watches[watchA]!.closeConnection(of: echoApp)])
        rig.deliver([rig.watches[watchA]!.openConnection(for: echoApp)])
        rig.clearLogs()
        rig.deliver([packets[1]]) // the encrypted `first`
        #expect(rig.writes.map(\.bytes) == [hex("f1 02 00 06 00")])
        #expect(rig.violations == [.missingEncryptionKey])
    }

    @Test func keyStoredBeforeAPlainTransferSurvivesItsTimeout() throws {
        var rig = rigWithWatchConnection()
        rig.run(try rig.core.registerForAppMessages(echoOnA, listener: 1, now: .zero))
        let key: [UInt8] = Array(100..<116)
        let encrypted = rig.watches[watchA]!.transferPackets("secret", app: echoApp, key: key)
        let plain = rig.watches[watchA]!.transferPackets(twoKilobytes, app: echoApp)
        rig.deliver([encrypted[0]] + Array(plain.prefix(3)))
        rig.advance(to: .seconds(5))
        #expect(rig.events.last == .timeout(.inboundTransfer, watchA, echoOnA, deadline: .seconds(5)))
        rig.clearLogs()
        rig.deliver(Array(encrypted.dropFirst()))
        #expect(rig.events == [.messageReceived(echoOnA, 1, "secret")])
    }

    @Test func timersDueAtOneInstantFireCommandThenOutboundThenInbound() throws {
        var rig = rigWithWatchConnection { $0.silences = [.appInfo, .keyAck] }
        let send = rig.send(1)
        rig.deliver([rig.watches[watchA]!.transferPackets(1, app: echoApp)[0]])
        rig.now = .seconds(2)
        let (request, actions) = try rig.core.getAppStatus(otherOnA, now: rig.now)
        rig.run(actions)
        rig.clearLogs()
        rig.advance(to: .seconds(5))
        #expect(rig.events == [
            .timeout(.appInfo, watchA, otherOnA, deadline: .seconds(5)), .appStatus(request, otherOnA, nil),
            .timeout(.keyAck, watchA, echoOnA, deadline: .seconds(5)), .completion(send, echoOnA, .failureTimeout),
            .timeout(.inboundTransfer, watchA, echoOnA, deadline: .seconds(5)),
        ])
    }
}

extension LinkPacket {
    /// Whether the packet is a command (byte 0 `0x00`).
    fileprivate var isCommand: Bool {
        if case .command = self { return true }
        return false
    }
}
