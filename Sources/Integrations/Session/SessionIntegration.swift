import CaptureSet
import ReplayKit

/// WatchConnectivity-style sessions over Tether's session link as replay sees it: the recorded
/// side's HCI and API calls fed to ``SessionCore`` in the manifest's role; the `session:` section
/// (``ManifestSession``) says which side, its identity, seed and settings.
public struct SessionIntegration: CoreIntegration {
    /// The integration; it has no state.
    public init() {}

    /// `session`.
    public var name: String { "session" }
    /// For `--help`.
    public var summary: String { "WatchConnectivity-style sessions, phone or watch (SessionCore)" }
    /// HCI and monitor-channel interfaces (named `core: session`, or with a `session:` section).
    public var replayedRoles: Set<InterfaceRole> { [.bleHCI, .bleMonitor] }
    /// The section's `settings` keys, with the command line's bounds.
    public var settings: [IntegrationSetting] {
        [
            IntegrationSetting(key: "settings.message_reply_timeout_ms", flag: "session-message-reply-timeout",
                               help: "SessionCore's message time limit (seconds, or 500ms, 2m; at most 1h).",
                               kind: .milliseconds(1...3_600_000)),
            IntegrationSetting(key: "settings.handshake_timeout_ms", help: "SessionCore's HELLO resend time (milliseconds, or with a unit).",
                               kind: .milliseconds(1...3_600_000)),
            IntegrationSetting(key: "settings.retransmission_timeout_ms", help: "SessionCore's retransmission and STATUS resend time.",
                               kind: .milliseconds(1...3_600_000)),
            IntegrationSetting(key: "settings.complication_transfers_per_window", help: "Complication transfers per budget window.",
                               kind: .integer(0...1_000_000)),
            IntegrationSetting(key: "frame_matching", help: "How emitted frames are checked: strict or off.", kind: .choice(["strict", "off"])),
        ]
    }

    /// The rest of the `session:` section (``ManifestSession``).
    public var sectionFields: [IntegrationSetting] {
        [
            IntegrationSetting(key: "role", help: "The side whose HCI the capture holds.", kind: .choice(["phone", "watch"])),
            IntegrationSetting(key: "identity", help: "That side's session identity.", kind: .uuid),
            IntegrationSetting(key: "paired_peer", help: "The paired counterpart's identity.", kind: .uuid),
            IntegrationSetting(key: "seed", help: "The recorded core's random seed.", kind: .unsigned64),
            IntegrationSetting(key: "settings.complication_budget_window_s", help: "The complication budget's window in seconds.",
                               kind: .integer(1...31_536_000)),
        ]
    }

    /// What ``SessionAdapter`` and the live session host write (docs/trace-format.md).
    public var emittedEvents: [String] {
        ["api_call", "api_error", "api_record_malformed", "step_failed", "link_not_found",
         "activation_did_complete", "session_did_become_inactive", "session_did_deactivate", "watch_state_did_change",
         "reachability_did_change", "handshake_completed", "peer_reinstalled",
         "did_receive_application_context", "application_context_unchanged", "application_context_failed",
         "did_receive_message", "did_receive_message_data", "message_delivered", "did_receive_reply", "did_receive_reply_data",
         "message_failed", "late_reply_discarded",
         "did_receive_user_info", "user_info_transfer_did_finish",
         "file_bytes_stored", "file_discarded", "did_receive_file", "file_transfer_progress", "file_transfer_did_finish",
         "timeout", "violation",
         "frame_emitted", "frame_matched", "frame_unsent", "frame_diverged", "summary"]
    }

    /// A ``SessionAdapter`` for the section's role and settings.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        let section = try context.decodeSection(ManifestSession.self)
        return SessionAdapter(section: section, matching: context.frameMatching ?? section?.frameMatching ?? .strict)
    }
}
