import CaptureKit
import CaptureSet
import ReplayKit

/// The phone side of the Connect IQ companion link as replay sees it: the BLE interfaces of the
/// phone's HCI and the app's API calls fed to ``MessagingCore``; the manifest's `messaging:`
/// section (``ManifestMessaging``) gives devices, hand-written calls, settings and frame matching.
public struct MessagingIntegration: CoreIntegration {
    /// The integration, following the feed order of the records it replays.
    public init() {}

    /// Whether replay follows the records' `link_inputs` (docs/replay-engine.md, "Feed order");
    /// `false` only in tests that show what replay in capture order does.
    var honoursFeedOrder = true

    init(honoursFeedOrder: Bool) { self.honoursFeedOrder = honoursFeedOrder }

    /// `messaging`.
    public var name: String { "messaging" }
    /// For `--help`.
    public var summary: String { "Connect IQ companion messaging, phone side (MessagingCore)" }
    /// HCI and monitor-channel interfaces.
    public var replayedRoles: Set<InterfaceRole> { [.bleHCI, .bleMonitor] }
    /// A BLE interface that names no core is Connect IQ unless another core's section says otherwise.
    public var defaultForRoles: Set<InterfaceRole> { [.bleHCI, .bleMonitor] }
    /// API-call records from before records named their core are messaging's.
    public var takesUnlabelledAPICalls: Bool { true }
    /// Which BLE address is which device, and whether the phone's Bluetooth is on: the host's
    /// doing, delivered from the recording even when the app in the loop makes the SDK calls.
    public var hostFactCalls: Set<String> { ["bind_device", "bluetooth_state"] }
    /// The section's `settings` keys, with the command line's bounds.
    public var settings: [IntegrationSetting] { MessagingSectionSchema.settings }

    /// The rest of the `messaging:` section (docs/capture-set.md): devices and hand-written API calls.
    public var sectionFields: [IntegrationSetting] { MessagingSectionSchema.fields }

    /// What ``MessagingAdapter`` and the live messaging host write (docs/trace-format.md).
    public var emittedEvents: [TraceName] {
        TraceName.apiCallEvents + MessagingTrace.Names.all + [.noRecordedAnswer, .frameEmitted, .frameMatched, .frameDiverged, .summary]
    }
    /// A send and its completion (with `progress` as `sent` of `total`); an app-status or
    /// open-app request and its answer.
    public var correlations: [TraceCorrelation] {
        [TraceCorrelation("send → completion", start: .init("api_call", where: "call", is: "send"),
                          ends: [.init("completion")], key: "send",
                          progress: .init(event: "progress", done: "sent", total: "total")),
         TraceCorrelation("app_status → answer", start: .init("api_call", where: "call", is: "app_status"),
                          ends: [.init("app_status")], key: "request"),
         TraceCorrelation("open_app → answer", start: .init("api_call", where: "call", is: "open_app"),
                          ends: [.init("open_app")], key: "request")]
    }

    /// Every send completes exactly once (with a result: success or a failure), and its progress
    /// never goes back.
    public var promises: [CorePromise] {
        [CorePromise("every send completes exactly once", .exactlyOneEnd(correlation: "send → completion")),
         CorePromise("progress never goes back", .progressNeverGoesBack(correlation: "send → completion"))]
    }

    /// A ``MessagingAdapter`` over the capture's prescan, with the section's devices, calls and
    /// settings.
    /// Connect IQ link packets named on top of the ATT dissection, with each completed transfer's
    /// message when it can be read.
    public func makeFrameAnnotator() -> (any FrameAnnotator)? { ConnectIQFrameAnnotator() }

    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        var section = try context.decodeSection(ManifestMessaging.self) ?? ManifestMessaging()
        // The app in the loop makes its own calls: of the hand-written ones, only the host's facts stay.
        if context.capturedCallsReplaced { section.apiCalls.removeAll { !hostFactCalls.contains($0.call) } }
        let manifest = context.manifest
        let matching = context.frameMatching ?? section.frameMatching ?? .strict
        let prescan: MessagingCapturePrescan
        let hasAPICalls = manifest.interfaces.contains { $0.role == .apiCalls }
        do throws(CaptureError) {
            prescan = try MessagingCapturePrescan.scan(
                capturePath: context.capturePath, interfaces: manifest.interfaces, gattHandles: manifest.gattHandles,
                watchPackets: matching == .responder)
        } catch {
            throw .capture(error)
        }
        // Responder mode feeds the watch's answers after the core's writes, not in the live order.
        let feedOrder = try FeedOrderPrescan.scan(for: context, core: name, takesUnlabelled: true,
                                                  honoured: honoursFeedOrder && matching != .responder)
        return MessagingAdapter(
            section: section, matching: matching, prescan: prescan, gattHandles: manifest.gattHandles, faults: context.faults,
            hasAPICallsInterface: hasAPICalls, feedOrder: feedOrder)
    }
}
