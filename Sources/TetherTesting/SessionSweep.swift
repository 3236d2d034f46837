import BehaviourTrace
import Foundation
import ReplayKit

/// One variant of a sweep over an app-driven session: the fault, and what it broke.
public struct SessionSweepVariant: Sendable, Hashable {
    /// The peer frame the fault hit.
    public var frame: Int
    /// The fault, in `--fault` syntax: pass it to `ReplaySession(…, faults:)` to rerun this variant.
    public var fault: String
    /// The cores' promises it broke (docs/faults.md), and why.
    public var broken: [String]
    /// The error the app's closure or the session threw, if any.
    public var error: String?

    /// No promise broken and nothing thrown.
    public var passed: Bool { broken.isEmpty && error == nil }
}

/// A sweep over an app-driven session (``ReplaySession/sweep(_:peripheralOf:app:)``).
public struct SessionSweepResult: Sendable {
    /// The set swept.
    public var set: String
    /// The sweep kind (`drop`, `delay=2s`, `disconnect=5s`).
    public var kind: String
    /// Every variant, in frame order.
    public var variants: [SessionSweepVariant]

    /// How many variants kept every promise.
    public var passed: Int { variants.filter(\.passed).count }
    /// How many did not.
    public var failed: Int { variants.count - passed }

    /// One line per failing variant, with the `faults:` to rerun it.
    public var report: String {
        var lines = ["sweep \(kind) of \(set): \(variants.count) variants, \(passed) passed, \(failed) failed"]
        for variant in variants where !variant.passed {
            lines.append("  FAIL faults: [\"\(variant.fault)\"]: " + (variant.error ?? variant.broken.joined(separator: "; ")))
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

extension ReplaySession {
    /// The promises the cores broke so far (docs/faults.md), one line each.
    public var brokenPromises: [String] {
        var checker = promiseCheckerSnapshot
        return checker.verdict().map(\.description)
    }

    /// Sweeps one fault over every peer frame the app's own run of the recorded peripheral met:
    /// a clean run of `app` first, for the frames (the notifications and indications it was sent
    /// for `drop` and `delay=D`; every frame's instant for `disconnect=D`, the link lost there and
    /// back after D), then one fresh session per frame with that one fault, `app` run in it, and
    /// its promises checked — as `tether replay --sweep` does for the cores, with the app's code
    /// in the loop. Variants run one after another on this thread: the app's code need not be
    /// thread-safe.
    ///
    /// ```swift
    /// let result = try ReplaySession.sweep("drop", peripheralOf: "Captures/hr-clean") { session in
    ///     session.makeCurrent()
    ///     let monitor = HeartRateMonitor()
    ///     monitor.start()
    ///     try session.run()
    /// }
    /// #expect(result.failed == 0, "\(result.report)")
    /// ```
    /// - Parameter app: Starts the app's code in the session it is given and runs the session; it
    ///   may throw (or `#expect`) to add checks of its own: a throw fails the variant.
    /// - Throws: ``TetherTestingError`` when the kind is unknown, or the clean run fails.
    public static func sweep(_ kind: String, peripheralOf path: String,
                             app: (ReplaySession) throws -> Void) throws(TetherTestingError) -> SessionSweepResult {
        guard let sweepKind = SweepKind(kind) else {
            throw TetherTestingError(message: "sweep \"\(kind)\": expected drop, delay=DURATION or disconnect=DURATION (docs/faults.md)")
        }
        let clean = try ReplaySession(replayingPeripheralOf: path)
        do {
            try app(clean)
        } catch {
            throw TetherTestingError(message: "sweep \(kind) of \(path): the clean run failed: \(error)")
        }
        var points: [(frame: Int, time: Duration)] = []
        var seen = Set<Int>()
        // Named once, not interned per event.
        let central: TraceName = "central", notification: TraceName = "notification"
        for event in clean.trace where event.core == central {
            guard case .int(let frame)? = event.field("frame"), frame > 0, seen.insert(Int(frame)).inserted else { continue }
            if case .disconnect = sweepKind {
                points.append((Int(frame), .nanoseconds(event.timeNs)))
            } else if event.event == notification {
                points.append((Int(frame), .nanoseconds(event.timeNs)))
            }
        }
        var variants: [SessionSweepVariant] = []
        for point in points.sorted(by: { $0.frame < $1.frame }) {
            let fault = sweepKind.fault(frame: point.frame, at: point.time).description
            var variant = SessionSweepVariant(frame: point.frame, fault: fault, broken: [], error: nil)
            do {
                let session = try ReplaySession(replayingPeripheralOf: path, faults: [fault])
                try app(session)
                variant.broken = session.brokenPromises
            } catch {
                variant.error = "\(error)"
            }
            variants.append(variant)
        }
        return SessionSweepResult(set: URL(fileURLWithPath: path).lastPathComponent, kind: kind, variants: variants)
    }
}
