import Foundation
import Testing
import MessagingCore
import TetherTestSupport

/// A vector produced with the PyPI package `xxtea` (a C implementation), as
/// `xxtea.encrypt(plaintext, key, padding=False).hex()`.
struct XXTEAVector: Sendable, CustomTestStringConvertible {
    let plaintext: String
    let key: String
    let ciphertext: String
    var testDescription: String { "\(plaintext.count / 2) bytes" }

    static let reference: [XXTEAVector] = [
        XXTEAVector(plaintext: "0000000000000000", key: "00000000000000000000000000000000", ciphertext: "ab043705808c5d57"),
        XXTEAVector(plaintext: "0001020304050607", key: "000102030405060708090a0b0c0d0e0f", ciphertext: "1f6acf9e18e5c6cf"),
        XXTEAVector(plaintext: "101112131415161718191a1b1c1d1e1f20212223", key: "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff",
                    ciphertext: "5dc834967e52900fc67f000e7231c46b87e8055e"),
        // The serialized value 3, zero-padded to 16 bytes.
        XXTEAVector(plaintext: "da7ada7a000000050100000003000000", key: "000102030405060708090a0b0c0d0e0f",
                    ciphertext: "6df729f45245b0eac0e56637f0db1154"),
    ]
}


@Suite struct XXTEATests {
    @Test(arguments: XXTEAVector.reference)
    func encryptMatchesTheReference(_ vector: XXTEAVector) throws {
        #expect(try XXTEA.encrypt(hex(vector.plaintext), key: hex(vector.key)) == hex(vector.ciphertext))
    }

    @Test(arguments: XXTEAVector.reference)
    func decryptInvertsTheReference(_ vector: XXTEAVector) throws {
        #expect(try XXTEA.decrypt(hex(vector.ciphertext), key: hex(vector.key)) == hex(vector.plaintext))
    }

    @Test func paddingIsZerosToAMultipleOfFourAndAtLeastEight() {
        #expect(XXTEA.pad([1]) == [1, 0, 0, 0, 0, 0, 0, 0])
        #expect(XXTEA.pad([1, 2, 3, 4, 5, 6, 7, 8]) == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(XXTEA.pad(Array(repeating: 9, count: 13)) == Array(repeating: 9, count: 13) + [0, 0, 0])
        #expect(XXTEA.pad([]) == Array(repeating: 0, count: 8))
    }

    @Test func encryptPadsBeforeEnciphering() throws {
        let key = hex("000102030405060708090a0b0c0d0e0f")
        #expect(try XXTEA.encrypt(hex("da7ada7a000000050100000003"), key: key) == hex("6df729f45245b0eac0e56637f0db1154"))
    }

    @Test func decryptRefusesLengthsThatAreNotWholeBlocks() {
        let key = [UInt8](repeating: 0, count: 16)
        #expect(throws: XXTEAError.badLength(4)) { try XXTEA.decrypt([1, 2, 3, 4], key: key) }
        #expect(throws: XXTEAError.badLength(10)) { try XXTEA.decrypt(Array(repeating: 0, count: 10), key: key) }
    }

    @Test func keysMustBeSixteenBytes() {
        #expect(throws: XXTEAError.badKeyLength(15)) { try XXTEA.encrypt([1], key: Array(repeating: 0, count: 15)) }
        #expect(throws: XXTEAError.badKeyLength(17)) { try XXTEA.decrypt(Array(repeating: 0, count: 8), key: Array(repeating: 0, count: 17)) }
    }

    @Test func randomBuffersRoundTrip() throws {
        var random = SplitMix64(state: 0x7EA)
        for _ in 0..<500 {
            let words = Int.random(in: 2...64, using: &random)
            let plain = (0..<(words * 4)).map { _ in UInt8.random(in: 0...255, using: &random) }
            let key = (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }
            let cipher = try XXTEA.encrypt(plain, key: key)
            #expect(cipher != plain)
            #expect(try XXTEA.decrypt(cipher, key: key) == plain)
        }
    }

    /// Seeded random buffers and keys, encrypted by the Python `xxtea` package (the lead's CI
    /// installs it) and by this code, compared byte for byte. Fails when the package is missing.
    @Test func seededBuffersMatchThePythonReference() throws {
        var random = SplitMix64(state: 0xC0FFEE)
        var cases: [(plain: [UInt8], key: [UInt8])] = []
        for _ in 0..<40 {
            let words = Int.random(in: 2...80, using: &random)
            cases.append((
                (0..<(words * 4)).map { _ in UInt8.random(in: 0...255, using: &random) },
                (0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }))
        }
        let script = """
            import sys, xxtea
            for line in sys.stdin:
                data, key = line.split()
                print(xxtea.encrypt(bytes.fromhex(data), bytes.fromhex(key), padding=False).hex())
            """
        let input = cases.map { hexString($0.plain) + " " + hexString($0.key) }.joined(separator: "\n") + "\n"
        guard let output = runPython(script, input: input) else {
            Issue.record("python3 cannot import xxtea: install it (python3 -m pip install xxtea) so XXTEA is checked against a reference")
            return
        }
        let lines = output.split(separator: "\n").map(String.init)
        #expect(lines.count == cases.count)
        for (index, line) in lines.enumerated() where index < cases.count {
            #expect(hexString(try XXTEA.encrypt(cases[index].plain, key: cases[index].key)) == line, "case \(index)")
        }
    }

    /// Runs `python3 -c script` with `input` on stdin; nil when python3 or `xxtea` is missing.
    private func runPython(_ script: String, input: String) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script]
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try? stdin.fileHandleForWriting.close()
        let data = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}

func hexString(_ bytes: [UInt8]) -> String {
    bytes.map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
}
