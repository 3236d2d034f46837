import CaptureKit
import Testing
@testable import Dissectors

@Suite("Link layers, IP and UDP")
struct IPPathTests {
    let payload: [UInt8] = Array(0..<32)

    @Test("every IP link type carries an IPv4 UDP datagram to UDP", arguments: IPLinkCase.allCases.filter(\.carriesIPv4))
    func ipv4PathToUDP(link: IPLinkCase) {
        var dissector = FrameDissector()
        let frame = link.frame(ipv4(payload: udp(payload: payload)), version: 4)
        let result = dissector.dissect(frame, link.linkType)
        #expect(result.problem == nil)
        #expect(result.udp == UDPDatagram(
            sourceAddress: IPAddress(bytes: loopback4), sourcePort: 50123,
            destinationAddress: IPAddress(bytes: loopback4), destinationPort: 12345, payload: payload))
        #expect(result.summary == "UDP 127.0.0.1:50123 → 127.0.0.1:12345 32 bytes")
    }

    @Test("every IP link type carries an IPv6 UDP datagram to UDP", arguments: IPLinkCase.allCases.filter(\.carriesIPv6))
    func ipv6PathToUDP(link: IPLinkCase) {
        var extractor = UDPExtractor()
        let frame = link.frame(ipv6(next: 17, payload: udp(payload: payload)), version: 6)
        #expect(extractor.datagram(frame, link.linkType) == .datagram(UDPDatagram(
            sourceAddress: IPAddress(bytes: loopback6), sourcePort: 50123,
            destinationAddress: IPAddress(bytes: loopback6), destinationPort: 12345, payload: payload)))
    }

    @Test("an IPv6 summary brackets the addresses")
    func ipv6Summary() {
        var dissector = FrameDissector()
        let result = dissector.dissect(ipv6(next: 17, payload: udp(payload: [1, 2, 3])), .ipv6)
        #expect(result.summary == "UDP [::1]:50123 → [::1]:12345 3 bytes")
    }

    @Test("Ethernet padding after the IPv4 total length is ignored")
    func ethernetPaddingIgnored() {
        var extractor = UDPExtractor()
        let frame = IPLinkCase.ethernet.frame(ipv4(payload: udp(payload: [9])), version: 4) + [0, 0, 0, 0, 0, 0]
        guard case .datagram(let datagram) = extractor.datagram(frame, .ethernet) else {
            Issue.record("expected a datagram")
            return
        }
        #expect(datagram.payload == [9])
    }

    @Test("an 802.1Q tag is stepped over")
    func vlanTagSkipped() {
        var extractor = UDPExtractor()
        let frame = Array(repeating: 0, count: 12) + be16(0x8100) + [0, 5] + be16(0x0800) + ipv4(payload: udp(payload: [7]))
        guard case .datagram(let datagram) = extractor.datagram(frame, .ethernet) else {
            Issue.record("expected a datagram")
            return
        }
        #expect(datagram.payload == [7])
    }

    @Test("TCP is not UDP, and its summary names it")
    func tcpIsNotUDP() {
        var extractor = UDPExtractor()
        #expect(extractor.datagram(ipv4(proto: 6, payload: tcp(sequence: 1, payload: [])), .ipv4) == .notUDP)
        var dissector = FrameDissector()
        let segment = tcp(source: 40000, destination: 8080, sequence: 100, flags: TCPSegment.ack, payload: [1, 2])
        #expect(dissector.dissect(ipv4(proto: 6, payload: segment), .ipv4).summary == "TCP 127.0.0.1:40000 → 127.0.0.1:8080 [ACK] seq 1 len 2")
    }

    @Test("A TCP header cut short is a problem naming TCP")
    func truncatedTCPIsAProblem() {
        var dissector = FrameDissector()
        let result = dissector.dissect(ipv4(proto: 6, payload: Array(repeating: 0, count: 12)), .ipv4)
        #expect(result.problemDescription?.hasPrefix("TCP: at frame offset 20: expected 20 bytes of TCP header") == true)
    }

    @Test("ARP on Ethernet is not UDP")
    func arpIsNotUDP() {
        var dissector = FrameDissector()
        let result = dissector.dissect(Array(repeating: 0, count: 12) + be16(0x0806) + Array(repeating: 0, count: 28), .ethernet)
        #expect(result.summary == "ARP")
        #expect(result.problem == nil)
    }

    @Test("a truncated IPv4 header is a problem naming the layer and the frame offset")
    func truncatedIPv4IsAProblem() {
        var dissector = FrameDissector()
        let frame = Array(repeating: 0, count: 12) + be16(0x0800) + [0x45, 0, 0, 40]
        let result = dissector.dissect(frame, .ethernet)
        #expect(result.problem == DissectionProblem(layer: "IPv4", offset: 14, expected: "20 bytes of IPv4 header", found: "only 4 bytes left"))
        #expect(result.problemDescription == "IPv4: at frame offset 14: expected 20 bytes of IPv4 header; found only 4 bytes left")
    }

    @Test("a UDP length beyond the IP payload is malformed")
    func udpLengthTooLong() {
        var extractor = UDPExtractor()
        var packet = udp(payload: [1, 2, 3])
        packet[5] = 200
        guard case .malformed(let problem) = extractor.datagram(ipv4(payload: packet), .ipv4) else {
            Issue.record("expected malformed")
            return
        }
        #expect(problem.layer == "UDP")
        guard case .layout(let offset, _, _, nil) = problem.kind else {
            Issue.record("expected a layout problem at a frame offset, got \(problem)")
            return
        }
        #expect(offset == 24)
        #expect(problem.description.hasPrefix("UDP: at frame offset 24"))
    }

    @Test("a NULL header with an unknown family is not IP")
    func nullUnknownFamily() {
        var dissector = FrameDissector()
        #expect(dissector.dissect([17, 0, 0, 0, 1, 2], .null).summary == "address family 17")
    }
}

@Suite("IP fragment reassembly")
struct FragmentReassemblyTests {
    let datagram = udp(payload: Array(repeating: 0xAB, count: 3000))

    @Test("fragments in order complete the datagram on the last one")
    func inOrder() {
        var extractor = UDPExtractor()
        let fragments = ipv4Fragments(of: datagram)
        #expect(fragments.count == 3)
        #expect(extractor.datagram(fragments[0], .ipv4) == .fragmentPending)
        #expect(extractor.datagram(fragments[1], .ipv4) == .fragmentPending)
        guard case .datagram(let whole) = extractor.datagram(fragments[2], .ipv4) else {
            Issue.record("expected the datagram")
            return
        }
        #expect(whole.payload == Array(repeating: 0xAB, count: 3000))
        #expect(extractor.reassembler.pendingCount == 0)
    }

    @Test("fragments out of order complete the datagram when the hole fills")
    func outOfOrder() {
        var extractor = UDPExtractor()
        let fragments = ipv4Fragments(of: udp(payload: Array(0..<3000).map { UInt8($0 % 251) }))
        #expect(extractor.datagram(fragments[2], .ipv4) == .fragmentPending)
        #expect(extractor.datagram(fragments[0], .ipv4) == .fragmentPending)
        guard case .datagram(let whole) = extractor.datagram(fragments[1], .ipv4) else {
            Issue.record("expected the datagram")
            return
        }
        #expect(whole.payload == Array(0..<3000).map { UInt8($0 % 251) })
        #expect(extractor.reassembler.pendingCount == 0)
    }

    @Test("a duplicated fragment does not disturb reassembly")
    func duplicates() {
        var extractor = UDPExtractor()
        let fragments = ipv4Fragments(of: datagram)
        #expect(extractor.datagram(fragments[0], .ipv4) == .fragmentPending)
        #expect(extractor.datagram(fragments[0], .ipv4) == .fragmentPending)
        #expect(extractor.datagram(fragments[1], .ipv4) == .fragmentPending)
        #expect(extractor.datagram(fragments[1], .ipv4) == .fragmentPending)
        guard case .datagram(let whole) = extractor.datagram(fragments[2], .ipv4) else {
            Issue.record("expected the datagram")
            return
        }
        #expect(whole.payload.count == 3000)
    }

    @Test("a 9216-byte datagram arrives as 7 fragments on a 1500 MTU and is rebuilt")
    func jumboDatagramInSevenFragments() {
        var dissector = FrameDissector()
        let data = Array(0..<9216).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let fragments = ipv4Fragments(of: udp(payload: data))
        #expect(fragments.count == 7)
        var summaries: [String] = []
        var last = DissectedFrame(summary: "")
        for fragment in fragments {
            last = dissector.dissect(IPLinkCase.ethernet.frame(fragment, version: 4), .ethernet)
            summaries.append(last.summary)
        }
        #expect(summaries[1] == "IPv4 fragment id 0x1c46 offset 1480")
        #expect(last.udp?.payload == data)
        #expect(last.summary == "UDP 127.0.0.1:50123 → 127.0.0.1:12345 9216 bytes (reassembled)")
    }

    @Test("pending datagrams beyond the limit evict the oldest")
    func evictsOldest() {
        var reassembler = IPFragmentReassembler(limits: .init(maxDatagrams: 2, maxBytes: 0))
        let part: [UInt8] = Array(repeating: 1, count: 8)
        func key(_ id: UInt32) -> IPFragmentReassembler.Key { .init(source: loopback4, destination: loopback4, proto: 17, identification: id) }
        for id in UInt32(1)...3 {
            _ = part.withUnsafeBytes { reassembler.add(key: key(id), offset: 0, moreFragments: true, payload: $0) }
        }
        #expect(reassembler.pendingCount == 2)
        #expect(reassembler.evicted == 1)
        // The first datagram was evicted: its last fragment now waits alone.
        let outcome = part.withUnsafeBytes { reassembler.add(key: key(1), offset: 8, moreFragments: false, payload: $0) }
        #expect(outcome == .pending)
    }

    @Test("a fragment past the last fragment's end is rejected")
    func conflictingEnd() {
        var reassembler = IPFragmentReassembler()
        let key = IPFragmentReassembler.Key(source: loopback4, destination: loopback4, proto: 17, identification: 9)
        let part: [UInt8] = Array(repeating: 1, count: 16)
        _ = part.withUnsafeBytes { reassembler.add(key: key, offset: 16, moreFragments: false, payload: $0) }
        let outcome = part.withUnsafeBytes { reassembler.add(key: key, offset: 24, moreFragments: true, payload: $0) }
        guard case .rejected = outcome else {
            Issue.record("expected rejection, got \(outcome)")
            return
        }
    }

    @Test("IPv6 fragments behind a Fragment header are reassembled")
    func ipv6FragmentHeader() {
        var extractor = UDPExtractor()
        let whole = udp(payload: Array(repeating: 0x5A, count: 100))
        // Fragment header: next header UDP, reserved, offset/8 << 3 | M, identification.
        let first = Array(whole[0..<64])
        let second = Array(whole[64...])
        let fragmentA = ipv6(next: 44, payload: [17, 0] + be16(0 << 3 | 1) + be32(0xCAFE) + first)
        let fragmentB = ipv6(next: 44, payload: [17, 0] + be16(8 << 3 | 0) + be32(0xCAFE) + second)
        #expect(extractor.datagram(fragmentB, .ipv6) == .fragmentPending)
        guard case .datagram(let datagram) = extractor.datagram(fragmentA, .ipv6) else {
            Issue.record("expected the datagram")
            return
        }
        #expect(datagram.payload == Array(repeating: 0x5A, count: 100))
    }

    @Test("IPv6 hop-by-hop and destination options headers are skipped")
    func ipv6ExtensionHeadersSkipped() {
        var extractor = UDPExtractor()
        let hopByHop: [UInt8] = [60, 0, 1, 4, 0, 0, 0, 0]
        let destinationOptions: [UInt8] = [17, 0, 1, 4, 0, 0, 0, 0]
        let packet = ipv6(next: 0, payload: hopByHop + destinationOptions + udp(payload: [4, 2]))
        guard case .datagram(let datagram) = extractor.datagram(packet, .ipv6) else {
            Issue.record("expected the datagram")
            return
        }
        #expect(datagram.payload == [4, 2])
    }
}

@Suite("IP address text")
struct IPAddressFormatTests {
    @Test("IPv4 is a dotted quad")
    func ipv4() { #expect(IPAddress.format([192, 168, 0, 10]) == "192.168.0.10") }

    @Test("IPv6 compresses the longest zero run, lowercase", arguments: [
        ([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1] as [UInt8], "2001:db8::1"),
        ([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1] as [UInt8], "2001:db8:0:1::1"),
        (Array(repeating: 0, count: 16) as [UInt8], "::"),
        ([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0xAB, 0xCD, 0, 0, 0, 0, 0, 0] as [UInt8], "fe80::abcd:0:0:0"),
        ([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1] as [UInt8], "2001:db8:0:1:1:1:1:1"),
        ([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 1] as [UInt8], "::ffff:192.0.2.1"),
    ])
    func ipv6(bytes: [UInt8], text: String) { #expect(IPAddress.format(bytes) == text) }
}

@Suite("Overlapping fragments")
struct OverlappingFragmentTests {
    @Test("where fragments overlap, the first copy of each byte wins")
    func firstCopyWins() {
        var reassembler = IPFragmentReassembler()
        let key = IPFragmentReassembler.Key(source: loopback4, destination: loopback4, proto: 17, identification: 1)
        let first: [UInt8] = Array(repeating: 1, count: 16)
        let overlapping: [UInt8] = Array(repeating: 2, count: 16)
        _ = first.withUnsafeBytes { reassembler.add(key: key, offset: 0, moreFragments: true, payload: $0) }
        let outcome = overlapping.withUnsafeBytes { reassembler.add(key: key, offset: 8, moreFragments: false, payload: $0) }
        #expect(outcome == .complete(Array(repeating: 1, count: 16) + Array(repeating: 2, count: 8)))
    }
}
