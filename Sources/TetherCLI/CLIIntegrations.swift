import ReplayKit
import Synchronization

/// The integrations the command line was started with (``TetherCommand/main(integrations:)``):
/// `tether replay` selects cores from them, checks `--set` against their settings, and lists them
/// in its help. Set once, before parsing.
public enum CLIIntegrations {
    private static let current = Mutex(IntegrationRegistry())
    /// `CORE.KEY` → the core's own option it was given as, so an error names what the user typed.
    private static let optionNames = Mutex([String: String]())

    /// The option a `--set` value was given as (`--messaging-window-size`), `nil` for `--set` itself.
    static func optionName(forSetting text: String) -> String? {
        let key = String(text.prefix { $0 != "=" })
        return optionNames.withLock { $0[key] }
    }

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

    /// The arguments with each core's own options (`--messaging-window-size 4`,
    /// `--ingest-idle-timeout=5`) rewritten as the `--set` they stand for, so that the parser needs
    /// to know only `--set`. Only the `replay` subcommand's arguments are rewritten, and nothing
    /// after `--`.
    static func expandingSettingFlags(_ arguments: [String], registry: IntegrationRegistry) -> [String] {
        guard let replay = arguments.firstIndex(of: "replay") else { return arguments }
        var flags: [String: (core: String, key: String)] = [:]
        for integration in registry.integrations {
            for setting in integration.settings {
                if let flag = setting.flag { flags["--" + flag] = (integration.name, setting.key) }
            }
        }
        var out = Array(arguments[...replay])
        var i = replay + 1
        while i < arguments.count {
            let argument = arguments[i]
            if argument == "--" {
                out += arguments[i...]
                break
            }
            let (name, inlineValue): (String, String?) = {
                guard let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
                return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
            }()
            if let (core, key) = flags[name] {
                optionNames.withLock { $0["\(core).\(key)"] = name }
                if let inlineValue {
                    out += ["--set", "\(core).\(key)=\(inlineValue)"]
                    i += 1
                    continue
                }
                if i + 1 < arguments.count {
                    out += ["--set", "\(core).\(key)=\(arguments[i + 1])"]
                    i += 2
                    continue
                }
            }
            out.append(argument)
            i += 1
        }
        return out
    }
}
