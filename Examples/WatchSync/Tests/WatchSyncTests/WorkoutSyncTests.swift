import Foundation
import Testing
import TetherTesting
import TetherWatchConnectivity
import WatchSync

/// WorkoutSync, the app's own sync layer, against Tether's committed recordings: the recorded
/// watch answers what the app actually sends, on the virtual clock. Paths are relative to this
/// package's root, where `swift test` runs.
@Suite struct WorkoutSyncTests {
    static let echoApp = UUID(uuidString: "0180E520-5F7E-11E4-9803-0800200C9A66")!
    static let run = Workout(id: 7, sport: "run", kcal: 312, averageHeartRate: 148)

    /// A Garmin replay with WorkoutSync started from the recorded device selection and one workout sent.
    func garmin(faults: [String] = [], settings: [String] = []) throws -> (ReplaySession, WorkoutSync) {
        let session = try ReplaySession(replaying: "../../Captures/ciq-clean", faults: faults, settings: settings)
        session.makeCurrent()
        let sync = WorkoutSync(garminAppID: Self.echoApp)
        sync.handleDeviceSelection(URL(string: try #require(session.deviceSelectionURL))!)
        sync.send(Self.run)
        try session.run()
        return (session, sync)
    }

    @Test func aWorkoutReachesTheGarminAppOnce() throws {
        let (session, sync) = try garmin()
        #expect(sync.deliveries.map(\.workout) == [7], "\(sync.log)\n\(session.report)")
        #expect(sync.deliveries.map(\.delivery) == [.garminMessage])
        #expect(!sync.log.contains { $0.contains("retrying") })
        #expect(session.passed, "\(session.report)")
    }

    @Test func aLostAckMakesItRetryAndTheWorkoutStillArrivesOnce() throws {
        // Frame 83: the watch's ack of the first message's last packet; a 1 s step timeout so the
        // core gives up before the recorded link ends.
        let (session, sync) = try garmin(faults: ["drop:frame=83"], settings: ["messaging.settings.step_timeout_ms=1s"])
        #expect(sync.log.contains("garmin: workout 7 failed with Failure_Timeout; retrying"), "\(sync.log)")
        #expect(sync.deliveries.map(\.workout) == [7], "\(sync.log)\n\(session.report)")
    }

    @Test func aWorkoutGoesAsAMessageWhileTheAppleWatchIsReachable() throws {
        let session = try ReplaySession(replaying: "../../Captures/session-clean")
        session.makeCurrent()
        let sync = WorkoutSync(garminAppID: Self.echoApp)
        sync.activateWatchSession()
        // The app sends the workout when the user finishes it: here once the watch is reachable.
        while !WCSession.default.isReachable, session.now < .seconds(10) { try session.run(for: .milliseconds(100)) }
        sync.send(Self.run)
        try session.run()
        #expect(sync.deliveries.map(\.delivery) == [.appleMessage], "\(sync.log)\n\(session.report)")
    }

    @Test func anUnreachableAppleWatchGetsTheWorkoutAsUserInfo() throws {
        let session = try ReplaySession(replaying: "../../Captures/session-unreachable")
        session.makeCurrent()
        let sync = WorkoutSync(garminAppID: Self.echoApp)
        sync.activateWatchSession()
        sync.send(Self.run)
        try session.run()
        #expect(sync.log.contains { $0.contains("queued as user info") }, "\(sync.log)")
        #expect(sync.deliveries.map(\.delivery) == [.appleUserInfo], "\(sync.log)\n\(session.report)")
    }

    @Test func twoReplaysOfTheSameCodeWriteTheSameTrace() throws {
        let (first, _) = try garmin(faults: ["drop:frame=83"], settings: ["messaging.settings.step_timeout_ms=1s"])
        let (second, _) = try garmin(faults: ["drop:frame=83"], settings: ["messaging.settings.step_timeout_ms=1s"])
        #expect(first.traceJSONLines == second.traceJSONLines)
    }
}
