import BehaviourTrace
import Foundation
import Testing
import TetherCoreBluetooth
import TetherTesting

/// A generic explorer of the kind BLE apps have: scans, connects to the first peripheral, discovers
/// everything, reads every readable characteristic and descriptor.
///
/// `@unchecked Sendable`: no lock; one thread only. Its `var`s are set in `start()` and in the
/// delegate callbacks, which the session delivers on the thread that calls ``ReplaySession/run()``
/// (the test's), and the test reads them on that thread after `run()` returned; `clock` is a `let`.
final class Explorer: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var central: CBCentralManager!
    var peripheral: CBPeripheral?
    var discoveredNames: [String?] = []
    var advertisements: [[String: Any]] = []
    var values: [CBUUID: Data] = [:]
    var descriptorValues: [CBUUID: Any] = [:]
    var pendingDiscoveries = 0
    var connectedAt: Duration?
    var log: [String] = []
    let clock: () -> Duration

    init(clock: @escaping () -> Duration) {
        self.clock = clock
        super.init()
    }

    func start() { central = CBCentralManager(delegate: self, queue: nil) }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil, options: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        discoveredNames.append(advertisementData[CBAdvertisementDataLocalNameKey] as? String)
        advertisements.append(advertisementData)
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral, options: nil)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        connectedAt = clock()
        peripheral.delegate = self
        peripheral.discoverServices(nil)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        for service in peripheral.services ?? [] { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] {
            if characteristic.properties.contains(.read) { peripheral.readValue(for: characteristic) }
            peripheral.discoverDescriptors(for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverDescriptorsFor characteristic: CBCharacteristic, error: (any Error)?) {
        for descriptor in characteristic.descriptors ?? [] { peripheral.readValue(for: descriptor) }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let value = characteristic.value { values[characteristic.uuid] = value }
        log.append("value \(characteristic.uuid) \(error.map { "\($0)" } ?? "ok")")
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor descriptor: CBDescriptor, error: (any Error)?) {
        if let value = descriptor.value { descriptorValues[descriptor.uuid] = value }
    }
}

/// A sensor app: subscribes to the Tether sensor's stream, burst and reply characteristics, then
/// asks for a pong and a burst of 120, as `Harness/record_gatt_sensor_set.py`'s central did.
///
/// `@unchecked Sendable`: no lock; one thread only. Its `var`s are set in `start()` and in the
/// delegate callbacks, which the session delivers on the thread that calls ``ReplaySession/run()``
/// (the test's), and the test reads them on that thread after `run()` returned.
final class SensorApp: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    static let service = CBUUID(string: "7E7E5E00-0000-4000-8000-00000000A001")
    static let stream = CBUUID(string: "7E7E5E01-0000-4000-8000-00000000A001")
    static let control = CBUUID(string: "7E7E5E02-0000-4000-8000-00000000A001")
    static let burst = CBUUID(string: "7E7E5E03-0000-4000-8000-00000000A001")
    static let reply = CBUUID(string: "7E7E5E04-0000-4000-8000-00000000A001")

    var central: CBCentralManager!
    var peripheral: CBPeripheral?
    var characteristics: [CBUUID: CBCharacteristic] = [:]
    var notifying: Set<CBUUID> = []
    var received: [CBUUID: [Data]] = [:]
    var errors: [String] = []
    var disconnections: [(any Error)?] = []
    var askedForBurst = false

    func start() { central = CBCentralManager(delegate: self, queue: nil) }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: [CBUUID(string: "180F")], options: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices([Self.service])
    }

    func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral, error: (any Error)?) {
        disconnections.append(error)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        guard let service = peripheral.services?.first(where: { $0.uuid == Self.service }) else { return errors.append("no sensor service") }
        peripheral.discoverCharacteristics(nil, for: service)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] { characteristics[characteristic.uuid] = characteristic }
        for uuid in [Self.stream, Self.burst, Self.reply] {
            guard let characteristic = characteristics[uuid] else { errors.append("no \(uuid)"); continue }
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error { return errors.append("notify \(characteristic.uuid): \(error)") }
        notifying.insert(characteristic.uuid)
        if notifying.count == 3, !askedForBurst, let control = characteristics[Self.control] {
            askedForBurst = true
            peripheral.writeValue(Data([0x02]), for: control, type: .withResponse)
            peripheral.writeValue(Data([0x01, 0x78]), for: control, type: .withResponse)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error { errors.append("write \(characteristic.uuid): \(error)") }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let error { return errors.append("value \(characteristic.uuid): \(error)") }
        received[characteristic.uuid, default: []].append(characteristic.value ?? Data())
    }
}

/// Runs `app` against the peripheral of `set`, with `faults`.
func serve<App: AnyObject>(_ set: String, faults: [String] = [], _ make: (ReplaySession) -> App, start: (App) -> Void) throws -> (ReplaySession, App) {
    let session = try ReplaySession(replayingPeripheralOf: set, faults: faults)
    session.makeCurrent()
    let app = make(session)
    start(app)
    try session.run()
    return (session, app)
}

@Test func anExplorerSeesTheRecordedDatabaseAndTheRecordedValues() throws {
    let (session, explorer) = try serve("Captures/gatt-sensor", { session in Explorer(clock: { session.now }) }) { $0.start() }
    let services = explorer.peripheral?.services?.map(\.uuid) ?? []
    #expect(services == [CBUUID(string: "1800"), CBUUID(string: "1801"), CBUUID(string: "180A"), CBUUID(string: "180F"), SensorApp.service], "\(session.report)")
    // The values Harness/rigs/gatt_sensor.py serves, as the recorded central read them.
    #expect(explorer.values[CBUUID(string: "2A29")] == Data("Tether Labs".utf8))
    #expect(explorer.values[CBUUID(string: "2A24")] == Data("TS-1".utf8))
    #expect(explorer.values[CBUUID(string: "2A19")] == Data([87]))
    #expect(explorer.values[CBUUID(string: "7E7E5E05-0000-4000-8000-00000000A001")] == Data("cfg".utf8) + Data([1]))
    #expect(explorer.discoveredNames == ["Tether Sensor"])
    // The rig advertises the Battery service and is connectable (Harness/rigs/gatt_sensor.py).
    #expect(explorer.advertisements.first?[CBAdvertisementDataServiceUUIDsKey] as? [CBUUID] == [CBUUID(string: "180F")])
    #expect((explorer.advertisements.first?[CBAdvertisementDataIsConnectable] as? NSNumber)?.boolValue == true)
    #expect(session.passed, "\(session.report)")
}

@Test func readsTheRecordingNeverSawAreAnsweredFromTheDatabaseAndSaidOnceEach() throws {
    let (session, _) = try serve("Captures/gatt-sensor", { session in Explorer(clock: { session.now }) }) { $0.start() }
    let unanswered = session.events(core: "central", named: "no_recorded_answer").compactMap { event -> String? in
        guard case .string(let detail)? = event.field("detail"), detail.contains("the recording holds no such request") else { return nil }
        return detail
    }
    #expect(!unanswered.isEmpty)
    #expect(Set(unanswered).count == unanswered.count, "\(unanswered)")
}

@Test func theConnectionComesUpAtItsRecordedInstant() throws {
    let (session, explorer) = try serve("Captures/gatt-sensor", { session in Explorer(clock: { session.now }) }) { $0.start() }
    let connected = try #require(session.events(core: "central", named: "connected").first)
    #expect(connected.field("frame") == .int(39))
    #expect(explorer.connectedAt == .nanoseconds(connected.timeNs))
}

@Test func aCommandsNotificationsFollowTheWriteAndTheStreamFollowsTheSubscription() throws {
    let (session, app) = try serve("Captures/gatt-sensor", { _ in SensorApp() }) { $0.start() }
    #expect(app.errors.isEmpty, "\(app.errors)\n\(session.report)")
    let burst = app.received[SensorApp.burst] ?? []
    #expect(burst.count == 120, "\(session.report)")
    // Bytes 0xB5, index, index × 3 (LE): every one, in order.
    #expect(burst.enumerated().allSatisfy { index, value in value.first == 0xB5 && value.dropFirst().first == UInt8(index & 0xFF) })
    #expect(app.received[SensorApp.reply]?.first == Data("pong".utf8) + Data([1]))
    #expect(!(app.received[SensorApp.stream] ?? []).isEmpty)
    #expect(session.passed, "\(session.report)")
}

@Test func aDroppedNotificationIsNeverDeliveredAndADelayedOneComesLater() throws {
    let (clean, cleanApp) = try serve("Captures/gatt-sensor", { _ in SensorApp() }) { $0.start() }
    let notifications = clean.events(core: "central", named: "notification")
    let third = try #require(notifications.dropFirst(2).first)
    guard case .int(let frame)? = third.field("frame") else { Issue.record("no frame"); return }
    let (dropped, droppedApp) = try serve("Captures/gatt-sensor", faults: ["drop:frame=\(frame)"], { _ in SensorApp() }) { $0.start() }
    #expect(dropped.events(core: "central", named: "notification").count == notifications.count - 1)
    let receivedClean: Int = cleanApp.received.values.reduce(0) { $0 + $1.count }
    let receivedDropped: Int = droppedApp.received.values.reduce(0) { $0 + $1.count }
    #expect(receivedDropped == receivedClean - 1)
    let (delayed, _) = try serve("Captures/gatt-sensor", faults: ["delay:frame=\(frame):by=2s"], { _ in SensorApp() }) { $0.start() }
    let moved = try #require(delayed.events(core: "central", named: "notification").first { $0.field("frame") == .int(frame) })
    #expect(moved.timeNs == third.timeNs + 2_000_000_000)
}

@Test func anATTErrorFaultReachesTheDelegateAsCBATTError() throws {
    let (clean, _) = try serve("Captures/gatt-sensor", { _ in SensorApp() }) { $0.start() }
    let written = try #require(clean.events(core: "central", named: "written").first)
    guard case .int(let frame)? = written.field("frame") else { Issue.record("no frame"); return }
    let (session, app) = try serve("Captures/gatt-sensor", faults: ["att-error:frame=\(frame):code=0x80"], { _ in SensorApp() }) { $0.start() }
    #expect(app.errors.contains { $0.hasPrefix("write") && $0.contains("0x80") }, "\(app.errors)\n\(session.report)")
}

@Test func aLinkLossIsAConnectionTimeoutAndNothingArrivesAfterIt() throws {
    let (session, app) = try serve("Captures/gatt-sensor", faults: ["disconnect:at=3s"], { _ in SensorApp() }) { $0.start() }
    try #require(app.disconnections.count == 1, "\(session.report)")
    #expect((app.disconnections[0] as? CBError)?.code == .connectionTimeout)
    #expect(session.events(core: "central", named: "notification").allSatisfy { $0.timeNs < 3_000_000_000 })
}

@Test func aCaptureWithoutAdvertisingStillYieldsOneDiscoveryAndSaysSo() throws {
    let (session, explorer) = try serve("Examples/HeartRate/Captures/hr-clean", { session in Explorer(clock: { session.now }) }) { $0.start() }
    let discovered = session.events(core: "central", named: "discovered")
    #expect(discovered.count == 1)
    #expect(discovered.first?.field("synthesized") == .bool(true))
    #expect(explorer.peripheral?.services?.contains { $0.uuid == CBUUID(string: "180D") } == true, "\(session.report)")
    #expect(session.warnings.filter { $0.contains("no advertising report") }.count == 1)
}

@Test func aTwoWayCaptureServesThePeripheralsDatabaseNotThePhones() throws {
    // The sensor of this set discovered the phone's database on the same connection.
    let (session, explorer) = try serve("Captures/gatt-sensor-legacy-pairing", { session in Explorer(clock: { session.now }) }) { $0.start() }
    let services = explorer.peripheral?.services?.map(\.uuid) ?? []
    #expect(services.contains(SensorApp.service), "\(session.report)")
    #expect(services.contains(CBUUID(string: "180F")))
    let characteristics = explorer.peripheral?.services?.flatMap { $0.characteristics ?? [] }.count ?? 0
    #expect(characteristics >= 9, "\(session.report)")
}

@Test func callsBeforeTheConnectionAreRefusedAsCoreBluetoothDoes() throws {
    let session = try ReplaySession(replayingPeripheralOf: "Captures/gatt-sensor")
    session.makeCurrent()
    let central = CBCentralManager(delegate: nil, queue: nil)
    // Before the state callback: CoreBluetooth's "API MISUSE".
    central.scanForPeripherals(withServices: nil)
    try session.run()
    #expect(!central.isScanning)
    #expect(session.warnings.contains { $0.contains("before .poweredOn") }, "\(session.report)")
}

@Test func twoRunsOfTheSameAppGiveByteIdenticalTraces() throws {
    let (first, _) = try serve("Captures/gatt-sensor", { _ in SensorApp() }) { $0.start() }
    let (second, _) = try serve("Captures/gatt-sensor", { _ in SensorApp() }) { $0.start() }
    #expect(first.traceJSONLines == second.traceJSONLines)
    #expect(first.traceJSONLines.contains("\"core\":\"central\""))
}

@Test func aSetWithoutBluetoothIsRefusedNamingIt() throws {
    #expect {
        try ReplaySession(replayingPeripheralOf: "Captures/plugin-clean")
    } throws: { error in
        "\(error)".contains("plugin-clean") && "\(error)".contains("Bluetooth")
    }
}

@Test func aDropSweepOverTheAppKeepsEveryPromise() throws {
    let result = try ReplaySession.sweep("drop", peripheralOf: "Examples/HeartRate/Captures/hr-clean") { session in
        session.makeCurrent()
        let app = Subscriber()
        app.start()
        try session.run()
        if app.values.isEmpty { throw TestFailure(text: "no notification reached the app") }
    }
    #expect(result.variants.count == 15, "\(result.report)")
    #expect(result.failed == 0, "\(result.report)")
}

struct TestFailure: Error { var text: String }

/// Subscribes to every characteristic that notifies, keeping what arrives.
///
/// `@unchecked Sendable`: no lock; one thread only. Its `var`s are set in `start()` and in the
/// delegate callbacks, delivered on the thread that calls ``ReplaySession/run()``; the sweep runs
/// each variant (with its own `Subscriber`) in turn on the test's thread, which reads `values`
/// after `run()` returned.
final class Subscriber: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate, @unchecked Sendable {
    var central: CBCentralManager!
    var peripheral: CBPeripheral?
    var values: [Data] = []

    func start() { central = CBCentralManager(delegate: self, queue: nil) }

    func centralManagerDidUpdateState(_ central: CBCentralManager) {
        if central.state == .poweredOn { central.scanForPeripherals(withServices: nil) }
    }

    func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral, advertisementData: [String: Any], rssi RSSI: NSNumber) {
        guard self.peripheral == nil else { return }
        self.peripheral = peripheral
        central.stopScan()
        central.connect(peripheral)
    }

    func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        peripheral.delegate = self
        peripheral.discoverServices(nil)
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        for service in peripheral.services ?? [] { peripheral.discoverCharacteristics(nil, for: service) }
    }

    func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService, error: (any Error)?) {
        for characteristic in service.characteristics ?? [] where characteristic.properties.contains(.notify) {
            peripheral.setNotifyValue(true, for: characteristic)
        }
    }

    func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic, error: (any Error)?) {
        if let value = characteristic.value { values.append(value) }
    }
}

@Test func anImportedBtsnoopServesItsPeripheral() throws {
    // A phone's btsnoop imported with `tether import`: the Connect IQ watch's database.
    let (session, explorer) = try serve("Captures/ciq-imported-btsnoop", { session in Explorer(clock: { session.now }) }) { $0.start() }
    let services = explorer.peripheral?.services?.map(\.uuid) ?? []
    #expect(services.contains(CBUUID(string: "6A4E8022-667B-11E3-949A-0800200C9A66")), "\(session.report)")
    #expect(session.events(core: "central", named: "frame_matched").count > 0)
}

@Test func aRetrievedPeripheralIsTheDiscoveredOneAndHashesAlike() throws {
    let (session, explorer) = try serve("Captures/gatt-sensor", { session in Explorer(clock: { session.now }) }) { $0.start() }
    let found = try #require(explorer.peripheral)
    let retrieved = explorer.central.retrievePeripherals(withIdentifiers: [found.identifier])
    #expect(retrieved.first === found)
    #expect(Set([found, retrieved[0]]).count == 1)
    // The identifier is made from the recorded address: the same on every run.
    #expect(found.identifier.uuidString.lowercased() == "7e7e7e7e-0000-4000-8000-f05e00000001")
    // One object per attribute: the service a characteristic names is the one in `services`.
    let service = try #require(found.services?.last)
    #expect(service.characteristics?.allSatisfy { $0.service === service } == true, "\(session.report)")
}


@Test func connectingToAnAdvertiserTheCaptureNeverConnectedToStaysPendingUntilCancelled() throws {
    let session = try ReplaySession(replayingPeripheralOf: "Captures/gatt-sensor")
    session.makeCurrent()
    let explorer = Explorer(clock: { session.now })
    explorer.start()
    try session.run(for: .milliseconds(10))
    let stranger = try #require(explorer.central.retrievePeripherals(withIdentifiers: [UUID(uuidString: "7e7e7e7e-0000-4000-8000-f05e00000001")!]).first)
    #expect(explorer.central.retrievePeripherals(withIdentifiers: [UUID()]).isEmpty)
    _ = stranger
    try session.run()
    #expect(session.events(core: "central", named: "connected").count == 1)
}
