import DequeModule

// One app on one device: where its connection stands and what runs on it. The state is an enum
// whose cases carry what each state needs (as quinn-proto's and h11's connection states do), so a
// transfer without a connection, or a key without a connection to use it on, cannot be written
// down. Whether a connect command for the app is queued is not stored here: the device's command
// queue holds that command, and ``DeviceRecord/isConnecting(_:)`` asks the queue, so the two can
// never disagree.

/// Everything about one app on one device: its connection state and its queue of sends.
struct AppChannel: Sendable, Equatable {
    let app: IQUUID
    var state: ChannelState = .closed
    /// Sends waiting for their turn, oldest first. They outlive connections: a send queued while the
    /// watch closes the connection goes out on the next one.
    var outbox: Deque<QueuedSend> = []

    init(app: IQUUID) {
        self.app = app
    }

    /// The connection id, when open.
    var connection: UInt8? {
        if case .open(let open) = state { return open.id }
        return nil
    }

    /// Whether a transfer runs on the channel, in either direction.
    var hasTransfer: Bool {
        guard case .open(let open) = state else { return false }
        return open.outbound != nil || open.inbound != nil
    }

    /// Ends the phone → watch transfer. On a closed channel there is none to end, so nothing changes.
    mutating func endOutbound() {
        guard case .open(var open) = state else { return }
        open.outbound = nil
        state = .open(open)
    }

    /// Drops the watch → phone transfer. On a closed channel there is none to drop, so nothing changes.
    mutating func endInbound() {
        guard case .open(var open) = state else { return }
        open.inbound = nil
        state = .open(open)
    }
}

/// Where an app's channel stands.
enum ChannelState: Sendable, Equatable {
    /// No connection. Sends wait in the outbox; the first one queues a connect command (unless one
    /// is queued already), and the connect answer or the watch's own command 3 opens the channel.
    case closed
    /// A connection the watch knows, and the transfers running on it. Every transfer and key lives
    /// here, so closing the channel (command 4, an invalid-connection ack) forgets them all, and
    /// their timers with them.
    case open(OpenConnection)
}

/// An open connection (id 1–15) and what runs on it; one transfer each way at most.
struct OpenConnection: Sendable, Equatable {
    /// The connection id, given by the connect answer or by the watch's command 3.
    let id: UInt8
    /// The connect answer set flags bit 0 (never for a connection the watch opened: command 3 says
    /// nothing about packet size).
    let largePackets: Bool
    /// The phone → watch transfer under way.
    var outbound: OutboundTransfer?
    /// The watch → phone transfer under way.
    var inbound: InboundTransfer?
    /// The key of the watch's last key packet (or of the phone's answer to its key request), used by
    /// its next encrypted `first`. Separate from `inbound`: a key may arrive during a plain transfer.
    var inboundKey: [UInt8]?

    init(id: UInt8, largePackets: Bool) {
        self.id = id
        self.largePackets = largePackets
    }
}

/// A send waiting in an app's outbox.
struct QueuedSend: Sendable, Equatable {
    var id: SendID
    var serialized: [UInt8]
}

/// A phone → watch transfer under way.
struct OutboundTransfer: Sendable, Equatable {
    /// Which ack the transfer waits for; each stage carries the counters only it uses.
    enum Stage: Sendable, Equatable {
        case awaitingKeyAck
        /// `first` has been written `writes` times (1 + the retries after "transfer not started").
        case awaitingFirstAck(writes: Int)
        /// After the packet with seq `sequence`, the last of a full window; `nextPacket` is the index
        /// of the data packet the next window starts with.
        case awaitingWindowAck(sequence: UInt8, nextPacket: Int)
        /// After `last`, which carried `sequence`.
        case awaitingLastAck(sequence: UInt8)
    }

    var id: SendID
    /// The bytes on the wire: ciphertext when encrypted.
    var wire: [UInt8]
    var flags: TransferFlags
    var payloadSize: Int
    var stage: Stage
    /// When the step timer of the current stage runs out (``MessagingCore/armStepTimer(now:)``).
    var deadline: Duration
}

/// A watch → phone transfer under way.
struct InboundTransfer: Sendable, Equatable {
    var flags: TransferFlags
    var length: Int
    /// The key the transfer is encrypted with; `nil` when plain.
    var key: [UInt8]?
    var received: [UInt8] = []
    var packets = 0
    /// When the inbound timer runs out (``MessagingCore/armInboundTimer(now:)``).
    var deadline: Duration
}
