import CaptureSet
import ReplayKit

/// The host-app ↔ widget channel as replay sees it: the broker's TCP read as MQTT, the App Group
/// folder's changes and the process's calls fed to ``WidgetCore``. It has no manifest section:
/// the recorded `start` call says which process and account.
public struct WidgetIntegration: CoreIntegration {
    /// The integration; it has no state.
    public init() {}

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

    /// A ``WidgetAdapter``.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        WidgetAdapter(matching: context.frameMatching ?? .strict)
    }
}
