import Dissectors
import Emulation
import Testing

@Suite struct ConnectIQLinkTests {
    static let service = BluetoothUUID("6a4e8022-667b-11e3-949a-0800200c9a66")!
    static let write = BluetoothUUID("6a4e4c80-667b-11e3-949a-0800200c9a66")!
    static let notify = BluetoothUUID("6a4ecd28-667b-11e3-949a-0800200c9a66")!

    static func database(service: BluetoothUUID = service) -> EmulatedDatabase {
        EmulatedDatabase(services: [
            .init(startHandle: 0x0010, endHandle: 0x0015, uuid: service, isPrimary: true, characteristics: [
                .init(declarationHandle: 0x0011, valueHandle: 0x0012, properties: 0x0C, uuid: write, descriptors: []),
                .init(declarationHandle: 0x0013, valueHandle: 0x0014, properties: 0x10, uuid: notify,
                      descriptors: [.init(handle: 0x0015, uuid: .clientCharacteristicConfiguration)]),
            ]),
        ])
    }

    @Test func theLinkIsFoundWithItsHandlesAndTraffic() throws {
        let pdus = [
            pdu(1, 0, client: true, 0x12, 0x0015, [0x01, 0x00]),
            pdu(2, 1, client: true, 0x52, 0x0012, [0x00, 0x05]),
            pdu(3, 2, client: false, 0x1B, 0x0014, [0x00, 0x05, 0x01]),
        ]
        let found = try #require(ConnectIQLink(database: Self.database(), pdus: pdus))
        #expect(found.writeHandle == 0x0012)
        #expect(found.notifyHandle == 0x0014)
        #expect(found.cccdHandle == 0x0015)
        #expect(found.recorded.map(\.fromPhone) == [true, false])
        #expect(found.recorded.map(\.bytes) == [[0x00, 0x05], [0x00, 0x05, 0x01]])
    }

    @Test func anotherServiceIsNotTheLink() {
        #expect(ConnectIQLink(database: Self.database(service: BluetoothUUID(0x180D)), pdus: []) == nil)
    }
}
