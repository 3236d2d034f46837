import Foundation
import MonkeyC
@testable import SessionCore
import Testing

@Suite struct SnapshotCodingTests {
    @Test func snapshotSurvivesAJSONRoundTrip() throws {
        var pair = Pair(seed: 82)
        pair.dropLink()
        pair.transferUserInfo(numbered(3), from: .phone, complication: true)
        try pair.act(.phone) { core, now throws(SessionError) in try core.updateApplicationContext(numbered(4), now: now) }
        let snapshot = pair.phone.core.snapshot
        let data = try JSONEncoder().encode(snapshot)
        #expect(try JSONDecoder().decode(SessionSnapshot.self, from: data) == snapshot)
    }

    @Test func aCoreRestoredFromAJSONSnapshotCarriesOn() throws {
        var pair = Pair(seed: 85)
        pair.dropLink()
        pair.transferUserInfo(numbered(5), from: .phone)
        let data = try JSONEncoder().encode(pair.phone.core.snapshot)
        pair.phone.core = try SessionCore(restoring: JSONDecoder().decode(SessionSnapshot.self, from: data),
                                          randomSource: SeededSessionRandom(seed: 5))
        pair.recover(.phone)
        pair.settle()
        #expect(pair.receivedUserInfo(.watch) == [5])
    }

    @Test func deviceIdentityDecodingRefusesGarbage() {
        #expect(throws: DecodingError.self) { try JSONDecoder().decode([SessionDeviceID].self, from: Data(#"["not-a-uuid"]"#.utf8)) }
    }
}
