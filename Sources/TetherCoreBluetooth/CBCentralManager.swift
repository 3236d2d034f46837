import AppLoop
import BehaviourTrace
import Foundation

/// What central and peripheral managers share (`CBManager`).
///
/// `@unchecked Sendable`: no lock; ``state`` is set and read only on the thread that drives the
/// session, as CoreBluetooth's managers are used on their queue.
open class CBManager: NSObject, @unchecked Sendable {
    /// The Bluetooth state: `.poweredOn` once the session has answered the manager's creation
    /// (`centralManagerDidUpdateState(_:)` says so); `.unsupported` with no session current.
    open internal(set) var state: CBManagerState = .unknown

    /// The app's Bluetooth authorization: always granted in the loop.
    open class var authorization: CBManagerAuthorization { .allowedAlways }

    /// The app's Bluetooth authorization: always granted in the loop.
    open var authorization: CBManagerAuthorization { .allowedAlways }
}

/// The central role (`CBCentralManager`): scans, connects and hands out ``CBPeripheral``s, backed
/// by the recorded peripheral of the current `ReplaySession` (`ReplaySession(replayingPeripheralOf:)`
/// then `makeCurrent()`).
///
/// `queue` is accepted and not used: every callback arrives on the thread that drives the session,
/// in virtual-time order, so a test needs no expectation or wait (docs/corebluetooth.md).
///
/// `@unchecked Sendable`: no lock; ``delegate`` and ``isScanning`` are set and read only on the
/// thread that drives the session (the app's calls and every callback).
open class CBCentralManager: CBManager, @unchecked Sendable {
    /// Gets the manager's callbacks.
    open weak var delegate: (any CBCentralManagerDelegate)?
    /// Whether a scan is on.
    open internal(set) var isScanning = false

    let session: CoreBluetoothSession?

    /// A manager with no delegate, on the main queue.
    public convenience override init() {
        self.init(delegate: nil, queue: nil, options: nil)
    }

    /// A manager whose callbacks go to `delegate`.
    public convenience init(delegate: (any CBCentralManagerDelegate)?, queue: DispatchQueue?) {
        self.init(delegate: delegate, queue: queue, options: nil)
    }

    /// A manager whose callbacks go to `delegate`. `options` are recorded; state restoration
    /// (`CBCentralManagerOptionRestoreIdentifierKey`) is not modelled.
    public init(delegate: (any CBCentralManagerDelegate)?, queue: DispatchQueue?, options: [String: Any]? = nil) {
        self.delegate = delegate
        self.session = AppLoop.currentHost.map(CoreBluetoothSession.of)
        super.init()
        guard let session else {
            state = .unsupported
            FileHandle.standardError.write(Data(("TetherCoreBluetooth: CBCentralManager made with no session current: its state is .unsupported. "
                + "Make one current first: `try ReplaySession(replayingPeripheralOf: …).makeCurrent()`.\n").utf8))
            return
        }
        var fields: [String: TraceValue] = [:]
        if let restore = options?[CBCentralManagerOptionRestoreIdentifierKey] as? String {
            fields["restore_identifier"] = .string(restore)
            session.misuse("state restoration (CBCentralManagerOptionRestoreIdentifierKey) is not modelled: willRestoreState is never called")
        }
        session.adopt(self, fields)
    }

    /// Whether the platform supports `features`: extended scanning and connection are not modelled.
    open class func supports(_ features: CBCentralManager.Feature) -> Bool { false }

    /// The features of ``supports(_:)`` (`CBCentralManager.Feature`).
    public typealias Feature = CBCentralManagerFeature

    // MARK: scanning

    /// Scans for peripherals advertising any of `serviceUUIDs` (all, for `nil`): the recorded
    /// advertising reports from now on arrive as `centralManager(_:didDiscover:advertisementData:rssi:)`,
    /// once per peripheral unless `CBCentralManagerScanOptionAllowDuplicatesKey` is `true`.
    open func scanForPeripherals(withServices serviceUUIDs: [CBUUID]?, options: [String: Any]? = nil) {
        var fields: [String: TraceValue] = ["call": .string("scan")]
        if let serviceUUIDs { fields["services"] = .array(serviceUUIDs.map { .string($0.uuidString) }) }
        if (options?[CBCentralManagerScanOptionAllowDuplicatesKey] as? Bool) == true || (options?[CBCentralManagerScanOptionAllowDuplicatesKey] as? NSNumber)?.boolValue == true {
            fields["allow_duplicates"] = .bool(true)
        }
        guard let session, ready("scanForPeripherals(withServices:options:)", fields) else { return }
        isScanning = true
        session.post(fields)
    }

    /// Stops scanning.
    open func stopScan() {
        guard let session, ready("stopScan()", ["call": .string("stop_scan")]) else { return }
        isScanning = false
        session.post(["call": .string("stop_scan")])
    }

    // MARK: connections

    /// Connects `peripheral`: `centralManager(_:didConnect:)` follows at the recorded connection's
    /// instant (or its recorded delay after this call, when later). As on the phone, an attempt
    /// never times out: a peripheral the capture never connected to stays `.connecting`.
    open func connect(_ peripheral: CBPeripheral, options: [String: Any]? = nil) {
        let fields: [String: TraceValue] = ["call": .string("connect"), "peripheral": .string(peripheral.identifier.uuidString.lowercased())]
        guard let session, ready("connect(_:options:)", fields) else { return }
        guard peripheral.state == .disconnected else {
            session.misuse("connect(_:options:) of a peripheral that is \(peripheral.state): ignored")
            return
        }
        peripheral.state = .connecting
        session.connecting(peripheral, by: self)
        session.post(fields)
    }

    /// Ends the connection to `peripheral` (or the attempt): `centralManager(_:didDisconnectPeripheral:error:)`
    /// follows with no error.
    open func cancelPeripheralConnection(_ peripheral: CBPeripheral) {
        let fields: [String: TraceValue] = ["call": .string("cancel_connection"), "peripheral": .string(peripheral.identifier.uuidString.lowercased())]
        guard let session, ready("cancelPeripheralConnection(_:)", fields) else { return }
        guard peripheral.state == .connected || peripheral.state == .connecting else { return }
        if peripheral.state == .connected { peripheral.state = .disconnecting }
        session.post(fields)
    }

    /// The peripherals of `identifiers` the session knows: those it has discovered, and (once
    /// the manager is powered on) the recorded peripheral, whose identifier is stable across runs:
    /// a test may keep it. Unknown identifiers are left out, as CoreBluetooth leaves them out.
    open func retrievePeripherals(withIdentifiers identifiers: [UUID]) -> [CBPeripheral] {
        guard let session else { return [] }
        session.appCall("CBCentralManager.retrievePeripherals(withIdentifiers:)", ["identifiers": .array(identifiers.map { .string($0.uuidString.lowercased()) })])
        return session.retrieve(identifiers)
    }

    /// The connected peripherals offering any of `serviceUUIDs` (among the services discovered).
    open func retrieveConnectedPeripherals(withServices serviceUUIDs: [CBUUID]) -> [CBPeripheral] {
        guard let session else { return [] }
        session.appCall("CBCentralManager.retrieveConnectedPeripherals(withServices:)", ["services": .array(serviceUUIDs.map { .string($0.uuidString) })])
        return session.connectedPeripherals.filter { peripheral in
            peripheral.services?.contains { serviceUUIDs.contains($0.uuid) } ?? false
        }
    }

    /// Connection events are not modelled: the registration is recorded and nothing follows.
    open func registerForConnectionEvents(options: [CBConnectionEventMatchingOption: Any]? = nil) {
        session?.appCall("CBCentralManager.registerForConnectionEvents(options:)", [:])
        session?.misuse("registerForConnectionEvents(options:) is not modelled: connectionEventDidOccur is never called")
    }

    /// Records the call; refuses it (as CoreBluetooth's "API MISUSE") before the manager is powered on.
    private func ready(_ api: String, _ fields: [String: TraceValue]) -> Bool {
        session?.appCall("CBCentralManager." + api, fields)
        guard state == .poweredOn else {
            session?.misuse("CBCentralManager.\(api) while the manager is \(state); CoreBluetooth ignores calls before .poweredOn (API MISUSE)")
            return false
        }
        return true
    }
}
