import Dissectors
@testable import MessagingIntegration
@testable import SessionIntegration
import SessionCore
import Testing

// The link UUIDs the classifiers compare are held as two words each; these tests hold them to the
// texts the specifications of the links publish.

@Suite struct ConnectIQGATTTests {
    @Test func theWordsAreTheUUIDsOfDocsConnectIQLink() {
        // docs/connectiq-link.md, "GATT": current, then legacy.
        #expect(ConnectIQGATT.services.map(\.description) == ["6a4e8022-667b-11e3-949a-0800200c9a66", "16aa8022-3769-4c74-a755-877dde3a2930"])
        #expect(ConnectIQGATT.writeCharacteristics.map(\.description) == ["6a4e4c80-667b-11e3-949a-0800200c9a66", "df334c80-e6a7-d082-274d-78fc66f85e16"])
        #expect(ConnectIQGATT.notifyCharacteristics.map(\.description) == ["6a4ecd28-667b-11e3-949a-0800200c9a66", "4acbcd28-7425-868e-f447-915c8f00d0cb"])
    }

    @Test func writeAndNotifyAreToldApart() {
        #expect(ConnectIQGATT.writeCharacteristics.allSatisfy(ConnectIQGATT.isWriteCharacteristic))
        #expect(!ConnectIQGATT.notifyCharacteristics.contains(where: ConnectIQGATT.isWriteCharacteristic))
        #expect(ConnectIQGATT.notifyCharacteristics.allSatisfy(ConnectIQGATT.isNotifyCharacteristic))
    }
}

@Suite struct SessionLinkUUIDsTests {
    @Test func theWordsAreTheTextsSessionCorePublishes() {
        #expect(SessionLinkUUIDs.write == BluetoothUUID(SessionLinkGATT.writeCharacteristic))
        #expect(SessionLinkUUIDs.notify == BluetoothUUID(SessionLinkGATT.notifyCharacteristic))
    }
}
