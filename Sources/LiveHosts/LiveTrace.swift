import BehaviourTrace
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The time base every live host's trace shares with its recording: events are stamped with
/// CLOCK_REALTIME (the clock capture timestamps use) as they happen, and made relative at the end to
/// the recording's first frame, so a live trace and the replay of its recording line up.
public enum LiveTrace {
    /// CLOCK_REALTIME in nanoseconds.
    public static func realtimeNs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    /// The events with `t_ns` relative to `zeroNs` (never negative).
    public static func relative(_ events: [(realtimeNs: Int64, event: TraceEvent)], zeroNs: Int64) -> [TraceEvent] {
        events.map { entry in
            var event = entry.event
            event.timeNs = max(0, entry.realtimeNs - zeroNs)
            return event
        }
    }
}

/// What a live host writes down while it runs: every trace event with its CLOCK_REALTIME stamp, the
/// script steps that could not run, and a line per event for the terminal. One per host run.
package final class LiveTraceLog {
    /// The trace's core name (`messaging`, `session`, `widget`).
    package let core: TraceName
    private let log: (String) -> Void
    /// The events so far, stamped.
    package private(set) var events: [(realtimeNs: Int64, event: TraceEvent)] = []
    /// Steps that could not run, as sentences.
    package private(set) var failedSteps: [String] = []

    package init(core: TraceName, log: @escaping (String) -> Void) {
        self.core = core
        self.log = log
    }

    /// Adds `event` (stamped now unless given), and prints it unless `quiet`.
    package func record(_ event: TraceEvent, realtimeNs: Int64? = nil, quiet: Bool = false) {
        events.append((realtimeNs ?? LiveTrace.realtimeNs(), event))
        if !quiet {
            let fields = event.fields.keys.sorted().map { "\($0)=\(JSONLiteral.text(event.fields[$0]!))" }.joined(separator: " ")
            log("\(event.event) \(fields)")
        }
    }

    /// A call step whose call the core refused (an `api_error` among the call's `events`: an app
    /// that is not a UUID, a call in the wrong state) is a step that could not run, so the run's
    /// exit status shows it instead of only a line in the trace.
    package func failIfRefused(step: Int, call: String, events: [TraceEvent]) {
        for event in events where event.event == .apiError {
            var reason = "no reason given"
            if case .string(let text)? = event.fields["error"] { reason = text }
            fail(step: step, "\(call): the core refused the call: \(reason)")
        }
    }

    /// A script step that could not run: kept, and traced as `step_failed`.
    package func fail(step: Int, _ message: String) {
        failedSteps.append("step \(step): \(message)")
        record(TraceEvent(timeNs: 0, core: core, event: .stepFailed, fields: [
            "step": .int(Int64(step)), "detail": .string(message),
        ]))
    }
}
