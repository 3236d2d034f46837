import CaptureKit
import Dissectors
import Emulation
import Testing

/// The scanner's reading of what a peripheral did unasked: Security Requests, the pairing made,
/// and the peripheral discovering the phone's own GATT database.
@Suite struct PeripheralInitiativeTests {
    static let ms: Int64 = 1_000_000
    /// Pairing Request / Response parameters: IO capability, OOB flag, AuthReq, key size, key distributions.
    static let phoneAsksSC: [UInt8] = [0x03, 0x00, 0x09, 0x10, 0x07, 0x07]  // NoInputNoOutput, bonding + SC
    static let deviceLegacy: [UInt8] = [0x03, 0x00, 0x01, 0x10, 0x07, 0x07]  // NoInputNoOutput, bonding, SC clear
    static let deviceSC: [UInt8] = [0x03, 0x00, 0x09, 0x10, 0x07, 0x07]

    /// A phone-side connection: the device asks for security 150 ms after the connection, the phone
    /// pairs; at 600 ms the device discovers the phone's database (the phone answers with its own
    /// GAP service); the phone reads handle 0x0003 and writes 0x0010.
    static func connection(response: [UInt8], handle: UInt16 = 0x0040, at start: Int64 = 0) -> [(bytes: [UInt8], timeNs: Int64)] {
        [
            (Frames.connected(handle: handle), start + 10 * ms),
            (Frames.att(Frames.serviceDiscoveryRequest(from: 1), received: false, handle: handle), start + 20 * ms),
            (Frames.att(Frames.serviceDiscoveryResponse([(0x0001, 0x0007, 0x1800), (0x0010, 0xFFFF, 0x180F)]), received: true, handle: handle), start + 30 * ms),
            (Frames.smp(0x0B, [0x01], received: true, handle: handle), start + 160 * ms),
            (Frames.smp(0x01, phoneAsksSC, received: false, handle: handle), start + 170 * ms),
            (Frames.smp(0x02, response, received: true, handle: handle), start + 180 * ms),
            (Frames.att(Frames.readRequest(0x0003), received: false, handle: handle), start + 300 * ms),
            (Frames.att(Frames.readResponse(Array("Band".utf8)), received: true, handle: handle), start + 310 * ms),
            // The device as GATT client: Read By Group Type, Read By Type and Find Information to the phone.
            (Frames.att(Frames.serviceDiscoveryRequest(from: 1), received: true, handle: handle), start + 610 * ms),
            (Frames.att(Frames.serviceDiscoveryResponse([(0x0001, 0x0005, 0x1801)]), received: false, handle: handle), start + 620 * ms),
            (Frames.att(Frames.characteristicDiscoveryRequest(0x0001, 0x0005), received: true, handle: handle), start + 630 * ms),
            (Frames.att(Frames.characteristicDiscoveryResponse([(0x0002, 0x20, 0x0003, 0x2A05)]), received: false, handle: handle), start + 640 * ms),
            (Frames.att(Frames.findInformationRequest(0x0004, 0x0005), received: true, handle: handle), start + 650 * ms),
            (Frames.att(Frames.findInformationResponse([(0x0004, 0x2902)]), received: false, handle: handle), start + 660 * ms),
            (Frames.att(Frames.writeRequest(0x0010, [0x02]), received: false, handle: handle), start + 700 * ms),
            (Frames.att(Frames.writeResponse, received: true, handle: handle), start + 710 * ms),
            (Frames.disconnected(handle: handle), start + 800 * ms),
        ]
    }

    static func scan(_ items: [(bytes: [UInt8], timeNs: Int64)]) throws -> RecordedPeripheral {
        try CaptureScanner.scan(frames: Frames.capture(items), linkType: .bluetoothHCIH4WithPHDR)
    }

    @Test func theSecurityRequestIsFoundWithItsDelayAfterTheConnection() throws {
        let peripheral = try Self.scan(Self.connection(response: Self.deviceLegacy))
        #expect(peripheral.securityRequests == [RecordedSecurityRequest(connection: 0, frame: 4, delayNs: 150 * Self.ms, authReq: 0x01)])
    }

    @Test func aPairingResponseWithoutTheSCFlagIsLegacyPairing() throws {
        let peripheral = try Self.scan(Self.connection(response: Self.deviceLegacy))
        let pairing = try #require(peripheral.pairings.first)
        #expect(pairing.frame == 5)
        #expect(pairing.request.secureConnections)
        #expect(pairing.response?.secureConnections == false)
        #expect(pairing.response?.bonding == true)
        #expect(pairing.response?.ioCapabilityName == "NoInputNoOutput")
        #expect(pairing.kind == .legacy)
        #expect(pairing.associationModel == "Just Works")
        let plan = try EmulationPlan(peripheral: peripheral, file: "x")
        #expect(plan.pairing.kind == .legacy)
        #expect(plan.pairing.ioCapability == 0x03)
        #expect(plan.pairing.bonding)
        #expect(plan.notes.contains { $0.hasPrefix("pairing offered: legacy pairing (frame 5") })
    }

    @Test func bothSCFlagsSetIsLESecureConnectionsAndIsOfferedSo() throws {
        let peripheral = try Self.scan(Self.connection(response: Self.deviceSC))
        #expect(peripheral.pairings.first?.kind == .secureConnections)
        #expect(try EmulationPlan(peripheral: peripheral, file: "x").pairing.kind == .secureConnections)
    }

    @Test func aCaptureWithoutPairingOffersWhatTheEmulatorAlwaysAccepted() throws {
        let items = Self.connection(response: Self.deviceLegacy).filter { $0.bytes.count < 13 || $0.bytes[11] != 0x06 }  // no SMP (L2CAP CID 6)
        let peripheral = try Self.scan(items)
        #expect(peripheral.pairings.isEmpty)
        #expect(try EmulationPlan(peripheral: peripheral, file: "x").pairing == .acceptAnything)
    }

    @Test func thePeripheralDiscoveringThePhoneIsFoundAndKeptOutOfItsDatabase() throws {
        let peripheral = try Self.scan(Self.connection(response: Self.deviceLegacy))
        #expect(peripheral.centralDiscoveries == [
            RecordedCentralDiscovery(connection: 0, frame: 9, delayNs: 600 * Self.ms, requests: [0x10: 1, 0x08: 1, 0x04: 1]),
        ])
        let discovery = peripheral.centralDiscoveries[0]
        #expect(discovery.services && discovery.characteristics && discovery.descriptors)
        // The phone's Generic Attribute service (0x0001–0x0005) and its characteristic are not the device's.
        #expect(peripheral.discovered.services[0x0001]?.uuid == BluetoothUUID(0x1800))
        #expect(peripheral.discovered.services[0x0001]?.endHandle == 0x0007)
        #expect(peripheral.discovered.characteristics.isEmpty)
        #expect(peripheral.discovered.attributeTypes[0x0004] == nil)
        // The phone's reads and writes still decide who the client is, though the device's requests
        // travel the other way.
        #expect(peripheral.recordedAtCentral)
        #expect(peripheral.pdus.first { $0.opcode == 0x12 }?.fromClient == true)
        #expect(peripheral.pdus.first { $0.opcode == 0x10 && $0.frame == 9 }?.fromClient == false)
    }

    @Test func theEmulatorDoesOnEachConnectionWhatTheRecordingDidAndGoesOnAsTheLastOne() throws {
        let items = Self.connection(response: Self.deviceLegacy)
            + Self.connection(response: Self.deviceLegacy, handle: 0x0041, at: 1_000 * Self.ms)
        let peripheral = try Self.scan(items)
        #expect(peripheral.securityRequests.map(\.connection) == [0, 1])
        #expect(peripheral.pairings.map(\.kind) == [.legacy, .legacy])
        let plan = try EmulationPlan(peripheral: peripheral, file: "x")
        var emulator = Emulator(script: plan.script, database: plan.database, initiatives: peripheral.initiatives)
        _ = emulator.connect()
        #expect(emulator.initiative.securityRequest?.delayNs == 150 * Self.ms)
        #expect(emulator.initiative.centralDiscovery?.requestCount == 3)
        _ = emulator.connect()
        #expect(emulator.initiative.securityRequest?.frame == 21)
        _ = emulator.connect()
        #expect(emulator.initiative.securityRequest?.frame == 21, "past the recorded connections, as on the last one")
        var reset = Emulator(script: plan.script, database: plan.database, resetPerConnection: true, initiatives: peripheral.initiatives)
        _ = reset.connect()
        _ = reset.connect()
        #expect(reset.initiative.securityRequest?.frame == 4)
    }

    @Test func aShortPairingRequestIsNotedWithItsFrameAndIgnored() throws {
        var items = Self.connection(response: Self.deviceLegacy)
        items[4] = (Frames.smp(0x01, [0x03, 0x00], received: false), items[4].timeNs)
        let peripheral = try Self.scan(items)
        #expect(peripheral.notes.contains("frame 5: SMP command 0x1 (Pairing Request) has 2 parameter bytes, expected 6; ignored"))
        #expect(peripheral.notes.contains { $0.hasPrefix("frame 6: SMP command 0x2: a Pairing Response without the Pairing Request") })
        #expect(peripheral.pairings.isEmpty)
    }

    @Test(arguments: [
        // (initiator IO, responder IO, SC, MITM, model) from Core v6.0 Vol 3 Part H tables 2.7 and 2.8
        (UInt8(4), UInt8(0), false, true, "Passkey Entry"),
        (UInt8(1), UInt8(1), false, true, "Just Works"),
        (UInt8(1), UInt8(1), true, true, "Numeric Comparison"),
        (UInt8(4), UInt8(4), false, true, "Passkey Entry"),
        (UInt8(4), UInt8(3), true, true, "Just Works"),
        (UInt8(2), UInt8(2), true, false, "Just Works"),
    ])
    func theAssociationModelFollowsTheIOCapabilityTables(initiator: UInt8, responder: UInt8, sc: Bool, mitm: Bool, model: String) {
        let authReq: UInt8 = 0x01 | (mitm ? 0x04 : 0) | (sc ? 0x08 : 0)
        let pairing = RecordedPairing(connection: 0, frame: 1, request: SMPPairingFeatures(ioCapability: initiator, authReq: authReq),
                                      response: SMPPairingFeatures(ioCapability: responder, authReq: authReq))
        #expect(pairing.associationModel == model)
    }
}
