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

    /// A ``SessionAdapter`` for the section's role and settings.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        let section = try context.decodeSection(ManifestSession.self)
        return SessionAdapter(section: section, matching: context.frameMatching ?? section?.frameMatching ?? .strict)
    }
}
