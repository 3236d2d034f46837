// A `tether` whose ingest core has two bugs: it traps at the end of a replay in which frame 101
// never reached it, and at the end of one in which neither frame 201 nor frame 204 did (a gap only
// two faults together open). What `tether replay --sweep` is tested against
// (Tests/TetherCLITests/SweepTrapTests.swift): a sweep that drops frame 101 must report that
// variant as a broken "no trap" promise and go on; `--search pairs` must find the pair no single
// fault opens and shrink it to its two faults.
import BehaviourTrace
import CaptureSet
import IngestIntegration
import ReplayKit
import TetherCLI
import TetherIntegrations

/// The built-in ingest integration, its adapter wrapped in ``TrapWithoutFrame101``.
struct TrappingIngestIntegration: WrappingIntegration {
    let wrapped: any CoreIntegration = IngestIntegration()

    func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        TrapWithoutFrame101(wrapped: try wrapped.makeAdapter(context))
    }
}

/// The ingest adapter, trapping in ``finish(now:)`` when frame 101 never came, or neither 201 nor
/// 204 did.
struct TrapWithoutFrame101: WrappingAdapter {
    var wrapped: any CoreAdapter
    var sawFrame101 = false
    var sawFrame201Or204 = false

    mutating func frame(_ frame: ReplayFrame, bytes: RawSpan, now: Duration) -> [TraceEvent] {
        if frame.number == 101 { sawFrame101 = true }
        if frame.number == 201 || frame.number == 204 { sawFrame201Or204 = true }
        return wrapped.frame(frame, bytes: bytes, now: now)
    }

    mutating func finish(now: Duration) -> [TraceEvent] {
        precondition(sawFrame101, "the fixture's ingest core traps when frame 101 never reached it")
        precondition(sawFrame201Or204, "the fixture's ingest core traps when neither frame 201 nor frame 204 reached it")
        return wrapped.finish(now: now)
    }
}

let builtIn = TetherIntegrations.builtIn.integrations.filter { $0.name != "ingest" }
TetherCommand.main(integrations: IntegrationRegistry([TrappingIngestIntegration()] + builtIn))
