import CaptureSet

// The `session:` section's schema, apart from the integration so the section fuzzer
// (CI/fuzz/run sections) can check it with no core compiled in.

/// Every key of the manifest's `session:` section and what it takes: the integration's settings
/// (which the command line may also change) and its other fields.
public enum SessionSectionSchema {
    /// The keys a command line may change (`--set session.KEY=VALUE`, or their own flags).
    public static let settings: [SectionField] = [
        SectionField(key: "settings.message_reply_timeout_ms", flag: "session-message-reply-timeout",
                     help: "SessionCore's message time limit (seconds, or 500ms, 2m; at most 1h).",
                     kind: .milliseconds(1...3_600_000)),
        SectionField(key: "settings.handshake_timeout_ms", help: "SessionCore's HELLO resend time (milliseconds, or with a unit).",
                     kind: .milliseconds(1...3_600_000)),
        SectionField(key: "settings.retransmission_timeout_ms", help: "SessionCore's retransmission and STATUS resend time.",
                     kind: .milliseconds(1...3_600_000)),
        SectionField(key: "settings.complication_transfers_per_window", help: "Complication transfers per budget window.",
                     kind: .integer(0...1_000_000)),
        // The bound is SessionLink.maximumWindowFrames (SessionCore is not imported here, so the
        // fuzzer builds without it).
        SectionField(key: "settings.window_frames", flag: "session-window-frames",
                     help: "The window SessionCore states in its HELLO or WELCOME, in frames (1 to 4096; absent: none stated, the link's default of 8).",
                     kind: .integer(1...4096)),
        SectionField(key: "settings.compact_frames",
                     help: "Whether SessionCore states compact frames in its HELLO or WELCOME (true or false; absent: false, page-2 frames).",
                     kind: .boolean),
        SectionField(key: "frame_matching", help: "How emitted frames are checked: strict, responder or off.", kind: .choice(["strict", "responder", "off"])),
    ]

    /// The section's other keys.
    public static let fields: [SectionField] = [
        SectionField(key: "role", help: "The side whose HCI the capture holds.", kind: .choice(["phone", "watch"])),
        SectionField(key: "identity", help: "That side's session identity.", kind: .uuid),
        SectionField(key: "paired_peer", help: "The paired counterpart's identity.", kind: .uuid),
        SectionField(key: "seed", help: "The recorded core's random seed.", kind: .unsigned64),
        SectionField(key: "settings.complication_budget_window_s", help: "The complication budget's window in seconds.",
                     kind: .integer(1...31_536_000)),
    ]
}
