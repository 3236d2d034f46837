import CaptureKit
import CaptureSet

/// An integration that is another one with a few things changed: a built-in core with one more
/// promise, or an adapter that watches what reaches the core (a test fixture with a bug put in on
/// purpose). Every requirement goes to ``wrapped`` but ``makeAdapter(_:)``, which the wrapper
/// writes (usually a ``WrappingAdapter`` around the wrapped integration's adapter); a wrapper
/// overrides whatever else it changes.
public protocol WrappingIntegration: CoreIntegration {
    /// The integration it is made from.
    var wrapped: any CoreIntegration { get }
}

extension WrappingIntegration {
    /// The wrapped integration's.
    public var name: String { wrapped.name }
    /// The wrapped integration's.
    public var summary: String { wrapped.summary }
    /// The wrapped integration's.
    public var sectionName: String? { wrapped.sectionName }
    /// The wrapped integration's.
    public var replayedRoles: Set<InterfaceRole> { wrapped.replayedRoles }
    /// The wrapped integration's.
    public var defaultForRoles: Set<InterfaceRole> { wrapped.defaultForRoles }
    /// The wrapped integration's.
    public var replaysUndescribedInterfaces: Bool { wrapped.replaysUndescribedInterfaces }
    /// The wrapped integration's.
    public var selectedBySection: Bool { wrapped.selectedBySection }
    /// The wrapped integration's.
    public var takesUnlabelledAPICalls: Bool { wrapped.takesUnlabelledAPICalls }
    /// The wrapped integration's.
    public var hostFactCalls: Set<String> { wrapped.hostFactCalls }
    /// The wrapped integration's.
    public var settings: [IntegrationSetting] { wrapped.settings }
    /// The wrapped integration's.
    public var sectionFields: [IntegrationSetting] { wrapped.sectionFields }
    /// The wrapped integration's.
    public var emittedEvents: [TraceName] { wrapped.emittedEvents }
    /// The wrapped integration's.
    public var correlations: [TraceCorrelation] { wrapped.correlations }
    /// The wrapped integration's.
    public var promises: [CorePromise] { wrapped.promises }
    /// The wrapped integration's.
    public func makeFrameAnnotator() -> (any FrameAnnotator)? { wrapped.makeFrameAnnotator() }
    /// The wrapped integration's.
    public func realtimeTraffic(of set: LoadedCaptureSet, settings: [SettingOverride]) throws(CaptureError) -> RealtimeTraffic? {
        try wrapped.realtimeTraffic(of: set, settings: settings)
    }
}

/// An adapter that is another one with a few things changed: every requirement goes to
/// ``wrapped``, and the wrapper overrides what it changes.
///
/// The `emit` forms of `frame` and `timeout` keep ``CoreAdapter``'s defaults, which call the
/// array forms: a wrapper that overrides `frame(_:bytes:now:)` then sees every frame, whichever form the
/// engine calls (at the cost of an array per frame).
///
/// Two requirements are not simply passed on, because a wrapper with state of its own would
/// make them wrong: ``CoreAdapter/hasSameState(as:)`` keeps its default (`false`: a sweep's
/// variants then run to the end), so a wrapper that can compare its own state writes it;
/// ``CoreAdapter/adoptFaults(_:)`` is passed on, so a wrapper whose own state depends on the run's
/// faults (which it read when it was made) overrides it to return `false`.
public protocol WrappingAdapter: CoreAdapter {
    /// The adapter it is made from.
    var wrapped: any CoreAdapter { get set }
}

extension WrappingAdapter {
    /// The wrapped adapter's.
    public var core: TraceName { wrapped.core }
    /// The wrapped adapter's.
    public var dissectsFrames: Bool { wrapped.dissectsFrames }
    /// The wrapped adapter's.
    public func input(for interface: ReplayInterface) -> ReplayInput { wrapped.input(for: interface) }
    /// The wrapped adapter's.
    public var nextDeadline: Duration? { wrapped.nextDeadline }
    /// The wrapped adapter's.
    public mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent] { wrapped.frame(frame, bytes: bytes, now: now) }
    /// The wrapped adapter's.
    public mutating func timeout(now: Duration) -> [TraceEvent] { wrapped.timeout(now: now) }
    /// The wrapped adapter's.
    public mutating func finish(now: Duration) -> [TraceEvent] { wrapped.finish(now: now) }
    /// The wrapped adapter's.
    public mutating func adoptFaults(_ faults: PeerFrameFaults) -> Bool { wrapped.adoptFaults(faults) }
}
