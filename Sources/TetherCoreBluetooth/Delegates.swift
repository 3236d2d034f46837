// The central role's delegate protocols, method for method as Swift sees `CBCentralManager.h` and
// `CBPeripheral.h` (iOS 18 SDK).
//
// Linux Swift has no `@objc optional` requirements. Every optional method of the SDK's protocols is
// declared here as a requirement *and* given an empty default in an extension: a method that
// existed only in the extension would be dispatched statically, so the app's own implementation
// would never be called through the protocol. The flip side, which docs/app-in-the-loop.md spells
// out: a misspelt method compiles and silently gets the default. The trace shows every callback
// delivered (`app` `callback` events), so a callback the app never reacted to can be seen there.
//
// The SDK's headers are annotated for nullability, so each method has one Swift spelling and no
// implicitly-unwrapped twin is needed.
//
// Not declared: the channel-sounding callbacks of iOS 26
// (`peripheral(_:didReceive:error:)` with `CBChannelSoundingProcedureResults`,
// `peripheral(_:didCompleteChannelSoundingSession:)`); Tether models no channel sounding.

#if !canImport(Darwin)
/// Seconds since 1 January 2001, as Core Foundation counts them. Foundation on Linux does not
/// export the name, and `centralManager(_:didDisconnectPeripheral:timestamp:isReconnecting:error:)`
/// uses it.
public typealias CFAbsoluteTime = Double
#endif

/// Hears about a central manager's state, its scan and its connections
/// (`CBCentralManagerDelegate`). Only `centralManagerDidUpdateState(_:)` is required.
public protocol CBCentralManagerDelegate: NSObjectProtocol {
    /// The manager's `state` changed. The first call says whether Bluetooth can be used at all;
    /// nothing should be scanned or connected before `.poweredOn`.
    func centralManagerDidUpdateState(_ central: CBCentralManager)

    /// The system is relaunching the app to restore this manager; `dict` holds the
    /// `CBCentralManagerRestoredState…Key` entries. Called before `centralManagerDidUpdateState(_:)`.
    func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any])

    /// A scan found `peripheral`, advertising `advertisementData` (keyed by the
    /// `CBAdvertisementData…Key` constants), received at `RSSI` dBm (127 when not available).
    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                        advertisementData: [String: Any], rssi RSSI: NSNumber)

    /// `connect(_:options:)` succeeded.
    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral)

    /// `connect(_:options:)` failed; `error` says why.
    func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?)

    /// The connection ended: `error` is nil after `cancelPeripheralConnection(_:)`, otherwise the
    /// cause.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?)

    /// The connection ended, with the time it did and whether the system is reconnecting by itself
    /// (`CBConnectPeripheralOptionEnableAutoReconnect`); iOS 17. Both disconnection methods have a
    /// default here, so which of the two an app implemented cannot be seen from outside;
    /// `CBCentralManager` says which it calls.
    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                        timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?)

    /// A connection event matching the options of `registerForConnectionEvents(options:)`
    /// happened (iOS 13).
    func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent,
                        for peripheral: CBPeripheral)

    /// The ANCS authorization of a peripheral that requires ANCS changed (iOS 13).
    func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral)
}

extension CBCentralManagerDelegate {
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, willRestoreState dict: [String: Any]) {}
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {}
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {}
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral, error: (any Error)?) {}
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {}
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                               timestamp: CFAbsoluteTime, isReconnecting: Bool, error: (any Error)?) {}
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, connectionEventDidOccur event: CBConnectionEvent,
                               for peripheral: CBPeripheral) {}
    /// Default: nothing.
    public func centralManager(_ central: CBCentralManager, didUpdateANCSAuthorizationFor peripheral: CBPeripheral) {}
}

/// Hears the results of a peripheral's discovery, reads, writes and notifications
/// (`CBPeripheralDelegate`). Every method is optional.
public protocol CBPeripheralDelegate: NSObjectProtocol {
    /// The peripheral's name changed.
    func peripheralDidUpdateName(_ peripheral: CBPeripheral)

    /// Services changed on the peripheral (a Service Changed indication); `invalidatedServices`
    /// are gone and must be discovered again.
    func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService])

    /// The RSSI was read. Deprecated in the SDK since iOS 8 in favour of
    /// `peripheral(_:didReadRSSI:error:)`, and still declared there.
    func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?)

    /// `readRSSI()` finished: `RSSI` in dBm, or `error`.
    func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?)

    /// `discoverServices(_:)` finished; the services are in `peripheral.services`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?)

    /// `discoverIncludedServices(_:for:)` finished; they are in `service.includedServices`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?)

    /// `discoverCharacteristics(_:for:)` finished; they are in `service.characteristics`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?)

    /// A characteristic's value arrived: the answer to `readValue(for:)`, or a notification or
    /// indication.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?)

    /// A write with response (`.withResponse`) to a characteristic finished.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?)

    /// `setNotifyValue(_:for:)` finished: the CCCD write was answered.
    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic,
                    error: (any Error)?)

    /// `discoverDescriptors(for:)` finished; they are in `characteristic.descriptors`.
    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic,
                    error: (any Error)?)

    /// `readValue(for:)` of a descriptor finished.
    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?)

    /// `writeValue(_:for:)` of a descriptor finished.
    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?)

    /// After `canSendWriteWithoutResponse` was false, the peripheral can take writes without
    /// response again.
    func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral)

    /// `openL2CAPChannel(_:)` finished. Tether models no L2CAP channels: `channel` is always nil.
    func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?)
}

extension CBPeripheralDelegate {
    /// Default: nothing.
    public func peripheralDidUpdateName(_ peripheral: CBPeripheral) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didModifyServices invalidatedServices: [CBService]) {}
    /// Default: nothing.
    public func peripheralDidUpdateRSSI(_ peripheral: CBPeripheral, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didReadRSSI RSSI: NSNumber, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverIncludedServicesFor service: CBService, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic,
                           error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic,
                           error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor descriptor: CBDescriptor, error: (any Error)?) {}
    /// Default: nothing.
    public func peripheralIsReady(toSendWriteWithoutResponse peripheral: CBPeripheral) {}
    /// Default: nothing.
    public func peripheral(_ peripheral: CBPeripheral, didOpen channel: CBL2CAPChannel?, error: (any Error)?) {}
}
