/// A logical connection as the dissectors key it: the adapter (BlueZ monitor index; 0 for H4 link
/// types) and the ACL connection handle.
struct ConnectionKey: Sendable, Hashable {
    var adapter: UInt16
    var handle: UInt16
}

/// Reassembles L2CAP PDUs from HCI ACL fragments, per (connection, direction): Core v6.0 Vol 4
/// Part E §5.4.2 (packet boundary flag: 0b00 / 0b10 start a PDU, 0b01 continues it, 0b11 is a
/// complete PDU) and Vol 3 Part A §7.2 (fragmentation and recombination; the L2CAP basic header's
/// length says when the PDU is whole).
///
/// Memory is bounded: one PDU in progress per (connection, direction), each at most 65,539 bytes
/// (the basic header's u16 length + 4), and at most ``maxInProgress`` in progress at once (the
/// oldest is dropped). Broken sequences are reported, never trapped on.
struct ACLReassembler: Sendable {
    struct Key: Sendable, Hashable {
        var connection: ConnectionKey
        var direction: HCIDirection
    }

    /// What one fragment did.
    struct Outcome: Sendable, Hashable {
        /// The L2CAP PDU (basic header included) this fragment completed.
        var pdu: [UInt8]?
        /// `true` when the fragment was a whole PDU by itself and the caller asked to borrow it
        /// (``ACLReassembler/add(_:data:key:dataOffset:borrowingWholePDU:)``): the PDU is then the
        /// fragment's own bytes, and ``pdu`` stays `nil` (no copy).
        var pduIsFragment = false
        /// Bytes held so far and the PDU's total when known, for a fragment that did not complete.
        var progress: (have: Int, of: Int?)? {
            get { progressHave.map { ($0, progressOf) } }
            set { progressHave = newValue?.have; progressOf = newValue?.of }
        }
        private var progressHave: Int?
        private var progressOf: Int?
        /// A broken sequence noticed on the way (the fragment may still have been used).
        var problem: DissectionProblem?

        init(pdu: [UInt8]? = nil, problem: DissectionProblem? = nil) {
            self.pdu = pdu
            self.problem = problem
        }
    }

    private struct Partial: Sendable {
        var bytes: [UInt8]
        var sequence: UInt64
        /// 4 + the basic header's length, once 4 bytes are in.
        var expected: Int? {
            guard bytes.count >= 4 else { return nil }
            return 4 + (Int(bytes[1]) << 8 | Int(bytes[0]))
        }
    }

    let maxInProgress: Int
    private var partials: [Key: Partial] = [:]
    private var nextSequence: UInt64 = 0

    init(maxInProgress: Int = 64) {
        self.maxInProgress = max(1, maxInProgress)
    }

    /// PDUs waiting for continuation fragments.
    var inProgressCount: Int { partials.count }

    /// Adds one ACL packet's data. `dataOffset` is where the data starts in the frame, for problems.
    ///
    /// With `borrowingWholePDU`, a start fragment that holds a whole PDU by itself (the usual case
    /// on an LE link) is not copied: the outcome says ``Outcome/pduIsFragment`` and the caller
    /// reads the PDU from `data`. Everything else (state, problems) is as without it.
    mutating func add(_ header: HCIACLHeader, data: UnsafeRawBufferPointer, key: Key, dataOffset: Int, borrowingWholePDU: Bool = false) -> Outcome {
        var outcome = Outcome()
        // Only problems name the handle: formatted when one is made, not for every fragment.
        var handleText: String { hex(key.connection.handle, digits: 4) }
        var partial: Partial
        if header.isContinuation {
            guard let existing = partials[key] else {
                outcome.problem = DissectionProblem(
                    layer: "ACL", offset: dataOffset - HCIACLHeader.length,
                    expected: "a start fragment on handle \(handleText) before this continuation",
                    found: "a continuation fragment (\(data.count) bytes) with nothing to continue; it was dropped")
                return outcome
            }
            partial = existing
            partial.bytes.append(contentsOf: data)
        } else {
            if let stale = partials[key] {
                outcome.problem = DissectionProblem(
                    layer: "ACL", offset: dataOffset - HCIACLHeader.length,
                    expected: "the rest of the L2CAP PDU in progress on handle \(handleText)",
                    found: "a new start fragment; the unfinished PDU (\(stale.bytes.count) of \(stale.expected.map(String.init) ?? "?") bytes) was dropped")
            }
            if borrowingWholePDU, let length = data.u16le(at: 0), data.count == 4 + Int(length) {
                // Whole in one fragment: nothing to hold, nothing to copy.
                if outcome.problem != nil { partials[key] = nil }
                nextSequence &+= 1
                outcome.pduIsFragment = true
                return outcome
            }
            partial = Partial(bytes: Array(data), sequence: nextSequence)
            nextSequence &+= 1
        }

        if let expected = partial.expected {
            if partial.bytes.count == expected {
                partials[key] = nil
                outcome.pdu = partial.bytes
                return outcome
            }
            if partial.bytes.count > expected {
                partials[key] = nil
                outcome.problem = DissectionProblem(
                    layer: "ACL", offset: dataOffset - HCIACLHeader.length,
                    expected: "\(expected) bytes in the L2CAP PDU on handle \(handleText), as its basic header says",
                    found: "\(partial.bytes.count) bytes of fragments; the PDU was dropped")
                return outcome
            }
        }
        partials[key] = partial
        outcome.progress = (partial.bytes.count, partial.expected)
        evictIfNeeded(keeping: key)
        return outcome
    }

    /// Forgets both directions of a connection (Disconnection Complete).
    mutating func drop(_ connection: ConnectionKey) {
        for direction in [HCIDirection.sent, .received, .unknown] {
            partials[Key(connection: connection, direction: direction)] = nil
        }
    }

    private mutating func evictIfNeeded(keeping key: Key) {
        while partials.count > maxInProgress {
            guard let oldest = partials.filter({ $0.key != key }).min(by: { $0.value.sequence < $1.value.sequence }) else { return }
            partials[oldest.key] = nil
        }
    }
}
