import BehaviourTrace
import CaptureKit
import CaptureSet
import Foundation
import ReplayKit
import Testing
import TetherIntegrations
import TetherTestSupport
@testable import Redaction

/// A redacted copy of every committed set: same verdicts, none of the original values left.
@Suite struct CommittedSetsTests {
    static let captures: URL = {
        var url = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Captures")
    }()

    static let sets: [String] = {
        (try? FileManager.default.contentsOfDirectory(atPath: captures.path).filter {
            FileManager.default.fileExists(atPath: captures.appendingPathComponent($0).appendingPathComponent("manifest.yaml").path)
        }.sorted()) ?? []
    }()

    /// Per expectation: its name and whether it passed; per baseline: whether it matched.
    struct Verdicts: Equatable, CustomStringConvertible {
        var expectations: [String]
        var baselines: [String]
        var description: String { (expectations + baselines).joined(separator: "\n") }
    }

    static func verdicts(_ path: String) throws -> Verdicts {
        let options = ReplayOptions(integrations: TetherIntegrations.builtIn)
        let loaded = try loadReplaySet(at: path, options: options)
        let checked = try replayAndCheck(loaded, options: options)
        let (outcome, errors) = checked.outcome()
        #expect(errors.isEmpty, "\(path): \(errors)")
        return Verdicts(
            expectations: outcome.expectations.map { "\($0.expectation.name ?? "?"): \($0.passed)" },
            baselines: outcome.baselines.map { "baseline \($0.name): \($0.passed)" + ($0.passed ? "" : " \($0.diff)") })
    }

    @Test func committedSetsAreAllThere() {
        #expect(Self.sets.count >= 25)
    }

    @Test(arguments: sets, [false, true])
    func redactedCopyReplaysWithTheSameVerdicts(_ name: String, ip: Bool) throws {
        let folder = try TemporaryFolder("redact-verdicts")
        let original = Self.captures.appendingPathComponent(name).path
        let copy = folder.path(name).path
        _ = try SetRedactor.redact(set: original, to: copy, options: RedactionOptions(ip: ip))
        let before = try Self.verdicts(original)
        let after = try Self.verdicts(copy)
        #expect(before.expectations.map { $0.hasSuffix("true") } == after.expectations.map { $0.hasSuffix("true") }, "\(name): \(before) vs \(after)")
        #expect(before.baselines == after.baselines, "\(name): \(before) vs \(after)")
        #expect(before.expectations.count == after.expectations.count)
    }

    @Test(arguments: sets, [false, true])
    func redactedCopyHoldsNoneOfTheOriginalValues(_ name: String, ip: Bool) throws {
        let folder = try TemporaryFolder("redact-leaks")
        let copy = folder.path(name).path
        let report = try SetRedactor.redact(set: Self.captures.appendingPathComponent(name).path, to: copy, options: RedactionOptions(ip: ip))
        let needles = Self.needles(report.map)
        let (interfaces, frames) = try Self.frames(copy + "/capture.pcapng")
        let originalIPs = Set(report.map.originals(of: .ip))
        for frame in frames {
            let linkType = interfaces[frame.interfaceIndex].linkType
            guard let layout = IPRedaction.layout(frame.data, linkType: linkType) else { continue }
            for offset in layout.addressOffsets where originalIPs.contains(Array(frame.data[offset..<(offset + layout.addressLength)])) {
                Issue.record("\(name): frame \(frame.number) still has an original IP address at offset \(offset)")
            }
        }
        for file in try Self.files(under: copy) {
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: file)))
            if let found = ByteSubstitution.containsAny(needles, in: bytes) {
                Issue.record("\(file) still holds \(String(decoding: found, as: UTF8.self)) (\(found))")
            }
        }
    }

    @Test func sameAddressGetsTheSamePlaceholderInCaptureManifestAndTraces() throws {
        let folder = try TemporaryFolder("redact-consistency")
        let copy = folder.path("ciq-clean").path
        let report = try SetRedactor.redact(set: Self.captures.appendingPathComponent("ciq-clean").path, to: copy)
        let peer = try #require(TextRedaction.parseAddress("F0:F0:F0:F0:F0:F0"))
        let placeholder = try #require(report.map.placeholder(for: peer))
        let shown = Hex.spell(placeholder.reversed(), upper: true, separator: ":")
        let capture = [UInt8](try Data(contentsOf: URL(fileURLWithPath: copy + "/capture.pcapng")))
        #expect(ByteSubstitution.containsAny([placeholder], in: capture) != nil)
        #expect(try String(contentsOfFile: copy + "/manifest.yaml", encoding: .utf8).contains("address: \(shown)"))
        #expect(try String(contentsOfFile: copy + "/live/messaging.jsonl", encoding: .utf8).contains("\"peer\":\"\(shown)\""))
        #expect(try String(contentsOfFile: copy + "/baseline/messaging.jsonl", encoding: .utf8).contains("\"peer\":\"\(shown)\""))
    }

    @Test func redactedSetIsSealed() throws {
        let folder = try TemporaryFolder("redact-seal")
        let copy = folder.path("widget-broker-drop").path
        _ = try SetRedactor.redact(set: Self.captures.appendingPathComponent("widget-broker-drop").path, to: copy)
        let loaded = try CaptureSetDirectory.load(copy, verify: true)
        #expect(loaded.verified)
        #expect(loaded.manifest.liveTracesSha256 == (try CaptureSetDirectory(path: copy).liveTraceDigests()))
    }

    @Test func widgetClientIDIsReplacedInTheCapture() throws {
        let folder = try TemporaryFolder("redact-mqtt")
        let copy = folder.path("widget-property-change").path
        let report = try SetRedactor.redact(set: Self.captures.appendingPathComponent("widget-property-change").path, to: copy)
        #expect(report.map.originals(of: .clientID).contains(Array("widget-demo".utf8)))
        #expect((report.counts["capture.pcapng"]?[.clientID] ?? 0) > 0)
    }

    @Test func ipAddressesAreReplacedWhenAsked() throws {
        let folder = try TemporaryFolder("redact-ip")
        for name in ["plugin-clean", "widget-broker-drop"] {
            let original = Self.captures.appendingPathComponent(name).path
            let copy = folder.path(name).path
            let report = try SetRedactor.redact(set: original, to: copy, options: RedactionOptions(ip: true))
            #expect(report.map.originals(of: .ip).contains([127, 0, 0, 1]))
            let capture = [UInt8](try Data(contentsOf: URL(fileURLWithPath: copy + "/capture.pcapng")))
            #expect(ByteSubstitution.containsAny([[127, 0, 0, 1]], in: capture) == nil)
            #expect(try Self.verdicts(copy) == (try Self.verdicts(original)))
        }
    }

    @Test func outputInsideTheSetIsRefused() throws {
        let set = Self.captures.appendingPathComponent("ciq-clean").path
        #expect(throws: RedactionError.self) { try SetRedactor.redact(set: set, to: set + "/redacted") }
    }

    @Test func nonEmptyOutputIsRefused() throws {
        let folder = try TemporaryFolder("redact-nonempty")
        try Data("x".utf8).write(to: folder.path("file"))
        #expect(throws: RedactionError.self) {
            try SetRedactor.redact(set: Self.captures.appendingPathComponent("ciq-clean").path, to: folder.url.path)
        }
    }

    /// Every original value in the forms a file could hold it: raw bytes (both orders for
    /// addresses and keys), and the spellings the text layer replaces.
    static func needles(_ map: RedactionMap) -> [[UInt8]] {
        var needles: [[UInt8]] = []
        for entry in map.entries {
            switch entry.kind {
            case .address, .key:
                needles += [entry.original, entry.original.reversed()]
                for order in [entry.original, entry.original.reversed()] {
                    for upper in [true, false] {
                        needles.append(Array(Hex.spell(order, upper: upper, separator: "").utf8))
                        if entry.kind == .address { needles.append(Array(Hex.spell(order, upper: upper, separator: ":").utf8)) }
                    }
                }
            case .ip:
                // Four raw bytes turn up by chance (a checksum beside an urgent pointer): the raw
                // addresses are checked in the IP headers instead (`ipHeadersHold`), the text here.
                if entry.original.count == 4 {
                    needles.append(Array((entry.original.map(String.init).joined(separator: ".") + "\"").utf8))
                    needles.append(Array((entry.original.map(String.init).joined(separator: ".") + ":").utf8))
                }
            default:
                // A value of five bytes or more must not appear anywhere; a shorter one (the
                // account `demo`) may be part of a longer word (`iotdemo://`), so it is looked for
                // as a word would stand.
                if entry.original.count >= 5 {
                    needles.append(entry.original)
                    needles.append(Array(Hex.spell(entry.original, upper: false, separator: "").utf8))
                }
                needles.append(Array("\"".utf8) + entry.original + Array("\"".utf8))
                needles.append(Array(": ".utf8) + entry.original + Array("\n".utf8))
                needles.append(Array("/".utf8) + entry.original + Array("/".utf8))
                needles.append([0x00, UInt8(entry.original.count)] + entry.original)
            }
        }
        return needles
    }

    static func frames(_ path: String) throws -> (interfaces: [CaptureInterface], frames: [CaptureFrame]) {
        let reader = try CaptureFile.open(path: path)
        var frames: [CaptureFrame] = []
        while let frame = try reader.next() { frames.append(frame) }
        return (reader.interfaces, frames)
    }

    static func files(under folder: String) throws -> [String] {
        var files: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: folder)
        while let relative = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = folder + "/" + relative
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue { files.append(path) }
        }
        return files
    }
}

/// Whole sets of unusual content: random frames on every link type, names kept on request.
@Suite struct SetRedactorInputTests {
    @Test func randomFramesOnEveryLinkTypeAreRedactedWithoutTrapping() throws {
        let folder = try TemporaryFolder("redact-random")
        let set = folder.path("random").path
        try FileManager.default.copyItem(atPath: CommittedSetsTests.captures.appendingPathComponent("ciq-clean").path, toPath: set)
        let writer = try PcapngWriter(path: set + "/capture.pcapng")
        let linkTypes: [LinkType] = [.bluetoothHCIH4WithPHDR, .bluetoothHCIH4, .bluetoothLinuxMonitor, .ethernet, .linuxSLL, .linuxSLL2, .raw, .ipv4, .ipv6, .null, .user0, .user1]
        for linkType in linkTypes { _ = try writer.addInterface(CaptureInterface(linkType: linkType)) }
        var random = SplitMix64(state: 2121)
        for number in 1...5000 {
            let interface = Int(random.next() % UInt64(linkTypes.count))
            let length = Int(random.next() % 96)
            var data = (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            // Plausible heads now and then, so the deeper layers are reached.
            if length > 20, random.next() % 2 == 0 {
                switch linkTypes[interface] {
                case .bluetoothHCIH4WithPHDR: data[4] = [0x01, 0x02, 0x04][Int(random.next() % 3)]
                case .ethernet: data[12] = 0x08; data[13] = 0x00; data[14] = 0x45
                case .raw, .ipv4: data[0] = 0x45
                default: break
                }
            }
            try writer.write(CaptureFrame(number: number, interfaceIndex: interface, timestampNs: Int64(number) * 1000, originalLength: length, data: data))
        }
        try writer.close()
        let report = try SetRedactor.redact(set: set, to: folder.path("out").path, options: RedactionOptions(ip: true))
        let reader = try CaptureFile.open(path: folder.path("out").path + "/capture.pcapng")
        var frames = 0
        while try reader.next() != nil { frames += 1 }
        #expect(frames == 5000)
        #expect(report.output == folder.path("out").path)
    }

    @Test func keepNamesKeepsDeviceNames() throws {
        let folder = try TemporaryFolder("redact-keep-names")
        let copy = folder.path("ciq-clean").path
        let report = try SetRedactor.redact(
            set: CommittedSetsTests.captures.appendingPathComponent("ciq-clean").path, to: copy, options: RedactionOptions(keepNames: true))
        #expect(report.map.originals(of: .name).isEmpty)
        let manifest = try String(contentsOfFile: copy + "/manifest.yaml", encoding: .utf8)
        #expect(manifest.contains("name: watch-1"))
        #expect(!manifest.contains("F0:F0:F0:F0:F0:F0"))
    }
}
