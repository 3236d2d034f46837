import BehaviourTrace
import Foundation
import ReplayKit
import Testing
import TetherIntegrations

/// The built-in cores' ``CoreIntegration/correlations`` against their committed baselines: what
/// they declare pairs up in real traces.
struct CorrelationDeclarationTests {
    static let captures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Captures").path

    func pairs(_ set: String, _ core: String) throws -> CorrelationTracker {
        let trace = try TraceFile.read("\(Self.captures)/\(set)/baseline/\(core).jsonl")
        return CorrelationTracker.pairs(in: trace, correlations: TetherIntegrations.builtIn.correlations)
    }

    @Test func everyConnectIQSendOfACleanSessionCompletesWithItsProgress() throws {
        let tracker = try pairs("ciq-clean", "messaging")
        let sends = tracker.pairs.filter { $0.name == "send → completion" }
        #expect(sends.count == 2)
        #expect(sends.allSatisfy { $0.endEvent == "completion" && ($0.latencyNs ?? -1) > 0 })
        #expect(tracker.progress.count == 11)
        #expect(tracker.pairs.contains { $0.name == "app_status → answer" && $0.endEvent == "app_status" })
    }

    @Test func sessionMessagesUserInfosAndFilesPairWithTheirEnds() throws {
        let clean = try pairs("session-clean", "session")
        #expect(clean.pairs.filter { $0.name == "message → reply" }.map(\.endEvent) == ["did_receive_reply", "did_receive_reply_data"])
        #expect(clean.pairs.filter { $0.name == "user info → finished" }.allSatisfy { $0.endNs != nil })
        let timeout = try pairs("session-reply-timeout", "session")
        #expect(timeout.pairs.contains { $0.name == "message → reply" && $0.endEvent == "message_failed" })
        let file = try pairs("session-file-resume", "session")
        let transfer = try #require(file.pairs.first { $0.name == "transfer_file → finished" })
        #expect(transfer.endEvent == "file_transfer_did_finish")
        #expect(file.progress.count > 2)
        #expect(zip(file.progress, file.progress.dropFirst()).allSatisfy { $0.done <= $1.done || $1.done == 0 })
    }

    @Test func everyWidgetRefreshAndRequestIsAnswered() throws {
        let tracker = try pairs("widget-property-change", "widget")
        let refreshes = tracker.pairs.filter { $0.name == "refresh → completed" }
        let requests = tracker.pairs.filter { $0.name == "request → answer" }
        #expect(refreshes.count == 1 && refreshes[0].endEvent == "refresh_completed")
        #expect(requests.count == 4 && requests.allSatisfy { $0.endEvent == "request_succeeded" })
    }

    @Test func theIngestCoreDeclaresNone() {
        #expect(TetherIntegrations.builtIn.correlations["ingest"] == nil)
    }
}
