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
    /// The section's other keys (``HeartRateSection``), and what the recorder writes for people
    /// (`scenario`, `strap`, `recorded_with`…): with the settings, the section's schema, so a bad
    /// handle is refused naming its line and a misspelt key is reported.
    public var sectionFields: [IntegrationSetting] {
        [
            IntegrationSetting(key: "handles.measurement", help: "Heart Rate Measurement's value handle.", kind: .integer(1...0xFFFF)),
            IntegrationSetting(key: "handles.measurement_cccd", help: "Its Client Characteristic Configuration handle.", kind: .integer(1...0xFFFF)),
            IntegrationSetting(key: "handles.body_sensor_location", help: "Body Sensor Location's value handle.", kind: .integer(1...0xFFFF)),
            IntegrationSetting(key: "handles.control_point", help: "Heart Rate Control Point's value handle.", kind: .integer(1...0xFFFF)),
            IntegrationSetting(key: "api_calls[].t_ns", help: "When the app made the call, in nanoseconds after the first frame.",
                               kind: .integer(0...Int64.max)),
            IntegrationSetting(key: "api_calls[].call", help: "The call.", kind: .text),
            // Written by Examples/HeartRate/record_sets.py for whoever reads the manifest.
            IntegrationSetting(key: "scenario", help: "The recorded scenario.", kind: .text),
            IntegrationSetting(key: "seed", help: "The strap rig's seed.", kind: .unsigned64),
            IntegrationSetting(key: "strap", help: "The strap's address.", kind: .text),
            IntegrationSetting(key: "phone", help: "The phone's address.", kind: .text),
            IntegrationSetting(key: "notifications", help: "Measurements the strap sent.", kind: .integer(0...Int64.max)),
            IntegrationSetting(key: "recorded_with", help: "The command that recorded the set.", kind: .text),
            IntegrationSetting(key: "central_args", help: "The central rig's arguments.", kind: .open),
        ]
    }

    /// What ``HeartRateAdapter`` writes: the core's events and the adapter's own.
    public var emittedEvents: [TraceName] {
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
