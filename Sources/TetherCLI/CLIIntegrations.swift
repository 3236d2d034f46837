import ReplayKit
import Synchronization

/// The integrations the command line was started with (``TetherCommand/main(integrations:)``):
/// `tether replay` selects cores from them, checks `--set` against their settings, and lists them
/// in its help. Set once, before parsing.
public enum CLIIntegrations {
    private static let current = Mutex(IntegrationRegistry())
    /// The registry in use.
    public static var registry: IntegrationRegistry {
        current.withLock { $0 }
    }

    /// Makes `registry` the one in use.
    static func use(_ registry: IntegrationRegistry) {
        current.withLock { $0 = registry }
    }

    /// `--help` text listing the registered cores and their settings.
    static func settingsHelp() -> String {
        let registry = registry
        guard !registry.integrations.isEmpty else { return "No core is registered." }
        var lines = ["Registered cores, and the settings `--set CORE.KEY=VALUE` changes (a core's own option beside it):"]
        for integration in registry.integrations {
            let section = integration.sectionName.map { "section `\($0):`" } ?? "no section"
            lines.append("  \(integration.name) (\(section)): \(integration.summary)")
            for setting in integration.settings {
                let flag = setting.flag.map { ", --\($0)" } ?? ""
                lines.append("    \(integration.name).\(setting.key)\(flag)")
                lines.append("        \(setting.help)")
            }
        }
        return lines.joined(separator: "\n")
    }
}
