#if canImport(CoreBluetooth)
import CoreBluetooth
#else
import TetherCoreBluetooth
#endif
import Foundation

/// A heart-rate strap client of the kind fitness apps have, written against CoreBluetooth's
/// central-role API and nothing else: on iOS it talks to the real Bluetooth stack; on Linux the
/// same source compiles against `TetherCoreBluetooth`, and its tests replay recorded straps.
///
/// What it does, in order (one ATT request at a time, as the recorded phone did, so a replayed
/// strap is asked exactly what the recorded one was):
/// 1. once Bluetooth is powered on, scans for peripherals advertising the Heart Rate service
///    (0x180D) and connects to the first one found, stopping the scan;
/// 2. discovers the Heart Rate service, then its Heart Rate Measurement (0x2A37), Body Sensor
///    Location (0x2A38) and Heart Rate Control Point (0x2A39) characteristics;
/// 3. subscribes to Heart Rate Measurement notifications and, once that is confirmed, reads the
///    Body Sensor Location;
/// 4. appends every measurement to ``readings`` (and hands it to ``onReading``).
///
/// It does not reconnect on its own after a disconnection: ``disconnections`` and ``state`` say
/// what happened, and the app decides. Everything is recorded in read-only properties so a test
/// can check what the app saw. Use it from the queue its callbacks arrive on (the main queue on
/// iOS; the thread running the replay session under Tether).
public final class HeartRateMonitor: NSObject, CBCentralManagerDelegate, CBPeripheralDelegate {
    /// Where the monitor is in its connection's life. Each case carries what that state needs,
    /// so a peripheral can only be reached in the states that have one.
    public enum State {
        /// ``start()`` has not been called, or Bluetooth has not said whether it is on yet.
        case idle
        /// Bluetooth is not usable (powered off, unauthorised, unsupported, resetting): the
        /// manager's state, so the app can say which.
        case unavailable(CBManagerState)
        /// Scanning for a strap advertising the Heart Rate service.
        case scanning
        /// A strap was found and the connection is being made.
        case connecting(CBPeripheral)
        /// Connected; services and characteristics are being discovered and notifications
        /// switched on.
        case connected(CBPeripheral)
        /// Connected with Heart Rate Measurement notifications on: readings arrive.
        case receiving(CBPeripheral)
        /// The connection could not be made, with the error CoreBluetooth gave.
        case connectionFailed(CBPeripheral, (any Error)?)
        /// The connection ended: `nil` when this app cancelled it, else why it dropped.
        case disconnected(CBPeripheral, (any Error)?)
    }

    /// Skin contact as the strap reports it (Heart Rate Measurement flags bits 1-2).
    public enum SensorContact: Sendable, Hashable {
        /// The strap cannot tell (bit 2 clear). Kept apart from ``notDetected`` so that a strap
        /// without contact detection never raises a "check your strap" warning.
        case notSupported
        /// Contact detection is supported and the strap is not touching the skin.
        case notDetected
        /// Contact detection is supported and the strap is touching the skin.
        case detected
    }

    /// One Heart Rate Measurement (characteristic 0x2A37), decoded per the Heart Rate Service
    /// specification v1.0, section 3.1, and the GATT Specification Supplement.
    public struct Reading: Sendable, Hashable {
        /// Heart rate in beats per minute (sent as UInt8 or UInt16, flags bit 0).
        public var bpm: Int
        /// RR intervals, oldest first, in seconds. The strap sends them in units of 1/1024 s;
        /// each value here is that count divided by 1024, which a Double holds exactly, so
        /// `rrIntervals[i] * 1024` gives back the sent count. Empty when the strap sent none.
        public var rrIntervals: [Double]
        /// Energy expended since the last reset, in kilojoules, when the strap sent it (flags
        /// bit 3); 65535 means "at least 65535 kJ".
        public var energyExpended: Int?
        /// Skin contact, when the strap reports it.
        public var sensorContact: SensorContact

        /// A reading with these fields.
        public init(bpm: Int, rrIntervals: [Double] = [], energyExpended: Int? = nil,
                    sensorContact: SensorContact = .notSupported) {
            self.bpm = bpm
            self.rrIntervals = rrIntervals
            self.energyExpended = energyExpended
            self.sensorContact = sensorContact
        }

        /// Decodes a Heart Rate Measurement value; `nil` when the value is shorter than its flags
        /// announce (no flags byte, a cut heart rate or Energy Expended field, the RR flag with
        /// no interval or an odd byte after them). Bounds are checked before every read, so a
        /// malformed notification from a faulty strap is never a trap. Reserved flag bits (5-7)
        /// are ignored, as the specification asks of a client.
        public init?(measurement value: Data) {
            var reader = LittleEndianReader(bytes: [UInt8](value))
            guard let flags = reader.uint8() else { return nil }
            if flags & Flag.valueIsUInt16 != 0 {
                guard let wide = reader.uint16() else { return nil }
                bpm = Int(wide)
            } else {
                guard let narrow = reader.uint8() else { return nil }
                bpm = Int(narrow)
            }
            if flags & Flag.contactSupported == 0 {
                sensorContact = .notSupported
            } else {
                sensorContact = flags & Flag.contactDetected != 0 ? .detected : .notDetected
            }
            energyExpended = nil
            if flags & Flag.energyExpendedPresent != 0 {
                guard let energy = reader.uint16() else { return nil }
                energyExpended = Int(energy)
            }
            rrIntervals = []
            if flags & Flag.rrIntervalsPresent != 0 {
                // The flag promises one or more intervals filling the rest of the value; an odd
                // byte left over means the value was cut, so none of it is trusted.
                guard reader.remaining >= 2, reader.remaining % 2 == 0 else { return nil }
                while let interval = reader.uint16() {
                    rrIntervals.append(Double(interval) / 1024)
                }
            }
        }

        /// The flags byte's bits, named once.
        private enum Flag {
            static let valueIsUInt16: UInt8 = 0x01
            static let contactDetected: UInt8 = 0x02
            static let contactSupported: UInt8 = 0x04
            static let energyExpendedPresent: UInt8 = 0x08
            static let rrIntervalsPresent: UInt8 = 0x10
        }
    }

    // UUIDs are computed rather than stored statics: CBUUID is not Sendable everywhere, and a
    // stored static of a non-Sendable type does not compile in the Swift 6 language mode.
    /// Heart Rate service.
    static var heartRateService: CBUUID { CBUUID(string: "180D") }
    /// Heart Rate Measurement: notify only.
    static var measurementCharacteristic: CBUUID { CBUUID(string: "2A37") }
    /// Body Sensor Location: read, one byte.
    static var bodySensorLocationCharacteristic: CBUUID { CBUUID(string: "2A38") }
    /// Heart Rate Control Point: write with response; 0x01 resets Energy Expended.
    static var controlPointCharacteristic: CBUUID { CBUUID(string: "2A39") }

    /// Body Sensor Location values 0-6 (Heart Rate Service specification, 3.2); 7-255 are reserved.
    private static let locationNames = ["other", "chest", "wrist", "finger", "hand", "ear lobe", "foot"]

    /// The current state.
    public private(set) var state: State = .idle
    /// Every well-formed measurement received, in arrival order.
    public private(set) var readings: [Reading] = []
    /// Measurement values that could not be decoded, as received; each also has a line in ``errors``.
    public private(set) var malformedMeasurements: [Data] = []
    /// Where the strap is worn (`"chest"`, `"wrist"`, `"ear lobe"`…, `"reserved (N)"` for
    /// values the specification reserves), once it has been read.
    public private(set) var bodySensorLocation: String?
    /// How many Energy Expended resets the strap has acknowledged.
    public private(set) var energyExpendedResets = 0
    /// What went wrong, one line each, in order: ATT errors, a missing service or
    /// characteristic, malformed values, calls made in the wrong state.
    public private(set) var errors: [String] = []
    /// Every disconnection of the connected strap, with CoreBluetooth's error (`nil` when this
    /// app cancelled the connection).
    public private(set) var disconnections: [(any Error)?] = []

    /// Called with each new reading, after it is appended to ``readings``, on the callback queue.
    public var onReading: ((Reading) -> Void)?

    private var central: CBCentralManager?
    // CoreBluetooth cancels the connection of a peripheral nobody holds on to, so the monitor
    // keeps a strong reference from discovery until disconnection (the state holds it too, but
    // the characteristics below belong to this one object).
    private var peripheral: CBPeripheral?
    private var measurement: CBCharacteristic?
    private var locationCharacteristic: CBCharacteristic?
    private var controlPoint: CBCharacteristic?
    /// Set once the location has been asked for, so a second notification-state callback (the
    /// app switching notifications off, say) does not read it again.
    private var locationRequested = false

    /// A monitor that does nothing until ``start()``.
    public override init() {
        super.init()
    }

    /// Creates the central manager; scanning starts once Bluetooth reports it is powered on
    /// (scanning earlier is an API misuse CoreBluetooth only logs). A second call does nothing.
    public func start() {
        guard central == nil else { return }
        // queue nil: callbacks on the main queue on iOS; under Tether, on the thread running
        // the replay session.
        central = CBCentralManager(delegate: self, queue: nil)
    }

    /// Stops scanning, or cancels the connection to the strap. The cancellation's
    /// `didDisconnectPeripheral` arrives with no error.
    public func stop() {
        guard let central else { return }
        switch state {
        case .scanning:
            central.stopScan()
            state = .idle
        case .connecting(let peripheral), .connected(let peripheral), .receiving(let peripheral):
            central.cancelPeripheralConnection(peripheral)
        case .idle, .unavailable, .connectionFailed, .disconnected:
            break
        }
    }

    /// Asks the strap to reset its accumulated Energy Expended: writes 0x01 (Reset Energy
    /// Expended) to the Heart Rate Control Point, with response, as the specification requires.
    /// The acknowledgement increments ``energyExpendedResets``; a refusal (ATT error 0x80,
    /// Control Point value not supported, from a strap without Energy Expended) lands in ``errors``.
    /// - Returns: whether the write was sent: `false`, with a line in ``errors``, when not
    ///   connected or the strap has no Control Point.
    @discardableResult
    public func resetEnergyExpended() -> Bool {
        guard let peripheral, let controlPoint else {
            errors.append("resetEnergyExpended: no connected strap with a Heart Rate Control Point")
            return false
        }
        peripheral.writeValue(Data([0x01]), for: controlPoint, type: .withResponse)
        return true
    }

    // MARK: CBCentralManagerDelegate

    /// Bluetooth's state changed: scan when it is on, forget the strap when it is not (an
    /// existing connection does not survive Bluetooth going off).
    public func centralManagerDidUpdateState(_ central: CBCentralManager) {
        guard central.state == .poweredOn else {
            forgetPeripheral()
            state = .unavailable(central.state)
            return
        }
        switch state {
        case .idle, .unavailable:
            central.scanForPeripherals(withServices: [Self.heartRateService], options: nil)
            state = .scanning
        case .scanning, .connecting, .connected, .receiving, .connectionFailed, .disconnected:
            // Already under way, or finished: powered on again changes nothing.
            break
        }
    }

    /// A strap advertising the Heart Rate service: connect to the first one only.
    public func centralManager(_ central: CBCentralManager, didDiscover peripheral: CBPeripheral,
                               advertisementData: [String: Any], rssi RSSI: NSNumber) {
        // Advertising reports queued before stopScan still arrive; they are not new straps.
        guard case .scanning = state else { return }
        central.stopScan()
        self.peripheral = peripheral
        state = .connecting(peripheral)
        central.connect(peripheral, options: nil)
    }

    /// Connected: find the Heart Rate service, and only it.
    public func centralManager(_ central: CBCentralManager, didConnect peripheral: CBPeripheral) {
        state = .connected(peripheral)
        peripheral.delegate = self
        peripheral.discoverServices([Self.heartRateService])
    }

    /// The connection could not be made.
    public func centralManager(_ central: CBCentralManager, didFailToConnect peripheral: CBPeripheral,
                               error: (any Error)?) {
        errors.append("connection failed: \(Self.describe(error))")
        forgetPeripheral()
        state = .connectionFailed(peripheral, error)
    }

    /// The connection ended: recorded in ``disconnections``; no reconnection (see the type's comment).
    public func centralManager(_ central: CBCentralManager, didDisconnectPeripheral peripheral: CBPeripheral,
                               error: (any Error)?) {
        disconnections.append(error)
        forgetPeripheral()
        state = .disconnected(peripheral, error)
    }

    // MARK: CBPeripheralDelegate

    /// Services found: ask for the three Heart Rate characteristics.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverServices error: (any Error)?) {
        if let error {
            errors.append("service discovery failed: \(Self.describe(error))")
            return
        }
        guard let service = peripheral.services?.first(where: { $0.uuid == Self.heartRateService }) else {
            // A strap that advertised the service but does not have it: nothing to show.
            errors.append("the peripheral has no Heart Rate service")
            central?.cancelPeripheralConnection(peripheral)
            return
        }
        peripheral.discoverCharacteristics(
            [Self.measurementCharacteristic, Self.bodySensorLocationCharacteristic, Self.controlPointCharacteristic],
            for: service)
    }

    /// Characteristics found: switch Heart Rate Measurement notifications on. The location is
    /// read once that is confirmed, so only one request is outstanding at a time.
    public func peripheral(_ peripheral: CBPeripheral, didDiscoverCharacteristicsFor service: CBService,
                           error: (any Error)?) {
        if let error {
            errors.append("characteristic discovery failed: \(Self.describe(error))")
            return
        }
        for characteristic in service.characteristics ?? [] {
            if characteristic.uuid == Self.measurementCharacteristic {
                measurement = characteristic
            } else if characteristic.uuid == Self.bodySensorLocationCharacteristic {
                locationCharacteristic = characteristic
            } else if characteristic.uuid == Self.controlPointCharacteristic {
                controlPoint = characteristic
            }
        }
        guard let measurement else {
            // Heart Rate Measurement is mandatory in the service; without it there are no readings.
            errors.append("the Heart Rate service has no Heart Rate Measurement characteristic")
            central?.cancelPeripheralConnection(peripheral)
            return
        }
        peripheral.setNotifyValue(true, for: measurement)
    }

    /// Notifications switched on (or refused): then read where the strap is worn.
    public func peripheral(_ peripheral: CBPeripheral, didUpdateNotificationStateFor characteristic: CBCharacteristic,
                           error: (any Error)?) {
        guard characteristic.uuid == Self.measurementCharacteristic else { return }
        if let error {
            errors.append("subscribing to Heart Rate Measurement failed: \(Self.describe(error))")
        } else if characteristic.isNotifying {
            state = .receiving(peripheral)
        }
        // The location is worth reading even when subscribing failed: the app can still show it.
        if !locationRequested, let location = locationCharacteristic {
            locationRequested = true
            peripheral.readValue(for: location)
        }
    }

    /// A notification (Heart Rate Measurement) or a read's answer (Body Sensor Location).
    public func peripheral(_ peripheral: CBPeripheral, didUpdateValueFor characteristic: CBCharacteristic,
                           error: (any Error)?) {
        if let error {
            errors.append("reading \(characteristic.uuid) failed: \(Self.describe(error))")
            return
        }
        let value = characteristic.value ?? Data()
        if characteristic.uuid == Self.measurementCharacteristic {
            guard let reading = Reading(measurement: value) else {
                malformedMeasurements.append(value)
                errors.append("malformed Heart Rate Measurement (\(value.count) bytes): \(Self.hex(value))")
                return
            }
            readings.append(reading)
            onReading?(reading)
        } else if characteristic.uuid == Self.bodySensorLocationCharacteristic {
            guard let byte = value.first else {
                errors.append("empty Body Sensor Location value")
                return
            }
            let index = Int(byte)
            bodySensorLocation = index < Self.locationNames.count ? Self.locationNames[index] : "reserved (\(index))"
        }
    }

    /// The Control Point's answer to ``resetEnergyExpended()``.
    public func peripheral(_ peripheral: CBPeripheral, didWriteValueFor characteristic: CBCharacteristic,
                           error: (any Error)?) {
        guard characteristic.uuid == Self.controlPointCharacteristic else { return }
        if let error {
            errors.append("resetting Energy Expended failed: \(Self.describe(error))")
        } else {
            energyExpendedResets += 1
        }
    }

    // MARK: helpers

    /// Drops the connected strap and its characteristics, so nothing is written to a stale object.
    private func forgetPeripheral() {
        peripheral = nil
        measurement = nil
        locationCharacteristic = nil
        controlPoint = nil
        locationRequested = false
    }

    private static func describe(_ error: (any Error)?) -> String {
        error.map { $0.localizedDescription } ?? "no error given"
    }

    private static func hex(_ data: Data) -> String {
        data.map { byte in
            let digits = String(byte, radix: 16)
            return digits.count == 1 ? "0" + digits : digits
        }.joined()
    }
}

/// Little-endian reads that check the length first and answer `nil` past the end, so a short
/// value cannot index out of bounds.
private struct LittleEndianReader {
    let bytes: [UInt8]
    private(set) var offset = 0

    init(bytes: [UInt8]) { self.bytes = bytes }

    var remaining: Int { bytes.count - offset }

    mutating func uint8() -> UInt8? {
        guard remaining >= 1 else { return nil }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func uint16() -> UInt16? {
        guard remaining >= 2 else { return nil }
        defer { offset += 2 }
        return UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
    }
}
