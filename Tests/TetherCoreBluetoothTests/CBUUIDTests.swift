import Testing
@testable import TetherCoreBluetooth

/// The spellings of the Heart Rate service's UUID an app or a recording may use.
private let heartRateSpellings = [
    "180D", "180d", "0x180D", "0X180d", "0000180D",
    "0000180D-0000-1000-8000-00805F9B34FB", "0000180d-0000-1000-8000-00805f9b34fb",
]

@Test(arguments: heartRateSpellings)
func everySpellingOfABaseUUIDEqualsTheSixteenBitForm(_ spelling: String) {
    #expect(CBUUID(string: spelling) == CBUUID(string: "180D"))
    #expect(CBUUID(string: spelling).isEqual(CBUUID(string: "180D")))
}

@Test(arguments: heartRateSpellings)
func equalSpellingsHashAlike(_ spelling: String) {
    #expect(CBUUID(string: spelling).hash == CBUUID(string: "180D").hash)
    #expect(CBUUID(string: spelling).hashValue == CBUUID(string: "180D").hashValue)
}

@Test func theSpellingsOfOneUUIDAreOneSetElement() {
    let set = Set(heartRateSpellings.map { CBUUID(string: $0) })
    #expect(set.count == 1)
}

@Test func aDictionaryKeyedByOneSpellingIsFoundByAnother() {
    let handlers = [CBUUID(string: "0x180D"): "heart rate", CBUUID(string: "180F"): "battery"]
    #expect(handlers[CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FB")] == "heart rate")
    #expect(handlers[CBUUID(data: Data([0x18, 0x0F]))] == "battery")
}

@Test func differentUUIDsAreUnequal() {
    #expect(CBUUID(string: "180D") != CBUUID(string: "180F"))
    // One bit off the Bluetooth base UUID: a vendor UUID, not 0x180D.
    #expect(CBUUID(string: "180D") != CBUUID(string: "0000180D-0000-1000-8000-00805F9B34FA"))
    #expect(!CBUUID(string: "180D").isEqual("180D"))
}

@Test(arguments: [
    ("180d", "180D"),
    ("0x180D", "180D"),
    ("12345678", "12345678"),
    ("0x0000180D", "0000180D"),
    ("68753a44-4d6f-1226-9c60-0050e4c00067", "68753A44-4D6F-1226-9C60-0050E4C00067"),
    ("0000180D-0000-1000-8000-00805F9B34FB", "0000180D-0000-1000-8000-00805F9B34FB"),
])
func uuidStringKeepsTheFormItWasMadeFrom(_ spelling: String, _ expected: String) {
    #expect(CBUUID(string: spelling).uuidString == expected)
}

@Test(arguments: [
    ("180D", [0x18, 0x0D] as [UInt8]),
    ("12345678", [0x12, 0x34, 0x56, 0x78]),
    ("68753A44-4D6F-1226-9C60-0050E4C00067",
     [0x68, 0x75, 0x3A, 0x44, 0x4D, 0x6F, 0x12, 0x26, 0x9C, 0x60, 0x00, 0x50, 0xE4, 0xC0, 0x00, 0x67]),
])
func dataIsTheUUIDsBytesMostSignificantFirst(_ spelling: String, _ bytes: [UInt8]) {
    #expect(CBUUID(string: spelling).data == Data(bytes))
}

@Test(arguments: ["180D", "12345678", "68753A44-4D6F-1226-9C60-0050E4C00067"])
func dataRoundTripsThroughInitData(_ spelling: String) {
    let uuid = CBUUID(string: spelling)
    let again = CBUUID(data: uuid.data)
    #expect(again == uuid)
    #expect(again.uuidString == uuid.uuidString)
    #expect(again.data == uuid.data)
}

@Test func uuid128PlacesShortUUIDsOnTheBluetoothBase() {
    #expect(CBUUID(string: "2A37").uuid128 == UUID(uuidString: "00002A37-0000-1000-8000-00805F9B34FB"))
    #expect(CBUUID(string: "12345678").uuid128 == UUID(uuidString: "12345678-0000-1000-8000-00805F9B34FB"))
}

@Test func nsuuidGivesTheSame128BitUUID() {
    let identifier = UUID()
    #expect(CBUUID(nsuuid: identifier).uuid128 == identifier)
    #expect(CBUUID(nsuuid: identifier).uuidString == identifier.uuidString.uppercased())
    #expect(CBUUID(NSUUID: identifier) == CBUUID(nsuuid: identifier))
}

@Test func attributeBytesAreLittleEndian() throws {
    let short = try #require(CBUUID.fromAttribute(littleEndian: [0x37, 0x2A]))
    #expect(short.uuidString == "2A37")
    let long = try #require(CBUUID.fromAttribute(littleEndian: [
        0x67, 0x00, 0xC0, 0xE4, 0x50, 0x00, 0x60, 0x9C, 0x26, 0x12, 0x6F, 0x4D, 0x44, 0x3A, 0x75, 0x68,
    ]))
    #expect(long.uuidString == "68753A44-4D6F-1226-9C60-0050E4C00067")
}

@Test(arguments: [[], [0x0D], [0x0D, 0x18, 0x00], [0x0D, 0x18, 0x00, 0x00]] as [[UInt8]])
func attributeBytesOfAnotherLengthGiveNil(_ bytes: [UInt8]) {
    #expect(CBUUID.fromAttribute(littleEndian: bytes) == nil)
}

@Test(arguments: [
    "", "18", "180", "180G", "xyz", "0x", "0x180", "0x180D0", " 180D", "180D ",
    "0000180D00001000800000805F9B34FB", "{68753A44-4D6F-1226-9C60-0050E4C00067}",
    "0x68753A44-4D6F-1226-9C60-0050E4C00067", "68753A44-4D6F-1226-9C60_0050E4C00067",
    "68753A44-4D6F-1226-9C60-0050E4C0006G", "+1FF", "１８０Ｄ",
])
func aMalformedStringMakesAMalformedUUIDInsteadOfTrapping(_ text: String) {
    let uuid = CBUUID(string: text)
    #expect(!uuid.isWellFormed)
    #expect(uuid.uuidString == text)
    #expect(uuid.description == text)
    #expect(uuid.data.isEmpty)
}

@Test func aMalformedUUIDEqualsNoWellFormedOne() {
    let malformed = CBUUID(string: "not-a-uuid")
    #expect(malformed != CBUUID(string: "00000000-0000-0000-0000-000000000000"))
    #expect(malformed != CBUUID(string: "0000"))
    #expect(Set([malformed, CBUUID(string: "0000")]).count == 2)
}

@Test func malformedUUIDsWithTheSameTextAreEqualIgnoringCase() {
    #expect(CBUUID(string: "xyz") == CBUUID(string: "XYZ"))
    #expect(CBUUID(string: "xyz").hash == CBUUID(string: "XYZ").hash)
    #expect(CBUUID(string: "xyz") != CBUUID(string: "xy"))
}

@Test(arguments: [0, 1, 3, 5, 8, 15, 17] as [Int])
func dataOfAnUnsupportedLengthMakesAMalformedUUID(_ length: Int) {
    let uuid = CBUUID(data: Data(repeating: 0xAB, count: length))
    #expect(!uuid.isWellFormed)
    #expect(uuid.uuidString == String(repeating: "AB", count: length))
}

@Test(arguments: [
    ("180D", "Heart Rate"),
    ("0x180F", "Battery"),
    ("2A19", "Battery Level"),
    ("2902", "Client Characteristic Configuration"),
    ("0000180A-0000-1000-8000-00805F9B34FB", "Device Information"),
    ("D0611E78-BBB4-4591-A5F8-487910AE4366", "Continuity"),
    ("2A37", "2A37"),
    ("FFF0", "FFF0"),
    ("6E400001-B5A3-F393-E0A9-E50E24DCCA9E", "6E400001-B5A3-F393-E0A9-E50E24DCCA9E"),
])
func descriptionNamesTheUUIDsIOSNames(_ spelling: String, _ expected: String) {
    #expect(CBUUID(string: spelling).description == expected)
    #expect("\(CBUUID(string: spelling))" == expected)
}

@Test func aCopyIsTheSameUUID() {
    let uuid = CBUUID(string: "180D")
    #expect(uuid.copy() as? CBUUID === uuid)
}

@Test(arguments: [
    (CBUUIDCharacteristicExtendedPropertiesString, "2900"),
    (CBUUIDCharacteristicUserDescriptionString, "2901"),
    (CBUUIDClientCharacteristicConfigurationString, "2902"),
    (CBUUIDServerCharacteristicConfigurationString, "2903"),
    (CBUUIDCharacteristicFormatString, "2904"),
    (CBUUIDCharacteristicAggregateFormatString, "2905"),
    (CBUUIDCharacteristicValidRangeString, "2906"),
    (CBUUIDCharacteristicObservationScheduleString, "2910"),
    (CBUUIDL2CAPPSMCharacteristicString, "ABDD3056-28FA-441D-A470-55A75A52553A"),
])
func descriptorConstantsHaveTheSDKsValues(_ constant: String, _ value: String) {
    #expect(constant == value)
    #expect(CBUUID(string: constant).isWellFormed)
}
