import CaptureKit

/// One advertising report or scan response the capture holds, at its instant.
public struct RecordedAdvertisement: Sendable, Hashable {
    /// Its frame in the capture.
    public var frame: Int
    /// Nanoseconds since the capture's first frame (the replay's virtual time).
    public var timeNs: Int64
    /// The advertiser's address (`F0:F1:F2:F3:F4:F5`).
    public var address: String
    /// The report's AD structures, as received.
    public var data: [UInt8]
    /// The RSSI in dBm; `nil` when the controller had none.
    public var rssi: Int?
    /// Whether the advertiser accepts connections.
    public var isConnectable: Bool
    /// Whether it is a scan response.
    public var isScanResponse: Bool

    /// A report; see the properties.
    public init(frame: Int, timeNs: Int64, address: String, data: [UInt8], rssi: Int?, isConnectable: Bool, isScanResponse: Bool) {
        self.frame = frame
        self.timeNs = timeNs
        self.address = address
        self.data = data
        self.rssi = rssi
        self.isConnectable = isConnectable
        self.isScanResponse = isScanResponse
    }
}

/// How one recorded LE connection ended.
public struct RecordedDisconnection: Sendable, Hashable {
    /// The Disconnection Complete's frame.
    public var frame: Int
    /// Nanoseconds since the capture's first frame.
    public var timeNs: Int64
    /// The HCI reason code (Core v6.0 Vol 1 Part F: 0x08 Connection Timeout, 0x13 Remote User
    /// Terminated Connection, 0x16 Connection Terminated by Local Host, …).
    public var reason: UInt8
    /// Whether the central ended it: the central's host sent HCI Disconnect, or the reason is one
    /// only the central's side gives. `false` when the peripheral or the link did.
    public var byCentral: Bool

    /// A disconnection; see the properties.
    public init(frame: Int, timeNs: Int64, reason: UInt8, byCentral: Bool) {
        self.frame = frame
        self.timeNs = timeNs
        self.reason = reason
        self.byCentral = byCentral
    }
}

/// One recorded LE connection between the central and the peripheral.
public struct RecordedConnection: Sendable, Hashable {
    /// 0-based ordinal, in capture order (``RecordedPDU/connection``).
    public var ordinal: Int
    /// The LE (Enhanced) Connection Complete's frame; `nil` when the capture began inside it.
    public var frame: Int?
    /// When it came up (its first frame when the capture began inside it), since the capture's first frame.
    public var timeNs: Int64
    /// The peer's address as the LE Connection Complete gave it; `nil` when the capture began inside it.
    public var address: String?
    /// When the central's host asked for it (LE Create Connection or LE Extended Create
    /// Connection), when the capture shows that.
    public var requestedAtNs: Int64?
    /// How it ended, when the capture shows that.
    public var disconnection: RecordedDisconnection?

    /// A connection; see the properties.
    public init(ordinal: Int, frame: Int?, timeNs: Int64, address: String? = nil, requestedAtNs: Int64? = nil, disconnection: RecordedDisconnection? = nil) {
        self.ordinal = ordinal
        self.address = address
        self.frame = frame
        self.timeNs = timeNs
        self.requestedAtNs = requestedAtNs
        self.disconnection = disconnection
    }

    /// How long the central waited for it: from its request to its completion, when both are recorded.
    public var establishmentNs: Int64? {
        requestedAtNs.map { elapsedNs(from: $0, to: timeNs) }
    }
}

/// The HCI commands of the central's host that shape a connection's life, read from raw frames:
/// which the dissector does not report, because replay of the cores needs only the events.
enum HostCommand: Equatable {
    /// LE Create Connection (0x200D) or LE Extended Create Connection (0x2043).
    case createConnection
    /// Disconnect (0x0406) of a connection handle.
    case disconnect(handle: UInt16)

    /// The host command in `frame`, or `nil` when it holds none of the two.
    static func parse(_ frame: [UInt8], linkType: LinkType) -> HostCommand? {
        let start: Int
        switch linkType {
        case .bluetoothHCIH4WithPHDR:
            // The 4-byte direction header, then H4: packet type 0x01 is a command.
            guard frame.count > 5, frame[4] == 0x01 else { return nil }
            start = 5
        case .bluetoothHCIH4:
            guard frame.count > 1, frame[0] == 0x01 else { return nil }
            start = 1
        case .bluetoothLinuxMonitor:
            // adapter u16 BE, opcode u16 BE; opcode 2 is a command.
            guard frame.count > 4, frame[2] == 0, frame[3] == 2 else { return nil }
            start = 4
        default:
            return nil
        }
        guard frame.count >= start + 3 else { return nil }
        let opcode = UInt16(frame[start]) | UInt16(frame[start + 1]) << 8
        switch opcode {
        case 0x200D, 0x2043: return .createConnection
        case 0x0406:
            guard frame.count >= start + 5 else { return nil }
            return .disconnect(handle: (UInt16(frame[start + 3]) | UInt16(frame[start + 4]) << 8) & 0x0FFF)
        default: return nil
        }
    }
}
