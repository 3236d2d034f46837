@testable import SessionIntegration
@testable import WidgetIntegration
import TetherIntegrations
import BehaviourTrace
import CaptureSet
import Foundation
import ReplayKit
import Testing

/// The session and widget responders (docs/replay-engine.md, "Responders"): without faults they
/// give the callbacks strict replay gives; under faults the recorded peer answers the core's
/// retransmissions, re-handshakes and reconnections.
@Suite struct ResponderReplayTests {
    static let widgetSets = [
        "widget-property-change", "widget-set-response-notification", "widget-broker-drop", "widget-refresh-overrun",
        "widget-write-race", "widget-scene-fire", "widget-host-open-url", "widget-broker-outage",
    ]

    /// Events that are the core's callbacks and calls (not frame bookkeeping).
    static let bookkeeping: Set<String> = ["frame_emitted", "frame_matched", "frame_unsent", "frame_diverged", "summary", "responder_made"]

    func replay(_ name: String, frameMatching: FrameMatchingMode? = nil, faults: [String] = []) throws -> ReplayOutcome {
        var options = try ReplayOptions.builtIn(frameMatching: frameMatching)
        options.faults = try faults.map { try Fault(parsing: $0) }
        return try replaySet(at: MessagingReplayTests.captures.appendingPathComponent(name).path, options: options)
    }

    func callbacks(_ outcome: ReplayOutcome, core: String) -> [String] {
        outcome.trace.filter { $0.core == core && !Self.bookkeeping.contains($0.event) }
            .map { $0.event + " " + JSONLiteral.text(.object($0.fields)) }
    }

    func summary(_ outcome: ReplayOutcome, core: String) throws -> [String: TraceValue] {
        try #require(outcome.trace.last { $0.core == core && $0.event == "summary" }).fields
    }

    func events(_ outcome: ReplayOutcome, _ event: String, core: String = "session") -> [TraceEvent] {
        outcome.trace.filter { $0.core == core && $0.event == event }
    }

    // MARK: without faults

    @Test(arguments: SessionReplayTests.liveSets.map { ($0, "session") } + Self.widgetSets.map { ($0, "widget") })
    func responderModeGivesStrictCallbacks(_ name: String, _ core: String) throws {
        let strict = try replay(name, frameMatching: .strict)
        let responder = try replay(name, frameMatching: .responder)
        #expect(try summary(responder, core: core)["frame_matching"] == .string("responder"))
        #expect(callbacks(responder, core: core) == callbacks(strict, core: core), "\(name)")
        for result in Expectations.evaluate(responder.manifest.expectations, trace: responder.trace) {
            #expect(result.passed, "\(name): \(result.message)")
        }
        #expect(try summary(responder, core: core)["frames_diverged"] == .int(0), "\(name)")
        #expect(try summary(responder, core: core)["responder_made"] == .int(0), "\(name)")
    }
}
