/// The events every recorded core's adapter (or live host) writes the same way, whatever its
/// core (docs/trace-format.md, "Events every core writes"): declared once here, beside the name
/// type, so an adapter moves an interned name per event rather than interning a literal each
/// time, and the trace's readers (the Perfetto writer, the timeline) name the same values.
extension TraceName {
    /// The core wrote a frame (``FrameMatcher``).
    public static let frameEmitted: TraceName = "frame_emitted"
    /// A frame the core wrote matched the captured one.
    public static let frameMatched: TraceName = "frame_matched"
    /// A frame the core wrote differed from the captured one.
    public static let frameDiverged: TraceName = "frame_diverged"
    /// A captured frame the core never wrote, reported at the end.
    public static let frameUnsent: TraceName = "frame_unsent"
    /// A call of the app's, from an `api-calls` record or an app in the loop.
    public static let apiCall: TraceName = "api_call"
    /// A call the core refused.
    public static let apiError: TraceName = "api_error"
    /// An `api-calls` record that did not read as the core's call.
    public static let apiRecordMalformed: TraceName = "api_record_malformed"
    /// A script step of a live host that could not run (unknown call, malformed arguments, a
    /// `wait_for` that timed out).
    public static let stepFailed: TraceName = "step_failed"
    /// A request the capture holds no answer to, so the responder gave none.
    public static let noRecordedAnswer: TraceName = "no_recorded_answer"
    /// A peer frame a responder made because the capture had none to answer with.
    public static let responderMade: TraceName = "responder_made"
    /// The adapter's counts, last in its trace.
    public static let summary: TraceName = "summary"

    /// The events of a core that takes the app's calls from `api-calls` records or a live
    /// script: a call, a call the core refused, a record that did not read, a step that could
    /// not run.
    public static let apiCallEvents: [TraceName] = [.apiCall, .apiError, .apiRecordMalformed, .stepFailed]
}
