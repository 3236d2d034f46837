import Dissectors
@testable import Emulation
import Testing

/// A recorded GATT database no server could have is repaired or left out, and each problem is a
/// warning naming the frame whose discovery response told it.
@Suite struct InvalidDatabaseTests {
    static func build(_ discovered: GATTDatabase, frames: [UInt16: Int]) throws -> EmulatedDatabase {
        var peripheral = RecordedPeripheral(pdus: [], discovered: discovered)
        peripheral.discoveryFrames = frames
        return try EmulatedDatabase.build(from: peripheral, file: "x")
    }

    @Test func aServiceAtHandleZeroIsLeftOutNamingItsFrame() throws {
        var discovered = GATTDatabase()
        discovered.addService(.init(startHandle: 0x0000, endHandle: 0x0004, uuid: .init(0x180F)))
        discovered.addService(.init(startHandle: 0x0010, endHandle: 0x0014, uuid: .init(0x180D)))
        let database = try Self.build(discovered, frames: [0: 12])
        #expect(database.services.map(\.startHandle) == [0x0010])
        #expect(database.warnings.count == 1)
        #expect(database.warnings[0].contains("handle 0x0000 (frame 12)"), "\(database.warnings)")
    }

    @Test func aServiceThatEndsBeforeItStartsIsLeftOut() throws {
        var discovered = GATTDatabase()
        discovered.addService(.init(startHandle: 0x0020, endHandle: 0x0010, uuid: .init(0x180F)))
        discovered.addService(.init(startHandle: 0x0030, endHandle: 0x0034, uuid: .init(0x180D)))
        let database = try Self.build(discovered, frames: [0x20: 7])
        #expect(database.services.map(\.startHandle) == [0x0030])
        #expect(database.warnings.contains { $0.contains("before it starts") && $0.contains("(frame 7)") })
    }

    @Test func overlappingServicesAreCutAtTheNextStart() throws {
        var discovered = GATTDatabase()
        discovered.addService(.init(startHandle: 0x0001, endHandle: 0x0020, uuid: .init(0x1800)))
        discovered.addService(.init(startHandle: 0x0010, endHandle: 0x0014, uuid: .init(0x180D)))
        let database = try Self.build(discovered, frames: [1: 3])
        #expect(database.services.map(\.endHandle) == [0x000F, 0x0014])
        #expect(database.warnings.contains { $0.contains("cut to end at 0x000F") && $0.contains("(frame 3)") })
    }

    @Test func aValueHandleOutsideItsServiceLeavesTheCharacteristicOut() throws {
        var discovered = GATTDatabase()
        discovered.addService(.init(startHandle: 0x0010, endHandle: 0x0014, uuid: .init(0x180D)))
        discovered.addCharacteristic(.init(declarationHandle: 0x0011, valueHandle: 0x0099, properties: 0x02, uuid: .init(0x2A37)))
        discovered.addCharacteristic(.init(declarationHandle: 0x0013, valueHandle: 0x0014, properties: 0x02, uuid: .init(0x2A38)))
        let database = try Self.build(discovered, frames: [0x11: 9])
        #expect(database.services[0].characteristics.map(\.valueHandle) == [0x0014])
        #expect(database.warnings.contains { $0.contains("value at 0x0099") && $0.contains("(frame 9)") })
    }

    @Test func aCCCDTypedOnAServiceDeclarationKeepsTheDeclaration() throws {
        var discovered = GATTDatabase()
        discovered.addService(.init(startHandle: 0x0010, endHandle: 0x0014, uuid: .init(0x180D)))
        discovered.addCharacteristic(.init(declarationHandle: 0x0011, valueHandle: 0x0012, properties: 0x10, uuid: .init(0x2A37)))
        discovered.addAttributeType(.clientCharacteristicConfiguration, handle: 0x0010)
        let database = try Self.build(discovered, frames: [0x10: 4])
        #expect(database.services.map(\.startHandle) == [0x0010])
        #expect(!database.cccdHandles.contains(0x0010))
        #expect(database.warnings.contains { $0.contains("0x0010 (frame 4)") && $0.contains("the declaration is kept") })
    }

    @Test func aValidDatabaseHasNoWarnings() throws {
        let database = try Self.build(EmulatedDatabaseTests.discovered(), frames: [:])
        #expect(database.warnings.isEmpty)
    }
}
