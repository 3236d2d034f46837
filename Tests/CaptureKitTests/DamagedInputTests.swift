import Testing
@testable import CaptureKit
import TetherTestSupport

@Suite struct DamagedInputTests {
    /// Every prefix of every sample either gives the frames that fit in it (plus a truncation
    /// warning when the prefix ends inside a record) or, when too short to recognise, a typed error.
    @Test(arguments: Samples.all)
    func truncationAtEveryByteKeepsEveryCompleteFrame(_ fixture: Fixture) throws {
        let all = try readAll(CaptureFile.open(bytes: fixture.bytes))
        for cut in 0..<fixture.bytes.count {
            let prefix = Array(fixture.bytes[0..<cut])
            let reader: any CaptureReader
            do {
                reader = try CaptureFile.open(bytes: prefix, bufferSize: 8)
            } catch {
                #expect(error.kind == .unrecognizedFormat && cut < fixture.detectionBytes, "cut at \(cut): \(error)")
                continue
            }
            let frames = try readAll(reader)
            let complete = fixture.frameEnds.filter { $0 <= cut }.count
            #expect(frames == Array(all.prefix(complete)), "cut at \(cut)")
            let truncated = reader.warnings.filter { $0.kind == .truncated }
            if fixture.boundaries.contains(cut) {
                #expect(truncated.isEmpty, "cut at \(cut) is a record boundary")
            } else {
                #expect(truncated.count == 1, "cut at \(cut)")
                #expect(truncated.first?.offset == UInt64(cut), "cut at \(cut)")
            }
            #expect(try reader.next() == nil, "reading past the end stays at the end")
        }
    }

    @Test func truncationWarningSaysWhereTheFileEndsAndWhatWasExpected() throws {
        let fixture = Samples.pcap()
        let reader = try CaptureFile.open(bytes: Array(fixture.bytes.dropLast(5)), name: "cut.pcap")
        let frames = try readAll(reader)
        #expect(frames.count == 2)
        let warning = try #require(reader.warnings.first)
        #expect(warning.kind == .truncated)
        #expect(warning.file == "cut.pcap")
        #expect(warning.message.contains("needs 16 bytes but only 11 are there"))
    }

    struct Damage: Sendable, CustomStringConvertible {
        var name: String
        var bytes: @Sendable () -> [UInt8]
        var kind: CaptureError.Kind
        var offset: UInt64?
        var description: String { name }
    }

    static func pcapng(_ build: (inout PcapngBuilder) -> Void) -> [UInt8] {
        var b = PcapngBuilder()
        b.section(bigEndian: false)
        b.interface(linkType: 1)
        build(&b)
        return b.bytes
    }

    static let damages: [Damage] = [
        Damage(name: "unknown magic", bytes: { [0x7F, 0x45, 0x4C, 0x46] + Array(repeating: 0, count: 40) }, kind: .unrecognizedFormat, offset: 0),
        Damage(name: "empty file", bytes: { [] }, kind: .unrecognizedFormat, offset: 0),
        Damage(name: "pcap version 9", bytes: {
            var f = Samples.pcap().bytes; f[4] = 9; return f
        }, kind: .malformed, offset: 4),
        Damage(name: "pcap record length 4 GiB", bytes: {
            var f = Samples.pcap().bytes; f.replaceSubrange(32..<36, with: [0xFF, 0xFF, 0xFF, 0xFF]); return f
        }, kind: .malformed, offset: 32),
        Damage(name: "pcapng block length 7", bytes: {
            pcapng { b in b.bytes += [6, 0, 0, 0, 7, 0, 0, 0] + Array(repeating: 0, count: 40) }
        }, kind: .malformed, offset: 52),
        Damage(name: "pcapng block length below the EPB minimum", bytes: {
            pcapng { b in b.bytes += [6, 0, 0, 0, 16, 0, 0, 0] + Array(repeating: 0, count: 8) }
        }, kind: .malformed, offset: 52),
        Damage(name: "pcapng block length 1 GiB", bytes: {
            pcapng { b in b.bytes += [6, 0, 0, 0x40, 0, 0, 0, 0x40] + Array(repeating: 0, count: 40) }
        }, kind: .malformed, offset: 52),
        Damage(name: "pcapng trailing length differs", bytes: {
            pcapng { b in b.enhancedPacket(interface: 0, ticks: 0, data: [1]); b.bytes[b.bytes.count - 4] = 99 }
        }, kind: .malformed, offset: 80),
        Damage(name: "pcapng captured length beyond the block", bytes: {
            pcapng { b in b.enhancedPacket(interface: 0, ticks: 0, data: [1]); b.bytes[68] = 200 }
        }, kind: .malformed, offset: 68),
        Damage(name: "pcapng option longer than its block", bytes: {
            pcapng { b in b.enhancedPacket(interface: 0, ticks: 0, data: [1], options: [b.option(1, Array("abc".utf8))]); b.bytes[82] = 200 }
        }, kind: .malformed, offset: 80),
        Damage(name: "pcapng bad byte-order magic", bytes: {
            var f = Samples.pcapng().bytes; f[8] = 0; return f
        }, kind: .malformed, offset: 8),
        Damage(name: "pcapng major version 2", bytes: {
            var f = Samples.pcapng().bytes; f[12] = 2; return f
        }, kind: .malformed, offset: 12),
        Damage(name: "pcapng packet on an undescribed interface", bytes: {
            pcapng { b in b.enhancedPacket(interface: 3, ticks: 0, data: [1]) }
        }, kind: .unknownInterface, offset: 56),
        Damage(name: "pcapng statistics for an undescribed interface", bytes: {
            pcapng { b in b.statistics(interface: 1, ticks: 0, options: []) }
        }, kind: .unknownInterface, offset: 56),
        Damage(name: "pcapng non-UTF-8 comment", bytes: {
            pcapng { b in b.enhancedPacket(interface: 0, ticks: 0, data: [1], options: [b.option(1, [0x66, 0xFF, 0xFE])]) }
        }, kind: .invalidText, offset: 80),
        Damage(name: "pcapng non-UTF-8 interface name", bytes: {
            var b = PcapngBuilder()
            b.section(bigEndian: false)
            b.interface(linkType: 1, options: [b.option(2, [0xC3, 0x28])])
            b.enhancedPacket(interface: 0, ticks: 0, data: [1])
            return b.bytes
        }, kind: .invalidText, offset: 44),
        Damage(name: "btsnoop version 2", bytes: {
            var f = Samples.btsnoopH4().bytes; f[11] = 2; return f
        }, kind: .malformed, offset: 8),
        Damage(name: "btsnoop datalink 9999", bytes: { btsnoopFixture(datalink: 9999, records: []).bytes }, kind: .unsupportedLinkType, offset: 12),
        Damage(name: "btsnoop included length 2 GiB", bytes: {
            var f = Samples.btsnoopH4().bytes; f[20] = 0x7F; return f
        }, kind: .malformed, offset: 20),
        Damage(name: "pklg record length 3", bytes: {
            var f = Samples.packetLogger(bigEndian: false).bytes; f += [3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]; return f
        }, kind: .malformed, offset: 70),
    ]

    @Test(arguments: damages)
    func damageIsATypedErrorNamingTheOffset(_ damage: Damage) {
        let bytes = damage.bytes()
        for fast in [false, true] {
            let error = captureError {
                let reader = try CaptureFile.open(bytes: bytes, name: "damaged")
                _ = fast ? try readAllFast(reader) : try readAll(reader)
            }
            #expect(error?.kind == damage.kind, "fast path: \(fast)")
            if let offset = damage.offset { #expect(error?.offset == offset, "fast path: \(fast); \(String(describing: error))") }
            #expect(error?.file == "damaged")
            #expect(error?.hint.isEmpty == false)
        }
    }

    @Test func errorDescriptionNamesFileOffsetRecordExpectedAndFound() {
        let bytes = Self.pcapng { b in b.enhancedPacket(interface: 3, ticks: 0, data: [1]) }
        let error = captureError { _ = try readAll(CaptureFile.open(bytes: bytes, name: "x.pcapng")) }
        let text = error?.description ?? ""
        #expect(text.hasPrefix("x.pcapng: offset 56 (record 3): expected an interface id below 1"))
        #expect(text.contains("found interface id 3"))
    }

    @Test func framesBeforeDamageAreReturned() throws {
        let bytes = Self.pcapng { b in
            b.enhancedPacket(interface: 0, ticks: 0, data: [1])
            b.enhancedPacket(interface: 9, ticks: 0, data: [2])
        }
        let reader = try CaptureFile.open(bytes: bytes)
        #expect(try reader.next()?.data == [1])
        #expect(captureError { _ = try reader.next() }?.kind == .unknownInterface)
    }

    /// Random byte flips in every sample, with a fixed seed: each must read to the end or throw a
    /// CaptureError; a trap would end the test process.
    @Test(arguments: Samples.all)
    func randomDamageNeverTraps(_ fixture: Fixture) throws {
        var rng = SplitMix64(state: 0x7E7E_7E7E)
        for _ in 0..<400 {
            var bytes = fixture.bytes
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = Int.random(in: 0..<bytes.count, using: &rng)
                bytes[i] = UInt8.random(in: 0...255, using: &rng)
            }
            do {
                let reader = try CaptureFile.open(bytes: bytes, bufferSize: Int.random(in: 1...64, using: &rng))
                _ = Bool.random(using: &rng) ? try readAll(reader) : try readAllFast(reader)
            } catch let error as CaptureError {
                #expect(!error.expected.isEmpty && !error.hint.isEmpty)
            }
        }
    }
}
