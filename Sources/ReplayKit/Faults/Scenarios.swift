import CaptureSet

/// A capture set's fault scenarios (`scenarios:` in its manifest), made ready to replay.
public enum FaultScenarios {
    /// The set as `scenario` replays it: its expectations and baselines are the scenario's.
    public static func set(_ loaded: LoadedCaptureSet, for scenario: ManifestScenario) -> LoadedCaptureSet {
        var set = loaded
        set.manifest.expectations = scenario.expectations
        set.manifest.baselines = scenario.baselines
        return set
    }

    /// `options` with the scenario's faults (and frame matching, when it names one).
    /// - Throws: ``ReplayError/manifest(path:line:field:problem:hint:)`` naming the fault that
    ///   cannot be read.
    public static func options(_ options: ReplayOptions, for scenario: ManifestScenario, index: Int, manifestPath: String, line: Int?) throws(ReplayError) -> ReplayOptions {
        var options = options
        var faults: [Fault] = []
        do throws(FaultSpecError) {
            try Fault.checkCount(scenario.faults)
        } catch {
            throw .manifest(path: manifestPath, line: line, field: "scenarios[\(index)].faults", problem: error.description,
                            hint: "Split the scenario in two, or merge faults with frames=A-B ranges.")
        }
        for (i, text) in scenario.faults.enumerated() {
            do throws(FaultSpecError) {
                faults.append(try Fault(parsing: text))
            } catch {
                throw .manifest(path: manifestPath, line: line, field: "scenarios[\(index)].faults[\(i)]", problem: error.description,
                                hint: "Write it as `tether replay --fault` takes it.")
            }
        }
        options.faults = faults
        if let matching = scenario.frameMatching { options.frameMatching = matching }
        return options
    }

    /// The report's name of a scenario's outcome: `ciq-clean / ack-lost-mid-send`.
    public static func outcomeName(set: String, scenario: String) -> String { "\(set) / \(scenario)" }

    /// Whether an outcome's name is a scenario's (``outcomeName(set:scenario:)``); a set's folder
    /// name cannot hold the `/`.
    public static func isScenarioName(_ name: String) -> Bool { name.contains(" / ") }
}
