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
