import CaptureKit
import Testing
@testable import Dissectors

@Suite("ATT")
struct ATTTests {
    static let specOpcodes: [UInt8] = [
        0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x0E, 0x0F, 0x10,
        0x11, 0x12, 0x13, 0x16, 0x17, 0x18, 0x19, 0x1B, 0x1D, 0x1E, 0x20, 0x21, 0x23, 0x52, 0xD2,
    ]

    @Test("every opcode in Core Vol 3 Part F 3.4.8 has a name", arguments: specOpcodes)
    func everyOpcodeNamed(opcode: UInt8) {
        let name = ATTOpcode(rawValue: opcode).name
        #expect(ATTOpcode(rawValue: opcode).isKnown)
        #expect(!name.hasPrefix("Unknown"))
    }

    @Test("the names follow the specification")
    func namesMatchSpecification() {
        #expect(ATTOpcode.errorResponse.name == "Error Response")
        #expect(ATTOpcode.readMultipleVariableResponse.name == "Read Multiple Variable Response")
        #expect(ATTOpcode.multipleHandleValueNotification.name == "Multiple Handle Value Notification")
        #expect(ATTOpcode.signedWriteCommand.name == "Signed Write Command")
        #expect(ATTOpcode.writeCommand.rawValue == 0x52)
    }

    @Test("an opcode the specification does not list is a value with a name")
    func unknownOpcodeIsAValue() {
        #expect(ATTOpcode(rawValue: 0x99).name == "Unknown Opcode 0x99")
        var dissector = FrameDissector()
        let result = dissector.dissect(attFrame(.sent, [0x99, 1, 2]), .bluetoothHCIH4WithPHDR)
        #expect(result.att.first?.opcode == ATTOpcode(rawValue: 0x99))
        #expect(result.att.first?.value == [1, 2])
        #expect(result.problem == nil)
    }

    @Test("a write request carries handle and value")
    func writeRequest() {
        var dissector = FrameDissector()
        let result = dissector.dissect(attFrame(.sent, [0x12] + le16(0x0012) + [1, 0]), .bluetoothHCIH4WithPHDR)
        #expect(result.summary == "ATT Write Request 0x0012 2 bytes")
        #expect(result.att == [ATTRecord(connectionHandle: 0x0040, direction: .sent, opcode: .writeRequest, handle: 0x0012, value: [1, 0])])
    }

    @Test("a read response takes the handle of the read request before it")
    func readResponseHandleFromRequest() {
        var dissector = FrameDissector()
        _ = dissector.dissect(attFrame(.sent, [0x0A] + le16(0x0015)), .bluetoothHCIH4WithPHDR)
        let response = dissector.dissect(attFrame(.received, [0x0B, 0x64]), .bluetoothHCIH4WithPHDR)
        #expect(response.att.first?.handle == 0x0015)
        #expect(response.att.first?.value == [0x64])
    }

    @Test("a read response with no captured request has no handle")
    func readResponseWithoutRequest() {
        var dissector = FrameDissector()
        let response = dissector.dissect(attFrame(.received, [0x0B, 0x64]), .bluetoothHCIH4WithPHDR)
        #expect(response.att.first?.handle == nil)
    }

    @Test("a read request on another connection does not lend its handle")
    func readResponseOtherConnection() {
        var dissector = FrameDissector()
        _ = dissector.dissect(attFrame(.sent, handle: 0x0041, [0x0A] + le16(0x0015)), .bluetoothHCIH4WithPHDR)
        let response = dissector.dissect(attFrame(.received, [0x0B, 0x64]), .bluetoothHCIH4WithPHDR)
        #expect(response.att.first?.handle == nil)
    }

    @Test("write response and confirmation take the handle of what they answer, as Wireshark shows")
    func answersCarryHandles() {
        var dissector = FrameDissector()
        _ = dissector.dissect(attFrame(.sent, [0x12] + le16(0x0021) + [1]), .bluetoothHCIH4WithPHDR)
        #expect(dissector.dissect(attFrame(.received, [0x13]), .bluetoothHCIH4WithPHDR).att.first?.handle == 0x0021)
        _ = dissector.dissect(attFrame(.received, [0x1D] + le16(0x0030) + [5]), .bluetoothHCIH4WithPHDR)
        #expect(dissector.dissect(attFrame(.sent, [0x1E]), .bluetoothHCIH4WithPHDR).att.first?.handle == 0x0030)
    }

    @Test("an error response carries the handle in error and names the error")
    func errorResponse() {
        var dissector = FrameDissector()
        let result = dissector.dissect(attFrame(.received, [0x01, 0x0A] + le16(0x0020) + [0x0A]), .bluetoothHCIH4WithPHDR)
        #expect(result.att.first?.handle == 0x0020)
        #expect(result.summary == "ATT Error Response 0x0020 (Read Request: Attribute Not Found)")
    }

    @Test("a signed write's value leaves out the 12-byte signature")
    func signedWrite() {
        var dissector = FrameDissector()
        let result = dissector.dissect(attFrame(.sent, [0xD2] + le16(0x0031) + [1, 2] + Array(repeating: 0xA5, count: 12)), .bluetoothHCIH4WithPHDR)
        #expect(result.att.first?.value == [1, 2])
    }

    @Test("a multiple handle value notification gives one record per value")
    func multipleNotification() {
        var dissector = FrameDissector()
        let pdu: [UInt8] = [0x23] + le16(0x0031) + le16(1) + [5] + le16(0x0032) + le16(2) + [6, 6]
        let result = dissector.dissect(attFrame(.received, pdu), .bluetoothHCIH4WithPHDR)
        #expect(result.att.map(\.handle) == [0x0031, 0x0032])
        #expect(result.att.map(\.value) == [[5], [6, 6]])
    }

    @Test("an exchange MTU request shows the MTU")
    func exchangeMTU() {
        var dissector = FrameDissector()
        #expect(dissector.dissect(attFrame(.sent, [0x02] + le16(517)), .bluetoothHCIH4WithPHDR).summary == "ATT Exchange MTU Request MTU 517")
    }

    @Test("a notification too short for its handle is a problem at a frame offset")
    func truncatedNotification() {
        var dissector = FrameDissector()
        let result = dissector.dissect(attFrame(.received, [0x1B, 0x10]), .bluetoothHCIH4WithPHDR)
        #expect(result.att.isEmpty)
        #expect(result.problemDescription?.hasPrefix("ATT: at frame offset 13: expected 3 bytes of Handle Value Notification") == true)
    }
}

@Suite("GATT discovery")
struct GATTTests {
    static let service = "12345678-1234-5678-1234-56789abcdef0"
    static let characteristic = "6a4ecd28-0000-1000-8000-001234567890"

    /// Primary services, characteristics of the first, descriptors of its characteristic.
    func discover(_ dissector: inout FrameDissector) {
        let frames: [[UInt8]] = [
            attFrame(.sent, [0x10] + le16(0x0001) + le16(0xFFFF) + le16(0x2800)),
            attFrame(.received, [0x11, 20] + le16(0x0010) + le16(0x0020) + uuidLE(Self.service)),
            attFrame(.sent, [0x10] + le16(0x0021) + le16(0xFFFF) + le16(0x2800)),
            attFrame(.received, [0x11, 6] + le16(0x0021) + le16(0x0030) + le16(0x180D)),
            attFrame(.sent, [0x08] + le16(0x0010) + le16(0x0020) + le16(0x2803)),
            attFrame(.received, [0x09, 21] + le16(0x0011) + [0x12] + le16(0x0012) + uuidLE(Self.characteristic)),
            attFrame(.sent, [0x08] + le16(0x0021) + le16(0x0030) + le16(0x2803)),
            attFrame(.received, [0x09, 7] + le16(0x0022) + [0x10] + le16(0x0023) + le16(0x2A37)),
            attFrame(.sent, [0x04] + le16(0x0013) + le16(0x0020)),
            attFrame(.received, [0x05, 0x01] + le16(0x0013) + le16(0x2902)),
        ]
        for frame in frames {
            let result = dissector.dissect(frame, .bluetoothHCIH4WithPHDR)
            #expect(result.problem == nil, "\(result.summary)")
        }
    }

    @Test("a notification handle maps to its 128-bit service and characteristic, reversed from little-endian")
    func notificationMapsToUUIDs() {
        var dissector = FrameDissector()
        discover(&dissector)
        let result = dissector.dissect(attFrame(.received, [0x1B] + le16(0x0012) + [1, 2, 3]), .bluetoothHCIH4WithPHDR)
        #expect(result.att.first?.serviceUUID == BluetoothUUID(Self.service))
        #expect(result.att.first?.characteristicUUID == BluetoothUUID(Self.characteristic))
        #expect(result.summary == "ATT Handle Value Notification 0x0012 (6a4ecd28-…) 3 bytes")
    }

    @Test("16-bit UUIDs are shown as 0x180d and 0x2a37")
    func shortUUIDs() {
        var dissector = FrameDissector()
        discover(&dissector)
        let record = dissector.dissect(attFrame(.received, [0x1B] + le16(0x0023) + [0, 72]), .bluetoothHCIH4WithPHDR).att.first
        #expect(record?.serviceUUID?.description == "0x180d")
        #expect(record?.characteristicUUID?.description == "0x2a37")
    }

    @Test("a CCCD write maps to the descriptor and its characteristic")
    func cccdMapsToCharacteristic() {
        var dissector = FrameDissector()
        discover(&dissector)
        let result = dissector.dissect(attFrame(.sent, [0x12] + le16(0x0013) + [1, 0]), .bluetoothHCIH4WithPHDR)
        #expect(result.att.first?.descriptorUUID == BluetoothUUID("0x2902"))
        #expect(result.att.first?.characteristicUUID == BluetoothUUID(Self.characteristic))
        #expect(result.summary == "ATT Write Request 0x0013 (0x2902 of 6a4ecd28-…) 2 bytes")
    }

    @Test("a handle outside every discovered service has no UUIDs")
    func unknownHandle() {
        var dissector = FrameDissector()
        discover(&dissector)
        let record = dissector.dissect(attFrame(.received, [0x1B] + le16(0x0050) + [1]), .bluetoothHCIH4WithPHDR).att.first
        #expect(record?.serviceUUID == nil)
    }

    @Test("the GATT database is per connection")
    func perConnection() {
        var dissector = FrameDissector()
        discover(&dissector)
        let record = dissector.dissect(attFrame(.received, handle: 0x0041, [0x1B] + le16(0x0012) + [1]), .bluetoothHCIH4WithPHDR).att.first
        #expect(record?.characteristicUUID == nil)
    }

    @Test("Disconnection Complete forgets the connection's GATT database")
    func disconnectionForgetsDatabase() {
        var dissector = FrameDissector()
        discover(&dissector)
        _ = dissector.dissect(phdr(.received, hciEvent(0x05, [0] + le16(0x0040) + [0x13])), .bluetoothHCIH4WithPHDR)
        let record = dissector.dissect(attFrame(.received, [0x1B] + le16(0x0012) + [1]), .bluetoothHCIH4WithPHDR).att.first
        #expect(record?.characteristicUUID == nil)
    }

    @Test("primary service discovery by UUID (Find By Type Value) records the service")
    func findByTypeValue() {
        var dissector = FrameDissector()
        _ = dissector.dissect(attFrame(.sent, [0x06] + le16(0x0001) + le16(0xFFFF) + le16(0x2800) + le16(0x180F)), .bluetoothHCIH4WithPHDR)
        _ = dissector.dissect(attFrame(.received, [0x07] + le16(0x0040) + le16(0x0045)), .bluetoothHCIH4WithPHDR)
        let record = dissector.dissect(attFrame(.received, [0x1B] + le16(0x0042) + [90]), .bluetoothHCIH4WithPHDR).att.first
        #expect(record?.serviceUUID == BluetoothUUID("0x180f"))
    }

    @Test("a 128-bit UUID inside the Bluetooth base is shown short")
    func baseUUIDShortened() {
        let uuid = BluetoothUUID(littleEndian: uuidLE("0000180d-0000-1000-8000-00805f9b34fb"))
        #expect(uuid?.description == "0x180d")
        #expect(BluetoothUUID(littleEndian: [1, 2, 3]) == nil)
    }

    @Test("a UUID's two words, its bytes and its text say the same 128 bits")
    func uuidWordsBytesAndTextAgree() throws {
        let text = "6a4ecd28-667b-11e3-949a-0800200c9a66"
        let uuid = try #require(BluetoothUUID(text))
        #expect(uuid == BluetoothUUID(high: 0x6a4ecd28_667b_11e3, low: 0x949a_0800200c9a66))
        #expect(uuid.bytes == uuidLE(text).reversed())
        #expect(BluetoothUUID(bigEndian: uuid.bytes) == uuid)
        #expect(BluetoothUUID(littleEndian: uuidLE(text)) == uuid)
        #expect(uuid.description == text)
        #expect(uuid.abbreviated == "6a4ecd28-…")
        #expect(BluetoothUUID(0x2A37).bytes == [0x00, 0x00, 0x2A, 0x37, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0x80, 0x5F, 0x9B, 0x34, 0xFB])
        #expect(BluetoothUUID(littleEndian: [0x37, 0x2A]) == BluetoothUUID(0x2A37))
        #expect(BluetoothUUID(littleEndian: [0x78, 0x56, 0x34, 0x12])?.description == "0x12345678")
    }
}

@Suite("GATT databases from outside the capture")
struct GivenDatabaseTests {
    @Test("UUID text parses in the forms a manifest writes", arguments: [
        ("0x180D", "0x180d"), ("2a37", "0x2a37"), ("0x12345678", "0x12345678"),
        ("6A4ECD28-0000-1000-8000-001234567890", "6a4ecd28-0000-1000-8000-001234567890"),
        ("0000180d-0000-1000-8000-00805f9b34fb", "0x180d"),
    ])
    func uuidText(text: String, canonical: String) {
        #expect(BluetoothUUID(text)?.description == canonical)
    }

    @Test("UUID text that is not a UUID is refused", arguments: ["", "0x18", "xyz1", "6a4ecd28000010008000001234567890ab", "6a4ecd28-0000-1000-8000-00123456789g"])
    func badUUIDText(text: String) {
        #expect(BluetoothUUID(text) == nil)
    }

    @Test("a database given for a connection names its handles without discovery")
    func givenDatabase() throws {
        var database = GATTDatabase()
        let service = try #require(BluetoothUUID("0x180d"))
        let characteristic = try #require(BluetoothUUID("0x2a37"))
        database.addService(.init(startHandle: 0x0020, endHandle: 0x0030, uuid: service))
        database.addCharacteristic(.init(declarationHandle: 0x0021, valueHandle: 0x0022, properties: 0x10, uuid: characteristic))
        var dissector = FrameDissector()
        dissector.setGATTDatabase(database, connectionHandle: 0x0040)
        let record = dissector.dissect(attFrame(.received, [0x1B] + le16(0x0022) + [0, 60]), .bluetoothHCIH4WithPHDR).att.first
        #expect(record?.serviceUUID == BluetoothUUID("0x180d"))
        #expect(record?.characteristicUUID == BluetoothUUID("0x2a37"))
        #expect(dissector.gattDatabase(connectionHandle: 0x0040) == database)
    }
}

@Suite("Link types Tether does not dissect")
struct UndissectedLinkTypeTests {
    @Test("an LE link-layer frame gets a summary and a problem saying it is not dissected")
    func leLinkLayer() {
        var dissector = FrameDissector()
        let result = dissector.dissect([0xD6, 0xBE, 0x89, 0x8E, 0, 0], .bluetoothLELL)
        #expect(result.problem?.kind == .linkTypeNotDissected(.bluetoothLELL))
        #expect(result.problemDescription == "link type BLUETOOTH_LE_LL (251) is not dissected by Tether")
        #expect(result.att.isEmpty && result.udp == nil)
    }

    @Test("the UDP fast path says an HCI frame is not UDP")
    func hciIsNotUDP() {
        var extractor = UDPExtractor()
        #expect(extractor.datagram(phdr(.sent, hciCommand(0x0C03, [])), .bluetoothHCIH4WithPHDR) == .notUDP)
    }
}

@Suite("A real Bumble session")
struct BumbleSessionTests {
    func dissectAll() -> [(Int, DissectedFrame)] {
        var dissector = FrameDissector()
        return BumbleSession.frames.enumerated().map { index, bytes in
            (index + 1, dissector.dissect(captureFrame(bytes, number: index + 1), linkType: .bluetoothHCIH4WithPHDR))
        }
    }

    @Test("every frame dissects without a problem")
    func noProblems() {
        let problems = dissectAll().compactMap { number, frame in frame.problemDescription.map { "\(number): \($0)" } }
        #expect(problems.isEmpty)
    }

    @Test("opcodes and handles of data, read/write and error PDUs match tshark's")
    func matchesTshark() {
        let ours = dissectAll().flatMap { number, frame in
            frame.att.filter { [0x0A, 0x0B, 0x12, 0x13, 0x1B, 0x1D, 0x1E, 0x52, 0x01].contains($0.opcode.rawValue) }
                .map { "\(number) \($0.opcode.rawValue) \($0.handle.map(String.init) ?? "nil")" }
        }
        let theirs = BumbleSession.tsharkATT.map { "\($0.frame) \($0.opcode) \($0.handle)" }
        #expect(ours == theirs)
    }

    @Test("the fragmented 100-byte write completes on its fourth fragment, mapped to its characteristic")
    func fragmentedWrite() {
        let frames = dissectAll()
        let write = frames.first { $0.1.att.first?.opcode == .writeRequest && $0.1.att.first?.value.count == 100 }
        #expect(write?.0 == 92)
        #expect(frames[88].1.summary == "ACL fragment handle 0x0001 (27 of 107 bytes)")
        #expect(write?.1.att.first?.characteristicUUID == BluetoothUUID("6a4ecd28-0000-1000-8000-001234567890"))
        #expect(write?.1.att.first?.serviceUUID == BluetoothUUID("12345678-1234-5678-1234-56789abcdef0"))
    }
}
