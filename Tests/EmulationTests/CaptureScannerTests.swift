import CaptureKit
import Dissectors
import Emulation
import Foundation
import Testing

@Suite struct CaptureScannerTests {
    static let sensor: [UInt8] = [0x01, 0x00, 0x00, 0x00, 0xE0, 0xF0]  // F0:E0:00:00:00:01

    /// A phone-side session: advertising, connection, discovery, a write answered by a notification.
    static func session() -> [CaptureFrame] {
        let ad: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0x09] + Array("Band".utf8) + [0x03, 0x03, 0x0D, 0x18]
        return Frames.capture([
            (Frames.advertisingReport(address: sensor, data: ad), 0),
            (Frames.connected(address: sensor), 1_000_000),
            (Frames.att(Frames.serviceDiscoveryRequest(from: 1), received: false), 2_000_000),
            (Frames.att(Frames.serviceDiscoveryResponse([(0x0010, 0xFFFF, 0x180D)]), received: true), 3_000_000),
            (Frames.att(Frames.characteristicDiscoveryRequest(0x0010, 0xFFFF), received: false), 4_000_000),
            (Frames.att(Frames.characteristicDiscoveryResponse([(0x0011, 0x10, 0x0012, 0x2A37), (0x0014, 0x08, 0x0015, 0x2A39)]), received: true), 5_000_000),
            (Frames.att(Frames.findInformationRequest(0x0013, 0x0013), received: false), 6_000_000),
            (Frames.att(Frames.findInformationResponse([(0x0013, 0x2902)]), received: true), 7_000_000),
            (Frames.att(Frames.writeRequest(0x0015, [0x01]), received: false), 8_000_000),
            (Frames.att(Frames.writeResponse, received: true), 9_000_000),
            (Frames.att(Frames.notification(0x0012, [0x00, 0x48]), received: true), 20_000_000),
            (Frames.disconnected(), 30_000_000),
        ])
    }

    @Test func theClientIsTheSideThatSendsRequests() throws {
        let peripheral = try CaptureScanner.scan(frames: Self.session(), linkType: .bluetoothHCIH4WithPHDR)
        let write = try #require(peripheral.pdus.first { $0.opcode == 0x12 })
        let notification = try #require(peripheral.pdus.first { $0.opcode == 0x1B })
        #expect(write.fromClient)
        #expect(!notification.fromClient)
    }

    @Test func discoveryIsKeptAfterTheConnectionEnds() throws {
        let peripheral = try CaptureScanner.scan(frames: Self.session(), linkType: .bluetoothHCIH4WithPHDR)
        #expect(peripheral.discovered.services[0x0010]?.endHandle == 0xFFFF)
        #expect(peripheral.discovered.characteristics.keys.sorted() == [0x0011, 0x0014])
        #expect(peripheral.discovered.attributeTypes[0x0013] == .clientCharacteristicConfiguration)
    }

    @Test func advertisingGivesTheNameServicesAndAddress() throws {
        let peripheral = try CaptureScanner.scan(frames: Self.session(), linkType: .bluetoothHCIH4WithPHDR)
        #expect(peripheral.name == "Band")
        #expect(peripheral.advertisedServices == [BluetoothUUID(0x180D)])
        #expect(peripheral.address == "F0:E0:00:00:00:01")
    }

    @Test func thePlanAnswersTheWriteWithTheRecordedNotificationAndDelay() throws {
        let peripheral = try CaptureScanner.scan(frames: Self.session(), linkType: .bluetoothHCIH4WithPHDR)
        let plan = try EmulationPlan(peripheral: peripheral, file: "x")
        // Recorded on the central: 12 ms after the write, less the 1 ms Write Request → Response.
        #expect(peripheral.recordedAtCentral)
        #expect(plan.script.writes.map(\.answers) == [[RecordedAnswer(handle: 0x0012, value: [0x00, 0x48], delayNs: 11_000_000, frame: 11)]])
        #expect(plan.staticAddress == "F0:E0:00:00:00:01")
    }

    @Test func hciWithoutATTIsRefusedNamingTheFile() {
        let frames = Frames.capture([(Frames.connected(), 0), (Frames.disconnected(), 1)])
        #expect(throws: EmulationError.noGATTTraffic(file: "band.btsnoop", frames: 2)) {
            try CaptureScanner.scan(frames: frames, linkType: .bluetoothHCIH4WithPHDR, name: "band.btsnoop")
        }
    }

    @Test func aSetWithoutBluetoothIsRefusedWithTheLinkTypesFound() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let set = root.appendingPathComponent("Captures/plugin-clean").path
        do {
            _ = try CaptureScanner.scan(setPath: set)
            Issue.record("a UDP-only set was accepted")
        } catch {
            guard case .noBluetoothInterface(_, let linkTypes) = error else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(!linkTypes.isEmpty)
            #expect(error.description.contains("tether import"))
        }
    }
}
