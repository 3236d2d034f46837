import Testing
@testable import MessagingCore
import MonkeyC
import TetherTestSupport

/// Something a misbehaving watch sends, on a link where the echo app holds connection 1.
struct Misbehaviour: Sendable, CustomTestStringConvertible {
    let name: String
    let packets: [String]
    var from: DeviceID = watchA
    let violations: [MessagingViolationKind]
    /// What the phone must write in answer (hex), if anything.
    var answers: [String] = []
    var testDescription: String { name }

    static let uuid = "0180e5205f7e11e498030800200c9a66"
    /// The serialized value 3 (13 bytes) and its CRC-16/ARC.
    static let three = "da7ada7a000000050100000003"

    static let all: [Misbehaviour] = [
        Misbehaviour(name: "empty notification", packets: [""], violations: [.malformedPacket]),
        Misbehaviour(name: "garbage of the wrong size", packets: ["f1 02 00"], violations: [.malformedPacket]),
        Misbehaviour(name: "unknown command", packets: ["00 09 01"], violations: [.unknownCommand]),
        Misbehaviour(name: "unknown control", packets: ["f1 0c"], violations: [.unknownControl]),
        Misbehaviour(name: "data on an unknown connection", packets: ["05 0102"], violations: [.unknownConnection]),
        Misbehaviour(name: "ack on an unknown connection", packets: ["f7 02 00 00 00"], violations: [.unknownConnection]),
        Misbehaviour(name: "data without first", packets: ["01 0102"], violations: [.unexpectedTransferPacket]),
        Misbehaviour(name: "last without first", packets: ["f1 01 00 0000"], violations: [.unexpectedTransferPacket],
                     answers: ["f1 02 02 03 00"]),
        Misbehaviour(name: "seq outside the window", packets: ["f1 00 00 0d000000", "21 " + three], violations: [.sequenceOutsideWindow],
                     answers: ["f1 02 00 00 00"]),
        Misbehaviour(name: "bad CRC", packets: ["f1 00 00 0d000000", "01 " + three, "f1 01 00 0000"], violations: [.badCRC],
                     answers: ["f1 02 00 00 00", "f1 02 02 02 00"]),
        Misbehaviour(name: "more data than announced", packets: ["f1 00 00 04000000", "01 0102030405"], violations: [.lengthMismatch],
                     answers: ["f1 02 00 00 00"]),
        Misbehaviour(name: "last before all data", packets: ["f1 00 00 0d000000", "01 0102", "f1 01 00 0000"], violations: [.lengthMismatch],
                     answers: ["f1 02 00 00 00", "f1 02 02 02 00"]),
        Misbehaviour(name: "encrypted first without a key", packets: ["f1 00 02 10000000"], violations: [.missingEncryptionKey],
                     answers: ["f1 02 00 06 00"]),
        Misbehaviour(name: "first larger than the phone accepts", packets: ["f1 00 00 00000100"], violations: [.messageTooLarge],
                     answers: ["f1 02 00 05 00"]),
        Misbehaviour(name: "undecodable message", packets: ["f1 00 00 04000000", "01 01020304", "f1 01 00 \(crcHex([1, 2, 3, 4]))"],
                     violations: [.undecodableMessage], answers: ["f1 02 00 00 00", "f1 02 02 00 00"]),
        Misbehaviour(name: "second first mid-transfer", packets: ["f1 00 00 0d000000", "f1 00 00 0d000000", "01 " + three, "f1 01 00 \(crcHex(hex(three)))"],
                     violations: [.unexpectedTransferPacket], answers: ["f1 02 00 00 00", "f1 02 00 00 00", "f1 02 02 00 00"]),
        Misbehaviour(name: "ack nobody waits for", packets: ["f1 02 00 00 00"], violations: [.unexpectedAck]),
        Misbehaviour(name: "answer nobody asked for", packets: ["0005 \(uuid) 0100"], violations: [.unexpectedResponse]),
        Misbehaviour(name: "disconnect answer nobody asked for", packets: ["0002 00 01"], violations: [.unexpectedResponse]),
        Misbehaviour(name: "notification from a device not in the list", packets: ["f1 02 00 00 00"], from: watchB, violations: [.unknownDevice]),
        Misbehaviour(name: "watch closes an unknown connection", packets: ["00 04 09"], violations: [.unknownConnection], answers: ["00 04 01 09"]),
        Misbehaviour(name: "watch opens connection 0", packets: ["0003 \(uuid) 00"], violations: [.unknownConnection], answers: ["00 03 01 00"]),
        Misbehaviour(name: "watch opens a connection another app holds", packets: ["0003 11111111222233334444555555555555 01"],
                     violations: [.unknownConnection], answers: ["00 03 01 01"]),
    ]

    static func crcHex(_ bytes: [UInt8]) -> String {
        let crc = CRC16ARC.checksum(bytes)
        return hexString([UInt8(crc & 0xFF), UInt8(crc >> 8)])
    }
}

@Suite struct ViolationTests {
    /// A rig where a first send opened connection 1 for the echo app.
    func connectedRig() -> Rig {
        var rig = Rig()
        rig.send("warm-up")
        rig.clearLogs()
        return rig
    }

    @Test(arguments: Misbehaviour.all)
    func misbehaviourIsAViolationAndTheCoreStillWorks(_ sample: Misbehaviour) throws {
        var rig = connectedRig()
        rig.deliver(sample.packets.map(hex), from: sample.from)
        #expect(rig.violations == sample.violations)
        #expect(rig.writes.map(\.bytes) == sample.answers.map(hex))
        // Whatever was left half-done times out; then the link still carries a message both ways.
        rig.advance(to: .seconds(30))
        rig.clearLogs()
        rig.run(try rig.core.registerForAppMessages(echoOnA, listener: 1, now: rig.now))
        rig.send("after")
        rig.deliver(rig.watches[watchA]!.transferPackets("back", app: echoApp))
        #expect(rig.completions == [.success])
        #expect(rig.events.last == .messageReceived(echoOnA, 1, "back"))
        #expect(rig.violations == [])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func unknownConnectStatusIsAViolationAndFailureUnknown() throws {
        var rig = Rig { $0.connectStatus = ConnectStatus(rawValue: 9) }
        rig.send(1)
        #expect(rig.violations == [.invalidStatus])
        #expect(rig.completions == [.failureUnknown])
    }

    @Test func unknownAckStatusIsAViolationAndFailureUnknown() throws {
        var rig = Rig { $0.lastStatus = AckStatus(rawValue: 0x42) }
        rig.send(1)
        #expect(rig.violations == [.invalidStatus])
        #expect(rig.completions == [.failureUnknown])
    }

    @Test func connectAnswerWithConnectionZeroFailsTheSend() throws {
        var rig = Rig { $0.silences = [.connect] }
        rig.send(1)
        rig.deliver([hex("000100 0180e5205f7e11e498030800200c9a66 00 00")])
        #expect(rig.violations == [.unknownConnection])
        #expect(rig.completions == [.failureInternalError])
        #expect(!rig.core.hasPendingWork)
    }

    @Test func notificationWhileTheLinkIsDownIsAViolation() throws {
        var rig = connectedRig()
        rig.run(rig.core.linkDisconnected(watchA, now: .zero))
        rig.clearLogs()
        rig.deliver([hex("f1 02 00 00 00")])
        #expect(rig.violations == [.unknownDevice])
    }

    /// Seeded random notifications at a core in the middle of a send: never a trap, and afterwards
    /// every send still ends exactly once.
    @Test func randomNotificationsNeverBreakTheCore() throws {
        var random = SplitMix64(state: 0xBAD5EED)
        var rig = Rig { $0.silences = [.windowAck] }
        let interrupted = rig.send(twoKilobytes)
        let prefixes: [[UInt8]] = [[0x00], [0xF1], [0x01], [0x00, 0x01], [0xF1, 0x02], [0xF1, 0x00, 0x00]]
        for round in 0..<5_000 {
            let prefix = prefixes[round % prefixes.count]
            let tail = (0..<Int.random(in: 0..<22, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            rig.run(rig.core.receive(prefix + tail, from: watchA, now: rig.now))
            if round % 500 == 0 { rig.advance(to: rig.now + .seconds(1)) }
        }
        rig.advance(to: rig.now + .seconds(60))
        #expect(!rig.core.hasPendingWork)
        #expect(rig.events.filter { if case .completion(interrupted, _, _) = $0 { true } else { false } }.count == 1)
        // A new send on a fresh link ends exactly once too.
        rig.run(rig.core.linkDisconnected(watchA, now: rig.now))
        rig.watches[watchA] = FakeWatch(device: watchA)
        rig.run(rig.core.linkConnected(watchA, maxWriteLength: 20, now: rig.now))
        rig.clearLogs()
        let send = rig.send("still here")
        #expect(rig.events.last == .completion(send, echoOnA, .success))
    }
}
