import Dissectors

/// A Connect IQ link found in the emulated database: its characteristics' handles and what travelled
/// on them in the capture. `tether emulate` hands these to the Connect IQ responder
/// (`Harness/rigs/ciq_responder.py`), which speaks the link (docs/connectiq-link.md) instead of
/// replaying bytes: the phone's fresh XXTEA key per session makes every recorded byte stale.
public struct ConnectIQLink: Sendable, Hashable {
    /// The service UUIDs of the link (current, then legacy) and their write and notify characteristics.
    static let variants: [(service: String, write: String, notify: String)] = [
        ("6a4e8022-667b-11e3-949a-0800200c9a66", "6a4e4c80-667b-11e3-949a-0800200c9a66", "6a4ecd28-667b-11e3-949a-0800200c9a66"),
        ("16aa8022-3769-4c74-a755-877dde3a2930", "df334c80-e6a7-d082-274d-78fc66f85e16", "4acbcd28-7425-868e-f447-915c8f00d0cb"),
    ]

    /// The phone → watch characteristic's value handle.
    public var writeHandle: UInt16
    /// The watch → phone characteristic's value handle.
    public var notifyHandle: UInt16
    /// The notify characteristic's CCCD, when the database has one.
    public var cccdHandle: UInt16?
    /// What the capture holds on the two characteristics, in order: `true` for the phone's writes.
    public var recorded: [(fromPhone: Bool, bytes: [UInt8])]

    /// The link in `database`, with its traffic from `pdus`; `nil` when the database holds no
    /// Connect IQ service with both characteristics.
    public init?(database: EmulatedDatabase, pdus: [RecordedPDU]) {
        for variant in Self.variants {
            guard let service = database.services.first(where: { $0.uuid == BluetoothUUID(variant.service) }),
                  let write = service.characteristics.first(where: { $0.uuid == BluetoothUUID(variant.write) }),
                  let notify = service.characteristics.first(where: { $0.uuid == BluetoothUUID(variant.notify) }) else { continue }
            writeHandle = write.valueHandle
            notifyHandle = notify.valueHandle
            cccdHandle = notify.descriptors.first { $0.uuid == .clientCharacteristicConfiguration }?.handle
            recorded = pdus.compactMap { pdu in
                if pdu.fromClient, pdu.opcode == 0x52 || pdu.opcode == 0x12, pdu.handle == write.valueHandle { return (true, pdu.value) }
                if !pdu.fromClient, pdu.opcode == 0x1B, pdu.handle == notify.valueHandle { return (false, pdu.value) }
                return nil
            }
            return
        }
        return nil
    }

    public static func == (a: ConnectIQLink, b: ConnectIQLink) -> Bool {
        a.writeHandle == b.writeHandle && a.notifyHandle == b.notifyHandle && a.cccdHandle == b.cccdHandle
            && a.recorded.map(\.fromPhone) == b.recorded.map(\.fromPhone) && a.recorded.map(\.bytes) == b.recorded.map(\.bytes)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(writeHandle)
        hasher.combine(notifyHandle)
        hasher.combine(recorded.count)
    }
}

/// The session link's handshake (docs/session-link.md, "Handshake: HELLO and WELCOME") on the
/// emulated database: the responder that lets recorded session-link traffic answer a live phone.
///
/// Everything the phone sends after the handshake is the same on every run of the same script (item
/// ids come from counters, contents from the script), so the generic responder matches it byte for
/// byte. The handshake is not: the phone's HELLO carries a random incarnation, epoch and nonce, and
/// the watch's WELCOME must echo the nonce. So a HELLO is matched with those twelve bytes left out,
/// and the recorded WELCOME that answers it is sent with the live HELLO's nonce.
public struct SessionLinkHandshake: Sendable, Hashable {
    static let service = BluetoothUUID("54450001-5345-5353-494f-4e4c494e4b01")!
    static let write = BluetoothUUID("54450002-5345-5353-494f-4e4c494e4b01")!
    static let notify = BluetoothUUID("54450003-5345-5353-494f-4e4c494e4b01")!
    /// Frame header (channel, flags, id, total) before the item's bytes.
    static let header = 10
    /// Item offsets of the random fields: incarnation (18), epoch (22), nonce (26), 4 bytes each.
    static let randomFields = (header + 18)..<(header + 30)
    static let nonce = (header + 26)..<(header + 30)

    /// The phone → watch characteristic's value handle.
    public var writeHandle: UInt16
    /// The watch → phone characteristic's value handle.
    public var notifyHandle: UInt16

    /// The session link of `database`, or `nil` when it serves none.
    public init?(database: EmulatedDatabase) {
        guard let service = database.services.first(where: { $0.uuid == Self.service }),
              let write = service.characteristics.first(where: { $0.uuid == Self.write }),
              let notify = service.characteristics.first(where: { $0.uuid == Self.notify }) else { return nil }
        writeHandle = write.valueHandle
        notifyHandle = notify.valueHandle
    }

    /// Whether `frame` is a whole control item with op `op` (1 HELLO, 2 WELCOME) of at least 55 bytes.
    static func isHandshake(_ frame: [UInt8], op: UInt8) -> Bool {
        frame.count >= header + 55 && frame[0] == 0x00 && frame[1] & 0x03 == 0x03 && frame[header] == op
    }

    /// The bytes a write is matched by: a HELLO without its random fields.
    public func matchKey(handle: UInt16, value: [UInt8]) -> [UInt8] {
        guard handle == writeHandle, Self.isHandshake(value, op: 0x01) else { return value }
        var key = value
        key.replaceSubrange(Self.randomFields, with: repeatElement(0, count: Self.randomFields.count))
        return key
    }

    /// The nonce of a HELLO write, `nil` for any other write.
    public func helloNonce(handle: UInt16, value: [UInt8]) -> [UInt8]? {
        guard handle == writeHandle, Self.isHandshake(value, op: 0x01) else { return nil }
        return Array(value[Self.nonce])
    }

    /// `answers` with every WELCOME echoing `nonce`.
    public func answering(_ answers: [RecordedAnswer], nonce: [UInt8]) -> [RecordedAnswer] {
        answers.map { answer in
            guard answer.handle == notifyHandle, Self.isHandshake(answer.value, op: 0x02) else { return answer }
            var rewritten = answer
            rewritten.value.replaceSubrange(Self.nonce, with: nonce)
            return rewritten
        }
    }
}
