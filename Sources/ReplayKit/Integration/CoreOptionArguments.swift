import CaptureSet

/// The arguments of `tether replay` that its own parser leaves over — capture set paths and the
/// registered cores' own options (`--messaging-window-size 4`, `--ingest-idle-timeout=5`) — read
/// against a registry.
///
/// A core declares its options at run time (``IntegrationSetting/flag``), so the command line
/// parser cannot know them; it hands every argument it does not recognise here, in order, and
/// this reads them as a parser would: an option takes the next argument (or its `=VALUE`) as its
/// value, anything else is a path. Nothing rewrites the command line.
public struct CoreOptionArguments: Sendable, Equatable {
    /// The capture set folders and folders of sets, in the order given.
    public var paths: [String]
    /// The cores' own options, as the settings they stand for, in the order given.
    public var settings: [SettingOverride]

    /// Reads `arguments`.
    ///
    /// A word beginning with `-` that is no registered core's option is an error naming the
    /// closest option (a set whose folder name begins with `-` is written `./-name`).
    public static func parse(_ arguments: [String], registry: IntegrationRegistry) -> Result<CoreOptionArguments, SettingValueError> {
        var options: [String: (core: String, setting: IntegrationSetting)] = [:]
        for integration in registry.integrations {
            for setting in integration.settings {
                if let flag = setting.flag { options["--" + flag] = (integration.name, setting) }
            }
        }
        var result = CoreOptionArguments(paths: [], settings: [])
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("-"), argument != "-" else {
                result.paths.append(argument)
                continue
            }
            let name: String
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            } else {
                name = argument
            }
            guard let (core, setting) = options[name] else {
                let known = options.keys.sorted()
                return .failure(SettingValueError(message: "\(name) is not an option of tether replay or of a registered core"
                    + IntegrationRegistry.suggestion(for: name, among: known)
                    + ". `tether replay --help` lists them; a set whose folder name begins with - is written ./\(argument)."))
            }
            if value == nil {
                guard index < arguments.count else {
                    return .failure(SettingValueError(message: "\(name) needs a value: \(setting.kind.accepted)."))
                }
                value = arguments[index]
                index += 1
            }
            switch setting.value(from: value ?? "", option: name) {
            case .success(let tree): result.settings.append(SettingOverride(core: core, key: setting.key, value: tree))
            case .failure(let error): return .failure(error)
            }
        }
        return .success(result)
    }
}
