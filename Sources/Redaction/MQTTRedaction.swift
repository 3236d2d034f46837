import CaptureKit
import Dissectors
import MQTT

/// The MQTT layer: client ids, user names and passwords of the CONNECT packets a capture holds.
///
/// Finding them reuses Tether's own dissection (``FrameDissector``: TCP reassembly per direction,
/// MQTT framing and decoding), so a CONNECT split over segments or sent after a retransmission is
/// found as `tether inspect` finds it. Rewriting then replaces each value, the same length, in the
/// TCP payloads of the connections to the broker ports, wherever it stands as an MQTT string (after
/// its own length) or as a word (a topic `tether/{account}/api/request/{client id}`), so sequence
/// numbers and lengths stay valid. The TCP checksum is updated by ``IPRedaction``.
enum MQTTRedaction {
    /// Registers the CONNECT fields of every MQTT connection in `frames`.
    static func discover(_ frames: [CaptureFrame], interfaces: [CaptureInterface], ports: Set<UInt16>, into map: inout RedactionMap) {
        var dissector = FrameDissector()
        dissector.mqttPorts = ports
        dissector.producesSummaries = false
        dissector.retainsTCPPayload = false
        for frame in frames {
            guard frame.interfaceIndex < interfaces.count else { continue }
            let linkType = interfaces[frame.interfaceIndex].linkType
            guard IPRedaction.reads(linkType) else { continue }
            let dissected = dissector.dissect(frame, linkType: linkType)
            for record in dissected.mqtt where record.fromClient {
                guard case .connect(let connect)? = record.packet?.body else { continue }
                map.string(.clientID, Array(connect.clientID.utf8))
                if let username = connect.username { map.string(.username, Array(username.utf8)) }
                if let password = connect.password { map.string(.password, password) }
            }
        }
    }

    /// Whether a segment between these ports belongs to an MQTT connection.
    static func isMQTT(sourcePort: UInt16, destinationPort: UInt16, ports: Set<UInt16>) -> Bool {
        ports.contains(sourcePort) || ports.contains(destinationPort)
    }

    /// Replaces the registered MQTT values in one TCP payload; returns the count per kind.
    static func rewrite(_ d: inout [UInt8], payload: Range<Int>, map: RedactionMap) -> [RedactedKind: Int] {
        var counts: [RedactedKind: Int] = [:]
        guard !payload.isEmpty else { return counts }
        for kind in [RedactedKind.clientID, .username, .password, .account] {
            var bytes = Array(d[payload])
            let n = ByteSubstitution.apply(map.substitutions(of: [kind], raw: true), to: &bytes)
            guard n > 0, bytes.count == payload.count else { continue }
            d.replaceSubrange(payload, with: bytes)
            counts[kind, default: 0] += n
        }
        return counts
    }
}
