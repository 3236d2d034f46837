import BehaviourTrace

/// A sans-I/O core as its replay adapter (and its live host) drives it: the app's calls go in, the
/// core answers with actions (frames to write, events to report) and trace events of the call
/// itself, and it keeps at most one timer, which the driver fires when it falls due. Time is an
/// input: the core never reads a clock.
///
/// What reaches the core from the link differs from core to core (a BLE notification, an MQTT
/// packet, a link coming up), so link inputs are each core's own methods; this protocol names
/// what every recorded core has in common, so an adapter's timer and call handling reads the same
/// whatever the core (``CoreAdapterSkeleton`` does the rest).
public protocol ReplayedCore {
    /// One API call of the app (or fact of its host) the core takes.
    associatedtype Call
    /// What the core asks its host to do.
    associatedtype Action

    /// When the core wants ``handleTimeout(now:)`` next; `nil` when no timer runs.
    var nextDeadline: Duration? { get }
    /// Applies `call` at `now`: the core's actions, and the trace events of the call itself (its
    /// `api_call` event, or an `api_error` when the core refuses it).
    mutating func apply(_ call: Call, now: Duration) -> (actions: [Action], events: [TraceEvent])
    /// Fires the timers due at `now`.
    mutating func handleTimeout(now: Duration) -> [Action]
}

extension ReplayedCore {
    /// The actions of the core's timers due by `now`; `nil` when none is due (the core is then not
    /// asked, so a timer that is not due cannot act early).
    public mutating func timersDue(now: Duration) -> [Action]? {
        guard let deadline = nextDeadline, deadline <= now else { return nil }
        return handleTimeout(now: now)
    }
}
