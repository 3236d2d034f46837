import CaptureKit
import CaptureSet
import ReplayKit

/// The host-app ↔ widget channel as replay sees it: the broker's TCP read as MQTT, the App Group
/// folder's changes and the process's calls fed to ``WidgetCore``. It has no manifest section:
/// the recorded `start` call says which process and account.
public struct WidgetIntegration: CoreIntegration {
    /// The integration, following the feed order of the records it replays.
    public init() {}

    /// Whether replay follows the records' `link_inputs` (docs/replay-engine.md, "Feed order");
    /// `false` only in tests that show what replay in capture order does.
    var honoursFeedOrder = true

    init(honoursFeedOrder: Bool) { self.honoursFeedOrder = honoursFeedOrder }

    /// `widget`.
    public var name: String { "widget" }
    /// For `--help`.
    public var summary: String { "host app and widget: App Group, refreshes, IoT over MQTT (WidgetCore)" }
    /// No section: everything the replay needs is in the capture.
    public var sectionName: String? { nil }
    /// MQTT over TCP and the App Group folder.
    public var replayedRoles: Set<InterfaceRole> { [.mqttTCP, .appGroup] }
    /// Both of them.
    public var defaultForRoles: Set<InterfaceRole> { [.mqttTCP, .appGroup] }

    /// What ``WidgetAdapter`` and the live widget host write (docs/trace-format.md).
    public var emittedEvents: [TraceName] {
        TraceName.apiCallEvents + WidgetTraceMapping.Names.all
            + [.frameEmitted, .frameMatched, .frameDiverged, .responderMade, .summary]
    }
    /// A refresh and its result, a cloud request and its answer, an open-URL request and its end.
    public var correlations: [TraceCorrelation] {
        [TraceCorrelation("refresh → completed", start: .init("refresh_started"), ends: [.init("refresh_completed")], key: "refresh"),
         TraceCorrelation("request → answer", start: .init("request_issued"),
                          ends: [.init("request_succeeded"), .init("request_failed")], key: "id"),
         TraceCorrelation("open_url → completed", start: .init("open_url_requested"),
                          ends: [.init("open_url_completed"), .init("open_url_result_discarded")], key: "id")]
    }

    /// Every refresh ends with exactly one result, and the settings' version never goes back.
    public var promises: [CorePromise] {
        [CorePromise("every refresh has exactly one result", .exactlyOneEnd(correlation: "refresh → completed")),
         CorePromise("versions never go back", .neverDecreases(event: "settings_changed", field: "version"))]
    }

    /// A ``WidgetAdapter``.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        let matching = context.frameMatching ?? .strict
        var prescan: WidgetCapturePrescan?
        if matching == .responder {
            do throws(CaptureError) {
                prescan = try WidgetCapturePrescan.scan(capturePath: context.capturePath, interfaces: context.manifest.interfaces)
            } catch {
                throw .capture(error)
            }
        }
        // The responder's answers count as link inputs, so the captured calls keep their live order.
        let feedOrder = try FeedOrderPrescan.scan(for: context, core: name, honoured: honoursFeedOrder)
        return WidgetAdapter(matching: matching, prescan: prescan, faults: context.faults, feedOrder: feedOrder)
    }
}
