import ReplayKit
import BehaviourTrace
import MessagingCore

/// Plays the recorded watch in responder mode: answers the core's requests with the captured
/// answers of the same kind, after the delay they had in the capture.
///
/// What asks for an answer (docs/connectiq-link.md): commands 1, 2, 5 and 6 (their answer has the same
/// command id); on a connection, the key packet (ack type 5), `first` (ack type 0), `last` (ack
/// type 2), an ack request (ack type 3), and a data packet with seq 14 (ack type 1: the watch
/// acknowledges after seq 14, whatever window the phone keeps, so a phone that waits earlier times
/// out as it would against the real watch). Captured answers are taken in capture order per kind.
/// Under faults, each answer follows the fate ``PeerFrameFaults`` gives the frame it was captured
/// in: `drop:frame=192` loses the ack captured in frame 192 when the core's write asks for it.
struct MessagingResponder: Sendable {
    enum AnswerKind: Hashable, Sendable {
        case command(UInt8)
        case ack(UInt8)
    }

    private struct Delivery: Sendable {
        var timeNs: Int64
        var order: Int
        var device: DeviceID
        var bytes: [UInt8]
    }

    private var answers: [AnswerKind: [MessagingCapturePrescan.WatchPacket]] = [:]
    private var cursors: [AnswerKind: Int] = [:]
    private var deliveries: [Delivery] = []
    private var order = 0
    private(set) var faults: PeerFrameFaults

    /// Asks `faults` about the answers it schedules from now on (a fault sweep's fork).
    mutating func adopt(_ faults: PeerFrameFaults) { self.faults = faults }

    /// The same answers left and due, in the same order (their numbering aside); the faults left
    /// out (``CoreAdapter/hasSameState(as:)``).
    func hasSameState(as other: MessagingResponder) -> Bool {
        cursors == other.cursors && answers == other.answers && deliveries.count == other.deliveries.count
            && zip(deliveries, other.deliveries).allSatisfy { $0.timeNs == $1.timeNs && $0.device == $1.device && $0.bytes == $1.bytes }
    }

    init(prescan: MessagingCapturePrescan, faults: PeerFrameFaults = .init()) {
        self.faults = faults
        for packet in prescan.watchPackets {
            if let kind = Self.answerKind(ofWatchPacket: packet.bytes) { answers[kind, default: []].append(packet) }
        }
    }

    /// `true` for a watch packet that answers a phone request: in responder mode it is delivered
    /// by ``coreWrote(_:device:timeNs:)``, not at its captured instant.
    func isAnswer(_ bytes: [UInt8]) -> Bool { Self.answerKind(ofWatchPacket: bytes) != nil }

    /// The core wrote `bytes`: schedule the captured answer it asks for, if any is left.
    /// - Returns: the command the core sent when the recording holds no answer left for it (the
    ///   core will meet its own timeout, as against a watch that stays silent); `nil` otherwise.
    @discardableResult
    mutating func coreWrote(_ bytes: [UInt8], device: DeviceID, timeNs: Int64) -> UInt8? {
        guard let kind = Self.answerKind(ofPhonePacket: bytes) else { return nil }
        let cursor = cursors[kind, default: 0]
        guard let list = answers[kind], cursor < list.count else {
            if case .command(let command) = kind { return command }
            return nil
        }
        cursors[kind] = cursor + 1
        let answer = list[cursor]
        // The run's faults decide for the captured frame this answer comes from: lost, late, twice.
        let at = timeNs + max(0, answer.delayAfterWriteNs ?? 0)
        for delay in faults.deliveries(ofFrame: answer.frame, kind: .notification, capturedAt: .nanoseconds(answer.timeNs)) {
            order += 1
            deliveries.append(Delivery(timeNs: at + delay.replayNanoseconds, order: order, device: device, bytes: answer.bytes))
        }
        deliveries.sort { ($0.timeNs, $0.order) < ($1.timeNs, $1.order) }
        return nil
    }

    /// What a command asks, for a warning.
    static func commandName(_ command: UInt8) -> String {
        switch command {
        case 1: "open connection (command 1)"
        case 2: "close connection (command 2)"
        case 5: "app status (command 5)"
        case 6: "open app (command 6)"
        default: "command \(command)"
        }
    }

    /// The link to `device` dropped: answers still on their way are lost with it.
    mutating func linkDown(device: DeviceID) {
        deliveries.removeAll { $0.device == device }
    }

    /// When the next answer is due.
    var nextDeliveryNs: Int64? { deliveries.first?.timeNs }

    /// The next answer due at or before `nowNs`.
    mutating func popDue(nowNs: Int64) -> (DeviceID, [UInt8])? {
        guard let first = deliveries.first, first.timeNs <= nowNs else { return nil }
        deliveries.removeFirst()
        return (first.device, first.bytes)
    }

    static func answerKind(ofWatchPacket bytes: [UInt8]) -> AnswerKind? {
        guard bytes.count >= 2 else { return nil }
        if bytes[0] == 0x00 {
            return [1, 2, 5, 6].contains(bytes[1]) ? .command(bytes[1]) : nil
        }
        if bytes[0] & 0xF0 == 0xF0, bytes[1] == 0x02, bytes.count >= 3 { return .ack(bytes[2]) }
        return nil
    }

    static func answerKind(ofPhonePacket bytes: [UInt8]) -> AnswerKind? {
        guard !bytes.isEmpty else { return nil }
        if bytes[0] == 0x00 {
            guard bytes.count >= 2, [1, 2, 5, 6].contains(bytes[1]) else { return nil }
            return .command(bytes[1])
        }
        if bytes[0] & 0xF0 == 0xF0 {
            guard bytes.count >= 2 else { return nil }
            switch bytes[1] {
            case 0x05: return .ack(5)
            case 0x00: return .ack(0)
            case 0x01: return .ack(2)
            case 0x03: return .ack(3)
            default: return nil
            }
        }
        return bytes[0] >> 4 == 14 ? .ack(1) : nil
    }
}
