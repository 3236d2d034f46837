import BehaviourTrace
import Foundation
import Testing
import TetherLive
import TetherTestSupport

/// What the app posts that a live host never applies is said in a warning, not dropped in silence.
@Suite struct LiveSessionUntakenPostsTests {
    /// A run whose bridge cannot start never takes the calls the app made before it: the run
    /// fails, and the warnings count what was posted and say the host never started.
    @Test func postsOfARunThatNeverStartedAreCountedInAWarning() throws {
        let folder = try TemporaryFolder("untaken-posts")
        let live = LiveSession(connectIQ: "tcp-client:127.0.0.1:1", watch: .init(address: "F0:F0:F0:F0:F0:F0"),
                               bridgeScript: folder.path("no-such-bridge.py").path, bridgeLog: folder.path("bridge.log").path)
        live.post(core: "messaging", record: ["call": .string("send_message")])
        live.post(core: "messaging", record: ["call": .string("open_app")])
        live.post { Issue.record("a facade's work ran though the host never started") }
        #expect(throws: LiveSessionError.self) { try live.run(for: .seconds(5)) }
        let warning = try #require(live.warnings.last)
        #expect(warning.hasPrefix("the app posted 2 calls and 1 app event or facade completion that the host never took"))
        #expect(warning.contains("the run ended before the host started"))
    }

    /// A call for a core the session does not run is refused at once, with a warning of its own,
    /// and is not counted again when the run ends.
    @Test func aCallForAnotherCoreIsRefusedWhenPosted() throws {
        let folder = try TemporaryFolder("untaken-other-core")
        let live = LiveSession(connectIQ: "tcp-client:127.0.0.1:1", watch: .init(address: "F0:F0:F0:F0:F0:F0"),
                               bridgeScript: folder.path("no-such-bridge.py").path, bridgeLog: folder.path("bridge.log").path)
        live.post(core: "session", record: ["call": .string("send_message")])
        #expect(live.warnings == ["a call for core session was not delivered: this live session runs core messaging"])
        #expect(throws: LiveSessionError.self) { try live.run(for: .seconds(5)) }
        #expect(!live.warnings.contains { $0.hasPrefix("the app posted") })
    }
}
