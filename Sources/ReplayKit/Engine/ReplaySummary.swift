import BehaviourTrace

/// What a replay run did, besides its trace.
public struct ReplaySummary: Sendable, Hashable {
    /// Frames read from the capture file.
    public var framesRead: Int = 0
    /// Frames handed to at least one adapter.
    public var framesFed: Int = 0
    /// `timeout(now:)` calls made.
    public var timeoutsFired: Int = 0
    /// Frames whose timestamp was earlier than the frame before them; they were fed at the
    /// earlier frame's instant, because virtual time never goes backwards.
    public var framesOutOfOrder: Int = 0
    /// Capture timestamp of the first frame (ns since the Unix epoch): virtual time zero.
    public var firstTimestampNs: Int64?
    /// Virtual time of the last frame.
    public var lastFrameTimeNs: Int64 = 0
    /// Virtual time at which the adapters were finished (the last frame, or the last deadline
    /// fired after it).
    public var endTimeNs: Int64 = 0
    /// Bytes of the capture file consumed.
    public var bytesRead: UInt64 = 0
    /// The reader's warnings (a cut-off tail, skipped blocks) and the engine's own.
    public var warnings: [String] = []
    /// `api-calls` records addressed to a core this replay does not run.
    public var apiCallsForOtherCores: Int = 0
    /// Captured `api-calls` records not delivered because scheduled calls replace them.
    public var apiCallsReplaced: Int = 0
    /// Scheduled calls delivered.
    public var scheduledCallsDelivered: Int = 0
    /// Cores the engine stopped because their timers ran away; the replay stopped with them.
    public var runawayTimers: [RunawayTimers] = []
    /// Cores whose timer was still set when the drain after the last input ended: each was
    /// finished without that timer firing. Each one is also a warning.
    public var timersLeftSet: [TimerLeftSet] = []
    /// Calls an app in the loop made (``ReplayEngine/closedLoop``), delivered.
    public var closedLoopCallsDelivered: Int = 0
    /// Times the app in the loop was woken at an instant it waited for (``ClosedLoopInputs/nextWake``).
    public var appWakeUps: Int = 0
    /// `fault_injected` events written: how many times the run's faults changed what reached
    /// the cores (docs/faults.md).
    public var faultsApplied: Int = 0

    /// An empty summary.
    public init() {}
}

/// A core whose deadlines fired without end (or the app in the loop, core `app`, whose wake-ups
/// did): asked again for the instant it had just been given
/// (a deadline that does not advance), or fired ``consecutiveLimit`` timeouts in a row with no
/// input between them, less than ``minimumAverageSpacing`` apart on average (a timer of a
/// nanosecond, from a timeout setting of 0). Either would keep replay busy for hours at flat
/// memory, so the engine stops the replay and says which core did it. A busy core is not a
/// runaway: a millisecond timer may fire for as long as the capture lasts.
public struct RunawayTimers: Sendable, Hashable, CustomStringConvertible {
    /// How many timeouts in a row, with no input between them, are allowed within ``spanLimit``.
    public static let consecutiveLimit = 100_000
    /// The average time between those timeouts below which they count as a runaway.
    public static let minimumAverageSpacing = Duration.microseconds(1)

    /// The core.
    public var core: String
    /// Timeouts fired in a row with no input between them.
    public var timeouts: Int
    /// Virtual time of the first of them.
    public var fromNs: Int64
    /// Virtual time of the last.
    public var toNs: Int64
    /// `true` when the core asked again for the very instant it had just handled.
    public var deadlineDidNotAdvance: Bool

    /// What happened, in one sentence.
    public var description: String {
        if deadlineDidNotAdvance {
            return "core \(core) asked for a deadline no later than the timeout it had just handled at \(fromNs) ns, so its clock would never advance"
        }
        return "core \(core) fired \(timeouts) timeouts in a row with no input, from \(fromNs) ns to \(toNs) ns of virtual time "
            + "(\((toNs - fromNs) / Int64(max(timeouts - 1, 1))) ns apart on average)"
    }
}

extension RunawayTimers {
    /// The runaway `count` timeouts in a row with no input between them are, the first at `first`
    /// and the last at `last`, if they are one: the last left a deadline at or before its own
    /// instant (`deadlineDidNotAdvance`), or ``consecutiveLimit`` of them fell less than
    /// ``minimumAverageSpacing`` apart on average. `nil` for a busy core.
    init?(core: String, inARow count: Int, from first: Duration, to last: Duration, deadlineDidNotAdvance stuck: Bool) {
        let dense = count >= Self.consecutiveLimit && last - first < Self.minimumAverageSpacing * (count - 1)
        guard stuck || dense else { return nil }
        self.init(core: core, timeouts: count, fromNs: (stuck ? last : first).replayNanoseconds, toNs: last.replayNanoseconds,
                  deadlineDidNotAdvance: stuck)
    }
}

/// A core's timer still set when the drain ended (``ReplayEngine/drainHorizon`` past the last
/// input): the core was finished without it firing, so what the timer would have done (an idle
/// timeout, a retry) is not in the trace.
///
/// A longer horizon lets a one-shot timer fire (an idle timeout longer than the horizon); a timer
/// that sets itself again each time it fires (a keep-alive) is never drained, and shows here
/// whatever the horizon, with the timeouts it fired since the core's last input.
public struct TimerLeftSet: Sendable, Hashable, CustomStringConvertible {
    /// The core.
    public var core: String
    /// Virtual time the timer was due at.
    public var dueNs: Int64
    /// Virtual time the drain ended at: the last input (frame, scheduled call or late frame) plus
    /// the horizon.
    public var drainEndNs: Int64
    /// The horizon the drain ran for.
    public var horizonNs: Int64
    /// Timeouts the core was given since its last input (the drain's and any before it).
    public var timeoutsSinceLastInput: Int

    /// One timer left set.
    public init(core: String, dueNs: Int64, drainEndNs: Int64, horizonNs: Int64, timeoutsSinceLastInput: Int) {
        self.core = core
        self.dueNs = dueNs
        self.drainEndNs = drainEndNs
        self.horizonNs = horizonNs
        self.timeoutsSinceLastInput = timeoutsSinceLastInput
    }

    /// What happened and what to do.
    public var description: String {
        let due = Self.seconds(dueNs), end = Self.seconds(drainEndNs), horizon = Self.seconds(horizonNs)
        let fired = timeoutsSinceLastInput == 0 ? "" : "; \(timeoutsSinceLastInput) timeout(s) had fired since its last input"
        return "core \(core) still had a timer set, due at \(due) s of virtual time, when the drain ended at \(end) s "
            + "(\(horizon) s after the last input)\(fired); the core was finished without it firing. To replay what the timer does, "
            + "give a drain reaching past \(Self.seconds(dueNs - (drainEndNs - horizonNs))) s after the last input "
            + "(tether replay --drain-horizon, ReplayOptions.drainHorizon); a timer that sets itself again each time it fires is never drained."
    }

    /// Nanoseconds as seconds with three decimals.
    static func seconds(_ ns: Int64) -> String { DecimalText.fixed(Double(ns) / 1e9, 3) }
}

/// How far a long replay has got, for a progress display.
public struct ReplayProgress: Sendable, Hashable {
    /// Frames read so far.
    public var framesRead: Int
    /// Bytes of the capture file consumed so far.
    public var bytesRead: UInt64
}
