import CaptureSet
import Dissectors
import Testing

/// The manifest's UUID check (CaptureSet) and the UUID parser (Dissectors) are written apart; a
/// set that loads must name its handles, so the two must accept the same texts.
struct GATTHandleNameTests {
    static let texts = [
        "0x2a37", "2a37", "0X2A37", "0x12345678", "12345678", "6a4ecd28-667b-11e3-949a-0800200c9a66",
        "6A4ECD28-667B-11E3-949A-0800200C9A66", "0x6a4ecd28-667b-11e3-949a-0800200c9a66",
        "", "0x", "0x2a3", "0x2a377", "0x2a3g", "６a4e", "6a4ecd28667b11e3949a0800200c9a66",
        "6a4ecd28-667b-11e3-949a-0800200c9a6", "6a4ecd28-667b-11e3-949a_0800200c9a66", "heart-rate",
    ]

    @Test("the manifest check accepts exactly the texts BluetoothUUID parses", arguments: texts)
    func manifestCheckAgreesWithTheParser(text: String) {
        #expect(ManifestGATTHandle.isUUIDText(text) == (BluetoothUUID(text) != nil))
    }

    @Test("a table of names keeps the first entry of a handle and parses each text")
    func tableKeepsFirstEntryOfAHandle() {
        let table = GATTHandleName.table([
            (handle: 18, service: "0x180d", characteristic: "0x2a37"),
            (handle: 18, service: nil, characteristic: "0x2a38"),
            (handle: 21, service: nil, characteristic: "0x2a39"),
        ])
        #expect(table[18] == GATTHandleName(service: BluetoothUUID(0x180D), characteristic: BluetoothUUID(0x2A37)))
        #expect(table[21] == GATTHandleName(characteristic: BluetoothUUID(0x2A39)))
    }
}
