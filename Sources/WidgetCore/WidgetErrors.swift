/// Why the app or host's call was refused.
public enum WidgetErrorCode: String, Sendable, Hashable, CaseIterable, Codable, CustomStringConvertible {
    /// The call belongs to the other side (e.g. `updateSettings` on the widget, `fireScene` on the
    /// host, a refresh request to the host).
    case wrongRole = "wrong-role"
    /// A parameter is not valid: settings that are not an object, an empty device or scene id, no
    /// properties to set, a URL without a scheme, a refresh budget of 0, an open-URL id that waits
    /// for no answer, an account that cannot be an MQTT topic level.
    case invalidParameter = "invalid-parameter"
    /// A cloud request before ``WidgetCore/startConnection(now:)``: nothing would ever send it.
    case notStarted = "not-started"

    /// `wrong-role`, `invalid-parameter`, `not-started`.
    public var description: String { rawValue }
}

/// A refused call: its code and what happened, where, and what to do. Thrown (typed) by the core's
/// API; the core's state is then unchanged.
public struct WidgetError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of misuse.
    public var code: WidgetErrorCode
    /// What happened and what to do about it.
    public var detail: String

    /// Creates an error.
    public init(_ code: WidgetErrorCode, _ detail: String) {
        self.code = code
        self.detail = detail
    }

    /// `wrong-role: <detail>`.
    public var description: String { "\(code): \(detail)" }
}
