/// Why a capture set cannot be emulated: each case names the set or file and says what to do.
public enum EmulationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The set could not be loaded (manifest, capture file, digest); the text is the loader's.
    case cannotLoad(set: String, reason: String)
    /// The capture file could not be read past `frame`.
    case unreadableCapture(file: String, frame: Int, reason: String)
    /// No interface of the capture carries Bluetooth HCI (link types 187, 201 or 254).
    case noBluetoothInterface(file: String, linkTypes: [UInt32])
    /// The capture's HCI holds no ATT traffic at all: nothing to rebuild or answer from.
    case noGATTTraffic(file: String, frames: Int)
    /// Neither discovery in the capture nor the manifest's `gatt_handles` describe any attribute.
    case noDatabase(file: String)

    public var description: String {
        switch self {
        case .cannotLoad(let set, let reason):
            "cannot load capture set \(set): \(reason)"
        case .unreadableCapture(let file, let frame, let reason):
            "\(file): cannot read past frame \(frame): \(reason); repair or re-import the capture"
        case .noBluetoothInterface(let file, let linkTypes):
            "\(file): no Bluetooth HCI interface (link types found: \(linkTypes.map(String.init).joined(separator: ", "))); "
                + "emulate needs HCI with link type 187, 201 or 254 — import a btsnoop, PacketLogger or BLE pcap with `tether import`"
        case .noGATTTraffic(let file, let frames):
            "\(file): \(frames) HCI frames but no ATT PDU in any of them; there is no peripheral behaviour to emulate "
                + "(record a session in which the central uses the peripheral's GATT database)"
        case .noDatabase(let file):
            "\(file): the capture holds no GATT discovery and the manifest names no `gatt_handles`; "
                + "add the handles the capture uses to the manifest's gatt_handles (docs/capture-set.md) and retry"
        }
    }
}
