import CaptureSet
import SessionCore
import SessionIntegration
import ReplayKit
import Testing

/// `session.settings.window_frames`: the schema's bound is the core's.
struct SessionWindowSettingTests {
    @Test func theSchemasBoundIsTheLinksLargestWindow() throws {
        let field = try #require(SessionSectionSchema.settings.first { $0.key == "settings.window_frames" })
        guard case .integer(let range) = field.kind else {
            Issue.record("window_frames is not an integer field")
            return
        }
        #expect(range == 1...Int64(SessionLink.maximumWindowFrames))
    }

    @Test func aReplayWithTheWindowSettingStillMatchesACleanSessionsFrames() throws {
        // The recorded watch stated no window, so the phone's own HELLO (now carrying one) is the
        // only frame that differs: with frame matching off the replay holds every expectation.
        let path = MessagingReplayTests.captures.appendingPathComponent("session-clean").path
        let outcome = try ReplayKit.replaySet(at: path, options: try .builtIn("session.settings.window_frames=64", frameMatching: .off))
        #expect(outcome.trace.contains { $0.event == "handshake_completed" })
    }
}
