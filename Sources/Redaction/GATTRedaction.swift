import CaptureKit
import Dissectors

/// The GATT layer: the Device Name characteristic (0x2A00, Bluetooth Core 5.4 Vol 3 Part C
/// §12.1) where the capture shows it read or written. Tether's ATT dissection names the handle
/// from the capture's own GATT discovery (or the manifest's `gatt_handles`), so a Read Response or
/// Read Blob Response of that handle, or a Write Request or Write Command to it, is the device's
/// name; and a Read By Type Response to a Read By Type Request for 0x2A00 (Read Using
/// Characteristic UUID, Vol 3 Part G §4.8.2) holds it after each handle.
///
/// A name read in one ACL packet is rewritten in that frame; a name long enough to be split over
/// several ACL fragments is registered (so every text spelling it is redacted) but its fragments
/// are left as they are.
enum GATTRedaction {
    /// Registers every Device Name the capture shows; returns the frames (by number) that hold one.
    static func discover(
        _ frames: [CaptureFrame], interfaces: [CaptureInterface],
        namedHandles: [UInt16: GATTHandleName], into map: inout RedactionMap
    ) -> Set<Int> {
        var dissector = FrameDissector(namedHandles: namedHandles)
        dissector.producesSummaries = false
        var found: Set<Int> = []
        // Connections with a Read By Type Request for the Device Name awaiting its response.
        var askedByType: Set<UInt16> = []
        for frame in frames where frame.interfaceIndex < interfaces.count {
            let linkType = interfaces[frame.interfaceIndex].linkType
            guard HCIRedaction.reads(linkType) else { continue }
            for record in dissector.dissect(frame, linkType: linkType).att {
                switch record.opcode {
                case .readResponse, .readBlobResponse, .writeRequest, .writeCommand:
                    guard isDeviceName(record.characteristicUUID), !record.value.isEmpty else { continue }
                    map.string(.name, record.value)
                    found.insert(frame.number)
                case .readByTypeRequest:
                    // Starting and ending handle, then the type.
                    let type = Array(record.value.dropFirst(4))
                    if type == [0x00, 0x2A] || type == deviceName128 { askedByType.insert(record.connectionHandle) } else { askedByType.remove(record.connectionHandle) }
                case .readByTypeResponse:
                    guard askedByType.remove(record.connectionHandle) != nil, let first = record.value.first else { continue }
                    let length = Int(first)
                    guard length > 2 else { continue }
                    var at = 1
                    while at + length <= record.value.count {
                        let value = Array(record.value[(at + 2)..<(at + length)])
                        if !value.isEmpty { map.string(.name, value); found.insert(frame.number) }
                        at += length
                    }
                default:
                    continue
                }
            }
        }
        return found
    }

    /// 0x2A00 as a 128-bit UUID on the wire (the Bluetooth Base UUID, least significant byte first).
    static let deviceName128: [UInt8] = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x00, 0x2A, 0x00, 0x00]

    /// Whether a characteristic UUID, as the dissector spells it, is the Device Name.
    static func isDeviceName(_ uuid: BluetoothUUID?) -> Bool {
        uuid?.shortValue == 0x2A00
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
