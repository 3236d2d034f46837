/// A live source or the recorder could not do what was asked. Every case says which source
/// (interface or channel), which step failed, what the system answered, and what to do next.
public struct LiveCaptureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, coarsely, so callers (and the CLI's exit codes) can tell cases apart.
    public enum Kind: Sendable, Hashable {
        /// The process may not capture: it needs root or `cap_net_raw`/`cap_net_admin`.
        case permissionDenied
        /// The named interface does not exist.
        case noSuchDevice
        /// The interface exists but is down.
        case interfaceDown
        /// The capture filter did not compile or could not be installed.
        case badFilter
        /// The kernel has no Bluetooth support at all (`AF_BLUETOOTH` gives `EAFNOSUPPORT`).
        case bluetoothUnsupported
        /// A system call or libpcap call failed for another reason.
        case system
        /// Reading frames failed while capturing.
        case readFailed
        /// The capture file or the manifest could not be written.
        case output
        /// The API was used wrongly (for example `start()` twice).
        case misuse
    }

    /// What went wrong.
    public var kind: Kind
    /// The interface or channel concerned (`lo`, `bluetooth-monitor`, a capture-set path).
    public var source: String
    /// The step that failed (`pcap_activate`, `socket(AF_BLUETOOTH)`, `write capture.pcapng`).
    public var step: String
    /// What the system or library said.
    public var detail: String
    /// What the user can do next.
    public var hint: String

    /// Makes an error; see the properties for what each part should say.
    public init(kind: Kind, source: String, step: String, detail: String, hint: String) {
        self.kind = kind
        self.source = source
        self.step = step
        self.detail = detail
        self.hint = hint
    }

    /// One line: source, step, detail, hint.
    public var description: String {
        "\(source): \(step) failed: \(detail). \(hint)"
    }
}
