import HeartRateCore
import HeartRateIntegration
import Testing
import TetherTesting

// The example's sets replayed through Tether's one-call API, with the heart_rate core registered
// from this package. `swift test` runs from Examples/HeartRate, so the sets are at Captures/.

/// Tether's cores plus this package's.
let integrations = TetherIntegrations.builtIn.adding(HeartRateIntegration())

@Test(arguments: ["hr-clean", "hr-contact-lost", "hr-silent"])
func aCommittedSetReplaysGreen(_ name: String) async throws {
    let run = try await replay("Captures/\(name)", integrations: integrations)
    #expect(run.passed, "\(run.report)")
    #expect(run.cores == ["heart_rate"])
    #expect(run.baselines.map(\.name) == ["heart_rate"])
}

@Test func noDataFiresExactlyTheConfiguredTimeAfterTheLastMeasurement() async throws {
    let run = try await replay("Captures/hr-silent", integrations: integrations)
    let last = try #require(run.events(core: "heart_rate", named: "measurement").last)
    let noData = try #require(run.events(core: "heart_rate", named: "no_data").first)
    #expect(noData.timeNs - last.timeNs == 5_000_000_000)
    #expect(noData.field("silent_for_ns") == .int(5_000_000_000))
}

@Test func aShorterTimeoutFromTheTestMovesNoDataWithIt() async throws {
    let run = try await replay("Captures/hr-silent", integrations: integrations,
                               settings: ["heart_rate.no_data_timeout_ms=2s"], compareBaselines: false)
    let last = try #require(run.events(core: "heart_rate", named: "measurement").last)
    let noData = try #require(run.events(core: "heart_rate", named: "no_data").first)
    #expect(noData.timeNs - last.timeNs == 2_000_000_000)
    // The set's own expectation pins the recorded 5 s, so it now fails, and says so.
    #expect(run.failedExpectations.contains { $0.expectation.name?.contains("exactly 5 s") == true })
}

@Test func theCoresRequestsMatchThePhonesCapturedOnes() async throws {
    let run = try await replay("Captures/hr-clean", integrations: integrations)
    #expect(run.events(core: "heart_rate", named: "frame_matched").count == 3)
    #expect(run.events(core: "heart_rate", named: "frame_diverged").isEmpty)
}

@Test func aSetOfTheHeartRateCoreIsRefusedByPlainTetherNamingTheSection() async {
    let error = await #expect(throws: TetherTestingError.self) {
        _ = try await replay("Captures/hr-clean")
    }
    #expect(error?.message.contains("no registered core claims the section `heart_rate`") == true)
}

/// What a fitness app's live screen keeps: the current heart rate, whether the strap touches the
/// skin, the last RR interval, and a "check your strap" banner.
final class WorkoutScreenModel {
    private(set) var bpm: Int?
    private(set) var skinContact: Bool?
    private(set) var lastRRSeconds: Double?
    private(set) var strapWarning = false
    private(set) var beats = 0

    func apply(_ event: TraceEvent) {
        guard event.core == "heart_rate" else { return }
        switch event.event {
        case "measurement":
            if case .int(let rate)? = event.field("heart_rate") { bpm = Int(rate) }
            if case .array(let rr)? = event.field("rr_intervals"), case .int(let last)? = rr.last { lastRRSeconds = Double(last) / 1024 }
            beats += 1
        case "sensor_contact_changed":
            if case .bool(let detected)? = event.field("detected") { skinContact = detected }
        case "no_data":
            strapWarning = true
        case "data_resumed":
            strapWarning = false
        default:
            break
        }
    }
}

@Test func aWorkoutScreenFedByTheReplayedStrapShowsTheWarningWhenItGoesSilent() async throws {
    let screen = WorkoutScreenModel()
    let run = try await replay("Captures/hr-silent", integrations: integrations, observe: screen.apply)
    #expect(run.passed)
    #expect(screen.beats == 3)
    #expect(screen.strapWarning)
    #expect(screen.bpm != nil)
}

@Test func aWorkoutScreenFollowsSkinContactLostAndRegained() async throws {
    var contactHistory: [Bool] = []
    let screen = WorkoutScreenModel()
    _ = try await replay("Captures/hr-contact-lost", integrations: integrations) { event in
        screen.apply(event)
        if event.event == "sensor_contact_changed", case .bool(let detected)? = event.field("detected") { contactHistory.append(detected) }
    }
    #expect(contactHistory == [false, true])
    #expect(screen.skinContact == true)
    #expect(!screen.strapWarning)
    #expect(screen.lastRRSeconds != nil)
}

@Test func testCodeCanResetEnergyAtAnInstantOfItsChoosing() async throws {
    // The recorded app reset at 6.2 s; here the test resets at 10 s instead. The strap's answer
    // is not in the capture at that instant, so the core's request stands unanswered and differs
    // from the phone's: what a test of "what if the user tapped reset later" should show.
    let run = try await replay(
        "Captures/hr-clean", integrations: integrations, compareBaselines: false,
        calls: [ScheduledCall(at: .seconds(10), core: "heart_rate", call: "reset_energy_expended")])
    let calls = run.events(core: "heart_rate", named: "api_call").filter { $0.field("call") == .string("reset_energy_expended") }
    #expect(calls.map(\.timeNs).contains(10_000_000_000))
}
