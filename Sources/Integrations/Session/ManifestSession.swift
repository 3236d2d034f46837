import ReplayKit
import BehaviourTrace
import CaptureSet

/// SessionCore settings a capture set (or the command line) changes from the core's defaults.
/// `nil` keeps the default (docs/session-core.md, "Values").
public struct SessionOverrides: Sendable, Hashable, Codable {
    /// HELLO resend time (3000 by default).
    public var handshakeTimeoutMs: Int?
    /// Retransmission and STATUS resend time (2000).
    public var retransmissionTimeoutMs: Int?
    /// A message's time limit for its reply or delivery (10000).
    public var messageReplyTimeoutMs: Int?
    /// Complication transfers per budget window (50).
    public var complicationTransfersPerWindow: Int?
    /// The complication budget's window in seconds (86400).
    public var complicationBudgetWindowS: Int?
    /// The window the core states in its handshake, in frames (none by default: the link keeps 8
    /// frames, and the HELLO / WELCOME carry no window option; docs/session-link.md, "Window").
    public var windowFrames: Int?
    /// Whether the core states compact frames in its handshake (not by default: its frames keep the
    /// 10-byte header; docs/session-link.md, "Compact frames").
    public var compactFrames: Bool?

    /// Overrides; all `nil` means the core's defaults.
    public init(handshakeTimeoutMs: Int? = nil, retransmissionTimeoutMs: Int? = nil, messageReplyTimeoutMs: Int? = nil,
                complicationTransfersPerWindow: Int? = nil, complicationBudgetWindowS: Int? = nil, windowFrames: Int? = nil,
                compactFrames: Bool? = nil) {
        self.handshakeTimeoutMs = handshakeTimeoutMs
        self.retransmissionTimeoutMs = retransmissionTimeoutMs
        self.messageReplyTimeoutMs = messageReplyTimeoutMs
        self.complicationTransfersPerWindow = complicationTransfersPerWindow
        self.complicationBudgetWindowS = complicationBudgetWindowS
        self.windowFrames = windowFrames
        self.compactFrames = compactFrames
    }

    /// These overrides with every field `other` sets taken from `other`.
    public func overridden(by other: SessionOverrides?) -> SessionOverrides {
        guard let other else { return self }
        return SessionOverrides(
            handshakeTimeoutMs: other.handshakeTimeoutMs ?? handshakeTimeoutMs,
            retransmissionTimeoutMs: other.retransmissionTimeoutMs ?? retransmissionTimeoutMs,
            messageReplyTimeoutMs: other.messageReplyTimeoutMs ?? messageReplyTimeoutMs,
            complicationTransfersPerWindow: other.complicationTransfersPerWindow ?? complicationTransfersPerWindow,
            complicationBudgetWindowS: other.complicationBudgetWindowS ?? complicationBudgetWindowS,
            windowFrames: other.windowFrames ?? windowFrames,
            compactFrames: other.compactFrames ?? compactFrames)
    }

    enum CodingKeys: String, CodingKey {
        case handshakeTimeoutMs = "handshake_timeout_ms"
        case retransmissionTimeoutMs = "retransmission_timeout_ms"
        case messageReplyTimeoutMs = "message_reply_timeout_ms"
        case complicationTransfersPerWindow = "complication_transfers_per_window"
        case complicationBudgetWindowS = "complication_budget_window_s"
        case windowFrames = "window_frames"
        case compactFrames = "compact_frames"
    }
}

/// The manifest's `session` section: which side of a session link the capture was recorded on and
/// is replayed as, and what the capture itself does not say.
///
/// ```yaml
/// session:
///   role: phone                       # the side whose HCI the capture holds
///   identity: 0ff1ce00-0000-4000-8000-000000000001
///   seed: 7                           # the recorded core's random seed (a live recording's `start` record says it too)
///   settings: {message_reply_timeout_ms: 4000}
///   frame_matching: strict            # strict | off
/// ```
public struct ManifestSession: Sendable, Hashable, Codable {
    /// `phone` or `watch`: the side replayed.
    public var role: String
    /// That side's session identity (UUID text).
    public var identity: String?
    /// The seed of the recorded core's random numbers, for captures without a `start` record.
    public var seed: UInt64?
    /// The paired counterpart's identity, for captures without a `start` record.
    public var pairedPeer: String?
    /// Core settings used for replaying this set.
    public var settings: SessionOverrides?
    /// How emitted frames are compared (`strict` when absent; `responder` is not offered).
    public var frameMatching: FrameMatchingMode?

    /// A section for one role.
    public init(role: String, identity: String? = nil, seed: UInt64? = nil, pairedPeer: String? = nil,
                settings: SessionOverrides? = nil, frameMatching: FrameMatchingMode? = nil) {
        self.role = role
        self.identity = identity
        self.seed = seed
        self.pairedPeer = pairedPeer
        self.settings = settings
        self.frameMatching = frameMatching
    }

    enum CodingKeys: String, CodingKey {
        case role, identity, seed
        case pairedPeer = "paired_peer"
        case settings
        case frameMatching = "frame_matching"
    }
}
