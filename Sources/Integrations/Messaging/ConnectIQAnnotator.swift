import MonkeyCTrace
import ReplayKit
import BehaviourTrace
import Dissectors
import MessagingCore
import MonkeyC

/// One Connect IQ link packet found in a frame, as `tether inspect` shows it.
public struct ConnectIQAnnotation: Sendable, Hashable {
    /// Who sent it.
    public var side: LinkDirection
    /// The decoded packet.
    public var packet: LinkPacket
    /// The message a completed transfer carried, as JSON text (``MonkeyCJSON``), when this packet
    /// is a transfer's `last` and the message could be read (plain, or encrypted with a key the
    /// capture holds).
    public var message: String?
    /// Why a completed transfer's message could not be read, when it could not.
    public var messageProblem: String?

    /// `CIQ phone data seq 3 conn 1, 19 bytes`, with ` → VALUE` for a completed transfer.
    public var summary: String {
        var text = "CIQ \(side == .phone ? "phone" : "watch") \(packet.summary)"
        if let message { text += " → \(message)" }
        if let messageProblem { text += " (message unreadable: \(messageProblem))" }
        return text
    }
}

/// Follows the Connect IQ link through a capture's ATT records, frame by frame: names every
/// packet and, at the end of each transfer, decrypts (when the capture holds the key packet) and
/// decodes the Monkey C message. Stateful: feed one capture's frames in order. Bounded: a
/// transfer buffer never grows past its announced length (at most 1 MiB).
public struct ConnectIQAnnotator: Sendable {
    private struct TransferKey: Hashable, Sendable {
        var connectionHandle: UInt16
        var side: LinkDirection
        var connection: UInt8
    }

    private struct Transfer: Sendable {
        var key: [UInt8]?
        var encrypted = false
        var length = 0
        var bytes: [UInt8] = []
    }

    private static let maximumTransfer = 1 << 20
    private var transfers: [TransferKey: Transfer] = [:]

    /// An annotator with no state.
    public init() {}

    /// The Connect IQ packets in `frame`, in order.
    public mutating func annotate(_ frame: DissectedFrame) -> [ConnectIQAnnotation] {
        var out: [ConnectIQAnnotation] = []
        for record in frame.att {
            let side: LinkDirection
            let bytes: [UInt8]
            switch ConnectIQRecordKind.classify(record) {
            case .phoneWrite(let b): side = .phone; bytes = b
            case .watchNotification(let b): side = .watch; bytes = b
            default: continue
            }
            let packet = LinkPacket.decode(bytes, from: side)
            var annotation = ConnectIQAnnotation(side: side, packet: packet)
            switch packet {
            case .control(let connection, let control):
                let key = TransferKey(connectionHandle: record.connectionHandle, side: side, connection: connection)
                switch control {
                case .encryptionKey(let k, _):
                    transfers[key] = Transfer(key: k)
                case .first(let flags, let length):
                    var transfer = transfers[key] ?? Transfer()
                    transfer.encrypted = flags.contains(.encrypted)
                    transfer.length = Int(min(length, UInt32(Self.maximumTransfer)))
                    transfer.bytes = []
                    transfers[key] = transfer
                case .last:
                    if let transfer = transfers.removeValue(forKey: key) {
                        (annotation.message, annotation.messageProblem) = Self.read(transfer)
                    }
                default:
                    break
                }
            case .data(_, let connection, let payload):
                let key = TransferKey(connectionHandle: record.connectionHandle, side: side, connection: connection)
                if var transfer = transfers[key] {
                    let room = max(0, transfer.length - transfer.bytes.count)
                    transfer.bytes += payload.prefix(room)
                    transfers[key] = transfer
                }
            default:
                break
            }
            out.append(annotation)
        }
        return out
    }

    private static func read(_ transfer: Transfer) -> (String?, String?) {
        var serialized = transfer.bytes
        if transfer.encrypted {
            guard let key = transfer.key else { return (nil, "encrypted, and the capture holds no key packet for it") }
            do throws(XXTEAError) {
                serialized = try XXTEA.decrypt(transfer.bytes, key: key)
            } catch {
                return (nil, "\(error)")
            }
        }
        do throws(MonkeyCDecodingError) {
            // An encrypted message is padded with zeros; the serialization is self-delimiting.
            let value = try MonkeyCSerialization.decode(serialized)
            return (JSONLiteral.text(MonkeyCJSON.traceValue(value)), nil)
        } catch {
            return (nil, error.description)
        }
    }
}
