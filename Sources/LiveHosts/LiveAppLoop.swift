import BehaviourTrace

/// The app's own code in the loop of a live host, instead of a script: the host takes the calls
/// the app made (its SDK facade's API-call records) whenever it is between inputs, hands every
/// trace event it writes to the app as it writes it, and stops after ``duration`` or once
/// ``isDone`` says so. `TetherLive`'s `LiveSession` makes one per run.
///
/// Everything happens on the host's one thread: the app's callbacks run inside the host's loop,
/// and a call made from one is taken after the input that caused it, as in replay.
public final class LiveAppLoop {
    /// How long the host runs the app at most, from the link's start.
    public let duration: Duration
    /// Whether the app has done what the run is for (checked between inputs).
    public let isDone: () -> Bool
    /// The calls the app has made since the last question, in order.
    public let takeCalls: () -> [[String: TraceValue]]
    /// Every trace event the host writes, as it writes it.
    public let observe: (TraceEvent) -> Void
    /// How long after ``isDone`` the host keeps handling the link, so answers in flight land.
    public let linger: Duration
    /// Called once the host has started, bound its devices and set ``record``: before the app's
    /// first call is taken.
    public let started: () -> Void

    /// Set by the host while it runs: writes an event of the app's own into the host's trace,
    /// stamped with the time it is written.
    public package(set) var record: ((TraceEvent) -> Void)?
    /// Set by the host while it runs: the time since the host started (the core's clock).
    public package(set) var elapsed: (() -> Duration)?

    /// A loop; see the properties.
    public init(duration: Duration, linger: Duration = .milliseconds(500), isDone: @escaping () -> Bool,
                takeCalls: @escaping () -> [[String: TraceValue]], observe: @escaping (TraceEvent) -> Void,
                started: @escaping () -> Void = {}) {
        self.started = started
        self.duration = duration
        self.linger = linger
        self.isDone = isDone
        self.takeCalls = takeCalls
        self.observe = observe
    }
}

extension LiveAppLoop {
    /// Applies every call the app has made, including those its callbacks make meanwhile. A host
    /// calls it after each input it handles (each line from its bridge), so a call made from a
    /// callback reaches the core right after the input that caused it, as in replay.
    package func takeAll(_ apply: ([String: TraceValue]) throws(LiveHostError) -> Void) throws(LiveHostError) {
        while true {
            let records = takeCalls()
            if records.isEmpty { return }
            for record in records { try apply(record) }
        }
    }

    /// A live host's loop with the app in it: the app's calls taken (`apply` each) between
    /// inputs, the bridge serviced (`service`, waiting at most the time given), the core's timers
    /// fired when due, until the app is done (then ``linger``) or ``duration`` has passed since
    /// `start`. Every host runs its app this one way.
    package func drive(
        start: ContinuousClock.Instant, now: () -> Duration, nextDeadline: () -> Duration?,
        service: (Duration) throws(LiveHostError) -> Void, fireTimers: () throws(LiveHostError) -> Void,
        apply: ([String: TraceValue]) throws(LiveHostError) -> Void
    ) throws(LiveHostError) {
        func takeCalls() throws(LiveHostError) { try takeAll(apply) }
        let end = start + duration
        var doneAt: ContinuousClock.Instant?
        func stop() -> ContinuousClock.Instant { min(end, doneAt.map { $0 + linger } ?? end) }
        started()
        while ContinuousClock.now < stop() {
            try takeCalls()
            if doneAt == nil, isDone() { doneAt = .now }
            var wait = stop() - ContinuousClock.now
            if let deadline = nextDeadline() { wait = min(wait, deadline - now()) }
            try service(max(.zero, min(wait, .milliseconds(20))))
            try takeCalls()
            if let deadline = nextDeadline(), deadline <= now() { try fireTimers() }
        }
        try takeCalls()
    }
}
