import ReplayKit
import BehaviourTrace
import CaptureSet

/// A Connect IQ device of the recording: its SDK identity and the BLE address it was reached at,
/// so replay knows which captured link is which device.
public struct ManifestMessagingDevice: Sendable, Hashable, Codable {
    /// The device's UUID as Garmin Connect Mobile's device list gives it.
    public var uuid: String
    /// Its BLE address, `F0:F1:F2:F3:F4:F5`.
    public var address: String?
    /// Friendly name.
    public var name: String?
    /// Model name.
    public var model: String?

    /// Describe one device.
    public init(uuid: String, address: String? = nil, name: String? = nil, model: String? = nil) {
        self.uuid = uuid
        self.address = address
        self.name = name
        self.model = model
    }
}

/// MessagingCore settings a capture set (or the command line) changes from the core's defaults.
/// `nil` keeps the default.
public struct MessagingOverrides: Sendable, Hashable, Codable {
    /// Longest wait for an acknowledgement of one transfer step (5000 by default).
    public var stepTimeoutMs: Int?
    /// Longest wait for the answer to a command: connect, disconnect, app info, open app (3000).
    public var commandTimeoutMs: Int?
    /// Data packets per acknowledged window (15).
    public var windowSize: Int?
    /// How often `first` is sent again after `transfer not started` (2).
    public var firstRetries: Int?

    /// Overrides; all `nil` means the core's defaults.
    public init(stepTimeoutMs: Int? = nil, commandTimeoutMs: Int? = nil, windowSize: Int? = nil, firstRetries: Int? = nil) {
        self.stepTimeoutMs = stepTimeoutMs
        self.commandTimeoutMs = commandTimeoutMs
        self.windowSize = windowSize
        self.firstRetries = firstRetries
    }

    /// These overrides with every field `other` sets taken from `other`.
    public func overridden(by other: MessagingOverrides?) -> MessagingOverrides {
        guard let other else { return self }
        return MessagingOverrides(
            stepTimeoutMs: other.stepTimeoutMs ?? stepTimeoutMs,
            commandTimeoutMs: other.commandTimeoutMs ?? commandTimeoutMs,
            windowSize: other.windowSize ?? windowSize,
            firstRetries: other.firstRetries ?? firstRetries)
    }

    enum CodingKeys: String, CodingKey {
        case stepTimeoutMs = "step_timeout_ms"
        case commandTimeoutMs = "command_timeout_ms"
        case windowSize = "window_size"
        case firstRetries = "first_retries"
    }
}

/// The manifest's `messaging` section: what replay needs to know about a Connect IQ recording
/// that the capture itself does not say.
public struct ManifestMessaging: Sendable, Hashable, Codable {
    /// The devices and their BLE addresses.
    public var devices: [ManifestMessagingDevice]
    /// API calls written by hand, for captures without an `api-calls` interface.
    public var apiCalls: [ManifestAPICall]
    /// Core settings used for replaying this set.
    public var settings: MessagingOverrides?
    /// How emitted frames are compared (`strict` when absent).
    public var frameMatching: FrameMatchingMode?

    /// A section; everything defaults to empty.
    public init(devices: [ManifestMessagingDevice] = [], apiCalls: [ManifestAPICall] = [], settings: MessagingOverrides? = nil, frameMatching: FrameMatchingMode? = nil) {
        self.devices = devices
        self.apiCalls = apiCalls
        self.settings = settings
        self.frameMatching = frameMatching
    }

    enum CodingKeys: String, CodingKey {
        case devices
        case apiCalls = "api_calls"
        case settings
        case frameMatching = "frame_matching"
    }

    /// Lists may be left out.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        devices = try c.decodeIfPresent([ManifestMessagingDevice].self, forKey: .devices) ?? []
        apiCalls = try c.decodeIfPresent([ManifestAPICall].self, forKey: .apiCalls) ?? []
        settings = try c.decodeIfPresent(MessagingOverrides.self, forKey: .settings)
        frameMatching = try c.decodeIfPresent(FrameMatchingMode.self, forKey: .frameMatching)
    }
}
