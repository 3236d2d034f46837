import AppLoop
import BehaviourTrace
import Foundation

/// The facade's side of one host: the peripherals and managers the app holds, and the `central`
/// core's events turned into their delegate callbacks. One per host (``AppLoopHost/facade(_:make:)``),
/// used on the host's driving thread only: calls post to the host, callbacks come from it.
///
/// `@unchecked Sendable`: no lock; its `var`s are read and written only on the thread that drives the
/// session: in the core's events, and in the app's calls on its managers and peripherals, used as
/// CoreBluetooth's own objects are, on their manager's queue, which here is that thread.
final class CoreBluetoothSession: @unchecked Sendable {
    private let host: any AppLoopHost
    private var managers: [Weak<CBCentralManager>] = []
    /// Managers whose creation the core has not answered yet, oldest first.
    private var awaitingState: [Weak<CBCentralManager>] = []
    private var peripherals: [UUID: CBPeripheral] = [:]
    private var connectingBy: [UUID: Weak<CBCentralManager>] = [:]
    private var warned: Set<String> = []
    /// Peripherals the system knows without a scan: the recorded one (the `state` event names it).
    private var known: Set<UUID> = []

    private struct Weak<T: AnyObject> { weak var object: T? }

    private init(host: any AppLoopHost) {
        self.host = host
        host.observe(core: "central") { [weak self] event in self?.handle(event) }
        if !host.cores.contains("central") {
            host.warn("TetherCoreBluetooth: this session runs no central core (it runs \(host.cores.joined(separator: ", "))): "
                + "CoreBluetooth calls go nowhere. Serve a capture's peripheral with ReplaySession(replayingPeripheralOf:).")
        }
    }

    /// The session of `host`.
    static func of(_ host: any AppLoopHost) -> CoreBluetoothSession {
        host.facade("CoreBluetooth") { CoreBluetoothSession(host: host) }
    }

    // MARK: what the facade's objects call

    func adopt(_ manager: CBCentralManager, _ fields: [String: TraceValue]) {
        managers.append(Weak(object: manager))
        awaitingState.append(Weak(object: manager))
        appCall("CBCentralManager.init(delegate:queue:options:)", fields)
        post(["call": .string("create_manager")])
    }

    func post(_ record: [String: TraceValue]) {
        host.post(core: "central", record: record)
    }

    func later(_ work: @escaping () -> Void) {
        host.post(work)
    }

    func appCall(_ api: String, _ fields: [String: TraceValue]) {
        var f = fields
        f["sdk"] = .string("CoreBluetooth")
        f["api"] = .string(api)
        host.recordAppEvent(.appCall, fields: f)
    }

    func callback(_ api: String, _ fields: [String: TraceValue] = [:]) {
        var f = fields
        f["sdk"] = .string("CoreBluetooth")
        f["api"] = .string(api)
        host.recordAppEvent(.appCallback, fields: f)
    }

    func misuse(_ text: String) {
        host.warn("CoreBluetooth: " + text)
    }

    func connecting(_ peripheral: CBPeripheral, by manager: CBCentralManager) {
        connectingBy[peripheral.identifier] = Weak(object: manager)
    }

    /// The peripherals of `identifiers` the system knows: discovered ones and the recorded one.
    func retrieve(_ identifiers: [UUID]) -> [CBPeripheral] {
        identifiers.filter { peripherals[$0] != nil || known.contains($0) }.map(peripheral)
    }

    /// The one peripheral object of `identifier`.
    func peripheral(_ identifier: UUID) -> CBPeripheral {
        if let known = peripherals[identifier] { return known }
        let made = CBPeripheral(identifier: identifier, session: self)
        peripherals[identifier] = made
        return made
    }

    /// The peripheral the `central` core's GATT events are about: only the recorded one can be
    /// connected, so this is it while it is (a look-up per event, without sorting).
    var connectedPeripheral: CBPeripheral? {
        peripherals.values.first { $0.state == .connected }
    }

    var connectedPeripherals: [CBPeripheral] {
        peripherals.values.filter { $0.state == .connected }.sorted { $0.identifier.uuidString < $1.identifier.uuidString }
    }

    // MARK: the core's events

    private func handle(_ event: TraceEvent) {
        switch event.event {
        case "state":
            if case .array(let ids)? = event.field("known_peripherals") {
                for case .string(let id) in ids { if let uuid = UUID(uuidString: id) { known.insert(uuid) } }
            }
            powerOn()
        case "discovered": discovered(event)
        case "connected": connected(event)
        case "disconnected": disconnected(event)
        case "mtu":
            if let mtu = int(event, "mtu") { connectedPeripheral?.mtu = mtu }
        case "services_discovered": servicesDiscovered(event)
        case "included_services_discovered": includedServicesDiscovered(event)
        case "characteristics_discovered": characteristicsDiscovered(event)
        case "descriptors_discovered": descriptorsDiscovered(event)
        case "read": valueRead(event)
        case "written": valueWritten(event)
        case "notification_state": notificationState(event)
        case "notification": notified(event)
        case "rssi": rssiRead(event)
        case "api_misuse":
            if case .string(let detail)? = event.field("detail") { misuse(detail) }
        default: break
        }
    }

    private func powerOn() {
        while let first = awaitingState.first {
            awaitingState.removeFirst()
            guard let manager = first.object else { continue }
            manager.state = .poweredOn
            deliver("centralManagerDidUpdateState(_:)", to: manager.delegate) { $0.centralManagerDidUpdateState(manager) }
            return
        }
    }

    private func discovered(_ event: TraceEvent) {
        // Its fields read once: the event holds the link's advertisement, and each look-up by
        // name would write every field again (its services, its data as hex).
        let fields = event.fields
        guard case .string(let id)? = fields["peripheral"], let identifier = UUID(uuidString: id) else { return }
        let peripheral = peripheral(identifier)
        let advertisement = Self.advertisementData(fields)
        if let name = advertisement[CBAdvertisementDataLocalNameKey] as? String { peripheral.name = name }
        // 127: "not available", as CoreBluetooth reports a peripheral it has no RSSI for.
        let rssi: NSNumber = if case .int(let value)? = fields["rssi"] { NSNumber(value: Int(value)) } else { NSNumber(value: 127) }
        for manager in managers.compactMap(\.object) where manager.isScanning {
            deliver("centralManager(_:didDiscover:advertisementData:rssi:)", to: manager.delegate, ["peripheral": .string(id)]) {
                $0.centralManager(manager, didDiscover: peripheral, advertisementData: advertisement, rssi: rssi)
            }
        }
    }

    /// The advertisement data dictionary of a `discovered` event's fields, as CoreBluetooth types it.
    static func advertisementData(_ fields: [String: TraceValue]) -> [String: Any] {
        func uuids(_ key: String) -> [CBUUID]? {
            guard case .array(let items)? = fields[key] else { return nil }
            return items.compactMap { if case .string(let text) = $0 { cbUUID(text) } else { nil } }
        }
        var result: [String: Any] = [CBAdvertisementDataIsConnectable: NSNumber(value: fields["connectable"] == .bool(true))]
        if case .string(let name)? = fields["name"] { result[CBAdvertisementDataLocalNameKey] = name }
        if let services = uuids("services") { result[CBAdvertisementDataServiceUUIDsKey] = services }
        if let solicited = uuids("solicited_services") { result[CBAdvertisementDataSolicitedServiceUUIDsKey] = solicited }
        if case .string(let hex)? = fields["manufacturer_data"] { result[CBAdvertisementDataManufacturerDataKey] = Data(bytes(hex)) }
        if case .int(let power)? = fields["tx_power"] { result[CBAdvertisementDataTxPowerLevelKey] = NSNumber(value: power) }
        if case .object(let items)? = fields["service_data"] {
            var serviceData: [CBUUID: Data] = [:]
            for (uuid, value) in items { if case .string(let hex) = value { serviceData[cbUUID(uuid)] = Data(bytes(hex)) } }
            result[CBAdvertisementDataServiceDataKey] = serviceData
        }
        return result
    }

    /// A UUID as the core writes it (`0x180d`, `0x12345678`, or the full form).
    static func cbUUID(_ text: String) -> CBUUID {
        CBUUID(string: text.hasPrefix("0x") ? String(text.dropFirst(2)) : text)
    }

    private func connected(_ event: TraceEvent) {
        guard let peripheral = eventPeripheral(event) else { return }
        peripheral.state = .connected
        peripheral.mtu = 23
        guard let manager = connectingBy[peripheral.identifier]?.object else { return }
        deliver("centralManager(_:didConnect:)", to: manager.delegate, ["peripheral": .string(peripheral.identifier.uuidString.lowercased())]) {
            $0.centralManager(manager, didConnect: peripheral)
        }
    }

    private func disconnected(_ event: TraceEvent) {
        guard let peripheral = eventPeripheral(event) else { return }
        let wasConnecting = peripheral.state == .connecting
        peripheral.state = .disconnected
        for service in peripheral.services ?? [] {
            for characteristic in service.characteristics ?? [] { characteristic.isNotifying = false }
        }
        let error = Self.disconnectionError(reason: int(event, "reason") ?? 0, byCentral: event.field("by_central") == .bool(true))
        guard let manager = connectingBy.removeValue(forKey: peripheral.identifier)?.object else { return }
        var fields: [String: TraceValue] = ["peripheral": .string(peripheral.identifier.uuidString.lowercased())]
        if let error { fields["error"] = .string(error.description) }
        if wasConnecting, error != nil {
            deliver("centralManager(_:didFailToConnect:error:)", to: manager.delegate, fields) { $0.centralManager(manager, didFailToConnect: peripheral, error: error) }
            return
        }
        // Both forms: the app implemented one of them (each has an empty default), as iOS 17 calls one.
        deliver("centralManager(_:didDisconnectPeripheral:error:)", to: manager.delegate, fields) {
            $0.centralManager(manager, didDisconnectPeripheral: peripheral, error: error)
            $0.centralManager(manager, didDisconnectPeripheral: peripheral, timestamp: CFAbsoluteTime(self.host.now.seconds), isReconnecting: false, error: error)
        }
    }

    /// What CoreBluetooth reports for a link that ended with HCI `reason`: nothing when the app
    /// asked; `connectionTimeout` for a supervision timeout (0x08) or a lost link; `peripheralDisconnected`
    /// when the peripheral ended it; `connectionFailed` when it never came up (0x3E).
    static func disconnectionError(reason: Int, byCentral: Bool) -> CBError? {
        if byCentral { return nil }
        switch reason {
        case 0x08, 0x22: return CBError(.connectionTimeout)
        case 0x3E: return CBError(.connectionFailed)
        default: return CBError(.peripheralDisconnected)
        }
    }

    private func servicesDiscovered(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral else { return }
        var byHandle = Dictionary((peripheral.services ?? []).map { ($0.handle, $0) }, uniquingKeysWith: { a, _ in a })
        for item in objects(event, "services") {
            guard let start = int(item, "start"), let end = int(item, "end"), let uuid = uuid(item) else { continue }
            if byHandle[UInt16(clamping: start)] == nil {
                byHandle[UInt16(clamping: start)] = CBService(uuid: uuid, startHandle: UInt16(clamping: start), endHandle: UInt16(clamping: end),
                                                    isPrimary: item["primary"] != .bool(false), peripheral: peripheral)
            }
        }
        peripheral.services = byHandle.values.sorted { $0.handle < $1.handle }
        let error = attError(event)
        deliver("peripheral(_:didDiscoverServices:)", to: peripheral.delegate, errorFields(error)) { $0.peripheral(peripheral, didDiscoverServices: error) }
    }

    private func includedServicesDiscovered(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral, let handle = int(event, "service"),
              let service = peripheral.services?.first(where: { $0.handle == handle }) else { return }
        if service.includedServices == nil { service.includedServices = [] }
        let error = attError(event)
        deliver("peripheral(_:didDiscoverIncludedServicesFor:error:)", to: peripheral.delegate, errorFields(error)) {
            $0.peripheral(peripheral, didDiscoverIncludedServicesFor: service, error: error)
        }
    }

    private func characteristicsDiscovered(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral, let handle = int(event, "service"),
              let service = peripheral.services?.first(where: { $0.handle == handle }) else { return }
        var byHandle = Dictionary((service.characteristics ?? []).map { ($0.handle, $0) }, uniquingKeysWith: { a, _ in a })
        for item in objects(event, "characteristics") {
            guard let declaration = int(item, "declaration"), let value = int(item, "handle"), let uuid = uuid(item) else { continue }
            if byHandle[UInt16(clamping: declaration)] == nil {
                byHandle[UInt16(clamping: declaration)] = CBCharacteristic(uuid: uuid, declarationHandle: UInt16(clamping: declaration), valueHandle: UInt16(clamping: value),
                                                                 properties: CBCharacteristicProperties(rawValue: UInt(int(item, "properties") ?? 0)),
                                                                 service: service)
            }
        }
        service.characteristics = byHandle.values.sorted { $0.handle < $1.handle }
        let error = attError(event)
        deliver("peripheral(_:didDiscoverCharacteristicsFor:error:)", to: peripheral.delegate, ["uuid": .string(service.uuid.uuidString)].merging(errorFields(error)) { a, _ in a }) {
            $0.peripheral(peripheral, didDiscoverCharacteristicsFor: service, error: error)
        }
    }

    private func descriptorsDiscovered(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral, let handle = int(event, "characteristic"),
              let characteristic = characteristic(valueHandle: handle, of: peripheral) else { return }
        var byHandle = Dictionary((characteristic.descriptors ?? []).map { ($0.handle, $0) }, uniquingKeysWith: { a, _ in a })
        for item in objects(event, "descriptors") {
            guard let h = int(item, "handle"), let uuid = uuid(item) else { continue }
            if byHandle[UInt16(clamping: h)] == nil { byHandle[UInt16(clamping: h)] = CBDescriptor(uuid: uuid, handle: UInt16(clamping: h), characteristic: characteristic) }
        }
        characteristic.descriptors = byHandle.values.sorted { $0.handle < $1.handle }
        let error = attError(event)
        deliver("peripheral(_:didDiscoverDescriptorsFor:error:)", to: peripheral.delegate, errorFields(error)) {
            $0.peripheral(peripheral, didDiscoverDescriptorsFor: characteristic, error: error)
        }
    }

    private func valueRead(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral, let handle = int(event, "handle") else { return }
        let error = attError(event)
        let value: Data? = if case .string(let hex)? = event.field("value") { Data(Self.bytes(hex)) } else { nil }
        if let characteristic = characteristic(valueHandle: handle, of: peripheral) {
            if error == nil, let value { characteristic.value = value }
            deliver("peripheral(_:didUpdateValueFor:error:)", to: peripheral.delegate, ["uuid": .string(characteristic.uuid.uuidString)].merging(errorFields(error)) { a, _ in a }) {
                $0.peripheral(peripheral, didUpdateValueFor: characteristic, error: error)
            }
        } else if let descriptor = descriptor(handle: handle, of: peripheral) {
            if error == nil, let value { descriptor.value = descriptor.typedValue(value) }
            deliver("peripheral(_:didUpdateValueFor:error:)", to: peripheral.delegate, ["descriptor": .string(descriptor.uuid.uuidString)].merging(errorFields(error)) { a, _ in a }) {
                $0.peripheral(peripheral, didUpdateValueFor: descriptor, error: error)
            }
        }
    }

    private func valueWritten(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral, let handle = int(event, "handle") else { return }
        let error = attError(event)
        if let characteristic = characteristic(valueHandle: handle, of: peripheral) {
            deliver("peripheral(_:didWriteValueFor:error:)", to: peripheral.delegate, ["uuid": .string(characteristic.uuid.uuidString)].merging(errorFields(error)) { a, _ in a }) {
                $0.peripheral(peripheral, didWriteValueFor: characteristic, error: error)
            }
        } else if let descriptor = descriptor(handle: handle, of: peripheral) {
            deliver("peripheral(_:didWriteValueFor:error:)", to: peripheral.delegate, ["descriptor": .string(descriptor.uuid.uuidString)].merging(errorFields(error)) { a, _ in a }) {
                $0.peripheral(peripheral, didWriteValueFor: descriptor, error: error)
            }
        }
    }

    private func notificationState(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral, let handle = int(event, "handle"),
              let characteristic = characteristic(valueHandle: handle, of: peripheral) else { return }
        let error = attError(event)
        if error == nil { characteristic.isNotifying = event.field("enabled") == .bool(true) }
        deliver("peripheral(_:didUpdateNotificationStateFor:error:)", to: peripheral.delegate, ["uuid": .string(characteristic.uuid.uuidString)].merging(errorFields(error)) { a, _ in a }) {
            $0.peripheral(peripheral, didUpdateNotificationStateFor: characteristic, error: error)
        }
    }

    private func notified(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral, let handle = int(event, "handle"), case .string(let hex)? = event.field("value") else { return }
        guard let characteristic = characteristic(valueHandle: handle, of: peripheral) else {
            if warned.insert("undiscovered-\(handle)").inserted {
                misuse("a notification of handle \(handle) arrived for a characteristic the app never discovered: no callback (said once)")
            }
            return
        }
        characteristic.value = Data(Self.bytes(hex))
        deliver("peripheral(_:didUpdateValueFor:error:)", to: peripheral.delegate, ["uuid": .string(characteristic.uuid.uuidString), "notification": .bool(true)]) {
            $0.peripheral(peripheral, didUpdateValueFor: characteristic, error: nil)
        }
    }

    private func rssiRead(_ event: TraceEvent) {
        guard let peripheral = connectedPeripheral else { return }
        let rssi = NSNumber(value: int(event, "rssi") ?? 127)
        deliver("peripheral(_:didReadRSSI:error:)", to: peripheral.delegate, ["rssi": .int(Int64(rssi.intValue))]) {
            $0.peripheral(peripheral, didReadRSSI: rssi, error: nil)
        }
    }

    // MARK: helpers

    /// Calls `body` with `delegate` and records the callback; with no delegate, says so once.
    private func deliver<D>(_ api: String, to delegate: D?, _ fields: [String: TraceValue] = [:], _ body: (D) -> Void) {
        guard let delegate else {
            if warned.insert("no-delegate-\(api)").inserted { misuse("\(api) had no delegate to go to (said once per callback)") }
            return
        }
        callback(api, fields)
        body(delegate)
    }

    private func eventPeripheral(_ event: TraceEvent) -> CBPeripheral? {
        guard case .string(let id)? = event.field("peripheral"), let identifier = UUID(uuidString: id) else { return nil }
        return peripheral(identifier)
    }

    private func characteristic(valueHandle handle: Int, of peripheral: CBPeripheral) -> CBCharacteristic? {
        for service in peripheral.services ?? [] {
            if let found = service.characteristics?.first(where: { Int($0.valueHandle) == handle }) { return found }
        }
        return nil
    }

    private func descriptor(handle: Int, of peripheral: CBPeripheral) -> CBDescriptor? {
        for service in peripheral.services ?? [] {
            for characteristic in service.characteristics ?? [] {
                if let found = characteristic.descriptors?.first(where: { Int($0.handle) == handle }) { return found }
            }
        }
        return nil
    }

    private func attError(_ event: TraceEvent) -> CBATTError? {
        int(event, "att_error").map { CBATTError(CBATTError.Code(attErrorCode: UInt8(clamping: $0))) }
    }

    private func errorFields(_ error: CBATTError?) -> [String: TraceValue] {
        error.map { ["error": .string($0.description)] } ?? [:]
    }

    private func int(_ event: TraceEvent, _ key: String) -> Int? {
        if case .int(let v)? = event.field(key) { return Int(v) }
        return nil
    }

    private func int(_ object: [String: TraceValue], _ key: String) -> Int? {
        if case .int(let v)? = object[key] { return Int(v) }
        return nil
    }

    private func uuid(_ object: [String: TraceValue]) -> CBUUID? {
        guard case .string(let text)? = object["uuid"] else { return nil }
        return Self.cbUUID(text)
    }

    private func objects(_ event: TraceEvent, _ key: String) -> [[String: TraceValue]] {
        guard case .array(let items)? = event.field(key) else { return [] }
        return items.compactMap { if case .object(let o) = $0 { o } else { nil } }
    }

    static func bytes(_ hex: String) -> [UInt8] { JSONLiteral.bytes(fromHex: hex) ?? [] }
}

extension Duration {
    /// Seconds, with the fraction.
    var seconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
