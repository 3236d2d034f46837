import Testing
import TetherConnectIQ
import TetherTestSupport
import TetherTesting

/// A set imported from btsnoop has no `api-calls` interface: its calls are written by hand in the
/// manifest. With the app in the loop, only the host's facts among them are delivered.
@Test func anImportedSetsHandWrittenCallsGiveWayToTheAppsOwn() throws {
    let session = try ReplaySession(replaying: "Captures/ciq-imported-btsnoop")
    session.makeCurrent()
    let sender = WorkoutSender()
    sender.start(url: URL(string: try #require(session.deviceSelectionURL))!)
    try session.run()
    #expect(sender.results == [.success], "\(session.report)")
    #expect(!session.warnings.contains { $0.contains("did not make") }, "\(session.report)")
}
