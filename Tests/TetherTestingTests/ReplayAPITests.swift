import Testing
import TetherTesting

// The one-call API as a user's package calls it: `swift test` runs from the package root, so the
// committed sets are at Captures/.

@Test func aCommittedSetReplaysGreenInOneCall() async throws {
    let run = try await replay("Captures/ciq-clean")
    #expect(run.passed, "\(run.report)")
    #expect(run.cores == ["messaging"])
    #expect(run.expectations.count == 11)
    #expect(run.baselines.map(\.name) == ["messaging"])
    #expect(!run.events(core: "messaging", named: "completion").isEmpty)
}

@Test func aChangedSettingFailsWithTheReportsWords() async throws {
    // A window of 4 packets changes what the core writes, so frames diverge from the capture and
    // the baseline differs.
    let run = try await replay("Captures/ciq-clean", settings: ["messaging.settings.window_size=4"])
    #expect(!run.passed)
    #expect(!run.failedExpectations.isEmpty)
    #expect(run.report.contains("FAIL"))
    #expect(!run.events(core: "messaging", named: "frame_diverged").isEmpty)
}

@Test func aSettingOutsideItsBoundsIsRefusedBeforeReplaying() async {
    await #expect(throws: TetherTestingError.self) {
        _ = try await replay("Captures/ciq-clean", settings: ["messaging.settings.window_size=99"])
    }
}

@Test func aMissingSetIsAnErrorNamingIt() async {
    let error = await #expect(throws: TetherTestingError.self) {
        _ = try await replay("Captures/no-such-set")
    }
    #expect(error?.message.contains("no-such-set") == true)
}

/// What a companion app's screen might keep about its transfers: the last progress of each send,
/// whether it completed, and the messages that came back.
final class TransferScreenModel {
    struct Transfer: Equatable {
        var fraction: Double = 0
        var result: String?
    }
    private(set) var transfers: [Int64: Transfer] = [:]
    private(set) var inbox: [String] = []
    private(set) var progressWentBack = false
    private(set) var lastUpdateNs: Int64 = 0

    /// Fed by the replayed MessagingCore's callbacks, in virtual-time order.
    func apply(_ event: TraceEvent) {
        guard event.core == "messaging" else { return }
        lastUpdateNs = event.timeNs
        switch event.event {
        case "progress":
            guard case .int(let send)? = event.field("send"), case .int(let sent)? = event.field("sent"),
                  case .int(let total)? = event.field("total"), total > 0 else { return }
            let fraction = Double(sent) / Double(total)
            if fraction < transfers[send, default: Transfer()].fraction { progressWentBack = true }
            transfers[send, default: Transfer()].fraction = fraction
        case "completion":
            guard case .int(let send)? = event.field("send"), case .string(let result)? = event.field("result") else { return }
            transfers[send, default: Transfer()].result = result
        case "message_received":
            inbox.append(event.field("value").map(\.compactText) ?? "")
        default:
            break
        }
    }
}

@Test func aViewModelFedByTheReplayedCoreEndsInTheRecordedState() async throws {
    let model = TransferScreenModel()
    let run = try await replay("Captures/ciq-clean", observe: model.apply)
    #expect(run.passed)
    #expect(model.transfers[1] == .init(fraction: 1, result: "Success"))
    #expect(model.transfers[2] == .init(fraction: 1, result: "Success"))
    #expect(!model.progressWentBack)
    #expect(model.inbox.count == 2)
    #expect(model.inbox.first == #"["hello pi",3.14159]"#)
}

@Test func testCodeDrivesTheCoreAtChosenInstantsWithTheRecordedWatchAnswering() async throws {
    let device = "7e7e7e7e-0000-4000-8000-f0f0f0f0f0f0"
    let app = "0180E520-5F7E-11E4-9803-0800200C9A66"
    let url = "tether-ciq://device-select-resp?ciqApp=Connect&ciqBundle=com.garmin.connect.mobile&ciqScheme&ciqSdkVersion=10000"
        + "&sourceUrlHost&d0ID=7E7E7E7E-0000-4000-8000-F0F0F0F0F0F0&d0Model=watch&d0Name=watch-1"
    func call(_ ms: Int, _ name: String, _ arguments: [String: TraceValue] = [:]) -> ScheduledCall {
        ScheduledCall(at: .milliseconds(ms), core: "messaging", call: name, arguments: arguments)
    }
    let calls = [
        call(7, "bluetooth_state", ["ready": .bool(true)]),
        call(8, "device_list", ["url": .string(url)]),
        call(8, "bind_device", ["device": .string(device), "peer": .string("F0:F0:F0:F0:F0:F0")]),
        call(8, "register_device", ["device": .string(device)]),
        call(8, "register_app", ["device": .string(device), "app": .string(app), "listener": .int(1)]),
        // Not what the recorded app sent: the responder answers it as the watch answered the first send.
        call(623, "send", ["device": .string(device), "app": .string(app), "message": .array([.string("from a test"), .int(42)])]),
    ]
    let model = TransferScreenModel()
    let run = try await replay(
        "Captures/ciq-clean", frameMatching: .responder, compareBaselines: false,
        calls: calls, replacingRecordedCallsOf: ["messaging"], observe: model.apply)
    #expect(run.summary.scheduledCallsDelivered == calls.count)
    #expect(run.summary.apiCallsReplaced > 0)
    // The core numbers its sends; ours is the only one, made at the instant the test chose.
    let ours = try #require(run.events(core: "messaging", named: "api_call").first { $0.field("call") == .string("send") })
    #expect(ours.timeNs == 623_000_000)
    #expect(ours.field("message") == .array([.string("from a test"), .int(42)]))
    guard case .int(let send)? = ours.field("send") else {
        Issue.record("the send call has no id: \(ours.jsonLine())")
        return
    }
    #expect(model.transfers[send]?.result == "Success", "\(run.events(core: "messaging", named: "completion"))")
    #expect(run.events(core: "messaging", named: "completion").count == 1)
}
