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
///
/// At a small ATT MTU (23: 20-byte frames, 10 item bytes each) a HELLO and a WELCOME travel in
/// pieces, and the random fields and the nonce sit in later pieces: each piece is matched with the
/// bytes of the random fields it carries left out, the nonce is gathered from the pieces that carry
/// it, and every WELCOME piece that carries nonce bytes is sent with the live ones. A later piece
/// does not say which item it belongs to, but only a handshake (at least 55 bytes) has bytes at item
/// offset 18 or beyond: the phone's and the watch's other control items are at most 10 bytes.
public struct SessionLinkHandshake: Sendable, Hashable {
    static let service = BluetoothUUID("54450001-5345-5353-494f-4e4c494e4b01")!
    static let write = BluetoothUUID("54450002-5345-5353-494f-4e4c494e4b01")!
    static let notify = BluetoothUUID("54450003-5345-5353-494f-4e4c494e4b01")!
    /// Frame header (channel, flags, id, total or offset) before the item's bytes.
    static let header = 10
    /// Item offsets of the random fields: incarnation (18), epoch (22), nonce (26), 4 bytes each.
    static let randomFields = 18..<30
    /// Item offsets of the nonce.
    static let nonce = 26..<30
    /// The ops of HELLO and WELCOME.
    static let helloOp: UInt8 = 0x01
    static let welcomeOp: UInt8 = 0x02

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

    /// The item offset of the first item byte of `frame` when it is a handshake with op `op` or a
    /// piece of one: 0 for its first frame (whole or not), the frame's offset for a later control
    /// piece; `nil` for anything else (a data frame, a compact frame, another control item).
    static func handshakePiece(_ frame: [UInt8], op: UInt8) -> Int? {
        guard frame.count > header, frame[0] == 0x00 else { return nil }
        if frame[1] & 0x01 != 0 { return frame[header] == op ? 0 : nil }
        return Int(frame[6]) | Int(frame[7]) << 8 | Int(frame[8]) << 16 | Int(frame[9]) << 24
    }

    /// The positions in `frame` (a handshake piece starting at item offset `start`) of the item
    /// offsets `items`, with the index of each among `items`.
    static func positions(of items: Range<Int>, inPieceAt start: Int, count: Int) -> [(index: Int, position: Int)] {
        let end = start + (count - header)
        return items.enumerated().compactMap { index, item in
            item >= start && item < end ? (index, header + item - start) : nil
        }
    }

    /// The bytes a write is matched by: a HELLO, or a piece of one, without its random fields.
    public func matchKey(handle: UInt16, value: [UInt8]) -> [UInt8] {
        guard handle == writeHandle, let start = Self.handshakePiece(value, op: Self.helloOp) else { return value }
        var key = value
        for (_, position) in Self.positions(of: Self.randomFields, inPieceAt: start, count: value.count) { key[position] = 0 }
        return key
    }

    /// Whether a write is a HELLO or a piece of one (the recorded WELCOME answers its last piece).
    public func isHelloPiece(handle: UInt16, value: [UInt8]) -> Bool {
        handle == writeHandle && Self.handshakePiece(value, op: Self.helloOp) != nil
    }

    /// The nonce bytes a HELLO write (whole, or a piece) carries, as (index in the nonce, byte);
    /// empty for any other write.
    public func helloNonceBytes(handle: UInt16, value: [UInt8]) -> [(index: Int, byte: UInt8)] {
        guard handle == writeHandle, let start = Self.handshakePiece(value, op: Self.helloOp) else { return [] }
        return Self.positions(of: Self.nonce, inPieceAt: start, count: value.count).map { ($0.index, value[$0.position]) }
    }

    /// `answers` with every WELCOME, or WELCOME piece, that carries nonce bytes echoing `nonce`.
    public func answering(_ answers: [RecordedAnswer], nonce: [UInt8]) -> [RecordedAnswer] {
        answers.map { answer in
            guard answer.handle == notifyHandle, let start = Self.handshakePiece(answer.value, op: Self.welcomeOp) else { return answer }
            var rewritten = answer
            for (index, position) in Self.positions(of: Self.nonce, inPieceAt: start, count: answer.value.count) {
                rewritten.value[position] = nonce[index]
            }
            return rewritten
        }
    }
}
