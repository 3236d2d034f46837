import Dissectors
@testable import Emulation
import Testing

@Suite struct EmulatedDatabaseTests {
    static func discovered() -> GATTDatabase {
        var database = GATTDatabase()
        database.addService(.init(startHandle: 0x0001, endHandle: 0x0005, uuid: .init(0x1800)))
        // A gap: nothing at 0x0006–0x0027; the last service runs to 0xFFFF.
        database.addService(.init(startHandle: 0x0028, endHandle: 0xFFFF, uuid: .init(0x180D)))
        database.addCharacteristic(.init(declarationHandle: 0x0002, valueHandle: 0x0003, properties: 0x02, uuid: .init(0x2A00)))
        database.addCharacteristic(.init(declarationHandle: 0x0029, valueHandle: 0x002A, properties: 0x10, uuid: .init(0x2A37)))
        database.addCharacteristic(.init(declarationHandle: 0x002C, valueHandle: 0x002D, properties: 0x08, uuid: .init(0x2A39)))
        database.addAttributeType(.clientCharacteristicConfiguration, handle: 0x002B)
        return database
    }

    @Test func discoveryKeepsEveryRecordedHandleGapsAndTheLastEnd() throws {
        let peripheral = RecordedPeripheral(pdus: [], discovered: Self.discovered())
        let database = try EmulatedDatabase.build(from: peripheral, file: "x")
        #expect(database.services.map(\.startHandle) == [0x0001, 0x0028])
        #expect(database.services.map(\.endHandle) == [0x0005, 0xFFFF])
        #expect(database.services[1].characteristics.map(\.valueHandle) == [0x002A, 0x002D])
        #expect(database.services[1].characteristics[0].descriptors == [.init(handle: 0x002B, uuid: .clientCharacteristicConfiguration)])
    }

    @Test func aNotifyingCharacteristicWithoutADiscoveredCCCDGetsOneAtTheNextHandle() throws {
        var discovered = GATTDatabase()
        discovered.addService(.init(startHandle: 0x0010, endHandle: 0x0014, uuid: .init(0x180F)))
        discovered.addCharacteristic(.init(declarationHandle: 0x0011, valueHandle: 0x0012, properties: 0x12, uuid: .init(0x2A19)))
        let database = try EmulatedDatabase.build(from: RecordedPeripheral(pdus: [], discovered: discovered), file: "x")
        #expect(database.cccdHandles == [0x0013])
        #expect(!database.notes.isEmpty)
    }

    /// Found by CI/fuzz/run emulation: a CCCD was placed at the value handle + 1, past 0xFFFF.
    @Test func aNotifyingValueAtTheLastHandleGetsNoCCCDAndDoesNotTrap() throws {
        var discovered = GATTDatabase()
        discovered.addService(.init(startHandle: 0xFFF0, endHandle: 0xFFFF, uuid: .init(0x180F)))
        discovered.addCharacteristic(.init(declarationHandle: 0xFFFE, valueHandle: 0xFFFF, properties: 0x10, uuid: .init(0x2A19)))
        let database = try EmulatedDatabase.build(from: RecordedPeripheral(pdus: [], discovered: discovered), file: "x")
        #expect(database.services[0].characteristics.map(\.valueHandle) == [0xFFFF])
        #expect(database.cccdHandles.isEmpty)
        // Without discovery: a notified value at 0xFFFF (nothing after it to subscribe through).
        let usage = try EmulatedDatabase.build(from: RecordedPeripheral(pdus: [pdu(1, 0, client: false, 0x1B, 0xFFFF, [0x01])]), file: "x")
        #expect(usage.services.flatMap(\.characteristics).map(\.valueHandle) == [0xFFFF])
    }

    @Test func withoutDiscoveryTheHandlesUsedAndNamedMakeTheDatabase() throws {
        let pdus = [
            pdu(1, 0, client: true, 0x12, 0x0016, [0x01, 0x00]),
            pdu(2, 1, client: true, 0x52, 0x0018, [0x05]),
            pdu(3, 2, client: false, 0x1B, 0x0015, [0x07]),
        ]
        let peripheral = RecordedPeripheral(pdus: pdus, namedHandles: [
            0x0015: GATTHandleName(service: BluetoothUUID(high: 0x6a4e2401_667b_11e3, low: 0x949a_0800200c9a66), characteristic: BluetoothUUID(high: 0x6a4e2810_667b_11e3, low: 0x949a_0800200c9a66)),
            0x0018: GATTHandleName(service: BluetoothUUID(high: 0x6a4e2401_667b_11e3, low: 0x949a_0800200c9a66), characteristic: BluetoothUUID(high: 0x6a4e2820_667b_11e3, low: 0x949a_0800200c9a66)),
        ])
        let database = try EmulatedDatabase.build(from: peripheral, file: "x")
        #expect(database.services.count == 1)
        let service = database.services[0]
        #expect(service.uuid == BluetoothUUID("6a4e2401-667b-11e3-949a-0800200c9a66"))
        #expect(service.startHandle == 0x0013)
        #expect(service.characteristics.map(\.valueHandle) == [0x0015, 0x0018])
        #expect(service.characteristics[0].properties == 0x10)
        #expect(service.characteristics[0].descriptors.map(\.handle) == [0x0016])
        #expect(service.characteristics[1].properties == 0x04)
    }

    @Test func nothingToBuildFromIsAnErrorThatSaysWhatToDo() {
        #expect(throws: EmulationError.noDatabase(file: "Captures/x")) {
            try EmulatedDatabase.build(from: RecordedPeripheral(pdus: [pdu(1, 0, client: true, 0x02, nil, [0x17, 0x00])]), file: "Captures/x")
        }
        #expect(EmulationError.noDatabase(file: "Captures/x").description.contains("gatt_handles"))
    }
}
