import BehaviourTrace
import CaptureSet
import Emulation
import ReplayKit

/// The `central` core: a capture's recorded peripheral served to the app's own CoreBluetooth code
/// (`TetherCoreBluetooth`) on the virtual clock. Any set with a Bluetooth HCI interface will do —
/// the committed `hr-*` and `gatt-sensor*` sets, an imported btsnoop, PacketLogger or pcapng —
/// whatever cores its manifest names: the peripheral comes from the capture itself.
///
/// It is not one of `tether replay`'s cores: the recorded app's CoreBluetooth calls are nowhere in a
/// capture of HCI, so there is nothing to replay without the app. `ReplaySession(replayingPeripheralOf:)`
/// runs it alone, with the app in the loop.
public struct CentralIntegration: CoreIntegration {
    /// `central`.
    public static let coreName = "central"
    /// `central`, as the trace names the core.
    public static let core = TraceName(coreName)

    /// The integration.
    public init() {}

    public var name: String { Self.coreName }
    public var summary: String { "the recorded BLE peripheral, served to the app's own CoreBluetooth code (TetherCoreBluetooth)" }
    /// No section: the capture says everything.
    public var sectionName: String? { nil }
    public var replayedRoles: Set<InterfaceRole> { [.bleHCI, .bleMonitor] }
    public var selectedBySection: Bool { false }

    public var emittedEvents: [TraceName] {
        [.apiCall] + CentralAdapter.Names.all + [.noRecordedAnswer, .frameMatched, .frameDiverged, .summary]
    }

    /// Each request of the app and the event that answers it (the same `request` id).
    public var correlations: [TraceCorrelation] {
        let pairs: [(call: String, end: TraceName)] = [("read", "read"), ("write", "written"), ("set_notify", "notification_state"), ("discover_services", "services_discovered"),
         ("discover_included_services", "included_services_discovered"), ("discover_characteristics", "characteristics_discovered"),
         ("discover_descriptors", "descriptors_discovered")]
        return pairs.map { call, end in
            TraceCorrelation("\(call) → \(end)", start: .init("api_call", where: "call", is: call), ends: [.init(end)], key: "request")
        }
    }

    /// Every request the app makes is answered exactly once, unless the link went down first
    /// (CoreBluetooth drops what is pending when a peripheral disconnects).
    public var promises: [CorePromise] {
        correlations.map { CorePromise("every \($0.name.components(separatedBy: " → ")[0]) is answered exactly once", .exactlyOneEnd(correlation: $0.name, unlessAfter: ["disconnected"])) }
    }

    /// Reads the capture's Bluetooth traffic into the link's model of the peripheral.
    /// - Throws: ``ReplayError`` naming the set when it holds no Bluetooth HCI, no ATT traffic, or
    ///   nothing a database can be built from.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        let plan: EmulationPlan
        do throws(EmulationError) {
            let peripheral = try CaptureScanner.scan(setPath: context.captureSet.directory.path, verify: false)
            plan = try EmulationPlan(peripheral: peripheral, file: context.capturePath, useResponders: false)
        } catch {
            throw .manifest(path: context.capturePath, line: nil, field: "capture", problem: "the central core cannot serve this capture's peripheral: \(error)",
                            hint: "ReplaySession(replayingPeripheralOf:) needs a capture with a Bluetooth HCI interface and ATT traffic (docs/corebluetooth.md).")
        }
        return CentralAdapter(link: VirtualPeripheralLink(plan: plan, faults: CentralLinkFaults(faults: context.faults)))
    }
}
