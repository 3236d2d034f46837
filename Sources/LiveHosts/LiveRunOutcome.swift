import BehaviourTrace
import LiveCapture

/// What a live run of any core gave back once it ended (`tether live messaging|session|widget`,
/// and `TetherLive`'s `LiveSession`): its trace with times made relative, the steps that failed,
/// the sealed recording when one was made, and what the user should know about that run.
public struct LiveRunOutcome: Sendable {
    /// The behaviour trace; `t_ns` counts from the recording's first frame when recording, else
    /// from the run's start.
    public var trace: [TraceEvent]
    /// Steps that could not run.
    public var failedSteps: [String]
    /// The sealed recording, when one was made.
    public var recording: RecordingSummary?
    /// What the user should know: the run's own notices (the H4 tap's: a host connected, refused
    /// or gone, framing errors; a socket folder left behind), then the recording's (timestamp
    /// precision, a mark with no frame to carry it, a source's warnings) and one for each recorded
    /// interface that dropped packets. A recording that lost packets must say so where the run is
    /// reported: replaying it would otherwise look like a device that never sent them.
    public var notices: [String]

    /// An outcome; `notices` are the run's own, and the recording's are added after them
    /// (``RecordingSummary/noticesAndDrops``).
    public init(trace: [TraceEvent], failedSteps: [String], recording: RecordingSummary?, notices: [String] = []) {
        self.trace = trace
        self.failedSteps = failedSteps
        self.recording = recording
        self.notices = notices + (recording?.noticesAndDrops ?? [])
    }
}

extension LiveRunOutcome {
    /// Runs a host that records nothing: its trace counts from the run's start, and a host error
    /// is reported in the live run's terms.
    public static func unrecorded(_ run: () throws(LiveHostError) -> LiveRunResult) throws(LiveMessagingError) -> LiveRunOutcome {
        let startNs = LiveTrace.realtimeNs()
        do throws(LiveHostError) {
            let result = try run()
            return LiveRunOutcome(trace: LiveTrace.relative(result.events, zeroNs: startNs), failedSteps: result.failedSteps, recording: nil)
        } catch {
            throw LiveMessagingError(description: error.description)
        }
    }

    /// A run that recorded into `recording`: its trace counts from the capture's first frame
    /// (`zeroNs`), as the trace of replaying the recording does, or from the run's first event
    /// when the capture holds no frame.
    public init(recorded result: LiveRunResult, into recording: RecordingSummary, zeroNs: Int64?, notices: [String] = []) {
        self.init(trace: LiveTrace.relative(result.events, zeroNs: zeroNs ?? result.events.first?.realtimeNs ?? 0),
                  failedSteps: result.failedSteps, recording: recording, notices: notices)
    }
}
