import CaptureSet
import ReplayKit
import TetherIntegrations

// Replay as `tether replay` runs it, with Tether's own integrations: what these tests mean by
// "replay the set".

/// Replays the set at `path` with the built-in integrations and default options.
func replaySet(at path: String) throws(ReplayError) -> ReplayOutcome {
    try ReplayKit.replaySet(at: path, options: .builtInDefaults)
}

extension ReplayOptions {
    /// The built-in integrations, default options.
    static var builtInDefaults: ReplayOptions { ReplayOptions(integrations: TetherIntegrations.builtIn) }

    /// The built-in integrations with `settings` (`CORE.KEY=VALUE`, as `tether replay --set`).
    static func builtIn(_ settings: String..., frameMatching: FrameMatchingMode? = nil, verify: Bool = true) throws -> ReplayOptions {
        ReplayOptions(
            integrations: TetherIntegrations.builtIn, verify: verify,
            settings: try settings.map { try SettingOverride.parse($0, registry: TetherIntegrations.builtIn).get() },
            frameMatching: frameMatching)
    }
}
