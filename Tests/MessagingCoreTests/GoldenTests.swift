import Testing
@testable import MessagingCore
import MonkeyC

/// Whole exchanges compared byte for byte with sequences worked out by hand from docs/connectiq-link.md.
/// The ciphertext and CRC were computed independently: XXTEA with the PyPI `xxtea` package, the
/// CRC with a separate bitwise Python CRC-16/ARC.
@Suite struct GoldenTests {
    static let uuid = "0180e5205f7e11e498030800200c9a66"

    @Test func encryptedSendOfTheNumberThree() throws {
        let keys = try ScriptedKeySource(keys: [Array(0..<16)], fallbackSeed: 0)
        var rig = Rig(keySource: keys)
        let send = rig.send(3)
        // Serialized: da7ada7a 00000005 01 00000003 (13 bytes), padded to 16, XXTEA with key 00 01 … 0f.
        #expect(rig.writes.map { hexString($0.bytes) } == [
            "0001" + Self.uuid + "01",                              // connect, force open
            "f105" + "000102030405060708090a0b0c0d0e0f" + "00",     // key on connection 1, isResponse 0
            "f10002" + "10000000",                                  // first: encrypted, 16 bytes
            "01" + "6df729f45245b0eac0e56637f0db1154",              // data seq 0 conn 1
            "f10100" + "fa16",                                      // last seq 0, CRC 0x16FA little-endian
        ])
        #expect(rig.notifications.map { hexString($0.bytes) } == [
            "000100" + Self.uuid + "0100",                          // connect success, conn 1, no large packets
            "f1020500" + "00",                                      // ack key
            "f1020000" + "00",                                      // ack first
            "f1020200" + "00",                                      // ack last, seq 0
        ])
        #expect(rig.events == [
            .connectionOpened(echoOnA, connection: 1, largePackets: false, byWatch: false),
            .progress(send, echoOnA, sent: 0, total: 16),
            .progress(send, echoOnA, sent: 16, total: 16),
            .completion(send, echoOnA, .success),
        ])
    }

    @Test func plainSendOfTheNumberThree() throws {
        var rig = Rig(configuration: MessagingConfiguration(encryptOutgoing: false))
        rig.send(3)
        #expect(rig.writes.map { hexString($0.bytes) } == [
            "0001" + Self.uuid + "01",
            "f10000" + "0d000000",                                  // first: plain, 13 bytes
            "01" + "da7ada7a000000050100000003",                    // data seq 0 conn 1
            "f10100" + "a878",                                      // last seq 0, CRC 0x78A8
        ])
    }

    @Test func secondMessageReusesTheConnectionWithTheNextKey() throws {
        let keys = try ScriptedKeySource(keys: [Array(0..<16), Array(repeating: 0, count: 16)], fallbackSeed: 0)
        var rig = Rig(keySource: keys)
        rig.send(3)
        rig.clearLogs()
        rig.send(.array([]))
        // [] serializes to da7ada7a 00000005 05 00000000 (13 bytes).
        let ciphertext = try XXTEA.encrypt(hex("da7ada7a000000050500000000"), key: Array(repeating: 0, count: 16))
        #expect(rig.writes.map { hexString($0.bytes) } == [
            "f105" + String(repeating: "00", count: 16) + "00",
            "f10002" + "10000000",
            "01" + hexString(ciphertext),
            "f10100" + Misbehaviour.crcHex(ciphertext),
        ])
    }
}

@Suite struct KeySourceTests {
    @Test func seededKeysRepeatForTheSameSeed() {
        var first = SeededKeySource(seed: 42), second = SeededKeySource(seed: 42), other = SeededKeySource(seed: 43)
        let keys = (0..<3).map { _ in first.nextKey() }
        #expect(keys == (0..<3).map { _ in second.nextKey() })
        #expect(keys[0] != other.nextKey())
        #expect(keys.allSatisfy { $0.count == 16 })
        #expect(Set(keys).count == 3)
    }

    @Test func scriptedKeysComeInOrderThenTheFallback() throws {
        var source = try ScriptedKeySource(keys: [Array(repeating: 1, count: 16), Array(repeating: 2, count: 16)], fallbackSeed: 9)
        var fallback = SeededKeySource(seed: 9)
        #expect(source.nextKey() == Array(repeating: 1, count: 16))
        #expect(source.remainingScriptedKeys == 1)
        #expect(source.nextKey() == Array(repeating: 2, count: 16))
        #expect(source.nextKey() == fallback.nextKey())
    }

    @Test func scriptedKeyOfTheWrongLengthIsRefused() {
        #expect(throws: KeySourceError.wrongKeyLength(index: 1, count: 3)) {
            try ScriptedKeySource(keys: [Array(repeating: 1, count: 16), [1, 2, 3]], fallbackSeed: 0)
        }
    }

    @Test func systemKeysAreSixteenBytes() {
        var source = SystemKeySource()
        #expect(source.nextKey().count == 16)
    }
}
