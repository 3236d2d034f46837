/// Where the sensor is worn: the value of the Body Sensor Location characteristic (UUID 0x2A38),
/// one byte. Values 7-255 are reserved by the spec; they are kept as `unknown` rather than
/// refused, because a sensor built against a later revision may use them and the app can still
/// show the measurements.
public enum BodySensorLocation: Equatable, Hashable, Sendable {
    /// 0: other.
    case other
    /// 1: chest (a chest strap).
    case chest
    /// 2: wrist.
    case wrist
    /// 3: finger.
    case finger
    /// 4: hand.
    case hand
    /// 5: ear lobe.
    case earLobe
    /// 6: foot.
    case foot
    /// 7-255: reserved for future use; the byte as received.
    case unknown(UInt8)

    /// The location for a characteristic byte. Always canonical: `unknown` only holds 7-255, so
    /// two equal bytes always give equal values.
    public init(rawValue: UInt8) {
        switch rawValue {
        case 0: self = .other
        case 1: self = .chest
        case 2: self = .wrist
        case 3: self = .finger
        case 4: self = .hand
        case 5: self = .earLobe
        case 6: self = .foot
        default: self = .unknown(rawValue)
        }
    }

    /// The characteristic byte.
    public var rawValue: UInt8 {
        switch self {
        case .other: 0
        case .chest: 1
        case .wrist: 2
        case .finger: 3
        case .hand: 4
        case .earLobe: 5
        case .foot: 6
        case .unknown(let value): value
        }
    }

    /// A stable snake_case name for traces (`ear_lobe`, `unknown`): the trace records the byte
    /// next to it, so `unknown` needs no number in its name.
    public var name: String {
        switch self {
        case .other: "other"
        case .chest: "chest"
        case .wrist: "wrist"
        case .finger: "finger"
        case .hand: "hand"
        case .earLobe: "ear_lobe"
        case .foot: "foot"
        case .unknown: "unknown"
        }
    }
}
