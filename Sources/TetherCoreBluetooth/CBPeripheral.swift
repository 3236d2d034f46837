import BehaviourTrace
import Foundation

/// A remote device (`CBPeer`): what centrals and peripherals share.
///
/// `@unchecked Sendable` because an `NSObject` subclass cannot be checked: its one stored property
/// is a `let`.
open class CBPeer: NSObject, @unchecked Sendable {
    /// The device's identifier: stable across runs and machines in Tether (made from its
    /// recorded address), where a phone makes one up per device.
    open var identifier: UUID { peerIdentifier }

    let peerIdentifier: UUID

    init(identifier: UUID) {
        self.peerIdentifier = identifier
        super.init()
    }

    /// Equal when the identifiers are: one device, one peer.
    open override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? CBPeer else { return false }
        return other.peerIdentifier == peerIdentifier
    }

    /// The identifier's hash, to agree with ``isEqual(_:)``.
    open override var hash: Int { peerIdentifier.hashValue }
}

/// A peripheral the app found or retrieved (`CBPeripheral`), backed by the recorded peripheral
/// of the current `ReplaySession`.
///
/// Every method returns at once, as on the phone; the answer comes later as a delegate callback,
/// on the thread that drives the session, at the virtual instant the recording decides.
///
/// `@unchecked Sendable`: no lock; its mutable properties are set and read only on the thread that
/// drives the session (the app's calls and every callback), as CoreBluetooth's own objects are
/// used on their manager's queue.
open class CBPeripheral: CBPeer, @unchecked Sendable {
    /// Gets the peripheral's callbacks.
    open weak var delegate: (any CBPeripheralDelegate)?
    /// The name it advertised (or the Device Name the capture read), when known.
    open internal(set) var name: String?
    /// Whether it is connected.
    open internal(set) var state: CBPeripheralState = .disconnected
    /// The services discovered so far; `nil` before any discovery.
    open internal(set) var services: [CBService]?
    /// Whether a write without response can be sent now: always, as the virtual link never fills.
    open var canSendWriteWithoutResponse: Bool { state == .connected }
    /// Whether the peripheral may see the phone's notifications (ANCS): not modelled, `false`.
    open var ancsAuthorized: Bool { false }
    /// Deprecated by Apple: the last RSSI read.
    @available(*, deprecated, message: "Apple deprecated RSSI; use peripheral(_:didReadRSSI:error:)")
    open internal(set) var RSSI: NSNumber?

    /// The session this peripheral belongs to.
    unowned let session: CoreBluetoothSession
    /// The ATT_MTU of the current connection.
    var mtu = 23

    init(identifier: UUID, session: CoreBluetoothSession) {
        self.session = session
        super.init(identifier: identifier)
    }

    open override var description: String {
        "<CBPeripheral: \(Unmanaged.passUnretained(self).toOpaque()), identifier = \(identifier.uuidString), name = \(name ?? "(null)"), "
            + "mtu = \(mtu), state = \(state)>"
    }

    // MARK: discovery

    /// Discovers the services listed (all, for `nil`); `peripheral(_:didDiscoverServices:)` follows.
    open func discoverServices(_ serviceUUIDs: [CBUUID]?) {
        var fields: [String: TraceValue] = [:]
        if let serviceUUIDs { fields["services"] = .array(serviceUUIDs.map { .string($0.uuidString) }) }
        request("discover_services", api: "discoverServices(_:)", fields)
    }

    /// Discovers the included services of `service`.
    open func discoverIncludedServices(_ includedServiceUUIDs: [CBUUID]?, for service: CBService) {
        request("discover_included_services", api: "discoverIncludedServices(_:for:)", ["handle": .int(Int64(service.handle))])
    }

    /// Discovers the characteristics listed (all, for `nil`) of `service`.
    open func discoverCharacteristics(_ characteristicUUIDs: [CBUUID]?, for service: CBService) {
        var fields: [String: TraceValue] = ["handle": .int(Int64(service.handle))]
        if let characteristicUUIDs { fields["characteristics"] = .array(characteristicUUIDs.map { .string($0.uuidString) }) }
        request("discover_characteristics", api: "discoverCharacteristics(_:for:)", fields)
    }

    /// Discovers the descriptors of `characteristic`.
    open func discoverDescriptors(for characteristic: CBCharacteristic) {
        request("discover_descriptors", api: "discoverDescriptors(for:)", ["handle": .int(Int64(characteristic.valueHandle))])
    }

    // MARK: values

    /// Reads `characteristic`'s value; `peripheral(_:didUpdateValueFor:error:)` follows.
    open func readValue(for characteristic: CBCharacteristic) {
        request("read", api: "readValue(for:)", ["handle": .int(Int64(characteristic.valueHandle))])
    }

    /// Reads `descriptor`'s value; `peripheral(_:didUpdateValueFor:error:)` (descriptor) follows.
    open func readValue(for descriptor: CBDescriptor) {
        request("read", api: "readValue(for:)", ["handle": .int(Int64(descriptor.handle))])
    }

    /// Writes `data` to `characteristic`: with response, `peripheral(_:didWriteValueFor:error:)`
    /// follows; without, nothing does.
    open func writeValue(_ data: Data, for characteristic: CBCharacteristic, type: CBCharacteristicWriteType) {
        let call = type == .withResponse ? "write" : "write_without_response"
        request(call, api: "writeValue(_:for:type:)", ["handle": .int(Int64(characteristic.valueHandle)), "value": .string(Self.hex(data))])
    }

    /// Writes `data` to `descriptor` (Apple refuses writes to the CCCD: use ``setNotifyValue(_:for:)``).
    open func writeValue(_ data: Data, for descriptor: CBDescriptor) {
        if descriptor.uuid == CBUUID(string: CBUUIDClientCharacteristicConfigurationString) {
            session.misuse("CBPeripheral.writeValue(_:for:) to a Client Characteristic Configuration descriptor; CoreBluetooth refuses it: use setNotifyValue(_:for:)")
            return
        }
        request("write", api: "writeValue(_:for:)", ["handle": .int(Int64(descriptor.handle)), "value": .string(Self.hex(data))])
    }

    /// Switches notifications (or indications) of `characteristic` on or off;
    /// `peripheral(_:didUpdateNotificationStateFor:error:)` follows.
    open func setNotifyValue(_ enabled: Bool, for characteristic: CBCharacteristic) {
        request("set_notify", api: "setNotifyValue(_:for:)", ["handle": .int(Int64(characteristic.valueHandle)), "enabled": .bool(enabled)])
    }

    /// The longest value one write of `type` carries: 512 bytes with response (a long write),
    /// the ATT_MTU less 3 without.
    open func maximumWriteValueLength(for type: CBCharacteristicWriteType) -> Int {
        type == .withResponse ? 512 : mtu - 3
    }

    /// Reads the RSSI; `peripheral(_:didReadRSSI:error:)` follows with the last one recorded.
    open func readRSSI() {
        request("read_rssi", api: "readRSSI()", [:])
    }

    /// L2CAP channels are not modelled: `peripheral(_:didOpen:error:)` follows with
    /// `CBError.operationNotSupported`.
    open func openL2CAPChannel(_ PSM: CBL2CAPPSM) {
        session.appCall("openL2CAPChannel(_:)", ["psm": .int(Int64(PSM))])
        session.later { [weak self] in
            guard let self else { return }
            self.session.callback("peripheral(_:didOpen:error:)")
            self.delegate?.peripheral(self, didOpen: nil, error: CBError(.operationNotSupported, detail: "L2CAP channels are not modelled by TetherCoreBluetooth"))
        }
    }

    private func request(_ call: String, api: String, _ fields: [String: TraceValue]) {
        session.appCall("CBPeripheral." + api, fields.merging(["call": .string(call)]) { a, _ in a })
        guard state == .connected else {
            session.misuse("CBPeripheral.\(api) while the peripheral is \(state); CoreBluetooth ignores it (API MISUSE)")
            return
        }
        var record = fields
        record["call"] = .string(call)
        record["peripheral"] = .string(identifier.uuidString.lowercased())
        session.post(record)
    }

    static func hex(_ data: Data) -> String { JSONLiteral.hex(Array(data)) }
}
