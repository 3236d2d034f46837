// The dictionary keys of CoreBluetooth's central role (`CBAdvertisementData.h`,
// `CBCentralManagerConstants.h`). The SDK declares them as extern NSString constants; their values
// are not in the headers, and are taken from what iOS itself puts in the dictionaries (logged
// `advertisementData` and `willRestoreState` dictionaries, and the strings CoreBluetooth and
// bluetoothd look up). An app that indexes a dictionary with the literal ("kCBAdvDataLocalName")
// instead of the constant then behaves as on iOS. One value could not be checked; its comment
// says so.

// MARK: Advertisement data (`centralManager(_:didDiscover:advertisementData:rssi:)`)

/// The peripheral's local name from its advertising data, a `String`.
public let CBAdvertisementDataLocalNameKey: String = "kCBAdvDataLocalName"
/// The Manufacturer Specific Data field, `Data` starting with the little-endian company
/// identifier.
public let CBAdvertisementDataManufacturerDataKey: String = "kCBAdvDataManufacturerData"
/// Service data, a `[CBUUID: Data]`.
public let CBAdvertisementDataServiceDataKey: String = "kCBAdvDataServiceData"
/// The advertised service UUIDs, a `[CBUUID]`.
public let CBAdvertisementDataServiceUUIDsKey: String = "kCBAdvDataServiceUUIDs"
/// Service UUIDs from the overflow area, a `[CBUUID]` (advertising by a backgrounded iOS app).
public let CBAdvertisementDataOverflowServiceUUIDsKey: String = "kCBAdvDataOverflowServiceUUIDs"
/// The advertised transmit power in dBm, an `NSNumber`.
public let CBAdvertisementDataTxPowerLevelKey: String = "kCBAdvDataTxPowerLevel"
/// Whether the advertising event type is connectable, an `NSNumber` holding a Bool. The SDK's
/// name has no "Key" suffix.
public let CBAdvertisementDataIsConnectable: String = "kCBAdvDataIsConnectable"
/// The solicited service UUIDs, a `[CBUUID]`.
public let CBAdvertisementDataSolicitedServiceUUIDsKey: String = "kCBAdvDataSolicitedServiceUUIDs"

// MARK: Central manager initialization options (`init(delegate:queue:options:)`)

/// Whether the system warns the user when Bluetooth is off as the manager is made, an
/// `NSNumber` holding a Bool.
public let CBCentralManagerOptionShowPowerAlertKey: String = "kCBInitOptionShowPowerAlert"
/// The identifier under which the system preserves and restores the manager's state, a `String`.
public let CBCentralManagerOptionRestoreIdentifierKey: String = "kCBInitOptionRestoreIdentifier"
/// Whether the manager is for a media device accessory (iOS 18). The value could not be
/// verified against iOS: "kCBInitOptionDeviceAccessForMedia" follows the pattern of the other
/// initialization options and is what another open CoreBluetooth port uses.
public let CBCentralManagerOptionDeviceAccessForMedia: String = "kCBInitOptionDeviceAccessForMedia"

// MARK: Scan options (`scanForPeripherals(withServices:options:)`)

/// Whether every advertisement is reported rather than the first per peripheral, an `NSNumber`
/// holding a Bool.
public let CBCentralManagerScanOptionAllowDuplicatesKey: String = "kCBScanOptionAllowDuplicates"
/// Service UUIDs to find peripherals soliciting, a `[CBUUID]`.
public let CBCentralManagerScanOptionSolicitedServiceUUIDsKey: String = "kCBScanOptionSolicitedServiceUUIDs"

// MARK: Connect options (`connect(_:options:)`)

/// Whether the system alerts on connection while the app is suspended, an `NSNumber` holding a
/// Bool.
public let CBConnectPeripheralOptionNotifyOnConnectionKey: String = "kCBConnectOptionNotifyOnConnection"
/// Whether the system alerts on disconnection while the app is suspended.
public let CBConnectPeripheralOptionNotifyOnDisconnectionKey: String = "kCBConnectOptionNotifyOnDisconnection"
/// Whether the system alerts on every notification while the app is suspended.
public let CBConnectPeripheralOptionNotifyOnNotificationKey: String = "kCBConnectOptionNotifyOnNotification"
/// Seconds to wait before connecting, an `NSNumber`.
public let CBConnectPeripheralOptionStartDelayKey: String = "kCBConnectOptionStartDelay"
/// Whether classic Bluetooth profiles are bridged over the LE connection (iOS 13), an
/// `NSNumber` holding a Bool.
public let CBConnectPeripheralOptionEnableTransportBridgingKey: String = "kCBConnectOptionEnableTransportBridging"
/// Whether the connection requires the Apple Notification Center Service (iOS 13). The SDK's
/// name has no "Key" suffix.
public let CBConnectPeripheralOptionRequiresANCS: String = "kCBConnectOptionRequiresANCS"
/// Whether the system reconnects by itself after the link drops (iOS 17); the delegate then
/// hears `centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)`. The SDK's
/// name has no "Key" suffix.
public let CBConnectPeripheralOptionEnableAutoReconnect: String = "kCBConnectOptionEnableAutoReconnect"

// MARK: Restored state (`centralManager(_:willRestoreState:)`)

/// The peripherals that were connected or being connected when the app was terminated, a
/// `[CBPeripheral]`.
public let CBCentralManagerRestoredStatePeripheralsKey: String = "kCBRestoredPeripherals"
/// The service UUIDs the app was scanning for, a `[CBUUID]`.
public let CBCentralManagerRestoredStateScanServicesKey: String = "kCBRestoredScanServices"
/// The scan options that were in force, a `[String: Any]`.
public let CBCentralManagerRestoredStateScanOptionsKey: String = "kCBRestoredScanOptions"

// MARK: Connection event matching (`registerForConnectionEvents(options:)`)

/// A key of the options that say which connection events a central hears
/// (`CBConnectionEventMatchingOption`, iOS 13).
public struct CBConnectionEventMatchingOption: RawRepresentable, Hashable, Sendable {
    /// The key's string.
    public let rawValue: String

    /// An option from its string.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// The same, unlabelled, as Swift imports string-valued option types.
    public init(_ rawValue: String) {
        self.rawValue = rawValue
    }

    /// Hear events of peripherals offering any of these services, a `[CBUUID]`.
    public static let serviceUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionServiceUUIDs")
    /// Hear events of these peripherals, a `[UUID]` of their identifiers.
    public static let peripheralUUIDs = CBConnectionEventMatchingOption(rawValue: "kCBConnectionEventMatchingOptionPeripheralUUIDs")
}
