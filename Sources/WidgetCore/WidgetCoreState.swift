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

/// Whether this core's connection has ever reached `connected`. It outlives a stop: a connection
/// started again after one was up has missed the notifications sent in between, so its next
/// `connected` catches up (lists the devices, re-reads their properties) like a reconnection.
enum ConnectionHistory: Sendable, Equatable {
    /// No connection of this core has reached `connected`: nothing to catch up on.
    case neverConnected
    /// One has: the next `connected` catches up.
    case connectedBefore
}

/// The try that a connection being opened, or waited for, belongs to: what the reconnection
/// back-off and the catch-up need, and nothing a `connected` connection has (it has no failures
/// and always was connected), so neither can be stale or contradict the phase.
struct ConnectionAttempt: Sendable, Equatable {
    /// Connections lost or refused since the last one reached `connected` (or since the start):
    /// 0 for the first try, n for the try after the n-th loss. Sets the back-off and is the
    /// `attempt` of ``WidgetTimer/reconnect(attempt:)``.
    var failures: Int
    var history: ConnectionHistory
}

/// The MQTT connection's phase. Each case carries what that phase needs, so the reconnection
/// count and the catch-up flag cannot disagree with it (a `connected` one with failures, a
/// `stopped` one with a reconnection deadline).
enum ConnectionPhase: Sendable, Equatable {
    /// Not started, or stopped by the app; `history` says whether a later start must catch up.
    case stopped(ConnectionHistory)
    /// `mqttConnect` was asked for; waiting for `mqttConnected`.
    case connecting(ConnectionAttempt)
    /// Connected; `mqttSubscribe` was asked for, waiting for the grant.
    case subscribing(ConnectionAttempt)
    /// Subscribed: requests are published at once.
    case connected
    /// Lost; `attempt` (its failures already counted) connects again at `deadline`.
    case waitingToReconnect(ConnectionAttempt, deadline: Duration)

    /// The public phase.
    var state: WidgetConnectionState {
        switch self {
        case .stopped: .stopped
        case .connecting: .connecting
        case .subscribing: .subscribing
        case .connected: .connected
        case .waitingToReconnect: .waitingToReconnect
        }
    }

    /// Whether a connection has reached `connected` (in this phase or before it).
    var history: ConnectionHistory {
        switch self {
        case .stopped(let history): history
        case .connecting(let attempt), .subscribing(let attempt), .waitingToReconnect(let attempt, _): attempt.history
        case .connected: .connectedBefore
        }
    }

    /// The attempt of the connection that exists (open or opening), as a loss counts it: a
    /// connection that got through has no failures since and was connected; `nil` when none exists.
    var openAttempt: ConnectionAttempt? {
        switch self {
        case .connecting(let attempt), .subscribing(let attempt): attempt
        case .connected: ConnectionAttempt(failures: 0, history: .connectedBefore)
        case .stopped, .waitingToReconnect: nil
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

/// What only the host app's core keeps: the container versions it writes and the open-host-app
/// requests it answers.
struct HostSide: Sendable {
    /// The last version written (shared by the settings and has-content files, so a version
    /// never repeats across them).
    var generation: UInt64 = 0
    /// Requests delivered to the app and not answered yet, in arrival order.
    var deliveredOpenURLs: [WidgetOpenURLRequest] = []
    /// Requests answered (a late copy of one is not delivered again).
    var answeredOpenURLs: Set<WidgetOpenURLID> = []
}

/// What only the widget's core keeps: its refreshes and its open-host-app requests.
struct WidgetSide: Sendable {
    /// Open-host-app requests waiting for the host's answer.
    var openURLs: [PendingOpenURL] = []
    /// The id the next refresh gets (never 0; wraps to 1).
    var nextRefreshID: UInt32 = 1
    /// Refreshes without a result yet, oldest first.
    var refreshes: [PendingRefresh] = []
    /// The refresh work under way, if any.
    var round: RefreshRound?
    /// What was visible at the last `newData` (the system's snapshot).
    var snapshotVisible: VisibleContent?
}

/// Which process a core plays, carrying what only that process keeps. One enum rather than a
/// role beside loose fields of both, so a host cannot hold a refresh or a widget a host version:
/// the fields that would contradict the role do not exist.
enum RoleState: Sendable {
    case host(HostSide)
    case widget(WidgetSide)

    /// The public role.
    var role: WidgetRole {
        switch self {
        case .host: .host
        case .widget: .widget
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
