/// Why the simulator or the ingest server could not do its job; says what to do next.
public struct LiveHostError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The endpoint or file concerned (`127.0.0.1:12345`, a store path).
    public var target: String
    /// The step that failed (`getaddrinfo`, `bind`, `sendto`, `store chunk`).
    public var step: String
    /// What the system said.
    public var detail: String
    /// What the user can do.
    public var hint: String

    /// Makes an error; see the properties.
    public init(target: String, step: String, detail: String, hint: String) {
        self.target = target
        self.step = step
        self.detail = detail
        self.hint = hint
    }

    public var description: String { "\(target): \(step) failed: \(detail). \(hint)" }
}

extension LiveHostError {
    /// The BLE bridge (`Harness/rigs/ciq_phone_bridge.py`) could not be started or reached;
    /// `detail` says what happened and what to check.
    package static func bridge(_ detail: String) -> LiveHostError {
        LiveHostError(target: "BLE bridge", step: "talking to the bridge", detail: detail, hint: "Run with --bridge-log FILE to keep the bridge's own log.")
    }
}
