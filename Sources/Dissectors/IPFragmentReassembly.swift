/// Reassembles IP datagrams from fragments, for IPv4 (RFC 791 §3.2, "Fragmentation and
/// Reassembly", and RFC 815's hole bookkeeping) and IPv6 (RFC 8200 §4.5).
///
/// Fragments are keyed by (source, destination, protocol, identification) and may arrive in any
/// order, repeated or overlapping (the first copy of a byte wins). Memory is bounded: at most
/// ``Limits/maxDatagrams`` datagrams and ``Limits/maxBytes`` buffered bytes are pending at once;
/// the oldest pending datagram (by first fragment seen) is evicted to make room. No clocks: age is arrival order.
struct IPFragmentReassembler: Sendable {
    /// Caps on what is held while fragments are missing.
    struct Limits: Sendable, Hashable {
        var maxDatagrams: Int = 64
        var maxBytes: Int = 4 << 20
    }

    struct Key: Sendable, Hashable {
        var source: [UInt8]
        var destination: [UInt8]
        var proto: UInt8
        var identification: UInt32
    }

    enum Outcome: Sendable, Hashable {
        /// More fragments are needed.
        case pending
        /// The fragment completed the datagram: its payload (the bytes after the IP header).
        case complete([UInt8])
        /// The fragment contradicts what was seen before or breaks a limit; it was ignored.
        case rejected(expected: String, found: String)
    }

    /// The largest payload an IP datagram (without jumbograms) can reassemble to.
    static let maxPayload = 65535

    private struct Partial: Sendable {
        /// Fragment data as it arrived; copied into place once, when the datagram completes, so
        /// a fragment far into the datagram costs only its own bytes while others are missing.
        var chunks: [(offset: Int, bytes: [UInt8])] = []
        var heldBytes = 0
        /// Received byte ranges, sorted and merged.
        var received: [Range<Int>] = []
        /// Known once the fragment without "more fragments" arrives.
        var totalLength: Int?
        var sequence: UInt64
    }

    let limits: Limits
    private var pending: [Key: Partial] = [:]
    private var pendingBytes = 0
    private var nextSequence: UInt64 = 0
    /// How many incomplete datagrams were evicted to stay inside the limits.
    private(set) var evicted = 0

    init(limits: Limits = Limits()) {
        self.limits = Limits(maxDatagrams: max(1, limits.maxDatagrams), maxBytes: max(Self.maxPayload, limits.maxBytes))
    }

    /// Datagrams waiting for fragments.
    var pendingCount: Int { pending.count }

    mutating func add(key: Key, offset: Int, moreFragments: Bool, payload: UnsafeRawBufferPointer) -> Outcome {
        let end = offset &+ payload.count
        guard offset >= 0, end <= Self.maxPayload else {
            return .rejected(
                expected: "a fragment ending within \(Self.maxPayload) bytes of payload",
                found: "one covering bytes \(offset)..<\(end)")
        }
        var partial = pending[key] ?? Partial(sequence: nextSequence)
        let isNew = pending[key] == nil
        if !moreFragments {
            if let total = partial.totalLength, total != end {
                return .rejected(
                    expected: "the last fragment to end at byte \(total) as an earlier last fragment did",
                    found: "it ends at byte \(end)")
            }
            if let last = partial.received.last, last.upperBound > end {
                return .rejected(
                    expected: "the last fragment to end after every fragment seen (byte \(last.upperBound))",
                    found: "it ends at byte \(end)")
            }
            partial.totalLength = end
        } else if let total = partial.totalLength, end > total {
            return .rejected(
                expected: "a fragment ending by byte \(total), where the last fragment ended",
                found: "one ending at byte \(end)")
        }
        if isNew { nextSequence &+= 1 }
        let range = offset..<end
        // A repeat of bytes already held adds nothing (retransmissions carry the same bytes);
        // anything else is kept.
        if !range.isEmpty, !partial.received.contains(where: { $0.contains(range.lowerBound) && $0.upperBound >= range.upperBound }) {
            partial.chunks.append((offset, [UInt8](payload)))
            partial.heldBytes += payload.count
            pendingBytes += payload.count
            Self.insert(range, into: &partial.received)
        }

        if let total = partial.totalLength, total == 0 || partial.received == [0..<total] {
            pending[key] = nil
            pendingBytes -= partial.heldBytes
            var datagram = [UInt8](repeating: 0, count: total)
            // Oldest last, so the first copy of a byte wins where fragments overlap.
            for chunk in partial.chunks.reversed() where chunk.offset + chunk.bytes.count <= total {
                datagram.replaceSubrange(chunk.offset..<(chunk.offset + chunk.bytes.count), with: chunk.bytes)
            }
            return .complete(datagram)
        }
        pending[key] = partial
        evictIfNeeded(keeping: key)
        return .pending
    }

    /// Merges `range` into a sorted list of disjoint ranges.
    private static func insert(_ range: Range<Int>, into ranges: inout [Range<Int>]) {
        var merged = range
        var result: [Range<Int>] = []
        result.reserveCapacity(ranges.count + 1)
        var placed = false
        for existing in ranges {
            if existing.upperBound < merged.lowerBound {
                result.append(existing)
            } else if merged.upperBound < existing.lowerBound {
                if !placed { result.append(merged); placed = true }
                result.append(existing)
            } else {
                merged = min(existing.lowerBound, merged.lowerBound)..<max(existing.upperBound, merged.upperBound)
            }
        }
        if !placed { result.append(merged) }
        ranges = result
    }

    private mutating func evictIfNeeded(keeping key: Key) {
        while pending.count > limits.maxDatagrams || pendingBytes > limits.maxBytes {
            // The newest datagram is kept if anything else can go; a linear scan is fine for 64.
            guard let oldest = pending.filter({ $0.key != key }).min(by: { $0.value.sequence < $1.value.sequence }) else {
                return
            }
            pendingBytes -= oldest.value.heldBytes
            pending[oldest.key] = nil
            evicted += 1
        }
    }
}
