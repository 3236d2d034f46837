import CaptureKit
import CaptureSet
import ReplayKit

/// WatchConnectivity-style sessions over Tether's session link as replay sees it: the recorded
/// side's HCI and API calls fed to ``SessionCore`` in the manifest's role; the `session:` section
/// (``ManifestSession``) says which side, its identity, seed and settings.
public struct SessionIntegration: CoreIntegration {
    /// The integration, following the feed order of the records it replays.
    public init() {}

    /// Whether replay follows the records' `link_inputs` (docs/replay-engine.md, "Feed order");
    /// `false` only in tests that show what replay in capture order does.
    var honoursFeedOrder = true

    init(honoursFeedOrder: Bool) { self.honoursFeedOrder = honoursFeedOrder }

    /// `session`.
    public var name: String { "session" }
    /// The process starting (with its identity and seed), the paired counterpart and the watch
    /// app's state: the host's doing, delivered from the recording even when the app in the loop
    /// makes the WatchConnectivity calls.
    public var hostFactCalls: Set<String> { ["start", "set_paired", "set_app_state"] }
    /// For `--help`.
    public var summary: String { "WatchConnectivity-style sessions, phone or watch (SessionCore)" }
    /// HCI and monitor-channel interfaces (named `core: session`, or with a `session:` section).
    public var replayedRoles: Set<InterfaceRole> { [.bleHCI, .bleMonitor] }
    /// The section's `settings` keys, with the command line's bounds.
    public var settings: [IntegrationSetting] { SessionSectionSchema.settings }

    /// The rest of the `session:` section (``ManifestSession``).
    public var sectionFields: [IntegrationSetting] { SessionSectionSchema.fields }

    /// What ``SessionAdapter`` and the live session host write (docs/trace-format.md).
    public var emittedEvents: [TraceName] {
        TraceName.apiCallEvents + SessionTrace.Names.all
            + [.frameEmitted, .frameMatched, .frameUnsent, .frameDiverged, .responderMade, .summary]
    }
    /// A message and its reply or failure, a user info and its delivery, a file and its end (with
    /// `file_transfer_progress` as `completed` of `total`).
    public var correlations: [TraceCorrelation] {
        let messageEnds: [TraceCorrelation.EventPattern] = [
            .init("did_receive_reply"), .init("did_receive_reply_data"), .init("message_delivered"), .init("message_failed")]
        return [
            // Messages and message data share one id counter, as user infos and complications do.
            TraceCorrelation("message → reply", starts: [.init("api_call", where: "call", is: "send_message"),
                                                           .init("api_call", where: "call", is: "send_message_data")],
                             ends: messageEnds, key: "id"),
            TraceCorrelation("user info → finished", starts: [.init("api_call", where: "call", is: "transfer_user_info"),
                                                               .init("api_call", where: "call", is: "transfer_complication")],
                             ends: [.init("user_info_transfer_did_finish")], key: "id"),
            TraceCorrelation("transfer_file → finished", start: .init("api_call", where: "call", is: "transfer_file"),
                             ends: [.init("file_transfer_did_finish")], key: "file",
                             progress: .init(event: "file_transfer_progress", done: "completed", total: "total")),
        ]
    }

    /// User infos and files arrive exactly once and in order, the latest context wins, every
    /// message gets exactly one reply or error, every user info transfer finishes exactly once.
    public var promises: [CorePromise] {
        [CorePromise("every message gets exactly one reply or error", .exactlyOneEnd(correlation: "message → reply")),
         // A transfer queued for a watch the phone switched away from waits for that watch
         // (docs/session-core.md, "Watch switch").
         CorePromise("every user info transfer finishes exactly once (or waits for the watch the phone switched from)",
                     .exactlyOneEnd(correlation: "user info → finished", unlessAfter: ["session_did_become_inactive"])),
         CorePromise("user infos arrive exactly once, in order", .exactlyOnceInOrder(event: "did_receive_user_info", key: "id")),
         CorePromise("files arrive exactly once, in order", .exactlyOnceInOrder(event: "did_receive_file", key: "file")),
         CorePromise("the latest application context wins", .lastAsInPlainRun(event: "did_receive_application_context", field: "value"))]
    }

    /// A ``SessionAdapter`` for the section's role and settings.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        let section = try context.decodeSection(ManifestSession.self)
        let matching = context.frameMatching ?? section?.frameMatching ?? .strict
        var prescan: SessionCapturePrescan?
        if matching == .responder {
            do throws(CaptureError) {
                prescan = try SessionCapturePrescan.scan(capturePath: context.capturePath, interfaces: context.manifest.interfaces,
                                                         gattHandles: context.manifest.gattHandles)
            } catch {
                throw .capture(error)
            }
        }
        // The responder's answers count as link inputs, so the captured calls keep their live order.
        let feedOrder = try FeedOrderPrescan.scan(for: context, core: name, honoured: honoursFeedOrder)
        return SessionAdapter(section: section, matching: matching, prescan: prescan, faults: context.faults, feedOrder: feedOrder)
    }
}
