import Testing
import MessagingCore

@Suite struct DeviceSelectionURLTests {
    static let example = "exapp-123456://device-select-resp?ciqApp=Connect&ciqBundle=com.garmin.connect.mobile&ciqScheme"
        + "&ciqSdkVersion=10000&sourceUrlHost&d0ID=A6230408-B526-A5D6-8929-7791342EB4AF&d0Model=fenix%205&d0Name=garsim01"

    @Test func readsTheQueryItemsGarminConnectSends() throws {
        #expect(try DeviceSelectionURL.parse(Self.example) == [deviceA])
    }

    @Test func devicesComeOutInIndexOrder() throws {
        let url = "a://device-select-resp?d10ID=\(watchC)&d10Name=c&d2ID=\(watchB)&d2Model=m%C3%A9&d0ID=\(watchA)"
        let devices = try DeviceSelectionURL.parse(url)
        #expect(devices.map(\.uuid) == [watchA, watchB, watchC])
        #expect(devices[1].modelName == "mé")
        #expect(devices[0].modelName == "" && devices[0].friendlyName == "")
    }

    @Test func aSelectionOfNoDevicesIsEmpty() throws {
        #expect(try DeviceSelectionURL.parse("a://device-select-resp?ciqApp=Connect").isEmpty)
        #expect(try DeviceSelectionURL.parse("a://device-select-resp").isEmpty)
    }

    @Test func madeURLsParseBack() throws {
        let devices = [deviceA, IQDevice(uuid: watchB, modelName: "a b&c=d", friendlyName: "ü+%")]
        #expect(try DeviceSelectionURL.parse(DeviceSelectionURL.make(scheme: "rig", devices: devices)) == devices)
    }

    @Test func problemsAreNamed() {
        #expect(throws: DeviceSelectionURLError.notAURL) { try DeviceSelectionURL.parse("device-select-resp?d0ID=x") }
        #expect(throws: DeviceSelectionURLError.wrongHost("other")) { try DeviceSelectionURL.parse("a://other?d0ID=\(watchA)") }
        #expect(throws: DeviceSelectionURLError.missingDeviceID(index: 1)) {
            try DeviceSelectionURL.parse("a://device-select-resp?d0ID=\(watchA)&d1Name=x")
        }
        #expect(throws: DeviceSelectionURLError.invalidDeviceID(index: 0, "nope")) { try DeviceSelectionURL.parse("a://device-select-resp?d0ID=nope") }
        #expect(throws: DeviceSelectionURLError.duplicateQueryItem("d0Name")) {
            try DeviceSelectionURL.parse("a://device-select-resp?d0ID=\(watchA)&d0Name=a&d0Name=b")
        }
        #expect(throws: DeviceSelectionURLError.duplicateDevice(watchA)) {
            try DeviceSelectionURL.parse("a://device-select-resp?d0ID=\(watchA)&d1ID=\(watchA)")
        }
        #expect(throws: DeviceSelectionURLError.badPercentEncoding("d0Name=%4")) {
            try DeviceSelectionURL.parse("a://device-select-resp?d0ID=\(watchA)&d0Name=%4")
        }
        #expect(throws: DeviceSelectionURLError.invalidUTF8("d0Name=%FF")) {
            try DeviceSelectionURL.parse("a://device-select-resp?d0ID=\(watchA)&d0Name=%FF")
        }
    }
}
