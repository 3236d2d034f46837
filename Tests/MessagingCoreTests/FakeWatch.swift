@testable import MessagingCore
import MonkeyC
import Testing

/// A watch that answers the phone as docs/connectiq-link.md says, written independently of the core
/// (it shares only the packet codec, CRC and cipher, which have their own tests). Knobs make it
/// misbehave or stay silent for the failure tests.
struct FakeWatch {
    /// Which answers the watch leaves out (to make the phone's timers run out).
    enum Silence: Hashable {
        case connect, appInfo, openApp, keyAck, firstAck, windowAck, lastAck
    }

    /// A transfer from the phone being received.
    struct Incoming {
        var flags: TransferFlags
        var length: Int
        var key: [UInt8]?
        var bytes: [UInt8] = []
        var packets = 0
    }

    let device: DeviceID
    /// Installed apps and their versions.
    var installed: [IQUUID: UInt16]
    /// Whether the connect answer sets the large-packet flag.
    var largePackets = false
    /// Answer connect with 20 bytes (flags cut off).
    var cutConnectAnswer = false
    /// Answer connect with this status instead of opening a connection.
    var connectStatus: ConnectStatus?
    /// Open-app codes per app; default: prompt shown when installed, else not installed.
    var openAppCodes: [IQUUID: OpenAppCode] = [:]
    /// Statuses for successive `first` acks (then success).
    var firstStatuses: [AckStatus] = []
    /// Status for the key ack.
    var keyStatus: AckStatus = .success
    /// Status for the `last` ack, overriding the CRC check.
    var lastStatus: AckStatus?
    var silences: Set<Silence> = []

    /// Open connections: id → app.
    var connections: [UInt8: IQUUID] = [:]
    var keys: [UInt8: [UInt8]] = [:]
    var incoming: [UInt8: Incoming] = [:]
    /// Messages received from the phone, in order.
    var received: [(app: IQUUID, value: MonkeyCValue)] = []
    /// The ciphertexts (or plain bytes) of every complete transfer, in order.
    var transferred: [[UInt8]] = []
    /// Every packet the phone wrote, decoded.
    var writes: [LinkPacket] = []

    init(device: DeviceID, installed: [IQUUID: UInt16] = [echoApp: 7, otherApp: 2]) {
        self.device = device
        self.installed = installed
    }

    /// The notifications the watch sends in answer to one phone write.
    mutating func handle(_ bytes: [UInt8]) -> [[UInt8]] {
        let packet = LinkPacket.decode(bytes, from: .phone)
        writes.append(packet)
        switch packet {
        case .command(.connectRequest(let app, _)):
            if silences.contains(.connect) { return [] }
            if let status = connectStatus {
                return [answer(.connectResponse(status: status, app: app, connection: 0, flags: 0))]
            }
            guard installed[app] != nil else {
                return [answer(.connectResponse(status: .appNotFound, app: app, connection: 0, flags: 0))]
            }
            if connections.values.contains(app) {
                return [answer(.connectResponse(status: .alreadyOpen, app: app, connection: 0, flags: 0))]
            }
            guard let id = (1...15).map(UInt8.init).first(where: { connections[$0] == nil }) else {
                return [answer(.connectResponse(status: .noFreeConnection, app: app, connection: 0, flags: 0))]
            }
            connections[id] = app
            return [answer(.connectResponse(status: .success, app: app, connection: id, flags: cutConnectAnswer ? nil : (largePackets ? 1 : 0)))]
        case .command(.appInfoRequest(let app)):
            if silences.contains(.appInfo) { return [] }
            return [answer(.appInfoResponse(app: app, version: installed[app] ?? 0xFFFF))]
        case .command(.openAppRequest(let app)):
            if silences.contains(.openApp) { return [] }
            let code = openAppCodes[app] ?? (installed[app] != nil ? .promptShown : .appNotInstalled)
            return [answer(.openAppResponse(app: app, code: code))]
        case .command:
            return [] // answers to the watch's own commands
        case let .control(connection, control):
            return handleControl(control, connection: connection)
        case let .data(sequence, connection, payload):
            guard var transfer = incoming[connection] else { return [] }
            precondition(sequence == UInt8(transfer.packets % 15), "FakeWatch: phone sent seq \(sequence) out of order")
            transfer.bytes += payload
            transfer.packets += 1
            incoming[connection] = transfer
            if sequence == 14, !silences.contains(.windowAck) {
                return [ack(connection, .data, .success, 14)]
            }
            return []
        case .unknown, .malformed:
            preconditionFailure("FakeWatch: the phone wrote \(packet.summary)")
        }
    }

    private mutating func handleControl(_ control: LinkControl, connection: UInt8) -> [[UInt8]] {
        switch control {
        case .encryptionKey(let key, _):
            keys[connection] = key
            return silences.contains(.keyAck) ? [] : [ack(connection, .encryptionKey, keyStatus, 0)]
        case let .first(flags, length):
            let status = firstStatuses.isEmpty ? .success : firstStatuses.removeFirst()
            if status == .success {
                incoming[connection] = Incoming(flags: flags, length: Int(length), key: flags.contains(.encrypted) ? keys[connection] : nil)
            }
            // Silent: the transfer is set up, only the ack is lost.
            return silences.contains(.firstAck) ? [] : [ack(connection, .first, status, 0)]
        case let .last(sequence, crc):
            if silences.contains(.lastAck) { return [] }
            guard let transfer = incoming.removeValue(forKey: connection) else { return [ack(connection, .last, .transferNotStarted, sequence)] }
            let crcMatches = CRC16ARC.checksum(transfer.bytes) == crc && transfer.bytes.count == transfer.length
            let status = lastStatus ?? (crcMatches ? .success : .crcFailure)
            if status == .success {
                transferred.append(transfer.bytes)
                do {
                    var plain = transfer.bytes
                    if let key = transfer.key { plain = try XXTEA.decrypt(plain, key: key) }
                    received.append((connections[connection]!, try MonkeyCSerialization.decode(plain)))
                } catch {
                    Issue.record("FakeWatch: the phone's transfer does not decrypt and decode: \(error)")
                }
            }
            return [ack(connection, .last, status, sequence)]
        case .ack, .ackRequest, .capabilities, .keyRequest:
            return [] // the phone's answers to the watch's transfers: recorded in `writes`
        }
    }

    /// `00 03 uuid conn`: the watch opens a connection for `app` (the lowest free id).
    mutating func openConnection(for app: IQUUID) -> [UInt8] {
        let id = (1...15).map(UInt8.init).first { connections[$0] == nil }!
        connections[id] = app
        return answer(.watchOpened(app: app, connection: id))
    }

    /// `00 04 conn`: the watch closes the connection of `app`.
    mutating func closeConnection(of app: IQUUID) -> [UInt8] {
        let id = connection(of: app)!
        connections[id] = nil
        return answer(.watchClosed(connection: id))
    }

    func connection(of app: IQUUID) -> UInt8? {
        connections.first { $0.value == app }?.key
    }

    /// The packets of a watch → phone transfer of `value` to the phone on `app`'s connection:
    /// optional key packet, `first`, data (19-byte payloads), `last`.
    func transferPackets(_ value: MonkeyCValue, app: IQUUID, key: [UInt8]? = nil, payload: Int = 19) -> [[UInt8]] {
        let connection = connection(of: app)!
        var body = try! MonkeyCSerialization.encode(value)
        var packets: [[UInt8]] = []
        var flags: TransferFlags = []
        if let key {
            body = try! XXTEA.encrypt(body, key: key)
            flags = .encrypted
            packets.append(LinkPacket.control(connection: connection, .encryptionKey(key: key, isResponse: false)).encode())
        }
        packets.append(LinkPacket.control(connection: connection, .first(flags: flags, length: UInt32(body.count))).encode())
        let layout = TransferLayout(bytes: body, payloadSize: payload, connection: connection)
        for index in 0..<layout.packetCount { packets.append(layout.dataPacket(index).encode()) }
        packets.append(layout.lastPacket.encode())
        return packets
    }

    private func answer(_ command: LinkCommand) -> [UInt8] {
        LinkPacket.command(command).encode()
    }

    private func ack(_ connection: UInt8, _ type: AckType, _ status: AckStatus, _ sequence: UInt8) -> [UInt8] {
        LinkPacket.control(connection: connection, .ack(type: type, status: status, sequence: sequence)).encode()
    }
}
