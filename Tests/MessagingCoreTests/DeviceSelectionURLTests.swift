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

    /// A bad URL and the error that names its problem.
    struct BadURL: Sendable, CustomTestStringConvertible {
        let url: String
        let error: DeviceSelectionURLError
        var testDescription: String { "\(error)" }
    }

    static let badURLs: [BadURL] = [
        BadURL(url: "device-select-resp?d0ID=x", error: .notAURL),
        BadURL(url: "a://other?d0ID=\(watchA)", error: .wrongHost("other")),
        BadURL(url: "a://device-select-resp?d0ID=\(watchA)&d1Name=x", error: .missingDeviceID(index: 1)),
        BadURL(url: "a://device-select-resp?d0ID=nope", error: .invalidDeviceID(index: 0, "nope")),
        BadURL(url: "a://device-select-resp?d0ID=\(watchA)&d0Name=a&d0Name=b", error: .duplicateQueryItem("d0Name")),
        BadURL(url: "a://device-select-resp?d0ID=\(watchA)&d1ID=\(watchA)", error: .duplicateDevice(watchA)),
        BadURL(url: "a://device-select-resp?d0ID=\(watchA)&d0Name=%4", error: .badPercentEncoding("d0Name=%4")),
        BadURL(url: "a://device-select-resp?d0ID=\(watchA)&d0Name=%FF", error: .invalidUTF8("d0Name=%FF")),
    ]

    @Test(arguments: badURLs)
    func badURLThrowsTheErrorNamingItsProblem(_ sample: BadURL) {
        #expect(throws: sample.error) { try DeviceSelectionURL.parse(sample.url) }
    }

    @Test func badEncodingInAnItemThatIsNotADeviceIsIgnored() throws {
        #expect(try DeviceSelectionURL.parse("a://device-select-resp?ciqApp=%ZZ&d0ID=\(watchA)").map(\.uuid) == [watchA])
    }
}
