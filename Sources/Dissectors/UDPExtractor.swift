import CaptureKit

/// What ``UDPExtractor`` made of one frame.
public enum UDPExtraction: Sendable, Hashable {
    /// A whole UDP datagram: the frame carried it, or its fragment completed it.
    case datagram(UDPDatagram)
    /// An IP fragment was kept; the datagram is not complete yet.
    case fragmentPending
    /// Not UDP (another IP protocol, ARP, a link type that carries no IP, …).
    case notUDP
    /// The bytes break a layout: the problem names the layer, the offset and what was expected.
    /// Indirect: held in a box, so the case every frame returns stays as small as before.
    indirect case malformed(DissectionProblem)
}

/// The fast path from a frame to its UDP datagram, for replay: link layer (Ethernet, Linux SLL/SLL2,
/// NULL/LOOP, RAW/IPv4/IPv6) → IPv4 or IPv6 (with fragment reassembly) → UDP, and nothing else.
///
/// Stateful only for fragment reassembly, which is bounded (see ``IPFragmentReassembler``).
public struct UDPExtractor: Sendable {
    var reassembler = IPFragmentReassembler()
    /// Whether TCP segments carry a copy of their data (``TCPSegment/payload``). Replay reads the
    /// data from the frame while it is dissected and needs no copy.
    var copiesTCPPayload = true
    /// Whether a UDP datagram that lies whole in the frame carries a copy of its payload
    /// (``UDPDatagram/payload``); off only inside ``datagramInPlace(from:linkType:)``.
    private var copiesUDPPayload = true

    /// An extractor with no pending fragments.
    public init() {}

    /// Whether `other` will make the same of every frame from here on as this extractor: both
    /// hold no fragment of an unfinished datagram (the only state an extractor has; with
    /// fragments pending, `false`, which is only ever cautious) and copy alike.
    public func hasSameState(as other: UDPExtractor) -> Bool {
        reassembler.pendingCount == 0 && other.reassembler.pendingCount == 0
            && copiesTCPPayload == other.copiesTCPPayload && copiesUDPPayload == other.copiesUDPPayload
    }

    /// The UDP datagram the frame carries or completes. `data` is the frame's bytes under `linkType`.
    public mutating func datagram(from data: UnsafeRawBufferPointer, linkType: LinkType) -> UDPExtraction {
        switch dissect(data, linkType: linkType) {
        case .udp(let datagram, _, _): .datagram(datagram)
        case .fragmentPending: .fragmentPending
        case .tcp, .otherTransport, .notIP: .notUDP
        case .problem(let problem): .malformed(problem)
        }
    }

    /// ``datagram(from:linkType:)`` without a copy of a payload that lies in `data`: the datagram
    /// then has an empty `payload`, and `payloadRange` says where its payload is in `data`. A
    /// datagram completed from IP fragments has its `payload` and no range. For a caller that
    /// reads the payload while it holds `data` (replay): a copy per datagram, an array made and
    /// freed, was a twentieth of a plugin replay.
    public mutating func datagramInPlace(from data: UnsafeRawBufferPointer, linkType: LinkType) -> (UDPExtraction, payloadRange: Range<Int>?) {
        copiesUDPPayload = false
        defer { copiesUDPPayload = true }
        switch dissect(data, linkType: linkType) {
        case .udp(let datagram, _, let payloadRange): return (.datagram(datagram), payloadRange)
        case .fragmentPending: return (.fragmentPending, nil)
        case .tcp, .otherTransport, .notIP: return (.notUDP, nil)
        case .problem(let problem): return (.malformed(problem), nil)
        }
    }

    /// The link types this path understands.
    public static func handles(_ linkType: LinkType) -> Bool {
        switch linkType {
        case .ethernet, .linuxSLL, .linuxSLL2, .null, .loop, .raw, .ipv4, .ipv6: true
        default: false
        }
    }

    /// The full outcome, with what ``FrameDissector`` needs for a summary.
    enum Outcome: Sendable, Hashable {
        /// A UDP datagram. `payloadRange` is where its payload lies in the frame being dissected
        /// when the datagram's `payload` was left empty (``UDPExtractor/copiesUDPPayload`` off);
        /// `nil` when `payload` holds the data.
        case udp(UDPDatagram, reassembled: Bool, payloadRange: Range<Int>?)
        /// A TCP segment. `payloadRange` is where its data lies in the frame being dissected
        /// (the segment's own `payload` is then left empty, unless ``UDPExtractor/copiesTCPPayload``);
        /// `nil` for a segment reassembled from IP fragments, whose `payload` holds the data.
        case tcp(TCPSegment, payloadRange: Range<Int>?)
        case fragmentPending(version: Int, identification: UInt32, offset: Int)
        case otherTransport(version: Int, proto: UInt8, source: IPAddress, destination: IPAddress)
        case notIP(String)
        case problem(DissectionProblem)
    }

    mutating func dissect(_ data: UnsafeRawBufferPointer, linkType: LinkType) -> Outcome {
        let link: Result<LinkLayerResult, DissectionProblem>
        switch linkType {
        case .ethernet: link = Ethernet.parse(data)
        case .linuxSLL: link = LinuxCooked.parseSLL(data)
        case .linuxSLL2: link = LinuxCooked.parseSLL2(data)
        case .null: link = Loopback.parseNull(data)
        case .loop: link = Loopback.parseLoop(data)
        case .raw: link = RawIP.parse(data)
        case .ipv4: link = .success(LinkLayerResult(network: .ipv4, offset: 0))
        case .ipv6: link = .success(LinkLayerResult(network: .ipv6, offset: 0))
        default: return .notIP("link type \(linkType) carries no IP")
        }
        switch link {
        case .failure(let problem): return .problem(problem)
        case .success(let result):
            switch result.network {
            case .ipv4: return ipv4(data, at: result.offset)
            case .ipv6: return ipv6(data, at: result.offset)
            case .other(let name): return .notIP(name)
            }
        }
    }

    private mutating func ipv4(_ data: UnsafeRawBufferPointer, at offset: Int) -> Outcome {
        let header: IPv4Header
        switch IPv4Header.parse(data, at: offset) {
        case .failure(let problem): return .problem(problem)
        case .success(let parsed): header = parsed
        }
        let payloadStart = offset + header.headerLength
        let payloadEnd = offset + header.totalLength
        let source = header.source
        let destination = header.destination
        guard header.proto == IPProtocol.udp || header.proto == IPProtocol.tcp else {
            return .otherTransport(version: 4, proto: header.proto, source: source, destination: destination)
        }
        guard header.isFragment else {
            return transport(header.proto, data, at: payloadStart, end: payloadEnd, source: source, destination: destination, reassembled: false, context: nil)
        }
        guard let fragment = data.slice(at: payloadStart, count: payloadEnd - payloadStart) else {
            return .problem(.short("IPv4", at: payloadStart, need: payloadEnd - payloadStart, what: "fragment data", have: data.count - payloadStart))
        }
        let key = IPFragmentReassembler.Key(
            source: header.source.bytes, destination: header.destination.bytes, proto: header.proto,
            identification: UInt32(header.identification))
        switch reassembler.add(key: key, offset: header.fragmentOffset, moreFragments: header.moreFragments, payload: fragment) {
        case .pending:
            return .fragmentPending(version: 4, identification: UInt32(header.identification), offset: header.fragmentOffset)
        case .rejected(let expected, let found):
            return .problem(DissectionProblem(layer: "IPv4 reassembly", offset: offset + 6, expected: expected, found: found))
        case .complete(let payload):
            return payload.withUnsafeBytes { buffer in
                transport(header.proto, buffer, at: 0, end: buffer.count, source: source, destination: destination, reassembled: true,
                          context: "the datagram reassembled from IPv4 fragments id \(hex(header.identification, digits: 4))")
            }
        }
    }

    private mutating func ipv6(_ data: UnsafeRawBufferPointer, at offset: Int) -> Outcome {
        let header: IPv6Header
        switch IPv6Header.parse(data, at: offset) {
        case .failure(let problem): return .problem(problem)
        case .success(let parsed): header = parsed
        }
        let end = offset + IPv6Header.fixedLength + header.payloadLength
        let source = header.source
        let destination = header.destination
        switch IPv6Header.walk(data, next: header.nextHeader, offset: offset + IPv6Header.fixedLength, end: end) {
        case .failure(let problem):
            return .problem(problem)
        case .success(.upper(let proto, let upperOffset)):
            guard proto == IPProtocol.udp || proto == IPProtocol.tcp else {
                return .otherTransport(version: 6, proto: proto, source: source, destination: destination)
            }
            return transport(proto, data, at: upperOffset, end: end, source: source, destination: destination, reassembled: false, context: nil)
        case .success(.fragment(let next, let fragmentOffset, let more, let id, let dataOffset)):
            guard let fragment = data.slice(at: dataOffset, count: end - dataOffset) else {
                return .problem(.short("IPv6", at: dataOffset, need: end - dataOffset, what: "fragment data", have: data.count - dataOffset))
            }
            let key = IPFragmentReassembler.Key(source: header.source.bytes, destination: header.destination.bytes, proto: next, identification: id)
            switch reassembler.add(key: key, offset: fragmentOffset, moreFragments: more, payload: fragment) {
            case .pending:
                return .fragmentPending(version: 6, identification: id, offset: fragmentOffset)
            case .rejected(let expected, let found):
                return .problem(DissectionProblem(layer: "IPv6 reassembly", offset: dataOffset - 6, expected: expected, found: found))
            case .complete(let payload):
                let context = "the datagram reassembled from IPv6 fragments id \(hex(id, digits: 8))"
                return payload.withUnsafeBytes { buffer in
                    // Headers after the Fragment header belong to the fragmentable part.
                    switch IPv6Header.walk(buffer, next: next, offset: 0, end: buffer.count, context: context) {
                    case .failure(let problem):
                        return .problem(problem)
                    case .success(.fragment):
                        return .problem(DissectionProblem(
                            layer: "IPv6", offset: 0, expected: "one Fragment header per datagram",
                            found: "another inside the reassembled data", context: context))
                    case .success(.upper(let proto, let upperOffset)):
                        guard proto == IPProtocol.udp || proto == IPProtocol.tcp else {
                            return .otherTransport(version: 6, proto: proto, source: source, destination: destination)
                        }
                        return transport(proto, buffer, at: upperOffset, end: buffer.count, source: source, destination: destination, reassembled: true, context: context)
                    }
                }
            }
        }
    }

    private func transport(
        _ proto: UInt8, _ buffer: UnsafeRawBufferPointer, at offset: Int, end: Int, source: IPAddress, destination: IPAddress,
        reassembled: Bool, context: String?
    ) -> Outcome {
        guard proto == IPProtocol.tcp else {
            return udp(buffer, at: offset, end: end, source: source, destination: destination, reassembled: reassembled, context: context)
        }
        // Data reassembled from fragments lives in a buffer that is gone once this returns: copy it.
        let copying = copiesTCPPayload || reassembled
        switch TCPHeader.parse(buffer, at: offset, end: end, source: source, destination: destination, context: context, copyingPayload: copying) {
        case .success(let parsed): return .tcp(parsed.segment, payloadRange: reassembled ? nil : parsed.payloadRange)
        case .failure(let problem): return .problem(problem)
        }
    }

    private func udp(
        _ buffer: UnsafeRawBufferPointer, at offset: Int, end: Int, source: IPAddress, destination: IPAddress,
        reassembled: Bool, context: String?
    ) -> Outcome {
        switch UDPHeader.parse(buffer, at: offset, end: end, context: context) {
        case .failure(let problem):
            return .problem(problem)
        case .success(let header):
            // Data reassembled from fragments lives in a buffer that is gone once this returns: copy it.
            let copying = copiesUDPPayload || reassembled
            let payload = copying ? buffer.bytes(at: header.payload.lowerBound, count: header.payload.count) ?? [] : []
            return .udp(UDPDatagram(
                sourceAddress: source, sourcePort: header.sourcePort,
                destinationAddress: destination, destinationPort: header.destinationPort,
                payload: payload), reassembled: reassembled, payloadRange: copying ? nil : header.payload)
        }
    }
}
