import BehaviourTrace

/// The events every recorded core's adapter writes the same way, whatever its core
/// (docs/trace-format.md, "Events every core writes"): declared once here, so an adapter moves
/// an interned name per event rather than interning a literal each time.
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
    /// A peer frame a responder made because the capture had none to answer with.
    public static let responderMade: TraceName = "responder_made"
    /// The adapter's counts, last in its trace.
    public static let summary: TraceName = "summary"
}
