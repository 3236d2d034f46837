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
struct TrappingIngestIntegration: CoreIntegration {
    let wrapped = IngestIntegration()
    var name: String { wrapped.name }
    var summary: String { wrapped.summary }
    var sectionName: String? { wrapped.sectionName }
    var replayedRoles: Set<InterfaceRole> { wrapped.replayedRoles }
    var defaultForRoles: Set<InterfaceRole> { wrapped.defaultForRoles }
    var replaysUndescribedInterfaces: Bool { wrapped.replaysUndescribedInterfaces }
    var selectedBySection: Bool { wrapped.selectedBySection }
    var takesUnlabelledAPICalls: Bool { wrapped.takesUnlabelledAPICalls }
    var settings: [IntegrationSetting] { wrapped.settings }
    var sectionFields: [IntegrationSetting] { wrapped.sectionFields }
    var emittedEvents: [String] { wrapped.emittedEvents }
    var correlations: [TraceCorrelation] { wrapped.correlations }
    var promises: [CorePromise] { wrapped.promises }

    func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        TrapWithoutFrame101(wrapped: try wrapped.makeAdapter(context))
    }
}

/// Forwards everything to the ingest adapter, and traps in ``finish(now:)`` when frame 101 never
/// came, or neither 201 nor 204 did.
struct TrapWithoutFrame101: CoreAdapter {
    var wrapped: any CoreAdapter
    var sawFrame101 = false
    var sawFrame201Or204 = false

    var core: String { wrapped.core }
    var dissectsFrames: Bool { wrapped.dissectsFrames }
    func input(for interface: ReplayInterface) -> ReplayInput { wrapped.input(for: interface) }
    var nextDeadline: Duration? { wrapped.nextDeadline }

    mutating func frame(_ frame: ReplayFrame, now: Duration) -> [TraceEvent] {
        if frame.number == 101 { sawFrame101 = true }
        if frame.number == 201 || frame.number == 204 { sawFrame201Or204 = true }
        return wrapped.frame(frame, now: now)
    }

    mutating func timeout(now: Duration) -> [TraceEvent] { wrapped.timeout(now: now) }

    mutating func finish(now: Duration) -> [TraceEvent] {
        precondition(sawFrame101, "the fixture's ingest core traps when frame 101 never reached it")
        precondition(sawFrame201Or204, "the fixture's ingest core traps when neither frame 201 nor frame 204 reached it")
        return wrapped.finish(now: now)
    }
}

let builtIn = TetherIntegrations.builtIn.integrations.filter { $0.name != "ingest" }
TetherCommand.main(integrations: IntegrationRegistry([TrappingIngestIntegration()] + builtIn))
