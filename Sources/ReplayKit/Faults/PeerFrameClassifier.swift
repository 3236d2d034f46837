import CaptureKit
import CaptureSet
import Dissectors
import MQTT

/// Decides which captured frames are *peer frames* — what the core under test receives from the
/// other side of its link, the only frames a fault touches — and what kind each one is.
///
/// - BLE (`ble-hci`, `ble-monitor`, or an undescribed HCI link type): an ACL packet the controller
///   passed up to the host (direction *received*); its kind is its ATT PDU's. HCI events are the
///   local controller's, and ACL the host sent is the core's own output: neither is a peer frame,
///   except HCI Disconnection Complete (kind `disconnection`), the recorded end of a link, which
///   only a selector naming that kind touches.
/// - MQTT over TCP (`mqtt-tcp`): a segment from the broker port; its kind is the MQTT packet it
///   completes.
/// - UDP (`ingest-udp`, or an undescribed IP interface): a datagram to the ingest port (any UDP
///   datagram on an undescribed interface).
/// - `api-calls` and `app-group` frames are never peer frames: they are the app's own calls and the
///   folder's record, not traffic on a link.
public enum PeerFrameClassifier {
    /// The kind of peer frame `bytes` is on `interface`, or `nil` when it is not one.
    public static func classify(_ bytes: UnsafeRawBufferPointer, dissected: DissectedFrame?, interface: ReplayInterface) -> PeerFrameKind? {
        if interface.carriesAPICalls { return nil }
        if let role = interface.role {
            switch role {
            case .bleHCI, .bleMonitor: return bleKind(bytes, dissected: dissected, linkType: interface.linkType)
            case .mqttTCP: return mqttKind(dissected, brokerPort: interface.parameter("broker_port", as: UInt16.self))
            case .ingestUDP: return udpKind(dissected, port: interface.parameter("ingest_port", as: UInt16.self) ?? 12345)
            default: return nil
            }
        }
        switch interface.linkType {
        case .bluetoothHCIH4WithPHDR, .bluetoothHCIH4, .bluetoothLinuxMonitor:
            return bleKind(bytes, dissected: dissected, linkType: interface.linkType)
        default:
            return dissected?.udp == nil ? nil : .datagram
        }
    }

    /// Whether a frame is an HCI ACL data packet (H4 type 0x02; monitor opcode 5 or 6).
    static func isACL(_ bytes: UnsafeRawBufferPointer, linkType: LinkType) -> Bool {
        switch linkType {
        case .bluetoothHCIH4WithPHDR: return bytes.count > 4 && bytes[4] == 0x02
        case .bluetoothHCIH4: return bytes.count > 0 && bytes[0] == 0x02
        case .bluetoothLinuxMonitor: return bytes.count >= 4 && bytes[2] == 0 && (bytes[3] == 5 || bytes[3] == 6)
        default: return false
        }
    }

    private static func bleKind(_ bytes: UnsafeRawBufferPointer, dissected: DissectedFrame?, linkType: LinkType) -> PeerFrameKind? {
        if case .disconnected? = dissected?.linkChange { return .disconnection }
        guard isACL(bytes, linkType: linkType), dissected?.direction == .received else { return nil }
        guard let record = dissected?.att.first else { return .acl }
        switch record.opcode {
        case .handleValueNotification: return .notification
        case .handleValueIndication: return .indication
        case .writeRequest, .writeCommand, .signedWriteCommand: return .write
        case .writeResponse: return .writeResponse
        case .errorResponse: return .errorResponse
        case .exchangeMTURequest, .exchangeMTUResponse: return .mtu
        case .findInformationResponse, .findByTypeValueResponse, .readByTypeResponse, .readResponse, .readBlobResponse,
             .readMultipleResponse, .readByGroupTypeResponse: return .readResponse
        default: return .acl
        }
    }

    private static func mqttKind(_ dissected: DissectedFrame?, brokerPort: UInt16?) -> PeerFrameKind? {
        guard let tcp = dissected?.tcp, tcp.sourcePort == (brokerPort ?? 1883) else { return nil }
        guard let record = dissected?.mqtt.first(where: { !$0.fromClient }) else { return .tcp }
        switch MQTTPacketType(rawValue: record.typeNumber) {
        case .connack?: return .connack
        case .publish?: return .publish
        case .puback?: return .puback
        case .pubrec?, .pubrel?, .pubcomp?: return .pubflow
        case .suback?: return .suback
        case .unsuback?: return .unsuback
        case .pingresp?: return .pingresp
        default: return .tcp
        }
    }

    private static func udpKind(_ dissected: DissectedFrame?, port: UInt16) -> PeerFrameKind? {
        guard let udp = dissected?.udp, udp.destinationPort == port else { return nil }
        return .datagram
    }
}
