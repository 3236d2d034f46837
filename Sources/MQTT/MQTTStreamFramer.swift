/// Cuts one direction of a TCP byte stream into MQTT control packets by their fixed headers, across
/// any segmentation. Bounded: a packet longer than ``maximumPacketLength`` is skipped by its length
/// (never held), and a fixed header that cannot be read stops the framing of this stream for good,
/// because nothing after it can be trusted to start a packet.
public struct MQTTStreamFramer: Sendable {
    /// What the stream yielded.
    public enum Item {
        /// One whole packet, fixed header included (valid only during the callback).
        case packet(UnsafeRawBufferPointer)
        /// A packet longer than the bound was passed over: its type byte and its whole length.
        case skipped(firstByte: UInt8, length: Int)
        /// The stream cannot be framed from here on.
        case unframeable(MQTTDecodeError)
    }

    /// The longest packet held across segments; longer ones are skipped.
    public let maximumPacketLength: Int
    private var partial: [UInt8] = []
    private var skipRemaining = 0
    /// `true` once a fixed header could not be read: everything after is dropped.
    public private(set) var isLost = false
    /// Bytes of a packet begun but not finished (held or being skipped).
    public var pendingBytes: Int { partial.count + skipRemaining }

    /// A framer with nothing pending.
    public init(maximumPacketLength: Int = 16 << 20) {
        self.maximumPacketLength = max(maximumPacketLength, 5)
    }

    /// Feeds the next in-order bytes of the stream; `emit` gets each item they complete, in order.
    public mutating func feed(_ chunk: UnsafeRawBufferPointer, _ emit: (Item) -> Void) {
        guard !isLost else { return }
        var position = 0
        if skipRemaining > 0 {
            let skipped = min(skipRemaining, chunk.count)
            skipRemaining -= skipped
            position = skipped
        }
        if !partial.isEmpty {
            // Complete the held packet: first its header, then its body.
            var header: MQTTFixedHeader?
            while header == nil {
                switch partial.withUnsafeBytes({ MQTTFixedHeader.scan($0) }) {
                case .malformed(let error):
                    lose(error, emit)
                    return
                case .needMore:
                    guard position < chunk.count else { return }
                    partial.append(chunk[position])
                    position += 1
                case .header(let scanned):
                    header = scanned
                }
            }
            guard let header else { return }
            if header.packetLength > maximumPacketLength {
                let first = partial[0]
                skipRemaining = header.packetLength - partial.count
                partial.removeAll()
                emit(.skipped(firstByte: first, length: header.packetLength))
                let skipped = min(skipRemaining, chunk.count - position)
                skipRemaining -= skipped
                position += skipped
                if skipRemaining > 0 { return }
            } else {
                let wanted = header.packetLength - partial.count
                let taken = min(wanted, chunk.count - position)
                partial.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[position..<(position + taken)]))
                position += taken
                guard taken == wanted else { return }
                partial.withUnsafeBytes { emit(.packet($0)) }
                partial.removeAll(keepingCapacity: true)
            }
        }
        // Packets wholly inside the chunk are handed out in place, without a copy.
        while position < chunk.count {
            let rest = UnsafeRawBufferPointer(rebasing: chunk[position...])
            switch MQTTFixedHeader.scan(rest) {
            case .malformed(let error):
                lose(error, emit)
                return
            case .needMore:
                partial.append(contentsOf: rest)
                return
            case .header(let header):
                if header.packetLength > maximumPacketLength {
                    emit(.skipped(firstByte: rest[0], length: header.packetLength))
                    let skipped = min(header.packetLength, rest.count)
                    skipRemaining = header.packetLength - skipped
                    position += skipped
                } else if header.packetLength <= rest.count {
                    emit(.packet(UnsafeRawBufferPointer(rebasing: rest[..<header.packetLength])))
                    position += header.packetLength
                } else {
                    partial.reserveCapacity(header.packetLength)
                    partial.append(contentsOf: rest)
                    return
                }
            }
        }
    }

    /// Stops framing for good: bytes of the stream went missing, so no later byte can be trusted to
    /// start a packet.
    public mutating func abandon() {
        isLost = true
        partial = []
        skipRemaining = 0
    }

    private mutating func lose(_ error: MQTTDecodeError, _ emit: (Item) -> Void) {
        isLost = true
        partial = []
        skipRemaining = 0
        emit(.unframeable(error))
    }
}
