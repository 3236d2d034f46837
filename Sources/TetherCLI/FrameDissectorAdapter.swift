import MessagingIntegration
import SessionIntegration
import WidgetIntegration
import IngestIntegration
import ReplayKit
import BehaviourTrace
import CaptureKit
import CaptureSet
import Dissectors

/// One dissector per capture, fed every frame in order (it carries ACL, IP and GATT state across
/// frames), behind the CLI's `dissect(frame, interface:)` call. Connect IQ link packets are named
/// on top of the ATT dissection, with the message of each completed transfer when it can be read.
struct FrameDissectorAdapter {
    private var dissector: FrameDissector
    private var connectIQ = ConnectIQAnnotator()
    /// The Connect IQ packets of the frame last dissected.
    private(set) var lastConnectIQ: [ConnectIQAnnotation] = []

    /// A dissector that also names the handles a manifest lists (`gatt_handles`) and reads TCP
    /// connections to `mqttPorts` as MQTT.
    init(gattHandles: [ManifestGATTHandle] = [], mqttPorts: Set<UInt16> = [1883]) {
        dissector = FrameDissector(namedHandles: Dictionary(
            gattHandles.map { ($0.handle, (service: $0.serviceUUID, characteristic: $0.characteristicUUID)) },
            uniquingKeysWith: { first, _ in first }))
        dissector.mqttPorts = mqttPorts
    }

    mutating func dissect(_ frame: CaptureFrame, interface: CaptureInterface) -> DissectedFrame {
        var dissected = dissector.dissect(frame, linkType: interface.linkType)
        lastConnectIQ = dissected.att.isEmpty ? [] : connectIQ.annotate(dissected)
        if !lastConnectIQ.isEmpty {
            dissected.summary += " · " + lastConnectIQ.map(\.summary).joined(separator: " · ")
        }
        return dissected
    }
}
