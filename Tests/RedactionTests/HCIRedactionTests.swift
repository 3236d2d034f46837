import CaptureKit
import Testing
import TetherTestSupport
@testable import Redaction

/// The HCI layer: each field it knows is found and replaced in place, the same length.
@Suite struct HCIRedactionTests {
    static let peer: [UInt8] = [0x11, 0x22, 0x33, 0x44, 0x55, 0xC6]

    /// An H4 frame with phdr: direction, packet type, packet.
    static func h4(_ received: Bool, _ packet: [UInt8]) -> [UInt8] { [0, 0, 0, received ? 1 : 0] + packet }

    func redacted(_ frame: [UInt8]) -> (frame: [UInt8], map: RedactionMap) {
        var map = RedactionMap()
        HCIRedaction.discover(frame, linkType: .bluetoothHCIH4WithPHDR, into: &map, keepNames: false)
        var copy = frame
        _ = HCIRedaction.rewrite(&copy, linkType: .bluetoothHCIH4WithPHDR, map: map)
        return (copy, map)
    }

    @Test func leConnectionCompletePeerAddressIsReplaced() {
        let event = Self.h4(true, [0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01] + Self.peer + [0x18, 0, 0, 0, 0xC8, 0, 0])
        let (out, map) = redacted(event)
        #expect(out.count == event.count)
        #expect(ByteSubstitution.containsAny([Self.peer], in: out) == nil)
        #expect(map.placeholder(for: Self.peer) != nil)
    }

    @Test func advertisingReportAddressAndLocalNameAreReplaced() {
        let name = Array("Forerunner".utf8)
        let ad: [UInt8] = [0x02, 0x01, 0x06, UInt8(name.count + 1), 0x09] + name
        let report: [UInt8] = [0x02, 0x01, 0x00, 0x01] + Self.peer + [UInt8(ad.count)] + ad + [0xC0]
        let event = Self.h4(true, [0x04, 0x3E, UInt8(report.count)] + report)
        let (out, map) = redacted(event)
        #expect(ByteSubstitution.containsAny([Self.peer, name], in: out) == nil)
        #expect(map.originals(of: .name) == [name])
        #expect(out.count == event.count)
    }

    @Test func smpIdentityInformationIRKIsReplaced() {
        let irk: [UInt8] = Array(0x30..<0x40)
        let acl: [UInt8] = [0x02, 0x40, 0x20, 21, 0, 17, 0, 0x06, 0x00, 0x08] + irk
        let (out, map) = redacted(Self.h4(true, acl))
        #expect(ByteSubstitution.containsAny([irk], in: out) == nil)
        #expect(map.originals(of: .key) == [irk])
    }

    @Test func smpEncryptionInformationLTKIsReplaced() {
        let ltk: [UInt8] = Array(0x50..<0x60)
        let acl: [UInt8] = [0x02, 0x40, 0x20, 21, 0, 17, 0, 0x06, 0x00, 0x06] + ltk
        let (out, _) = redacted(Self.h4(false, acl))
        #expect(ByteSubstitution.containsAny([ltk], in: out) == nil)
    }

    @Test func ltkRequestReplyKeyIsReplaced() {
        let ltk: [UInt8] = Array(0x60..<0x70)
        let (out, _) = redacted(Self.h4(false, [0x01, 0x1A, 0x20, 18, 0x40, 0x00] + ltk))
        #expect(ByteSubstitution.containsAny([ltk], in: out) == nil)
    }

    @Test func linkKeyNotificationAddressAndKeyAreReplaced() {
        let key: [UInt8] = Array(0x70..<0x80)
        let (out, map) = redacted(Self.h4(true, [0x04, 0x18, 23] + Self.peer + key + [0x04]))
        #expect(ByteSubstitution.containsAny([Self.peer, key], in: out) == nil)
        #expect(map.entries.count == 2)
    }

    @Test func sameAddressInCommandAndEventGetsOnePlaceholder() {
        var map = RedactionMap()
        let create = Self.h4(false, [0x01, 0x0D, 0x20, 25, 0x60, 0, 0x60, 0, 0x00, 0x01] + Self.peer + [0x01, 0x18, 0, 0x28, 0, 0, 0, 0x2A, 0, 0, 0, 0, 0])
        let complete = Self.h4(true, [0x04, 0x3E, 0x13, 0x01, 0x00, 0x40, 0x00, 0x00, 0x01] + Self.peer + [0x18, 0, 0, 0, 0xC8, 0, 0])
        HCIRedaction.discover(create, linkType: .bluetoothHCIH4WithPHDR, into: &map, keepNames: false)
        HCIRedaction.discover(complete, linkType: .bluetoothHCIH4WithPHDR, into: &map, keepNames: false)
        var a = create, b = complete
        _ = HCIRedaction.rewrite(&a, linkType: .bluetoothHCIH4WithPHDR, map: map)
        _ = HCIRedaction.rewrite(&b, linkType: .bluetoothHCIH4WithPHDR, map: map)
        let placeholder = map.placeholder(for: Self.peer)!
        #expect(Array(a[14..<20]) == placeholder)
        #expect(Array(b[13..<19]) == placeholder)
    }

    @Test func malformedFramesDoNotTrap() {
        var random = SplitMix64(state: 21)
        let linkTypes: [LinkType] = [.bluetoothHCIH4WithPHDR, .bluetoothHCIH4, .bluetoothLinuxMonitor, .ethernet, .linuxSLL2, .raw, .null]
        let heads: [[UInt8]] = [[0, 0, 0, 1, 0x04, 0x3E], [0, 0, 0, 1, 0x04, 0x0E], [0, 0, 0, 0, 0x01, 0x0D, 0x20], [0, 0, 0, 1, 0x02], [0x45], [0x60]]
        for _ in 0..<20_000 {
            let head = heads[Int(random.next() % UInt64(heads.count))]
            let length = Int(random.next() % 64)
            let frame = head + (0..<length).map { _ in UInt8(truncatingIfNeeded: random.next()) }
            let linkType = linkTypes[Int(random.next() % UInt64(linkTypes.count))]
            var map = RedactionMap()
            HCIRedaction.discover(frame, linkType: linkType, into: &map, keepNames: false)
            var copy = frame
            _ = HCIRedaction.rewrite(&copy, linkType: linkType, map: map)
            #expect(copy.count == frame.count)
            if let layout = IPRedaction.layout(frame, linkType: linkType) {
                var ipCopy = frame
                IPRedaction.rewrite(&ipCopy, layout) { data in
                    if let tcp = IPRedaction.tcpPayload(data, layout) { _ = MQTTRedaction.rewrite(&data, payload: tcp.range, map: map) }
                }
                #expect(ipCopy.count == frame.count)
            }
            TextRedaction.discover(record: frame, into: &map, keepNames: false)
            for mode in [TextRedaction.Mode.prose, .json, .yaml] {
                var text = frame
                _ = TextRedaction.rewrite(&text, table: TextRedaction.Table(map), as: mode)
            }
        }
    }
}
