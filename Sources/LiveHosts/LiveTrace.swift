#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Replay

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
