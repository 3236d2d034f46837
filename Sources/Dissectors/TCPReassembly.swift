/// One direction of a TCP connection: who sent, to whom.
public struct TCPFlowKey: Sendable, Hashable {
    /// Sender address.
    public var sourceAddress: IPAddress
    /// Sender port.
    public var sourcePort: UInt16
    /// Receiver address.
    public var destinationAddress: IPAddress
    /// Receiver port.
    public var destinationPort: UInt16

    /// The flow a segment belongs to.
    public init(_ segment: TCPSegment) {
        sourceAddress = segment.sourceAddress
        sourcePort = segment.sourcePort
        destinationAddress = segment.destinationAddress
        destinationPort = segment.destinationPort
    }

    /// Hashes one word folded from the addresses and ports: flow keys are looked up several times
    /// per segment, and hashing the whole key dominated dissection time. Equality still compares
    /// every field.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(foldedWord)
    }

    /// The addresses and ports folded into one word (``FlowTable`` mixes it into a slot).
    var foldedWord: UInt64 {
        var folded = UInt64(sourcePort) << 48 | UInt64(destinationPort) << 32
        folded ^= sourceAddress.foldedBits &* 0x9E37_79B9_7F4A_7C15
        folded ^= destinationAddress.foldedBits &* 0xC2B2_AE3D_27D4_EB4F
        return folded
    }

    /// The other direction of the same connection.
    public var reversed: TCPFlowKey {
        var key = self
        swap(&key.sourceAddress, &key.destinationAddress)
        swap(&key.sourcePort, &key.destinationPort)
        return key
    }
}

/// In-order bytes of one direction, as reassembly hands them out.
public struct TCPDelivery {
    /// The direction.
    public var flow: TCPFlowKey
    /// The next bytes of the stream (valid only during the callback).
    public var bytes: UnsafeRawBufferPointer
    /// Bytes given up for lost just before these (0 when the stream is contiguous).
    public var lostBefore: Int
    /// The direction started with this segment (a SYN with a new sequence number, or joined
    /// mid-stream): nothing earlier of it carries over.
    public var startsStream: Bool = false
}

/// What reassembly made of one segment.
public struct TCPSegmentAnalysis: Sendable, Hashable {
    /// The sequence number relative to the direction's first (SYN, or the first segment seen), as
    /// Wireshark shows it.
    public var relativeSequence: UInt32 = 0
    /// Every byte of the segment had been delivered before: a retransmission.
    public var isRetransmission = false
    /// Some bytes had been delivered before, some are new.
    public var overlapsDeliveredData = false
    /// The segment starts past a gap and waits for the bytes before it.
    public var isOutOfOrder = false
    /// Bytes this segment made deliverable in order (its own and waiting segments it unblocked).
    public var deliveredBytes = 0
    /// This direction starts afresh: a SYN with a new initial sequence number, or the first segment
    /// seen of a direction joined mid-stream.
    public var startsNewStream = false
    /// An RST ended both directions.
    public var resetsConnection = false
    /// Bytes given up for lost: a gap that held more than the reassembler keeps waiting behind it.
    /// The stream resumes after the gap; what was in it is never seen.
    public var lostBytes = 0
}

/// Reassembles TCP byte streams, each direction of each connection on its own, in sequence order:
/// out-of-order segments wait for the gap before them; retransmitted bytes are delivered once;
/// overlapping segments deliver only what is new. Sequence numbers wrap (RFC 9293 §3.4).
///
/// Bounded: at most ``maximumFlows`` directions (the least recently used is forgotten) and, per
/// direction, ``maximumPendingBytes`` bytes or ``maximumPendingSegments`` segments waiting behind a
/// gap; beyond that the gap is declared lost (``TCPSegmentAnalysis/lostBytes``) and the stream
/// resumes after it, so a capture that missed a segment cannot stall dissection for good.
public struct TCPReassembler: Sendable {
    struct Waiting: Sendable {
        var sequence: UInt32
        var bytes: [UInt8]
    }

    struct Flow: Sendable {
        var base: UInt32
        var next: UInt32
        var waiting: [Waiting] = []
        var waitingBytes = 0
        var finished = false
        var lastUse: UInt64 = 0
    }

    /// Directions tracked at once.
    public let maximumFlows: Int
    /// Bytes held behind a gap, per direction.
    public let maximumPendingBytes: Int
    /// Segments held behind a gap, per direction.
    public let maximumPendingSegments: Int
    private var flows = FlowTable<Flow>()
    private var clock: UInt64 = 0

    /// A reassembler with no flows.
    public init(maximumFlows: Int = 4096, maximumPendingBytes: Int = 4 << 20, maximumPendingSegments: Int = 1024) {
        self.maximumFlows = max(maximumFlows, 2)
        self.maximumPendingBytes = max(maximumPendingBytes, 1)
        self.maximumPendingSegments = max(maximumPendingSegments, 1)
    }

    /// Directions being tracked.
    public var flowCount: Int { flows.count }

    /// Whether a direction has been seen (and not reset or forgotten since).
    public func isTracking(_ flow: TCPFlowKey) -> Bool { flows[flow] != nil }

    /// Takes one segment; `deliver` gets the bytes it makes available in order (possibly several
    /// chunks: its own, then waiting segments it unblocked), each with its flow.
    public mutating func add(_ segment: TCPSegment, deliver: (TCPDelivery) -> Void) -> TCPSegmentAnalysis {
        segment.payload.withUnsafeBytes { add(segment, payload: $0, deliver: deliver) }
    }

    /// Takes one segment whose data is `payload` (``TCPSegment/payload`` is not read: a dissector
    /// that keeps no copy of the bytes passes them here, borrowed from the frame).
    public mutating func add(_ segment: TCPSegment, payload: UnsafeRawBufferPointer, deliver: (TCPDelivery) -> Void) -> TCPSegmentAnalysis {
        clock &+= 1
        let key = TCPFlowKey(segment)
        var analysis = TCPSegmentAnalysis()
        let sequence = segment.sequenceNumber
        let isSYN = segment.flags & TCPSegment.syn != 0
        if segment.flags & TCPSegment.rst != 0 {
            // Both directions end; a later SYN on the same ports is a new connection.
            analysis.relativeSequence = flows.removeValue(forKey: key).map { sequence &- $0.base } ?? 0
            flows[key.reversed] = nil
            analysis.resetsConnection = true
            return analysis
        }
        let clock = self.clock
        let bounds = (bytes: maximumPendingBytes, segments: maximumPendingSegments)
        // Changed where it lies in the table: one lookup, and the flow's buffers uniquely owned.
        flows.withValue(forKey: key) { stored in
            var flow: Flow
            if isSYN {
                if let existing = stored.take(), existing.base == sequence {
                    flow = existing  // a retransmitted SYN
                    analysis.isRetransmission = true
                } else {
                    flow = Flow(base: sequence, next: sequence &+ 1)
                    analysis.startsNewStream = true
                }
            } else if let existing = stored.take() {
                flow = existing
            } else {
                // Joined mid-stream: the first segment seen sets the origin.
                flow = Flow(base: sequence &- 1, next: sequence)
                analysis.startsNewStream = true
            }
            flow.lastUse = clock
            // SYN occupies one sequence number: its data (if any) starts after it.
            let dataStart = isSYN ? sequence &+ 1 : sequence
            analysis.relativeSequence = sequence &- flow.base
            if !payload.isEmpty {
                let distance = Int(Int32(bitPattern: dataStart &- flow.next))
                if distance <= 0 {
                    let fresh = payload.count + distance
                    if fresh <= 0 {
                        analysis.isRetransmission = true
                    } else {
                        if distance < 0 { analysis.overlapsDeliveredData = true }
                        deliver(TCPDelivery(flow: key, bytes: UnsafeRawBufferPointer(rebasing: payload[(-distance)...]), lostBefore: 0,
                                            startsStream: analysis.startsNewStream))
                        flow.next = flow.next &+ UInt32(fresh)
                        analysis.deliveredBytes += fresh
                        Self.drain(&flow, key: key, analysis: &analysis, lostBefore: 0, deliver: deliver)
                    }
                } else {
                    analysis.isOutOfOrder = true
                    Self.hold(Array(payload), at: dataStart, in: &flow, key: key, bounds: bounds, analysis: &analysis, deliver: deliver)
                }
            }
            if segment.flags & TCPSegment.fin != 0 {
                let finSequence = dataStart &+ UInt32(truncatingIfNeeded: payload.count)
                if finSequence == flow.next {
                    flow.next = flow.next &+ 1
                    flow.finished = true
                }
            }
            stored = flow
        }
        // The flow just used is the most recent, so eviction never takes it.
        if flows.count > maximumFlows { evictLeastRecentlyUsed() }
        return analysis
    }

    private static func hold(
        _ payload: [UInt8], at sequence: UInt32, in flow: inout Flow, key: TCPFlowKey, bounds: (bytes: Int, segments: Int),
        analysis: inout TCPSegmentAnalysis, deliver: (TCPDelivery) -> Void
    ) {
        if let index = flow.waiting.firstIndex(where: { $0.sequence == sequence }) {
            guard payload.count > flow.waiting[index].bytes.count else {
                analysis.isRetransmission = true
                return
            }
            flow.waitingBytes += payload.count - flow.waiting[index].bytes.count
            flow.waiting[index].bytes = payload
        } else {
            flow.waiting.append(Waiting(sequence: sequence, bytes: payload))
            flow.waitingBytes += payload.count
        }
        // Over the bound: give up on the gap before the earliest waiting segment.
        while flow.waitingBytes > bounds.bytes || flow.waiting.count > bounds.segments {
            guard let earliest = flow.waiting.min(by: { Int32(bitPattern: $0.sequence &- $1.sequence) < 0 }) else { break }
            let gap = Int(Int32(bitPattern: earliest.sequence &- flow.next))
            guard gap > 0 else { break }
            analysis.lostBytes += gap
            flow.next = earliest.sequence
            drain(&flow, key: key, analysis: &analysis, lostBefore: gap, deliver: deliver)
        }
    }

    private static func drain(
        _ flow: inout Flow, key: TCPFlowKey, analysis: inout TCPSegmentAnalysis, lostBefore: Int,
        deliver: (TCPDelivery) -> Void
    ) {
        var lostBefore = lostBefore
        var progressed = true
        while progressed, !flow.waiting.isEmpty {
            progressed = false
            var index = 0
            while index < flow.waiting.count {
                let waiting = flow.waiting[index]
                let distance = Int(Int32(bitPattern: waiting.sequence &- flow.next))
                guard distance <= 0 else {
                    index += 1
                    continue
                }
                flow.waiting.remove(at: index)
                flow.waitingBytes -= waiting.bytes.count
                let fresh = waiting.bytes.count + distance
                if fresh > 0 {
                    waiting.bytes.withUnsafeBytes { bytes in
                        deliver(TCPDelivery(flow: key, bytes: UnsafeRawBufferPointer(rebasing: bytes[(-distance)...]), lostBefore: lostBefore))
                    }
                    lostBefore = 0
                    flow.next = flow.next &+ UInt32(fresh)
                    analysis.deliveredBytes += fresh
                    progressed = true
                }
            }
        }
    }

    private mutating func evictLeastRecentlyUsed() {
        guard let oldest = flows.entries.min(by: { $0.value.lastUse < $1.value.lastUse })?.key else { return }
        flows[oldest] = nil
    }
}
