import Dissectors

/// Everything `tether emulate` serves, built from a capture set: the recorded peripheral, its
/// database, and the answer script.
public struct EmulationPlan: Sendable {
    /// What the capture holds of the peripheral.
    public var peripheral: RecordedPeripheral
    /// The database to serve.
    public var database: EmulatedDatabase
    /// The answers to play back.
    public var script: AnswerScript
    /// The Connect IQ link, when the database serves one: its requests go to the Connect IQ
    /// responder rather than the generic one (`nil` with `useResponders` off).
    public var connectIQ: ConnectIQLink?
    /// The session link's handshake responder, when the database serves the session link (`nil`
    /// with `useResponders` off).
    public var sessionLink: SessionLinkHandshake?

    /// Scans the set at `setPath` and builds the plan.
    public init(setPath: String, verify: Bool = true, useResponders: Bool = true) throws(EmulationError) {
        let peripheral = try CaptureScanner.scan(setPath: setPath, verify: verify)
        try self.init(peripheral: peripheral, file: setPath, useResponders: useResponders)
    }

    /// Builds the plan of an already scanned peripheral. `file` names the capture in errors.
    public init(peripheral: RecordedPeripheral, file: String, useResponders: Bool = true) throws(EmulationError) {
        self.peripheral = peripheral
        self.database = try EmulatedDatabase.build(from: peripheral, file: file)
        self.script = AnswerScript(peripheral.pdus, recordedAtCentral: peripheral.recordedAtCentral)
        self.connectIQ = useResponders ? ConnectIQLink(database: database, pdus: peripheral.pdus) : nil
        self.sessionLink = useResponders ? SessionLinkHandshake(database: database) : nil
    }

    /// Service UUIDs to advertise: the recorded ones, else the database's primary services that
    /// are not the GAP and GATT services.
    public var advertisedServices: [BluetoothUUID] {
        if !peripheral.advertisedServices.isEmpty { return peripheral.advertisedServices }
        return database.services.filter { $0.isPrimary && $0.uuid != BluetoothUUID(0x1800) && $0.uuid != BluetoothUUID(0x1801) }.map(\.uuid)
    }

    /// The recorded address when it is a static random one (the two top bits set), which a
    /// virtual controller can take as its own.
    public var staticAddress: String? {
        guard let address = peripheral.address, let first = UInt8(address.prefix(2), radix: 16), first & 0xC0 == 0xC0 else { return nil }
        return address
    }

    /// What the plan serves, in one line.
    public var summary: String {
        let characteristics = database.services.reduce(0) { $0 + $1.characteristics.count }
        let reads = script.reads.values.reduce(0) { $0 + $1.count }
        let answers = script.writes.reduce(0) { $0 + $1.answers.count }
        return "\(database.services.count) services, \(characteristics) characteristics; \(script.writes.count) recorded writes "
            + "with \(answers) notifications/indications after them, \(reads) reads, over \(script.connections) connection\(script.connections == 1 ? "" : "s")"
    }

    /// Notes on what was inferred or left out.
    public var notes: [String] {
        var notes = peripheral.notes + database.notes
        if !script.peripheralRequests.isEmpty {
            notes.append("the peripheral made \(script.peripheralRequests.values.reduce(0, +)) requests of its own (discovering the central's database, MTU); only its MTU request is played back")
        }
        return notes
    }
}
