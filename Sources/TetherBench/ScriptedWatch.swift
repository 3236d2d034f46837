import MessagingCore
import MonkeyC

/// The watch side of the bench's messaging session: a Connect IQ device running the echo app,
/// written from docs/connectiq-link.md. It opens connection 1 with large packets on the phone's connect,
/// acknowledges the phone's key, `first`, every seq-14 window and `last` (checking the length and
/// CRC-16/ARC, decrypting with the transfer's XXTEA key, decoding the Monkey C value), and echoes
/// every message back as a plain transfer in 191-byte data packets, waiting for the phone's acks of
/// its `first`, each full window and its `last`.
///
/// Anything the phone writes that this script does not expect is a ``WatchScriptError``: the
/// generated session would not be the clean one the benchmark promises.
struct ScriptedWatch {
    /// The connection id the watch hands out.
    static let connection: UInt8 = 1
    /// Data payload per packet with large packets on.
    static let payload = 191

    /// What the watch does after a phone write.
    struct Reaction {
        /// Packets to notify at once (answers, the next window of its own transfer).
        var packets: [[UInt8]] = []
        /// A received message is complete: the first packet of its echo, sent after the app's delay.
        var echo: [UInt8]?
    }

    private var key: [UInt8]?
    private var inbound: (length: Int, encrypted: Bool, buffer: [UInt8])?
    private var outbound: (bytes: [UInt8], nextPacket: Int, awaiting: AckType)?
    /// Messages received and decoded, in order.
    private(set) var received = 0

    private static func control(_ control: LinkControl) -> [UInt8] {
        LinkPacket.control(connection: connection, control).encode()
    }

    private static func ack(_ type: AckType, _ status: AckStatus = .success, _ sequence: UInt8 = 0) -> [UInt8] {
        control(.ack(type: type, status: status, sequence: sequence))
    }

    /// Reacts to one packet the phone wrote.
    mutating func phoneWrote(_ bytes: [UInt8]) throws(WatchScriptError) -> Reaction {
        var reaction = Reaction()
        let packet = LinkPacket.decode(bytes, from: .phone)
        switch packet {
        case .command(.connectRequest(let app, _)):
            reaction.packets.append(LinkPacket.command(.connectResponse(status: .success, app: app, connection: Self.connection, flags: 0x01)).encode())
        case .control(Self.connection, .encryptionKey(let newKey, isResponse: false)):
            key = newKey
            reaction.packets.append(Self.ack(.encryptionKey))
        case .control(Self.connection, .first(let flags, let length)):
            guard inbound == nil else { throw .unexpected("a second first while a transfer is open", bytes) }
            let encrypted = flags.contains(.encrypted)
            if encrypted, key == nil { throw .unexpected("an encrypted first without a key", bytes) }
            inbound = (Int(length), encrypted, [])
            reaction.packets.append(Self.ack(.first))
        case .data(let sequence, Self.connection, let payload):
            guard inbound != nil else { throw .unexpected("data outside a transfer", bytes) }
            inbound!.buffer += payload
            if Int(sequence) == LinkPacket.sequenceModulus - 1 { reaction.packets.append(Self.ack(.data, .success, sequence)) }
        case .control(Self.connection, .last(let sequence, let crc)):
            guard let transfer = inbound else { throw .unexpected("last outside a transfer", bytes) }
            inbound = nil
            guard transfer.buffer.count == transfer.length, CRC16ARC.checksum(transfer.buffer) == crc else {
                throw .unexpected("last of \(transfer.buffer.count) bytes (first said \(transfer.length)) or CRC mismatch", bytes)
            }
            var plain = transfer.buffer
            if transfer.encrypted, let key {
                do throws(XXTEAError) {
                    plain = try XXTEA.decrypt(transfer.buffer, key: key)
                } catch {
                    throw .unexpected("ciphertext XXTEA cannot decrypt: \(error)", bytes)
                }
                self.key = nil
            }
            let value: MonkeyCValue
            do throws(MonkeyCDecodingError) {
                value = try MonkeyCSerialization.decode(plain)
            } catch {
                throw .unexpected("a message that is not a Monkey C value: \(error)", bytes)
            }
            received += 1
            reaction.packets.append(Self.ack(.last, .success, sequence))
            reaction.echo = try startEcho(value)
        case .control(Self.connection, .ack(let type, let status, let sequence)):
            guard let transfer = outbound, type == transfer.awaiting else {
                throw .unexpected("an ack of type \(type) the watch did not wait for", bytes)
            }
            guard status == .success else { throw .unexpected("the phone refused the echo (\(status), seq \(sequence))", bytes) }
            if type == .last {
                outbound = nil
            } else {
                reaction.packets += nextWindow()
            }
        default:
            throw .unexpected("a packet the echo watch has no answer for", bytes)
        }
        return reaction
    }

    /// Begins the echo of `value`: returns its `first` (plain, as the watch sends).
    private mutating func startEcho(_ value: MonkeyCValue) throws(WatchScriptError) -> [UInt8] {
        guard outbound == nil else { throw .unexpected("a message arrived while the previous echo was still going", []) }
        let bytes: [UInt8]
        do throws(MonkeyCEncodingError) {
            bytes = try MonkeyCSerialization.encode(value)
        } catch {
            throw .unexpected("the echo cannot be serialized: \(error)", [])
        }
        outbound = (bytes, 0, .first)
        return Self.control(.first(flags: [], length: UInt32(bytes.count)))
    }

    /// The next data packets up to the end of a window (then it waits for the phone's ack) or the
    /// end of the message (then `last` follows at once).
    private mutating func nextWindow() -> [[UInt8]] {
        guard var transfer = outbound else { return [] }
        var packets: [[UInt8]] = []
        let layout = TransferLayout(bytes: transfer.bytes, payloadSize: Self.payload, connection: Self.connection)
        while transfer.nextPacket < layout.packetCount {
            let sequence = TransferLayout.sequence(ofPacket: transfer.nextPacket)
            packets.append(layout.dataPacket(transfer.nextPacket).encode())
            transfer.nextPacket += 1
            if Int(sequence) == LinkPacket.sequenceModulus - 1 {
                transfer.awaiting = .data
                outbound = transfer
                return packets
            }
        }
        packets.append(layout.lastPacket.encode())
        transfer.awaiting = .last
        outbound = transfer
        return packets
    }
}

/// The phone wrote something the bench's scripted watch did not expect.
struct WatchScriptError: Error, CustomStringConvertible {
    /// What was wrong.
    var reason: String
    /// The phone's packet.
    var packet: [UInt8]

    /// An error for `packet`, saying why.
    static func unexpected(_ reason: String, _ packet: [UInt8]) -> WatchScriptError {
        WatchScriptError(reason: reason, packet: packet)
    }

    /// The packet in hex and the reason.
    var description: String {
        "scripted watch: the phone wrote \(packet.map { String($0, radix: 16) }.joined(separator: " ")): \(reason); "
            + "the generated session would not be clean (check MessagingCore against docs/connectiq-link.md)"
    }
}
