import Testing
@testable import TetherCoreBluetooth

@Test(arguments: [
    (CBCharacteristicProperties.broadcast, 0x01), (.read, 0x02), (.writeWithoutResponse, 0x04), (.write, 0x08),
    (.notify, 0x10), (.indicate, 0x20), (.authenticatedSignedWrites, 0x40), (.extendedProperties, 0x80),
    (.notifyEncryptionRequired, 0x100), (.indicateEncryptionRequired, 0x200),
] as [(CBCharacteristicProperties, UInt)])
func characteristicPropertiesHaveTheSDKsBits(_ property: CBCharacteristicProperties, _ bit: UInt) {
    #expect(property.rawValue == bit)
}

@Test func aDeclarationsPropertiesByteReadsAsItsProperties() {
    let properties = CBCharacteristicProperties(rawValue: 0x12)
    #expect(properties == [.read, .notify])
    #expect(!properties.contains(.write))
}

@Test func managerStatesHaveTheSDKsRawValues() {
    let states: [CBManagerState] = [.unknown, .resetting, .unsupported, .unauthorized, .poweredOff, .poweredOn]
    #expect(states.map(\.rawValue) == [0, 1, 2, 3, 4, 5])
}

@Test func authorizationsHaveTheSDKsRawValues() {
    let values: [CBManagerAuthorization] = [.notDetermined, .restricted, .denied, .allowedAlways]
    #expect(values.map(\.rawValue) == [0, 1, 2, 3])
}

@Test func peripheralStatesHaveTheSDKsRawValues() {
    let states: [CBPeripheralState] = [.disconnected, .connecting, .connected, .disconnecting]
    #expect(states.map(\.rawValue) == [0, 1, 2, 3])
}

@Test func smallerEnumsHaveTheSDKsRawValues() {
    #expect(CBCharacteristicWriteType.withResponse.rawValue == 0)
    #expect(CBCharacteristicWriteType.withoutResponse.rawValue == 1)
    #expect(CBConnectionEvent.peerDisconnected.rawValue == 0)
    #expect(CBConnectionEvent.peerConnected.rawValue == 1)
    #expect(CBCentralManager.Feature.extendedScanAndConnect.rawValue == 1)
    #expect(CBAttributePermissions([.readable, .writeable, .readEncryptionRequired, .writeEncryptionRequired]).rawValue == 0x0F)
}

@Test func anEnumCasePrintsItsName() {
    #expect("\(CBManagerState.poweredOn)" == "poweredOn")
    #expect(String(describing: CBPeripheralState.disconnecting) == "disconnecting")
}

@Test(arguments: [
    (CBAdvertisementDataLocalNameKey, "kCBAdvDataLocalName"),
    (CBAdvertisementDataManufacturerDataKey, "kCBAdvDataManufacturerData"),
    (CBAdvertisementDataServiceDataKey, "kCBAdvDataServiceData"),
    (CBAdvertisementDataServiceUUIDsKey, "kCBAdvDataServiceUUIDs"),
    (CBAdvertisementDataOverflowServiceUUIDsKey, "kCBAdvDataOverflowServiceUUIDs"),
    (CBAdvertisementDataTxPowerLevelKey, "kCBAdvDataTxPowerLevel"),
    (CBAdvertisementDataIsConnectable, "kCBAdvDataIsConnectable"),
    (CBAdvertisementDataSolicitedServiceUUIDsKey, "kCBAdvDataSolicitedServiceUUIDs"),
])
func advertisementKeysHaveIOSsValues(_ key: String, _ value: String) {
    #expect(key == value)
}

@Test(arguments: [
    (CBCentralManagerOptionShowPowerAlertKey, "kCBInitOptionShowPowerAlert"),
    (CBCentralManagerOptionRestoreIdentifierKey, "kCBInitOptionRestoreIdentifier"),
    (CBCentralManagerOptionDeviceAccessForMedia, "kCBInitOptionDeviceAccessForMedia"),
    (CBCentralManagerScanOptionAllowDuplicatesKey, "kCBScanOptionAllowDuplicates"),
    (CBCentralManagerScanOptionSolicitedServiceUUIDsKey, "kCBScanOptionSolicitedServiceUUIDs"),
    (CBConnectPeripheralOptionNotifyOnConnectionKey, "kCBConnectOptionNotifyOnConnection"),
    (CBConnectPeripheralOptionNotifyOnDisconnectionKey, "kCBConnectOptionNotifyOnDisconnection"),
    (CBConnectPeripheralOptionNotifyOnNotificationKey, "kCBConnectOptionNotifyOnNotification"),
    (CBConnectPeripheralOptionStartDelayKey, "kCBConnectOptionStartDelay"),
    (CBConnectPeripheralOptionEnableTransportBridgingKey, "kCBConnectOptionEnableTransportBridging"),
    (CBConnectPeripheralOptionRequiresANCS, "kCBConnectOptionRequiresANCS"),
    (CBConnectPeripheralOptionEnableAutoReconnect, "kCBConnectOptionEnableAutoReconnect"),
])
func optionKeysHaveIOSsValues(_ key: String, _ value: String) {
    #expect(key == value)
}

@Test(arguments: [
    (CBCentralManagerRestoredStatePeripheralsKey, "kCBRestoredPeripherals"),
    (CBCentralManagerRestoredStateScanServicesKey, "kCBRestoredScanServices"),
    (CBCentralManagerRestoredStateScanOptionsKey, "kCBRestoredScanOptions"),
])
func restoredStateKeysHaveIOSsValues(_ key: String, _ value: String) {
    #expect(key == value)
}

@Test func connectionEventMatchingOptionsHaveIOSsValues() {
    #expect(CBConnectionEventMatchingOption.serviceUUIDs.rawValue == "kCBConnectionEventMatchingOptionServiceUUIDs")
    #expect(CBConnectionEventMatchingOption.peripheralUUIDs.rawValue == "kCBConnectionEventMatchingOptionPeripheralUUIDs")
    #expect(CBConnectionEventMatchingOption("kCBConnectionEventMatchingOptionServiceUUIDs") == .serviceUUIDs)
}
