@testable import IngestIntegration
@testable import MessagingIntegration
@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import CaptureSet
import Foundation
import ReplayKit
import BehaviourTrace
import Testing

/// Replays of the committed Connect IQ capture sets (recorded for real: live host, Bumble watch,
/// H4 tap): frame matching, responder mode, version diffs, and live trace against replayed trace.
@Suite struct MessagingReplayTests {
    static let captures: URL = {
        var url = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.appendingPathComponent("Captures")
    }()

    static let liveSets = ["ciq-clean", "ciq-app-not-installed", "ciq-silent-timeout", "ciq-disconnect-mid", "ciq-max-retries", "ciq-watch-initiated",
                           "ciq-concurrent-send"]

    /// The built-in cores, replaying in capture order: the records' `link_inputs` ignored.
    static let captureOrder = IntegrationRegistry([
        IngestIntegration(), MessagingIntegration(honoursFeedOrder: false), SessionIntegration(honoursFeedOrder: false),
        WidgetIntegration(honoursFeedOrder: false),
    ])

    /// The counts of `summary` fields, as integers.
    static func int(_ value: TraceValue?) -> Int64? {
        if case .int(let n)? = value { n } else { nil }
    }

    func replay(_ name: String, _ options: ReplayOptions = .builtInDefaults) throws -> ReplayOutcome {
        try replaySet(at: Self.captures.appendingPathComponent(name).path, options: options)
    }

    func summary(_ outcome: ReplayOutcome) throws -> [String: TraceValue] {
        try #require(outcome.trace.last { $0.core == "messaging" && $0.event == "summary" }).fields
    }

    @Test func everyPacketTheCoreWritesEqualsTheCapturedOneEncryptedIncluded() throws {
        let outcome = try replay("ciq-clean")
        #expect(outcome.cores == ["messaging"])
        let fields = try summary(outcome)
        #expect(fields["frames_diverged"] == .int(0))
        #expect(fields["frames_matched"] == fields["phone_writes"])
        #expect((fields["frames_matched"].flatMap { if case .int(let n) = $0 { n } else { nil } } ?? 0) > 100)
        // The key packets carry keys the core drew from the capture, so the ciphertext matched too.
        #expect(outcome.trace.contains { $0.event == "frame_emitted" && $0.fields["packet"] == .string("first conn 1, 2056 bytes, encrypted") })
    }

    @Test(arguments: liveSets) func liveTraceEqualsReplayedTrace(_ name: String) throws {
        let outcome = try replay(name)
        let live = try TraceFile.read(Self.captures.appendingPathComponent(name).appendingPathComponent("live/messaging.jsonl").path)
        let ignored: Set<TraceName> = ["frame_matched", "summary"]
        let report = TraceDiff.compare(
            live.filter { !ignored.contains($0.event) }, outcome.trace.filter { !ignored.contains($0.event) },
            timingToleranceNs: 50_000_000)
        #expect(report.isEmpty, "\(name): \(report.render(maxLines: 20))")
    }

    /// The second send is made while the watch's echo of the first is on the air: the live core
    /// took one of the echo's packets after the call although the tap stamped it before.
    @Test func theConcurrentSendReplaysInTheLiveCoresOrderAndDivergesInCaptureOrder() throws {
        let (_, inCaptureOrder, _) = try Self.replayBothWays("ciq-concurrent-send", core: "messaging")
        #expect(inCaptureOrder.trace.contains { $0.event == "frame_diverged" })
        #expect(try summary(inCaptureOrder)["feed_order_calls_held"] == nil)
    }

    /// Replays a set recorded with the app acting while the peer's traffic was in flight, in the
    /// live core's order (checked: no divergence, nothing released by force, and something moved,
    /// so the set still exercises the rule) and in capture order; and the live host's trace.
    static func replayBothWays(_ name: String, core: TraceName, liveTrace: String? = nil) throws
        -> (ordered: ReplayOutcome, inCaptureOrder: ReplayOutcome, live: [TraceEvent])
    {
        let path = captures.appendingPathComponent(name).path
        let ordered = try ReplayKit.replaySet(at: path, options: .builtInDefaults)
        let fields = try #require(ordered.trace.last { $0.core == core && $0.event == "summary" }).fields
        #expect(fields["frames_diverged"] == .int(0))
        #expect(fields["feed_order_forced_releases"] == .int(0))
        let moved = (int(fields["feed_order_calls_held"]) ?? 0) + (int(fields["feed_order_links_held"]) ?? 0)
        #expect(moved > 0, "\(name) no longer exercises the feed order: \(fields)")
        var options = ReplayOptions.builtInDefaults
        options.integrations = captureOrder
        let inCaptureOrder = try ReplayKit.replaySet(at: path, options: options)
        let live = try TraceFile.read(captures.appendingPathComponent(name).appendingPathComponent("live/\(liveTrace ?? core.text).jsonl").path)
        return (ordered, inCaptureOrder, live)
    }

    /// Whether `live` and `replayed` differ, leaving out what a live host does not write.
    static func differ(_ live: [TraceEvent], _ replayed: [TraceEvent]) -> Bool {
        let ignored: Set<TraceName> = ["frame_matched", "frame_unsent", "summary"]
        return !TraceDiff.compare(live.filter { !ignored.contains($0.event) }, replayed.filter { !ignored.contains($0.event) },
                                  timingToleranceNs: 50_000_000).isEmpty
    }

    /// Scheduled calls drive a core whose captured calls are replaced: their feed order is not applied.
    @Test func replacedCallsLeaveNothingToOrder() throws {
        var options = ReplayOptions.builtInDefaults
        options.replacedCallCores = ["messaging"]
        let outcome = try replay("ciq-concurrent-send", options)
        #expect(outcome.summary.apiCallsReplaced > 0)
        let fields = try summary(outcome)
        #expect(fields["feed_order_links_held"] == nil && fields["feed_order_calls_held"] == nil)
    }

    /// Sets recorded before the field carry none: nothing is reordered, no count in the summary.
    @Test(arguments: ["ciq-clean", "ciq-disconnect-mid", "ciq-imported-btsnoop"]) func aSetRecordedBeforeTheFieldReplaysInCaptureOrder(_ name: String) throws {
        let loaded = try loadReplaySet(at: Self.captures.appendingPathComponent(name).path, options: .builtInDefaults)
        let prescan = try FeedOrderPrescan.scan(capturePath: loaded.capturePath, interfaces: loaded.manifest.interfaces,
                                                core: "messaging", takesUnlabelled: true)
        #expect(prescan.calls.isEmpty)
        let fields = try summary(try replay(name))
        #expect(fields["feed_order_links_held"] == nil && fields["feed_order_calls_held"] == nil)
    }

    @Test func committedExpectationsHold() throws {
        for name in Self.liveSets + ["ciq-imported-btsnoop"] {
            let outcome = try replay(name)
            // A set whose manifest lost its expectations would otherwise pass with nothing checked.
            #expect(!outcome.manifest.expectations.isEmpty, "\(name) has no expectations")
            for result in Expectations.evaluate(outcome.manifest.expectations, trace: outcome.trace) {
                #expect(result.passed, "\(name): \(result.message)")
            }
        }
    }

    @Test func importedBtsnoopWithHandWrittenCallsReplaysLikeTheRecording() throws {
        let imported = try replay("ciq-imported-btsnoop")
        let recorded = try replay("ciq-clean")
        let behaviour: Set<TraceName> = ["device_status", "app_status", "progress", "completion", "message_received", "open_app"]
        let a = recorded.trace.filter { behaviour.contains($0.event) }.map { [$0.event.text, JSONLiteral.text(.object($0.fields))] }
        let b = imported.trace.filter { behaviour.contains($0.event) }.map { [$0.event.text, JSONLiteral.text(.object($0.fields))] }
        #expect(a == b)
        #expect(try summary(imported)["frames_diverged"] == .int(0))
    }

    @Test func keyByteScanFindsTheKeysFullDissectionFinds() throws {
        for name in Self.liveSets {
            let set = try CaptureSetDirectory.load(Self.captures.appendingPathComponent(name).path)
            let full = try MessagingCapturePrescan.scan(capturePath: set.capturePath, interfaces: set.manifest.interfaces,
                                                        gattHandles: set.manifest.gattHandles, watchPackets: true)
            let fast = try #require(try MessagingCapturePrescan.scanKeys(capturePath: set.capturePath, interfaces: set.manifest.interfaces))
            #expect(fast == full.keys, "\(name)")
        }
        let clean = try CaptureSetDirectory.load(Self.captures.appendingPathComponent("ciq-clean").path)
        #expect(try MessagingCapturePrescan.scanKeys(capturePath: clean.capturePath, interfaces: clean.manifest.interfaces)?.count == 2)
    }

    @Test func responderModeAnswersTheCoreFromTheCapture() throws {
        let outcome = try replay("ciq-clean", try .builtIn(frameMatching: .responder))
        let fields = try summary(outcome)
        #expect(fields["frame_matching"] == .string("responder"))
        #expect(fields["frames_diverged"] == .int(0))
        #expect(outcome.trace.filter { $0.event == "completion" }.map { $0.fields["result"] } == [.string("Success"), .string("Success")])
    }

    @Test func responderModeLetsAnotherRetryCountRunToItsOwnEnd() throws {
        // One more retry than recorded: the capture has three "not started" answers, so the
        // fourth `first` gets none; the core waits, and the recorded link drop ends the send.
        let outcome = try replay("ciq-max-retries", try .builtIn("messaging.settings.first_retries=3", frameMatching: .responder))
        let firsts = outcome.trace.filter { $0.event == "frame_emitted" && $0.fields["packet"].map { JSONLiteral.text($0).contains("first conn") } == true }
        #expect(firsts.count == 4)
        #expect(outcome.trace.last { $0.event == "completion" }?.fields["result"] == .string("Failure_DeviceNotAvailable"))
    }

    @Test func fewerRetriesChangeExactlyTheEventsTheyShould() throws {
        let baseline = try TraceFile.read(Self.captures.appendingPathComponent("ciq-max-retries/baseline/messaging.jsonl").path)
        let outcome = try replay("ciq-max-retries", try .builtIn("messaging.settings.first_retries=1"))
        let report = TraceDiff.compare(baseline, outcome.trace, timingToleranceNs: 0)
        // The third `first` is never written, so its match disappears...
        #expect(report.missing.map(\.event.event) == ["frame_emitted", "frame_matched"])
        #expect(report.missing.first?.event.fields["packet"].map { JSONLiteral.text($0).contains("first conn 1") } == true)
        // ...the watch's third "not started" arrives after the send gave up, and the captured
        // third `first` is left unmatched at the end...
        #expect(report.extra.map(\.event.event) == ["violation", "frame_diverged"])
        #expect(report.extra.first?.event.fields["kind"] == .string("unexpected-ack"))
        #expect(report.extra.last?.event.fields["kind"] == .string("missing"))
        // ...and the failure comes one round trip earlier, with the same result.
        #expect(report.timing.map(\.a.event) == ["completion"])
        #expect(report.changed.map(\.a.event) == ["summary"])
        #expect(outcome.trace.last { $0.event == "completion" }?.fields["result"] == .string("Failure_MaxRetries"))
    }

    @Test func aSmallerWindowDivergesAtTheFirstAckOfTheWatchsTransfer() throws {
        let outcome = try replay("ciq-clean", try .builtIn("messaging.settings.window_size=14"))
        let first = try #require(outcome.trace.first { $0.event == "frame_diverged" })
        // Sending, a 14-packet window only waits earlier: the watch's ack after seq 14 releases it
        // and seq 14 follows, as recorded. Receiving the echo, the phone acknowledges after seq 13
        // where the recorded phone did after seq 14: that ack is the first divergence.
        #expect(first.fields["kind"] == .string("different"))
        #expect(first.fields["expected_packet"] == .string("ack data success seq 14 conn 1"))
        #expect(first.fields["emitted_packet"] == .string("ack data success seq 13 conn 1"))
        let fields = try summary(outcome)
        #expect((fields["first_divergence"].map { JSONLiteral.text($0) } ?? "").contains("frame \(first.fields["frame"].map { JSONLiteral.text($0) } ?? "?")"))
    }
}
