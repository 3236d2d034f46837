import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors

/// The Connect IQ link's GATT characteristics (docs/connectiq-link.md, "GATT"), current and
/// legacy, as values: every ATT record of a replay is classified against them, and two words
/// compare faster than two texts. `ConnectIQGATTTests` holds them to the texts of the docs.
public enum ConnectIQGATT {
    /// Phone → watch, write without response: `6a4e4c80-667b-11e3-949a-0800200c9a66` and
    /// `df334c80-e6a7-d082-274d-78fc66f85e16`.
    public static let writeCharacteristics = [
        BluetoothUUID(high: 0x6a4e4c80_667b_11e3, low: 0x949a_0800200c9a66),
        BluetoothUUID(high: 0xdf334c80_e6a7_d082, low: 0x274d_78fc66f85e16),
    ]
    /// Watch → phone, notify: `6a4ecd28-667b-11e3-949a-0800200c9a66` and
    /// `4acbcd28-7425-868e-f447-915c8f00d0cb`.
    public static let notifyCharacteristics = [
        BluetoothUUID(high: 0x6a4ecd28_667b_11e3, low: 0x949a_0800200c9a66),
        BluetoothUUID(high: 0x4acbcd28_7425_868e, low: 0xf447_915c8f00d0cb),
    ]
    /// The services: `6a4e8022-667b-11e3-949a-0800200c9a66` and
    /// `16aa8022-3769-4c74-a755-877dde3a2930`.
    public static let services = [
        BluetoothUUID(high: 0x6a4e8022_667b_11e3, low: 0x949a_0800200c9a66),
        BluetoothUUID(high: 0x16aa8022_3769_4c74, low: 0xa755_877dde3a2930),
    ]

    /// Whether `uuid` is one of ``writeCharacteristics``.
    static func isWriteCharacteristic(_ uuid: BluetoothUUID) -> Bool { writeCharacteristics.contains(uuid) }

    /// Whether `uuid` is one of ``notifyCharacteristics``.
    static func isNotifyCharacteristic(_ uuid: BluetoothUUID) -> Bool { notifyCharacteristics.contains(uuid) }
}

/// Which side of the Connect IQ link an ATT record belongs to, seen from the phone's host (the
/// side an H4 tap or the phone's btsnoop records).
public enum ConnectIQRecordKind: Sendable, Hashable {
    /// The phone wrote a link packet to the watch.
    case phoneWrite([UInt8])
    /// The watch notified a link packet.
    case watchNotification([UInt8])
    /// The phone subscribed to the notify characteristic (its CCCD write was acknowledged).
    case subscribed
    /// ATT MTU exchange: the value each side offered (`client` from the phone's request,
    /// `server` from the response).
    case mtu(client: UInt16?, server: UInt16?)
    /// Nothing the link cares about.
    case other

    /// Classifies one ATT record of a phone-side capture.
    public static func classify(_ record: ATTRecord) -> ConnectIQRecordKind {
        if let offer = ATTMTUExchange.offer(in: record) { return .mtu(client: offer.client, server: offer.server) }
        switch record.pdu {
        case .writeCommand(_, let value), .writeRequest(_, let value):
            guard record.direction != .received, record.descriptorUUID == nil, let c = record.characteristicUUID,
                  ConnectIQGATT.isWriteCharacteristic(c) else { return .other }
            return .phoneWrite(value)
        case .handleValueNotification(_, let value), .handleValueIndication(_, let value):
            guard record.direction != .sent, let c = record.characteristicUUID,
                  ConnectIQGATT.isNotifyCharacteristic(c) else { return .other }
            return .watchNotification(value)
        case .writeResponse: // answers the request to the same handle
            guard record.direction != .sent, record.descriptorUUID == .clientCharacteristicConfiguration,
                  let c = record.characteristicUUID, ConnectIQGATT.isNotifyCharacteristic(c) else { return .other }
            return .subscribed
        default:
            return .other
        }
    }
}

/// What replay must know about a Connect IQ capture before it starts: the encryption keys the
/// recorded phone drew (fed to the core's key source, so its encrypted bytes equal the captured
/// ones) and, for responder mode, every watch answer with the delay after the phone write it
/// followed.
public struct MessagingCapturePrescan: Sendable {
    /// One watch notification, with when it came.
    public struct WatchPacket: Sendable, Hashable {
        /// Its frame number.
        public var frame: Int
        /// Its virtual time.
        public var timeNs: Int64
        /// The BLE peer address of the link it came on, when the capture told it.
        public var peer: String?
        /// The link packet.
        public var bytes: [UInt8]
        /// Nanoseconds since the phone's last write on the same link (`nil`: none before it).
        public var delayAfterWriteNs: Int64?
    }

    /// The 16-byte keys of the phone's encryption-key packets (`F·c 05 key 00`), in capture order.
    public var keys: [[UInt8]] = []
    /// Every watch notification, in capture order.
    public var watchPackets: [WatchPacket] = []
    /// Phone writes seen.
    public var phoneWrites = 0

    /// An empty prescan (no keys: the core then draws from its seeded fallback).
    public init() {}

    /// Reads the capture once before replay. With `watchPackets` (responder mode) it dissects the
    /// BLE interfaces fully (role `ble-hci`/`ble-monitor`, or any Bluetooth HCI link type the
    /// manifest does not describe) and keeps every watch packet. Without, it only collects the
    /// phone's encryption keys, with a byte scan where it can (see ``scanKeys(capturePath:interfaces:)``).
    public static func scan(
        capturePath: String, interfaces: [ManifestInterface], gattHandles: [ManifestGATTHandle], watchPackets: Bool = true
    ) throws(CaptureError) -> MessagingCapturePrescan {
        if !watchPackets, let keys = try scanKeys(capturePath: capturePath, interfaces: interfaces) {
            var result = MessagingCapturePrescan()
            result.keys = keys
            return result
        }
        return try scanDissecting(capturePath: capturePath, interfaces: interfaces, gattHandles: gattHandles)
    }

    /// The phone's key packets by a byte scan, without dissection: an ATT Write Command or Request
    /// whose value is `F·c 05 key(16) 00` (19 bytes, connection 1–15), in an HCI ACL packet the
    /// host sent. A key packet always travels in one ACL fragment (22 ATT bytes + 4 L2CAP fit the
    /// 27-byte LE minimum), so no reassembly is needed. The handle is not checked against GATT
    /// discovery: another characteristic's write of exactly that shape would be taken for a key
    /// (the core then draws one captured key too many, which frame matching would show).
    /// - Returns: `nil` when a BLE interface is not H4 (BlueZ monitor records): dissect instead.
    public static func scanKeys(capturePath: String, interfaces: [ManifestInterface]) throws(CaptureError) -> [[UInt8]]? {
        let reader = try CaptureFile.open(path: capturePath)
        let described = Dictionary(interfaces.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        var keys: [[UInt8]] = []
        var unsupported = false
        // The link type of each interface this scan reads, `nil` for one it does not.
        var readLinkTypes = PerInterface<LinkType?>()
        try reader.forEachFrameView { view in
            guard view.interfaceIndex < reader.interfaces.count else { return }
            let read = readLinkTypes.value(for: view.interfaceIndex) {
                let linkType = reader.interfaces[view.interfaceIndex].linkType
                return isBLE(linkType, described: described[view.interfaceIndex]) ? linkType : nil
            }
            guard let linkType = read else { return }
            let data = view.data
            let start: Int
            switch linkType {
            case .bluetoothHCIH4WithPHDR:
                // Direction bit 0: 0 sent by the host.
                guard data.count >= 5, data[3] & 1 == 0 else { return }
                start = 4
            case .bluetoothHCIH4:
                start = 0
            default:
                unsupported = true
                return
            }
            // H4 ACL (0x02), PB flag "first" (0b00 or 0b10), L2CAP CID 4, ATT 0x52 or 0x12.
            guard data.count == start + 1 + 4 + 4 + 3 + 19, data[start] == 0x02 else { return }
            let pb = (data[start + 2] >> 4) & 0x3
            guard pb == 0 || pb == 2, data[start + 7] == 0x04, data[start + 8] == 0x00 else { return }
            let opcode = data[start + 9]
            guard opcode == 0x52 || opcode == 0x12 else { return }
            let value = start + 12
            guard data[value] & 0xF0 == 0xF0, data[value] != 0xF0, data[value + 1] == 0x05, data[value + 18] == 0x00 else { return }
            keys.append(Array(data[(value + 2)..<(value + 18)]))
        }
        return unsupported ? nil : keys
    }

    private static func scanDissecting(capturePath: String, interfaces: [ManifestInterface], gattHandles: [ManifestGATTHandle]) throws(CaptureError) -> MessagingCapturePrescan {
        var walk = try PrescanReader(capturePath: capturePath, interfaces: interfaces, gattHandles: gattHandles)
        var result = MessagingCapturePrescan()
        var peers: [UInt16: String] = [:]
        var lastWrite: [UInt16: Int64] = [:]
        while let frame = try walk.next() {
            guard frame.isBLE(forCore: "messaging") else { continue }
            let timeNs = frame.timeNs
            let dissected = walk.dissect(frame)
            if case .connected(let handle, let peer, _) = dissected.linkChange { peers[handle] = peer }
            for record in dissected.att {
                switch ConnectIQRecordKind.classify(record) {
                case .phoneWrite(let bytes):
                    result.phoneWrites += 1
                    lastWrite[record.connectionHandle] = timeNs
                    if bytes.count >= 19, bytes[0] & 0xF0 == 0xF0, bytes[0] != 0xF0, bytes[1] == 0x05 {
                        result.keys.append(Array(bytes[2..<18]))
                    }
                case .watchNotification(let bytes):
                    result.watchPackets.append(WatchPacket(
                        frame: frame.number, timeNs: timeNs, peer: peers[record.connectionHandle], bytes: bytes,
                        delayAfterWriteNs: lastWrite[record.connectionHandle].map { timeNs - $0 }))
                default:
                    break
                }
            }
        }
        return result
    }

    /// An interface the messaging adapter reads HCI from.
    static func isBLE(_ linkType: LinkType, described: ManifestInterface?) -> Bool {
        PrescanReader.Frame.isBLE(linkType: linkType, described: described, forCore: "messaging")
    }
}
