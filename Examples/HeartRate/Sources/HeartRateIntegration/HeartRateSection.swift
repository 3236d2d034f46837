import ReplayKit

/// The manifest's `heart_rate:` section: what replay needs that the capture does not say.
///
/// ```yaml
/// heart_rate:
///   handles: {measurement: 21, measurement_cccd: 22, body_sensor_location: 24, control_point: 26}
///   no_data_timeout_ms: 5000
///   frame_matching: strict          # strict | off
///   api_calls:                      # when the app acted, for a capture without an api-calls interface
///     - {t_ns: 655731029, call: start}
///     - {t_ns: 6201951090, call: reset_energy_expended}
/// ```
/// Other keys (`scenario`, `seed`, `notifications`, `recorded_with`…) describe the recording and
/// are kept as written.
public struct HeartRateSection: Decodable, Sendable, Equatable {
    /// The strap's ATT handles (its GATT database as the phone discovered it).
    public var handles: Handles
    /// How long without a measurement before `no_data` (5000 ms when absent).
    public var noDataTimeoutMs: Int64?
    /// How the core's requests are compared with the phone's captured ones.
    public var frameMatching: FrameMatchingMode?
    /// The app's calls, in time order.
    public var apiCalls: [Call]

    /// The handles, as the section writes them.
    public struct Handles: Decodable, Sendable, Equatable {
        /// Heart Rate Measurement's value handle.
        public var measurement: UInt16
        /// Its Client Characteristic Configuration descriptor.
        public var measurementCCCD: UInt16
        /// Body Sensor Location's value handle, when the strap has one.
        public var bodySensorLocation: UInt16?
        /// Heart Rate Control Point's value handle, when the strap has one.
        public var controlPoint: UInt16?

        enum CodingKeys: String, CodingKey {
            case measurement
            case measurementCCCD = "measurement_cccd"
            case bodySensorLocation = "body_sensor_location"
            case controlPoint = "control_point"
        }
    }

    /// One app call at a virtual instant.
    public struct Call: Decodable, Sendable, Equatable {
        /// Nanoseconds after the capture's first frame.
        public var tNs: Int64
        /// `start`, `reset_energy_expended` or `read_sensor_location`.
        public var call: String

        enum CodingKeys: String, CodingKey {
            case tNs = "t_ns"
            case call
        }
    }

    enum CodingKeys: String, CodingKey {
        case handles
        case noDataTimeoutMs = "no_data_timeout_ms"
        case frameMatching = "frame_matching"
        case apiCalls = "api_calls"
    }

    /// `api_calls` may be left out.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        handles = try c.decode(Handles.self, forKey: .handles)
        noDataTimeoutMs = try c.decodeIfPresent(Int64.self, forKey: .noDataTimeoutMs)
        frameMatching = try c.decodeIfPresent(FrameMatchingMode.self, forKey: .frameMatching)
        apiCalls = try c.decodeIfPresent([Call].self, forKey: .apiCalls) ?? []
    }
}
