// The internal state of a WidgetCore: requests in flight, devices as shown, refreshes, open-URL
// requests, and what one call produces.

/// A cloud request from the call until its one result.
struct PendingRequest: Sendable {
    var id: WidgetRequestID
    var sequence: UInt64
    var path: WidgetAPIPath
    var params: WidgetJSON
    var origin: WidgetRequestOrigin
    var deadline: Duration
    /// When it was published on the current connection (`nil`: queued, waiting for `connected`).
    var publishedAt: Duration?
    /// Reads and sets: the device.
    var iotId: String?
    /// Sets: the properties being set (notifications touching them wait for the response).
    var setProperties: Set<String> = []
}

/// The MQTT connection's phase.
enum ConnectionPhase: Sendable, Equatable {
    case stopped
    case connecting
    case subscribing
    case connected
    case waitingToReconnect(deadline: Duration)

    var state: WidgetConnectionState {
        switch self {
        case .stopped: .stopped
        case .connecting: .connecting
        case .subscribing: .subscribing
        case .connected: .connected
        case .waitingToReconnect: .waitingToReconnect
        }
    }

    /// A connection exists (the host has one open or opening).
    var isOpen: Bool {
        switch self {
        case .connecting, .subscribing, .connected: true
        case .stopped, .waitingToReconnect: false
        }
    }
}

/// What the core knows of one device.
struct DeviceState: Sendable, Hashable {
    var status: WidgetDeviceStatus?
    /// The newest status time seen (kept when a list's untimed status replaces the value, so an
    /// older or repeated notification is still refused).
    var statusWatermark: Int64?
    /// When (core time) the newest timed status was taken: a list requested before it does not
    /// override it.
    var statusTakenAt: Duration?
    var properties: [String: WidgetPropertyValue] = [:]
}

/// Property values (from a notification or a read) waiting for the response of a property set
/// that is changing them.
struct HeldUpdate: Sendable {
    var iotId: String
    var items: [String: WidgetPropertyValue]
}

/// A refresh waiting for its result.
struct PendingRefresh: Sendable {
    var id: WidgetRefreshID
    var deadline: Duration
}

/// The work of one refresh round: the lists, then the properties of every listed device.
/// Refreshes asked for while it runs join it and get its result.
struct RefreshRound: Sendable {
    var startedBy: WidgetRefreshID
    var members: [WidgetRefreshID]
    /// Sequences of the round's requests without a result yet.
    var outstanding: Set<UInt64> = []
    var failed = false
}

/// Widget: an open-host-app request waiting for the host's answer.
struct PendingOpenURL: Sendable {
    var id: WidgetOpenURLID
    var url: String
    var deadline: Duration
}

/// How a request ended (to tell duplicate and late responses from unknown ids).
enum FinishedRequest: Sendable {
    case succeeded
    case failed
}

/// Whose id a response carries.
enum ResponseIDOwner: Sendable, Equatable {
    case thisIncarnation(UInt64?)
    case otherIncarnation
}

/// What one call produces, put in order by ``WidgetCore/finish()``.
struct CallOutput: Sendable {
    var files: [WidgetAction] = []
    var events: [WidgetEvent] = []
    var mqtt: [WidgetAction] = []
}

/// A wait that can run out, in the order ties fire.
enum DueTimer: Sendable, Equatable {
    case refreshBudget(WidgetRefreshID)
    case request(UInt64)
    case openURL(WidgetOpenURLID)
    case reconnect

    var rank: Int {
        switch self {
        case .refreshBudget: 0
        case .request: 1
        case .openURL: 2
        case .reconnect: 3
        }
    }
}
