import HeartRateCore
import ReplayKit

/// The Heart Rate client core as Tether's replay sees it: the phone's HCI (`ble-hci`,
/// `core: heart_rate`, or any BLE interface of a set with a `heart_rate:` section) and the app's
/// calls fed to ``HeartRateClient``. Registered from this package's own code, with no change to
/// Tether: `TetherIntegrations.builtIn.adding(HeartRateIntegration())`.
public struct HeartRateIntegration: CoreIntegration {
    /// The integration; it has no state.
    public init() {}

    /// `heart_rate`: the trace's core name and the manifest's section.
    public var name: String { "heart_rate" }
    /// For `--help`.
    public var summary: String { "Bluetooth Heart Rate Service client (Examples/HeartRate)" }
    /// HCI and monitor-channel interfaces.
    public var replayedRoles: Set<InterfaceRole> { [.bleHCI, .bleMonitor] }
    /// The settings `--set heart_rate.KEY=VALUE` changes.
    public var settings: [IntegrationSetting] {
        [
            IntegrationSetting(key: "no_data_timeout_ms", flag: "heart-rate-no-data-timeout",
                               help: "How long without a measurement before no_data (seconds, or 500ms, 8s).",
                               kind: .milliseconds(1...3_600_000)),
            IntegrationSetting(key: "frame_matching", help: "How the core's requests are checked: strict or off.", kind: .choice(["strict", "off"])),
        ]
    }
    /// What ``HeartRateAdapter`` writes: the core's events and the adapter's own.
    public var emittedEvents: [String] {
        ["api_call", "api_record_malformed",
         "subscribed", "measurement", "sensor_location", "energy_expended_reset", "no_data", "data_resumed",
         "sensor_contact_changed", "error", "link_down",
         "frame_emitted", "frame_matched", "frame_unsent", "frame_diverged", "summary"]
    }

    /// A ``HeartRateAdapter`` for the section's handles, timeout and calls.
    public func makeAdapter(_ context: IntegrationContext) throws(ReplayError) -> any CoreAdapter {
        guard let section = try context.decodeSection(HeartRateSection.self) else {
            throw .manifest(path: context.manifestPath, line: nil, field: "heart_rate",
                            problem: "the heart_rate core needs its section (at least `handles`)",
                            hint: "Add `heart_rate: {handles: {measurement: N, measurement_cccd: N}}` (Examples/HeartRate/docs/heart-rate-core.md).")
        }
        let timeout = Duration.milliseconds(section.noDataTimeoutMs ?? 5000)
        let configuration: HeartRateConfiguration
        do throws(HeartRateConfigurationError) {
            configuration = try HeartRateConfiguration(noDataTimeout: timeout)
        } catch {
            throw .manifest(path: context.manifestPath, line: context.section?.value["no_data_timeout_ms"]?.line, field: "heart_rate.no_data_timeout_ms",
                            problem: "must be more than 0, found \(section.noDataTimeoutMs ?? 0)", hint: "Write a positive number of milliseconds.")
        }
        let known: Set<String> = ["start", "reset_energy_expended", "read_sensor_location"]
        for (i, call) in section.apiCalls.enumerated() where !known.contains(call.call) {
            throw .manifest(path: context.manifestPath, line: context.section?.value["api_calls"]?.line, field: "heart_rate.api_calls[\(i)].call",
                            problem: "unknown call \"\(call.call)\"", hint: "Write one of \(known.sorted().joined(separator: ", ")).")
        }
        let handles = HeartRateHandles(
            measurement: section.handles.measurement, measurementCCCD: section.handles.measurementCCCD,
            bodySensorLocation: section.handles.bodySensorLocation, controlPoint: section.handles.controlPoint)
        return HeartRateAdapter(
            configuration: configuration, handles: handles, calls: section.apiCalls,
            matching: context.frameMatching ?? section.frameMatching ?? .strict)
    }
}
