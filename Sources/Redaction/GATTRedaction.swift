import CaptureKit
import Dissectors

/// The GATT layer: the Device Name characteristic (0x2A00, Bluetooth Core 5.4 Vol 3 Part C
/// §12.1) where the capture shows it read. Tether's ATT dissection names the handle from the
/// capture's own GATT discovery (or the manifest's `gatt_handles`), so a Read Response or Read Blob
/// Response of that handle is the device's name.
///
/// A name read in one ACL packet is rewritten in that frame; a name long enough to be split over
/// several ACL fragments is registered (so every text spelling it is redacted) but its fragments
/// are left as they are.
enum GATTRedaction {
    /// Frames (by number) whose ATT Read Response or Read Blob Response of 0x2A00 they complete.
    static func discover(
        _ frames: [CaptureFrame], interfaces: [CaptureInterface],
        namedHandles: [UInt16: (service: String?, characteristic: String)], into map: inout RedactionMap
    ) -> Set<Int> {
        var dissector = FrameDissector(namedHandles: namedHandles)
        dissector.producesSummaries = false
        var found: Set<Int> = []
        for frame in frames where frame.interfaceIndex < interfaces.count {
            let linkType = interfaces[frame.interfaceIndex].linkType
            guard HCIRedaction.reads(linkType) else { continue }
            for record in dissector.dissect(frame, linkType: linkType).att
            where (record.opcode == 0x0B || record.opcode == 0x0D) && isDeviceName(record.characteristicUUID) && !record.value.isEmpty {
                map.string(.name, record.value)
                found.insert(frame.number)
            }
        }
        return found
    }

    /// Whether a characteristic UUID, as the dissector spells it, is the Device Name.
    static func isDeviceName(_ uuid: String?) -> Bool {
        guard let uuid = uuid?.lowercased() else { return false }
        return uuid == "0x2a00" || uuid == "2a00" || uuid == "00002a00-0000-1000-8000-00805f9b34fb"
    }

    /// Replaces the registered names in one frame's ACL payload; returns the count.
    static func rewrite(_ data: inout [UInt8], linkType: LinkType, names: [ByteSubstitution]) -> Int {
        let start: Int
        switch linkType {
        case .bluetoothHCIH4WithPHDR: start = 5 + 4 + 4
        case .bluetoothHCIH4: start = 1 + 4 + 4
        case .bluetoothLinuxMonitor: start = 4 + 4 + 4
        default: return 0
        }
        guard data.count > start else { return 0 }
        var payload = Array(data[start...])
        let n = ByteSubstitution.apply(names, to: &payload)
        guard n > 0, payload.count == data.count - start else { return 0 }
        data.replaceSubrange(start..., with: payload)
        return n
    }
}
