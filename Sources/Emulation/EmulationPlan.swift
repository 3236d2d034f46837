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
    /// The pairing offered to a central: the recorded peripheral's side of the recorded pairing
    /// (legacy when the recording paired that way), or any pairing when the capture holds none.
    public var pairing: PairingOffer

    /// Builds the plan of an already scanned peripheral. `file` names the capture in errors.
    public init(peripheral: RecordedPeripheral, file: String, useResponders: Bool = true) throws(EmulationError) {
        self.peripheral = peripheral
        self.database = try EmulatedDatabase.build(from: peripheral, file: file)
        self.script = AnswerScript(peripheral.pdus, recordedAtCentral: peripheral.recordedAtCentral)
        self.connectIQ = useResponders ? ConnectIQLink(database: database, pdus: peripheral.pdus) : nil
        self.sessionLink = useResponders ? SessionLinkHandshake(database: database) : nil
        self.pairing = PairingOffer.offer(for: peripheral.pairings)
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

    /// What was wrong with the recorded database, and how it was repaired (``EmulatedDatabase/warnings``).
    public var warnings: [String] { database.warnings }

    /// Notes on what was inferred or left out.
    public var notes: [String] {
        var notes = peripheral.notes + database.notes
        // Discovery of the central and the MTU exchange are made again; anything else the
        // peripheral asked of the central (reading the phone's values, …) is not.
        let replayed = RecordedCentralDiscovery.discoveryOpcodes.union([0x02])
        let others = script.peripheralRequests.filter { !replayed.contains($0.key) }.values.reduce(0, +)
        if others > 0 {
            notes.append("the peripheral made \(others) requests of the central other than discovery and MTU (opcodes "
                + script.peripheralRequests.keys.filter { !replayed.contains($0) }.sorted().map { "0x" + String($0, radix: 16) }.joined(separator: ", ")
                + "): not made again")
        }
        for discovery in peripheral.centralDiscoveries {
            notes.append("connection \(discovery.connection + 1): the peripheral discovered the central's database with \(discovery.requestCount) requests "
                + "\(Self.milliseconds(discovery.delayNs)) after connecting (frame \(discovery.frame)): made again on that connection")
        }
        for request in peripheral.securityRequests {
            notes.append("connection \(request.connection + 1): the peripheral sent a Security Request \(Self.milliseconds(request.delayNs)) after connecting "
                + "(frame \(request.frame), AuthReq 0x\(String(request.authReq, radix: 16))): sent again on that connection")
        }
        notes.append("pairing offered: \(pairing.kind.rawValue) (\(pairing.source))")
        return notes
    }

    static func milliseconds(_ ns: Int64) -> String {
        let tenths = (ns + 50_000) / 100_000
        return "\(tenths / 10).\(tenths % 10) ms"
    }
}
