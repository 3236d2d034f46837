import BehaviourTrace
import Foundation
import CaptureKit
import CaptureSet

/// Everything about one core that replay needs beyond the core itself: which interfaces and which
/// manifest section it takes, the settings a command line may override, the events it emits, and
/// how to make its ``CoreAdapter`` for a capture set.
///
/// The engine knows no core: it is given a list of integrations (``IntegrationRegistry``) and asks
/// each one. Tether's four (ingest, messaging, session, widget) are registered in
/// `TetherIntegrations.builtIn`; a user's own core is added by appending its integration to that
/// list, with no edit to ReplayKit (docs/extending.md walks through one).
///
/// Which integrations replay a set is decided from the manifest (``IntegrationRegistry/select(for:manifestPath:)``):
/// - an interface whose `core:` names an integration goes to it (an unknown name is an error);
/// - an interface without `core:` goes to the integration that replays its role and whose section
///   the manifest has, else to the one that is that role's default (``defaultForRoles``);
/// - a manifest section selects the integration that claims it (a section no one claims is an
///   error), when ``selectedBySection`` says so;
/// - records of an `api-calls` interface go to the integration their `core` field names.
public protocol CoreIntegration: Sendable {
    /// The core's name: in traces (`core`), in `interfaces[].core`, in `api-calls` records, in
    /// baselines (`baseline/<name>.jsonl`). Lower case, letters, digits, `-` and `_`.
    var name: String { get }
    /// One line for `--help` and error messages: what the core is.
    var summary: String { get }
    /// The manifest's top-level key this integration owns (defaults to ``name``); `nil` for none.
    var sectionName: String? { get }
    /// The interface roles it can replay.
    var replayedRoles: Set<InterfaceRole> { get }
    /// The roles it takes when an interface does not name its core and no other integration of
    /// that role has its section in the manifest (default: none).
    var defaultForRoles: Set<InterfaceRole> { get }
    /// Whether it takes interfaces the manifest does not describe, and the whole capture when the
    /// manifest describes no interface (a bare import). Default `false`; ingest says `true`.
    var replaysUndescribedInterfaces: Bool { get }
    /// Whether the presence of its section alone selects it. Default `true`.
    var selectedBySection: Bool { get }
    /// Whether `api-calls` records without a `core` field are its own. Default `false`.
    var takesUnlabelledAPICalls: Bool { get }
    /// The `call` names of its API-call records that describe the host, not calls the app makes
    /// (a device bound to a BLE address, the phone's Bluetooth state, the process started): when
    /// the app runs in the loop and makes its own calls, these recorded ones are still
    /// delivered. Default: none.
    var hostFactCalls: Set<String> { get }
    /// The settings a command line may change for a replay, each a key of its section.
    var settings: [IntegrationSetting] { get }
    /// The keys of its section beyond ``settings``, each with what it takes: with the settings,
    /// the section's schema (``SectionSchema``), checked before the adapter is made. Paths are
    /// dotted, `[]` for every item of a list (`api_calls[].t_ms`). Default: none; a section with
    /// neither settings nor fields is not checked.
    var sectionFields: [IntegrationSetting] { get }
    /// The trace events it emits, for documentation and for checking the names an expectation
    /// uses. Empty when not declared.
    var emittedEvents: [TraceName] { get }
    /// Which of its events pair up as a request and its answer (a send and its completion, a
    /// message and its reply), with the progress events between them: the slices and latency
    /// plots of the timeline report and the Perfetto export. Default: none.
    var correlations: [TraceCorrelation] { get }
    /// What the core promises whatever faults do (docs/faults.md): what `tether replay --sweep`
    /// checks every variant against. Default: none.
    var promises: [CorePromise] { get }
    /// The adapter that replays one capture set through the core.
    /// - Throws: ``ReplayError`` when the section is invalid or the capture cannot be prescanned;
    ///   the error names the manifest file, the field and its line.
    func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter
    /// What names this core's protocol in a capture's frames for `tether inspect` and the
    /// timeline report, a fresh one per capture. Default: `nil` (the generic dissection says all).
    func makeFrameAnnotator() -> (any FrameAnnotator)?
    /// What `tether replay --realtime` re-sends of `set` for this core over real sockets, with
    /// the command line's `settings` (all cores'; this core reads its own). Default: `nil`, the
    /// core's traffic is not re-sent in real time.
    /// - Throws: ``CaptureError`` when the capture cannot be read.
    func realtimeTraffic(of set: LoadedCaptureSet, settings: [SettingOverride]) throws(CaptureError) -> RealtimeTraffic?
}

extension CoreIntegration {
    /// The section is named after the core.
    public var sectionName: String? { name }
    /// No role by default.
    public var defaultForRoles: Set<InterfaceRole> { [] }
    /// Described interfaces only.
    public var replaysUndescribedInterfaces: Bool { false }
    /// A section selects its integration.
    public var selectedBySection: Bool { true }
    /// Records must name their core.
    public var takesUnlabelledAPICalls: Bool { false }
    /// Every recorded call is the app's.
    public var hostFactCalls: Set<String> { [] }
    /// No settings.
    public var settings: [IntegrationSetting] { [] }
    /// No fields beyond the settings.
    public var sectionFields: [IntegrationSetting] { [] }
    /// Not declared.
    public var emittedEvents: [TraceName] { [] }
    /// None declared.
    public var correlations: [TraceCorrelation] { [] }
    /// None declared.
    public var promises: [CorePromise] { [] }
    /// None: the generic dissection names this core's frames.
    public func makeFrameAnnotator() -> (any FrameAnnotator)? { nil }
    /// None: the core's traffic is not re-sent in real time.
    public func realtimeTraffic(of set: LoadedCaptureSet, settings: [SettingOverride]) throws(CaptureError) -> RealtimeTraffic? { nil }
}

/// What an integration is given to make its adapter for one capture set.
public struct IntegrationContext: Sendable {
    /// The set being replayed.
    public var captureSet: LoadedCaptureSet
    /// The integration's manifest section with the command line's overrides applied; `nil` when
    /// the manifest has none and no override was given.
    public var section: ManifestSection?
    /// The frame matching the command line asked for, winning over the section's.
    public var frameMatching: FrameMatchingMode?
    /// The run's per-frame faults: a responder that delivers captured answers itself applies them
    /// to each answer it takes from a frame (``PeerFrameFaults``).
    public var faults: PeerFrameFaults
    /// Whether the set's captured API calls for this core are not delivered
    /// (``ReplayOptions/replacedCallCores``): scheduled calls drive it, so the captured calls'
    /// feed order (``FeedOrderQueue``) has nothing to order.
    public var capturedCallsReplaced = false

    /// A context for one set.
    public init(captureSet: LoadedCaptureSet, section: ManifestSection?, frameMatching: FrameMatchingMode? = nil, faults: PeerFrameFaults = .init()) {
        self.captureSet = captureSet
        self.section = section
        self.frameMatching = frameMatching
        self.faults = faults
    }

    /// The set's manifest.
    public var manifest: CaptureSetManifest { captureSet.manifest }
    /// The set's capture file.
    public var capturePath: String { captureSet.capturePath }
    /// The set's `manifest.yaml`, for error messages.
    public var manifestPath: String { captureSet.directory.manifestPath }

    /// The section decoded as `type`, `nil` when there is none.
    /// - Throws: ``ReplayError/captureSet(_:)`` naming the file, the field and its line.
    public func decodeSection<T: Decodable>(_ type: T.Type) throws(ReplayError) -> T? {
        guard let section else { return nil }
        do throws(CaptureSetError) {
            return try section.decode(type, manifestPath: manifestPath)
        } catch {
            throw .captureSet(error)
        }
    }
}

/// A key of an integration's manifest section and what it takes (``SectionField``, kept in the
/// capture-set layer with the schema that checks sections); the name integrations use for it.
public typealias IntegrationSetting = SectionField
