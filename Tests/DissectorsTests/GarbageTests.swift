import CaptureKit
import Testing
@testable import Dissectors
import TetherTestSupport

@Suite("Garbage never traps")
struct GarbageTests {
    static let linkTypes: [LinkType] = [
        .null, .ethernet, .raw, .loop, .linuxSLL, .bluetoothHCIH4, .bluetoothHCIH4WithPHDR, .ipv4, .ipv6,
        .bluetoothLELL, .bluetoothLinuxMonitor, .bluetoothLELLWithPHDR, .linuxSLL2, LinkType(rawValue: 147),
    ]

    /// A plausible start for the link type, so random bytes reach the deeper layers too.
    static func prefix(for linkType: LinkType, using rng: inout SplitMix64) -> [UInt8] {
        let ip: [UInt8] = Bool.random(using: &rng) ? [0x45, 0, 0, UInt8.random(in: 20...90, using: &rng)] : [0x60, 0, 0, 0]
        switch linkType {
        case .ethernet: return Array(repeating: 0, count: 12) + (ip[0] == 0x45 ? [0x08, 0x00] : [0x86, 0xDD]) + ip
        case .null: return [2, 0, 0, 0] + ip
        case .loop: return [0, 0, 0, 24] + ip
        case .raw, .ipv4, .ipv6: return ip
        case .linuxSLL: return Array(repeating: 0, count: 14) + [0x08, 0x00] + ip
        case .linuxSLL2: return [0x86, 0xDD] + Array(repeating: 0, count: 18) + ip
        case .bluetoothHCIH4WithPHDR:
            return [0, 0, 0, UInt8.random(in: 0...1, using: &rng), UInt8.random(in: 1...5, using: &rng)]
        case .bluetoothHCIH4: return [UInt8.random(in: 1...5, using: &rng)]
        case .bluetoothLinuxMonitor: return [0, 0, 0, UInt8.random(in: 0...20, using: &rng)]
        default: return []
        }
    }

    @Test("random bytes under every link type give a result, never a trap", arguments: linkTypes)
    func randomFrames(linkType: LinkType) {
        var rng = SplitMix64(seed: 0x7E7E_0000 &+ UInt64(linkType.rawValue))
        var dissector = FrameDissector()
        var extractor = UDPExtractor()
        var dissected = 0
        for _ in 0..<3000 {
            var data: [UInt8] = Bool.random(using: &rng) ? Self.prefix(for: linkType, using: &rng) : []
            let length = Int.random(in: 0...96, using: &rng)
            for _ in 0..<length { data.append(UInt8.random(in: 0...255, using: &rng)) }
            let result = dissector.dissect(data, linkType)
            _ = extractor.datagram(data, linkType)
            if !result.summary.isEmpty { dissected += 1 }
        }
        #expect(dissected == 3000)
    }

    @Test("random ACL fragments and ATT PDUs keep state bounded and never trap")
    func randomBluetoothStream() {
        var rng = SplitMix64(seed: 42)
        // A small reassembly table, so the stream's 32 connection-direction pairs overflow it and
        // the bound is exercised rather than never reached.
        var dissector = BluetoothDissector()
        dissector.acl = ACLReassembler(maxInProgress: 4)
        var peak = 0
        for _ in 0..<3000 {
            let boundary = UInt16.random(in: 0...3, using: &rng)
            let handle = UInt16.random(in: 0...15, using: &rng)
            var body: [UInt8] = []
            if boundary != 1 {
                let attLength = Int.random(in: 0...30, using: &rng)
                body = le16(UInt16.random(in: 0...40, using: &rng)) + le16(Bool.random(using: &rng) ? 4 : UInt16.random(in: 0...7, using: &rng))
                body.append(UInt8.random(in: 0...0x25, using: &rng))
                for _ in 0..<attLength { body.append(UInt8.random(in: 0...255, using: &rng)) }
            } else {
                for _ in 0..<Int.random(in: 0...30, using: &rng) { body.append(UInt8.random(in: 0...255, using: &rng)) }
            }
            let direction: HCIDirection = Bool.random(using: &rng) ? .sent : .received
            let frame = phdr(direction, aclPacket(handle: handle, boundary: boundary, body))
            _ = frame.withUnsafeBytes { dissector.dissect($0, linkType: .bluetoothHCIH4WithPHDR, flags: nil) }
            peak = max(peak, dissector.acl.inProgressCount)
        }
        #expect(peak == 4, "the table never filled, so its bound was not tested")
        #expect(dissector.acl.inProgressCount <= 4)
        #expect(dissector.att.databases.count <= 16, "one GATT database per connection handle at most")
    }

    @Test("random IPv4 fragments never trap and pending state stays bounded")
    func randomFragments() {
        var rng = SplitMix64(seed: 7)
        var extractor = UDPExtractor()
        for _ in 0..<3000 {
            let id = UInt16.random(in: 0...200, using: &rng)
            let more: UInt16 = Bool.random(using: &rng) ? 0x2000 : 0
            let offset = UInt16.random(in: 0...0x1FFF, using: &rng)
            let payload = (0..<Int.random(in: 0...64, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            _ = extractor.datagram(ipv4(identification: id, fragmentField: more | offset, payload: payload), .ipv4)
        }
        #expect(extractor.reassembler.pendingCount <= 64)
    }
}
