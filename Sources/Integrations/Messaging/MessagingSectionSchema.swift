import CaptureSet

// The `messaging:` section's schema, apart from the integration so the section fuzzer
// (CI/fuzz/run sections) can check it with no core compiled in.

/// Every key of the manifest's `messaging:` section and what it takes: the integration's settings
/// (which the command line may also change) and its other fields.
public enum MessagingSectionSchema {
    /// Every API-call record's `call` name (``MessagingAPICall/name`` gives them).
    public static let callNames: Set<String> = [
        "device_list", "bind_device", "bluetooth_state", "register_device", "unregister_device", "unregister_all_devices",
        "register_app", "unregister_app", "app_status", "send", "open_app",
    ]

    /// The keys a command line may change (`--set messaging.KEY=VALUE`, or their own flags).
    public static let settings: [SectionField] = [
        SectionField(key: "settings.window_size", flag: "messaging-window-size",
                     help: "MessagingCore's data packets per window.", kind: .integer(1...15)),
        SectionField(key: "settings.first_retries", flag: "messaging-first-retries",
                     help: "How often MessagingCore resends `first` after `transfer not started`.", kind: .integer(0...10)),
        SectionField(key: "settings.step_timeout_ms", flag: "messaging-step-timeout",
                     help: "MessagingCore's wait for each transfer acknowledgement (seconds, or 500ms, 2m; at most 1h).",
                     kind: .milliseconds(1...3_600_000)),
        SectionField(key: "settings.command_timeout_ms", help: "MessagingCore's wait for a command's answer (milliseconds, or with a unit).",
                     kind: .milliseconds(1...3_600_000)),
        SectionField(key: "frame_matching", help: "How emitted frames are checked: strict, responder or off.",
                     kind: .choice(["strict", "responder", "off"])),
    ]

    /// The section's other keys.
    public static let fields: [SectionField] = [
        SectionField(key: "devices[].uuid", help: "The device's UUID as Garmin Connect Mobile lists it.", kind: .uuid),
        SectionField(key: "devices[].address", help: "Its BLE address.", kind: .text),
        SectionField(key: "devices[].name", help: "Its friendly name.", kind: .text),
        SectionField(key: "devices[].model", help: "Its model.", kind: .text),
        // Virtual time is kept in nanoseconds as a 64-bit integer; 10¹² ms (about 31 years)
        // stays far inside it.
        SectionField(key: "api_calls[].t_ms", help: "When the call is made, in milliseconds after the first frame.",
                     kind: .number(0...1e12)),
        SectionField(key: "api_calls[].call", help: "The API call's name.", kind: .choice(callNames.sorted())),
        SectionField(key: "api_calls[].core", help: "The core the call is for.", kind: .choice(["messaging"])),
        SectionField(key: "api_calls[].*", help: "The call's arguments.", kind: .open),
    ]
}
