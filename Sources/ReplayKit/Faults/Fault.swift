/// Which peer frames a fault applies to: every condition given must hold.
///
/// A *peer frame* is one the core under test receives from the other side of its link: an HCI
/// ACL packet from the controller (the watch's ATT PDUs), a TCP segment from the MQTT broker, a
/// UDP datagram to the ingest port (``PeerFrameClassifier``). The core's own writes, HCI events
/// and `api-calls` records are never selected, with one exception: the controller's HCI
/// Disconnection Complete (kind `disconnection`), selected only by naming that kind, so a run can
/// hold back or lose the recorded end of a BLE link (a sweep holds back the capture's last one).
public struct FrameSelector: Sendable, Hashable, CustomStringConvertible {
    /// Capture frame numbers (1-based, as `tether inspect --frames` shows them).
    public var frames: ClosedRange<Int>?
    /// Virtual time window, from the capture's first frame, both ends inclusive.
    public var window: ClosedRange<Duration>?
    /// The packet kind (`notification`, `write-response`, `publish`, `puback`, `datagram`…).
    public var kind: PeerFrameKind?

    /// Every peer frame.
    public static let all = FrameSelector()

    /// A selector with the given conditions.
    public init(frames: ClosedRange<Int>? = nil, window: ClosedRange<Duration>? = nil, kind: PeerFrameKind? = nil) {
        self.frames = frames
        self.window = window
        self.kind = kind
    }

    /// Whether a peer frame matches.
    public func matches(number: Int, at time: Duration, kind frameKind: PeerFrameKind) -> Bool {
        if let frames, !frames.contains(number) { return false }
        if let window, !window.contains(time) { return false }
        if let kind, !kind.covers(frameKind) { return false }
        // The controller's report of a link's end is no packet on the air: only a selector that
        // names its kind touches it, never `drop:p=…` or a frame range meant for the peer's data.
        if frameKind == .disconnection, kind != .disconnection { return false }
        return true
    }

    /// `frame=412`, `frames=400-420:kind=notification`, or empty for every peer frame.
    public var description: String {
        var parts: [String] = []
        if let frames { parts.append(frames.count == 1 ? "frame=\(frames.lowerBound)" : "frames=\(frames.lowerBound)-\(frames.upperBound)") }
        // Only the ends given are written (an open end is zero or the end of time), so the text
        // reads back as `--fault` takes it: `to=` is at most a day.
        if let window {
            if window.lowerBound != .zero || window.upperBound == .nanoseconds(Int64.max) { parts.append("from=\(FaultText.duration(window.lowerBound))") }
            if window.upperBound != .nanoseconds(Int64.max) { parts.append("to=\(FaultText.duration(window.upperBound))") }
        }
        if let kind { parts.append("kind=\(kind.rawValue)") }
        return parts.joined(separator: ":")
    }
}

/// What a peer frame carries, by its link's protocol: what `kind=` selects.
public enum PeerFrameKind: String, Sendable, Hashable, CaseIterable {
    // BLE (ATT from the peripheral)
    /// ATT Handle Value Notification.
    case notification
    /// ATT Handle Value Indication.
    case indication
    /// ATT Write Request or Write Command from the peer (a capture taken on the GATT server's
    /// side: the watch's, whose peer writes).
    case write
    /// ATT Write Response.
    case writeResponse = "write-response"
    /// ATT Read (Blob/by Type/Multiple) Response, Find Information/by Type Value Response.
    case readResponse = "read-response"
    /// ATT Error Response.
    case errorResponse = "error-response"
    /// ATT Exchange MTU Response or Request from the peer.
    case mtu
    /// Any other ACL packet from the peer (signalling, SMP, a fragment).
    case acl
    /// HCI Disconnection Complete: the controller reporting that the link ended (the recorded
    /// end of a connection). Selected only by `kind=disconnection`.
    case disconnection
    // MQTT (from the broker)
    /// CONNACK.
    case connack
    /// PUBLISH.
    case publish
    /// PUBACK.
    case puback
    /// PUBREC, PUBREL or PUBCOMP.
    case pubflow
    /// SUBACK.
    case suback
    /// UNSUBACK.
    case unsuback
    /// PINGRESP.
    case pingresp
    /// A TCP segment from the broker that completes no MQTT packet (a bare ACK, part of one).
    case tcp
    // UDP
    /// A UDP datagram to the core.
    case datagram
    // Families
    /// Any ATT PDU or ACL packet from a BLE peer.
    case ble
    /// Any segment from the MQTT broker.
    case mqtt

    /// Whether the peer's application chose to send it (data a peer app may fail to send), as
    /// opposed to what its protocol stack always answers (ATT responses, MTU, signalling: the link
    /// layer retransmits them until the link itself is lost). What a sweep drops and delays.
    public var isApplicationData: Bool {
        switch self {
        case .writeResponse, .readResponse, .errorResponse, .mtu, .acl, .disconnection, .connack, .suback, .unsuback, .pingresp, .pubflow, .tcp: false
        default: true
        }
    }

    /// Whether selecting `self` selects a frame of kind `kind`.
    public func covers(_ kind: PeerFrameKind) -> Bool {
        switch self {
        case .ble: return [.notification, .indication, .write, .writeResponse, .readResponse, .errorResponse, .mtu, .acl].contains(kind)
        case .mqtt: return [.connack, .publish, .puback, .pubflow, .suback, .unsuback, .pingresp, .tcp].contains(kind)
        default: return self == kind
        }
    }
}

/// One fault applied between the capture and the core, on the virtual clock: a value, so a run's
/// faults are data (a command line, a manifest's scenario, a sweep's variant) and the same faults
/// with the same seeds give the same trace.
public enum Fault: Sendable, Hashable, CustomStringConvertible {
    /// The selected peer frames never reach the core.
    case drop(FrameSelector)
    /// The selected peer frames reach the core `by` later than captured.
    case delay(FrameSelector, by: Duration)
    /// The selected peer frames reach the core twice, the copy right after the original.
    case duplicate(FrameSelector)
    /// The link drops at `at` (BLE: HCI Disconnection Complete, reason 0x08, connection timeout;
    /// MQTT: the broker resets the TCP connection); nothing more of the dropped connection reaches
    /// the core. A BLE link comes back `reconnectAfter` later, when given: the connection's
    /// recorded setup (connection complete, MTU exchange, discovery, subscriptions, up to the
    /// peer's first notification) is fed again.
    case disconnect(at: Duration, reconnectAfter: Duration?)
    /// Each selected peer frame is lost with probability `probability`, decided per frame from
    /// `seed` and the frame number (so one frame's fate never depends on another's).
    case randomDrop(FrameSelector, probability: Double, seed: UInt64)
    /// Selected peer frames are taken in blocks of `window` consecutive ones (a block closes
    /// early after `hold` without a new one) and each block reaches the core in an order shuffled
    /// from `seed`, at the instant its block closed.
    case reorder(FrameSelector, window: Int, hold: Duration, seed: UInt64)
    /// Each selected peer frame is delayed by a time drawn uniformly from 0…`max`, per frame from
    /// `seed` and the frame number (frames may then overtake each other, as on a real link).
    case jitter(FrameSelector, max: Duration, seed: UInt64)
    /// Each selected UDP datagram reaches the core cut to its first `bytes` bytes (the IP and UDP
    /// lengths say so, as a receiver of a truncated read would see it).
    case truncate(FrameSelector, bytes: Int)
    /// Each selected ATT Write Response reaches the core as an ATT Error Response to the write it
    /// answers, with error code `code` (default 0x0E, Unlikely Error).
    case attError(FrameSelector, code: UInt8)
    /// Each selected ATT Exchange MTU Response (or Request, from a peer that starts the exchange)
    /// reaches the core stating `size` instead of the recorded MTU: the peer's stack offers less
    /// (or more) than it did in the recording, and the connection runs at the smaller of the two.
    case mtu(FrameSelector, size: UInt16)

    /// The text form `--fault` takes: `drop:frame=412`, `delay:frame=412:by=6s`, `drop:p=0.05:seed=7`…
    public var description: String {
        func with(_ head: String, _ selector: FrameSelector, _ rest: [String] = []) -> String {
            ([head] + (selector.description.isEmpty ? [] : [selector.description]) + rest).joined(separator: ":")
        }
        switch self {
        case .drop(let s): return with("drop", s)
        case .delay(let s, let by): return with("delay", s, ["by=\(FaultText.duration(by))"])
        case .duplicate(let s): return with("duplicate", s)
        case .disconnect(let at, let again):
            return "disconnect:at=\(FaultText.duration(at))" + (again.map { ":reconnect=\(FaultText.duration($0))" } ?? "")
        case .randomDrop(let s, let p, let seed): return with("drop", s, ["p=\(p)", "seed=\(seed)"])
        case .reorder(let s, let window, let hold, let seed):
            return with("reorder", s, ["window=\(window)", "hold=\(FaultText.duration(hold))", "seed=\(seed)"])
        case .jitter(let s, let max, let seed): return with("jitter", s, ["max=\(FaultText.duration(max))", "seed=\(seed)"])
        case .truncate(let s, let bytes): return with("truncate", s, ["bytes=\(bytes)"])
        case .attError(let s, let code):
            let hex = String(code, radix: 16, uppercase: true)
            return with("att-error", s, ["code=0x\(hex.count == 1 ? "0" + hex : hex)"])
        case .mtu(let s, let size): return with("mtu", s, ["size=\(size)"])
        }
    }

    /// The selector of a per-frame fault; `nil` for `disconnect`.
    public var selector: FrameSelector? {
        switch self {
        case .drop(let s), .delay(let s, _), .duplicate(let s), .randomDrop(let s, _, _), .reorder(let s, _, _, _),
             .jitter(let s, _, _), .truncate(let s, _), .attError(let s, _), .mtu(let s, _):
            return s
        case .disconnect:
            return nil
        }
    }
}

/// Durations as faults write them: `6s`, `40ms`, `1.5s`, `250us`.
enum FaultText {
    static func duration(_ d: Duration) -> String {
        let ns = d.replayNanoseconds
        if ns % 1_000_000_000 == 0 { return "\(ns / 1_000_000_000)s" }
        if ns % 1_000_000 == 0 { return "\(ns / 1_000_000)ms" }
        if ns % 1_000 == 0 { return "\(ns / 1_000)us" }
        return "\(ns)ns"
    }
}
