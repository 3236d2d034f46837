import CaptureKit
import Testing
@testable import Dissectors

/// ``UDPExtractor/datagramInPlace(from:linkType:)`` leaves a payload that lies in the frame where
/// it is; read from there, it is exactly what ``UDPExtractor/datagram(from:linkType:)`` copies.
@Suite("UDP payloads read in place")
struct InPlaceDatagramTests {
    /// The in-place extraction with its payload read back into the datagram, and whether it
    /// came as a range.
    static func inPlace(_ extractor: inout UDPExtractor, _ data: [UInt8], _ linkType: LinkType) -> (UDPExtraction, ranged: Bool) {
        data.withUnsafeBytes { buffer in
            let (extraction, range) = extractor.datagramInPlace(from: buffer, linkType: linkType)
            guard case .datagram(var datagram) = extraction, let range else { return (extraction, false) }
            #expect(datagram.payload.isEmpty)
            datagram.payload = Array(buffer[range])
            return (.datagram(datagram), true)
        }
    }

    @Test("every link type, either IP version, padding, and what is not a datagram", arguments: IPLinkCase.allCases)
    func sameAsTheCopy(link: IPLinkCase) {
        var frames: [[UInt8]] = []
        for payload in [[], [7], Array(0..<200).map { UInt8($0) }] {
            if link.carriesIPv4 {
                frames.append(link.frame(ipv4(payload: udp(payload: payload)), version: 4))
                frames.append(link.frame(ipv4(payload: udp(payload: payload)), version: 4) + [0, 0, 0, 0])
                frames.append(link.frame(ipv4(proto: 6, payload: Array(repeating: 0, count: 20) + payload), version: 4))
            }
            if link.carriesIPv6 { frames.append(link.frame(ipv6(next: 17, payload: udp(payload: payload)), version: 6)) }
        }
        frames += frames.map { Array($0.dropLast(3)) }
        for frame in frames {
            var copying = UDPExtractor()
            var inPlace = UDPExtractor()
            let (extraction, ranged) = Self.inPlace(&inPlace, frame, link.linkType)
            let expected = copying.datagram(frame, link.linkType)
            #expect(extraction == expected)
            if case .datagram = expected { #expect(ranged) }
        }
    }

    @Test("a datagram completed from fragments has its payload and no range")
    func reassembled() {
        var copying = UDPExtractor()
        var inPlace = UDPExtractor()
        for fragment in ipv4Fragments(of: udp(payload: Array(0..<3000).map { UInt8($0 % 251) })) {
            let (extraction, ranged) = Self.inPlace(&inPlace, fragment, .ipv4)
            #expect(extraction == copying.datagram(fragment, .ipv4))
            #expect(!ranged)
        }
        // The flag it turns off is back on: the copying form still copies.
        guard case .datagram(let datagram) = inPlace.datagram(ipv4(payload: udp(payload: [1, 2])), .ipv4) else {
            Issue.record("expected a datagram")
            return
        }
        #expect(datagram.payload == [1, 2])
    }
}
