import CaptureSet

// The `ingest:` section's schema, apart from the integration so the section fuzzer
// (CI/fuzz/run sections) can check it with no core compiled in.

/// Every key of the manifest's `ingest:` section and what it takes: the integration's settings
/// (which the command line may also change) and its other fields.
public enum IngestSectionSchema {
    /// The keys a command line may change (`--set ingest.KEY=VALUE`, or their own flags).
    public static let settings: [SectionField] = [
        SectionField(key: "idle_timeout_ms", flag: "ingest-idle-timeout",
                     help: "IngestCore's stream idle timeout (seconds, or 500ms, 8s, 2m, 1h; at most 24h).",
                     kind: .milliseconds(1...86_400_000)),
        SectionField(key: "flush_interval_ms", help: "How often buffered points are handed on (milliseconds, or with a unit).",
                     kind: .milliseconds(1...86_400_000)),
        SectionField(key: "flush_bytes", help: "Payload bytes that hand buffered points on at once.",
                     kind: .integer(1...1 << 30)),
        SectionField(key: "port", flag: "ingest-port",
                     help: "Feed IngestCore the datagrams to this UDP port, whatever the manifest says.",
                     kind: .integer(1...65_535)),
    ]
}
