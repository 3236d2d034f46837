import CaptureKit
import Dissectors

/// The fields of advertising data (Core Specification Supplement Part A §1) that emulation and the
/// virtual link's discoveries use.
public struct AdvertisingData: Sendable, Hashable {
    /// Shortened (0x08) or Complete (0x09) Local Name.
    public var name: String?
    /// Whether ``name`` came from a Complete Local Name.
    public var nameIsComplete = false
    /// Incomplete or complete lists of 16-, 32- and 128-bit service UUIDs (0x02–0x07).
    public var services: [BluetoothUUID] = []
    /// Service solicitation UUIDs (0x14, 0x15, 0x1F).
    public var solicitedServices: [BluetoothUUID] = []
    /// Service data (0x16, 0x20, 0x21): each service's UUID and its data, in order.
    public var serviceData: [ServiceData] = []
    /// Manufacturer Specific Data (0xFF): the company identifier (little-endian) and its data.
    public var manufacturerData: [UInt8]?
    /// TX Power Level (0x0A), dBm.
    public var txPower: Int?

    /// Parses AD structures (length, type, data); a truncated structure ends the parse.
    public init(_ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let length = Int(bytes[offset])
            guard length > 0, offset + 1 + length <= bytes.count else { break }
            let type = bytes[offset + 1]
            let data = Array(bytes[(offset + 2)..<(offset + 1 + length)])
            switch type {
            case 0x08, 0x09:
                if name == nil || type == 0x09 {
                    name = String(decoding: data, as: UTF8.self)
                    nameIsComplete = type == 0x09
                }
            case 0x02, 0x03: services += Self.uuids(data, size: 2)
            case 0x04, 0x05: services += Self.uuids(data, size: 4)
            case 0x06, 0x07: services += Self.uuids(data, size: 16)
            case 0x14: solicitedServices += Self.uuids(data, size: 2)
            case 0x1F: solicitedServices += Self.uuids(data, size: 4)
            case 0x15: solicitedServices += Self.uuids(data, size: 16)
            case 0x16, 0x20, 0x21:
                let size = type == 0x16 ? 2 : (type == 0x20 ? 4 : 16)
                if data.count >= size, let uuid = BluetoothUUID(littleEndian: data[0..<size]) { serviceData.append(ServiceData(uuid: uuid, data: Array(data[size...]))) }
            case 0x0A:
                if let power = data.first { txPower = Int(Int8(bitPattern: power)) }
            case 0xFF:
                manufacturerData = data
            default: break
            }
            offset += 1 + length
        }
    }

    /// One Service Data structure.
    public struct ServiceData: Sendable, Hashable {
        /// The service's UUID.
        public var uuid: BluetoothUUID
        /// Its data.
        public var data: [UInt8]
    }

    static func uuids(_ data: [UInt8], size: Int) -> [BluetoothUUID] {
        stride(from: 0, to: data.count - size + 1, by: size).compactMap { BluetoothUUID(littleEndian: data[$0..<($0 + size)]) }
    }
}

/// LE Advertising Report (Core v6.0 Vol 4 Part E §7.7.65.2) and LE Extended Advertising Report
/// (§7.7.65.13) events found in HCI frames: who advertised what.
public enum AdvertisingReports {
    /// One report: the advertiser's address (`F0:F1:F2:F3:F4:F5`) and its data.
    public struct Entry: Sendable, Hashable {
        /// The advertiser's address, most significant byte first.
        public var address: String
        /// Its advertising data or scan response.
        public var data: AdvertisingData
        /// The AD structures as received (Core Specification Supplement Part A §1).
        public var raw: [UInt8] = []
        /// The RSSI in dBm; `nil` when the controller said it had none (127).
        public var rssi: Int? = nil
        /// Whether the advertiser accepts connections (ADV_IND, ADV_DIRECT_IND; extended: bit 0).
        public var isConnectable = false
        /// Whether this is a scan response (SCAN_RSP; extended: bit 3) rather than advertising.
        public var isScanResponse = false
    }

    /// The reports in one frame, or `nil` when the frame is not an advertising report event.
    public static func parse(_ frame: [UInt8], linkType: LinkType) -> [Entry]? {
        let start: Int
        switch linkType {
        case .bluetoothHCIH4WithPHDR:
            guard frame.count > 5, frame[4] == 0x04 else { return nil }
            start = 5
        case .bluetoothHCIH4:
            guard frame.count > 1, frame[0] == 0x04 else { return nil }
            start = 1
        case .bluetoothLinuxMonitor:
            // adapter u16 BE, opcode u16 BE; opcode 3 is an event.
            guard frame.count > 4, frame[2] == 0, frame[3] == 3 else { return nil }
            start = 4
        default:
            return nil
        }
        // Event code 0x3E (LE Meta), length, subevent.
        guard frame.count >= start + 4, frame[start] == 0x3E else { return nil }
        let subevent = frame[start + 2]
        let body = Array(frame[(start + 3)...])
        switch subevent {
        case 0x02: return legacy(body)
        case 0x0D: return extended(body)
        default: return nil
        }
    }

    /// A report's RSSI byte as dBm (a signed byte); `nil` for 127, "not available".
    static func rssi(_ byte: UInt8) -> Int? {
        byte == 127 ? nil : Int(Int8(bitPattern: byte))
    }

    static func address(_ bytes: ArraySlice<UInt8>) -> String {
        bytes.reversed().map { byte in
            let text = String(byte, radix: 16, uppercase: true)
            return byte < 16 ? "0" + text : text
        }.joined(separator: ":")
    }

    static func legacy(_ body: [UInt8]) -> [Entry] {
        guard let count = body.first else { return [] }
        var entries: [Entry] = []
        var offset = 1
        for _ in 0..<count {
            // event type, address type, address (6), data length, data, RSSI
            guard offset + 9 <= body.count else { break }
            let addressBytes = body[(offset + 2)..<(offset + 8)]
            let length = Int(body[offset + 8])
            guard offset + 9 + length <= body.count else { break }
            let raw = Array(body[(offset + 9)..<(offset + 9 + length)])
            // Event_Type (§7.7.65.2): 0 ADV_IND, 1 ADV_DIRECT_IND, 2 ADV_SCAN_IND, 3 ADV_NONCONN_IND, 4 SCAN_RSP.
            let type = body[offset]
            // The RSSI follows the data; a report cut before it has none.
            let rssiByte: UInt8? = offset + 9 + length < body.count ? body[offset + 9 + length] : nil
            entries.append(Entry(address: address(addressBytes), data: AdvertisingData(raw), raw: raw, rssi: rssiByte.flatMap(Self.rssi),
                                 isConnectable: type <= 1, isScanResponse: type == 4))
            offset += 9 + length + 1
        }
        return entries
    }

    static func extended(_ body: [UInt8]) -> [Entry] {
        guard let count = body.first else { return [] }
        var entries: [Entry] = []
        var offset = 1
        for _ in 0..<count {
            // event type (2), address type, address (6), primary PHY, secondary PHY, SID, TX power,
            // RSSI, interval (2), direct address type, direct address (6), data length, data
            guard offset + 24 <= body.count else { break }
            let addressBytes = body[(offset + 3)..<(offset + 9)]
            let length = Int(body[offset + 23])
            guard offset + 24 + length <= body.count else { break }
            let raw = Array(body[(offset + 24)..<(offset + 24 + length)])
            // Event_Type bits (§7.7.65.13): 0 connectable, 3 scan response.
            let type = body[offset]
            entries.append(Entry(address: address(addressBytes), data: AdvertisingData(raw), raw: raw, rssi: Self.rssi(body[offset + 13]),
                                 isConnectable: type & 0x01 != 0, isScanResponse: type & 0x08 != 0))
            offset += 24 + length
        }
        return entries
    }
}
