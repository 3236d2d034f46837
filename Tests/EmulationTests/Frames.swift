import Emulation
import CaptureKit

/// HCI frames under LINKTYPE_BLUETOOTH_HCI_H4_WITH_PHDR (201): a 4-byte direction (0 sent by the
/// host, 1 received from the controller), the H4 packet type, the packet.
enum Frames {
    /// An ACL packet carrying one ATT PDU on connection `handle` (L2CAP CID 4).
    static func att(_ pdu: [UInt8], received: Bool, handle: UInt16 = 0x0040) -> [UInt8] {
        let l2cap = le16(UInt16(pdu.count)) + [0x04, 0x00] + pdu
        return [0, 0, 0, received ? 1 : 0, 0x02] + le16(handle | 0x2000) + le16(UInt16(l2cap.count)) + l2cap
    }

    /// An ACL packet carrying one Security Manager PDU on connection `handle` (L2CAP CID 6).
    static func smp(_ code: UInt8, _ parameters: [UInt8], received: Bool, handle: UInt16 = 0x0040) -> [UInt8] {
        let pdu = [code] + parameters
        let l2cap = le16(UInt16(pdu.count)) + [0x06, 0x00] + pdu
        return [0, 0, 0, received ? 1 : 0, 0x02] + le16(handle | 0x2000) + le16(UInt16(l2cap.count)) + l2cap
    }

    /// LE Connection Complete (Core v6.0 Vol 4 Part E §7.7.65.1): the local host is central (role 0)
    /// and `address` the peripheral.
    static func connected(handle: UInt16 = 0x0040, address: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0xE0, 0xF0]) -> [UInt8] {
        let parameters: [UInt8] = [0x01, 0x00] + le16(handle) + [0x00, 0x01] + address + [0x18, 0x00, 0x00, 0x00, 0xC8, 0x00, 0x00]
        return [0, 0, 0, 1, 0x04, 0x3E, UInt8(parameters.count)] + parameters
    }

    /// Disconnection Complete (§7.7.5), reason 0x13.
    static func disconnected(handle: UInt16 = 0x0040) -> [UInt8] {
        [0, 0, 0, 1, 0x04, 0x05, 0x04, 0x00] + le16(handle) + [0x13]
    }

    /// A legacy LE Advertising Report (§7.7.65.2) of `address` with `data`.
    static func advertisingReport(address: [UInt8], data: [UInt8]) -> [UInt8] {
        let parameters: [UInt8] = [0x02, 0x01, 0x00, 0x01] + address + [UInt8(data.count)] + data + [0xC0]
        return [0, 0, 0, 1, 0x04, 0x3E, UInt8(parameters.count)] + parameters
    }

    /// Frames numbered from 1, each at its given capture time.
    static func capture(_ items: [(bytes: [UInt8], timeNs: Int64)]) -> [CaptureFrame] {
        items.enumerated().map { index, item in
            CaptureFrame(number: index + 1, interfaceIndex: 0, timestampNs: item.timeNs, originalLength: item.bytes.count, data: item.bytes)
        }
    }

    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }

    /// ATT PDUs (Core v6.0 Vol 3 Part F §3.4).
    static func writeRequest(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] { [0x12] + le16(handle) + value }
    static func writeCommand(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] { [0x52] + le16(handle) + value }
    static let writeResponse: [UInt8] = [0x13]
    static func notification(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] { [0x1B] + le16(handle) + value }
    static func indication(_ handle: UInt16, _ value: [UInt8]) -> [UInt8] { [0x1D] + le16(handle) + value }
    static func readRequest(_ handle: UInt16) -> [UInt8] { [0x0A] + le16(handle) }
    static func readResponse(_ value: [UInt8]) -> [UInt8] { [0x0B] + value }
    static func readBlobRequest(_ handle: UInt16, offset: UInt16) -> [UInt8] { [0x0C] + le16(handle) + le16(offset) }
    static func readBlobResponse(_ value: [UInt8]) -> [UInt8] { [0x0D] + value }
    static func error(request: UInt8, handle: UInt16, code: UInt8) -> [UInt8] { [0x01, request] + le16(handle) + [code] }
    static func mtuRequest(_ mtu: UInt16) -> [UInt8] { [0x02] + le16(mtu) }
    static func mtuResponse(_ mtu: UInt16) -> [UInt8] { [0x03] + le16(mtu) }
    /// Read By Group Type Request on «Primary Service» and its response of 16-bit UUID services.
    static func serviceDiscoveryRequest(from start: UInt16) -> [UInt8] { [0x10] + le16(start) + le16(0xFFFF) + le16(0x2800) }
    static func serviceDiscoveryResponse(_ services: [(start: UInt16, end: UInt16, uuid: UInt16)]) -> [UInt8] {
        [0x11, 6] + services.flatMap { le16($0.start) + le16($0.end) + le16($0.uuid) }
    }
    /// Read By Type Request on «Characteristic» and its response of 16-bit UUID characteristics.
    static func characteristicDiscoveryRequest(_ start: UInt16, _ end: UInt16) -> [UInt8] { [0x08] + le16(start) + le16(end) + le16(0x2803) }
    static func characteristicDiscoveryResponse(_ characteristics: [(declaration: UInt16, properties: UInt8, value: UInt16, uuid: UInt16)]) -> [UInt8] {
        [0x09, 7] + characteristics.flatMap { le16($0.declaration) + [$0.properties] + le16($0.value) + le16($0.uuid) }
    }
    /// Find Information Request and a response of 16-bit types.
    static func findInformationRequest(_ start: UInt16, _ end: UInt16) -> [UInt8] { [0x04] + le16(start) + le16(end) }
    static func findInformationResponse(_ entries: [(handle: UInt16, uuid: UInt16)]) -> [UInt8] {
        [0x05, 1] + entries.flatMap { le16($0.handle) + le16($0.uuid) }
    }
}

/// A recorded PDU with less to write.
func pdu(_ frame: Int, _ ms: Int64, client: Bool, _ opcode: UInt8, _ handle: UInt16?, _ value: [UInt8] = [], connection: Int = 0) -> RecordedPDU {
    RecordedPDU(frame: frame, timeNs: ms * 1_000_000, connection: connection, fromClient: client, opcode: opcode, handle: handle, value: value)
}
