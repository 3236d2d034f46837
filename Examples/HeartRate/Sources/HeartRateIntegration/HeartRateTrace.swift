import HeartRateCore
import ReplayKit

/// The `heart_rate` core's names in the trace, declared once: an event is named by one of these
/// rather than by a literal interned each time it is written (docs/extending.md, "Names").
public enum HeartRateTrace {
    /// The trace's core name.
    public static let core: TraceName = "heart_rate"
    /// The CCCD write was acknowledged.
    public static let subscribed: TraceName = "subscribed"
    /// A measurement notification, decoded: the one written per notification.
    public static let measurement: TraceName = "measurement"
    /// The Body Sensor Location read answered.
    public static let sensorLocation: TraceName = "sensor_location"
    /// Reset Energy Expended accepted.
    public static let energyExpendedReset: TraceName = "energy_expended_reset"
    /// No measurement within the timeout.
    public static let noData: TraceName = "no_data"
    /// A measurement after `no_data`.
    public static let dataResumed: TraceName = "data_resumed"
    /// The sensor's skin contact changed.
    public static let sensorContactChanged: TraceName = "sensor_contact_changed"
    /// Something failed.
    public static let error: TraceName = "error"
    /// The link went down (the adapter's own event).
    public static let linkDown: TraceName = "link_down"

    /// The trace name of `event`: the name ``HeartRateEvent/name`` gives it, declared above.
    public static func name(of event: HeartRateEvent) -> TraceName {
        switch event {
        case .subscribed: subscribed
        case .measurement: measurement
        case .sensorLocation: sensorLocation
        case .energyExpendedReset: energyExpendedReset
        case .noData: noData
        case .dataResumed: dataResumed
        case .sensorContactChanged: sensorContactChanged
        case .error: error
        }
    }
}
