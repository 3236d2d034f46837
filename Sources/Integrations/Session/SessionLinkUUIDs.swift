import Dissectors
import SessionCore

/// ``SessionLinkGATT``'s characteristics as values, for classifying ATT records: every record of a
/// session replay is asked, and two words compare faster than two texts. `SessionLinkUUIDsTests`
/// checks that they are the texts SessionCore publishes.
enum SessionLinkUUIDs {
    /// ``SessionLinkGATT/writeCharacteristic``: phone → watch frames.
    static let write = BluetoothUUID(high: 0x54450002_5345_5353, low: 0x494f_4e4c494e4b01)
    /// ``SessionLinkGATT/notifyCharacteristic``: watch → phone frames.
    static let notify = BluetoothUUID(high: 0x54450003_5345_5353, low: 0x494f_4e4c494e4b01)
}
