import Dissectors
import Testing

@testable import BehaviourTrace
@testable import CentralIntegration
@testable import Emulation

/// Every `central` event the virtual link's answer makes holds the link's own value as its fields
/// (``CentralLinkEventFields``): every way of reading, writing, comparing or digesting it must be
/// that of the dictionary docs/trace-format.md lists for it, or a replayed trace would change.
@Suite struct CentralLinkEventFieldsTests {
    static let heartRate = BluetoothUUID(0x180D)
    static let battery = BluetoothUUID(0x180F)
    static let peripheral = CentralAdapter.identifier(of: "C0:FF:EE:00:00:01")
    /// Flags; Complete Local Name "Strap"; 16-bit services 0x180D; Service Data 0x180D aa bb;
    /// Manufacturer Specific 4c 00 01; TX Power -12 dBm; solicited 16-bit 0x180F.
    static let advertising: [UInt8] = [
        0x02, 0x01, 0x06, 0x06, 0x09, 0x53, 0x74, 0x72, 0x61, 0x70, 0x03, 0x03, 0x0D, 0x18,
        0x05, 0x16, 0x0D, 0x18, 0xAA, 0xBB, 0x04, 0xFF, 0x4C, 0x00, 0x01, 0x02, 0x0A, 0xF4, 0x03, 0x14, 0x0F, 0x18,
    ]
    static let service = EmulatedDatabase.Service(startHandle: 1, endHandle: 9, uuid: heartRate, isPrimary: true, characteristics: [])
    static let serviceValue: TraceValue = .object([
        "uuid": .string(heartRate.description), "start": .int(1), "end": .int(9), "primary": .bool(true)])
    static let request = RecordedRequest(frame: 40, timeNs: 1_000, pdu: [0x0A, 0x03, 0x00], responseFrame: 41)

    static func advertisement(rssi: Int?, scanResponse: Bool, data: [UInt8] = advertising) -> RecordedAdvertisement {
        RecordedAdvertisement(frame: 7, timeNs: 500, address: "C0:FF:EE:00:00:01", data: data, rssi: rssi,
                              isConnectable: true, isScanResponse: scanResponse)
    }

    static func fields(_ source: CentralLinkEventFields.Source) -> TraceEvent {
        TraceEvent(timeNs: 2_500, core: CentralIntegration.core, event: "any", payload: CentralLinkEventFields(source))
    }

    /// A link event as the adapter holds it, and the fields docs/trace-format.md gives its line.
    static let cases: [(CentralLinkEventFields.Source, [String: TraceValue])] = [
        (.advertisement(advertisement(rssi: -60, scanResponse: true), AdvertisingData(advertising), synthesized: false, peripheral: peripheral),
         ["peripheral": .string(peripheral), "address": .string("C0:FF:EE:00:00:01"), "data": .string(JSONLiteral.hex(advertising)),
          "connectable": .bool(true), "rssi": .int(-60), "scan_response": .bool(true), "frame": .int(7), "name": .string("Strap"),
          "services": .array([.string(heartRate.description)]), "solicited_services": .array([.string(battery.description)]),
          "service_data": .object([heartRate.description: .string("aabb")]), "manufacturer_data": .string("4c0001"), "tx_power": .int(-12)]),
        (.advertisement(advertisement(rssi: nil, scanResponse: false, data: []), AdvertisingData([]), synthesized: true, peripheral: peripheral),
         ["peripheral": .string(peripheral), "address": .string("C0:FF:EE:00:00:01"), "data": .string(""),
          "connectable": .bool(true), "synthesized": .bool(true)]),
        (.connection(.connected(recorded: 0, frame: 12), peripheral: peripheral),
         ["peripheral": .string(peripheral), "recorded_connection": .int(1), "frame": .int(12)]),
        (.connection(.connected(recorded: 2, frame: nil), peripheral: peripheral),
         ["peripheral": .string(peripheral), "recorded_connection": .int(3)]),
        (.connection(.disconnected(reason: 0x13, byCentral: false, frame: 90), peripheral: peripheral),
         ["peripheral": .string(peripheral), "reason": .int(0x13), "by_central": .bool(false), "frame": .int(90)]),
        (.connection(.disconnected(reason: 0x16, byCentral: true, frame: nil), peripheral: peripheral),
         ["peripheral": .string(peripheral), "reason": .int(0x16), "by_central": .bool(true)]),
        (.link(.mtuChanged(185)), ["mtu": .int(185)]),
        (.link(.requestSent(pdu: [0x0A, 0x03, 0x00], matched: request, expected: nil)), ["frame": .int(40), "request": .string("0a0300")]),
        (.link(.requestSent(pdu: [0x0A, 0x05, 0x00], matched: nil, expected: request)),
         ["sent": .string("0a0500"), "expected_frame": .int(40), "expected": .string("0a0300")]),
        (.link(.requestSent(pdu: [0x12, 0x05, 0x00, 0x01], matched: nil, expected: nil)), ["sent": .string("12050001")]),
        (.answer(.servicesDiscovered([service], error: nil), request: 1), ["services": .array([serviceValue]), "request": .int(1)]),
        (.answer(.servicesDiscovered([], error: 0x0A), request: nil), ["services": .array([]), "att_error": .int(0x0A)]),
        (.answer(.includedServicesDiscovered(service: 1, [service], error: nil), request: 2),
         ["service": .int(1), "services": .array([serviceValue]), "request": .int(2)]),
        (.answer(.characteristicsDiscovered(service: 1, [EmulatedDatabase.Characteristic(
            declarationHandle: 2, valueHandle: 3, properties: 0x12, uuid: BluetoothUUID(0x2A37), descriptors: [])], error: nil), request: 3),
         ["service": .int(1), "request": .int(3), "characteristics": .array([.object([
            "uuid": .string(BluetoothUUID(0x2A37).description), "declaration": .int(2), "handle": .int(3), "properties": .int(0x12)])])]),
        (.answer(.descriptorsDiscovered(characteristic: 3, [EmulatedDatabase.Descriptor(handle: 4, uuid: BluetoothUUID(0x2902))], error: 0x01), request: 4),
         ["characteristic": .int(3), "request": .int(4), "att_error": .int(1),
          "descriptors": .array([.object(["uuid": .string(BluetoothUUID(0x2902).description), "handle": .int(4)])])]),
        (.answer(.read(handle: 3, value: [0x16, 0x48], error: nil, frame: 41), request: 5),
         ["handle": .int(3), "value": .string("1648"), "frame": .int(41), "request": .int(5)]),
        (.answer(.read(handle: 3, value: nil, error: 0x02, frame: nil), request: 6), ["handle": .int(3), "att_error": .int(2), "request": .int(6)]),
        (.answer(.written(handle: 9, error: nil, frame: 50), request: 7), ["handle": .int(9), "frame": .int(50), "request": .int(7)]),
        (.answer(.written(handle: 9, error: 0x03, frame: nil), request: nil), ["handle": .int(9), "att_error": .int(3)]),
        (.answer(.notificationState(handle: 3, enabled: true, error: nil), request: 8), ["handle": .int(3), "enabled": .bool(true), "request": .int(8)]),
        (.link(.rssi(-71)), ["rssi": .int(-71)]),
        (.link(.rssi(nil)), [:]),
        (.link(.unanswered("no recorded answer: read from the database")), ["detail": .string("no recorded answer: read from the database")]),
        (.link(.misuse("read before connecting")), ["detail": .string("read before connecting")]),
    ]

    @Test(arguments: 0..<cases.count)
    func everyLinkEventWritesTheFieldsItsDictionaryWrote(_ index: Int) throws {
        let (source, dictionary) = Self.cases[index]
        try expectPayloadEventIsItsDictionary(Self.fields(source), dictionary)
    }

    /// What the line does not carry (an advertisement's capture time, a service's characteristics)
    /// does not make two events with the same line differ.
    @Test func eventsDifferingOnlyInUnwrittenValuesAreEqual() {
        var later = Self.advertisement(rssi: nil, scanResponse: false, data: [])
        later.timeNs = 9_999
        later.frame = 8
        let one = Self.fields(.advertisement(Self.advertisement(rssi: nil, scanResponse: false, data: []), AdvertisingData([]),
                                             synthesized: true, peripheral: Self.peripheral))
        let other = Self.fields(.advertisement(later, AdvertisingData([]), synthesized: true, peripheral: Self.peripheral))
        #expect(one == other)
        #expect(one.hashValue == other.hashValue)
        var richer = Self.service
        richer.characteristics = [EmulatedDatabase.Characteristic(declarationHandle: 2, valueHandle: 3, properties: 0x02, uuid: Self.battery, descriptors: [])]
        #expect(Self.fields(.answer(.servicesDiscovered([Self.service], error: nil), request: 1))
                == Self.fields(.answer(.servicesDiscovered([richer], error: nil), request: 1)))
        #expect(Self.fields(.answer(.servicesDiscovered([Self.service], error: nil), request: 1))
                != Self.fields(.answer(.servicesDiscovered([Self.service], error: nil), request: 2)))
    }
}
